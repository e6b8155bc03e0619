#!/usr/bin/python3
"""No review lost to a quote: crafted CSV files through the one CSV reader
(tianchi-eval/te_csv.h), read three ways: the reader itself (csv_dump, from a
buffer and from a stream), `pocketdec extract`, and `tianchi-eval --reviews`.

Where a file is well-formed CSV (stray quotes inside unquoted fields, CRLF, a
BOM, lone CRs, quoted fields with line breaks and doubled quotes), the reader
must read exactly what Python's csv module reads, and extract must write every
id in order with exit 0. Where it is broken (a quote never closed, text after a
closing quote), each broken record is reported as FILE:LINE: what, its id is
still written (as id,_,_,_,_) and every later id comes back. An empty input, or
a header alone, is reported as having no reviews (exit 1).

Usage: test_extract_csv.py POCKETDEC FIXTURE_DIR SOURCE_DIR CSV_DUMP TIANCHI_EVAL
"""
import csv
import io
import json
import os
import subprocess
import sys
import tempfile

EXE, FIX, SRC, DUMP, TE = sys.argv[1:6]
MODEL = os.path.join(FIX, "tiny-qwen3")
SCHEMA = os.path.join(SRC, "tests", "schemas", "data", "tianchi-test.yaml")
TMP = tempfile.mkdtemp(prefix="pd-extract-csv-")
failures = []

# Files that Python's csv reads as their author meant: the contract.
WELL_FORMED = {
    "stray_quote.csv": 'id,Reviews\n1,我买的是"正品"吗\n',
    "stray_quotes.csv": 'id,Reviews\n1,a"b"c\n2,尾巴"\n3,x""y\n',
    "crlf.csv": 'id,Reviews\r\n1,很好\r\n2,"包装很好，物流很快"\r\n3,很好用\r\n',
    "bom_crlf.csv": '\ufeffid,Reviews\r\n1,"好,用"\r\n2,不"错"\r\n',
    "lone_cr.csv": 'id,Reviews\r1,很好\r2,"a\rb"\r',
    "multiline.csv": 'id,Reviews\n1,"第一行\n第二行, 还有""引号"""\n2,"""全引号"""\n\n3,"a\r\nb"\n',
    "no_final_break.csv": 'id,Reviews\n1,很好\n2,"最后"',
}

# Broken files: (text, ids expected in the output in order, FILE:LINE needles on stderr).
BROKEN = {
    # BOM, CRLF, two stray quotes, an unclosed quote and a quoted review (7 reviews).
    "messy.csv": ('\ufeffid,Reviews\r\n1,很好\r\n2,我买的是"正品"吗\r\n3,"包装很好，物流很快"\r\n'
                  '4,"没有结束\r\n5,好"用"\r\n6,不错"\r\n7,"一般,还行"\r\n',
                  ["1", "2", "3", "4", "5", "6", "7"], ["messy.csv:5: a quoted field opened here ends on line 6"]),
    # A quote never closed in the middle: it runs to the end of the file.
    "unclosed_middle.csv": ('id,Reviews\n1,很好\n2,"没有结束\n3,很好用\n4,还行\n',
                            ["1", "2", "3", "4"], ["unclosed_middle.csv:3: a quoted field opened here is never closed"]),
    # Text after a closing quote, on the line of the quote.
    "after_quote.csv": ('id,Reviews\n1,"正品"吗\n2,好\n', ["1", "2"],
                        ["after_quote.csv:2: text after the closing quote of a field"]),
    # The last review unclosed.
    "unclosed_last.csv": ('id,Reviews\r\n1,好\r\n2,"坏\r\n', ["1", "2"],
                          ["unclosed_last.csv:3: a quoted field opened here is never closed"]),
}


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def write(name, text):
    path = os.path.join(TMP, name)
    with open(path, "wb") as f:
        f.write(text.encode("utf-8"))
    return path


def python_rows(path):
    with open(path, newline="", encoding="utf-8-sig") as f:
        return [r for r in csv.reader(f) if r]  # csv gives [] for a blank line


def dump(path, *opts):
    p = subprocess.run([DUMP, *opts, path], capture_output=True)
    check(p.returncode == 0, f"csv_dump {opts} {path}: {p.stderr}")
    return [json.loads(line) for line in p.stdout.decode().splitlines()]


def extract(path, stdin=None):
    args = [EXE, "extract", "--model", MODEL, "--schema", SCHEMA, "--output", "-", "--max-tokens", "8",
            "--input", "-" if stdin else path]
    p = subprocess.run(args, input=stdin, capture_output=True)
    return p.returncode, p.stdout.decode("utf-8"), p.stderr.decode("utf-8", "replace")


def out_ids(out):
    ids = []
    for row in csv.reader(io.StringIO(out, newline="")):
        if not ids or ids[-1] != row[0]:
            ids.append(row[0])
    return ids


def evaluate(reviews, submission, ids):
    """tianchi-eval --strict with these reviews: exit 0 when every review id is in the submission."""
    gold = write("gold.csv", "id,AspectTerms,A_start,A_end,OpinionTerms,O_start,O_end,Categories,Polarities\n"
                 + "".join(f"{i},_,,,_,,,整体,正面\n" for i in ids))
    sub = write("sub.csv", submission)
    p = subprocess.run([TE, gold, sub, "--reviews", reviews, "--strict"], capture_output=True)
    return p.returncode, p.stdout.decode("utf-8", "replace") + p.stderr.decode("utf-8", "replace")


def well_formed():
    for name, text in WELL_FORMED.items():
        path = write(name, text)
        want = python_rows(path)
        for mode in ([], ["--stream"]):
            got = [e for e in dump(path, *mode)]
            check(all("line" in e for e in got), f"{name} {mode}: no broken record: {got}")
            check([e["fields"] for e in got] == want, f"{name} {mode}: reads as Python's csv: {got} != {want}")
        ids = [r[0] for r in want[1:]]
        rc, out, err = extract(path)
        check(rc == 0 and "0 broken rows" in err, f"{name}: extract exits 0 with no broken row: {rc} {err}")
        check(out_ids(out) == ids, f"{name}: every id in order: {out_ids(out)} != {ids}")
        rc2, out2, _ = extract(path, stdin=text.encode("utf-8"))
        check(rc2 == 0 and out2 == out, f"{name}: stdin gives the file's output")
        rc, report = evaluate(path, out, ids)
        check(rc == 0, f"{name}: tianchi-eval reads the reviews and finds every id: {report[-400:]}")


def broken():
    for name, (text, ids, needles) in BROKEN.items():
        path = write(name, text)
        mem, stream = dump(path, "--fields", "2"), dump(path, "--stream", "--fields", "2")
        check(mem == stream, f"{name}: buffer and stream read the same: {mem} != {stream}")
        rc, out, err = extract(path)
        check(rc == 1, f"{name}: a broken row exits 1, got {rc}")
        check(out_ids(out) == ids, f"{name}: every id in order: {out_ids(out)} != {ids}")
        for needle in needles:
            check(needle in err, f"{name}: reported: {needle}: {err}")
        check("written with no records" in err, f"{name}: the broken row keeps its id: {err}")
        # tianchi-eval refuses a broken file, naming the same place
        rc, report = evaluate(path, out, ids)
        check(rc == 1 and needles[0].split(": ")[0] in report, f"{name}: tianchi-eval refuses it: {report[-300:]}")


def no_reviews():
    for name, text in {"empty.csv": "", "header.csv": "id,Reviews\r\n", "bom.csv": "\ufeff",
                       "blank.csv": "\n\n", "empty.jsonl": ""}.items():
        rc, out, err = extract(write(name, text))
        check(rc == 1 and out == "" and f"{name}: no reviews found" in err,
              f"{name}: no reviews is said, exit 1: {rc} {out!r} {err}")


if __name__ == "__main__":
    well_formed()
    broken()
    no_reviews()
    print(f"{len(failures)} failures" if failures else "ok")
    sys.exit(1 if failures else 0)

#!/usr/bin/python3
"""`pocketdec extract` end to end, its output read back with Python's csv and
json modules (independent readers): every train review gives valid Tianchi
rows (spans `_` or substrings, labels in the closed sets, every id in order),
three shards run apart and concatenated equal one run (files and stdin/stdout),
1, 3, 16 and the default number of reviews in flight give the same output,
a LoRA adapter applied,
JSONL in and out with offsets and probabilities, broken rows (crafted CSV files: test_extract_csv.py), an empty
review, a review longer than the context (read in windows), a bad schema and bad options.

Usage: test_extract_cli.py POCKETDEC FIXTURE_DIR SOURCE_DIR [N_REVIEWS]
(N_REVIEWS limits the all-reviews run, for the sanitizer build; 0 or absent: all.)
"""
import csv
import io
import json
import os
import subprocess
import sys
import tempfile

EXE, FIX, SRC = sys.argv[1], sys.argv[2], sys.argv[3]
LIMIT = int(sys.argv[4]) if len(sys.argv) > 4 else 0
MODEL = os.path.join(FIX, "tiny-qwen3")
SCHEMA = os.path.join(SRC, "tests", "schemas", "data", "tianchi-test.yaml")
REVIEWS = os.path.join(SRC, "tests", "schemas", "data", "train_reviews.csv")
CATEGORIES = set("包装 成分 尺寸 服务 功效 价格 气味 使用体验 物流 新鲜度 真伪 整体 其他".split())
POLARITIES = {"正面", "中性", "负面"}
TMP = tempfile.mkdtemp(prefix="pd-extract-")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(args, stdin=None):
    p = subprocess.run([EXE, "extract", "--model", MODEL] + args, input=stdin, capture_output=True)
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


def read_reviews(path):
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    return rows[1:]


def check_tianchi(out_bytes, reviews, label):
    rows = list(csv.reader(io.StringIO(out_bytes.decode("utf-8"), newline="")))
    text = dict(reviews)
    order = [r[0] for r in reviews]
    seen = []
    bad = 0
    for row in rows:
        if len(row) != 5 or row[0] not in text:
            bad += 1
            continue
        if not seen or seen[-1] != row[0]:
            seen.append(row[0])
        rid, a, o, c, p = row
        if row[1:] == ["_", "_", "_", "_"]:
            continue
        ok = (a == "_" or (a and a in text[rid])) and (o == "_" or (o and o in text[rid])) \
            and c in CATEGORIES and p in POLARITIES
        bad += not ok
    check(bad == 0, f"{label}: {bad} invalid rows")
    check(seen == order, f"{label}: ids not all present in order ({len(seen)} groups for {len(order)} ids)")
    return rows


def main():
    reviews = read_reviews(REVIEWS)
    check(len(reviews) == 2829, "2829 train reviews")

    # every train review, one run
    src = REVIEWS
    if LIMIT:
        reviews = reviews[:LIMIT]
        src = os.path.join(TMP, "subset.csv")
        with open(src, "w", newline="", encoding="utf-8") as f:
            csv.writer(f, lineterminator="\n").writerows([["id", "Reviews"]] + reviews)
    rc, out, err = run(["--schema", SCHEMA, "--input", src, "--output", "-", "--threads", "2"])
    check(rc == 0, f"full run exit {rc}: {err[-300:]}")
    check(f"{len(reviews)} reviews" in err and "0 broken rows" in err, "summary line: " + err[-200:])
    rows = check_tianchi(out, reviews, "full run")
    real = [r for r in rows if r[1:] != ["_", "_", "_", "_"]]
    check(len(real) > len(reviews) // 3 and any(r[1] != "_" for r in real), "the run produced spans to check")

    # three shards run apart (header kept in each), concatenated == one run
    head = reviews[:90]
    whole = os.path.join(TMP, "head.csv")
    with open(whole, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["id", "Reviews"])
        w.writerows(head)
    rc, one, err = run(["--schema", SCHEMA, "--input", whole, "--output", "-"])
    check(rc == 0, "90-review run")
    parts = []
    for k in range(3):
        shard = io.StringIO()
        w = csv.writer(shard, lineterminator="\n")
        w.writerow(["id", "Reviews"])
        w.writerows(head[30 * k:30 * (k + 1)])
        if k == 1:  # through stdin and stdout
            rc, out, _ = run(["--schema", SCHEMA, "--input", "-", "--output", "-"], stdin=shard.getvalue().encode())
        else:
            path = os.path.join(TMP, f"shard{k}.csv")
            with open(path, "w", encoding="utf-8") as f:
                f.write(shard.getvalue())
            res = os.path.join(TMP, f"shard{k}.out")
            rc, _, _ = run(["--schema", SCHEMA, "--input", path, "--output", res])
            out = open(res, "rb").read()
        check(rc == 0, f"shard {k}")
        parts.append(out)
    check(b"".join(parts) == one, "three shards concatenated equal one run")

    # reviews in flight (--parallel, default 2 x --threads): the records of one at a time, in input order
    for p in ("1", "3", "16"):
        rc, out, err = run(["--schema", SCHEMA, "--input", whole, "--output", "-", "--parallel", p])
        check(rc == 0 and out == one, f"--parallel {p} writes the output of the default run: {err[-200:]}")
    rc, _, err = run(["--schema", SCHEMA, "--input", whole, "--output", "-", "--parallel", "0"])
    check(rc == 2 and "--parallel" in err, "--parallel 0 is a usage error: " + err)

    # with a LoRA adapter: still valid, and the adapter changes what is extracted
    rc, adapted, err = run(["--schema", SCHEMA, "--input", whole, "--output", "-",
                            "--adapter", os.path.join(FIX, "adapter")])
    check(rc == 0, "adapter run: " + err[-200:])
    check_tianchi(adapted, head, "adapter run")
    check(adapted != one, "the adapter changes the output")

    # JSONL in, JSONL out (integer ids too)
    jl = os.path.join(TMP, "in.jsonl")
    with open(jl, "w", encoding="utf-8") as f:
        for i, (rid, t) in enumerate(head):
            f.write(json.dumps({"id": int(rid) if i % 2 else rid, "text": t}, ensure_ascii=False) + "\n")
    rc, out, err = run(["--schema", SCHEMA, "--input", jl, "--output", "-", "--format", "jsonl"])
    check(rc == 0, "jsonl run: " + err[-200:])
    objs = [json.loads(line) for line in out.decode("utf-8").splitlines()]
    check([o["id"] for o in objs] == [r[0] for r in head], "jsonl ids in order")
    text = dict(head)
    fields = ("aspect", "opinion", "category", "polarity")
    check(all(set(r) == {*fields, "spans", "probs", "confidence"} and r["category"] in CATEGORIES and
              (r["aspect"] == "_" or r["aspect"] in text[o["id"]]) for o in objs for r in o["records"]),
          "jsonl records valid")
    # each span value placed where the review holds it; a generated record's confidence is the
    # product of its fields' probabilities (each printed to 4 significant digits)
    check(all(text[o["id"]][a:b] == r[f] for o in objs for r in o["records"] for f, (a, b) in r["spans"].items()) and
          all(set(r["spans"]) == {f for f in ("aspect", "opinion") if r[f] != "_"} for o in objs for r in o["records"]),
          "jsonl offsets: text[start:end] is the value, for every span value")
    prod = lambda r: r["probs"]["aspect"] * r["probs"]["opinion"] * r["probs"]["category"] * r["probs"]["polarity"]  # noqa: E731
    check(all(0 < r["probs"][f] <= 1 for o in objs for r in o["records"] for f in fields) and
          all(r["probs"]["link"] == 1 and abs(r["confidence"] - prod(r)) <= 3e-3 * r["confidence"]
              for o in objs for r in o["records"]), "jsonl probabilities: in (0, 1], confidence their product")
    tianchi = [[o["id"], r["aspect"], r["opinion"], r["category"], r["polarity"]] for o in objs for r in o["records"]]
    check(tianchi == [r for r in csv.reader(io.StringIO(one.decode("utf-8"), newline="")) if r[1:] != ["_"] * 4],
          "JSONL in and out give the records of the CSV run")

    # broken rows: reported with their line; every id is written, a broken row's as id,_,_,_,_
    broken = os.path.join(TMP, "broken.csv")
    with open(broken, "w", encoding="utf-8") as f:
        f.write('id,Reviews\n1,很好，超值\n2,a,b\n3,"多行\n评论, 很好"\n4,bad"quote\n9,\n5,"不错"\n'
                '7,' + "好" * 400 + '\n\n6,"没有结束\n')  # a blank line is skipped silently
    rc, out, err = run(["--schema", SCHEMA, "--input", broken, "--output", "-", "--ctx", "128"])
    check(rc == 1, f"broken rows exit 1, got {rc}")
    check("broken.csv:3: broken row" in err and "got 3; id 2 written with no records" in err,
          "3-field row reported at line 3, its id kept: " + err)
    check("broken.csv:6" not in err, "a quote inside an unquoted field is a character, not an error")
    check("broken.csv:11: a quoted field opened here is never closed; id 6 written with no records" in err,
          "unclosed quote reported at line 11, its id kept")
    got = [r[0] for r in csv.reader(io.StringIO(out.decode("utf-8"), newline=""))]
    check(sorted(set(got), key=got.index) == ["1", "2", "3", "4", "9", "5", "7", "6"], f"every id in order: {got}")
    check(b"2,_,_,_,_\n" in out and b"6,_,_,_,_\n" in out, "broken rows give the placeholder")
    check(b"9,_,_,_,_\n" in out, "an empty review gives the placeholder")
    check("2 broken rows, 0 failed" in err, "summary counts the broken rows, and no failed one: " + err[-200:])
    # a review longer than the context (--ctx 128): read in windows that fit, not refused
    check("broken.csv:9" not in err and b"\n7," in out, "the long review is read, not reported: " + err)
    # the same run one review at a time (--parallel 1; the default has 2 x --threads in flight): the same output and reports
    rc1, out1, err1 = run(["--schema", SCHEMA, "--input", broken, "--output", "-", "--ctx", "128", "--parallel", "1"])
    check(rc1 == rc and out1 == out and err1.splitlines()[:-1] == err.splitlines()[:-1],
          f"--parallel 1 gives the default run's output and reports: {err1}")

    # broken JSON lines: each reported as FILE:LINE: what is wrong, the good ones all written
    jbroken = os.path.join(TMP, "broken.jsonl")
    with open(jbroken, "wb") as f:
        f.write('{"id": 1, "text": "很好"}\r\n\n{"id": [1], "text": "x"}\n{"id": 2}\n'.encode()
                + b'{"id": 3, "text": "a\xffb"}\nnot json\n{"id": 4, "text": "ok", "id": 5}\n'
                + '{"id": "7", "text": "好用"}'.encode())  # (an over-long line: see tests/cli/test_cli.py)
    rc, out, err = run(["--schema", SCHEMA, "--input", jbroken, "--output", "-", "--max-tokens", "8"])
    check(rc == 1, f"broken JSON lines exit 1, got {rc}")
    for needle in ['broken.jsonl:3: broken row skipped: "id" must be a string or an integer, got an array',
                   'broken.jsonl:4: broken row skipped: missing key "text"',
                   "broken.jsonl:5: broken row skipped: invalid UTF-8 at byte 21",
                   "broken.jsonl:6: broken row skipped: malformed JSON",
                   "broken.jsonl:7: broken row skipped: malformed JSON at column 28: duplicate object key"]:
        check(needle in err, f"reported: {needle}: {err[-600:]}")
    got = [r[0] for r in csv.reader(io.StringIO(out.decode("utf-8"), newline=""))]
    check(sorted(set(got), key=got.index) == ["1", "7"], f"good JSON lines kept in order: {got}")
    check("5 broken rows" in err, "summary counts the broken JSON lines: " + err[-200:])

    # an option over the schema's limits is refused before any input is read (both: tests/reliability/test_limits.c)
    rc, out, err = run(["--schema", SCHEMA, "--input", whole, "--output", "-", "--max-tokens", "25"])
    check(rc == 1 and not out and "max_tokens 25 is over the schema's limit of 24" in err and err.count("\n") == 1,
          f"--max-tokens over the schema's limit: {err}")

    # a bad schema names file, line and column; bad options are usage errors (2)
    bad_schema = os.path.join(TMP, "bad.yaml")
    with open(bad_schema, "w") as f:
        f.write("name: x\nfields: [\n")
    rc, _, err = run(["--schema", bad_schema, "--input", whole, "--output", "-"])
    check(rc == 1 and "bad.yaml:3:1" in err, "bad schema: " + err)
    rc, _, err = run(["--schema", SCHEMA, "--input", whole, "--output", "-", "--format", "xml"])
    check(rc == 2, "bad --format is a usage error")
    rc, _, err = run(["--schema", SCHEMA, "--input", whole])
    check(rc == 2, "missing --output is a usage error")

    if failures:
        print(f"{len(failures)} failures")
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()

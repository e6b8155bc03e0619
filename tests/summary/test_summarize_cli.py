#!/usr/bin/python3
"""`pocketdec summarize` on small files: the hand-worked estimate of tests/summary/test_summary.c
reached through the command's readers (labels CSV and JSONL, records JSONL and Tianchi rows), the
JSON's shape, the CSV tables, and each bad input stopped with its file and line.

  test_summarize_cli.py POCKETDEC SOURCE_ROOT"""
import csv
import io
import json
import os
import subprocess
import sys
import tempfile

EXE = sys.argv[1]
ENTRY_KEYS = {"polarity", "records", "reviews", "share", "estimate", "low", "high", "support", "rates",
              "precision", "recall", "top_aspects", "top_opinions", "examples"}


def run(*args, ok=True):
    p = subprocess.run([EXE, "summarize", *args], capture_output=True, text=True)
    if ok and p.returncode != 0:
        raise SystemExit(f"summarize {args} failed ({p.returncode}): {p.stderr}")
    return p


def write(d, name, text):
    path = os.path.join(d, name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def rec(a, o, c="价格", p="负面", spans=None):
    r = {"aspect": a, "opinion": o, "category": c, "polarity": p}
    if spans:
        r["spans"] = spans
    return r


def jsonl(rows):
    return "".join(json.dumps({"id": i, "records": rs}, ensure_ascii=False) + "\n" for i, rs in rows)


def tianchi(rows):
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    for i, rs in rows:
        for r in rs or [{"aspect": "_", "opinion": "_", "category": "_", "polarity": "_"}]:
            w.writerow([i, r["aspect"], r["opinion"], r["category"], r["polarity"]])
    return out.getvalue()


def main():
    d = tempfile.mkdtemp(prefix="summarize-")
    # the calibration of test_summary.c: G 5, Pr 4, TP 2 over 4 labelled reviews
    labels = write(d, "labels.csv", "id,AspectTerms,A_start,A_end,OpinionTerms,O_start,O_end,Categories,Polarities\n"
                   "1,价格,0,2,贵,2,3,价格,负面\n1,_, , ,太贵,3,5,价格,负面\n2,_, , ,不值,0,2,价格,负面\n"
                   "3,价格,0,2,高,2,3,价格,负面\n3,_, , ,坑,3,4,价格,负面\n")
    cal_recs = write(d, "cal.jsonl", jsonl([(1, [rec("价格", "贵")]), (2, [rec("_", "不值"), rec("_", "贵")]),
                                            (3, []), (4, [rec("_", "小贵")])]))
    # the same labels in train/dataset.py's JSONL
    lab = [(1, [("价格", 0, 2, "贵", 2, 3), ("_", None, None, "太贵", 3, 5)]), (2, [("_", None, None, "不值", 0, 2)]),
           (3, [("价格", 0, 2, "高", 2, 3), ("_", None, None, "坑", 3, 4)]), (4, [])]
    def span(t, s, e):
        return None if t == "_" else {"text": t, "start": s, "end": e}
    labels_jsonl = write(d, "labels.jsonl", "".join(json.dumps({"id": i, "text": "价格贵太贵", "records": [
        {"aspect": span(a, s1, e1), "opinion": span(o, s2, e2), "category": "价格", "polarity": "负面"}
        for a, s1, e1, o, s2, e2 in rs]}, ensure_ascii=False) + "\n" for i, rs in lab))
    reviews = write(d, "reviews.csv", "id,Reviews\n1,价格贵贵\n2,太贵\n3,价格贵，不值\n4,很好\n5,还行\n")
    corpus = [(1, [rec("价格", "贵", spans={"aspect": [0, 2], "opinion": [2, 3]}), rec("价格", "贵"), rec("_", "不值")]),
              (2, [rec("价格", "贵")]), (3, [rec("价格", "贵"), rec("价格", "贵"), rec("_", "不值"), rec("价格", "贵")]),
              (4, []), (5, [])]
    records = write(d, "records.jsonl", jsonl(corpus))
    out = os.path.join(d, "s.json")
    run("--input", reviews, "--records", records, "--calibrate", labels, "--calibrate-records", cal_recs,
        "--min-support", "5", "--json", out, "--csv", os.path.join(d, "csv"), "--save-calibration",
        os.path.join(d, "calibration.json"))
    s = json.load(open(out, encoding="utf-8"))
    assert s["reviews"] == 5 and s["records"] == 8, s
    assert set(s["polarity"]) == {"负面"}, s["polarity"].keys()
    cell = next(c for c in s["cells"] if c["category"] == "价格" and c["polarity"] == "负面")
    assert set(cell) == ENTRY_KEYS | {"category"}, set(cell)
    assert set(s["polarity"]["负面"]) == ENTRY_KEYS, s["polarity"]["负面"].keys()
    want = {"records": 8, "reviews": 3, "share": 0.6, "estimate": 10.0, "low": 2.96, "high": 33.74, "support": 5,
            "rates": "cell", "precision": 0.5, "recall": 0.4}
    assert {k: cell[k] for k in want} == want, cell
    assert cell["top_aspects"][0] == {"value": "价格", "count": 6}, cell["top_aspects"]
    assert cell["top_opinions"][0] == {"value": "贵", "count": 6}, cell["top_opinions"]
    ex = cell["examples"][0]
    assert ex["id"] == "1" and ex["text"] == "价格贵贵", ex
    assert ex["marks"] == [{"start": 0, "end": 2, "field": "aspect"}, {"start": 2, "end": 3, "field": "opinion"}], ex
    rows = list(csv.DictReader(open(os.path.join(d, "csv", "cells.csv"), encoding="utf-8")))
    assert any(r["category"] == "价格" and r["estimate"] == "10" and r["low"] == "2.96" for r in rows), rows

    # the same through the saved calibration, the labels JSONL, and Tianchi rows for the records
    # (no spans there: the examples' marks differ, nothing else)
    s2 = json.loads(run("--input", reviews, "--records", records, "--calibration", os.path.join(d, "calibration.json"),
                        "--min-support", "5").stdout)
    assert s2 == s, "a saved calibration gives other figures"
    s3 = json.loads(run("--input", reviews, "--records", records, "--calibrate", labels_jsonl, "--calibrate-records",
                        cal_recs, "--min-support", "5").stdout)
    assert s3 == s, "the labels JSONL gives other figures than the labels CSV"
    rows_csv = write(d, "Result.csv", tianchi(corpus))
    s4 = json.loads(run("--input", reviews, "--records", rows_csv, "--calibration", os.path.join(d, "calibration.json"),
                        "--min-support", "5").stdout)
    for c in s4["cells"] + s["cells"] + list(s4["polarity"].values()) + list(s["polarity"].values()):
        for e in c["examples"]:
            e["marks"] = []
    assert s4 == s, "Tianchi rows give other figures than the JSONL"

    # the bundle's calibration.json (--model DIR): 4 complaints x G / Pr of its 负面 entry
    root = sys.argv[2]
    bundled = json.load(open(os.path.join(root, "models", "tianchi", "calibration.json"), encoding="utf-8"))
    neg = next(c for c in bundled["cells"] if "category" not in c and c["polarity"] == "负面")
    four = write(d, "four.jsonl", jsonl([(1, [rec("_", "差", "整体")] * 3), (2, [rec("_", "慢", "物流")])]))
    sb = json.loads(run("--records", four, "--model", os.path.join(root, "models", "tianchi")).stdout)
    e = sb["polarity"]["负面"]
    assert e["rates"] == "polarity" and e["support"] == neg["gold"], e
    assert abs(e["estimate"] - round(4 * neg["gold"] / neg["predicted"], 2)) < 1e-9, (e, neg)

    # train/calibration.py: kfold.py's pooled files into a bundle's calibration.json
    kdir = os.path.join(d, "kfold")
    os.makedirs(kdir)
    os.rename(labels, os.path.join(kdir, "pooled_gold.csv"))
    write(kdir, "pooled_Result.csv", tianchi([(1, [rec("价格", "贵")]), (2, [rec("_", "不值"), rec("_", "贵")]),
                                              (3, []), (4, [rec("_", "小贵")])]))
    labels = os.path.join(kdir, "pooled_gold.csv")
    p = subprocess.run([sys.executable, os.path.join(root, "train", "calibration.py"), "--kfold", kdir, "--out", kdir,
                        "--pocketdec", EXE], check=True, capture_output=True, text=True)
    kc = json.load(open(os.path.join(kdir, "calibration.json"), encoding="utf-8"))
    assert kc["cells"] == json.load(open(os.path.join(d, "calibration.json"), encoding="utf-8"))["cells"], kc
    assert kc["source"].startswith("train/kfold.py's out-of-fold records"), kc["source"]
    # its table: each entry's own support (5 gold) and, under the default --min-support 20, the cell on its
    # polarity's rates (P 2/4, R 2/5)
    lines = p.stdout.splitlines()
    assert "(all) / 负面 | 5 | polarity | 0.500 | 0.400" in lines, p.stdout
    assert "价格 / 负面 | 5 | polarity | 0.500 | 0.400" in lines, p.stdout

    # partitions summarized apart (--save-state) and merged (--merge): the one pass's summary, exactly
    parts = []
    for k, rows in enumerate((corpus[:2], corpus[2:])):
        part, state = write(d, f"part{k}.jsonl", jsonl(rows)), os.path.join(d, f"part{k}.state")
        run("--records", part, "--save-state", state, "--json", os.devnull)
        parts += ["--merge", state]
    cal = os.path.join(d, "calibration.json")
    merged = json.loads(run(*parts, "--calibration", cal, "--min-support", "5").stdout)
    whole = json.loads(run("--records", records, "--calibration", cal, "--min-support", "5").stdout)
    assert merged == whole and merged["records"] == 8, (merged, whole)
    bad_state = write(d, "bad.state", '{"format": "pocketdec-summary-state", "version": 1, "reviews": 1, "records": 0, '
                      '"cells": [{"polarity": "负面", "records": 1, "reviews": 1, "aspects": [], "opinions": {}, '
                      '"examples": []}]}')
    p = run("--merge", bad_state, ok=False)
    assert p.returncode == 1 and f"{bad_state}: cells[0]: aspects and opinions are {{value: count}}" in p.stderr, p

    # bad inputs: each stopped, naming the file and line
    def refused(args, *words):
        p = run(*args, ok=False)
        assert p.returncode == 1 and p.stdout == "", (args, p.returncode, p.stdout)
        for w in words:
            assert w in p.stderr, (args, w, p.stderr)
    stray = write(d, "stray.jsonl", jsonl(corpus[:2] + [(99, [rec("价格", "贵")])] + corpus[2:]))
    refused(["--input", reviews, "--records", stray], f"{stray}:3: id 99 is not among the reviews of {reviews}")
    other = write(d, "other.jsonl", jsonl([(1, [rec("price", "high", "Price", "negative")])]))
    refused(["--records", other, "--calibration", os.path.join(d, "calibration.json")],
            f"{other}:1: id 1: polarity 'negative' is not among the labels of the calibration")
    bad_cal = write(d, "bad_cal.json", '{"format": "something else"}')
    refused(["--records", records, "--calibration", bad_cal], f"{bad_cal}: not a calibration file")
    short = write(d, "short.jsonl", jsonl([(1, [rec("价格", "贵")])]))
    refused(["--records", records, "--calibrate", labels, "--calibrate-records", short],
            f"{labels}:4: id 2 has no records in {short}")
    broken = write(d, "broken.jsonl", jsonl(corpus[:1]) + '{"id": 2, "records": {}}\n')
    refused(["--records", broken], f"{broken}:2:", "\"records\" must be a list")
    refused(["--records", write(d, "four.csv", "1,a,b,c\n")], "four.csv:1: expected 5 fields")
    shop_export(d, refused)
    print("ok")


def shop_export(d, refused):
    """A shop's export: its own columns named (extract and summarize), kept into the JSONL, grouped by."""
    root = sys.argv[2]
    model, schema = os.path.join(root, "models", "tianchi"), os.path.join(root, "schemas", "tianchi-makeup.yaml")
    shop = write(d, "shop.csv", "review_id,rating,content,date,sku\nr1,5,很好用，物流很快,2026-01-03,A1\n"
                 "r2,1,味道太难闻了，不喜欢,2026-02-10,B2\nr3,4,\"包装不错,价格便宜\",2026-02-11,A1\n"
                 "r4,2,太贵了,2027-01-01,B2\n")
    cols = ["--id-column", "review_id", "--text-column", "content"]

    def extract(*args):
        return subprocess.run([EXE, "extract", "--model", model, "--schema", schema, "--input", shop, "--output", "-",
                               *args], capture_output=True, text=True)
    p = extract("--format", "jsonl", *cols)
    assert p.returncode == 0, p.stderr
    lines = [json.loads(x) for x in p.stdout.splitlines()]
    assert [x["id"] for x in lines] == ["r1", "r2", "r3", "r4"], lines
    assert [(x["rating"], x["date"], x["sku"]) for x in lines][2] == ("4", "2026-02-11", "A1"), lines
    assert all(x["records"] for x in lines), lines
    p2 = extract("--format", "jsonl", "--parallel", "2", *cols)
    assert p2.stdout == p.stdout, "--parallel writes other lines"
    p = extract("--format", "jsonl")
    assert p.returncode == 1 and p.stdout == "", p
    assert f"{shop}:1: which columns hold the id and the review? the header has review_id,rating,content,date,sku" \
        in p.stderr, p.stderr
    records = write(d, "shop.jsonl", p2.stdout)
    # by month, from the columns the JSONL carries; the groups add up to the whole
    s = json.loads(run("--records", records, "--by", "date:month", "--model", model).stdout)
    assert [(g["group"], g["reviews"]) for g in s["groups"]] == [("2026-01", 1), ("2026-02", 2), ("2027-01", 1)], s
    assert sum(g["records"] for g in s["groups"]) == s["records"] == sum(len(x["records"]) for x in lines)
    assert s["by"]["column"] == "date" and s["by"]["period"] == "month" and s["by"]["changes"], s["by"]
    # ISO weeks: 2026-01-03 is W01's Saturday, 2027-01-01 a Friday of 2026's week 53
    s = json.loads(run("--records", records, "--by", "date:week").stdout)
    assert [g["group"] for g in s["groups"]] == ["2026-W01", "2026-W07", "2026-W53"], s["groups"]
    # by a column of the reviews themselves
    s = json.loads(run("--records", records, "--input", shop, *cols, "--by", "sku").stdout)
    assert [(g["group"], g["reviews"]) for g in s["groups"]] == [("A1", 2), ("B2", 2)], s["groups"]
    assert "changes" not in s["by"], s["by"]
    # extracted here (--model and --schema, no --records): the same summary as from extract's records
    here = json.loads(run("--model", model, "--schema", schema, "--threads", "1", "--input", shop, *cols,
                          "--by", "sku").stdout)
    assert here == json.loads(run("--model", model, "--records", records, "--input", shop, *cols, "--by",
                                  "sku").stdout), here
    refused(["--records", records, "--input", shop, *cols, "--by", "rating:month"],
            f"{shop}:2: id r1: '5' in column rating is not a date")
    refused(["--records", records, "--by", "shop"], f"{records}:1: id r1 has no column 'shop'")
    refused(["--records", records, "--input", shop, *cols, "--by", "shop"], f"{shop}:2: id r1 has no column 'shop'")

    # the same export saved as GB18030 (Excel on a Chinese Windows) and as UTF-16 with its mark
    text = open(shop, encoding="utf-8").read()
    for enc, name, opt in (("gb18030", "GB18030", "gb18030"), ("utf-16", "UTF-16", "utf-16")):
        other = os.path.join(d, f"shop-{enc}.csv")
        with open(other, "wb") as f:
            f.write(text.encode(enc))
        p = subprocess.run([EXE, "extract", "--model", model, "--schema", schema, "--input", other, "--output", "-",
                            "--format", "jsonl", *cols], capture_output=True, text=True)
        assert p.returncode == 1 and p.stdout == "" and name in p.stderr and f"--encoding {opt}" in p.stderr, p
        assert len(p.stderr.strip().splitlines()) == 1, p.stderr  # one message, at once
        p = subprocess.run([EXE, "extract", "--model", model, "--schema", schema, "--input", other, "--output", "-",
                            "--format", "jsonl", "--encoding", opt, *cols], capture_output=True, text=True)
        assert p.returncode == 0 and p.stdout == p2.stdout, (enc, p.stderr)
        refused(["--records", records, "--input", other, *cols], f"--encoding {opt}")
        s1 = json.loads(run("--records", records, "--input", other, "--encoding", opt, *cols, "--by", "sku").stdout)
        s2 = json.loads(run("--records", records, "--input", shop, *cols, "--by", "sku").stdout)
        assert s1 == s2, enc


main()

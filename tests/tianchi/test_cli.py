#!/usr/bin/env python3
"""Tests of the tianchi-eval command: exit codes, messages, outputs, and its
figures on the training data against an independent scorer written here
(collections.Counter multisets), over submissions perturbed at random.

usage: test_cli.py TIANCHI_EVAL_EXE DATA_DIR
"""
import collections
import csv
import io
import json
import math
import os
import random
import subprocess
import sys
import tempfile

EXE, DATA = sys.argv[1], sys.argv[2]
LABELS = os.path.join(DATA, "train_labels.csv")
REVIEWS = os.path.join(DATA, "train_reviews.csv")
CATEGORIES = "包装 成分 尺寸 服务 功效 价格 气味 使用体验 物流 新鲜度 真伪 整体 其他".split()
POLARITIES = "正面 中性 负面".split()
TMP = tempfile.mkdtemp(prefix="tianchi_cli_")


def run(*args, stdin=None):
    p = subprocess.run([EXE, *args], input=stdin, capture_output=True, timeout=120)
    return p.returncode, p.stdout.decode("utf-8"), p.stderr.decode("utf-8")


def write(name, data):
    path = os.path.join(TMP, name)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode("utf-8"))
    return path


def submission(rows, quoting=csv.QUOTE_MINIMAL, eol="\n"):
    out = io.StringIO()
    w = csv.writer(out, quoting=quoting, lineterminator=eol)
    for r in rows:
        w.writerow(r)
    return out.getvalue()


def read_gold():
    with open(LABELS, encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))[1:]
    return [(int(r[0]), r[1], r[4], r[7], r[8]) for r in rows]


def read_reviews():
    with open(REVIEWS, encoding="utf-8", newline="") as f:
        return {int(r[0]): r[1] for r in list(csv.reader(f))[1:]}


GOLD = read_gold()
REV = read_reviews()


def reference(gold, pred, reviews):
    """The metric as docs/tianchi-eval.md states it, written independently."""
    quads = [q for q in pred if q[1:] != ("_", "_", "_", "_")]
    g, p = collections.Counter(gold), collections.Counter(quads)
    both = g & p
    out = {"overall": (sum(both.values()), len(quads), len(gold))}
    gp = collections.Counter(q[:3] for q in gold)
    pp = collections.Counter(q[:3] for q in quads)
    out["pairs"] = (sum((gp & pp).values()), len(quads), len(gold))
    for name, idx, labels in (("categories", 3, CATEGORIES), ("polarities", 4, POLARITIES)):
        seen = sorted({q[idx] for q in gold + quads} - set(labels), key=lambda s: s.encode())
        out[name] = [(lab, sum(v for k, v in both.items() if k[idx] == lab),
                      sum(1 for q in quads if q[idx] == lab),
                      sum(1 for q in gold if q[idx] == lab)) for lab in labels + seen]
    a_out = o_out = either = none = 0
    for q in quads:
        text = reviews.get(q[0])
        if text is None:
            none += 1
            continue
        a, o = q[1] != "_" and q[1] not in text, q[2] != "_" and q[2] not in text
        a_out, o_out, either = a_out + a, o_out + o, either + (a or o)
    out["spans"] = (a_out, o_out, either, none)
    return out


def ratios(s, p, g):
    pr = s / p if p else 0.0
    rc = s / g if g else 0.0
    return pr, rc, (2 * pr * rc / (pr + rc) if pr + rc else 0.0)


def check_score(js, want, what):
    s, p, g = want
    got = (js["matched"], js["predicted"], js["gold"])
    assert got == want, f"{what}: S,P,G {got} != {want}"
    for key, value in zip(("precision", "recall", "f1"), ratios(s, p, g)):
        assert abs(js[key] - value) < 1e-12, f"{what}: {key} {js[key]} != {value}"


def compare(pred_rows, text=None, name="pred.csv"):
    """Score a submission with the command and with the reference."""
    path = write(name, text if text is not None else submission(pred_rows))
    rc, out, err = run(LABELS, path, "--reviews", REVIEWS, "--json")
    assert rc == 0, (rc, err)
    js = json.loads(out)
    want = reference(GOLD, pred_rows, REV)
    check_score(js["overall"], want["overall"], "overall")
    check_score(js["pairs"], want["pairs"], "pairs")
    for key in ("categories", "polarities"):
        got = [(c["label"], c["matched"], c["predicted"], c["gold"]) for c in js[key]]
        assert got == want[key], f"{key}: {got} != {want[key]}"
        for c in js[key]:
            check_score(c, (c["matched"], c["predicted"], c["gold"]), c["label"])
    sp = js["spans"]
    got = (sp["aspect_outside"], sp["opinion_outside"], sp["either_outside"], sp["no_review"])
    assert got == want["spans"], f"spans {got} != {want['spans']}"
    return js


# ----------------------------------------------------------------- scoring

def test_self():
    js = compare(GOLD)
    assert js["overall"]["f1"] == 1.0 and js["overall"]["matched"] == 5808
    assert js["checks"]["violations"] == 0 and js["checks"]["notes"] == 0


def test_self_quoted_crlf():
    """The same rows, every field quoted, CRLF line ends."""
    js = compare(GOLD, submission(GOLD, csv.QUOTE_ALL, "\r\n"), "quoted.csv")
    assert js["overall"]["f1"] == 1.0


def test_random_drops():
    rng = random.Random(1)
    for trial in range(3):
        keep = [q for q in GOLD if rng.random() > 0.05]
        compare(keep, name=f"drop{trial}.csv")


def test_random_corruption():
    rng = random.Random(2)
    ids = sorted(REV)
    for trial in range(3):
        rows = []
        for q in GOLD:
            q = list(q)
            r = rng.random()
            if r < 0.03:
                q[3] = rng.choice(CATEGORIES)
            elif r < 0.06:
                q[4] = rng.choice(POLARITIES)
            elif r < 0.08:
                text = REV[q[0]]
                i = rng.randrange(len(text))
                q[1] = text[i:i + rng.randint(1, 3)]
            elif r < 0.09:
                q[2] = "不在评论里"
            elif r < 0.10:
                q[3] = "外观"  # outside the set
            rows.append(tuple(q))
            if rng.random() < 0.02:
                rows.append(tuple(q))  # duplicate prediction
        for _ in range(20):  # extra predictions for other reviews and for unknown ids
            rows.append((rng.choice(ids + [99999]), "_", "好", "整体", "正面"))
        rows.sort(key=lambda q: q[0])
        js = compare(rows, name=f"corrupt{trial}.csv")
        assert js["checks"]["violations"] > 0


def test_placeholders_and_missing():
    """Some ids replaced by placeholders, some left out."""
    rng = random.Random(3)
    rows, gone = [], set()
    for i in sorted(REV):
        r = rng.random()
        if r < 0.05:
            rows.append((i, "_", "_", "_", "_"))
        elif r < 0.08:
            gone.add(i)
        else:
            rows.extend(q for q in GOLD if q[0] == i)
    js = compare(rows, name="holes.csv")
    missing = [x for x in js["checks"]["issues"] if x["kind"] == "missing-id"]
    assert sorted(x["id"] for x in missing) == sorted(gone)


# ----------------------------------------------------------------- outputs

def test_table_and_errors():
    rows = [q for q in GOLD if q[0] != 2]
    path = write("no2.csv", submission(rows))
    rc, out, err = run(LABELS, path, "--reviews", REVIEWS, "--errors")
    assert rc == 0 and err == "", (rc, err)
    assert "quadruples" in out and "整体" in out
    assert "checks: 1 rule violation, 0 notes" in out
    assert "id 2 of the reviews is missing" in out
    assert "errors: 3 misses, 0 false positives" in out, out
    assert "review: 很好，遮暇功能差一些，总体还不错" in out


def test_json_only_on_stdout():
    path = write("bom.csv", b"\xef\xbb\xbf" + submission(GOLD).encode())
    rc, out, err = run(LABELS, path, "--json", "--errors")
    assert rc == 0
    js = json.loads(out)
    assert js["errors"] == [] and js["checks"]["violations"] == 1
    assert js["checks"]["issues"][0]["kind"] == "bom"
    assert err.startswith("tianchi-eval: warning: 1 rule violations"), err


def test_html():
    rows = list(GOLD[:50]) + [(1, "<b>x</b>", "&amp;", "<script>alert(1)</script>", "正面")]
    path = write("evil.csv", submission(rows))
    html = os.path.join(TMP, "report.html")
    rc, out, err = run(LABELS, path, "--reviews", REVIEWS, "--html", html)
    assert rc == 0, err
    page = open(html, encoding="utf-8").read()
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page and "</html>" in page
    assert "<script" not in page and "<b>x" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "&amp;amp;" in page
    assert "很好，超值，很好用" in page  # review text in the error list
    rc, out, err = run(LABELS, path, "--html=/nonexistent/dir/r.html")
    assert rc == 1 and err == "tianchi-eval: /nonexistent/dir/r.html: cannot write: No such file or directory\n", err


def test_stdin():
    rc, out, err = run(LABELS, "-", "--json", stdin=submission(GOLD).encode())
    assert rc == 0, err
    js = json.loads(out)
    assert js["overall"]["f1"] == 1.0 and js["inputs"]["predictions"]["file"] == "<stdin>"


# ------------------------------------------------------------------ strict

def test_strict():
    clean = write("clean.csv", submission(GOLD))
    assert run(LABELS, clean, "--reviews", REVIEWS, "--strict")[0] == 0
    # Review 5 without its quadruples: a placeholder row keeps the submission valid.
    rows = []
    for q in GOLD:
        if q[0] != 5:
            rows.append(q)
        elif (5, "_", "_", "_", "_") not in rows:
            rows.append((5, "_", "_", "_", "_"))
    placeholders = write("ph.csv", submission(rows))
    assert run(LABELS, placeholders, "--reviews", REVIEWS, "--strict")[0] == 0
    for name, rows in (
        ("missing.csv", [q for q in GOLD if q[0] != 5]),
        ("order.csv", GOLD[10:] + GOLD[:10]),
        ("category.csv", GOLD[:-1] + [GOLD[-1][:3] + ("颜色", "正面")]),
        ("polarity.csv", GOLD[:-1] + [GOLD[-1][:4] + ("好",)]),
        ("unknown.csv", GOLD + [(99999, "_", "好", "整体", "正面")]),
    ):
        path = write(name, submission(rows))
        rc, out, err = run(LABELS, path, "--reviews", REVIEWS)
        assert rc == 0 and "rule" in out, (name, rc, err)
        rc, out, err = run(LABELS, path, "--reviews", REVIEWS, "--strict")
        assert rc == 2, (name, rc, err)
        assert "tianchi-eval: --strict: the submission breaks" in err, err
        assert "quadruples" in out  # the scores are still printed
    header = write("header.csv", "id,AspectTerm,OpinionTerm,Category,Polarity\n" + submission(GOLD))
    assert run(LABELS, header, "--strict")[0] == 2
    assert run(LABELS, header)[0] == 0


# --------------------------------------------------------------- bad input

def expect_error(args, message, stdin=None):
    rc, out, err = run(*args, stdin=stdin)
    assert rc == 1, (args, rc, err)
    assert out == "", out
    assert err.count("\n") == 1 and err.startswith("tianchi-eval: "), err
    assert message in err, (message, err)


def test_bad_input():
    good = write("good.csv", submission(GOLD))
    expect_error([LABELS, "/nonexistent.csv"],
                 "tianchi-eval: /nonexistent.csv: cannot open: No such file or directory")
    expect_error(["/nonexistent.csv", good], "/nonexistent.csv: cannot open")
    expect_error([LABELS, LABELS], LABELS + ":1: header with 9 fields: this looks like a gold labels file")
    expect_error([good, good], good + ":1: 5 fields: this looks like a predictions file")
    expect_error([LABELS, REVIEWS], REVIEWS + ":1: header with 2 fields: this looks like a reviews file")
    expect_error([LABELS, good, "--reviews", LABELS], "this looks like a gold labels file")
    bad = write("fields.csv", "1,_,很好,整体,正面\n2,_,好\n")
    expect_error([LABELS, bad], bad + ":2: 3 fields, expected 5 for predictions")
    bad = write("id.csv", "1,_,很好,整体,正面\n\"二\",_,好,整体,正面\n")
    expect_error([LABELS, bad], bad + ":2: id \"二\" is not a non-negative integer")
    bad = write("utf8.csv", b"1,_,\xe5\xbe\x88\xe5\xa5\xbd,x,y\n2,_,\xba\xc3,x,y\n")
    expect_error([LABELS, bad], bad + ":2: invalid UTF-8")
    bad = write("empty.csv", "")
    expect_error([LABELS, bad], bad + ": empty file")
    expect_error([bad, good], bad + ": empty file")
    bad = write("quote.csv", "1,_,\"很好,整体,正面\n")
    expect_error([LABELS, bad], bad + ":1: a quoted field opened here is never closed")
    expect_error([LABELS, TMP], TMP + ": cannot read: Is a directory")
    expect_error([LABELS, good, "--reviews", write("dup.csv", "id,Reviews\n1,a\n1,b\n")],
                 "dup.csv:3: review id 1 appears twice (first at ")


def test_usage():
    rc, out, err = run("--help")
    assert rc == 0 and out.startswith("Usage: tianchi-eval GOLD PRED") and err == ""
    assert "--strict" in out and "2  with --strict" in out and "1  bad input" in out
    rc, out, err = run("--version")
    assert rc == 0 and out.startswith("tianchi-eval ")
    expect_error([], "expected two files, GOLD and PRED (see --help)")
    expect_error([LABELS], "expected two files")
    expect_error([LABELS, LABELS, LABELS], "one argument too many: " + LABELS)
    expect_error([LABELS, LABELS, "--frobnicate"], "unknown option --frobnicate")
    expect_error([LABELS, LABELS, "--html"], "--html needs a FILE")
    expect_error([LABELS, LABELS, "--reviews="], "--reviews needs a FILE")
    expect_error(["-", "-"], "only one file can be read from stdin")

# ------------------------------------------------------- compare and sweep

HAND_GOLD = """id,AspectTerms,A_start,A_end,OpinionTerms,O_start,O_end,Categories,Polarities
1,包装,0,2,很好,2,4,包装,正面
1,价格,5,7,便宜,7,9,价格,正面
2,物流,0,2,很快,2,4,物流,正面
2,味道,5,7,好闻,7,9,气味,正面
3,颜色,0,2,好看,2,4,整体,正面
3,质地,5,7,细腻,7,9,使用体验,正面
"""
HAND_REVIEWS = "id,Reviews\n1,包装很好，价格便宜\n2,物流很快，味道好闻\n3,颜色好看，质地细腻\n"
# A: S 2, P 6, G 6 (F1 1/3); B: S 4, P 7, G 6 (F1 8/13). The classes: tests/tianchi/test_compare.c.
RUN_A = ("1,包装,很好,包装,正面\n1,价格,便宜,价格,负面\n2,物流,很快,物流,正面\n"
         "2,味道,好闻,整体,正面\n3,颜色,细腻,整体,正面\n3,质地,好看,使用体验,正面\n")
RUN_B = ("1,包装,很好,包装,正面\n1,价格,便宜,价格,正面\n1,价格,便宜,价格,正面\n"
         "2,物流,很,物流,正面\n2,_,好闻,气味,正面\n3,颜色,好看,整体,正面\n3,质地,细腻,使用体验,正面\n")


def record(a, o, c, p, **extra):
    return dict(aspect=a, opinion=o, category=c, polarity=p, **extra)


# Five records, three right (confidence 0.95, 0.85, 0.55), G = 6.
SWEEP_LINES = [
    {"id": "1", "records": [record("包装", "很好", "包装", "正面", spans={"aspect": [0, 2], "opinion": [2, 4]},
                                   probs={"aspect": 0.98, "link": 0.99}, confidence=0.95),
                            record("价格", "便宜", "价格", "负面", confidence=0.35)]},
    {"id": 2, "records": [record("物流", "很快", "物流", "正面", confidence=0.85),
                          record("味道", "好闻", "气味", "正面", confidence=0.55),
                          record("物流", "慢", "物流", "负面", confidence=0.05)]},
    {"id": "3", "records": []},
]


def jsonl(lines):
    return "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines)


def hand_files():
    return (write("hand_gold.csv", HAND_GOLD), write("hand_reviews.csv", HAND_REVIEWS),
            write("run_a.csv", RUN_A), write("run_b.csv", RUN_B))


def test_compare_table():
    gold, reviews, a, b = hand_files()
    rc, out, err = run(gold, a, "--compare", b, "--reviews", reviews)
    assert rc == 0 and err == "", (rc, err)
    assert "F1(B) - F1(A) = +0.2821" in out, out
    assert "paired bootstrap over 3 reviews: 1000 resamples, seed 0" in out
    assert "  wrong link               2       2       0       0\n" in out
    assert "  missed span              0       -       1       -\n" in out
    assert "  unmatched                4       4       2       3\n" in out
    assert "review: 物流很快，味道好闻" in out
    # The same seed, the same output; JSON the same figures.
    assert run(gold, a, "--compare", b, "--reviews", reviews)[1] == out
    rc, out, err = run(gold, a, "--compare", b, "--json", "--bootstrap", "300", "--seed", "9")
    js = json.loads(out)
    f1 = [r["overall"]["f1"] for r in js["runs"]]
    assert abs(f1[0] - 1 / 3) < 1e-12 and abs(f1[1] - 8 / 13) < 1e-12, f1
    d = js["difference"]
    assert abs(d["f1"] - 11 / 39) < 1e-12 and d["resamples"] == 300 and d["seed"] == 9
    assert d["low"] <= d["f1"] <= d["high"], d
    classes = {c["class"]: (c["gold"], c["predicted"]) for c in js["runs"][1]["error_classes"]}
    assert classes == {"missed span": (1, 0), "extra span": (0, 1), "span boundary off": (1, 1),
                       "wrong link": (0, 0), "wrong category": (0, 0), "wrong polarity": (0, 0),
                       "repeated": (0, 1)}, classes
    rc, out, err = run(gold, a, "--compare", a, "--json")
    d = json.loads(out)["difference"]
    assert d["f1"] == 0 and d["low"] == 0 and d["high"] == 0, d


def test_compare_html_and_refusals():
    gold, reviews, a, b = hand_files()
    html = os.path.join(TMP, "compare.html")
    rc, out, err = run(gold, a, "--compare", b, "--reviews", reviews, "--html", html)
    assert rc == 0, err
    page = open(html, encoding="utf-8").read()
    assert "<h2>Comparison</h2>" in page and "span boundary off" in page and "Run B: " in page
    assert page.count("<!DOCTYPE html>") == 1 and page.endswith("</html>\n")
    short = write("short.csv", "1,包装,很好,包装,正面\n3,颜色,好看,整体,正面\n")
    expect_error([gold, a, "--compare", short],
                 short + ": id 2 has no row here but has one in " + a + ":3; the runs compared "
                 "must cover the same reviews")
    # --strict looks at both runs: B with a category outside the set.
    bad = write("bad_b.csv", RUN_A.replace("整体", "颜色"))
    assert run(gold, a, "--compare", bad, "--strict")[0] == 2
    assert run(gold, a, "--compare", b, "--strict")[0] == 0


def test_sweep():
    gold, reviews, a, b = hand_files()
    path = write("run.jsonl", jsonl(SWEEP_LINES))
    rc, out, err = run(gold, path, "--sweep", "--json")
    assert rc == 0, err
    js = json.loads(out)
    got = [(t["threshold"], t["kept"], t["score"]["matched"]) for t in js["thresholds"]]
    assert got == [(0.0, 5, 3), (0.1, 4, 3), (0.2, 4, 3), (0.3, 4, 3), (0.4, 3, 3), (0.5, 3, 3),
                   (0.6, 2, 2), (0.7, 2, 2), (0.8, 2, 2), (0.9, 1, 1), (0.95, 1, 1)], got
    bins = [(b["count"], b["correct"]) for b in js["reliability"]]
    assert bins == [(1, 0), (0, 0), (0, 0), (1, 0), (0, 0), (1, 1), (0, 0), (0, 0), (1, 1), (1, 1)]
    rc, out, err = run(gold, path, "--sweep", "--thresholds", "0.5,0.9")
    assert rc == 0 and "           0.50       3       3       6     1.0000  0.5000  0.6667" in out, out
    assert "  [0.9, 1.0]         1       1            1.0000" in out, out
    # Plain scoring reads JSONL too, and --compare takes it on either side.
    rc, out, err = run(gold, path, "--reviews", reviews, "--json")
    assert rc == 0 and json.loads(out)["overall"]["matched"] == 3
    rc, out, err = run(gold, a, "--compare", path, "--json")
    assert rc == 0 and json.loads(out)["runs"][1]["overall"]["predicted"] == 5
    old = write("old.jsonl", jsonl([{"id": 1, "records": [record("包装", "很好", "包装", "正面")]}]))
    assert run(gold, old)[0] == 0
    expect_error([gold, old, "--sweep"], old + ":1: a record without \"confidence\"")
    expect_error([gold, a, "--sweep"], a + ": the sweep needs pocketdec's JSONL output")
    renamed = write("renamed.jsonl", '{"id": 1, "records": [{"a": "包装", "o": "很好", "c": "包装", "p": "正面"}]}\n')
    rc, out, err = run(gold, renamed, "--fields", "a,o,c,p", "--json")
    assert rc == 0 and json.loads(out)["overall"]["matched"] == 1, err


def test_jsonl_errors():
    gold, reviews, a, b = hand_files()
    ok = '{"id": 1, "records": []}\n'
    for name, text, message in (
        ("badjson.jsonl", ok + '{"id": 2, "records": [\n', ":2: not JSON: "),
        ("norecords.jsonl", ok + '{"id": 2}\n', ':2: no "records"'),
        ("noid.jsonl", '{"records": []}\n', ':1: no "id"'),
        ("conf.jsonl", '{"id": 1, "records": [{"aspect": "a", "opinion": "b", "category": "整体", '
                       '"polarity": "正面", "confidence": "high"}]}\n',
         ':1: record 1: "confidence" must be a number in [0, 1]'),
        ("type.jsonl", '{"id": 1, "records": [{"aspect": ["a"], "opinion": "b", "category": "整体", '
                       '"polarity": "正面"}]}\n', ':1: record 1: "aspect" must be a string'),
        ("utf8.jsonl", ok.encode() + b'{"id": 2, "records": [{"aspect": "\xba"}]}\n',
         ":2: invalid UTF-8 at byte 35 of the line"),
        ("twice.jsonl", ok + ok, ":2: id 1 appears twice (first at line 1)"),
    ):
        path = write(name, text)
        expect_error([gold, path], path + message)
        expect_error([gold, path, "--sweep"], path + message)
    unknown = write("unknown.jsonl", ok + '{"id": 9, "records": []}\n')
    expect_error([gold, unknown, "--reviews", reviews],
                 unknown + ":2: id 9 is not an id of the reviews (" + reviews + ")")
    assert run(gold, unknown)[0] == 0  # without reviews, ids are not checked against them


def splitmix64(state):
    state = (state + 0x9E3779B97F4A7C15) & (2**64 - 1)
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & (2**64 - 1)
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & (2**64 - 1)
    return state, z ^ (z >> 31)


def reference_bootstrap(gold, runs, resamples, seed):
    """The paired bootstrap as docs/tianchi-eval.md states it, written independently."""
    ids = sorted({q[0] for q in gold} | {q[0] for q in runs[0]})
    g = collections.Counter(q[0] for q in gold)
    counts = []
    for rows in runs:
        quads = [q for q in rows if q[1:] != ("_", "_", "_", "_")]
        both = collections.Counter(gold) & collections.Counter(quads)
        s = collections.Counter()
        for q, n in both.items():
            s[q[0]] += n
        counts.append((collections.Counter(q[0] for q in quads), s))
    state, limit, diffs = seed, 2**64 - (2**64 - 1) % len(ids) - 1, []
    for _ in range(resamples):
        tot = [[0, 0], [0, 0]]
        gg = 0
        for _ in range(len(ids)):
            while True:
                state, x = splitmix64(state)
                if x < limit:
                    break
            i = ids[x % len(ids)]
            gg += g[i]
            for k in range(2):
                tot[k][0] += counts[k][1][i]
                tot[k][1] += counts[k][0][i]
        f1 = [ratios(s, p, gg)[2] for s, p in tot]
        diffs.append(f1[1] - f1[0])
    diffs.sort()
    # Nearest rank: the k-th smallest, k = ceil(q N) (rounded first: 0.025 * 200 is not exactly 5).
    return tuple(diffs[max(1, math.ceil(round(q * resamples, 9))) - 1] for q in (0.025, 0.975))


def test_compare_train_data():
    """Two perturbed runs of the training data: the classes add up on each side, and
    the interval is the one an independent bootstrap with the same generator gives."""
    rng = random.Random(4)
    a = [q for q in GOLD if rng.random() > 0.1]
    b = [q[:4] + (rng.choice(POLARITIES),) if rng.random() < 0.05 else q for q in GOLD]
    ids = {q[0] for q in a}
    b += [(i, "_", "_", "_", "_") for i in sorted({q[0] for q in GOLD} - {q[0] for q in b})]
    a += [(i, "_", "_", "_", "_") for i in sorted({q[0] for q in b} - ids)]
    a.sort(key=lambda q: q[0])
    b.sort(key=lambda q: q[0])
    pa, pb = write("train_a.csv", submission(a)), write("train_b.csv", submission(b))
    rc, out, err = run(LABELS, pa, "--compare", pb, "--json", "--bootstrap", "200", "--seed", "11")
    assert rc == 0, err
    js = json.loads(out)
    for r in js["runs"]:
        o = r["overall"]
        assert sum(c["gold"] for c in r["error_classes"]) == o["gold"] - o["matched"]
        assert sum(c["predicted"] for c in r["error_classes"]) == o["predicted"] - o["matched"]
    low, high = reference_bootstrap(GOLD, (a, b), 200, 11)
    d = js["difference"]
    assert (d["low"], d["high"]) == (low, high), (d, low, high)


def test_compare_sweep_usage():
    gold, reviews, a, b = hand_files()
    rc, out, err = run("--help")
    assert "--compare B" in out and "--sweep" in out and "--thresholds" in out and "--fields" in out
    expect_error([gold, a, "--compare", b, "--sweep"], "--sweep and --compare go one at a time")
    expect_error([gold, a, "--sweep", "--errors"], "--sweep lists no errors: leave out --errors")
    expect_error([gold, a, "--compare", b, "--bootstrap", "0"], "--bootstrap needs a number of resamples")
    expect_error([gold, a, "--compare", b, "--seed", "-1"], "--seed needs a non-negative integer")
    expect_error([gold, a, "--sweep", "--thresholds", "0.5,2"], "--thresholds needs numbers in [0, 1]")
    expect_error([gold, a, "--fields", "a,b"], "JSONL fields \"a,b\": expected four non-empty names")
    expect_error(["-", a, "--compare", b], "with --compare, GOLD and --reviews are read twice")
    expect_error([gold, a, "--compare"], "--compare needs a FILE")


def main(namespace=None):
    """Run the test_ functions of namespace (this module's by default)."""
    tests = [(k, v) for k, v in (namespace or globals()).items() if k.startswith("test_") and callable(v)]
    failed = 0
    for name, fn in tests:
        try:
            fn()
            print(f"ok {name}")
        except Exception as e:  # report every failure, then exit non-zero
            failed += 1
            print(f"FAIL {name}: {type(e).__name__}: {e}")
    print(f"{len(tests) - failed}/{len(tests)} passed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

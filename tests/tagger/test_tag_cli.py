#!/usr/bin/python3
"""`pocketdec tag` and `pocketdec extract --head TAGGER` against the float64 reference of
tools/testmodels/make_head.py: emissions, link scores and label logits within 2e-5 of the largest
|value| of each, tokens, tags, spans, choices and records exactly.

Usage: test_tag_cli.py POCKETDEC FIXTURES/cases.json
"""
import csv
import io
import json
import os
import subprocess
import sys
import tempfile

PD, CASES = sys.argv[1:3]
DOC = json.load(open(CASES))
RESULTS = []
TOL = 2e-5


def run(*args, stdin=None):
    p = subprocess.run([PD, *args], input=stdin, capture_output=True, timeout=120)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def check(name, cond, detail=""):
    RESULTS.append(bool(cond))
    print(("ok    " if cond else "FAIL  ") + name + ("" if cond else "  " + str(detail)[:400]))


def close(got, want):
    scale = max([1e-30] + [abs(w) for w in want])
    return len(got) == len(want) and all(abs(g - w) <= TOL * scale for g, w in zip(got, want))


def strip(spans):
    """spans without their probability (compared within TOL)."""
    return [{k: v for k, v in s.items() if k != "probability"} for s in spans]


def test_tag():
    for c in DOC["cases"]:
        rc, out, err = run("tag", "--model", DOC["model"], "--head", c["head"], "--schema", DOC["schema"],
                           "--text", c["text"])
        if rc:
            check(c["name"], False, err)
            continue
        g = json.loads(out)
        names = c["tag_names"]
        check(c["name"] + ": tokens and read_start", g["tokens"] == c["ids"] and g["read_start"] == c["read_start"], out)
        check(c["name"] + ": emissions", close(sum(g["emissions"], []), sum(c["emissions"], [])), out)
        check(c["name"] + ": tags", g["tags"] == [names[t] for t in c["tags"]], out)
        check(c["name"] + ": spans", strip(g["spans"]) == strip(c["spans"]) and all(
            abs(x["probability"] - y["probability"]) <= TOL for x, y in zip(g["spans"], c["spans"])), out)
        check(c["name"] + ": links", len(g["links"]) == len(c["links"]) and all(
            x["from"] == y["from"] and x["choice"] == y["choice"] and close(x["scores"], y["scores"])
            for x, y in zip(g["links"], c["links"])), out)
        check(c["name"] + ": label logits", len(g["labels"]) == len(c["label_logits"]) and all(
            close(x["logits"], y) for x, y in zip(g["labels"], c["label_logits"])), out)
        check(c["name"] + ": records, one pass", g["records"] == c["records"] and g["forward_passes"] == 1, out)
        check(c["name"] + ": candidates and their fates", len(g["candidates"]) == len(c["candidates"]) and all(
            x["spans"] == y["spans"] and x["label"] == y["label"] and x["fate"] == y["fate"] and
            abs(x["confidence"] - y["confidence"]) <= TOL for x, y in zip(g["candidates"], c["candidates"])) and
            sum(x["fate"] == "written" for x in g["candidates"]) == len(g["records"]), out)


def pair_cases(name="head-pair"):
    return [c for c in DOC["cases"] if c["head"].endswith(name)]


def write_reviews(path, cases):
    """A reviews CSV of the cases' texts and an empty review; the submission rows the reference wants."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "Reviews"])
        for i, c in enumerate(cases):
            w.writerow([i + 1, c["text"]])
        w.writerow([len(cases) + 1, ""])
    want = []
    for i, c in enumerate(cases):
        want += [[str(i + 1)] + [r[f] for f in DOC["fields"]] for r in c["records"]] or [[str(i + 1), "_", "_", "_", "_"]]
    return want + [[str(len(cases) + 1), "_", "_", "_", "_"]]


def test_extract():
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "reviews.csv")
        cases = pair_cases("head-pair-features")
        want = write_reviews(src, cases)
        rc, out, err = run("extract", "--model", DOC["model"], "--schema", DOC["schema"], "--head", cases[0]["head"],
                           "--input", src, "--output", "-")
        got = list(csv.reader(io.StringIO(out)))
        check("extract --head (tagger with sparse features): Tianchi rows as the reference", rc == 0 and got == want,
              (out, err))
        cases = pair_cases()
        head = cases[0]["head"]
        want = write_reviews(src, cases)
        rc, out, err = run("extract", "--model", DOC["model"], "--schema", DOC["schema"], "--head", head,
                           "--input", src, "--output", "-")
        got = list(csv.reader(io.StringIO(out)))
        check("extract --head (tagger): Tianchi rows as the reference", rc == 0 and got == want, (out, err))
        check("extract --head (tagger): summary line", rc == 0 and f"{len(cases) + 1} reviews" in err, err)
        rc, out, err = run("extract", "--model", DOC["model"], "--schema", DOC["schema"], "--head", head,
                           "--input", src, "--output", "-", "--format", "jsonl")
        rows = [json.loads(x) for x in out.splitlines()] if rc == 0 else []
        meta_keys = ("spans", "probs", "link", "confidence")
        check("extract --head (tagger) --format jsonl", rc == 0 and [
            [{k: v for k, v in rec.items() if k not in meta_keys} for rec in r["records"]] for r in rows[:len(cases)]]
              == [c["records"] for c in cases], out + err)
        # offsets exactly, probabilities as printed (4 significant digits)
        near = lambda got, want: abs(got - want) <= 5e-4 * max(abs(want), 1e-30)  # noqa: E731
        check("extract --head (tagger) --format jsonl: offsets and probabilities as the reference", rc == 0 and all(
            rec["spans"] == m["spans"] and near(rec["confidence"], m["confidence"]) and
            near(rec["probs"]["link"], m["link"]) and all(near(rec["probs"][f], m["probs"][f]) for f in DOC["fields"])
            for r, c in zip(rows, cases) for rec, m in zip(r["records"], c["record_meta"])), out)
        rc2, out2, err2 = run("extract", "--model", DOC["model"], "--schema", DOC["schema"], "--head", head,
                              "--input", src, "--output", "-", "--format", "jsonl", "--min-confidence", "0.05")
        kept = [json.loads(x)["records"] for x in out2.splitlines()] if rc2 == 0 else []
        want_kept = [[x for x in r["records"] if x["confidence"] >= 0.05] for r in rows]
        check("extract --min-confidence 0.05: the records of confidence 0.05 or more, the others dropped",
              rc2 == 0 and kept == want_kept and sum(map(len, kept)) < sum(len(r["records"]) for r in rows), out2 + err2)
        rc2, _, err2 = run("extract", "--model", DOC["model"], "--schema", DOC["schema"], "--head", head,
                           "--input", src, "--output", "-", "--min-confidence", "1.5")
        check("extract --min-confidence 1.5 is a usage error with the library's message",
              rc2 == 2 and "min_confidence 1.5 is not within [0, 1]" in err2, err2)
        rc2, out2, err2 = run("extract", "--model", DOC["model"], "--schema", DOC["schema"], "--head", head,
                              "--input", src, "--output", "-", "--format", "jsonl", "--max-chars", "16")
        texts = [c["text"] for c in cases]
        windowed = [json.loads(x)["records"] for x in out2.splitlines()][:len(cases)] if rc2 == 0 else []
        check("extract --max-chars 16: every review read, each span at its offsets in the whole review",
              rc2 == 0 and len(windowed) == len(cases) and all(
                  t[a:b] == r[f] for t, rs in zip(texts, windowed) for r in rs for f, (a, b) in r["spans"].items()),
              out2 + err2)
        rc2, _, err2 = run("extract", "--model", DOC["model"], "--schema", DOC["schema"], "--head", head,
                           "--input", src, "--output", "-", "--max-chars", "8")
        check("extract --max-chars 8 (under 16) is a usage error with the library's message",
              rc2 == 2 and "max_chars 8: 0, or at least 16 characters" in err2, err2)
        jl = os.path.join(tmp, "reviews.jsonl")
        with open(jl, "w") as f:
            for i, c in enumerate(cases):
                f.write(json.dumps({"id": i + 1, "text": c["text"]}, ensure_ascii=False) + "\n")
            f.write("{\"id\": 99}\n")
        rc, out, err = run("extract", "--model", DOC["model"], "--schema", DOC["schema"], "--head", head,
                           "--input", jl, "--output", "-")
        got = list(csv.reader(io.StringIO(out)))
        check("extract --head (tagger): JSONL in, broken row reported, exit 1", rc == 1 and got == want[:-1]
              and "reviews.jsonl:%d" % (len(cases) + 1) in err, (out, err))
        rc, out, err = run("extract", "--model", DOC["model"], "--schema", DOC["schema"], "--head", head,
                           "--input", src, "--output", "-", "--max-records", "3")
        check("extract --head (tagger) refuses --max-records, naming it", rc == 1 and "max_records does not apply" in err,
              err)
        bad = next(b for b in DOC["bad_heads"] if b["name"] == "label value not in the enum")
        rc, out, err = run("extract", "--model", DOC["model"], "--schema", DOC["schema"], "--head", bad["dir"],
                           "--input", src, "--output", "-")
        check("extract with a tagger head the schema refuses: one line, exit 1",
              rc == 1 and err.count("\n") == 1 and "超好" in err and bad["dir"] in err and out == "", err)


def test_errors():
    c = pair_cases()[1]
    rc, _, err = run("tag", "--model", DOC["model"], "--head", c["head"], "--schema", DOC["schema"])
    check("tag without --text exits 2", rc == 2 and "--text" in err, err)
    bad = next(b for b in DOC["bad_heads"] if b["name"] == "tag.weight missing")
    rc, _, err = run("tag", "--model", DOC["model"], "--head", bad["dir"], "--schema", DOC["schema"], "--text", "1")
    check("tag with a broken head: one line naming the file, exit 1",
          rc == 1 and err.count("\n") == 1 and "tag.weight" in err and "head.safetensors" in err, err)
    rc, _, err = run("tag", "--model", DOC["model"], "--head", DOC["pointer_head"], "--schema", DOC["schema"],
                     "--text", "1")
    check("tag with a pointer head exits 1", rc == 1 and "not a tagger head" in err, err)
    rc, _, err = run("score", "--model", DOC["model"], "--head", c["head"], "--text", "1", "--candidate", "1")
    check("score with a tagger head exits 1", rc == 1 and "tagger" in err, err)
    rc, _, err = run("tag", "--model", DOC["model"], "--head", c["head"], "--schema", DOC["schema"], "--text",
                     "1" * 40, "--ctx", "32")
    check("tag: a prompt longer than the context exits 1", rc == 1 and "context" in err, err)
    rc, out, err = run("tag", "--model", DOC["model"], "--head", c["head"], "--schema", DOC["schema"], "--text", "")
    g = json.loads(out) if rc == 0 else {}
    check("tag: an empty text, no pass", rc == 0 and g["records"] == [] and g["forward_passes"] == 0, out + err)


test_tag()
test_extract()
test_errors()
print(f"{sum(RESULTS)} passed, {len(RESULTS) - sum(RESULTS)} failed")
sys.exit(0 if all(RESULTS) else 1)

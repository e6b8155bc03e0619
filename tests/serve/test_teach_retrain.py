#!/usr/bin/python3
"""A tiny retrain whose new bundle the running `pocketdec serve --teach` takes (the `teach-retrain` test).

Starts the server on the bundled default with 20 labelled Tianchi reviews to teach, answers 12 of them with
their gold records through the API, retrains the bundle on the labels file the server wrote (train/teach.py:
those 12 reviews, one epoch), POSTs /v1/reload with the new bundle, and checks:
- /v1/extract answers `pocketdec extract --model NEW`'s records;
- /v1/teach/next proposes the new model's records for the review `pocketdec rank --model NEW` puts first
  among the 8 not labelled (the queue ranked again by the new model);
- the generation the queue held is released (the server says so) once nothing uses it;
- GET /v1/teach/changes: its counts and each review's added/removed/unchanged records equal those computed
  here from the labels file's "model" and "records" and the new bundle's extract output;
- a labels line whose text is no longer its review's is reported as an error, not compared;
- (without torch too) a bundle that cannot rank the queue (--order entropy, a bundle without a tagger head)
  is refused 422, and the queue goes on with the old model.
Waits on what the server prints and answers, never on time. Exits 77 (skipped) without torch or without
libmicrohttpd.

Usage: test_teach_retrain.py POCKETDEC SOURCE_ROOT
"""
import json
import os
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_teach import Server, check, lines, RESULTS, M, SCHEMA, PD, ROOT  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "train"))
import dataset as DS  # noqa: E402


def gold_records(r):
    return [{"aspect": None if a == "_" else {"text": a, "start": a0, "end": a1},
             "opinion": None if o == "_" else {"text": o, "start": o0, "end": o1},
             "category": c, "polarity": p} for a, a0, a1, o, o0, o1, c, p in r.records]


def key(rec):
    """A labels-file record's identity: spans by character offsets."""
    sp = lambda v: None if v is None else (v["start"], v["end"])  # noqa: E731
    return (sp(rec["aspect"]), sp(rec["opinion"]), rec["category"], rec["polarity"])


def extract_key(rec):
    """An extract --format jsonl record's identity, the same way."""
    sp = rec.get("spans", {})
    return (tuple(sp["aspect"]) if "aspect" in sp else None, tuple(sp["opinion"]) if "opinion" in sp else None,
            rec["category"], rec["polarity"])


def common(x, y):
    return sum(min(x.count(k), y.count(k)) for k in set(x))


def expected_changes(labels, now):
    """The figures of /v1/teach/changes, computed from the labels file and extract's records."""
    want = {"reviews": 0, "exact": [0, 0], "matched": [0, 0], "predicted": [0, 0], "gold": 0, "fixed": 0,
            "broken": 0, "added": 0, "removed": 0, "unchanged": 0, "changed": 0, "items": {}}
    for line in labels:
        g, b, a = [key(r) for r in line["records"]], [key(r) for r in line["model"]], now[str(line["id"])]
        same = common(a, b)
        fixed = sum(max(0, min(a.count(k), g.count(k)) - min(b.count(k), g.count(k))) for k in set(g))
        broken = sum(max(0, min(b.count(k), g.count(k)) - min(a.count(k), g.count(k))) for k in set(g))
        want["reviews"] += 1
        for i, x in enumerate((b, a)):
            want["exact"][i] += len(x) == len(g) and common(x, g) == len(g)
            want["matched"][i] += common(x, g)
            want["predicted"][i] += len(x)
        want["gold"] += len(g)
        want["fixed"] += fixed
        want["broken"] += broken
        want["added"] += len(a) - same
        want["removed"] += len(b) - same
        want["unchanged"] += same
        want["changed"] += len(a) != same or len(b) != same
        want["items"][str(line["id"])] = (sorted(a, key=repr), sorted(
            (k for k in set(b) for _ in range(b.count(k) - a.count(k))), key=repr), fixed, broken)
    return want


def got_changes(ch):
    got = {k: ch[k] for k in ("reviews", "gold", "fixed", "broken", "added", "removed", "unchanged", "changed")}
    for k in ("exact", "matched", "predicted"):
        got[k] = [ch[k]["before"], ch[k]["after"]]
    got["items"] = {str(it["id"]): (
        sorted((key(r) for r in it["records"] if r["change"] != "removed"), key=repr),
        sorted((key(r) for r in it["records"] if r["change"] == "removed"), key=repr),
                                    it["fixed"], it["broken"]) for it in ch["items"]}
    return got


def extract(model, reviews, tmp):
    inp, out = os.path.join(tmp, "in.jsonl"), os.path.join(tmp, "out.jsonl")
    with open(inp, "w", encoding="utf-8") as f:
        f.writelines(json.dumps({"id": r.id, "text": r.text}, ensure_ascii=False) + "\n" for r in reviews)
    p = subprocess.run([PD, "extract", "--model", model, "--schema", SCHEMA, "--input", inp, "--input-format",
                        "jsonl", "--output", out, "--format", "jsonl", "--threads", "1"], capture_output=True,
                       text=True, timeout=300)
    check("pocketdec extract --model NEW runs", p.returncode == 0, p.stderr)
    return {str(x["id"]): x["records"] for x in map(json.loads, open(out, encoding="utf-8"))}


def refused(tmp):
    """A reload whose bundle cannot rank the queue changes nothing."""
    csv = os.path.join(tmp, "few.csv")
    with open(os.path.join(ROOT, "data", "tianchi", "dev_reviews.csv"), encoding="utf-8") as f, \
            open(csv, "w", encoding="utf-8") as out:
        out.write("".join(line for _, line in zip(range(4), f)))
    s = Server("--teach", csv, "--labels", os.path.join(tmp, "few.jsonl"), "--order", "entropy")
    if not s.url:
        err = "".join(s.lines)
        if "without libmicrohttpd" in err:
            print("skipped: " + err.strip())
            sys.exit(77)
        check("the server starts", False, err)
        return
    st0, before = s.call("/v1/teach/next")
    st, body = s.call("/v1/reload", {"model": os.path.join(ROOT, "models", "tianchi-gen")})
    st1, after = s.call("/v1/teach/next")
    _, info = s.call("/v1/info")
    check("a bundle that cannot rank the queue (entropy, no tagger head) is refused 422, nothing changed",
          st == 422 and "cannot be ranked" in body["error"] and st1 == 200 and after == before and
          info["generation"] == 1 and info["head"] == "tagger", (st, body, info))
    s.stop()


def main():
    tmp = tempfile.mkdtemp(prefix="pd-teach-retrain-")
    refused(tmp)
    try:
        import torch  # noqa: F401
    except ImportError:
        print("SKIP: python3-torch is not installed; the retrain cannot run")
        return 77 if all(RESULTS) else 1
    schema = DS.Schema(SCHEMA)
    reviews = [r for r in DS.read([os.path.join(ROOT, "data", "tianchi")], schema, DS.Report(True))
               if "," not in r.text and '"' not in r.text][:20]
    by_id = {str(r.id): r for r in reviews}
    csv = os.path.join(tmp, "reviews.csv")
    with open(csv, "w", encoding="utf-8") as f:
        f.write("id,Reviews\n" + "".join(f"{r.id},{r.text}\n" for r in reviews))
    labels = os.path.join(tmp, "labels.jsonl")
    s = Server("--teach", csv, "--labels", labels, "--order", "confidence")
    if not s.url:
        err = "".join(s.lines)
        if "without libmicrohttpd" in err:
            print("skipped: " + err.strip())
            return 77
        check("the server starts", False, err)
        return 1

    answered = []
    for _ in range(12):
        st, nxt = s.call("/v1/teach/next")
        rid = nxt["review"]["id"]
        st, ans = s.call("/v1/teach/answer", {"id": rid, "records": gold_records(by_id[rid])})
        answered.append(rid)
    check("12 gold answers taken", st == 200 and len(lines(labels)) == 12, (st, ans))
    st, nxt = s.call("/v1/teach/next")
    check("generation 1 before the reload", nxt["progress"]["generation"] == 1, nxt["progress"])

    new = os.path.join(tmp, "new")
    p = subprocess.run([sys.executable, os.path.join(ROOT, "train", "teach.py"), "--bundle", M, "--labels", labels,
                        "--out", new, "--original", "none", "--epochs", "1", "--threads", "1", "--schema", SCHEMA],
                       capture_output=True, text=True, timeout=600)
    check("train/teach.py retrains on the server's labels file", p.returncode == 0, p.stderr[-2000:])

    released = threading.Event()

    def watch():  # the server's stderr after startup: the old generation's release
        for line in s.proc.stderr:
            s.lines.append(line)
            if "generation 1 released" in line:
                released.set()
    threading.Thread(target=watch, daemon=True).start()
    st, info = s.call("/v1/reload", {"model": new})
    check("POST /v1/reload takes the new bundle (generation 2)", st == 200 and info.get("generation") == 2, info)
    check("the generation the queue held is released", released.wait(300), s.lines[-5:])

    want = extract(new, reviews, tmp)
    st, got = s.call("/v1/extract", {"texts": [r.text for r in reviews]})
    check("/v1/extract answers the new bundle's records", st == 200 and
          [x["records"] for x in got["results"]] == [want[str(r.id)] for r in reviews],
          (st, str(got)[:300]))
    old = extract(M, reviews, tmp)
    check("the new bundle differs from the old on these reviews (the test can tell them apart)", old != want)

    open_csv = os.path.join(tmp, "open.csv")
    with open(open_csv, "w", encoding="utf-8") as f:
        f.write("id,Reviews\n" + "".join(f"{r.id},{r.text}\n" for r in reviews if str(r.id) not in answered))
    p = subprocess.run([PD, "rank", "--model", new, "--schema", SCHEMA, "--input", open_csv, "--order",
                        "confidence", "--threads", "1"], capture_output=True, text=True, timeout=300)
    order = [json.loads(x)["id"] for x in p.stdout.splitlines()]
    st, nxt = s.call("/v1/teach/next")
    r = nxt["review"]
    check("/v1/teach/next: the review the new model ranks first, generation 2",
          len(order) == 8 and r["id"] == order[0] and nxt["progress"]["generation"] == 2, (r["id"], order))
    check("/v1/teach/next proposes the new model's records",
          [key(x) for x in r["records"]] == [extract_key(x) for x in want[r["id"]]], (r["records"], want[r["id"]]))

    st, ch = s.call("/v1/teach/changes")
    now = {i: [extract_key(x) for x in recs] for i, recs in want.items()}
    exp = expected_changes(lines(labels), now)
    check("/v1/teach/changes: the figures computed from the labels file and extract",
          st == 200 and got_changes(ch) == exp and ch["errors"] == [] and ch["generation"] == 2,
          (st, {k: v for k, v in got_changes(ch).items() if k != "items"}, {k: v for k, v in exp.items() if k != "items"}))
    s.stop()

    # a labels line whose text is no longer its review's: an error entry, the rest compared
    first = str(lines(labels)[0]["id"])
    with open(csv, "w", encoding="utf-8") as f:
        f.write("id,Reviews\n" + "".join(f"{r.id},{r.text}{'！' if str(r.id) == first else ''}\n" for r in reviews))
    s = Server("--teach", csv, "--labels", labels, "--order", "confidence", model=new)
    st, ch = s.call("/v1/teach/changes")
    check("a line whose text changed is reported, the others compared",
          st == 200 and ch["reviews"] == 11 and len(ch["errors"]) == 1 and
          str(ch["errors"][0]["id"]) == first and "labels.jsonl, line 1: its text is not review" in ch["errors"][0]["error"], ch.get("errors", ch))
    s.stop()
    print("%d passed, %d failed" % (RESULTS.count(True), RESULTS.count(False)))
    return 0 if all(RESULTS) else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""`pocketdec serve --teach` from an HTTP client (the `teach-resume` test): every answer is in the labels
file when the server says OK; kill -9 and a torn last line (what a crash in the middle of a write leaves)
lose nothing answered: the restart cuts the torn line, says how many are labelled, asks the next review
no line holds, and never one answered; undo after a restart takes back the file's last line; two tabs
answering one review get 409 and one line; a second server on the same labels file is refused; bad answers (a label outside the schema, a span off the
text, an unknown id, no records, not JSON, overlapping spans) get 400 and leave the labels file and its
progress byte for byte as they were; with --api-key no review is shown and no answer taken without
the key; another schema (train/examples/coarse) is asked with its own fields and values; the order is
`pocketdec rank`'s. Waits on what the server prints and answers, never on time.

Usage: test_teach.py POCKETDEC SOURCE_ROOT
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

PD, ROOT = sys.argv[1:3]
M = os.path.join(ROOT, "models", "tianchi")
GEN = os.path.join(ROOT, "models", "tianchi-gen")
SCHEMA = os.path.join(ROOT, "schemas", "tianchi-makeup.yaml")
COARSE = os.path.join(ROOT, "train", "examples", "coarse", "coarse.yaml")
DEV = os.path.join(ROOT, "data", "tianchi", "dev_reviews.csv")
RESULTS = []


def check(name, cond, detail=""):
    RESULTS.append(bool(cond))
    print(("ok    " if cond else "FAIL  ") + name + ("" if cond else "  " + str(detail)[:800]), flush=True)


class Server:
    """pocketdec serve on a free port (--port 0: the port it prints), started and waited for by its line."""

    def __init__(self, *args, model=M, schema=SCHEMA):
        self.proc = subprocess.Popen([PD, "serve", "--port", "0", "--threads", "1", "--model", model, "--schema",
                                      schema, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.lines = []
        self.url = None
        for line in self.proc.stderr:
            self.lines.append(line)
            if "listening on" in line:
                self.url = line.split("listening on ")[1].split()[0]
                break
        if not self.url:
            self.proc.wait(60)

    def call(self, path, body=None, key=None, raw=None):
        data = raw if raw is not None else None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method="POST" if data is not None else "GET",
                                     headers={"Authorization": f"Bearer {key}"} if key else {})
        try:
            with urllib.request.urlopen(req, timeout=120) as r:
                return r.status, json.load(r)
        except urllib.error.HTTPError as e:
            return e.code, json.load(e)

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(60)
        self.proc.stderr.close()

    def stop(self):
        """SIGTERM: it drains and exits 0 (under ASan: with nothing leaked)."""
        self.proc.terminate()
        _, err = self.proc.communicate(timeout=120)
        check("the server stops cleanly on SIGTERM", self.proc.returncode == 0, err[-2000:])


def read(path):
    with open(path, "rb") as f:
        return f.read()


def lines(path):
    return [json.loads(x) for x in read(path).decode("utf-8").splitlines()]


def span(text, a, b):
    return {"text": "".join(list(text)[a:b]), "start": a, "end": b}


def main():
    tmp = tempfile.mkdtemp(prefix="pd-teach-")
    reviews = os.path.join(tmp, "reviews.csv")
    with open(DEV, encoding="utf-8") as f, open(reviews, "w", encoding="utf-8") as out:
        out.write("".join(line for _, line in zip(range(13), f)))
    labels = os.path.join(tmp, "labels.jsonl")
    teach = ["--teach", reviews, "--labels", labels]
    p = subprocess.run([PD, "rank", "--model", M, "--schema", SCHEMA, "--input", reviews, "--threads", "1"], capture_output=True, text=True, timeout=300)
    order = [json.loads(x)["id"] for x in p.stdout.splitlines()]
    check("rank orders the 12 reviews", p.returncode == 0 and len(order) == 12, p.stderr)

    s = Server(*teach)
    check("the server starts with --teach, saying how many are labelled", s.url and any(
        "12 reviews, 0 labelled" in x for x in s.lines), s.lines)
    asked, answered = [], []
    for k in range(3):
        st, nxt = s.call("/v1/teach/next")
        r = nxt["review"]
        asked.append(r["id"])
        recs = r["records"] if k != 1 else []
        st, ans = s.call("/v1/teach/answer", {"id": r["id"], "records": recs})
        answered.append((r["id"], recs))
        got = lines(labels)
        check(f"answer {k + 1}: on disk when the server says OK", st == 200 and len(got) == k + 1 and
              got[-1]["id"] == int(r["id"]) and got[-1]["records"] == recs, (st, ans, got[-1:]))
    check("the reviews are asked in rank's order", asked == order[:3], (asked, order))
    line = lines(labels)[0]
    check("a line is train/dataset.py's: id, text, records with every field; the model's beside",
          set(line) >= {"id", "text", "records", "answer", "model"} and line["records"] == line["model"] and
          line["answer"] == ("accepted" if line["records"] else "nothing") and
          all(set(rec) == {"aspect", "opinion", "category", "polarity"} for rec in line["records"]), line)
    check("nothing to label is written as records []", lines(labels)[1]["records"] == [] and
          lines(labels)[1]["answer"] == "nothing", lines(labels)[1])

    # bad answers: 400 (or 409), nothing on disk changes
    st, nxt = s.call("/v1/teach/next")
    r = nxt["review"]
    text = r["text"]
    before, before_progress = read(labels), read(labels + ".progress")
    good = {"aspect": None, "opinion": span(text, 0, 2), "category": "整体", "polarity": "正面"}
    bad = [
        ("a label outside the schema", {"id": r["id"], "records": [dict(good, polarity="很好")]}, 400, "polarity"),
        ("a category outside the schema", {"id": r["id"], "records": [dict(good, category="颜色")]}, 400, "category"),
        ("a span off the text", {"id": r["id"], "records": [dict(good, opinion={"start": 0, "end": 999})]}, 400,
         "not a span"),
        ("an empty span", {"id": r["id"], "records": [dict(good, opinion={"start": 3, "end": 3})]}, 400, "not a span"),
        ("a span whose text is not the review's", {"id": r["id"], "records": [
            dict(good, opinion={"text": "别的", "start": 0, "end": 2})]}, 400, "not the review's"),
        ("a field missing", {"id": r["id"], "records": [{"aspect": None, "opinion": None, "category": "整体"}]}, 400,
         "polarity"),
        ("overlapping spans of one field", {"id": r["id"], "records": [good, dict(good, opinion=span(text, 1, 3))]},
         400, "overlaps"),
        ("an unknown review id", {"id": "no-such-review", "records": []}, 400, "no review of id"),
        ("no records", {"id": r["id"]}, 400, "records"),
        ("an answer for a review answered already", {"id": asked[0], "records": []}, 409, "answered already"),
    ]
    for name, body, want, words in bad:
        st, ans = s.call("/v1/teach/answer", body)
        check(f"{name}: {want}, saying so", st == want and words in ans.get("error", ""), (st, ans))
    st, ans = s.call("/v1/teach/answer", raw=b"{not json")
    check("a body that is not JSON: 400", st == 400, (st, ans))
    check("after every bad answer the labels file and its progress are as they were",
          read(labels) == before and read(labels + ".progress") == before_progress)

    # two tabs: the same review answered twice, one line
    st1, _ = s.call("/v1/teach/answer", {"id": r["id"], "records": [good]})
    st2, ans2 = s.call("/v1/teach/answer", {"id": r["id"], "records": []})
    got = lines(labels)
    check("two tabs: the first answer 200, the second 409, one line",
          st1 == 200 and st2 == 409 and [x["id"] for x in got].count(int(r["id"])) == 1 and got[-1]["records"] == [good],
          (st1, st2, ans2))
    answered.append((r["id"], [good]))
    asked.append(r["id"])

    # a skip is not written; the next review follows it
    st, nxt = s.call("/v1/teach/next")
    skipped = nxt["review"]["id"]
    st, ans = s.call("/v1/teach/skip", {"id": skipped})
    st, nxt = s.call("/v1/teach/next")
    check("a skip writes nothing and is not asked again in the session",
          st == 200 and len(lines(labels)) == 4 and nxt["review"]["id"] not in asked + [skipped] and
          nxt["progress"]["skipped"] == 1, nxt["progress"])

    # a second server on the same labels file is refused while the first runs
    s2 = Server(*teach)
    check("a second server on the same labels file exits 1, saying why", s2.url is None and s2.proc.returncode == 1
          and any("another pocketdec serve --teach is writing these labels" in x for x in s2.lines), s2.lines)

    # kill -9, then a torn line as a crash mid-write leaves it
    s.kill9()
    whole = read(labels)
    with open(labels, "ab") as f:
        f.write(b'{"id": 999, "text": "torn')
    s = Server(*teach)
    check("after kill -9 and a torn line the server starts, 4 labelled", s.url and any(
        "12 reviews, 4 labelled" in x for x in s.lines), s.lines)
    check("the torn line is cut, the whole lines kept byte for byte", read(labels) == whole)
    st, nxt = s.call("/v1/teach/next")
    check("the restart asks the next review no line holds (the skipped one: skips last one session)",
          nxt["review"]["id"] == skipped and nxt["review"]["id"] not in asked, (nxt["review"]["id"], skipped))
    p = nxt["progress"]
    check("progress: labelled, left, and the model's F1 on the labels by the Tianchi metric",
          p["labelled"] == 4 and p["left"] == 8 and p["model_on_labels"]["reviews"] == 4 and
          0 <= p["model_on_labels"]["f1"] <= 1, p)
    # the F1 by hand: gold = the answers, predictions = the model's records of each line
    gold, pred = set(), set()
    for k, ln in enumerate(lines(labels)):
        quad = lambda x: (k, (x["aspect"] or {}).get("text", "_"), (x["opinion"] or {}).get("text", "_"),
                          x["category"], x["polarity"])
        gold |= {quad(x) for x in ln["records"]}
        pred |= {quad(x) for x in ln["model"]}
    n_pred = sum(len(ln["model"]) for ln in lines(labels))
    n_gold = sum(len(ln["records"]) for ln in lines(labels))
    check("the F1's counts are the labels' own (matched, predicted, gold)",
          p["model_on_labels"]["matched"] == len(gold & pred) and p["model_on_labels"]["predicted"] == n_pred and
          p["model_on_labels"]["gold"] == n_gold, (p["model_on_labels"], len(gold & pred), n_pred, n_gold))

    # undo after the restart takes back the file's last line
    st, ans = s.call("/v1/teach/undo", {})
    st2, nxt = s.call("/v1/teach/next")
    check("undo after a restart: the last line goes, its review is asked again with the answer given",
          st == 200 and read(labels) == b"".join(x + b"\n" for x in whole.splitlines()[:3]) and
          nxt["review"]["id"] == r["id"] and nxt["review"]["previous"] == [good], (st, ans, nxt.get("review")))
    s.stop()

    # --api-key: nothing shown, nothing taken without it
    s = Server(*teach, "--api-key", "sesame")
    before = read(labels)
    st1, _ = s.call("/v1/teach/next")
    st2, _ = s.call("/v1/teach/answer", {"id": r["id"], "records": []})
    st3, _ = s.call("/v1/teach/progress")
    st4, _ = s.call("/v1/teach/undo", {})
    check("--api-key: next, answer, progress and undo without the key are 401",
          (st1, st2, st3, st4) == (401, 401, 401, 401), (st1, st2, st3, st4))
    check("--api-key: nothing on disk changed", read(labels) == before)
    st, nxt = s.call("/v1/teach/next", key="sesame")
    st2, _ = s.call("/v1/teach/answer", {"id": nxt["review"]["id"], "records": []}, key="sesame")
    check("--api-key: with the key a review is shown and an answer taken", st == 200 and st2 == 200 and
          len(lines(labels)) == 4, (st, st2))
    with urllib.request.urlopen(s.url + "/teach", timeout=60) as page:
        check("the page itself is served without the key (it asks for it)", page.status == 200)
    s.stop()

    # the labels file as train/dataset.py reads it: every line a labelled review, no problem reported
    p = subprocess.run([sys.executable, "-c", (
        "import sys; sys.path.insert(0, sys.argv[1]); import dataset as d; r = d.Report(strict=True); "
        "rv = d.read_jsonl(sys.argv[2], d.Schema(sys.argv[3]), r); print(len(rv), sum(x.labelled() for x in rv))"),
        os.path.join(ROOT, "train"), labels, SCHEMA], capture_output=True, text=True, timeout=120)
    if "No module named 'yaml'" in p.stderr:
        print("skip  train/dataset.py needs PyYAML")
    else:
        check("train/dataset.py reads the labels file strictly: 4 reviews, 4 labelled", p.stdout.split() == ["4", "4"],
              p.stdout + p.stderr)

    # another schema: its fields and values, its labels refused elsewhere
    labels2 = os.path.join(tmp, "coarse.jsonl")
    s = Server("--teach", reviews, "--labels", labels2, "--order", "random", model=GEN, schema=COARSE)
    st, nxt = s.call("/v1/teach/next")
    fields = {f["name"]: f for f in nxt["progress"]["fields"]}
    check("another schema: its own fields and values", st == 200 and list(fields) == [
        "target", "expression", "topic", "sentiment"] and fields["sentiment"]["values"] == ["好评", "中评", "差评"], nxt)
    rid, text = nxt["review"]["id"], nxt["review"]["text"]
    rec = {"target": None, "expression": span(text, 0, 2), "topic": "商品", "sentiment": "差评"}
    st1, ans1 = s.call("/v1/teach/answer", {"id": rid, "records": [dict(rec, sentiment="负面")]})
    st2, _ = s.call("/v1/teach/answer", {"id": rid, "records": [rec]})
    check("another schema: its values taken, another schema's refused", st1 == 400 and st2 == 200 and
          lines(labels2)[0]["records"] == [rec], (st1, ans1, st2))
    s.stop()

    print("%d passed, %d failed" % (RESULTS.count(True), RESULTS.count(False)))
    return 0 if all(RESULTS) else 1


if __name__ == "__main__":
    sys.exit(main())

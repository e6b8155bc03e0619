#!/usr/bin/python3
"""The "why" of a tagger pass (pd_tag_explain, drawn by `pocketdec tag --html FILE`) on the bundled
default: the document carried by the page against `pocketdec tag`'s JSON of the same text (spans'
probabilities, link scores and label logits softmaxed: within 1e-6), its probabilities normalised as
docs/extraction-by-decisions.md says, its offsets indexing the text's characters and bytes; the page
well-formed, self-contained (no http in a src or href) and its JSON read back out of it; a text that is
not UTF-8 and an unwritable --html path refused with a message and exit 1.

Usage: test_why.py POCKETDEC MODEL_DIR SCHEMA
"""
import html.parser
import json
import math
import os
import re
import subprocess
import sys
import tempfile

PD, MODEL, SCHEMA = sys.argv[1:4]
TOL = 1e-6       # the same doubles printed with 9 significant digits by both: agreement to rounding
NORM_TOL = 1e-5  # a character's marginals are floats: O + each field's B + I sum to 1 within this
RESULTS = []

LONG = ("这款面霜质地很清爽，涂上去一下就吸收了，不油腻也不黏，保湿效果特别好，用了一个星期皮肤明显水润了很多。"
        "包装也很精致，瓶子是玻璃的很有质感，就是有点重不方便带出门。味道淡淡的花香，不刺鼻。"
        "物流很快，第二天就到了，快递小哥态度也很好。价格有点贵，但是活动的时候买还是挺划算的，"
        "客服回复很及时，会推荐适合自己肤质的产品。总的来说很满意，会回购的，推荐给姐妹们！") * 2
TEXTS = {
    "short": "找客服也没人答复，服务太差了！",
    "empty": "",
    "emoji": "很好用😀👍🏻，物流超快🚚，包装完好",
    "script": "</script><b>味道</b>好闻<!-- 很香 -->",
    "long": LONG,
}


def check(name, cond, detail=""):
    RESULTS.append(bool(cond))
    print(("ok    " if cond else "FAIL  ") + name + ("" if cond else "  " + str(detail)[:400]))


def run(*args):
    p = subprocess.run([PD, *args], capture_output=True, timeout=300)
    return p.returncode, p.stdout, p.stderr.decode(errors="replace")


def softmax(v):
    m = max(v)
    e = [math.exp(x - m) for x in v]
    return [x / sum(e) for x in e]


class Page(html.parser.HTMLParser):
    """Tags opened and closed in order (void elements aside), src/href values, the data script."""
    VOID = {"meta", "br", "img", "link", "input", "hr"}

    def __init__(self):
        super().__init__()
        self.stack, self.errors, self.urls, self.data, self._in_data = [], [], [], None, False

    def handle_starttag(self, tag, attrs):
        for k, v in attrs:
            if k in ("src", "href"):
                self.urls.append(v or "")
        if tag not in self.VOID:
            self.stack.append(tag)
        self._in_data = tag == "script" and ("id", "why-data") in attrs

    def handle_endtag(self, tag):
        if not self.stack or self.stack.pop() != tag:
            self.errors.append(tag)
        self._in_data = False

    def handle_data(self, data):
        if self._in_data:
            self.data = (self.data or "") + data


def page_of(name, text, out):
    rc, stdout, err = run("tag", "--model", MODEL, "--schema", SCHEMA, "--text", text, "--html", out)
    check(f"{name}: tag --html exits 0", rc == 0, err)
    page = open(out, encoding="utf-8").read()
    p = Page()
    p.feed(page)
    p.close()
    check(f"{name}: the page is well-formed", not p.errors and not p.stack, (p.errors, p.stack))
    check(f"{name}: no outside asset", not any("http" in u for u in p.urls) and "<link" not in page, p.urls)
    check(f"{name}: one data script, no raw '<' in it", p.data is not None and "<" not in p.data)
    m = re.search(r'<script type="application/json" id="why-data">(.*?)</script>', page, re.S)
    doc = json.loads(m.group(1))
    check(f"{name}: the JSON reads back out of the page", doc["text"] == text and m.group(1) == p.data)
    return doc


def check_offsets(name, text, d):
    chars, raw = d["characters"], text.encode()
    check(f"{name}: one entry a character", [c["text"] for c in chars] == list(text))
    check(f"{name}: character bytes index the text",
          all(raw[c["bytes"][0]:c["bytes"][1]].decode() == c["text"] for c in chars))
    for s in d["spans"]:
        a, b = s["chars"]
        check(f"{name}: span {s['text']} offsets", text[a:b] == s["text"] and
              raw[s["bytes"][0]:s["bytes"][1]].decode() == s["text"], s)
        inside = [chars[c]["inside"][s["field"]] for c in range(a, b)]
        check(f"{name}: span {s['text']}: P(exactly it) <= each character's P(inside)",
              all(s["probability"] <= p + NORM_TOL for p in inside), (s["probability"], inside))
        check(f"{name}: span {s['text']}: its characters' tags",
              chars[a]["tag"] == "B-" + s["field"] and all(chars[c]["tag"] == "I-" + s["field"] for c in range(a + 1, b)))
    check(f"{name}: each character's marginals sum to 1",
          all(abs(c["outside"] + sum(c["inside"].values()) - 1) < NORM_TOL for c in chars))


def check_why(name, w, score):
    ok = abs(w["score"] - score) <= TOL * max(1, abs(score)) and abs(w["trunk"] + w["sparse"] - w["score"]) <= TOL * 10
    weights = [abs(f["weight"]) for f in w["features"]]
    ok = ok and 0 <= w["trunk_share"] <= 1 and weights == sorted(weights, reverse=True)
    ok = ok and len(w["features"]) == min(5, w["n_features"]) and w["sparse_on"]
    check(f"{name}: score = trunk + sparse, top features heaviest first", ok, (w, score))


def compare(name, d, t):
    """d: the page's document; t: `pocketdec tag`'s JSON of the same text."""
    check(f"{name}: spans and their probabilities",
          [(s["field"], s["text"], s["tokens"]) for s in d["spans"]] ==
          [(s["field"], s["text"], [s["first"], s["last"]]) for s in t["spans"]] and
          all(abs(a["probability"] - b["probability"]) <= TOL for a, b in zip(d["spans"], t["spans"])))
    check(f"{name}: the same links", len(d["links"]) == len(t["links"]))
    for dl, tl in zip(d["links"], t["links"]):
        p = softmax(tl["scores"])
        best = max(range(len(p)), key=lambda i: (p[i], -i))
        rest = sorted((i for i in range(len(p)) if i != best), key=lambda i: (-tl["scores"][i], i))
        ok = dl["from"] == tl["from"] and dl["choice"] == tl["choice"] and abs(dl["probability"] - p[best]) <= TOL
        ok = ok and all(abs(c["probability"] - q) <= TOL for c, q in zip(dl["candidates"], p))
        ok = ok and abs(sum(c["probability"] for c in dl["candidates"]) - 1) <= 1e-6
        ok = ok and (dl["runner_up"] is None if not rest else abs(dl["runner_up"]["probability"] - p[rest[0]]) <= TOL)
        check(f"{name}: link from span {tl['from']}: softmax of its scores, choice and runner-up", ok, (dl, tl))
        check_why(f"{name}: link from span {tl['from']}", dl["why"], tl["scores"][best])
    check(f"{name}: one record a candidate, the same fates",
          [r["fate"] for r in d["records"]] == [c["fate"] for c in t["candidates"]])
    written = [r["values"] for r in d["records"] if r["fate"] == "written"]
    check(f"{name}: the written records are tag's records", written == t["records"], (written, t["records"]))
    for k, (r, lab) in enumerate(zip(d["records"], t["labels"])):
        p = softmax(lab["logits"])
        want = sorted(p, reverse=True)[:3]
        ok = all(abs(a["probability"] - b) <= TOL for a, b in zip(r["top"], want)) and len(r["top"]) == 3
        ok = ok and abs(r["no_record"] - p[-1]) <= TOL
        for f, vals in r["labels"].items():
            ok = ok and all(vals[i]["probability"] >= vals[i + 1]["probability"] for i in range(len(vals) - 1))
        ok = ok and abs(sum(v["probability"] for v in r["labels"]["polarity"]) + r["no_record"] - 1) <= 1e-6
        check(f"{name}: record {k}: top 3 labels, softmax of its logits", ok, (r["top"], want))
        check_why(f"{name}: record {k}", r["why"], max(lab["logits"]))
    for s in d["spans"]:
        w = s["why"]
        check(f"{name}: span {s['text']}: score = trunk + sparse",
              abs(w["trunk"] + w["sparse"] - w["score"]) <= 1e-5 and 0 <= w["trunk_share"] <= 1, w)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in TEXTS.items():
            d = page_of(name, text, os.path.join(tmp, name + ".html"))
            rc, out, err = run("tag", "--model", MODEL, "--schema", SCHEMA, "--text", text)
            check(f"{name}: tag exits 0", rc == 0, err)
            t = json.loads(out)
            check_offsets(name, text, d)
            compare(name, d, t)
            check(f"{name}: forward passes", d["forward_passes"] == t["forward_passes"] == (0 if not text else 1))
            if not text:
                check(f"{name}: no character, span, link or record",
                      not any(d[k] for k in ("characters", "spans", "links", "records")))

        rc, _, err = run("tag", "--model", MODEL, "--schema", SCHEMA, "--text", b"\xe5\xa5\xbd\xff\xfe",
                         "--html", os.path.join(tmp, "bad.html"))
        check("a text that is not UTF-8: exit 1, said so", rc == 1 and "not UTF-8" in err, (rc, err))
        check("a text that is not UTF-8: no page", not os.path.exists(os.path.join(tmp, "bad.html")))
        rc, _, err = run("tag", "--model", MODEL, "--schema", SCHEMA, "--text", "很好",
                         "--html", os.path.join(tmp, "no", "such", "dir.html"))
        check("an unwritable --html path: exit 1, named", rc == 1 and "cannot write" in err and "dir.html" in err, (rc, err))
    print(f"{sum(RESULTS)}/{len(RESULTS)} checks passed")
    sys.exit(0 if all(RESULTS) else 1)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Tests of the charts of tianchi-eval --html: every <svg> is well-formed XML,
the figures its marks carry (their <title>s, value labels, bar lengths) are the
ones --json gives for the same input (the plain page's Confidence section: those
of --sweep --json; a CSV submission's: a line saying there is no sweep), the
page needs nothing from outside, a
degenerate input still gives a valid page, and the text printed is byte for
byte what it was before the charts (data/text_before_plots/, printed by the
command before them on test_cli.py's hand-made inputs).

usage: test_html_plots.py TIANCHI_EVAL_EXE DATA_DIR
"""
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_cli as cli  # noqa: E402  (reads the same argv: EXE DATA)

EXE, DATA = os.path.abspath(sys.argv[1]), sys.argv[2]
SVG = "{http://www.w3.org/2000/svg}"
GOLDEN = os.path.join(DATA, "text_before_plots")
BAR_LABEL_W, BAR_W = 150, 440  # svg.c's geometry


def files():
    """The hand-made inputs under fixed names in the temporary folder, where
    the commands run, so that the text names them as the goldens do."""
    gold, reviews, a, b = cli.hand_files()
    cli.write("run.jsonl", cli.jsonl(cli.SWEEP_LINES))
    cli.write("none.csv", "1,_,_,_,_\n2,_,_,_,_\n3,_,_,_,_\n")
    cli.write("empty.jsonl", "".join('{"id": "%d", "records": []}\n' % i for i in (1, 2, 3)))
    # An older output: records without "confidence" (the sweep refuses it, naming line 2).
    old = [dict(line, records=[{k: v for k, v in r.items() if k != "confidence"} for r in line["records"]])
           for line in cli.SWEEP_LINES]
    cli.write("old.jsonl", cli.jsonl(old))
    return [os.path.basename(p) for p in (gold, reviews, a, b)]


def run(*args):
    p = subprocess.run([EXE, *args], capture_output=True, timeout=120, cwd=cli.TMP)
    assert p.returncode == 0, (args, p.stderr.decode())
    return p.stdout


def page(*args):
    """The text printed with --html, and the charts of the page (parsed)."""
    path = os.path.join(cli.TMP, "page.html")
    out = run(*args, "--html", path)
    html = page.html = open(path, encoding="utf-8").read()
    assert html.startswith("<!DOCTYPE html>") and html.endswith("</html>\n")
    # Self-contained: no script, no link out; the only URL is the SVG namespace.
    assert "<script" not in html and "src=" not in html and "href=" not in html
    assert set(re.findall(r"https?://[^\"' ]*", html)) == {"http://www.w3.org/2000/svg"}
    svgs = re.findall(r"<svg.*?</svg>", html, re.S)
    assert len(svgs) == html.count("<svg") and svgs, "an <svg> not closed"
    charts = {}
    for s in svgs:
        root = ET.fromstring(s)  # raises on anything not well-formed
        title = root.find(SVG + "title")
        assert title is not None and title.text, s[:200]  # every chart has its accessible name
        assert not re.search(r"\b(nan|inf)\b", s, re.I), title.text
        charts.setdefault(title.text, []).append(root)
    return out, charts


def tips(root, tag):
    """The <title> text of each mark of a kind, in order."""
    return [m.find(SVG + "title").text for m in root.iter(SVG + tag) if m.find(SVG + "title") is not None]


def f4(v):
    return "%.4f" % v


def test_text_unchanged():
    gold, reviews, a, b = files()
    for name, args in [("plain", [gold, b, "--reviews", reviews, "--errors"]),
                       ("compare", [gold, a, "--compare", b, "--reviews", reviews]),
                       ("sweep", [gold, "run.jsonl", "--sweep"]),
                       ("none", [gold, "none.csv"])]:
        want = open(os.path.join(GOLDEN, name + ".txt"), "rb").read()
        assert run(*args) == want, name
        assert page(*args)[0] == want, name  # and the same with --html
    # JSONL predictions, now with the sweep on the page: the text and JSON as without it.
    for args in ([gold, "run.jsonl"], [gold, "run.jsonl", "--json", "--errors"]):
        assert page(*args)[0] == run(*args), args


def check_label_bars(charts, js):
    for key, title in (("categories", "F1 per category"), ("polarities", "F1 per polarity")):
        (root,) = charts[title]
        groups = list(root.iter(SVG + "g"))
        assert len(groups) == len(js[key]), title
        for g, l in zip(groups, js[key]):
            want = "%s: S %d, P %d, G %d, precision %s, recall %s, F1 %s" % (
                l["label"], l["matched"], l["predicted"], l["gold"], f4(l["precision"]),
                f4(l["recall"]), f4(l["f1"]))
            assert g.find(SVG + "title").text == want, (g.find(SVG + "title").text, want)
            texts = [t.text for t in g.iter(SVG + "text")]
            rects = list(g.iter(SVG + "rect"))
            if l["gold"] == 0 and l["predicted"] == 0:
                assert texts == [l["label"], "no data"] and len(rects) == 1, texts
            else:
                assert texts == [l["label"], "%.3f (G %d, P %d)" % (l["f1"], l["gold"], l["predicted"])]
                assert abs(float(rects[1].get("width")) - l["f1"] * BAR_W) <= 0.05, (rects[1].get("width"), l)


def test_label_bars_train_data():
    """Per-label bars of a perturbed submission of the training data."""
    rng = cli.random.Random(7)
    rows = [q[:3] + (rng.choice(cli.CATEGORIES),) + q[4:] if rng.random() < 0.2 else q
            for q in cli.GOLD if rng.random() > 0.15]
    path = cli.write("train_pred.csv", cli.submission(rows))
    labels = os.path.abspath(cli.LABELS)
    js = json.loads(run(labels, path, "--json"))
    out, charts = page(labels, path, "--json")
    assert json.loads(out) == js
    check_label_bars(charts, js)


LINES = "Precision, recall and F1 of the predictions kept by confidence threshold"
RELIABILITY = "Reliability: fraction of the predictions correct by confidence"
NO_CONFIDENCES = ('<h2>Confidence</h2>\n<p class="note">no record confidences in PRED (a CSV submission): '
                  'no sweep</p>\n<h2>Categories</h2>')


def check_sweep_charts(charts, js):
    """The lines and the reliability diagram carry the figures of --sweep --json."""
    (lines,) = charts[LINES]
    want = ["%s: confidence threshold %.2f: %s" % (name, t["threshold"], f4(t["score"][key]))
            for name, key in (("precision", "precision"), ("recall", "recall"), ("F1", "f1"))
            for t in js["thresholds"]]
    assert tips(lines, "circle") == want, tips(lines, "circle")
    (rel,) = charts[RELIABILITY]
    groups = list(rel.iter(SVG + "g"))
    full = [b for b in js["reliability"] if b["count"]]  # empty bins draw nothing
    assert len(groups) == len(full) == 5
    for g, b in zip(groups, full):
        bin_name = "[%.1f, %.1f%s" % (b["low"], b["high"], "]" if b["high"] == 1.0 else ")")
        assert g.find(SVG + "title").text == "%s: %d predictions, %d correct, fraction correct %s" % (
            bin_name, b["count"], b["correct"], f4(b["fraction_correct"]))
        assert g.find(SVG + "text").text == str(b["count"])
        rect = g.find(SVG + "rect")
        assert abs(float(rect.get("height")) - 260 * b["fraction_correct"]) <= 0.05


def sweep_tables(html):
    """The rows of the tables under the sweep's charts: (threshold, kept, S, G, P, R, F1)
    and (bin, count, correct, fraction correct), as the page prints them."""
    start = html.index("<h3>Precision and recall by confidence threshold</h3>")
    html = html[start:html.index("<h2>", start)]
    cells = [re.findall(r"<td[^>]*>([^<]*)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>", html)]
    return [c for c in cells if len(c) == 7], [c for c in cells if len(c) == 4 and c[0].startswith("[")]


def want_tables(js):
    return ([["%.2f" % t["threshold"], str(t["kept"]), str(t["score"]["matched"]), str(t["score"]["gold"]),
              f4(t["score"]["precision"]), f4(t["score"]["recall"]), f4(t["score"]["f1"])] for t in js["thresholds"]],
            [["[%.1f, %.1f%s" % (b["low"], b["high"], "]" if b["high"] == 1.0 else ")"), str(b["count"]),
              str(b["correct"]), f4(b["fraction_correct"])] for b in js["reliability"]])


def test_sweep_charts():
    gold, reviews, a, b = files()
    thresholds = ["--thresholds", "0,0.25,0.5,0.75,0.9"]
    js = json.loads(run(gold, "run.jsonl", "--sweep", "--json", *thresholds))
    out, charts = page(gold, "run.jsonl", "--sweep", *thresholds)
    assert out == run(gold, "run.jsonl", "--sweep", *thresholds)
    check_sweep_charts(charts, js)
    assert "<h2>Confidence</h2>" not in page.html  # the sweep page has its own
    # The page goes on with the plain report of all the predictions.
    plain = json.loads(run(gold, "run.jsonl", "--json"))
    check_label_bars(charts, plain)


def test_plain_page_confidence():
    """Plain --html of JSONL with confidences: the sweep's charts and tables at the
    default thresholds, the figures of --sweep --json, after the per-label charts."""
    gold, reviews, a, b = files()
    js = json.loads(run(gold, "run.jsonl", "--sweep", "--json"))
    assert len(js["thresholds"]) == 11
    for args in ([gold, "run.jsonl"], [gold, "run.jsonl", "--json"], [gold, "run.jsonl", "--reviews", reviews]):
        out, charts = page(*args)
        assert out == run(*args), args  # the text as without --html
        check_sweep_charts(charts, js)
        check_label_bars(charts, json.loads(run(*args[:2], "--json")))
        html = page.html
        order = [html.index(h) for h in ("<h2>F1 per polarity</h2>", "<h2>Confidence</h2>",
                                         "<h3>Precision and recall by confidence threshold</h3>",
                                         "<h3>Reliability</h3>", "<h2>Categories</h2>")]
        assert order == sorted(order), order
        assert sweep_tables(html) == want_tables(js)
    # A sweep of no records (lines without records): drawn empty, as --sweep draws it.
    out, charts = page(gold, "empty.jsonl")
    (rel,) = charts[RELIABILITY]
    assert "no data" in [t.text for t in rel.iter(SVG + "text")]
    assert sweep_tables(page.html) == want_tables(json.loads(run(gold, "empty.jsonl", "--sweep", "--json")))


def test_plain_page_without_confidences():
    """A CSV submission: one line says there is no sweep, and no sweep chart; records
    without confidences: the sweep's error on the page, exit status and text unchanged."""
    gold, reviews, a, b = files()
    for args in ([gold, b, "--reviews", reviews, "--errors"], [gold, "none.csv"], [gold, a, "--json"]):
        out, charts = page(*args)
        assert out == run(*args)
        assert NO_CONFIDENCES in page.html, args
        assert LINES not in charts and RELIABILITY not in charts
        assert "<h3>" not in page.html
    p = subprocess.run([EXE, gold, "old.jsonl", "--sweep"], capture_output=True, cwd=cli.TMP)
    assert p.returncode == 1
    message = p.stderr.decode().removeprefix("tianchi-eval: ").strip()
    assert message.startswith("old.jsonl:1: ") and "confidence" in message, message
    out, charts = page(gold, "old.jsonl")
    assert out == run(gold, "old.jsonl")
    want = "<h2>Confidence</h2>\n<p class=\"note\">no sweep: %s</p>\n<h2>Categories</h2>" % (
        message.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
        .replace("'", "&#39;"))
    assert want in page.html, page.html[page.html.index("<h2>Confidence"):][:400]
    assert LINES not in charts and RELIABILITY not in charts


def test_compare_charts():
    gold, reviews, a, b = files()
    args = [gold, a, "--compare", b, "--reviews", reviews, "--bootstrap", "300", "--seed", "5"]
    js = json.loads(run(*args, "--json"))
    out, charts = page(*args)
    assert out == run(*args)
    (runs,) = charts["F1 of runs A and B"]
    for g, r in zip(runs.iter(SVG + "g"), js["runs"]):
        o = r["overall"]
        assert g.find(SVG + "title").text == "%s: S %d, P %d, G %d, precision %s, recall %s, F1 %s" % (
            r["run"], o["matched"], o["predicted"], o["gold"], f4(o["precision"]), f4(o["recall"]), f4(o["f1"]))
        assert [t.text for t in g.iter(SVG + "text")] == [r["run"], f4(o["f1"])]
    (iv,) = charts["F1(B) - F1(A) with its 95% paired bootstrap interval"]
    d = js["difference"]
    shown = "%+.4f [%+.4f, %+.4f]" % (d["f1"], d["low"], d["high"])
    assert shown in [t.text for t in iv.iter(SVG + "text")], shown
    assert "F1(B) - F1(A) = " + shown.replace(" [", ", 95% interval [") in out.decode()
    (stack,) = charts["Unmatched quadruples of each run by error class"]
    got = {}
    for t in tips(stack, "rect"):
        row, part = t.split(": ")
        name, n = part.rsplit(" ", 1)
        got[(row, name)] = int(n)
    want = {}
    for r in js["runs"]:
        for c in r["error_classes"]:
            for side, key in (("misses", "gold"), ("false positives", "predicted")):
                if c[key]:
                    want[("%s %s" % (r["run"], side), c["class"])] = c[key]
    assert got == want, (got, want)
    totals = [int(t.text) for t in stack.iter(SVG + "text") if t.text.isdigit() and t.get("fill") is None]
    o = [r["overall"] for r in js["runs"]]
    assert totals == [o[0]["gold"] - o[0]["matched"], o[0]["predicted"] - o[0]["matched"],
                      o[1]["gold"] - o[1]["matched"], o[1]["predicted"] - o[1]["matched"]], totals


def test_degenerate_inputs():
    """No predictions, one class, a sweep of no records: valid pages, "no data" where nothing is drawn."""
    gold, reviews, a, b = files()
    out, charts = page(gold, "none.csv")
    assert out == open(os.path.join(GOLDEN, "none.txt"), "rb").read()
    check_label_bars(charts, json.loads(run(gold, "none.csv", "--json")))
    out, charts = page(gold, "none.csv", "--compare", "none.csv")
    (stack,) = charts["Unmatched quadruples of each run by error class"]
    assert tips(stack, "rect") == ["A misses: missed span 6", "B misses: missed span 6"], tips(stack, "rect")
    (iv,) = charts["F1(B) - F1(A) with its 95% paired bootstrap interval"]
    assert "+0.0000 [+0.0000, +0.0000]" in [t.text for t in iv.iter(SVG + "text")]
    out, charts = page(gold, "empty.jsonl", "--sweep")
    (rel,) = charts[RELIABILITY]
    assert list(rel.iter(SVG + "g")) == [] and "no data" in [t.text for t in rel.iter(SVG + "text")]
    # One class: a gold of one quadruple, predicted right.
    one = cli.write("one_gold.csv", cli.HAND_GOLD.split("\n")[0] + "\n1,包装,0,2,很好,2,4,包装,正面\n")
    cli.write("one_pred.csv", "1,包装,很好,包装,正面\n")
    args = [os.path.basename(one), "one_pred.csv"]
    out, charts = page(*args)
    js = json.loads(run(*args, "--json"))
    check_label_bars(charts, js)
    drawn = [l for l in js["categories"] if l["gold"] or l["predicted"]]
    assert [l["label"] for l in drawn] == ["包装"] and drawn[0]["f1"] == 1.0


if __name__ == "__main__":
    cli.main(globals())

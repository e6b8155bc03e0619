"""`pocketdec summarize --html` opened in headless Chromium: the page loads with no request to any host
and no script error; its charts are drawn; every number a reader sees in the polarity, cell and
complaints tables equals the `--json` of the same run; examples have their spans marked; a --by date
page draws its trend. Screenshots go to the test's log folder (POCKETDEC_BROWSER_LOGS).

Skipped, saying so, without Chromium or python3-websocket."""

import json
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from browser import Browser, shown_marks, skip_reason  # noqa: E402

BUILD = os.environ.get("POCKETDEC_BUILD_DIR", "build")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PD = os.path.join(BUILD, "cli", "pocketdec")
LOGS = os.environ.get("POCKETDEC_BROWSER_LOGS") or os.path.join(BUILD, "meson-logs", "browser")
MODEL = os.path.join(ROOT, "models", "tianchi")
REVIEWS = os.path.join(ROOT, "data", "tianchi", "dev_reviews.csv")

pytestmark = pytest.mark.skipif(skip_reason() is not None, reason=skip_reason() or "")


@pytest.fixture(scope="module")
def browser():
    with Browser(LOGS, width=1100, height=1400) as b:
        yield b


def summarize(tmp, records, *args):
    html, js = tmp / "summary.html", tmp / "summary.json"
    subprocess.run([PD, "summarize", "--records", str(records), "--model", MODEL, "--html", str(html), "--json",
                    str(js), *args], check=True, capture_output=True)
    return html, json.loads(js.read_text(encoding="utf-8"))


def rows(page, table):
    """Each row of a table as {data-key: text}."""
    return page.eval(f"[...document.querySelectorAll('table.{table} tr.entry')].map(r => Object.fromEntries("
                     "[...r.querySelectorAll('[data-key]')].map(c => [c.dataset.key, c.textContent])))")


def same(row, entry):
    for key in ("records", "reviews", "share", "estimate", "low", "high", "support"):
        v = entry[key]
        if v is None:
            assert row[key] == "-", (key, row, entry)
        else:
            assert abs(float(row[key]) - v) < 0.005, (key, row, entry)
    assert row["polarity"] == entry["polarity"] and row["rates"] == entry["rates"], (row, entry)
    assert row["category"] == entry.get("category", "(all)"), (row, entry)


def test_summary_page(browser, tmp_path):
    records = tmp_path / "dev.jsonl"
    subprocess.run([PD, "extract", "--model", MODEL, "--schema", os.path.join(ROOT, "schemas", "tianchi-makeup.yaml"),
                    "--input", REVIEWS, "--output", str(records), "--format", "jsonl"], check=True, capture_output=True)
    html, want = summarize(tmp_path, records, "--input", REVIEWS)
    page = browser.open("file://" + str(html))
    page.screenshot("summary.png")
    assert page.console == [], page.console
    assert page.hosts() == set(), page.requests
    drawn = page.eval("[...document.querySelectorAll('svg.chart')].map(s => {const r = s.getBoundingClientRect();"
                      " return [r.width, r.height, s.querySelectorAll('g.bar').length]})")
    assert drawn == [[drawn[0][0], drawn[0][1], min(40, len(want["cells"]))]] and drawn[0][0] > 100, drawn
    assert page.eval("document.querySelector('#totals [data-key=reviews]').textContent") == str(want["reviews"])
    pol = rows(page, "polarity")
    assert len(pol) == len(want["polarity"]) >= 2, pol
    for row, entry in zip(pol, want["polarity"].values()):
        same(row, entry)
    cells = rows(page, "cells")
    assert len(cells) == len(want["cells"]), cells
    for row, entry in zip(cells, want["cells"]):
        same(row, entry)
    # the complaints: every negative cell, by estimate
    neg = sorted((c for c in want["cells"] if c["polarity"] == "负面"), key=lambda c: -c["estimate"])
    comp = rows(page, "complaints")
    assert [float(r["estimate"]) for r in comp] == [c["estimate"] for c in neg] and neg, comp
    # examples with their spans marked: the marked text is the span's text (by start; one overlapping
    # the span before it is left unmarked)
    marks = page.eval("[...document.querySelectorAll('ul.examples mark')].map(m => m.textContent)")
    spans = []
    for ex in (ex for c in want["cells"] for ex in c["examples"]):
        end = 0
        for m in sorted(ex["marks"], key=lambda m: m["start"]):
            if m["start"] >= end:
                spans.append(ex["text"][m["start"]:m["end"]])
                end = m["end"]
    assert marks and sorted(marks) == sorted(spans), (marks[:10], spans[:10])
    # each cell's count of reviews links to all of them: clicked, exactly that cell's reviews show (the
    # JSON's "listed", every review of the cell), their spans marked; nothing else listed shows
    assert page.eval("[...document.querySelectorAll('section.listed')].filter(s => s.offsetParent).length") == 0
    for i, cell in enumerate(want["cells"]):
        assert len(cell["listed"]) == cell["reviews"], cell
        page.eval(f"document.querySelectorAll('table.cells tr.entry')[{i}].querySelector('a.all').click()")
        page.wait_for(f"location.hash == '#reviews-{i}'")
        shown = page.eval("[...document.querySelectorAll('section.listed')].filter(s => s.offsetParent).map(s => "
                          "[...s.querySelectorAll('li')].map(li => [li.querySelector('.id').textContent, "
                          "[...li.querySelectorAll('mark')].map(m => m.textContent)]))")
        want_marks = [[str(x["id"]), [text for _, text in shown_marks(x)]] for x in cell["listed"]]
        assert shown == [want_marks], (i, shown, want_marks[:5])
    page.screenshot("summary-listed.png")


def test_trend_page(browser, tmp_path):
    records = tmp_path / "dated.jsonl"
    lines = [{"id": i, "date": f"2026-0{1 + i % 3}-1{i % 9}", "records": [
        {"aspect": "_", "opinion": "差" if i % 4 == 0 else "好", "category": "整体",
         "polarity": "负面" if i % 4 == 0 else "正面"}]} for i in range(30)]
    records.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")
    html, want = summarize(tmp_path, records, "--by", "date:month")
    page = browser.open("file://" + str(html))
    page.screenshot("summary-trend.png")
    assert page.console == [] and page.hosts() == set(), (page.console, page.requests)
    lines_drawn = page.eval("[...document.querySelectorAll('svg.trend polyline')].map(p => p.points.length)")
    assert lines_drawn == [3, 3, 3], lines_drawn
    groups = page.eval("[...document.querySelectorAll('h3.group')].map(h => h.textContent)")
    assert groups == [f"{g['group']} ({g['reviews']} reviews)" for g in want["groups"]], groups
    assert page.eval("document.querySelectorAll('ul.changes li').length") == len(want["by"]["changes"]) > 0

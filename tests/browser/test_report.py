"""tianchi-eval's HTML report opened in headless Chromium, as a person opens it: the page loads with no
request to any host and no script error; its charts are drawn (each <svg> has a size on screen and its
bars or lines); the numbers a reader sees in the per-label chart and in the sweep table equal
`tianchi-eval --json`'s. Screenshots go to the test's log folder (POCKETDEC_BROWSER_LOGS).

Skipped, saying so, without Chromium or python3-websocket."""

import json
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from browser import Browser, skip_reason  # noqa: E402

BUILD = os.environ.get("POCKETDEC_BUILD_DIR", "build")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PD = os.path.join(BUILD, "cli", "pocketdec")
TE = os.path.join(BUILD, "tianchi-eval", "tianchi-eval")
LOGS = os.environ.get("POCKETDEC_BROWSER_LOGS") or os.path.join(BUILD, "meson-logs", "browser")
DEV = os.path.join(ROOT, "data", "tianchi")

pytestmark = pytest.mark.skipif(skip_reason() is not None, reason=skip_reason() or "")


@pytest.fixture(scope="module")
def browser():
    with Browser(LOGS, width=1100, height=1400) as b:
        yield b


@pytest.fixture(scope="module")
def dev_jsonl(tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "dev.jsonl"
    subprocess.run([PD, "extract", "--model", os.path.join(ROOT, "models", "tianchi"), "--schema",
                    os.path.join(ROOT, "schemas", "tianchi-makeup.yaml"), "--input", os.path.join(DEV, "dev_reviews.csv"),
                    "--output", str(out), "--format", "jsonl"], check=True, capture_output=True)
    return out


def report(*args):
    return json.loads(subprocess.run([TE, os.path.join(DEV, "dev_labels.csv"), *map(str, args), "--json"], check=True,
                                     capture_output=True, text=True).stdout)


def open_page(browser, path, shot):
    page = browser.open("file://" + str(path))
    page.screenshot(shot)
    assert page.console == [], page.console
    assert page.hosts() == set(), page.requests  # file: URLs only: nothing fetched from anywhere
    drawn = page.eval("[...document.querySelectorAll('svg')].map(s => {const r = s.getBoundingClientRect();"
                      " return [r.width, r.height, s.querySelectorAll('rect,path,polyline,circle,line').length]})")
    assert drawn and all(w > 100 and h > 50 and n > 0 for w, h, n in drawn), drawn
    return page


def test_report_page(browser, dev_jsonl, tmp_path):
    html = tmp_path / "report.html"
    subprocess.run([TE, os.path.join(DEV, "dev_labels.csv"), str(dev_jsonl), "--html", str(html)], check=True,
                   capture_output=True)
    page = open_page(browser, html, "report.png")
    text = page.eval("document.body.innerText")
    want = report(dev_jsonl)
    f1 = want["overall"]["f1"]
    assert f"{f1:.4f}" in text, f1
    # each polarity's F1 as the chart's tooltip says it (the <title> of its bar)
    titles = page.eval("[...document.querySelectorAll('svg title')].map(t => t.textContent)")
    labels = want["polarities"] + want["categories"]
    assert len(labels) >= 3
    for label in labels:
        assert any(label["label"] in t and f"{label['f1']:.4f}" in t for t in titles), (label, titles[:20])


def test_sweep_page(browser, dev_jsonl, tmp_path):
    html = tmp_path / "sweep.html"
    subprocess.run([TE, os.path.join(DEV, "dev_labels.csv"), str(dev_jsonl), "--sweep", "--html", str(html)],
                   check=True, capture_output=True)
    page = open_page(browser, html, "sweep.png")
    want = report(dev_jsonl, "--sweep")
    rows = page.eval("[...document.querySelectorAll('table')][0].innerText")
    assert len(want["thresholds"]) >= 5
    for t in want["thresholds"]:
        assert f"{t['score']['f1']:.4f}" in rows, (t, rows)

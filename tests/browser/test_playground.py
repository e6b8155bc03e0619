"""The playground `pocketdec serve` answers at / (web/), in headless Chromium against a running server on
the bundled default: a `?text=` link shows every aspect and opinion span the API returns for that text,
with its polarity, and the page asks nothing of any other host; a file of reviews round-trips to the
command's CSV and JSONL bytes; the confidence slider hides exactly the records below it; with --api-key the
page asks for the key and its API calls carry it; with a decision head the Score tab draws the API's
probabilities; the why view draws what /v1/why says. Screenshots go to the test's log folder.

Skipped, saying so, without Chromium or python3-websocket, or without libmicrohttpd."""

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from browser import Browser, shown_marks, skip_reason  # noqa: E402

BUILD = os.environ.get("POCKETDEC_BUILD_DIR", "build")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PD = os.path.join(BUILD, "cli", "pocketdec")
LOGS = os.environ.get("POCKETDEC_BROWSER_LOGS") or os.path.join(BUILD, "meson-logs", "browser")
TIANCHI = os.path.join(ROOT, "models", "tianchi")
TIANCHI_GEN = os.path.join(ROOT, "models", "tianchi-gen")
SCHEMA = os.path.join(ROOT, "schemas", "tianchi-makeup.yaml")
DEV = os.path.join(ROOT, "data", "tianchi", "dev_reviews.csv")
REVIEW = "质地很好，颜色也很正，就是有点贵，物流太慢了"


def serve_available():
    p = subprocess.run([PD, "serve", "--help"], capture_output=True, text=True)
    return "libmicrohttpd" not in (p.stdout + p.stderr) or "not built" not in (p.stdout + p.stderr)


pytestmark = pytest.mark.skipif(skip_reason() is not None, reason=skip_reason() or "")


class Server:
    def __init__(self, *args):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.proc = subprocess.Popen([PD, "serve", "--port", str(self.port), "--schema", SCHEMA, *args],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        line = self.proc.stderr.readline()
        if "listening on" not in line:
            self.proc.kill()
            pytest.skip(f"pocketdec serve did not start: {line.strip()}")
        self.url = f"http://127.0.0.1:{self.port}"

    def api(self, path, body=None, key=None):
        req = urllib.request.Request(self.url + path, data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": f"Bearer {key}"} if key else {})
        with urllib.request.urlopen(req, timeout=60) as r:
            return json.load(r)

    def close(self):
        self.proc.terminate()
        self.proc.wait(30)


@pytest.fixture(scope="module")
def browser():
    with Browser(LOGS, width=1100, height=900) as b:
        yield b


@pytest.fixture(scope="module")
def server():
    s = Server("--model", TIANCHI)
    yield s
    s.close()


def marked(page):
    """{(record index, field): (start, end)} of the spans the page marks, from data-marks and data-at."""
    pieces = page.eval("[...document.querySelectorAll('.review .text [data-marks]')]"
                       ".map(e => [e.dataset.marks, +e.dataset.at, Array.from(e.textContent).length, e.className])")
    spans, classes = {}, {}
    for marks, at, n, cls in pieces:
        for m in marks.split():
            k, field = m.split(":")
            s, e = spans.get((int(k), field), (at, at))
            spans[(int(k), field)] = (min(s, at), max(e, at + n))
            classes[(int(k), field)] = cls
    return spans, classes


def test_a_text_link(browser, server):
    """?text= fills the box and runs: every span the API returns is marked, with its polarity's colour."""
    want = server.api("/v1/extract", {"text": REVIEW})["records"]
    assert any(r["polarity"] == "负面" for r in want) and len(want) >= 3, want
    page = browser.open(server.url + "/?text=" + urllib.parse.quote(REVIEW))
    page.wait_for("document.body.dataset.ready")
    page.screenshot("playground.png")
    assert page.console == [], page.console
    assert page.hosts() == {"127.0.0.1"}, page.requests  # nothing from any other host
    spans, classes = marked(page)
    expected = {(k, f): tuple(se) for k, r in enumerate(want) for f, se in r["spans"].items()}
    assert spans == expected
    colour = {"正面": "pol-pos", "中性": "pol-neu", "负面": "pol-neg"}
    for (k, f), cls in classes.items():
        assert f in cls.split() and colour[want[k]["polarity"]] in cls.split(), (k, f, cls)
    rows = page.eval("[...document.querySelectorAll('tr.record')].map(r => [...r.cells].map(c => c.textContent))")
    assert [r[:4] for r in rows] == [[x["aspect"], x["opinion"], x["category"], x["polarity"]] for x in want]
    assert [float(r[4]) for r in rows] == [round(x["confidence"], 4) for x in want]
    csp = urllib.request.urlopen(server.url + "/").headers["Content-Security-Policy"]
    assert "default-src 'none'" in csp and "connect-src 'self'" in csp, csp


def test_the_confidence_slider(browser, server):
    want = server.api("/v1/extract", {"text": REVIEW})["records"]
    page = browser.open(server.url + "/#text=" + urllib.parse.quote(REVIEW))
    page.wait_for("document.body.dataset.ready")
    cut = sorted(r["confidence"] for r in want)[len(want) // 2]
    page.eval(f"(s => {{ s.value = {cut}; s.dispatchEvent(new Event('input')); }})"
              "(document.getElementById('min-confidence'))")
    page.screenshot("playground-slider.png")
    kept = [r for r in want if r["confidence"] >= float(page.eval("document.getElementById('min-confidence').value"))]
    assert 0 < len(kept) < len(want)
    assert page.eval("document.querySelectorAll('tr.record').length") == len(kept)
    spans, _ = marked(page)
    assert len({k for k, _ in spans}) == len(kept)


def test_a_file_round_trip(browser, server, tmp_path):
    """A CSV of 40 dev reviews through the page: its downloads are the command's bytes."""
    src = tmp_path / "reviews.csv"
    with open(DEV, encoding="utf-8") as f:
        src.write_text("".join(line for _, line in zip(range(41), f)), encoding="utf-8")
    page = browser.open(server.url + "/")
    page.wait_for("document.body.dataset.ready")
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    page.call("Browser.setDownloadBehavior", behavior="allow", downloadPath=str(downloads))
    doc = page.call("DOM.getDocument")
    node = page.call("DOM.querySelector", nodeId=doc["root"]["nodeId"], selector="#file")
    page.call("DOM.setFileInputFiles", nodeId=node["nodeId"], files=[str(src)])
    page.wait_for("!document.getElementById('downloads').hidden", timeout=120)
    page.screenshot("playground-file.png")
    assert page.eval("document.querySelectorAll('.review').length") == 40
    for button, name, fmt in (("download-csv", "Result.csv", "tianchi"), ("download-jsonl", "records.jsonl", "jsonl")):
        page.eval(f"document.getElementById('{button}').click()")
        end = time.time() + 30
        while not (downloads / name).exists() and time.time() < end:
            page.pump(0.1)
        out = tmp_path / ("cli." + fmt)
        subprocess.run([PD, "extract", "--model", TIANCHI, "--schema", SCHEMA, "--input", str(src), "--output",
                        str(out), "--format", fmt], check=True, capture_output=True)
        assert (downloads / name).read_bytes() == out.read_bytes(), fmt


def upload(page, path, downloads=None):
    """path through the page's file picker (downloads, when given, allowed into that folder)."""
    if downloads:
        downloads.mkdir()
        page.call("Browser.setDownloadBehavior", behavior="allow", downloadPath=str(downloads))
    doc = page.call("DOM.getDocument")
    node = page.call("DOM.querySelector", nodeId=doc["root"]["nodeId"], selector="#file")
    page.call("DOM.setFileInputFiles", nodeId=node["nodeId"], files=[str(path)])


def downloaded(page, downloads, button, name):
    page.eval(f"document.getElementById('{button}').click()")
    end = time.time() + 30
    while not (downloads / name).exists() and time.time() < end:
        page.pump(0.1)
    return (downloads / name).read_bytes()


def test_a_shop_export_and_a_gb18030_file(browser, server, tmp_path):
    """The page's file read by the server's reader of reviews (POST /v1/reviews/read), the command's: a
    shop's export by its id column, and a GB18030 file, refused naming --encoding until the encoding is
    given; the downloads are the command's bytes for the same options, the export's other columns in its
    JSONL lines in the file's order (a column named like a number, "2024", after "sku")."""
    import csv
    with open(DEV, encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))[1:9]
    shop, gb = tmp_path / "shop.csv", tmp_path / "gb.csv"
    with open(shop, "w", encoding="utf-8", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows(
            [("review_id", "rating", "content", "date", "sku", "2024"),
             *[(f"r{i}", "5", t, "2026-01-03", f"A{k}", str(k)) for k, (i, t) in enumerate(rows)]])
    with open(gb, "w", encoding="gb18030", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows([("id", "Reviews"), *rows])
    gb_again = tmp_path / "gb-again.csv"
    gb_again.write_bytes(gb.read_bytes())

    def command(src, fmt, *opts):
        out = tmp_path / ("cli-" + src.stem + "." + fmt)
        subprocess.run([PD, "extract", "--model", TIANCHI, "--schema", SCHEMA, "--input", str(src), "--output",
                        str(out), "--format", fmt, *opts], check=True, capture_output=True)
        return out.read_bytes()

    page = browser.open(server.url + "/")
    page.wait_for("document.body.dataset.ready")
    page.eval("document.getElementById('id-column').value = 'review_id'")
    upload(page, shop, tmp_path / "shop-downloads")
    page.wait_for("!document.getElementById('downloads').hidden", timeout=120)
    assert page.eval("[...document.querySelectorAll('#results .review')].length") == len(rows)
    assert downloaded(page, tmp_path / "shop-downloads", "download-csv", "Result.csv") == \
        command(shop, "tianchi", "--id-column", "review_id")
    jsonl = downloaded(page, tmp_path / "shop-downloads", "download-jsonl", "records.jsonl")
    assert jsonl == command(shop, "jsonl", "--id-column", "review_id") and \
        '"date":"2026-01-03","sku":"A0","2024":"0"}'.encode() in jsonl, jsonl[:300]
    page.eval("document.getElementById('id-column').value = ''")
    page.eval("document.getElementById('downloads').hidden = true")
    upload(page, gb)
    page.wait_for("document.getElementById('status').textContent.includes('--encoding gb18030')", timeout=60)
    assert "gb.csv: the file is not UTF-8" in page.eval("document.getElementById('status').textContent")
    page.eval("document.getElementById('encoding').value = 'gb18030'")
    upload(page, gb_again, tmp_path / "gb-downloads")
    page.wait_for("!document.getElementById('downloads').hidden", timeout=120)
    for button, name, fmt in (("download-csv", "Result.csv", "tianchi"), ("download-jsonl", "records.jsonl", "jsonl")):
        assert downloaded(page, tmp_path / "gb-downloads", button, name) == \
            command(gb_again, fmt, "--encoding", "gb18030"), fmt
    page.screenshot("playground-gb18030.png")


def test_a_file_opens_on_its_summary(browser, server, tmp_path):
    """A file's results open on the summary, the one `pocketdec summarize` writes for the same reviews (the
    server runs the summary module; the page draws it); a click on a cell shows exactly that cell's
    reviews, the cell's spans marked."""
    src = tmp_path / "reviews.csv"
    with open(DEV, encoding="utf-8") as f:
        src.write_text("".join(line for _, line in zip(range(61), f)), encoding="utf-8")
    out = tmp_path / "summary.json"
    subprocess.run([PD, "summarize", "--model", TIANCHI, "--schema", SCHEMA, "--input", str(src), "--list-reviews",
                    "-1", "--json", str(out)], check=True, capture_output=True)
    want = json.loads(out.read_text(encoding="utf-8"))
    page = browser.open(server.url + "/")
    page.wait_for("document.body.dataset.ready")
    doc = page.call("DOM.getDocument")
    node = page.call("DOM.querySelector", nodeId=doc["root"]["nodeId"], selector="#file")
    page.call("DOM.setFileInputFiles", nodeId=node["nodeId"], files=[str(src)])
    page.wait_for("!document.getElementById('summary').hidden", timeout=120)
    assert page.console == [] and page.hosts() == {"127.0.0.1"}, (page.console, page.requests)
    assert page.eval("document.getElementById('results').hidden") is True  # the summary first
    rows = {t: page.eval(f"[...document.querySelectorAll('table.{t} tr.entry')].map(r => Object.fromEntries("
                         "[...r.querySelectorAll('[data-key]')].map(c => [c.dataset.key, c.textContent])))")
            for t in ("polarity", "cells")}
    for table, entries in (("polarity", list(want["polarity"].values())), ("cells", want["cells"])):
        assert len(rows[table]) == len(entries) >= 2, (table, rows[table])
        for row, e in zip(rows[table], entries):
            assert row["category"] == e.get("category", "(all)") and row["polarity"] == e["polarity"], (row, e)
            for key in ("records", "reviews", "share", "estimate", "low", "high", "support"):
                assert (row[key] == "-") if e[key] is None else abs(float(row[key]) - e[key]) < 0.005, (key, row, e)
    for k, cell in enumerate(want["cells"]):
        page.eval(f"document.querySelector('table.cells button[data-cell=\"{k}\"]').click()")
        shown = page.eval("[...document.querySelectorAll('#cell-reviews .cell-review')].map(d => [d.dataset.id, "
                          "[...d.querySelectorAll('.span')].map(m => [m.dataset.field, m.textContent])])")
        expected = [[str(x["id"]), shown_marks(x)] for x in cell["listed"]]
        assert len(shown) == cell["reviews"] and shown == expected, (k, shown[:3], expected[:3])
    page.screenshot("playground-summary.png")
    page.eval("document.getElementById('view-reviews').click()")
    assert page.eval("document.querySelectorAll('#results .review').length") == 60


def test_the_key_prompt(browser, tmp_path):
    s = Server("--model", TIANCHI, "--api-key", "sesame-42")
    try:
        with urllib.request.urlopen(s.url + "/") as r:  # the page itself needs no key
            assert r.status == 200
        page = browser.open(s.url + "/?text=" + urllib.parse.quote(REVIEW))
        page.wait_for("!document.getElementById('key').hidden")
        page.screenshot("playground-key.png")
        page.eval("document.getElementById('key-input').value = 'sesame-42';"
                  "document.getElementById('key').requestSubmit()")
        page.wait_for("document.body.dataset.ready")
        assert page.eval("document.querySelectorAll('tr.record').length") == len(
            s.api("/v1/extract", {"text": REVIEW}, key="sesame-42")["records"])
        # the key is in no storage the page could leave behind
        assert page.eval("localStorage.length + sessionStorage.length + document.cookie.length") == 0
    finally:
        s.close()


def test_the_score_tab(browser):
    s = Server("--model", TIANCHI_GEN)
    try:
        body = {"text": "物流很快", "question": "属性：物流；观点：很快", "candidates": ["物流/正面", "物流/负面", "价格/正面"]}
        want = s.api("/v1/score", body)["candidates"]
        page = browser.open(s.url + "/")
        page.wait_for("document.body.dataset.ready")
        assert not page.eval("document.getElementById('tab-score').hidden")
        page.eval("document.getElementById('tab-score').click();"
                  f"document.getElementById('score-text').value = {json.dumps(body['text'])};"
                  f"document.getElementById('question').value = {json.dumps(body['question'])};"
                  f"document.getElementById('candidates').value = {json.dumps(chr(10).join(body['candidates']))};"
                  "document.getElementById('score-form').requestSubmit()")
        page.wait_for("document.querySelectorAll('.bar').length > 0")
        page.screenshot("playground-score.png")
        bars = page.eval("[...document.querySelectorAll('.bar')].map(b => [b.dataset.label, +b.dataset.prob])")
        assert [(b[0], round(b[1], 6)) for b in bars] == [(c["label"], round(c["prob"], 6)) for c in want]
    finally:
        s.close()


def test_the_why_view(browser, server, tmp_path):
    """The why view of a review: /v1/why is the document `pocketdec tag --html` draws (one library
    function), and the view shows each span with its probability as that document gives it."""
    want = server.api("/v1/why", {"text": REVIEW})
    page_file = tmp_path / "why.html"
    subprocess.run([PD, "tag", "--model", TIANCHI, "--schema", SCHEMA, "--text", REVIEW, "--html", str(page_file)],
                   check=True, capture_output=True)
    embedded = re.search(r'<script type="application/json" id="why-data">(.*?)</script>',
                         page_file.read_text(encoding="utf-8"), re.S).group(1)
    assert json.loads(embedded.replace("\\u003c", "<")) == want
    page = browser.open(server.url + "/?text=" + urllib.parse.quote(REVIEW))
    page.wait_for("document.body.dataset.ready")
    page.eval("document.querySelector('.why-button').click()")
    page.wait_for("document.querySelector('.why') && document.querySelector('.why').children.length > 0")
    page.screenshot("playground-why.png")
    assert page.console == [], page.console
    assert page.hosts() == {"127.0.0.1"}, page.requests
    text = page.eval("document.querySelector('.why').innerText")

    def pct(p):
        return f"{100 * p:.{0 if p >= 0.995 or p < 0.001 else 1}f}%"
    assert len(want["spans"]) >= 4
    for span in want["spans"]:
        assert span["text"] in text and pct(span["probability"]) in text, (span, text[:2000])

"""The annotation page of `pocketdec serve --teach` (/teach) in headless Chromium, by keyboard and mouse as a
person works it (the `teach-loop` test): the first review accepted with Enter; on the second, one model
record rejected (x), the next one's span fixed by selecting text with the mouse and its polarity changed
(its digit key), then one record added (n) whose spans are selected; the third answered "nothing to
label" (0), taken back (u) and answered again; the fourth skipped (s). Then kill -9 of the server, a
restart, a reload: the page resumes at the review the labels file does not hold yet (the skipped one,
skips lasting one session), and the labels file holds exactly the expected lines. The expected records
are computed here from what the page first showed (the model's records) and the edits made, and the order
from `pocketdec rank`. Waits on what the page and the server report, never on time.

Skipped, saying so, without Chromium or python3-websocket, or without libmicrohttpd."""

import json
import os
import signal
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from browser import Browser, skip_reason  # noqa: E402

BUILD = os.environ.get("POCKETDEC_BUILD_DIR", "build")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PD = os.path.join(BUILD, "cli", "pocketdec")
LOGS = os.environ.get("POCKETDEC_BROWSER_LOGS") or os.path.join(BUILD, "meson-logs", "browser")
MODEL = os.path.join(ROOT, "models", "tianchi")
SCHEMA = os.path.join(ROOT, "schemas", "tianchi-makeup.yaml")
DEV = os.path.join(ROOT, "data", "tianchi", "dev_reviews.csv")
WAIT = 600  # seconds a step may take before the test gives up: a hang, not a slow machine

pytestmark = pytest.mark.skipif(skip_reason() is not None, reason=skip_reason() or "")


def start(args):
    proc = subprocess.Popen([PD, "serve", "--port", "0", "--threads", "1", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    for line in proc.stderr:
        if "listening on" in line:
            return proc, line.split("listening on ")[1].split()[0]
        if "without libmicrohttpd" in line:
            proc.wait()
            pytest.skip("pocketdec was built without libmicrohttpd")
    proc.wait()
    pytest.fail("pocketdec serve did not start")


KEYS = {"Enter": ("Enter", 13), "x": ("KeyX", 88), "n": ("KeyN", 78), "0": ("Digit0", 48), "u": ("KeyU", 85),
        "s": ("KeyS", 83), "1": ("Digit1", 49), "2": ("Digit2", 50), "4": ("Digit4", 52)}


def press(page, key):
    code, vk = KEYS[key]
    for kind in ("keyDown", "keyUp"):
        page.call("Input.dispatchKeyEvent", type=kind, key=key, code=code, windowsVirtualKeyCode=vk)


def select(page, a, b):
    """Drag the mouse over characters [a, b) of the review (from the left edge of a to the right of b - 1)."""
    box = page.eval(f"(() => {{ const t = document.getElementById('text').children;"
                    f" const p = t[{a}].getBoundingClientRect(), q = t[{b - 1}].getBoundingClientRect();"
                    f" return [p.left + 1, (p.top + p.bottom) / 2, q.right - 1, (q.top + q.bottom) / 2]; }})()")
    page.call("Input.dispatchMouseEvent", type="mousePressed", x=box[0], y=box[1], button="left", clickCount=1)
    page.call("Input.dispatchMouseEvent", type="mouseMoved", x=box[2], y=box[3], button="left")
    page.call("Input.dispatchMouseEvent", type="mouseReleased", x=box[2], y=box[3], button="left", clickCount=1)


def shown(page):
    """The review the page shows and the records it holds for it."""
    return page.eval("document.body.dataset.review"), json.loads(page.eval("document.body.dataset.records"))


def answered(page, n):
    """Wait until the page has had n answers back and shows a review."""
    page.wait_for(f"+document.body.dataset.answers === {n} && document.body.dataset.ready === 'review'"
                  " && !document.body.dataset.busy", WAIT)


def span(text, a, b):
    return {"text": "".join(list(text)[a:b]), "start": a, "end": b}


def test_teach_loop(tmp_path):
    reviews = tmp_path / "reviews.csv"
    with open(DEV, encoding="utf-8") as f:
        reviews.write_text("".join(line for _, line in zip(range(16), f)), encoding="utf-8")
    texts = {ln.split(",", 1)[0]: ln.split(",", 1)[1] for ln in reviews.read_text(encoding="utf-8").splitlines()[1:]}
    labels = tmp_path / "labels.jsonl"
    args = ["--model", MODEL, "--schema", SCHEMA, "--teach", str(reviews), "--labels", str(labels)]
    rank = subprocess.run([PD, "rank", "--model", MODEL, "--schema", SCHEMA, "--input", str(reviews),
                           "--threads", "1"], capture_output=True, text=True, timeout=WAIT)
    order = [json.loads(x)["id"] for x in rank.stdout.splitlines()]
    assert rank.returncode == 0 and len(order) == 15, rank.stderr

    proc, url = start(args)
    with Browser(LOGS, width=1200, height=900) as b:
        page = b.open(url + "/teach")
        page.wait_for("document.body.dataset.ready === 'review'", WAIT)
        assert page.hosts() == {"127.0.0.1"}, page.requests
        expected = []

        # 1: accepted as shown, with Enter
        rid, recs = shown(page)
        assert rid == order[0]
        page.screenshot("teach.png")
        press(page, "Enter")
        answered(page, 1)
        expected.append((rid, recs))

        # 2: reject the first record, fix the next one's opinion by selection and change its polarity,
        #    then add one whose spans are selected
        rid, recs = shown(page)
        assert rid == order[1]
        text = texts[rid]
        n = len(text)
        want = [dict(r) for r in recs]
        if want:
            press(page, "x")
            want.pop(0)
        if want:  # the record now first: its opinion becomes the first two characters, its polarity the next
            press(page, "2")
            select(page, 0, 2)
            want[0]["opinion"] = span(text, 0, 2)
            press(page, "4")
            pols = ["正面", "中性", "负面"]
            want[0]["polarity"] = pols[(pols.index(want[0]["polarity"]) + 1) % 3]
            want = want[:1]  # the rest might overlap the spans chosen here: rejected
            while page.eval("document.querySelectorAll('tr.record').length") > 1:
                page.eval("document.querySelectorAll('tr.record')[1].click()")
                press(page, "x")
            page.eval("document.querySelectorAll('tr.record')[0].click()")
        press(page, "n")
        press(page, "1")
        select(page, n - 3, n - 1)
        press(page, "2")
        select(page, n - 1, n)
        want.append({"aspect": span(text, n - 3, n - 1), "opinion": span(text, n - 1, n), "category": "包装",
                     "polarity": "正面"})
        assert shown(page)[1] == want, (shown(page)[1], want)
        page.screenshot("teach-edited.png")
        press(page, "Enter")
        answered(page, 2)
        expected.append((rid, want))

        # 3: nothing to label, taken back (the page shows the answer again), answered again
        rid, _ = shown(page)
        assert rid == order[2]
        press(page, "0")
        answered(page, 3)
        press(page, "u")
        answered(page, 4)
        assert shown(page) == (rid, []) and "taken back" in page.eval("document.getElementById('review-note').textContent")
        press(page, "0")
        answered(page, 5)
        expected.append((rid, []))

        # 4: skipped; the page moves on
        skipped, _ = shown(page)
        assert skipped == order[3]
        press(page, "s")
        answered(page, 6)
        assert shown(page)[0] == order[4]
        assert page.console == [], page.console

        # kill -9, restart, reload: the page resumes at the review no line holds
        proc.send_signal(signal.SIGKILL)
        proc.wait(60)
        proc.stderr.close()
        proc, url2 = start(args)
        try:
            page.navigate(url2 + "/teach")
            page.wait_for("document.body.dataset.ready === 'review'", WAIT)
            assert shown(page)[0] == skipped
            assert page.eval("document.body.dataset.labelled") == "3"
            page.screenshot("teach-resumed.png")
        finally:
            proc.terminate()
            _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err[-2000:]  # under ASan: nothing leaked

    got = [json.loads(x) for x in labels.read_text(encoding="utf-8").splitlines()]
    assert [(str(x["id"]), x["records"]) for x in got] == expected
    assert [x["answer"] for x in got] == ["accepted" if expected[0][1] else "nothing", "corrected", "nothing"]
    assert all(x["text"] == texts[str(x["id"])] for x in got)

"""What a reload changed, on the annotation page (/teach) in headless Chromium (the `teach-changes` test):
two reviews answered through the API, the page open, then POST /v1/reload with another bundle
(models/tianchi-gen): the page notices the new generation by itself and shows the changes panel, whose
figures are /v1/teach/changes' and whose review texts mark each changed record's spans by its change
(added, removed, unchanged: as many characters as the endpoint's records cover); c and Esc close it, c and
the button open it again. Waits on what the page and the server report, never on time.

Skipped, saying so, without Chromium or python3-websocket, or without libmicrohttpd."""

import json
import os
import sys
import urllib.request

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from browser import Browser, skip_reason  # noqa: E402
from teach_loop import DEV, LOGS, MODEL, PD, ROOT, SCHEMA, WAIT, start  # noqa: E402, F401

GEN = os.path.join(ROOT, "models", "tianchi-gen")
KEYS = {"c": ("KeyC", 67), "Escape": ("Escape", 27)}

pytestmark = pytest.mark.skipif(skip_reason() is not None, reason=skip_reason() or "")


def press(page, key):
    code, vk = KEYS[key]
    for kind in ("keyDown", "keyUp"):
        page.call("Input.dispatchKeyEvent", type=kind, key=key, code=code, windowsVirtualKeyCode=vk)


def call(url, path, body=None):
    req = urllib.request.Request(url + path, data=None if body is None else json.dumps(body).encode(),
                                 method="GET" if body is None else "POST")
    with urllib.request.urlopen(req, timeout=WAIT) as r:
        return json.load(r)


def test_teach_changes(tmp_path):
    reviews = tmp_path / "reviews.csv"
    with open(DEV, encoding="utf-8") as f:
        reviews.write_text("".join(line for _, line in zip(range(8), f)), encoding="utf-8")
    labels = tmp_path / "labels.jsonl"
    proc, url = start(["--model", MODEL, "--schema", SCHEMA, "--teach", str(reviews), "--labels", str(labels),
                       "--order", "random"])
    try:
        for k in range(2):  # the first accepted as proposed, the second with its records cut to one
            r = call(url, "/v1/teach/next")["review"]
            call(url, "/v1/teach/answer", {"id": r["id"], "records": r["records"][:1] if k else r["records"]})
        with Browser(LOGS, width=1200, height=900) as b:
            page = b.open(url + "/teach")
            page.wait_for("document.body.dataset.ready === 'review'", WAIT)
            assert page.eval("document.getElementById('changes').hidden") is True
            info = call(url, "/v1/reload", {"model": GEN})
            assert info["generation"] == 2
            page.wait_for("document.body.dataset.changes !== undefined", WAIT)  # by itself, after the reload
            ch = call(url, "/v1/teach/changes")
            shown = json.loads(page.eval("document.body.dataset.changes"))
            assert shown == {"generation": 2, "reviews": ch["reviews"], "changed": ch["changed"]} and ch["reviews"] == 2
            summary = page.eval("document.getElementById('changes-summary').textContent")
            assert f"answers matched whole {ch['exact']['before']}" in summary and f"{ch['fixed']} found now" in summary
            for cls, change in (("chg-added", "added"), ("chg-removed", "removed"), ("chg-same", "unchanged")):
                want = sum(len({i for rec in it["records"] if rec["change"] == change for f in ("aspect", "opinion")
                                if rec[f] for i in range(rec[f]["start"], rec[f]["end"])}) for it in ch["items"])
                got = page.eval(f"document.querySelectorAll('#changes-list .item .text .ch.{cls}').length")
                assert got == want, (cls, got, want)
            assert page.eval("document.getElementById('review').hidden") is True
            page.screenshot("teach-changes.png")
            press(page, "c")
            page.wait_for("document.getElementById('changes').hidden && !document.getElementById('review').hidden", WAIT)
            press(page, "c")
            page.wait_for("!document.getElementById('changes').hidden", WAIT)
            press(page, "Escape")
            page.wait_for("document.getElementById('changes').hidden", WAIT)
            page.eval("document.getElementById('changes-open').click()")
            page.wait_for("!document.getElementById('changes').hidden", WAIT)
            page.eval("document.getElementById('changes-close').click()")
            page.wait_for("document.getElementById('changes').hidden", WAIT)
            assert page.console == [], page.console
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err[-2000:]  # under ASan: nothing leaked

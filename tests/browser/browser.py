"""A real browser for the tests of what people see: headless Chromium (Debian `chromium`) driven over
the DevTools protocol (python3-websocket). One Browser a test module; each page it opens is watched
for requests, so a test can assert that a page asks nothing of any other host.

    with Browser(log_dir) as b:
        page = b.open("http://127.0.0.1:8080/?text=...")
        page.wait_for("document.querySelectorAll('.record').length > 0")
        page.eval("document.title")
        page.screenshot("playground.png")

skip_reason() says why the tests cannot run here (no chromium, no websocket module), or None."""

import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def skip_reason():
    if not CHROMIUM:
        return "Chromium is needed (Debian: chromium; scripts/setup.sh test installs it)"
    try:
        import websocket  # noqa: F401
    except ImportError:
        return "python3-websocket is needed for the DevTools protocol (Debian: python3-websocket)"
    return None


class BrowserError(Exception):
    pass


class Page:
    """One tab: evaluate script, wait for a condition, screenshot, the requests it made."""

    def __init__(self, browser, ws_url):
        import websocket
        self.browser = browser
        self.ws = websocket.create_connection(ws_url, timeout=60, suppress_origin=True)
        self._id = 0
        self.requests = []   # every URL the page asked for
        self.console = []    # console messages and uncaught exceptions
        self.dialogs = []    # alert/prompt texts (a prompt is answered by self.prompt_answer)
        self.prompt_answer = ""
        for domain in ("Page", "Runtime", "Network"):
            self.call(domain + ".enable")

    def _event(self, msg):
        method, params = msg.get("method"), msg.get("params", {})
        if method == "Network.requestWillBeSent":
            self.requests.append(params["request"]["url"])
        elif method == "Runtime.consoleAPICalled":
            self.console.append(" ".join(str(a.get("value", a.get("description", ""))) for a in params["args"]))
        elif method == "Runtime.exceptionThrown":
            self.console.append("exception: " + json.dumps(params["exceptionDetails"])[:500])
        elif method == "Page.javascriptDialogOpening":
            self.dialogs.append(params["message"])
            self.call("Page.handleJavaScriptDialog", accept=True, promptText=self.prompt_answer, wait=False)

    def call(self, method, wait=True, **params):
        self._id += 1
        me = self._id
        self.ws.send(json.dumps({"id": me, "method": method, "params": params}))
        if not wait:
            return None
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == me:
                if "error" in msg:
                    raise BrowserError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self._event(msg)

    def pump(self, seconds):
        """Handle the page's events for a while (requests, dialogs)."""
        end = time.time() + seconds
        self.ws.settimeout(0.05)
        try:
            while time.time() < end:
                try:
                    self._event(json.loads(self.ws.recv()))
                except Exception:  # a timeout: nothing pending
                    pass
        finally:
            self.ws.settimeout(60)

    def eval(self, expression, await_promise=False):
        """The value of a JavaScript expression (JSON-serialisable values)."""
        r = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=await_promise)
        if "exceptionDetails" in r:
            raise BrowserError(f"{expression[:80]}: {r['exceptionDetails'].get('exception', {}).get('description')}")
        return r["result"].get("value")

    def wait_for(self, expression, timeout=30):
        """Until expression is truthy (polled, the page's events handled between)."""
        end = time.time() + timeout
        while time.time() < end:
            if self.eval(f"!!({expression})"):
                return
            self.pump(0.1)
        raise BrowserError(f"timed out waiting for {expression}; console: {self.console[-5:]}")

    def navigate(self, url):
        self.call("Page.navigate", url=url)
        self.wait_for("document.readyState === 'complete'")

    def screenshot(self, name, full=False):
        """A PNG of the window (full: the whole page) into the browser's log folder; its path."""
        import base64
        r = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=full)
        path = os.path.join(self.browser.log_dir, name)
        with open(path, "wb") as f:
            f.write(base64.b64decode(r["data"]))
        return path

    def hosts(self):
        """The hosts of every request the page made (data: and blob: URLs have none)."""
        return {urllib.parse.urlsplit(u).hostname for u in self.requests if urllib.parse.urlsplit(u).hostname}

    def close(self):
        self.ws.close()


class Browser:
    def __init__(self, log_dir, width=1200, height=900):
        self.log_dir = log_dir
        os.makedirs(log_dir, exist_ok=True)
        self.profile = tempfile.mkdtemp(prefix="pd-chromium-")
        self.proc = subprocess.Popen(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
             "--disable-extensions", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", "--metrics-recording-only", "--remote-debugging-port=0",
             f"--user-data-dir={self.profile}", f"--window-size={width},{height}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.endpoint = None
        end = time.time() + 60
        while time.time() < end and self.endpoint is None:
            line = self.proc.stderr.readline()
            if not line and self.proc.poll() is not None:
                break
            if "DevTools listening on ws://" in line:
                self.endpoint = urllib.parse.urlsplit(line.split("listening on ")[1].strip()).netloc
        if self.endpoint is None:
            self.close()
            raise BrowserError("chromium did not start its DevTools endpoint")
        self.pages = []

    def open(self, url):
        """A new tab at url, loaded."""
        req = urllib.request.Request(f"http://{self.endpoint}/json/new?about:blank", method="PUT")
        with urllib.request.urlopen(req, timeout=30) as r:
            target = json.load(r)
        page = Page(self, target["webSocketDebuggerUrl"])
        self.pages.append(page)
        page.navigate(url)
        return page

    def close(self):
        for p in getattr(self, "pages", []):
            try:
                p.close()
            except Exception:
                pass
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def shown_marks(review):
    """[(field, text)] of a summary review's marks ({"text", "marks"}) as a page shows them: by start,
    one that overlaps the mark before it left unmarked (summary/html.c, web/playground.js)."""
    end, out = 0, []
    for m in sorted(review["marks"], key=lambda m: m["start"]):
        if m["start"] >= end:
            out.append([m["field"], review["text"][m["start"]:m["end"]]])
            end = m["end"]
    return out

#!/usr/bin/python3
"""End-to-end tests of `pocketdec serve`, as an app would call it (stdlib only).

Usage: test_serve.py POCKETDEC SOURCE_ROOT

Starts the server on a free port (--port 0; the port is read from its first
stderr line) with the bundled default (models/tianchi, schemas/tianchi-makeup.yaml)
and checks: every endpoint; the records of 24 dev reviews equal to what
`pocketdec extract --format jsonl` writes for them, one a request and all in
one request; each refused body with its status and message; the API key; 503
with Retry-After when the queue is full; 504 past --timeout; a loopback load
test (16 clients x 200 requests; POCKETDEC_SERVE_LOAD scales it) where every
request is answered once and correctly; generation with texts of several
clients sharing one engine's passes (continuous batching), records as the
command's; SIGTERM with
requests in flight, all answered, exit 0; /v1/score against `pocketdec score`
with the generative bundle's pointer head. Prints "N passed, N failed";
exits 77 (skipped) when the command was built without libmicrohttpd.
"""
import csv
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

PD, ROOT = sys.argv[1:3]
MODEL = os.path.join(ROOT, "models", "tianchi")
SCHEMA = os.path.join(ROOT, "schemas", "tianchi-makeup.yaml")
RESULTS = []


def check(name, cond, detail=""):
    cond = bool(cond)
    RESULTS.append(cond)
    print(("ok    " if cond else "FAIL  ") + name + ("" if cond else "  " + str(detail)[:600]), flush=True)


class Server:
    def __init__(self, *args, model=MODEL):
        if "--timeout" not in args:  # no request answered 504 for a slow machine, where the timeout is not tested
            args = (*args, "--timeout", "3600")
        self.err = tempfile.TemporaryFile()
        self.p = subprocess.Popen([PD, "serve", "--model", model, "--schema", SCHEMA, "--port", "0", *args],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        line = self.p.stderr.readline().decode()
        m = re.search(r"listening on http://[^ ]*:(\d+) ", line)
        if not m:
            rest = self.p.stderr.read().decode()
            self.p.wait()
            raise RuntimeError("the server did not start: " + line + rest)
        self.port = int(m.group(1))
        # keep draining stderr so the server never blocks on it
        self.log = []
        self.t = threading.Thread(target=lambda: self.log.extend(l.decode() for l in self.p.stderr), daemon=True)
        self.t.start()

    def request(self, method, path, body=None, headers=None, timeout=120):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        if isinstance(body, str):
            body = body.encode()
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, dict(r.getheaders()), data

    def post(self, path, obj, headers=None, timeout=120):
        h = {"Content-Type": "application/json", **(headers or {})}
        st, hd, data = self.request("POST", path, json.dumps(obj, ensure_ascii=False), h, timeout)
        return st, hd, json.loads(data) if data else None

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
        try:
            rc = self.p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.p.kill()
            rc = self.p.wait()
        self.t.join(timeout=5)
        return rc


def first_server(*args):
    """The first server of a suite; exits 77 (skipped) when the command was built without libmicrohttpd."""
    try:
        return Server(*args)
    except RuntimeError as e:
        if "without libmicrohttpd" in str(e):
            print("skipped: " + str(e).strip())
            sys.exit(77)
        raise


def dev_reviews(n):
    with open(os.path.join(ROOT, "data", "tianchi", "dev_reviews.csv"), newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))[1:]
    return [(r[0], r[1]) for r in rows[:n]]


def extract_cli(reviews, model=MODEL):
    """The records `pocketdec extract --format jsonl` writes for each review."""
    with tempfile.TemporaryDirectory() as d:
        inp = os.path.join(d, "in.jsonl")
        with open(inp, "w", encoding="utf-8") as f:
            for i, t in reviews:
                f.write(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n")
        out = os.path.join(d, "out.jsonl")
        subprocess.run([PD, "extract", "--model", model, "--schema", SCHEMA, "--input", inp, "--output", out,
                        "--format", "jsonl"], check=True, capture_output=True, timeout=300)
        with open(out, encoding="utf-8") as f:
            return {json.loads(l)["id"]: json.loads(l)["records"] for l in f}


def test_endpoints(s, reviews, want):
    st, hd, data = s.request("GET", "/health")
    check("GET /health -> 200 {\"status\":\"ok\"}", st == 200 and json.loads(data) == {"status": "ok"}, (st, data))
    check("/health is JSON", hd.get("Content-Type") == "application/json", hd)

    same = 0
    for i, t in reviews:
        st, _, body = s.post("/v1/extract", {"text": t})
        same += st == 200 and body == {"records": want[i]}
    check(f"POST /v1/extract: the records of {len(reviews)} dev reviews, one a request, as extract --format jsonl",
          same == len(reviews), f"{same} of {len(reviews)}")
    st, _, body = s.post("/v1/extract", {"texts": [t for _, t in reviews]})
    check("POST /v1/extract {texts}: the same records in order",
          st == 200 and body == {"results": [{"records": want[i]} for i, _ in reviews]}, (st, str(body)[:300]))
    n_rec = sum(len(want[i]) for i, _ in reviews)
    check("the dev reviews have records with spans, probs and confidence",
          n_rec > 20 and all("confidence" in r and "probs" in r for i, _ in reviews for r in want[i]), n_rec)
    # byte for byte: the records text is extract's own
    st, _, raw = s.request("POST", "/v1/extract", json.dumps({"text": reviews[0][1]}))
    line = subprocess.run([PD, "extract", "--model", MODEL, "--schema", SCHEMA, "--input", "-", "--input-format",
                           "jsonl", "--output", "-", "--format", "jsonl"],
                          input=json.dumps({"id": "x", "text": reviews[0][1]}).encode(), capture_output=True).stdout
    check("the records are extract's bytes", raw.decode() == line.decode().strip().replace('{"id":"x",', "{", 1),
          (raw, line))
    st, _, body = s.post("/v1/extract", {"text": ""})
    check("an empty text has no records", st == 200 and body == {"records": []}, (st, body))

    st, _, body = s.post("/v1/score", {"text": "很好", "question": "q", "candidates": ["a", "b"]})
    check("POST /v1/score with a tagger head -> 422 naming the head", st == 422 and "decision head" in body["error"],
          (st, body))

    st, hd, data = s.request("GET", "/metrics")
    text = data.decode()
    check("GET /metrics: Prometheus text", st == 200 and hd.get("Content-Type", "").startswith("text/plain"), hd)
    for what in ['pocketdec_requests_total{endpoint="/v1/extract",status="200"} ' + str(len(reviews) + 3),
                 'pocketdec_requests_total{endpoint="/health",status="200"} 1',
                 'pocketdec_requests_total{endpoint="/v1/score",status="422"} 1',
                 "pocketdec_request_duration_seconds_bucket{le=\"+Inf\"}", "pocketdec_request_duration_seconds_sum",
                 "pocketdec_reviews_extracted_total " + str(2 * len(reviews) + 2), "pocketdec_queue_depth 0",
                 "pocketdec_slots_busy 0", "pocketdec_slots 2", "pocketdec_engines 1"]:
        check("metrics: " + what, what in text, text)


def test_playground_api(s, reviews):
    """What the playground (web/) stands on: the page's files with their policy, /v1/info, the command's
    lines for ids, and /v1/why, the document `pocketdec tag --html` draws."""
    st, hd, page = s.request("GET", "/")
    csp = hd.get("Content-Security-Policy", "")
    check("GET / -> the playground, HTML, with a policy that allows this server only",
          st == 200 and hd.get("Content-Type", "").startswith("text/html") and b'src="/playground.js"' in page
          and "default-src 'none'" in csp and "connect-src 'self'" in csp and "http" not in csp, (st, hd))
    for path, kind in (("/playground.js", "text/javascript"), ("/playground.css", "text/css"),
                       ("/why.js", "text/javascript"), ("/why.css", "text/css")):
        st, hd, data = s.request("GET", path)
        check(f"GET {path} -> {kind}", st == 200 and hd.get("Content-Type", "").startswith(kind) and data, (st, hd))
    st, _, body = s.post("/", {"text": "x"})
    check("POST / -> 405", st == 405, (st, body))
    st, _, info = s.request("GET", "/v1/info")
    info = json.loads(info)
    check("GET /v1/info: the head, the fields, what the server answers",
          st == 200 and info["head"] == "tagger" and info["fields"] == ["aspect", "opinion", "category", "polarity"]
          and info["why"] is True and info["score"] is False and info["max_texts"] == 32, info)
    # the command's bytes for the same reviews, CSV and JSONL, from the "ids" of one request
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "r.csv")
        with open(src, "w", encoding="utf-8", newline="") as f:
            csv.writer(f, lineterminator="\n").writerows([("id", "Reviews"), *reviews])
        cli = {}
        for fmt in ("tianchi", "jsonl"):
            out = os.path.join(d, "out." + fmt)
            subprocess.run([PD, "extract", "--model", MODEL, "--schema", SCHEMA, "--input", src, "--output", out,
                            "--format", fmt], check=True, capture_output=True, timeout=300)
            cli[fmt] = open(out, encoding="utf-8").read()
    st, _, body = s.post("/v1/extract", {"texts": [t for _, t in reviews], "ids": [i for i, _ in reviews]})
    check("POST /v1/extract {texts, ids}: each result's lines are the command's, CSV and JSONL",
          st == 200 and "".join(r["tianchi"] for r in body["results"]) == cli["tianchi"]
          and "".join(r["jsonl"] for r in body["results"]) == cli["jsonl"], (st, str(body)[:300]))
    # a shop's export: the page reads it by /v1/reviews/read and sends each row's other columns back as
    # "extras" (the member text, in the file's order: "2024" stays after "sku"); the JSONL lines are the
    # command's on the same file, extra columns included
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "shop.csv")
        with open(src, "w", encoding="utf-8", newline="") as f:
            csv.writer(f, lineterminator="\n").writerows(
                [("review_id", "sku", "content", "2024", "店铺")] +
                [(i, f"A{k}", t, str(k), "旗舰\"店") for k, (i, t) in enumerate(reviews)])
        out = os.path.join(d, "out.jsonl")
        subprocess.run([PD, "extract", "--model", MODEL, "--schema", SCHEMA, "--input", src, "--output", out,
                        "--format", "jsonl", "--id-column", "review_id", "--text-column", "content"],
                       check=True, capture_output=True, timeout=300)
        cli_shop = open(out, encoding="utf-8").read()
        st, _, read = s.request("POST", "/v1/reviews/read?name=shop.csv&id_column=review_id&text_column=content",
                                open(src, "rb").read())
    rows = json.loads(read)["rows"]
    st, _, body = s.post("/v1/extract", {"texts": [r["text"] for r in rows], "ids": [r["id"] for r in rows],
                                         "extras": [r["extra_json"] for r in rows]})
    got = "".join(r["jsonl"] for r in body["results"]) if st == 200 else ""
    check("POST /v1/extract {texts, ids, extras}: the JSONL lines of a shop's export are the command's, its "
          "columns in the file's order", st == 200 and got == cli_shop and '"sku":"A0","2024":"0","店铺":"旗舰\\"店"}'
          in got, (st, got[:300], cli_shop[:300]))
    st, _, body = s.post("/v1/extract", {"texts": ["x"], "ids": [1], "extras": ['"records":[]']})
    check("extras naming a column the line holds -> 400", st == 400 and "holds already" in body["error"], (st, body))
    for bad, what in (({"text": "x", "ids": [1]}, '"ids" goes with "texts"'),
                      ({"texts": ["x", "y"], "ids": [1]}, "array of 2 ids"),
                      ({"texts": ["x"], "ids": [1.5]}, '"ids"[0] must be a string or an integer')):
        st, _, body = s.post("/v1/extract", bad)
        check(f"bad ids -> 400: {what}", st == 400 and what in body["error"], (st, body))
    text = reviews[3][1]
    st, _, why = s.post("/v1/why", {"text": text})
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "why.html")
        subprocess.run([PD, "tag", "--model", MODEL, "--schema", SCHEMA, "--text", text, "--html", out], check=True,
                       capture_output=True, timeout=120)
        embedded = open(out, encoding="utf-8").read().split('id="why-data">', 1)[1].split("</script>", 1)[0]
    check("POST /v1/why: the document tag --html draws for the text", st == 200 and json.loads(
        embedded.replace("\\u003c", "<")) == why and why["spans"], (st, str(why)[:300]))
    st, _, body = s.post("/v1/why", {"txt": text})
    check("POST /v1/why without text -> 400", st == 400 and "unknown field" in body["error"], (st, body))


def test_errors(s):
    J = {"Content-Type": "application/json"}
    cases = [
        ("empty body", "POST", "/v1/extract", b"", 400, "empty"),
        ("invalid UTF-8", "POST", "/v1/extract", b'{"text": "\xff\xfe"}', 400, "not valid UTF-8 (byte 10)"),
        ("truncated UTF-8", "POST", "/v1/extract", b'{"text": "\xe5\xa5"}', 400, "UTF-8"),
        ("bad JSON", "POST", "/v1/extract", b'{"text": ', 400, "not valid JSON"),
        ("not an object", "POST", "/v1/extract", b'["a"]', 400, "must be a JSON object"),
        ("missing field", "POST", "/v1/extract", b'{}', 400, 'missing field "text"'),
        ("text not a string", "POST", "/v1/extract", b'{"text": 3}', 400, '"text" must be a string'),
        ("texts not an array", "POST", "/v1/extract", b'{"texts": "a"}', 400, '"texts" must be an array'),
        ("texts item not a string", "POST", "/v1/extract", b'{"texts": ["a", null]}', 400,
         '"texts"[1] must be a string'),
        ("texts empty", "POST", "/v1/extract", b'{"texts": []}', 400, '"texts" is empty'),
        ("text and texts", "POST", "/v1/extract", b'{"text": "a", "texts": ["b"]}', 400, "not both"),
        ("unknown field", "POST", "/v1/extract", b'{"txt": "a"}', 400, 'unknown field "txt"'),
        ("NUL in text", "POST", "/v1/extract", b'{"text": "a\\u0000b"}', 400, "not valid JSON"),
        ("duplicate key", "POST", "/v1/extract", b'{"text": "a", "text": "b"}', 400, "duplicate"),
        ("too many texts", "POST", "/v1/extract", json.dumps({"texts": ["a"] * 33}).encode(), 413, "--max-texts"),
        ("body too large", "POST", "/v1/extract", json.dumps({"text": "a" * 70000}).encode(), 413, "--max-body"),
        ("file too large", "POST", "/v1/reviews/read", b"1,a\n" * 17500, 413, "--max-body"),
        ("file in GB18030", "POST", "/v1/reviews/read?name=gb.csv", "id,Reviews\n1,很好\n".encode("gb18030"), 400,
         "gb.csv: the file is not UTF-8 (byte 14) but reads cleanly as GB18030"),
        ("file's format", "POST", "/v1/reviews/read?format=xml", b"1,a\n", 400, "format must be csv or jsonl"),
        ("GET on /v1/reviews/read", "GET", "/v1/reviews/read", None, 405, "takes POST"),
        ("unknown path", "GET", "/v2/nothing", None, 404, "no such endpoint"),
        ("GET on /v1/extract", "GET", "/v1/extract", None, 405, "takes POST"),
        ("POST on /health", "POST", "/health", b"{}", 405, "takes GET"),
    ]
    for name, method, path, body, status, words in cases:
        st, hd, data = s.request(method, path, body, J if body is not None else {})
        try:
            msg = json.loads(data)["error"]
        except (ValueError, KeyError, TypeError):
            msg = None
        check(f"{name} -> {status} naming it", st == status and msg is not None and words in msg, (st, data))
        if status == 405:
            check(f"{name}: Allow header", hd.get("Allow") in ("GET", "POST"), hd)
    # a chunked body (no Content-Length) over --max-body
    c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=60)
    c.request("POST", "/v1/extract", body=iter([b'{"text": "' + b"a" * 40000, b"a" * 40000 + b'"}']),
              headers=J, encode_chunked=True)
    r = c.getresponse()
    data = r.read()
    check("chunked body over --max-body -> 413", r.status == 413 and b"--max-body" in data, (r.status, data))
    # the server still answers after every refusal
    st, _, body = s.post("/v1/extract", {"text": "很好用"})
    check("still serving after the refusals", st == 200 and body["records"], (st, body))


def test_auth(reviews, want):
    with tempfile.NamedTemporaryFile("w", suffix=".key", delete=False) as f:
        f.write("s3cret-key\n")
        keyfile = f.name
    s = Server("--api-key-file", keyfile, "--threads", "1")
    try:
        t = reviews[0][1]
        st, hd, body = s.post("/v1/extract", {"text": t})
        check("no key -> 401", st == 401 and "API key" in body["error"] and hd.get("WWW-Authenticate") == "Bearer",
              (st, body, hd))
        st, _, body = s.post("/v1/extract", {"text": t}, {"Authorization": "Bearer s3cret-kez"})
        check("wrong key -> 401", st == 401, (st, body))
        st, _, body = s.post("/v1/extract", {"text": t}, {"Authorization": "Bearer s3cret-key-longer"})
        check("longer key -> 401", st == 401, (st, body))
        st, _, body = s.post("/v1/extract", {"text": t}, {"Authorization": "s3cret-key"})
        check("key without Bearer -> 401", st == 401, (st, body))
        st, _, body = s.post("/v1/extract", {"text": t}, {"Authorization": "Bearer s3cret-key"})
        check("right key -> 200 and the records", st == 200 and body == {"records": want[reviews[0][0]]}, (st, body))
        st, _, _ = s.request("GET", "/health")
        check("/health needs no key", st == 200, st)
        st, _, _ = s.request("GET", "/metrics")
        check("/metrics needs the key", st == 401, st)
        st, _, _ = s.request("GET", "/metrics", headers={"Authorization": "Bearer s3cret-key"})
        check("/metrics with the key -> 200", st == 200, st)
        st, _, page = s.request("GET", "/")
        check("the playground page needs no key (its API calls carry it)", st == 200 and b"<html" in page, st)
        st, _, _ = s.request("GET", "/v1/info")
        check("/v1/info needs the key", st == 401, st)
        src = "review_id,content,sku\nr1,好,A1\n".encode()
        st, _, _ = s.request("POST", "/v1/reviews/read?id_column=review_id", src)
        check("/v1/reviews/read needs the key", st == 401, st)
        st, _, body = s.request("POST", "/v1/reviews/read?id_column=review_id&name=shop.csv", src,
                                {"Authorization": "Bearer s3cret-key"})
        check("/v1/reviews/read with the key: the file's rows by the command's reader", st == 200 and json.loads(body) ==
              {"rows": [{"id": "r1", "text": "好", "line": 2, "extra": {"sku": "A1"}, "extra_json": '"sku":"A1"'}],
               "problems": []}, (st, body))
    finally:
        check("auth server: SIGTERM -> exit 0", s.stop() == 0, s.log)
        os.unlink(keyfile)


def concurrently(fn, args):
    out = [None] * len(args)

    def run(k):
        try:
            out[k] = fn(*args[k])
        except Exception as e:  # noqa: BLE001 - reported by the check
            out[k] = e
    ts = [threading.Thread(target=run, args=(k,)) for k in range(len(args))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return out


def refused_while_busy(s, texts, waiting):
    """Request A running (the server reports it) and, with waiting, B queued
    behind it: the next request C must be 503. Where A ended before C came
    (a fast machine) C was no test: again, until C came while they held.
    Returns (A, B, C)'s answers: (status, headers, body)."""
    poll = Poller(s.port)
    while True:
        out = {}

        def send(k):
            out[k] = s.post("/v1/extract", {"texts": texts}, timeout=600)
        ta = threading.Thread(target=send, args=("A",))
        ta.start()
        while "A" not in out and poll.get("pocketdec_slots_busy") < 1:
            time.sleep(0.001)
        tb = None
        if waiting:
            tb = threading.Thread(target=send, args=("B",))
            tb.start()
            while "B" not in out and poll.get("pocketdec_queue_depth") < 2:  # A's rest and B
                time.sleep(0.001)
        send("C")
        ta.join()
        if tb:
            tb.join()
        if out["C"][0] == 503 or ("A" in out and out["A"][0] != 200):
            poll.close()
            return out.get("A"), out.get("B"), out["C"]


def test_queue_full(texts):
    slow = texts[:100]
    s = Server("--parallel", "1", "--queue", "1", "--threads", "1", "--max-texts", "4096", "--timeout", "600")
    try:
        a, b, c = refused_while_busy(s, slow, True)
        check("queue full -> 503 (one running, one waiting, the next refused)",
              a[0] == 200 and b[0] == 200 and c[0] == 503, (a[0], b[0], c[0]))
        check("503 carries Retry-After and says why", c[1].get("Retry-After") == "1" and "busy" in c[2]["error"], c)
        check("the accepted ones have all their results",
              len(a[2]["results"]) == len(slow) and len(b[2]["results"]) == len(slow))
    finally:
        check("queue server: SIGTERM -> exit 0", s.stop() == 0, s.log)
    s = Server("--parallel", "1", "--queue", "0", "--threads", "1", "--max-texts", "4096", "--timeout", "600")
    try:
        st, _, body = s.post("/v1/extract", {"text": texts[0]})
        check("--queue 0: an idle worker takes a request", st == 200 and "records" in body, (st, body))
        a, _, c = refused_while_busy(s, slow, False)
        check("--queue 0: while it is busy the next is refused", a[0] == 200 and c[0] == 503, (a[0], c[0]))
    finally:
        check("queue 0 server: SIGTERM -> exit 0", s.stop() == 0, s.log)


def test_timeout(texts):
    s = Server("--parallel", "1", "--threads", "1", "--timeout", "1.5", "--max-texts", "4096")
    try:
        st, _, body = s.post("/v1/extract", {"texts": texts * 10})
        done = Poller(s.port).get("pocketdec_reviews_extracted_total")
        check("past --timeout -> 504 naming it, before the request's texts were done",
              st == 504 and "--timeout" in body["error"] and done < len(texts) * 10, (st, body, done))
        st, _, body = s.post("/v1/extract", {"text": texts[0]})
        check("after a 504 the worker serves the next request", st == 200 and "records" in body, (st, body))
    finally:
        check("timeout server: SIGTERM -> exit 0", s.stop() == 0, s.log)


def load(s, reviews, want, clients, each, what):
    """clients keep-alive clients sending `each` single-review requests at once:
    every request answered once, 200, with the records the command writes."""
    ids = [i for i, _ in reviews]
    text = dict(reviews)

    def client(c):
        conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=600)
        got = []
        for k in range(each):
            rid = ids[(c * each + k) % len(ids)]
            conn.request("POST", "/v1/extract", body=json.dumps({"text": text[rid]}).encode(),
                         headers={"Content-Type": "application/json"})
            r = conn.getresponse()
            got.append((c, k, rid, r.status, json.loads(r.read())))
        conn.close()
        return got
    t0 = time.time()
    out = concurrently(client, [(c,) for c in range(clients)])
    dt = time.time() - t0
    errors = [o for o in out if isinstance(o, Exception)]
    answers = [a for o in out if not isinstance(o, Exception) for a in o]
    right = sum(st == 200 and body == {"records": want[rid]} for _, _, rid, st, body in answers)
    total = clients * each
    check(f"{what}: {clients} clients x {each} requests (keep-alive), each answered once and right",
          not errors and len(answers) == total and len({(c, k) for c, k, *_ in answers}) == total and right == total,
          (errors[:2], len(answers), right))
    print(f"      {what}: {total} requests in {dt:.2f} s = {total / dt:.1f} requests/s", flush=True)
    return s.request("GET", "/metrics")[2].decode()


def test_load(s, reviews, want):
    # POCKETDEC_SERVE_LOAD=CLIENTSxREQUESTS scales it down for sanitizer builds
    clients, each = (int(v) for v in os.environ.get("POCKETDEC_SERVE_LOAD", "16x200").split("x"))
    text = load(s, reviews, want, clients, each, "load")
    m = re.search(r'pocketdec_requests_total\{endpoint="/v1/extract",status="200"\} (\d+)', text)
    check("metrics count the load", m and int(m.group(1)) >= clients * each, text[:300])


def test_continuous(reviews):
    """Generation: texts of every client join one engine's joint passes as
    slots free, with the records of the command."""
    gen = os.path.join(ROOT, "models", "tianchi-gen")
    want = extract_cli(reviews, gen)
    s = Server("--parallel", "4", "--threads", "2", model=gen)
    try:
        text = load(s, reviews, want, 8, 3, "generation, continuous batching")
        m = re.search(r"^pocketdec_slots_busy_peak (\d+)$", text, re.M)
        check("texts of several clients shared the passes (slots_busy_peak 2..4)",
              m and 2 <= int(m.group(1)) <= 4 and "pocketdec_engines 1" in text and "pocketdec_slots 4" in text,
              text[-900:])
    finally:
        check("generation server: SIGTERM -> exit 0", s.stop() == 0, s.log)


def metric_of(text, name):
    m = re.search("^" + re.escape(name) + r" (\d+)$", text, re.M)
    return int(m.group(1)) if m else 0


class Poller:
    """/metrics on one kept-alive connection (from src): the server's own
    counts, which the tests wait on instead of on how fast it works."""

    def __init__(self, port, src="127.0.0.1"):
        self.c = http.client.HTTPConnection("127.0.0.1", port, timeout=600, source_address=(src, 0))

    def get(self, name=None):
        self.c.request("GET", "/metrics")
        text = self.c.getresponse().read().decode()
        return metric_of(text, name) if name else text

    def wait(self, name, cond):
        """Poll until cond(the metric) holds; the test's own timeout bounds it."""
        while not cond(self.get(name)):
            time.sleep(0.01)

    def close(self):
        self.c.close()


def wait_log(s, what):
    """Until the server's stderr holds what (the server reports it)."""
    while not any(what in line for line in s.log):
        if s.p.poll() is not None and not any(what in line for line in s.log):
            s.t.join(timeout=5)
            return any(what in line for line in s.log)
        time.sleep(0.01)
    return True


def test_sigterm(texts):
    """SIGTERM with requests accepted: running, queued, and one whose body is
    still coming, held by the test until the server has said it is draining,
    so a request is in flight at the signal on a machine of any speed."""
    s = Server("--parallel", "1", "--threads", "1", "--queue", "16", "--max-texts", "4096", "--timeout", "600",
               "--min-rate", "0", "--idle-timeout", "3600")
    batch = texts[:20]
    poll = Poller(s.port)
    poll.get()  # its connection: the first accepted
    body = json.dumps({"text": texts[0]}).encode()
    held = socket.create_connection(("127.0.0.1", s.port), timeout=600)
    held.sendall(b"POST /v1/extract HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body) + body[:10])
    res = {}

    def one(k):
        res[k] = s.post("/v1/extract", {"texts": batch}, timeout=600)
    ts = [threading.Thread(target=one, args=(k,)) for k in range(5)]
    for t in ts:
        t.start()
    # until the server has accepted all seven connections (a connection the
    # kernel holds but the server has not accepted is closed by the drain)
    poll.wait("pocketdec_connections_accepted_total", lambda n: n >= 7)
    text = poll.get()
    poll.close()
    print(f"      at the signal: {metric_of(text, 'pocketdec_queue_depth')} requests queued, "
          f"{metric_of(text, 'pocketdec_slots_busy')} texts running", flush=True)
    s.p.send_signal(signal.SIGTERM)
    check("SIGTERM: the server says it drains", wait_log(s, "SIGTERM: no new connections"), s.log)
    held.sendall(body[10:])
    got = b""
    while True:
        b = held.recv(65536)
        if not b:
            break
        got += b
    held.close()
    rc = s.p.wait(timeout=600)
    for t in ts:
        t.join()
    codes = [res.get(k, (None,))[0] for k in range(5)]
    check("SIGTERM with requests in flight: every one answered 200", codes == [200] * 5, (codes, s.log))
    check("... with all its results", all(len(res[k][2]["results"]) == len(batch) for k in range(5) if k in res))
    check("... and the request whose body came after the signal, 200 with its records",
          got.startswith(b"HTTP/1.1 200") and b'{"records":' in got, got[:300])
    check("... and exit 0", rc == 0, (rc, s.log))
    try:
        s.request("GET", "/health", timeout=2)
        refused = False
    except OSError:
        refused = True
    check("no connection accepted after it stopped", refused)


def test_limits(text):
    """Over --max-connections a connection waits in the backlog; over
    --max-per-client it is answered 503 with Retry-After; with no per-client
    limit (the default, and the setting behind a proxy) 48 connections from
    one address are all served."""
    s = Server("--max-connections", "2", "--threads", "1")
    try:
        a, b = Poller(s.port), Poller(s.port)
        a.get()
        b.get()
        c = socket.create_connection(("127.0.0.1", s.port), timeout=600)
        c.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        check("--max-connections 2: a third connection is not accepted while two are open (it waits)",
              a.get("pocketdec_connections_accepted_total") == 2 and a.get("pocketdec_connections") == 2)
        b.close()
        got = c.recv(65536)
        check("... and is answered once one of them closes", got.startswith(b"HTTP/1.1 200"), got[:100])
        c.close()
        a.close()
    finally:
        check("max-connections server: SIGTERM -> exit 0", s.stop() == 0, s.log)
    s = Server("--max-per-client", "2", "--max-connections", "8", "--threads", "1")
    try:
        a, b, other = Poller(s.port), Poller(s.port), Poller(s.port, "127.0.0.2")
        a.get()
        b.get()
        c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=600)
        c.request("POST", "/v1/extract", body=json.dumps({"text": text}).encode())
        r = c.getresponse()
        data = r.read()
        check("--max-per-client 2: a third connection from one address -> 503 with Retry-After, not a reset",
              r.status == 503 and r.getheader("Retry-After") == "1" and r.getheader("Connection") == "close" and
              "--max-per-client" in json.loads(data)["error"], (r.status, r.getheaders(), data))
        c.close()
        check("... counted (pocketdec_connections_refused_total), another address served meanwhile",
              other.get("pocketdec_connections_refused_total") == 1, other.get())
        b.close()
        other.wait("pocketdec_connections", lambda n: n == 2)  # a and other: b's close seen
        st, _, body = s.post("/v1/extract", {"text": text})
        check("... and a connection from it served once one of its own closed", st == 200 and "records" in body,
              (st, body))
        a.close()
        other.close()
    finally:
        check("per-client server: SIGTERM -> exit 0", s.stop() == 0, s.log)
    s = Server("--threads", "1")
    try:
        conns = [http.client.HTTPConnection("127.0.0.1", s.port, timeout=600) for _ in range(48)]
        for c in conns:  # all open at once, as a proxy's pool or a client's is
            c.connect()
        out = concurrently(lambda c: (c.request("POST", "/v1/extract", body=json.dumps({"text": text}).encode()),
                                      c.getresponse())[1], [(c,) for c in conns])
        codes = [o.status if isinstance(o, http.client.HTTPResponse) else repr(o) for o in out]
        for o in out:
            if isinstance(o, http.client.HTTPResponse):
                o.read()
        peak = Poller(s.port, "127.0.0.2")
        check("defaults (no per-client limit, as behind a proxy): 48 connections from one address at once, "
              "each answered 200", codes == [200] * 48 and peak.get("pocketdec_connections_peak") >= 48,
              (codes, peak.get()))
        peak.close()
        for c in conns:
            c.close()
    finally:
        check("proxy-default server: SIGTERM -> exit 0", s.stop() == 0, s.log)


def test_score():
    gen = os.path.join(ROOT, "models", "tianchi-gen")
    s = Server("--threads", "1", model=gen)
    try:
        q, cands = "属性：颜色；观点：很正", ["功效/正面", "功效/负面", "整体/正面"]
        st, _, body = s.post("/v1/score", {"text": "颜色很正", "question": q, "candidates": cands})
        cli = subprocess.run([PD, "score", "--model", gen, "--threads", "1", "--text", "颜色很正", "--question", q]
                             + [a for c in cands for a in ("--candidate", c)], capture_output=True, timeout=120)
        want = json.loads(cli.stdout)
        check("POST /v1/score (pointer head): the probabilities of pocketdec score",
              st == 200 and [c["label"] for c in body["candidates"]] == cands and
              all(abs(a["prob"] - b["prob"]) < 1e-6 for a, b in zip(body["candidates"], want["candidates"])),
              (st, body, want))
        st, _, body = s.post("/v1/score", {"question": q, "candidates": cands})
        check("score without text -> 400", st == 400 and 'missing field "text"' in body["error"], (st, body))
        st, _, body = s.post("/v1/score", {"text": "x", "candidates": "a"})
        check("score candidates not an array -> 400", st == 400 and '"candidates"' in body["error"], (st, body))
        st, _, body = s.post("/v1/score", {"text": "x", "question": 1, "candidates": ["a"]})
        check("score question not a string -> 400", st == 400 and '"question"' in body["error"], (st, body))
        st, _, body = s.post("/v1/score", {"text": "x", "question": "q", "candidates": []})
        check("score with no candidates (pointer head) -> 422 naming it", st == 422 and body["error"], (st, body))
        st, _, body = s.post("/v1/why", {"text": "颜色很正"})
        check("POST /v1/why with a decision head -> 422 naming it", st == 422 and "tagger head" in body["error"],
              (st, body))
        st, _, info = s.request("GET", "/v1/info")
        check("/v1/info of a pointer head: score, no why",
              st == 200 and json.loads(info)["head"] == "pointer" and json.loads(info)["score"] is True, info)
    finally:
        check("score server: SIGTERM -> exit 0", s.stop() == 0, s.log)


def main():
    if os.environ.get("POCKETDEC_SERVE_ONLY") == "sigterm":  # the drain alone, to run it many times
        test_sigterm([t for _, t in dev_reviews(283)])
        print(f"{RESULTS.count(True)} passed, {RESULTS.count(False)} failed")
        sys.exit(0 if all(RESULTS) else 1)
    help_ = subprocess.run([PD, "serve", "--help"], capture_output=True).stdout.decode()
    check("serve --help", "usage: pocketdec serve" in help_ and "/v1/extract" in help_, help_[:200])
    reviews = dev_reviews(24)
    want = extract_cli(reviews)
    load_reviews = dev_reviews(200)
    load_want = extract_cli(load_reviews)
    s = first_server("--parallel", "2", "--threads", "1", "--max-texts", "32", "--max-body", "65536")
    try:
        test_endpoints(s, reviews, want)
        test_playground_api(s, reviews)
        test_errors(s)
        test_load(s, load_reviews, load_want)
    finally:
        check("main server: SIGTERM -> exit 0", s.stop() == 0, s.log)
    texts = [t for _, t in dev_reviews(283)]
    test_auth(reviews, want)
    test_queue_full(texts)
    test_timeout(texts)
    test_sigterm(texts)
    test_limits(texts[0])
    test_score()
    test_continuous(reviews)
    rc, _, err = (lambda p: (p.returncode, p.stdout, p.stderr.decode()))(subprocess.run(
        [PD, "serve", "--model", MODEL, "--schema", SCHEMA, "--api-key", "a", "--api-key-file", "f"],
        capture_output=True))
    check("--api-key and --api-key-file together: usage error", rc == 2 and "not both" in err, err)
    print(f"{RESULTS.count(True)} passed, {RESULTS.count(False)} failed")
    sys.exit(0 if all(RESULTS) else 1)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""`pocketdec serve` behind nginx, set as docs/serve.md's "Behind a proxy" says
(examples/serve/nginx.conf, the per-client limit 2 here), stdlib only.

Usage: test_proxy.py POCKETDEC SOURCE_ROOT

The server at its defaults (no per-client limit: every request comes from
nginx's address), nginx limiting each client by its own address:
- 48 clients, each from its own address of 127.0.0.0/8, at once through the
  proxy: every one answered 200 with the records of `pocketdec extract`, none
  refused by the server;
- a client holding 2 requests (their bodies held back until nginx has taken
  them: it answers 100 Continue after its per-client check) gets 503 from nginx
  for a third, while another address is answered 200; the held two are then
  answered 200.
Prints "N passed, N failed"; exits 77 (skipped) without nginx or libmicrohttpd.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_serve as ts  # noqa: E402 - the server and client helpers, with the same argv
from test_serve import check  # noqa: E402

NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if os.access("/usr/sbin/nginx", os.X_OK) else None)


def free_port():
    with socket.socket() as k:
        k.bind(("127.0.0.1", 0))
        return k.getsockname()[1]


def start_nginx(tmp, serve_port, per_client):
    with open(os.path.join(ts.ROOT, "examples", "serve", "nginx.conf"), encoding="utf-8") as f:
        conf = f.read()
    port = free_port()
    for k, v in {"@PREFIX@": tmp, "@SERVE_PORT@": str(serve_port), "@PROXY_PORT@": str(port),
                 "@PER_CLIENT@": str(per_client)}.items():
        conf = conf.replace(k, v)
    # the timeouts of a slow machine (a sanitizer build under load): nginx's above the server's 3500 s
    conf = conf.replace("proxy_read_timeout 70s;", "proxy_read_timeout 3600s;")
    path = os.path.join(tmp, "nginx.conf")
    with open(path, "w", encoding="utf-8") as f:
        f.write(conf)
    p = subprocess.Popen([NGINX, "-p", tmp, "-c", path, "-g", "daemon off;"], stderr=subprocess.PIPE)
    while True:  # until it listens (or has failed)
        try:
            socket.create_connection(("127.0.0.1", port), timeout=5).close()
            return p, port
        except OSError:
            if p.poll() is not None:
                raise RuntimeError("nginx did not start: " + p.stderr.read().decode()) from None
            time.sleep(0.05)


def post(port, text, src):
    c = ts.http.client.HTTPConnection("127.0.0.1", port, timeout=600, source_address=(src, 0))
    c.request("POST", "/v1/extract", body=json.dumps({"text": text}).encode(),
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


def held(port, body, src):
    """A request whose body waits until nginx has taken it (100 Continue)."""
    c = socket.socket()
    c.bind((src, 0))
    c.settimeout(600)
    c.connect(("127.0.0.1", port))
    c.sendall(b"POST /v1/extract HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Expect: 100-continue\r\nContent-Length: %d\r\n\r\n" % len(body))
    got = b""
    while b"\r\n\r\n" not in got:
        got += c.recv(4096)
    return c, got


def read_answer(c):
    out = b""
    while True:
        b = c.recv(65536)
        out += b
        head, _, rest = out.partition(b"\r\n\r\n")
        m = ts.re.search(rb"Content-Length: (\d+)", head, ts.re.I)
        if not b or (m and len(rest) >= int(m.group(1))):
            return out


def main():
    if not NGINX:
        print("skipped: nginx is not installed (scripts/setup.sh test installs nginx-light)")
        sys.exit(77)
    reviews = ts.dev_reviews(48)
    want = ts.extract_cli(reviews)
    s = ts.first_server("--threads", "1", "--timeout", "3500")
    tmp = tempfile.mkdtemp()
    ng = None
    try:
        ng, port = start_nginx(tmp, s.port, 2)
        out = ts.concurrently(lambda k: post(port, reviews[k][1], f"127.0.1.{k + 1}"), [(k,) for k in range(48)])
        right = sum(isinstance(o, tuple) and o[0] == 200 and json.loads(o[1]) == {"records": want[reviews[k][0]]}
                    for k, o in enumerate(out))
        poll = ts.Poller(s.port)
        check("48 clients of 48 addresses at once through nginx: each answered 200 with extract's records",
              right == 48, [o if not isinstance(o, tuple) else o[0] for o in out][:8])
        check("... none refused by the server (its per-client limit off: all came from nginx's address)",
              poll.get("pocketdec_connections_refused_total") == 0, poll.get()[-400:])
        body = json.dumps({"text": reviews[0][1]}).encode()
        h = [held(port, body, "127.0.2.1") for _ in range(2)]
        check("a client's 2 requests taken by nginx (100 Continue)", all(b"100 Continue" in g for _, g in h),
              [g for _, g in h])
        st, data = post(port, reviews[1][1], "127.0.2.1")
        check("... its third at once -> 503 from nginx (limit_conn, by the client's own address)", st == 503,
              (st, data[:200]))
        st, data = post(port, reviews[1][1], "127.0.2.2")
        check("... another address answered 200 meanwhile",
              st == 200 and json.loads(data) == {"records": want[reviews[1][0]]}, (st, data[:200]))
        answers = []
        for c, _ in h:
            c.sendall(body)
            answers.append(read_answer(c))
            c.close()
        check("... and the held two answered 200 once their bodies came",
              all(a.startswith(b"HTTP/1.1 200") and b'{"records":' in a for a in answers), [a[:120] for a in answers])
        poll.close()
    finally:
        if ng:
            ng.send_signal(signal.SIGQUIT)  # nginx's graceful stop
            ng.wait(timeout=60)
        shutil.rmtree(tmp, ignore_errors=True)
        check("server behind the proxy: SIGTERM -> exit 0", s.stop() == 0, s.log[-5:])
    print(f"{ts.RESULTS.count(True)} passed, {ts.RESULTS.count(False)} failed")
    sys.exit(0 if all(ts.RESULTS) else 1)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""`pocketdec serve` under bad clients, loopback only (stdlib only).

Usage: test_attack.py POCKETDEC SOURCE_ROOT

- slowloris: 1,000 connections from 127.0.0.2 (a client may bind any address
  of 127.0.0.0/8) sending their headers a byte a second and reconnecting when
  shut, while 8 honest clients from 127.0.0.1 send 200
  reviews each: every honest request answered 200 with the records of
  `pocketdec extract`, within --timeout; the server's threads and RSS bounded
  throughout and back to idle after;
- one bad client at a time: a header over --max-header (431), a URL over it
  (414), a Content-Length over --max-body (413 before the body), a body
  shorter than its Content-Length, a body a byte a second (408), headers a
  byte a second (408), a client reading its answer a byte a second;
- a soak: 50,000 requests, good and bad bodies mixed, every answer the one
  expected (no error answered 200), peak RSS within 10% of the first 1,000's.

Counts: POCKETDEC_SERVE_ATTACK=CONNSxCLIENTSxREVIEWS and POCKETDEC_SERVE_SOAK=N;
by default 1000x8x200 and 50000, or 200x4x20 and 1000 for a sanitized build.
Prints "N passed, N failed"; exits 77 without libmicrohttpd.
"""
import http.client
import json
import os
import random
import re
import resource
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_serve as ts  # noqa: E402 - the server and client helpers, with the same argv
from test_serve import check  # noqa: E402

PD = ts.PD
IDLE, MIN_RATE, TIMEOUT = 2, 1024, 60
PER_CLIENT = int(os.environ.get("POCKETDEC_SERVE_PER_CLIENT", "32"))  # raised to compare connection models


def sanitized():
    with open(PD, "rb") as f:
        data = f.read()
    return b"__tsan_init" in data or b"__asan_init" in data


# A sanitizer's own memory (ASan's quarantine of freed blocks, TSan's shadow)
# grows with the work done: RSS is printed there, held to its bounds only here.
RSS_CHECKED = not sanitized()


def proc(pid):
    """(RSS in MiB, threads) of the server."""
    with open(f"/proc/{pid}/status") as f:
        st = f.read()
    return int(re.search(r"VmRSS:\s+(\d+)", st).group(1)) / 1024, int(re.search(r"Threads:\s+(\d+)", st).group(1))


class Sampler:
    """The server's RSS and threads every 50 ms, while it runs."""

    def __init__(self, pid):
        self.pid, self.samples, self.stop_ = pid, [], threading.Event()
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        while not self.stop_.is_set():
            try:
                self.samples.append(proc(self.pid))
            except (OSError, AttributeError):
                return
            time.sleep(0.05)

    def stop(self):
        self.stop_.set()
        self.t.join()
        return max(r for r, _ in self.samples), max(t for _, t in self.samples)


def metric(s, name):
    text = s.request("GET", "/metrics")[2].decode()
    m = re.search("^" + re.escape(name) + r" (\d+)$", text, re.M)
    return int(m.group(1)) if m else 0


def raw(port, data, src="127.0.0.1", rcvbuf=None):
    c = socket.socket()
    if rcvbuf:
        c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    c.bind((src, 0))
    c.settimeout(30)
    c.connect(("127.0.0.1", port))
    if data:
        c.sendall(data)
    return c


def read_all(c):
    out = b""
    try:
        while True:
            b = c.recv(65536)
            if not b:
                return out
            out += b
    except OSError:
        return out


def status_of(answer):
    m = re.match(rb"HTTP/1\.1 (\d+)", answer)
    return int(m.group(1)) if m else answer[:80]


def trickle(port, head, each, src="127.0.0.1"):
    """head at once, then `each` a byte a second until the server answers or
    shuts the connection: (status, seconds after head)."""
    c = raw(port, head, src)
    t0 = time.time()
    c.settimeout(1.0)
    for k in range(len(each)):
        try:
            c.send(each[k:k + 1])
            got = c.recv(65536)
        except socket.timeout:
            continue
        except OSError:
            return "reset", time.time() - t0
        c.settimeout(10)
        return status_of(got + read_all(c)), time.time() - t0
    return "never", time.time() - t0


POST = b"POST /v1/extract HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"


def test_bad_clients(s, text):
    port = s.port
    c = raw(port, POST + b"X-Big: " + b"a" * 40000 + b"\r\nContent-Length: 2\r\n\r\n{}")
    check("a header over --max-header -> 431", status_of(read_all(c)) == 431)
    c = raw(port, b"GET /health?" + b"a" * 40000 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    check("a request line over --max-header -> 414", status_of(read_all(c)) == 414)
    c = raw(port, POST + b"Content-Length: 1000000000\r\n\r\n")  # none of the body is ever sent
    got = read_all(c)
    check("a Content-Length over --max-body -> 413 before any of the body",
          status_of(got) == 413 and b"--max-body" in got, got[:200])
    body = json.dumps({"text": text}).encode()
    c = raw(port, POST + b"Content-Length: %d\r\n\r\n" % (len(body) + 50) + body)
    got = read_all(c)
    check("a body shorter than its Content-Length -> 408, never 200",
          status_of(got) == 408 and b"--min-rate" in got, got[:200])
    # 408 before the 40 bytes were sent (the trickle answers "never" after them): not a 200 on a complete body
    st, dt = trickle(port, POST + b"Content-Length: 40\r\n\r\n", b'{"text": "a body a byte a second......"}')
    check("a body a byte a second -> 408 before it is complete", st == 408, (st, dt))
    # not before --idle-timeout (the server never shuts earlier), before the 60 bytes were all sent
    st, dt = trickle(port, b"POST /v1/extract HTTP/1.1\r\n", b"X-Slow: " + b"a" * 60)
    check("headers a byte a second -> 408 at --idle-timeout, not before", st == 408 and dt > IDLE - 0.5, (st, dt))
    # an answer read a byte a second: handed to the socket, the server free
    many = json.dumps({"texts": [text] * 64}).encode()
    c = raw(port, POST + b"Content-Length: %d\r\n\r\n" % len(many) + many, rcvbuf=4096)
    start = b""
    for _ in range(4):
        time.sleep(1)
        start += c.recv(1)
    st, _, _ = s.request("GET", "/health", timeout=600)
    check("a client reading its answer a byte a second: others answered meanwhile",
          st == 200 and start == b"HTTP", (st, start))
    c.close()
    # polled on one kept-alive connection, so that the only other open connection could be this one
    # (a connection per poll might not be reaped yet when the next poll counts)
    poll = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    open_now = None
    for _ in range(10 * (IDLE + 3)):
        poll.request("GET", "/metrics")
        m = re.search(r"^pocketdec_connections (\d+)$", poll.getresponse().read().decode(), re.M)
        open_now = int(m.group(1)) if m else None
        if open_now == 1:
            break
        time.sleep(0.1)
    poll.close()
    check("... and its connection closed after", open_now == 1, f"{open_now} connections open")


def attacker(port, n, stop, stats):
    """n connections from 127.0.0.2 sending headers a byte a second, each
    reconnected when the server shuts it (up to 500 a second)."""
    socks = [None] * n
    while not stop.is_set():
        fresh = 0
        for k in range(n):
            if socks[k] is None and fresh < 500:
                c = socket.socket()
                try:
                    c.settimeout(0.5)
                    c.bind(("127.0.0.2", 0))
                    c.connect(("127.0.0.1", port))
                    c.send(b"POST /v1/extract HTTP/1.1\r\nX-Slow: ")
                    socks[k], fresh = c, fresh + 1
                    stats["opened"] += 1
                except OSError:
                    c.close()
                continue
            if socks[k] is not None:
                try:
                    socks[k].send(b"a")
                except OSError:
                    socks[k].close()
                    socks[k] = None
                    stats["shut"] += 1
        stats["round"] += 1
        stats["held"] = max(stats["held"], sum(c is not None for c in socks))
        stop.wait(1.0)
    for c in socks:
        if c is not None:
            c.close()


def test_slowloris(s, reviews, want, conns, clients, each):
    base_rss, base_threads = proc(s.p.pid)
    samp = Sampler(s.p.pid)
    stop, stats = threading.Event(), {"opened": 0, "shut": 0, "round": 0, "held": 0}
    at = threading.Thread(target=attacker, args=(s.port, conns, stop, stats))
    at.start()
    while stats["shut"] == 0:  # the attack in place: its connections held, shut by the server, reopened
        time.sleep(0.1)
    ids, text = [i for i, _ in reviews], dict(reviews)

    def client(c):
        conn, got = None, []
        for k in range(each):
            rid = ids[(c * each + k) % len(ids)]
            t0 = time.time()
            for _ in range(3):  # an idle keep-alive connection may be closed between two requests
                try:
                    conn = conn or ts.http.client.HTTPConnection("127.0.0.1", s.port, timeout=TIMEOUT)
                    conn.request("POST", "/v1/extract", body=json.dumps({"text": text[rid]}).encode())
                    r = conn.getresponse()
                    got.append((rid, r.status, json.loads(r.read()), time.time() - t0))
                    break
                except (ConnectionError, ts.http.client.RemoteDisconnected):
                    conn = None
        return got
    t0 = time.time()
    out = ts.concurrently(client, [(c,) for c in range(clients)])
    dt = time.time() - t0
    stop.set()
    at.join()
    rss, threads = samp.stop()
    errors = [o for o in out if isinstance(o, Exception)]
    answers = [a for o in out if not isinstance(o, Exception) for a in o]
    right = sum(st == 200 and body == {"records": want[rid]} for rid, st, body, _ in answers)
    slowest = max((a[3] for a in answers), default=0)
    print(f"      slowloris: {stats['opened']} connections opened from 127.0.0.2 ({stats['held']} held at once "
          f"on the client's side, {stats['shut']} shut by the server); {len(answers)} honest requests in "
          f"{dt:.1f} s, slowest {slowest:.2f} s; server RSS {base_rss:.0f} -> peak {rss:.0f} MiB, threads "
          f"{base_threads} -> peak {threads}", flush=True)
    check(f"{conns} slowloris connections from 127.0.0.2: {clients} honest clients x {each} reviews from 127.0.0.1 "
          f"all answered 200 with extract's records, within --timeout",
          not errors and len(answers) == clients * each and right == clients * each,
          (errors[:2], len(answers), right, slowest))
    check("the attack held at most --max-per-client connections, and was shut and reopened; those over it "
          "answered 503 (pocketdec_connections_refused_total)",
          metric(s, "pocketdec_connections_peak") <= PER_CLIENT + clients + 2 and stats["shut"] > 0 and
          metric(s, "pocketdec_connections_refused_total") > 0,
          (metric(s, "pocketdec_connections_peak"), stats))
    check("threads bounded throughout (idle + --max-per-client + the honest clients)",
          threads <= base_threads + PER_CLIENT + clients + 4, (base_threads, threads))
    check("RSS bounded throughout (idle + 64 MiB)", not RSS_CHECKED or rss <= base_rss + 64, (base_rss, rss))
    for _ in range(100):
        now_rss, now_threads = proc(s.p.pid)
        if now_threads <= base_threads:
            break
        time.sleep(0.1)
    print(f"      after: RSS {now_rss:.0f} MiB, threads {now_threads}", flush=True)
    check("back to idle after: the idle threads, RSS within 16 MiB of the peak's start",
          now_threads <= base_threads and (not RSS_CHECKED or now_rss <= base_rss + 16),
          (now_threads, now_rss, base_rss))


def soak(s, reviews, want, n):
    """n requests from 8 keep-alive clients, one in five a good review; the
    rest bad bodies, each with the status it must get."""
    bad = [(b"", 400), (b"{", 400), (b"[1]", 400), (b'{"text": 1}', 400), (b'{"texts": []}', 400),
           (b'{"nope": "x"}', 400), (b"\xff\xfe", 400), (json.dumps({"texts": ["a"] * 40}).encode(), 413),
           (b'{"text": "' + b"a" * 70000 + b'"}', 413)]
    rng = random.Random(7)
    plan = [(rid, None) if rng.random() < 0.2 else (None, bad[rng.randrange(len(bad))]) for rid, _ in
            ((reviews[k % len(reviews)]) for k in range(n))]
    text = dict(reviews)
    samp = Sampler(s.p.pid)
    first_peak = [None]
    done = [0]
    lock = threading.Lock()

    def client(c):
        conn, wrong = None, []
        for k in range(c, n, 8):
            rid, b = plan[k]
            body = json.dumps({"text": text[rid]}).encode() if rid else b[0]
            conn = conn or ts.http.client.HTTPConnection("127.0.0.1", s.port, timeout=TIMEOUT)
            try:
                conn.request("POST", "/v1/extract", body=body)
                r = conn.getresponse()
                data = r.read()
                st = r.status
                if r.getheader("Connection", "").lower() == "close":
                    conn.close()
                    conn = None
            except (ConnectionError, ts.http.client.RemoteDisconnected) as e:
                st, data, conn = repr(e), b"", None
            ok = st == 200 and json.loads(data) == {"records": want[rid]} if rid else st == b[1]
            if not ok:
                wrong.append((k, st, data[:100]))
            with lock:
                done[0] += 1
                if done[0] == 1000:
                    first_peak[0] = max(r for r, _ in samp.samples)
        return wrong
    t0 = time.time()
    out = ts.concurrently(client, [(c,) for c in range(8)])
    dt = time.time() - t0
    peak, threads = samp.stop()
    first = first_peak[0] or peak
    wrong = [w for o in out for w in (o if isinstance(o, list) else [o])]
    print(f"      soak: {n} requests in {dt:.1f} s ({n / dt:.0f}/s); peak RSS {peak:.1f} MiB (first 1,000: "
          f"{first:.1f} MiB), peak threads {threads}", flush=True)
    check(f"soak: {n} requests, good and bad mixed, each answered as expected (no error answered 200)",
          not wrong, wrong[:3])
    check("soak: peak RSS within 10% of the first 1,000 requests' peak", not RSS_CHECKED or peak <= first * 1.10,
          (first, peak))


def main():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    small = not RSS_CHECKED
    conns, clients, each = (int(v) for v in os.environ.get(
        "POCKETDEC_SERVE_ATTACK", "200x4x20" if small else "1000x8x200").split("x"))
    n_soak = int(os.environ.get("POCKETDEC_SERVE_SOAK", "1000" if small else "50000"))
    if hard < conns + 200:
        conns = hard - 200
    reviews = ts.dev_reviews(200)
    want = ts.extract_cli(reviews)
    args = ("--parallel", "2", "--threads", "1", "--max-texts", "32", "--max-body", "65536",
            "--idle-timeout", str(IDLE), "--min-rate", str(MIN_RATE), "--timeout", str(TIMEOUT),
            "--max-per-client", str(PER_CLIENT), "--max-connections", str(max(256, PER_CLIENT + 64)),
            "--max-header", "16384")
    s = ts.first_server(*args)
    try:
        t0 = time.time()
        test_bad_clients(s, reviews[0][1])
        print(f"      bad clients: {time.time() - t0:.1f} s", flush=True)
        soak(s, reviews, want, n_soak)
        test_slowloris(s, reviews, want, conns, clients, each)
    finally:
        check("attack server: SIGTERM -> exit 0", s.stop() == 0, s.log[-5:])
    print(f"{ts.RESULTS.count(True)} passed, {ts.RESULTS.count(False)} failed")
    sys.exit(0 if all(ts.RESULTS) else 1)


if __name__ == "__main__":
    main()

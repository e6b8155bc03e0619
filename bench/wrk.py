#!/usr/bin/env python3
"""`pocketdec serve` under load tools nobody here wrote: Debian's `wrk` and `ab`.

Usage: bench/wrk.py [--pocketdec build/cli/pocketdec] [--model models/tianchi] [--conns 8,32,64,256]
                    [--duration 15] [--per-client 32] [--ab 100,500] [--texts 5] [-- SERVE_ARGS...]

- `pocketdec extract` over the first 200 dev reviews: its reviews/s (its own summary line, the
  model's loading excluded), the reference for the rows below;
- for each --conns C: a fresh `pocketdec serve` (its defaults, plus SERVE_ARGS), and
  `wrk -t 2 -c C -d DURATION --latency --timeout 30s`, keep-alive, all from 127.0.0.1, each request
  POST /v1/extract {"texts": [...]} of --texts reviews of the same 200 in turn: requests answered
  2xx a second (wrk's own figure counts the others too),
  reviews/s, latency percentiles, socket errors, non-2xx answers, and the server's own count of
  the 503s it answered (/metrics);
- --per-client N (0: none): one more row, 2N connections against `--max-per-client N` (those over
  it answered 503 with Retry-After), what the limit costs a client that ignores it;
- --rounds R: the rows run in turn R times; each row's figures are its median round's (by
  requests/s), its errors and non-2xx the sum over the rounds;
- for each --ab C: `ab -c C -n 4C` (a new connection a request): complete, failed, non-2xx.

wrk and ab are installed here when missing (apt-get install -y wrk apache2-utils).
The figures of docs/serve.md ("Many connections from one address") come from this script.
"""
import argparse
import csv
import http.client
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMA = os.path.join(ROOT, "schemas", "tianchi-makeup.yaml")


def setup():
    if shutil.which("wrk") and shutil.which("ab"):
        return
    subprocess.run(["apt-get", "install", "-y", "-qq", "wrk", "apache2-utils"], check=True,
                   stdout=subprocess.DEVNULL)


def dev_reviews(n):
    with open(os.path.join(ROOT, "data", "tianchi", "dev_reviews.csv"), newline="", encoding="utf-8") as f:
        return [(r[0], r[1]) for r in list(csv.reader(f))[1:n + 1]]


def extract_rate(pd, model, reviews):
    with tempfile.TemporaryDirectory() as d:
        inp = os.path.join(d, "in.jsonl")
        with open(inp, "w", encoding="utf-8") as f:
            for i, t in reviews:
                f.write(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n")
        p = subprocess.run([pd, "extract", "--model", model, "--schema", SCHEMA, "--input", inp, "--output",
                            os.path.join(d, "out.jsonl"), "--format", "jsonl"], capture_output=True, text=True)
        m = re.search(r"(\d+) reviews, .* in ([\d.]+) s \(", p.stderr)
        if p.returncode or not m:
            sys.exit("extract failed: " + p.stderr)
        return int(m.group(1)) / max(float(m.group(2)), 1e-9)


class Server:
    def __init__(self, pd, model, args):
        self.p = subprocess.Popen([pd, "serve", "--model", model, "--schema", SCHEMA, "--port", "0", *args],
                                  stderr=subprocess.PIPE, text=True)
        line = self.p.stderr.readline()
        m = re.search(r"listening on http://[^ ]*:(\d+) ", line)
        if not m:
            sys.exit("the server did not start: " + line + self.p.stderr.read())
        self.port = int(m.group(1))
        threading.Thread(target=self.p.stderr.read, daemon=True).start()

    def metric(self, pattern):
        # from another address than the load's, which --max-per-client may hold at its limit
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30, source_address=("127.0.0.2", 0))
        c.request("GET", "/metrics")
        text = c.getresponse().read().decode()
        c.close()
        return sum(int(v) for v in re.findall("^" + pattern + r" (\d+)$", text, re.M))

    def stop(self):
        self.p.terminate()
        self.p.wait(timeout=120)


def lua_script(bodies, path):
    """wrk's script: the bodies in turn, each thread from its own start."""
    with open(path, "w", encoding="utf-8") as f:
        f.write("local bodies = {\n")
        for b in bodies:
            f.write("[==[" + b + "]==],\n")
        f.write("}\nlocal k = 0\n"
                "function setup(thread) thread:set('start', math.random(#bodies)) end\n"
                "function init(args) k = tonumber(start) or 0 end\n"
                "function request()\n  k = k % #bodies + 1\n"
                "  return wrk.format('POST', '/v1/extract', {['Content-Type'] = 'application/json'}, bodies[k])\nend\n")


def ms(v, unit):
    return float(v) * {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 6e4}[unit]


def run_wrk(port, conns, duration, script):
    p = subprocess.run(["wrk", "-t", "2", "-c", str(conns), "-d", f"{duration}s", "--latency", "--timeout", "30s",
                        "-s", script, f"http://127.0.0.1:{port}"], capture_output=True, text=True)
    out = p.stdout
    pct = {k: ms(v, u) for k, v, u in re.findall(r"^\s+(50|90|99)%\s+([\d.]+)(us|ms|s|m)\s*$", out, re.M)}
    sock = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    total = re.search(r"(\d+) requests in ([\d.]+)(ms|s|m),", out)
    if not total:
        sys.exit("wrk failed: " + out + p.stderr)
    secs = ms(total.group(2), total.group(3)) / 1e3
    n_non2xx = int(non2xx.group(1)) if non2xx else 0
    return {"rps": (int(total.group(1)) - n_non2xx) / secs, "all": int(total.group(1)) / secs, "p50": pct.get("50"), "p90": pct.get("90"), "p99": pct.get("99"),
            "sock": tuple(int(x) for x in sock.groups()) if sock else (0, 0, 0, 0),
            "non2xx": n_non2xx}


def run_ab(port, conns, body_path):
    n = 4 * conns
    p = subprocess.run(["ab", "-q", "-c", str(conns), "-n", str(n), "-s", "60", "-p", body_path, "-T",
                        "application/json", f"http://127.0.0.1:{port}/v1/extract"], capture_output=True, text=True)
    get = lambda k: re.search(k + r":\s+([\d.]+)", p.stdout)  # noqa: E731
    done, failed, non2xx, rps = get("Complete requests"), get("Failed requests"), get("Non-2xx responses"), \
        get("Requests per second")
    return {"n": n, "rc": p.returncode, "done": int(done.group(1)) if done else 0,
            "failed": int(failed.group(1)) if failed else None, "non2xx": int(non2xx.group(1)) if non2xx else 0,
            "rps": float(rps.group(1)) if rps else 0.0, "err": (p.stderr.strip().splitlines() or [""])[-1]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pocketdec", default=os.path.join(ROOT, "build", "cli", "pocketdec"))
    ap.add_argument("--model", default=os.path.join(ROOT, "models", "tianchi"))
    ap.add_argument("--conns", default="8,32,64,256")
    ap.add_argument("--duration", type=int, default=15)
    ap.add_argument("--per-client", type=int, default=32)
    ap.add_argument("--ab", default="100,500")
    ap.add_argument("--texts", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("serve_args", nargs="*")
    a = ap.parse_args()
    setup()
    reviews = dev_reviews(200)
    texts = [t for _, t in reviews]
    bodies = [json.dumps({"texts": texts[k:k + a.texts]}, ensure_ascii=False)
              for k in range(0, len(texts) - a.texts + 1, a.texts)]
    ext = extract_rate(a.pocketdec, a.model, reviews)
    print(f"pocketdec extract: {len(reviews)} reviews, {ext:.1f} reviews/s")
    print(f"\n| connections | server | 2xx requests/s | reviews/s | vs extract | p50 ms | p90 ms | p99 ms | "
          f"socket errors (connect/read/write/timeout) | non-2xx | of them 503 (server's count) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    rows = [(c, []) for c in (int(x) for x in a.conns.split(","))]
    if a.per_client:
        rows.append((2 * a.per_client, ["--max-per-client", str(a.per_client)]))
    with tempfile.TemporaryDirectory() as d:
        script = os.path.join(d, "bodies.lua")
        lua_script(bodies, script)
        runs = {k: [] for k in range(len(rows))}
        for _ in range(a.rounds):  # the rows in turn, each round: a drifting machine moves them alike
            for k, (conns, extra) in enumerate(rows):
                s = Server(a.pocketdec, a.model, [*a.serve_args, *extra])
                try:
                    r = run_wrk(s.port, conns, a.duration, script)
                    r["busy"] = s.metric(r'pocketdec_requests_total\{endpoint="/v1/extract",status="503"\}') + \
                        s.metric("pocketdec_connections_refused_total")
                finally:
                    s.stop()
                runs[k].append(r)
        for k, (conns, extra) in enumerate(rows):
            r = sorted(runs[k], key=lambda x: x["rps"])[len(runs[k]) // 2]  # the median round's
            r["sock"] = tuple(sum(x["sock"][i] for x in runs[k]) for i in range(4))
            r["non2xx"], busy = sum(x["non2xx"] for x in runs[k]), sum(x["busy"] for x in runs[k])
            f = lambda v: "" if v is None else f"{v:.0f}"  # noqa: E731
            label = " ".join([*a.serve_args, *extra]) or "defaults"
            print(f"| {conns} | {label} | {r['rps']:.1f} | "
                  f"{r['rps'] * a.texts:.1f} | {r['rps'] * a.texts / ext:.2f} | {f(r['p50'])} | {f(r['p90'])} | "
                  f"{f(r['p99'])} | {'/'.join(map(str, r['sock']))} | {r['non2xx']} | {busy} |", flush=True)
        body_path = os.path.join(d, "body.json")
        with open(body_path, "w", encoding="utf-8") as fb:
            fb.write(bodies[0])
        print("\n| ab connections | requests | complete | failed | non-2xx | requests/s | last error |")
        print("|---|---|---|---|---|---|---|")
        for conns in (int(x) for x in a.ab.split(",") if x):
            s = Server(a.pocketdec, a.model, a.serve_args)
            try:
                r = run_ab(s.port, conns, body_path)
            finally:
                s.stop()
            print(f"| {conns} | {r['n']} | {r['done']} | {r['failed']} | {r['non2xx']} | {r['rps']:.1f} | "
                  f"{r['err'] if r['rc'] else ''} |", flush=True)


if __name__ == "__main__":
    main()

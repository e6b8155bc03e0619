#!/usr/bin/python3
"""bench/serve.py - `pocketdec serve` under load against `pocketdec extract` on the
same reviews and model, and the Dask path against one process.

Usage: bench/serve.py [--pocketdec PATH] [--models default,gen,pocket] [--reviews N]
                      [--clients 1,4,16] [--threads T] [--parallel N] [--dask] [--dask-times K]

For each model, the first N dev reviews (data/tianchi/dev_reviews.csv; repeated when N
is past the 283 of the split):
  - `pocketdec extract --format jsonl` over them: the tagger head (models/tianchi, one
    pass a review, no --parallel) with --threads T; generation (models/tianchi-gen, and
    the MNN-Pocket-0.3B shape in Q4_0 with random weights and the real Qwen3 vocabulary)
    with --parallel 8 --threads T. Its reviews/s is the command's own summary line
    (loading the model excluded).
  - `pocketdec serve` (a fresh server for each client count): the tagger with one engine
    of T threads (the default) and with T engines of one thread (--parallel T --threads 1),
    generation with one engine of --parallel N
    texts in flight (default 8) and T threads; C keep-alive clients send the reviews one
    request each (each review once, dealt in turn), as fast as they are answered.
    reviews/s = N / the wall time from the first request to the last answer; p50 and p99
    of the request latencies; the server's peak RSS (VmHWM); "wrong" counts answers
    whose records differ from the command's for that review (must be 0).
  --dask: the default model over the dev reviews K times (--dask-times, default 4) by one
    `pocketdec extract --threads 2` and by pocketdec.dask on a LocalCluster of 2 worker
    processes of one thread (the cluster's start not counted); the outputs must be equal.

The pocket-shape file is written once by tools/testmodels/make_model.py into
$PD_BENCH_CACHE (default build-bench/models/, shared with bench/run.sh). The machine is
shared: compare the ratios of one run, not absolute figures across runs.
"""
import argparse
import csv
import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMA = os.path.join(ROOT, "schemas", "tianchi-makeup.yaml")
CACHE = os.environ.get("PD_BENCH_CACHE", os.path.join(ROOT, "build-bench"))


def log(msg):
    print("bench/serve.py: " + msg, file=sys.stderr, flush=True)


def dev_reviews(n):
    with open(os.path.join(ROOT, "data", "tianchi", "dev_reviews.csv"), newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))[1:]
    return [(f"{k // len(rows)}-{rows[k % len(rows)][0]}", rows[k % len(rows)][1]) for k in range(n)]


def pocket_model():
    path = os.path.join(CACHE, "models", "pocket-qwen3tok-q4_0.gguf")
    if not os.path.exists(path):
        log("writing " + path)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "tools", "testmodels", "make_model.py"), "--preset",
                        "pocket", "--format", "gguf-q4_0", "--vocab", "151936", "--tokenizer",
                        os.path.join(ROOT, "tests", "fixtures", "qwen3", "tokenizer.json"), "--out", path + ".tmp",
                        "--quiet"], check=True)
        os.replace(path + ".tmp", path)
    return path


def write_jsonl(reviews, path):
    with open(path, "w", encoding="utf-8") as f:
        for i, t in reviews:
            f.write(json.dumps({"id": i, "text": t}, ensure_ascii=False) + "\n")


def extract(pd, model, reviews, args):
    """The command's records of each review, and its reviews/s."""
    with tempfile.TemporaryDirectory() as d:
        inp, out = os.path.join(d, "in.jsonl"), os.path.join(d, "out.jsonl")
        write_jsonl(reviews, inp)
        p = subprocess.run([pd, "extract", "--model", model, "--schema", SCHEMA, "--input", inp, "--output", out,
                            "--format", "jsonl", *args], capture_output=True, text=True)
        if p.returncode:
            sys.exit("extract failed: " + p.stderr)
        m = re.search(r"(\d+) reviews, .* in ([\d.]+) s \(", p.stderr)
        rate = int(m.group(1)) / max(float(m.group(2)), 1e-9)
        with open(out, encoding="utf-8") as f:
            return {json.loads(l)["id"]: json.loads(l)["records"] for l in f}, rate


def peak_rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"VmHWM:\s+(\d+) kB", f.read()).group(1)) / 1024


def serve_run(pd, model, reviews, want, clients, args):
    """One server, `clients` clients over the reviews: (reviews/s, p50 ms, p99 ms, peak MB, wrong)."""
    p = subprocess.Popen([pd, "serve", "--model", model, "--schema", SCHEMA, "--port", "0", "--queue", "1024",
                          "--max-texts", "1", "--timeout", "3600", *args], stderr=subprocess.PIPE, text=True)
    line = p.stderr.readline()
    m = re.search(r"listening on http://[^ ]*:(\d+) ", line)
    if not m:
        sys.exit("the server did not start: " + line + p.stderr.read())
    port = int(m.group(1))
    threading.Thread(target=p.stderr.read, daemon=True).start()
    lat, wrong, lock = [], [0], threading.Lock()

    def client(c):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=3600)
        for rid, text in reviews[c::clients]:
            t0 = time.perf_counter()
            conn.request("POST", "/v1/extract", body=json.dumps({"text": text}).encode(),
                         headers={"Content-Type": "application/json"})
            r = conn.getresponse()
            body = json.loads(r.read())
            dt = time.perf_counter() - t0
            with lock:
                lat.append(dt)
                wrong[0] += r.status != 200 or body.get("records") != want[rid]
        conn.close()
    ts = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    t0 = time.perf_counter()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    wall = time.perf_counter() - t0
    peak = peak_rss_mb(p.pid)
    p.terminate()
    p.wait()
    lat.sort()
    p99 = lat[min(len(lat) - 1, int(0.99 * len(lat)))]
    return len(reviews) / wall, 1000 * statistics.median(lat), 1000 * p99, peak, wrong[0]


def bench_model(pd, name, model, reviews, clients, threads, parallel):
    tagger = name == "default"
    log(f"{name}: extract over {len(reviews)} reviews")
    ex_args = ["--threads", str(threads)] + ([] if tagger else ["--parallel", "8"])
    want, rate = extract(pd, model, reviews, ex_args)
    # the tagger: one engine of every thread (the default), and an engine a thread
    configs = [["--parallel", "1", "--threads", str(threads)], ["--parallel", str(threads), "--threads", "1"]] \
        if tagger else [["--parallel", str(parallel), "--threads", str(threads)]]
    print(f"| {name} | `extract {' '.join(ex_args)}` | | {rate:.1f} | 1.00 | | | | |", flush=True)
    for sv_args in configs:
        for c in clients:
            log(f"{name}: serve {' '.join(sv_args)}, {c} clients")
            rps, p50, p99, peak, wrong = serve_run(pd, model, reviews, want, c, sv_args)
            print(f"| {name} | `serve {' '.join(sv_args)}` | {c} | {rps:.1f} | {rps / rate:.2f} | {p50:.0f} "
                  f"| {p99:.0f} | {peak:.0f} | {wrong} |", flush=True)


def bench_dask(pd, times):
    """One process against pocketdec.dask on 2 workers, the same bytes."""
    lib = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(pd))), "libpocketdec.so")
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), POCKETDEC_LIBRARY=lib)
    code = r'''
import json, sys, time
import distributed
from pocketdec.dask import extract_jsonl
inp, out, model, schema = sys.argv[1:5]
with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as c, \
        distributed.Client(c) as client:
    client.run(lambda: None)
    t0 = time.perf_counter()
    st = extract_jsonl(inp, model, schema, out, npartitions=8, client=client)
    print(json.dumps({"wall": time.perf_counter() - t0, "reviews": st["reviews"]}))
'''
    model = os.path.join(ROOT, "models", "tianchi")
    with tempfile.TemporaryDirectory() as d:
        inp = os.path.join(d, "in.jsonl")
        write_jsonl(dev_reviews(283 * times), inp)
        one, dsk = os.path.join(d, "one.jsonl"), os.path.join(d, "dask.jsonl")
        log(f"dask: one process over {283 * times} reviews")
        t0 = time.perf_counter()
        subprocess.run([pd, "extract", "--model", model, "--schema", SCHEMA, "--input", inp, "--output", one,
                        "--format", "jsonl", "--threads", "2"], check=True, capture_output=True)
        wall_one = time.perf_counter() - t0
        log("dask: LocalCluster(n_workers=2, threads_per_worker=1)")
        p = subprocess.run(["/usr/bin/python3", "-c", code, inp, dsk, model, SCHEMA], env=env, capture_output=True,
                           text=True)
        if p.returncode:
            sys.exit("dask failed: " + p.stderr[-2000:])
        r = json.loads(p.stdout.strip().splitlines()[-1])
        same = open(one, "rb").read() == open(dsk, "rb").read()
        n = 283 * times
        print(f"\n| run | reviews | wall s | reviews/s | same bytes |\n|---|---|---|---|---|\n"
              f"| `extract --threads 2`, one process (model load included) | {n} | {wall_one:.2f} | {n / wall_one:.1f} | |\n"
              f"| `pocketdec.dask.extract_jsonl`, 2 workers x 1 thread (cluster start excluded) | {r['reviews']} | "
              f"{r['wall']:.2f} | {r['reviews'] / r['wall']:.1f} | {'yes' if same else 'NO'} |")


def main():
    ap = argparse.ArgumentParser(usage=__doc__)
    ap.add_argument("--pocketdec", default=os.path.join(ROOT, "build", "cli", "pocketdec"))
    ap.add_argument("--models", default="default,gen")
    ap.add_argument("--reviews", type=int, default=283)
    ap.add_argument("--clients", default="1,4,16")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--parallel", type=int, default=8)
    ap.add_argument("--dask", action="store_true")
    ap.add_argument("--dask-times", type=int, default=4)
    a = ap.parse_args()
    clients = [int(c) for c in a.clients.split(",")]
    models = {"default": os.path.join(ROOT, "models", "tianchi"), "gen": os.path.join(ROOT, "models", "tianchi-gen")}
    print(f"pocketdec serve against extract: first {a.reviews} dev reviews, Tianchi schema, {a.threads} threads, "
          f"load average {os.getloadavg()[0]:.1f} at the start\n")
    print("| model | run | clients | reviews/s | vs extract | p50 ms | p99 ms | peak RSS MB | wrong |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in a.models.split(","):
        model = pocket_model() if name == "pocket" else models[name]
        bench_model(a.pocketdec, name, model, dev_reviews(a.reviews), clients, a.threads, a.parallel)
    if a.dask:
        bench_dask(a.pocketdec, a.dask_times)


if __name__ == "__main__":
    main()

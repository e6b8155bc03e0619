#!/usr/bin/python3
"""What a person waits for at /teach (`pocketdec serve --teach`, docs/serve.md "Teach it"): the server's
start (the model loaded, the reviews not yet labelled ranked), then N times GET /v1/teach/next (one model
pass, the progress) and POST /v1/teach/answer with the model's records (checked, written, fsync'ed).
Prints the start time and the medians and p90s. The labels go to a temporary file.

Usage: bench/teach.py POCKETDEC SOURCE_ROOT [REVIEWS] [N=50] [THREADS=2]"""
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request


def main(argv):
    pd, root = argv[1], argv[2]
    reviews = argv[3] if len(argv) > 3 else os.path.join(root, "data", "tianchi", "dev_reviews.csv")
    n = int(argv[4]) if len(argv) > 4 else 50
    threads = argv[5] if len(argv) > 5 else "2"
    labels = os.path.join(tempfile.mkdtemp(prefix="pd-bench-teach-"), "labels.jsonl")
    t0 = time.time()
    p = subprocess.Popen([pd, "serve", "--port", "0", "--threads", threads, "--model", os.path.join(root, "models", "tianchi"),
                          "--schema", os.path.join(root, "schemas", "tianchi-makeup.yaml"), "--teach", reviews,
                          "--labels", labels], stderr=subprocess.PIPE, text=True)
    url = None
    for line in p.stderr:
        if "listening on" in line:
            url = line.split("listening on ")[1].split()[0]
            break
    if not url:
        sys.exit("pocketdec serve did not start")
    print("start (load, rank the reviews): %.2f s" % (time.time() - t0))

    def call(path, body=None):
        req = urllib.request.Request(url + path, data=None if body is None else json.dumps(body).encode())
        with urllib.request.urlopen(req, timeout=600) as r:
            return json.load(r)

    nexts, answers = [], []
    for _ in range(n):
        t = time.time()
        r = call("/v1/teach/next")["review"]
        nexts.append(time.time() - t)
        if r is None:
            break
        t = time.time()
        call("/v1/teach/answer", {"id": r["id"], "records": r["records"]})
        answers.append(time.time() - t)
    p.terminate()
    p.wait()
    for name, v in (("next (a model pass, the progress)", nexts), ("answer (checked, written, fsync'ed)", answers)):
        v.sort()
        print("%s: median %.1f ms, p90 %.1f ms over %d" % (name, 1000 * v[len(v) // 2], 1000 * v[int(len(v) * 0.9)], len(v)))


if __name__ == "__main__":
    main(sys.argv)

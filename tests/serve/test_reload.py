#!/usr/bin/python3
"""`pocketdec serve` taking a new bundle without a restart (stdlib only).

Usage: test_reload.py POCKETDEC SOURCE_ROOT

Starts the server on the bundled default (models/tianchi, a tagger head) with
an API key, and checks:
- POST /v1/reload {"model": models/tianchi-gen} answers that bundle's
  /v1/info (a pointer head, score, generation 2), after which /v1/extract
  gives `pocketdec extract --model models/tianchi-gen`'s records and
  /v1/score answers; no body reloads the start's bundle, whose records come
  back; SIGHUP does the same (the server says so on stderr); /v1/summarize
  estimates with the rates of the bundle serving (tianchi-gen has none: the
  estimates are the counts; back on the default, its calibration.json's);
- refused, nothing changed and the old bundle serving on: no key (401); a
  folder that does not exist, a bundle whose head is cut short (422, with
  the loader's message), a bundle whose calibration.json is not one (422
  naming it); a body not JSON, "model" not a string, an unknown
  field (400);
- reloads while 4 clients send requests of 3 reviews: every request answered
  200 with the records of one bundle for all its reviews (never a mix, never
  an error), requests sent after the last reload answered on its bundle, and
  the old engines ended after (pocketdec_engines back to 1).
Prints "N passed, N failed"; exits 77 without libmicrohttpd.
"""
import json
import os
import shutil
import signal
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_serve as ts  # noqa: E402 - the server and client helpers, with the same argv
from test_serve import check  # noqa: E402

KEY = "reload-key"
AUTH = {"Authorization": "Bearer " + KEY}
GEN = os.path.join(ts.ROOT, "models", "tianchi-gen")


def reload(s, body=None, headers=AUTH):
    st, _, data = s.request("POST", "/v1/reload", None if body is None else json.dumps(body), headers, timeout=600)
    return st, json.loads(data) if data else None


def extract(s, texts):
    return s.post("/v1/extract", {"texts": texts}, AUTH, timeout=600)


def records_of(body):
    return [r["records"] for r in body["results"]]


def same(a, b):
    """a and b alike, their numbers within 2e-3: the generative bundle's texts
    share joint passes with other clients' in the server, which moves its
    probabilities by float rounding (docs/serve.md, "How it works"); the two
    bundles' probabilities differ by far more."""
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and abs(a - b) <= 2e-3
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


def summary_rates(s):
    """The rates /v1/summarize estimated a complaint's cell with, and the estimate."""
    review = {"id": "1", "text": "很好用，贵", "records": [{"aspect": "_", "opinion": "贵", "category": "价格", "polarity": "负面"}]}
    st, _, body = s.post("/v1/summarize", {"reviews": [review]}, AUTH)
    return (body["polarity"]["负面"]["rates"], body["polarity"]["负面"]["estimate"]) if st == 200 else (st, body)


def test_swap(s, texts, want_tag, want_gen):
    rates, estimate = summary_rates(s)
    check("/v1/summarize on the default: its calibration.json's rates (a complaint counts more than 1)",
          rates == "polarity" and estimate > 1, (rates, estimate))
    st, info = reload(s, {"model": GEN})
    check("POST /v1/reload {model: tianchi-gen} -> 200 with its /v1/info (pointer head, score, generation 2)",
          st == 200 and info["head"] == "pointer" and info["score"] is True and info["generation"] == 2, (st, info))
    st, _, body = extract(s, texts)
    check("... then /v1/extract gives extract --model tianchi-gen's records", st == 200 and same(records_of(body), want_gen),
          (st, str(body)[:300]))
    st, _, body = s.post("/v1/score", {"text": "颜色很正", "question": "属性：颜色；观点：很正", "candidates": ["功效/正面", "整体/正面"]},
                         AUTH)
    check("... and /v1/score answers (the new bundle's pointer head)", st == 200 and len(body["candidates"]) == 2,
          (st, body))
    check("... and /v1/summarize has no rates (tianchi-gen has no calibration.json): the counts",
          summary_rates(s) == ("none", 1), summary_rates(s))
    st, info = reload(s)
    check("POST /v1/reload with no body -> the bundle started with (tagger head, generation 3)",
          st == 200 and info["head"] == "tagger" and info["generation"] == 3, (st, info))
    st, _, body = extract(s, texts)
    check("... whose records come back", st == 200 and records_of(body) == want_tag, (st, str(body)[:300]))
    st, _, body = s.post("/v1/score", {"text": "x", "candidates": ["a"]}, AUTH)
    check("... and /v1/score is 422 again (a tagger head)", st == 422, (st, body))
    check("... and /v1/summarize its rates again", summary_rates(s)[0] == "polarity", summary_rates(s))


def test_refused(s, texts, want_tag, tmp):
    bad = os.path.join(tmp, "cut")  # the bundle, its head's weights cut short
    os.mkdir(bad)
    for part in ("base", "adapter"):
        os.symlink(os.path.join(ts.MODEL, part), os.path.join(bad, part))
    shutil.copytree(os.path.join(ts.MODEL, "head"), os.path.join(bad, "head"))
    weights = os.path.join(bad, "head", "head.safetensors")
    with open(weights, "r+b") as f:
        f.truncate(os.path.getsize(weights) // 2)
    rates = os.path.join(tmp, "rates")  # the bundle, its calibration.json not JSON
    os.mkdir(rates)
    for part in ("base", "adapter", "head"):
        os.symlink(os.path.join(ts.MODEL, part), os.path.join(rates, part))
    with open(os.path.join(rates, "calibration.json"), "w") as f:
        f.write("{")
    cases = [("no key -> 401", {"model": GEN}, {}, 401, "API key"),
             ("a folder that does not exist -> 422 naming it", {"model": os.path.join(tmp, "nothing")}, AUTH, 422,
              "nothing"),
             ("a bundle whose head is cut short -> 422", {"model": bad}, AUTH, 422, "old one serves on"),
             ("a bundle whose calibration.json is not JSON -> 422 naming it", {"model": rates}, AUTH, 422,
              "calibration.json"),
             ("\"model\" not a string -> 400", {"model": 3}, AUTH, 400, "\"model\""),
             ("an unknown field -> 400", {"model": GEN, "head": "x"}, AUTH, 400, "head")]
    for what, body, headers, want_st, want_msg in cases:
        st, got = reload(s, body, headers)
        check("reload refused: " + what, st == want_st and want_msg in got["error"], (st, got))
    st, _, data = s.request("POST", "/v1/reload", "{", AUTH)
    check("reload refused: a body not JSON -> 400", st == 400, (st, data))
    st, _, info = s.request("GET", "/v1/info", None, AUTH)
    info = json.loads(info)
    st2, _, body = extract(s, texts)
    check("... none changed anything: generation 3, the tagger's records",
          info["generation"] == 3 and info["head"] == "tagger" and st2 == 200 and records_of(body) == want_tag,
          (info, st2))
    m = s.request("GET", "/metrics", None, AUTH)[2].decode()
    check("metrics: reloads loaded 2, refused 3 (the loader's and the rates'), generation 3",
          'pocketdec_reloads_total{result="loaded"} 2' in m and 'pocketdec_reloads_total{result="refused"} 3' in m
          and "pocketdec_model_generation 3" in m, m[-600:])


def test_sighup(s):
    s.p.send_signal(signal.SIGHUP)
    check("SIGHUP: the server reloads and says so", ts.wait_log(s, "SIGHUP: reload loaded"), s.log[-3:])
    st, _, info = s.request("GET", "/v1/info", None, AUTH)
    check("... generation 4, the bundle started with", json.loads(info)["generation"] == 4, info)


def test_concurrent(s, reviews, want_tag, want_gen, n_reloads):
    """Clients send requests while the server reloads: each is answered 200,
    on one bundle whole. After each reload's answer the next waits until
    every client has had a request sent after it answered."""
    groups = [reviews[k:k + 3] for k in range(0, len(reviews) - 2, 3)]
    stop, lock, phase = threading.Event(), threading.Lock(), [0]
    after = {}  # client -> the phase its latest answered request was sent in

    def client(c):
        conn = ts.http.client.HTTPConnection("127.0.0.1", s.port, timeout=600)
        out, k = [], c
        while not stop.is_set():
            g = groups[k % len(groups)]
            k += 1
            with lock:
                sent_in = phase[0]
            conn.request("POST", "/v1/extract", body=json.dumps({"texts": [t for _, t in g]}).encode(), headers=AUTH)
            r = conn.getresponse()
            body = r.read()
            out.append((sent_in, [i for i, _ in g], r.status, json.loads(body)))
            with lock:
                after[c] = sent_in
        conn.close()
        return out
    clients = 4
    threads_out = [None] * clients

    def run(c):
        try:
            threads_out[c] = client(c)
        except Exception as e:  # noqa: BLE001 - reported by the check
            threads_out[c] = e
    th = [threading.Thread(target=run, args=(c,)) for c in range(clients)]
    for t in th:
        t.start()
    statuses = []
    for k in range(n_reloads):
        st, info = reload(s, {"model": GEN} if k % 2 == 0 else None)
        statuses.append(st)
        with lock:
            phase[0] = k + 1
        while True:  # every client has had a request sent after this reload answered (or has failed)
            with lock:
                seen = all(after.get(c, -1) >= k + 1 for c in range(clients))
            if seen or any(isinstance(o, Exception) for o in threads_out):
                break
            ts.time.sleep(0.01)
    stop.set()
    for t in th:
        t.join()
    errors = [o for o in threads_out if isinstance(o, Exception)]
    answers = [a for o in threads_out if isinstance(o, list) for a in o]
    final_gen = n_reloads % 2 == 1  # odd: the last reload was to tianchi-gen
    whole, on_final, broken = 0, 0, []
    for sent_in, ids, st, body in answers:
        got = [r.get("records") for r in body.get("results", [])] if st == 200 else None
        tag, gen = got == [want_tag[i] for i in ids], same(got, [want_gen[i] for i in ids])
        whole += tag or gen
        if not (tag or gen):
            broken.append((ids, st, str(body)[:400], [want_tag[i] for i in ids], [want_gen[i] for i in ids]))
        if sent_in == n_reloads:
            on_final += gen if final_gen else tag
    n_final = sum(a[0] == n_reloads for a in answers)
    print(f"      {len(answers)} requests during {n_reloads} reloads: {whole} whole on one bundle; "
          f"reloads answered {statuses}", flush=True)
    check(f"{n_reloads} reloads while {clients} clients send requests: every reload 200, every request 200 "
          f"with one bundle's records for all its reviews",
          not errors and statuses == [200] * n_reloads and answers and whole == len(answers),
          (errors[:2], statuses, whole, len(answers), broken[:1]))
    check("... the requests sent after the last reload answered on its bundle", n_final >= clients and
          on_final == n_final, (n_final, on_final))
    while True:  # the old engines end once their requests are answered: waited on, as the server reports it
        text = s.request("GET", "/metrics", None, AUTH)[2].decode()
        if ts.metric_of(text, "pocketdec_engines") == 1:
            break
        ts.time.sleep(0.01)
    check("... and the old models' engines ended (pocketdec_engines 1) with the last reload's model serving",
          ts.metric_of(text, "pocketdec_model_generation") == 4 + n_reloads, text[-400:])


def main():
    reviews = ts.dev_reviews(int(os.environ.get("POCKETDEC_SERVE_RELOAD_REVIEWS", "12")))
    want_tag, want_gen = ts.extract_cli(reviews), ts.extract_cli(reviews, GEN)
    texts = [t for _, t in reviews[:6]]
    ids = [i for i, _ in reviews[:6]]
    # --timeout: a request never answered 504 for a slow machine (a sanitizer build under load)
    s = ts.first_server("--api-key", KEY, "--threads", "1", "--parallel", "2", "--timeout", "3600")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            test_swap(s, texts, [want_tag[i] for i in ids], [want_gen[i] for i in ids])
            test_refused(s, texts, [want_tag[i] for i in ids], tmp)
            test_sighup(s)
            test_concurrent(s, reviews, want_tag, want_gen, 4)
    finally:
        check("reload server: SIGTERM -> exit 0", s.stop() == 0, s.log[-5:])
    print(f"{ts.RESULTS.count(True)} passed, {ts.RESULTS.count(False)} failed")
    sys.exit(0 if all(ts.RESULTS) else 1)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""End-to-end tests of `pocketdec score` against the numpy reference of make_head.py.

Usage: test_score.py POCKETDEC FIXTURES/cases.json
"""
import json
import subprocess
import sys

PD, CASES = sys.argv[1:3]
DOC = json.load(open(CASES))
RESULTS = []


def run(*args, stdin=None):
    p = subprocess.run([PD, "score", *args], input=stdin, capture_output=True, timeout=120)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def check(name, cond, detail=""):
    RESULTS.append(bool(cond))
    print(("ok    " if cond else "FAIL  ") + name + ("" if cond else "  " + str(detail)[:400]))


def close(got, want, tol):
    scale = max([1.0] + [abs(w) for w in want])
    return len(got) == len(want) and all(abs(g - w) <= tol * scale for g, w in zip(got, want))


def block_quantized(model, _seen={}):
    """Block-quantized models multiply int8-quantized activations (as llama.cpp does): within 3%."""
    if model not in _seen:
        p = subprocess.run([PD, "info", "--model", model], capture_output=True, timeout=120)
        dtypes = json.loads(p.stdout).get("tensor_dtypes", {}) if p.returncode == 0 else {}
        _seen[model] = any(q in dtypes for q in ("Q8_0", "Q4_0", "Q4_1"))
    return _seen[model]


def case_args(c, explain=True):
    args = ["--model", c["model"], "--text", c["text"], "--question", c["question"], "--layout", c["layout"]]
    if c["head"]:
        args += ["--head", c["head"]]
    for cand in c["candidates"]:
        args += ["--candidate", cand]
    return args + (["--explain"] if explain else [])


def test_reference():
    for c in DOC["cases"]:
        rc, out, err = run(*case_args(c))
        if rc:
            check(c["name"], False, err)
            continue
        got = json.loads(out)
        cands = got["candidates"]
        quant = block_quantized(c["model"])
        check(c["name"] + " scores", close([x["score"] for x in cands], c["scores"], 3e-2 if quant else 5e-6), out)
        # quantized: probabilities within 0.06, as test_heads.c's QUANT_PROB_TOL explains
        check(c["name"] + " probs", close([x["prob"] for x in cands], c["probs"], 6e-2 if quant else 1e-5), out)
        check(c["name"] + " labels and counts",
              [x["label"] for x in cands] == c["candidates"] and got["forward_passes"] == 1
              and got["prompt_tokens"] == len(c["ids"]), out)
        want_q = None if c["query"] is None else {"index": c["query"], "position": c["positions"][c["query"]]}
        check(c["name"] + " explain", got["tokens"] == c["ids"] and got["positions"] == c["positions"]
              and got["query"] == want_q, out)
        if "key_index" in c:
            check(c["name"] + " keys", [k["index"] for k in got["keys"]] == c["key_index"], out)


def test_jsonl():
    c = next(c for c in DOC["cases"] if c["name"] == "a/pointer/parallel")
    line = json.dumps({"text": c["text"], "question": c["question"], "candidates": c["candidates"]})
    other = json.dumps({"text": "1", "question": "?", "candidates": ["2", "3"]})
    rc, out, err = run("--model", c["model"], "--head", c["head"], "--layout", "parallel", "--jsonl",
                       stdin=(line + "\n" + line + "\n\n" + other + "\n").encode())
    rows = [json.loads(x) for x in out.splitlines()] if rc == 0 else []
    check("jsonl: one line per decision", rc == 0 and len(rows) == 3, err)
    for k in range(2):
        check(f"jsonl line {k + 1} (repeated text reuses the cache) matches the reference",
              rows and close([x["score"] for x in rows[k]["candidates"]], c["scores"], 5e-6)
              and rows[k]["forward_passes"] == 1, out)
    rc, out, err = run("--model", c["model"], "--jsonl", stdin=(line + "\n{\"text\": 5}\n").encode())
    check("jsonl: bad line exits 1 naming it", rc == 1 and "stdin:2" in err and len(out.splitlines()) == 1, err)
    # every refusal is one line "stdin:LINE: what is wrong", after the lines before it were scored
    bad = [
        (b'{"question": "?"}', 'missing key "text"'),
        (b'{"text": "1", "question": null}', '"question" must be a string, got null'),
        (b'{"text": "1", "candidates": "2"}', '"candidates" must be an array of strings, got a string'),
        (b'{"text": "1", "candidates": ["2", 3]}', '"candidates"[1] must be a string, got an integer'),
        (json.dumps({"text": "1", "candidates": ["2"] * 4097}).encode(), "4097 entries, more than the limit of 4096"),
        (b'["1"]', "expected a JSON object, got an array"),
        (b'{"text": "1", "text": "2", "candidates": ["2"]}', "duplicate object key"),
        (b'{"text": "\xff", "candidates": ["2"]}', "invalid UTF-8 at byte 11"),
        (b'{"text": "1", "candidates": ["2"]', "malformed JSON"),
    ]
    for text, needle in bad:
        rc, out, err = run("--model", c["model"], "--jsonl", stdin=line.encode() + b"\r\n \n" + text + b"\n")
        check(f"jsonl: refused with '{needle}'", rc == 1 and "stdin:3: " in err and needle in err and err.count("\n") == 1
              and len(out.splitlines()) == 1, err)
    many = ["--candidate", "x"] * 4097
    rc, _, err = run("--model", c["model"], "--text", "1", *many)
    check("4097 --candidate are refused before the model runs", rc == 1 and "limit of 4096" in err, err)


def test_errors():
    a = DOC["model_a"]
    rc, _, err = run("--model", a, "--candidate", "1")
    check("no --text exits 2", rc == 2 and "--text" in err, err)
    rc, _, err = run("--model", a, "--text", "1", "--candidate", "1", "--layout", "diagonal")
    check("bad --layout exits 2", rc == 2 and "--layout" in err, err)
    bad = next(b for b in DOC["bad_heads"] if b["name"] == "hidden size")
    rc, _, err = run("--model", a, "--head", bad["dir"], "--text", "1", "--candidate", "1")
    check("bad head exits 1 with one line", rc == 1 and err.count("\n") == 1 and "q.weight" in err, err)
    cls = next(c for c in DOC["cases"] if "classifier" in c["name"])
    rc, _, err = run("--model", a, "--head", cls["head"], "--text", "1", "--candidate", "nope")
    check("unknown classifier label exits 1", rc == 1 and "nope" in err, err)
    rc, _, err = run("--model", a, "--text", "1")
    check("verbalizer without candidates is a usage error (exit 2)", rc == 2 and "--candidate" in err
          and "pd_" not in err, err)
    rc, out, err = run("--model", a, "--text", "1", "--candidate", "2", "--bench", "2")
    b = json.loads(out)["bench"] if rc == 0 else {}
    check("--bench prints the timings", rc == 0 and all(b.get(k, 0) > 0 for k in ("decision_ms", "prefill_ms", "decision_cpu_ms", "prefill_cpu_ms", "reused_text_decision_ms")), out + err)


test_reference()
test_jsonl()
test_errors()
print(f"{sum(RESULTS)} passed, {len(RESULTS) - sum(RESULTS)} failed")
sys.exit(0 if all(RESULTS) else 1)

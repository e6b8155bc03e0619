#!/usr/bin/python3
"""The `--adapter DIR[:WEIGHT]` option of the pocketdec command, end to end.

Usage: test_cli_adapters.py POCKETDEC FIXTURE_DIR

Checks logits and hidden states against the numpy merge reference written by
make_fixtures.py (same tolerance as test_adapters: 1e-5 of the largest value),
weights and stacks, both application modes, generate, and the error contract
(exit 1 with one line naming the adapter, exit 2 for usage errors).
"""
import json
import os
import subprocess
import sys

PD, FIX = sys.argv[1:3]
TOL = 1e-5
# block-quantized bases multiply int8-quantized activations (as llama.cpp does): within 3%
QUANT_TOL = 3e-2
RESULTS = []


def run(*args):
    p = subprocess.run([PD, *args], capture_output=True, timeout=120)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def check(name, cond, detail=""):
    RESULTS.append(bool(cond))
    print(("ok    " if cond else "FAIL  ") + name + ("" if cond else "  " + str(detail)[:500]))


def rel_diff(got, want):
    scale = max(abs(x) for row in want for x in row)
    return max(abs(g - w) for gr, wr in zip(got, want) for g, w in zip(gr, wr)) / scale


CASES = {c["name"]: c for c in json.load(open(os.path.join(FIX, "cases.json")))["cases"]}


def adapter_args(case):
    return [x for a in case["adapters"] for x in ("--adapter", f"{a['dir']}:{a['weight']}")]


def expected(case):
    with open(case["expected"]) as f:
        return json.load(f)


def test_logits_hidden():
    for name, mode in [("plain-all7", "auto"), ("q8_0-base", "auto"), ("stack", "merge"), ("stack", "runtime"),
                       ("weighted", "auto")]:
        case, exp = CASES[name], expected(CASES[name])
        tol = QUANT_TOL if any(q in case["model"] for q in ("q8_0", "q4_0", "q4_1")) else TOL
        ids = ",".join(map(str, exp["ids"]))
        base = [case["model"], "--ids", ids, "--adapter-mode", mode] + adapter_args(case)
        rc, out, err = run("logits", "--model", *base)
        d = rel_diff([json.loads(out)], [exp["logits"][-1]]) if rc == 0 else None
        check(f"logits {name} {mode}", rc == 0 and d <= tol, (rc, err, d))
        rc, out, err = run("hidden", "--model", *base, "--threads", "2")
        d = rel_diff(json.loads(out), exp["hidden"]) if rc == 0 else None
        check(f"hidden {name} {mode}", rc == 0 and d <= tol, (rc, err, d))


def test_weights():
    case = CASES["plain-all7"]
    d = case["adapters"][0]["dir"]
    ids = ["--ids", "3,1,4,1,5"]
    _, plain, _ = run("logits", "--model", case["model"], *ids)
    rc, zero, err = run("logits", "--model", case["model"], *ids, "--adapter", d + ":0")
    check("weight 0 gives the base logits", rc == 0 and zero == plain, err)
    rc1, one, _ = run("logits", "--model", case["model"], *ids, "--adapter", d)
    rc2, one_w, _ = run("logits", "--model", case["model"], *ids, "--adapter", d + ":1.0")
    check("no weight means 1", rc1 == 0 and rc2 == 0 and one == one_w and one != plain)
    # two half-weight copies of one adapter add up to the adapter (merge is linear)
    rc, halves, err = run("logits", "--model", case["model"], *ids, "--adapter", d + ":0.5", "--adapter", d + ":0.5")
    diff = rel_diff([json.loads(halves)], [json.loads(one)]) if rc == 0 else None
    check("a stack adds up: 0.5 + 0.5 == 1", rc == 0 and diff <= TOL, (err, diff))


def test_generate():
    case = CASES["plain-all7"]
    d = case["adapters"][0]["dir"]
    args = ["generate", "--model", case["model"], "--prompt", "hello", "--max-tokens", "8"]
    rc0, base, _ = run(*args)
    rc1, zero, _ = run(*args, "--adapter", d + ":0")
    rc2, adapted, err = run(*args, "--adapter", d)
    check("generate with --adapter", rc0 == 0 and rc1 == 0 and rc2 == 0 and zero == base and adapted != base,
          (err, base, adapted))


def test_errors():
    case = CASES["plain-all7"]
    for cmd in ["logits", "hidden", "generate"]:
        rc, out, _ = run(cmd, "--help")
        check(f"{cmd} --help lists --adapter", rc == 0 and "[--adapter DIR[:WEIGHT]]" in out, out)
    refuse = os.path.join(FIX, "refuse-dora")
    rc, _, err = run("logits", "--model", case["model"], "--ids", "1", "--adapter", refuse)
    check("a refused adapter exits 1 naming it", rc == 1 and err.count("\n") == 1 and refuse in err and "DoRA" in err,
          err)
    wrong = CASES["rslora-subset"]["adapters"][0]["dir"]
    rc, _, err = run("logits", "--model", case["model"], "--ids", "1", "--adapter", wrong)
    check("an adapter for another model exits 1", rc == 1 and "hidden size" in err, err)
    rc, _, err = run("logits", "--model", case["model"], "--ids", "1", "--adapter", "/nonexistent/adapter")
    check("a missing adapter exits 1", rc == 1 and "/nonexistent/adapter/adapter_config.json" in err, err)
    rc, _, err = run("logits", "--model", case["model"], "--ids", "1", "--adapter")
    check("--adapter without a value exits 2", rc == 2, err)
    rc, _, err = run("logits", "--model", case["model"], "--ids", "1", "--adapter-mode", "fast")
    check("a bad --adapter-mode exits 2", rc == 2 and "--adapter-mode" in err, err)
    rc, _, err = run("info", "--model", case["model"], "--adapter", refuse)
    check("info takes no --adapter", rc == 2 and "--adapter" in err, err)


for t in (test_logits_hidden, test_weights, test_generate, test_errors):
    t()
print(f"{sum(RESULTS)} passed, {len(RESULTS) - sum(RESULTS)} failed")
sys.exit(0 if all(RESULTS) else 1)

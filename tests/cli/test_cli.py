#!/usr/bin/python3
"""End-to-end tests of the `pocketdec` command.

Usage: test_cli.py POCKETDEC FIXTURE_DIR SOURCE_ROOT

Runs each subcommand as a user would and checks its output against the numpy
reference (logits, hidden), the reference tokenizer ids (tokenize), and the
error contract: exit 1 with one line on stderr naming the problem, exit 2 for
usage errors. Prints "N passed, N failed" and exits non-zero on failure.
"""
import json
import os
import subprocess
import sys
import tempfile

PD, FIX, ROOT = sys.argv[1:4]
PY = sys.executable
RESULTS = []


def run(*args, stdin=None):
    p = subprocess.run([PD, *args], input=stdin, capture_output=True, timeout=120)
    return p.returncode, p.stdout.decode("utf-8"), p.stderr.decode("utf-8")


def check(name, cond, detail=""):
    cond = bool(cond)
    RESULTS.append(cond)
    print(("ok    " if cond else "FAIL  ") + name + ("" if cond else "  " + detail))


def expected(case):
    with open(os.path.join(FIX, case + ".expected.json")) as f:
        return json.load(f)


def max_rel_diff(got, want):
    scale = max(abs(x) for row in want for x in row)
    return max(abs(g - w) for grow, wrow in zip(got, want) for g, w in zip(grow, wrow)) / scale


def test_help():
    for cmd in ["tokenize", "logits", "hidden", "generate", "info", "bench"]:
        rc, out, _ = run(cmd, "--help")
        check(f"{cmd} --help", rc == 0 and "usage: pocketdec " + cmd in out, out)
    rc, out, _ = run("--help")
    check("--help lists the commands", rc == 0 and "generate" in out)
    rc, _, err = run("frobnicate")
    check("unknown command exits 2", rc == 2 and "frobnicate" in err, err)
    rc, _, err = run("logits", "--model", FIX, "--bogus", "1")
    check("unknown option exits 2", rc == 2 and "--bogus" in err, err)
    rc, _, err = run("logits", "--model")
    check("option without value exits 2", rc == 2, err)


def test_logits_hidden():
    for case in ["tiny-hf-f32", "gqa-gguf-q8_0", "tiny-hf-bf16-untied"]:
        exp = expected(case)
        ids = ",".join(map(str, exp["ids"]))
        model = os.path.join(FIX, case + (".gguf" if "gguf" in case else ""))
        # block-quantized weights multiply int8-quantized activations (as llama.cpp does): within 3%
        tol = 3e-2 if "q8_0" in case else 1e-5
        rc, out, err = run("logits", "--model", model, "--ids", ids, "--threads", "2")
        ok = rc == 0 and max_rel_diff([json.loads(out)], [exp["logits"][-1]]) < tol
        check(f"logits {case} equals the reference", ok, err)
        rc, out, err = run("hidden", "--model", model, "--ids", ids)
        ok = rc == 0 and max_rel_diff(json.loads(out), exp["hidden"]) < tol
        check(f"hidden {case} equals the reference at every position", ok, err)


def test_info():
    rc, out, err = run("info", "--model", os.path.join(FIX, "gqa-hf-f32"))
    info = json.loads(out) if rc == 0 else {}
    # gqa preset: 3 layers, hidden 128, 7 heads of 64, 1 kv head, ffn 320, vocab 512, tied
    per_layer = 2 * 128 + 2 * 64 + 128 * 448 * 2 + 2 * 128 * 64 + 3 * 128 * 320
    params = 512 * 128 + 3 * per_layer + 128
    check("info reports the shape and parameter count",
          info.get("architecture") == "qwen3" and info.get("n_heads") == 7 and info.get("head_dim") == 64
          and info.get("parameters") == params and info.get("tied_embeddings") is True, out + err)


def test_errors():
    def one_line_error(name, args, needle, code=1):
        rc, _, err = run(*args)
        lines = err.strip().splitlines()
        check(name, rc == code and len(lines) == 1 and needle in err, f"rc={rc} stderr={err!r}")

    one_line_error("missing model", ["logits", "--model", "/no/such/model", "--ids", "1"], "/no/such/model")
    one_line_error("id out of range", ["logits", "--model", os.path.join(FIX, "tiny-hf-f32"), "--ids", "1,256"],
                   "256")
    with tempfile.TemporaryDirectory() as d:
        short = os.path.join(d, "short.gguf")
        subprocess.run([PY, os.path.join(ROOT, "tools/testmodels/make_model.py"), "--preset", "tiny", "--format",
                        "gguf-f32", "--max-pos", "16", "--out", short, "--quiet"], check=True)
        one_line_error("prompt longer than the context",
                       ["logits", "--model", short, "--ids", ",".join(["3"] * 20)], "16")
        bad = os.path.join(d, "bad.gguf")
        with open(bad, "wb") as f:
            f.write(b"GGUX" + bytes(60))
        one_line_error("bad GGUF magic", ["info", "--model", bad], "bad.gguf")
    rc, _, err = run("logits", "--model", os.path.join(FIX, "tiny-hf-f32"), "--ids", "1,x")
    check("malformed --ids is a usage error", rc == 2, err)


def test_tokenize():
    tok = os.path.join(ROOT, "tests/fixtures/qwen3/tokenizer.json")
    with open(os.path.join(ROOT, "tests/fixtures/qwen3/expected_ids.jsonl")) as f:
        cases = [json.loads(line) for _, line in zip(range(200), f)]
    stdin = "".join(json.dumps(c["text"]) + "\n" for c in cases).encode()
    rc, out, err = run("tokenize", "--tokenizer", tok, stdin=stdin)
    got = [json.loads(line) for line in out.splitlines()]
    check("tokenize matches the reference ids", rc == 0 and got == [c["ids"] for c in cases], err)
    rc, out, err = run("tokenize", "--tokenizer", tok, "--decode", stdin="".join(
        json.dumps(c["ids"]) + "\n" for c in cases).encode())
    back = [json.loads(line) for line in out.splitlines()]
    check("tokenize --decode gives the texts back", rc == 0 and back == [c["text"] for c in cases], err)
    # the first byte of a 3-byte character alone is not UTF-8: it comes out as U+FFFD
    rc, out, err = run("tokenize", "--tokenizer", tok, stdin=json.dumps("好").encode() + b"\n")
    ids = json.loads(out)
    rc2, out2, _ = run("tokenize", "--tokenizer", tok, "--decode", stdin=(json.dumps(ids) + "\n").encode())
    check("decode round trip of one character", rc == 0 and json.loads(out2) == "好", out2)
    rc, _, err = run("tokenize", "--tokenizer", tok, "--decode", stdin=b"[1, 99999999]\n")
    check("decode of an unknown id fails with the line", rc == 1 and "stdin:1" in err, err)
    rc, _, err = run("tokenize", "--tokenizer", tok, stdin=b"not json\n")
    check("tokenize refuses a line that is not JSON", rc == 1 and "stdin:1" in err, err)



def test_jsonl_input():
    """The JSON-lines reader shared by tokenize, score --jsonl and extract."""
    tok = os.path.join(FIX, "tiny-hf-f32", "tokenizer.json")  # small: loads at once
    rc, out, err = run("tokenize", "--tokenizer", tok, stdin=b'\xef\xbb\xbf"a"\r\n\n  \t\n"b"')
    check("tokenize: byte order mark, CRLF, blank lines and a last line without a break",
          rc == 0 and len(out.splitlines()) == 2, err)
    bad = [
        (["tokenize"], b'"a\xe5\xa5"', "invalid UTF-8 at byte 3"),
        (["tokenize"], b'"a\x00"', "a NUL byte at byte 3"),
        (["tokenize"], b'{"text": "a"}', "expected a JSON string"),
        (["tokenize"], b'"a" "b"', "malformed JSON"),
        (["tokenize"], b'"\\u0000"', "malformed JSON"),
        (["tokenize", "--decode"], b'[1, "2"]', "id 1 must be an integer, got a string"),
        (["tokenize", "--decode"], b'[1, 99999999999]', "id 1 (99999999999) is outside the 32-bit range"),
        (["tokenize", "--decode"], b'{"ids": [1]}', "expected a JSON array of integer ids, got an object"),
        (["tokenize"], b'"' + b"x" * (16 << 20) + b'"', "longer than 16777216 bytes"),
    ]
    for args, line, needle in bad:
        first = b'[1]' if "--decode" in args else b'"ok"'
        rc, out, err = run(*args, "--tokenizer", tok, stdin=first + b"\n\n" + line + b"\n")
        check(f"{' '.join(args)}: '{needle}'", rc == 1 and "stdin:3: " in err and needle in err
              and err.count("\n") == 1 and len(out.splitlines()) == 1, err[:300])


def test_generate():
    hf = os.path.join(FIX, "tiny-hf-f32")
    args = ["generate", "--model", hf, "--prompt", "hello world", "--max-tokens", "12"]
    rc1, g1, err = run(*args)
    rc2, g2, _ = run(*args, "--threads", "2")
    check("greedy generation is deterministic across threads", rc1 == 0 and rc2 == 0 and g1 == g2 and g1, err)
    s1 = run(*args, "--temperature", "0.8", "--top-k", "20", "--top-p", "0.9", "--seed", "5")
    s2 = run(*args, "--temperature", "0.8", "--top-k", "20", "--top-p", "0.9", "--seed", "5")
    check("seeded sampling is reproducible", s1[0] == 0 and s1[1] == s2[1], s1[2])
    rc, out, err = run(*args, "--chat")
    check("chat generation runs", rc == 0, err)
    rc, out, err = run("generate", "--model", hf, "--prompt", "x", "--temperature", "-1")
    check("negative temperature is a usage error", rc == 2, err)


def test_bench():
    rc, out, err = run("bench", "--model", os.path.join(FIX, "tiny-hf-f32"), "--prompt-tokens", "16",
                       "--gen-tokens", "4", "--reps", "1")
    b = json.loads(out) if rc == 0 else {}
    check("bench prints its figures", all(k in b for k in
                                         ["prefill_tokens_per_s", "decode_tokens_per_s", "peak_rss_mb", "load_s"]),
          out + err)
    check("bench: float weights keep an F32 cache by default", b.get("kv_cache") == "f32", out)
    rc, out, err = run("bench", "--model", os.path.join(FIX, "gqa-gguf-q8_0.gguf"), "--prompt-tokens", "8",
                       "--gen-tokens", "2", "--reps", "1")
    check("bench: block-quantized weights get an F16 cache", rc == 0 and json.loads(out).get("kv_cache") == "f16",
          out + err)
    rc, out, err = run("bench", "--model", os.path.join(FIX, "tiny-hf-f32"), "--prompt-tokens", "8",
                       "--gen-tokens", "2", "--reps", "1", "--kv-cache", "f16")
    check("bench --kv-cache f16", rc == 0 and json.loads(out).get("kv_cache") == "f16", out + err)
    rc, out, err = run("bench", "--model", os.path.join(FIX, "tiny-hf-f32"), "--kv-cache", "f8")
    check("--kv-cache f8 is a usage error naming the choices", rc == 2 and "auto, f32 or f16" in err, err)
    # logits through an F16 cache stay within 1e-3 of the reference (test_forward.c: KV16_TOL)
    exp = expected("tiny-hf-f32")
    rc, out, err = run("logits", "--model", os.path.join(FIX, "tiny-hf-f32"), "--ids",
                       ",".join(map(str, exp["ids"])), "--kv-cache", "f16")
    check("logits with --kv-cache f16 within 1e-3", rc == 0 and max_rel_diff([json.loads(out)], [exp["logits"][-1]]) < 1e-3,
          err)



def test_weight_layout():
    """Q4_0 interleaved at load (auto) or read in place (file): both within 3% of the float64
    reference (test_forward.c: QUANT_TOL), within 1% of each other; a bad value is a usage error."""
    q4 = os.path.join(FIX, "gqa-gguf-q4_0.gguf")
    exp = expected("gqa-gguf-q4_0")
    ids = ",".join(map(str, exp["ids"]))
    got = {}
    for layout in ("auto", "file"):
        rc, out, err = run("logits", "--model", q4, "--ids", ids, "--weight-layout", layout)
        got[layout] = json.loads(out) if rc == 0 else None
        check(f"logits --weight-layout {layout} within 3% of the reference",
              got[layout] is not None and max_rel_diff([got[layout]], [exp["logits"][-1]]) < 3e-2, err)
    check("the two layouts within 1% of each other", None not in got.values() and
          max_rel_diff([got["auto"]], [got["file"]]) < 1e-2)
    rc, out, err = run("bench", "--model", q4, "--prompt-tokens", "8", "--gen-tokens", "2", "--reps", "1",
                       "--weight-layout", "file")
    check("bench --weight-layout file", rc == 0 and json.loads(out).get("layout") == "file", out + err)
    rc, out, err = run("logits", "--model", q4, "--ids", ids, "--weight-layout", "q4x4")
    check("--weight-layout q4x4 is a usage error naming the choices", rc == 2 and "auto or file" in err, err)


for t in [test_help, test_logits_hidden, test_info, test_errors, test_tokenize, test_jsonl_input, test_generate,
          test_bench, test_weight_layout]:
    t()
passed = sum(RESULTS)
print(f"{passed} passed, {len(RESULTS) - passed} failed")
sys.exit(0 if passed == len(RESULTS) else 1)

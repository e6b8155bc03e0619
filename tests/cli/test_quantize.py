#!/usr/bin/python3
"""Tests of `pocketdec quantize` (HF directory -> GGUF Q8_0/Q4_0/Q4_1).

Usage: test_quantize.py POCKETDEC SOURCE_ROOT

make_model.py writes the same random weights as an HF F32 directory and, with
its bit-exact ports of ggml's reference quantizers, as GGUF of each type; the
file `pocketdec quantize` writes from the directory must be the same file, byte
for byte (tensor data, metadata, vocabulary, offsets). Also: the result loads
and its logits are close to the F32 model's, a BF16 directory quantizes, and
bad arguments fail with one clear line and leave no file behind.

Q4_64 (blocks of 64, MNN's W4A16 layout) has no GGUF type: make_model.py's
gguf-q4_64 writes its values, from an independent port of the quantizer, as
Q4_1 blocks that repeat each block's d and m for both halves, which the Q4_64
kernels must match bit for bit; loading with --quantize q4_64 must give that
file's logits exactly.
Prints "N passed, N failed" and exits non-zero on failure.
"""
import json
import os
import subprocess
import sys
import tempfile

PD, ROOT = sys.argv[1:3]
PY = sys.executable
MAKE_MODEL = os.path.join(ROOT, "tools", "testmodels", "make_model.py")
MAKE_HEAD = os.path.join(ROOT, "tools", "testmodels", "make_head.py")
RESULTS = []


def run(*args):
    p = subprocess.run([PD, *args], capture_output=True, timeout=120)
    return p.returncode, p.stdout.decode("utf-8"), p.stderr.decode("utf-8")


def check(name, cond, detail=""):
    cond = bool(cond)
    RESULTS.append(cond)
    print(("ok    " if cond else "FAIL  ") + name + ("" if cond else "  " + detail))


def make(*args):
    subprocess.run([PY, MAKE_MODEL, "--quiet", *args], check=True, timeout=300)


def same_bytes(a, b):
    with open(a, "rb") as fa, open(b, "rb") as fb:
        return fa.read() == fb.read()


def logits(model, ids="1,2,3,4,5,6,7,8", *extra):
    rc, out, err = run("logits", "--model", model, "--ids", ids, *extra)
    return json.loads(out) if rc == 0 else None


def rel_diff(got, want):
    return max(abs(g - w) for g, w in zip(got, want)) / max(abs(w) for w in want)


def test_same_file(tmp):
    """gqa (GQA 7:1, tied) and tiny untied with a chat template: identical files."""
    shape = ["--preset", "gqa"]
    make(*shape, "--format", "hf-f32", "--out", os.path.join(tmp, "gqa"))
    # a tokenizer with a tokenizer_config.json beside it (the chat template goes into the GGUF)
    tokdir = os.path.join(tmp, "tok")
    os.makedirs(tokdir)
    tok = os.path.join(tokdir, "tokenizer.json")
    subprocess.run([PY, MAKE_HEAD, "tokenizer", "--vocab", "300", "--out", tok], check=True, timeout=60)
    with open(os.path.join(tokdir, "tokenizer_config.json"), "w") as f:
        json.dump({"chat_template": "{% for m in messages %}<|im_start|>{{ m.content }}{% endfor %}"}, f)
    untied = ["--preset", "tiny", "--vocab", "300", "--untied", "--tokenizer", tok]
    make(*untied, "--format", "hf-f32", "--out", os.path.join(tmp, "untied"))
    f32 = logits(os.path.join(tmp, "gqa"))
    for name, args in [("gqa", shape), ("untied", untied)]:
        for ty in ["q8_0", "q4_0", "q4_1"]:
            ref = os.path.join(tmp, f"ref-{name}-{ty}.gguf")
            make(*args, "--format", "gguf-" + ty, "--name", name, "--out", ref)
            out = os.path.join(tmp, f"{name}-{ty}.gguf")
            rc, so, err = run("quantize", "--model", os.path.join(tmp, name), "--type", ty, "--out", out)
            summary = json.loads(so) if rc == 0 else {}
            check(f"quantize {name} {ty} succeeds and reports the file",
                  summary.get("out") == out and summary.get("type") == ty
                  and summary.get("bytes") == os.path.getsize(out), so + err)
            check(f"{name} {ty}: the same bytes as make_model.py's GGUF (ggml's reference quantizers)",
                  rc == 0 and same_bytes(out, ref))
            loaded = logits(os.path.join(tmp, name), "1,2,3,4,5,6,7,8", "--quantize", ty)
            check(f"{name} loaded with --quantize {ty}: the file's logits, bit for bit",
                  loaded is not None and loaded == logits(out))
            if name == "gqa":
                got = logits(out)
                tol = 0.05 if ty == "q8_0" else 0.3
                check(f"gqa {ty} loads; logits near the F32 model's (rel {tol})",
                      got is not None and rel_diff(got, f32) < tol)
        ref = os.path.join(tmp, f"ref-{name}-q4_64.gguf")
        make(*args, "--format", "gguf-q4_64", "--name", name, "--out", ref)
        for layout in ["auto", "file"]:
            got = logits(os.path.join(tmp, name), "1,2,3,4,5,6,7,8", "--quantize", "q4_64", "--weight-layout", layout)
            check(f"{name} loaded with --quantize q4_64 ({layout} layout): the logits of its values as Q4_1, bit for bit",
                  got is not None and got == logits(ref, "1,2,3,4,5,6,7,8", "--weight-layout", layout))
            if name == "gqa":
                check(f"gqa q4_64 ({layout}): logits near the F32 model's (rel 0.3)",
                      got is not None and rel_diff(got, f32) < 0.3)
    rc, so, err = run("quantize", "--model", os.path.join(tmp, "gqa") + "/", "--type", "q8_0")
    default = os.path.join(tmp, "gqa-q8_0.gguf")
    check("without --out the file is HFDIR-TYPE.gguf", rc == 0 and json.loads(so)["out"] == default
          and os.path.exists(default), so + err)


def test_bf16(tmp):
    """A BF16 directory (the published checkpoint's dtype) quantizes and runs."""
    make("--preset", "gqa", "--format", "hf-bf16", "--out", os.path.join(tmp, "bf16"))
    out = os.path.join(tmp, "bf16.gguf")
    rc, _, err = run("quantize", "--model", os.path.join(tmp, "bf16"), "--type", "q8_0", "--out", out)
    got, want = logits(out), logits(os.path.join(tmp, "bf16"))
    check("BF16 directory -> Q8_0: logits near the BF16 model's",
          rc == 0 and got is not None and rel_diff(got, want) < 0.05, err)


def test_errors(tmp):
    gqa = os.path.join(tmp, "gqa")

    def fails(name, args, needle, code=1, no_file=None):
        rc, out, err = run("quantize", *args)
        ok = rc == code and needle in err and out == ""
        if code == 1:
            ok = ok and len(err.strip().splitlines()) == 1
        if no_file:
            ok = ok and not os.path.exists(no_file)
        check(name, ok, f"rc={rc} err={err!r}")

    fails("--type is required", ["--model", gqa], "--type", 2)
    fails("an unknown --type is a usage error", ["--model", gqa, "--type", "q5_k"], "q4_0, q4_1 or q8_0", 2)
    fails("--model is required", ["--type", "q8_0"], "--model", 2)
    fails("a missing directory is named", ["--model", os.path.join(tmp, "nope"), "--type", "q8_0",
                                           "--out", os.path.join(tmp, "x.gguf")], "nope",
          no_file=os.path.join(tmp, "x.gguf"))
    fails("a .gguf as --model: an HF directory is needed",
          ["--model", os.path.join(tmp, "gqa-q8_0.gguf"), "--type", "q4_0", "--out", os.path.join(tmp, "y.gguf")],
          "not a directory", no_file=os.path.join(tmp, "y.gguf"))
    fails("an unwritable --out is refused", ["--model", gqa, "--type", "q8_0", "--out",
                                             os.path.join(tmp, "no-such-dir", "m.gguf")], "cannot create")
    notok = os.path.join(tmp, "notok")
    make("--preset", "tiny", "--format", "hf-f32", "--no-tokenizer", "--out", notok)
    fails("a directory without tokenizer.json is refused, naming it",
          ["--model", notok, "--type", "q8_0", "--out", os.path.join(tmp, "z.gguf")], "tokenizer.json",
          no_file=os.path.join(tmp, "z.gguf"))
    odd = os.path.join(tmp, "odd")
    make("--layers", "1", "--hidden", "48", "--heads", "3", "--kv-heads", "1", "--head-dim", "16", "--ffn", "64",
         "--vocab", "300", "--format", "hf-f32", "--out", odd)
    fails("rows that are not whole blocks of 32 are refused, naming the tensor",
          ["--model", odd, "--type", "q4_0", "--out", os.path.join(tmp, "o.gguf")], "not a multiple of 32",
          no_file=os.path.join(tmp, "o.gguf"))
    rc, out, err = run("logits", "--model", odd, "--ids", "1,2", "--quantize", "q4_0")
    check("--quantize at load refuses the same model, naming the tensor and the cause",
          rc == 1 and out == "" and "model.layers.0.self_attn.q_proj.weight has 48 columns" in err, err)
    rc, out, err = run("logits", "--model", gqa, "--ids", "1,2", "--quantize", "q5_k")
    check("an unknown --quantize is a usage error", rc == 2 and "q8_0, q4_0, q4_1 or q4_64" in err, err)
    rc, out, err = run("quantize", "--model", gqa, "--type", "q4_64")
    check("quantize has no q4_64 (no GGUF type holds it): a usage error", rc == 2 and "q4_0, q4_1 or q8_0" in err, err)
    m96 = os.path.join(tmp, "m96")
    make("--layers", "1", "--hidden", "96", "--heads", "3", "--kv-heads", "1", "--head-dim", "32", "--ffn", "64",
         "--vocab", "300", "--format", "hf-f32", "--out", m96)
    rc, out, err = run("logits", "--model", m96, "--ids", "1,2", "--quantize", "q4_64")
    check("--quantize q4_64 refuses 96 columns (whole blocks of 32, not of 64), naming the tensor",
          rc == 1 and out == "" and "model.layers.0.self_attn.q_proj.weight has 96 columns, not whole blocks of 64" in err,
          err)
    check("the same model quantizes to q4_0 at load", logits(m96, "1,2", "--quantize", "q4_0") is not None)


with tempfile.TemporaryDirectory() as d:
    for t in [test_same_file, test_bf16, test_errors]:
        t(d)
passed = sum(RESULTS)
print(f"{passed} passed, {len(RESULTS) - passed} failed")
sys.exit(0 if passed == len(RESULTS) else 1)

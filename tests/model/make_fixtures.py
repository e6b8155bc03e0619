#!/usr/bin/python3
"""Write the random test models and their expected outputs for test_forward.

Usage: make_fixtures.py OUTDIR STAMP

Each case is a random Qwen3 model written by tools/testmodels/make_model.py and
the logits and final-norm hidden states that the independent numpy reference
(tools/testmodels/reference.py, float64) computes for a fixed id sequence.
OUTDIR/cases.json lists them for the C test. A case with a quantization is
an F32 directory the test loads with that --quantize; its reference is the
float64 forward of the same weights as quantized by make_model.py's own port
(gguf-q4_64: the Q4_64 values, written as Q4_1 blocks). An MNN export case
(format mnn) has as reference the HF F32 directory of the values its 4-bit
blocks stand for (hf-mnn-f32).
"""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOLS = os.path.join(ROOT, "tools", "testmodels")
PY = sys.executable

# name, preset, format, extra make_model arguments, number of ids[, quantize at load, reference format]
CASES = [
    ("tiny-hf-f32", "tiny", "hf-f32", [], 12),
    ("tiny-hf-bf16-untied", "tiny", "hf-bf16", ["--untied"], 12),
    ("tiny-hf-f16", "tiny", "hf-f16", [], 9),
    ("gqa-hf-f32", "gqa", "hf-f32", [], 40),
    ("gqa-hf-sharded-f32", "gqa", "hf-sharded-f32", ["--untied"], 20),
    ("gqa-gguf-f32", "gqa", "gguf-f32", [], 40),
    ("gqa-gguf-f16", "gqa", "gguf-f16", [], 24),
    ("gqa-gguf-bf16", "gqa", "gguf-bf16", ["--untied"], 16),
    ("gqa-gguf-q8_0", "gqa", "gguf-q8_0", [], 24),
    ("gqa-gguf-q4_0", "gqa", "gguf-q4_0", [], 16),
    ("gqa-gguf-q4_1", "gqa", "gguf-q4_1", ["--untied"], 16),
    # an LM head of 510 rows cannot be interleaved four at a time; the layers still are
    ("gqa-gguf-q4_0-v510", "gqa", "gguf-q4_0", ["--untied", "--vocab", "510"], 16),
    # MNN's W4A16 layout (blocks of 64), made at load; the LM head of 510 rows keeps the plain layout
    ("gqa-hf-f32-quantize-q4_64", "gqa", "hf-f32", ["--untied", "--vocab", "510"], 16, "q4_64", "gguf-q4_64"),
    # MNN's LLM export (llm.mnn, llm.mnn.weight, ...; runs as Q4_64): the reference is the float64 forward of the
    # values its 4-bit blocks stand for; tied (the LM head's blocks are the embeddings), and an embedding table of its own
    ("gqa-mnn-q4_64", "gqa", "mnn", [], 16, "", "hf-mnn-f32"),
    ("gqa-mnn-q4_64-untied", "gqa", "mnn", ["--untied"], 20, "", "hf-mnn-f32"),
]


def ids_for(n, vocab, seed):
    """A fixed pseudo-random id sequence (a small LCG, so it is the same everywhere)."""
    out, x = [], seed
    for _ in range(n):
        x = (x * 1103515245 + 12345) % (1 << 31)
        out.append(x % vocab)
    return out


def main():
    out = os.path.abspath(sys.argv[1])
    os.makedirs(out, exist_ok=True)
    vocab = {"tiny": 256, "gqa": 512}
    manifest = []
    for i, (name, preset, fmt, extra, n, *quant) in enumerate(CASES):
        path = os.path.join(out, name + (".gguf" if fmt.startswith("gguf") else ""))
        expected = os.path.join(out, name + ".expected.json")

        def write(form, where):
            subprocess.run([PY, os.path.join(TOOLS, "make_model.py"), "--preset", preset, "--format", form,
                            "--seed", str(100 + i), "--out", where] + extra, check=True, stdout=subprocess.DEVNULL)
        write(fmt, path)
        ref_model = path
        if quant:
            ref_model = os.path.join(out, name + ".reference.gguf")
            write(quant[1], ref_model)
        ids = ids_for(n, int(extra[extra.index("--vocab") + 1]) if "--vocab" in extra else vocab[preset], 7 + i)
        subprocess.run([PY, os.path.join(TOOLS, "reference.py"), "--model", ref_model,
                        "--ids", ",".join(map(str, ids)), "--out", expected], check=True, stdout=subprocess.DEVNULL)
        manifest.append({"name": name, "model": path, "expected": expected, "quantize": quant[0] if quant else ""})
    # MNN exports differing from a good one in one thing the reader must refuse (tests/formats/test_mnn.c)
    for variant in ("sym", "bits8", "fp32-scales", "bias", "partial-rope", "unknown-op"):
        subprocess.run([PY, os.path.join(TOOLS, "make_model.py"), "--preset", "tiny", "--format", "mnn",
                        "--mnn-variant", variant, "--out", os.path.join(out, "mnn-" + variant)],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for path in (os.path.join(out, "cases.json"), sys.argv[2]):
        with open(path, "w") as f:
            json.dump(manifest, f, indent=1)


if __name__ == "__main__":
    main()

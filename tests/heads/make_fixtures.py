#!/usr/bin/python3
"""Write the decision-head test fixtures: random models whose tokenizers carry the layout
markers, random heads (valid ones and one broken way per validation error), and the scores that
tools/testmodels/make_head.py's float64 reference expects.

Usage: make_fixtures.py OUTDIR STAMP
"""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOLS = os.path.join(ROOT, "tools", "testmodels")
sys.path.insert(0, TOOLS)
import make_head  # noqa: E402
import reference  # noqa: E402

PY = sys.executable
# name, format, shape arguments, vocab
MODELS = [
    ("a", "hf-f32", ["--layers", "2", "--hidden", "64", "--heads", "4", "--kv-heads", "2", "--head-dim", "16",
                     "--ffn", "128"], 300),
    ("b", "gguf-q8_0", ["--layers", "2", "--hidden", "128", "--heads", "7", "--kv-heads", "1", "--head-dim", "64",
                        "--ffn", "256"], 320),
]
# Texts without letters tokenize byte by byte under the synthetic tokenizer (make_head.byte_ids).
TEXT, QUESTION = "12, 34; 56! 7.8 (9)", "?= 0"
CANDS = ["1", "22", "333", "4-4", "+"]


def model_path(out, name, fmt):
    return os.path.join(out, f"model-{name}" + (".gguf" if fmt.startswith("gguf") else ""))


def write_models(out):
    for i, (name, fmt, shape, vocab) in enumerate(MODELS):
        tok = os.path.join(out, f"tokenizer-{name}.json")
        make_head.main(["tokenizer", "--vocab", str(vocab), "--seed", str(i), "--out", tok])
        subprocess.run([PY, os.path.join(TOOLS, "make_model.py"), "--format", fmt, "--vocab", str(vocab),
                        "--seed", str(40 + i), "--tokenizer", tok, "--out", model_path(out, name, fmt), "--quiet"]
                       + shape, check=True)


edit_json = make_head.edit_json


def write_bad_heads(out):
    """One head directory per validation error; the C test expects the status and a word of the message."""
    bad = os.path.join(out, "bad")
    cases = []

    def head(name, kind="pointer", hidden=64, **kw):
        d = os.path.join(bad, name)
        make_head.write_head(d, kind, hidden, 16, ["x", "y"] if kind == "classifier" else None, **kw)
        return d

    def add(name, d, status, word):
        cases.append({"name": name, "dir": d, "status": status, "word": word})

    add("missing dir", os.path.join(bad, "nope"), "io", "head.json")
    add("hidden size", head("hidden", hidden=32), "shape", "hidden size")
    add("classifier hidden size", head("chidden", kind="classifier", hidden=48), "shape", "weight")
    d = head("unknown-type")
    edit_json(d, type="ranker")
    add("unknown type", d, "unsupported", "ranker")
    d = head("no-type")
    edit_json(d, type=None)
    add("missing type", d, "format", "type")
    d = head("marker")
    edit_json(d, markers={"candidate_start": "<|nope|>"})
    add("marker not in vocabulary", d, "range", "<|nope|>")
    d = head("head-dim")
    edit_json(d, head_dim=8)
    add("head_dim vs q.weight", d, "shape", "head_dim")
    d = head("no-head-dim")
    edit_json(d, head_dim=None)
    add("pointer without head_dim", d, "format", "head_dim")
    d = head("temperature")
    edit_json(d, temperature=0)
    add("temperature", d, "format", "temperature")
    d = head("layout")
    edit_json(d, layout="diagonal")
    add("unknown layout", d, "unsupported", "diagonal")
    d = head("labels", kind="classifier")
    edit_json(d, labels=[])
    add("classifier without labels", d, "format", "labels")
    d = head("dup", kind="classifier")
    edit_json(d, labels=["x", "x"])
    add("duplicate label", d, "format", "twice")
    d = head("pool", kind="classifier")
    edit_json(d, pool="mean")
    add("pool", d, "unsupported", "pool")
    d = head("missing-tensor")
    make_head.write_safetensors(os.path.join(d, "head.safetensors"),
                                {k: v for k, v in make_head.load_head(d)["t"].items() if k != "k.bias"}, "F32")
    add("missing tensor", d, "shape", "k.bias")
    d = head("notjson")
    with open(os.path.join(d, "head.json"), "w") as f:
        f.write("{\"type\": \"pointer\",")
    add("head.json not JSON", d, "format", "JSON")
    d = head("no-safetensors")
    os.remove(os.path.join(d, "head.safetensors"))
    add("head.safetensors missing", d, "io", "head.safetensors")
    return cases


def main():
    out = os.path.abspath(sys.argv[1])
    os.makedirs(out, exist_ok=True)
    write_models(out)
    heads = {
        "a": [("pointer", dict(kind="pointer", hidden=64, head_dim=16, temperature=0.7, seed=1)),
              ("pointer-parallel", dict(kind="pointer", hidden=64, head_dim=16, temperature=0.7, seed=1,
                                        layout="parallel")),
              ("classifier", dict(kind="classifier", hidden=64, labels=["1", "22", "333", "4-4", "+", "5"],
                                  temperature=1.5, seed=2)),
              (None, None)],
        "b": [("pointer-bf16", dict(kind="pointer", hidden=128, head_dim=32, seed=3, dtype="BF16")),
              (None, None)],
    }
    text_ids, q_ids = make_head.byte_ids(TEXT), make_head.byte_ids(QUESTION)
    cand_ids = [make_head.byte_ids(c) for c in CANDS]
    cases = []
    for name, fmt, _, vocab in MODELS:
        mpath = model_path(out, name, fmt)
        model = reference.load_model(mpath)
        mk = list(range(vocab - 5, vocab))
        for hname, kw in heads[name]:
            hdir = None
            if hname:
                hdir = os.path.join(out, f"head-{name}-{hname}")
                make_head.write_head(hdir, **kw)
            head = make_head.load_head(hdir) if hdir else None
            for layout in ("sequential", "parallel"):
                exp = make_head.scores(model, head, mk, text_ids, q_ids, cand_ids, layout)
                if exp.get("masked_key_error", 0.0) > 1e-9:  # the two numpy routes must agree
                    raise SystemExit(f"masked forward disagrees with the alone runs: {exp['masked_key_error']}")
                exp.update({"name": f"{name}/{hname or 'verbalizer'}/{layout}", "model": mpath, "head": hdir,
                            "layout": layout, "text": TEXT, "question": QUESTION,
                            "candidates": CANDS if not head or head["meta"]["type"] != "classifier"
                            else head["meta"]["labels"]})
                cases.append(exp)
    doc = {"markers": make_head.MARKERS, "cases": cases, "bad_heads": write_bad_heads(out),
           "model_a": model_path(out, "a", "hf-f32"), "model_b": model_path(out, "b", "gguf-q8_0")}
    for path in (os.path.join(out, "cases.json"), sys.argv[2]):
        with open(path, "w") as f:
            json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Write the random models, PEFT adapters and expected outputs for test_adapters.

Usage: make_fixtures.py OUTDIR STAMP

Models come from tools/testmodels/make_model.py, adapters from
tools/testmodels/make_adapter.py, and every expected output from its numpy
reference (float64 merge W + weight * scale * B @ A, then the reference
forward). OUTDIR/cases.json lists the cases and the refusals for the C test.
"""
import importlib.util
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOLS = os.path.join(ROOT, "tools", "testmodels")
PY = sys.executable
# the model tests' fixed id sequences (their module has this file's name: load it by path)
_spec = importlib.util.spec_from_file_location("model_fixtures", os.path.join(ROOT, "tests", "model", "make_fixtures.py"))
_model_fixtures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_model_fixtures)
ids_for = _model_fixtures.ids_for

# name, preset, format, extra make_model arguments
MODELS = [
    ("tiny-hf-f32", "tiny", "hf-f32", ["--untied"]),
    ("tiny-hf-bf16", "tiny", "hf-bf16", []),
    ("gqa-hf-f32", "gqa", "hf-f32", []),
    ("gqa-gguf-q8_0", "gqa", "gguf-q8_0", []),
    ("gqa-gguf-q4_1", "gqa", "gguf-q4_1", ["--untied"]),
]
# name, model it is for, make_adapter write arguments
ADAPTERS = [
    ("tiny-all7", "tiny-hf-f32", ["--rank", "4", "--alpha", "8"]),
    ("gqa-rslora-subset", "gqa-hf-f32", ["--rank", "8", "--alpha", "16", "--rslora", "--targets", "q,v,gate,down",
                                         "--layers", "0,2", "--no-prefix", "--adapter-name", "default",
                                         "--dtype", "BF16"]),
    ("gqa-all7-r16", "gqa-hf-f32", ["--rank", "16", "--alpha", "32", "--adapter-name", "mine", "--dtype", "F16"]),
    ("gqa-all7-r2", "gqa-hf-f32", ["--rank", "2", "--alpha", "3", "--targets", "o,k,up"]),
]
# name, model, [(adapter, weight)], modes, ids
CASES = [
    ("plain-all7", "tiny-hf-f32", [("tiny-all7", 1.0)], ["merge", "runtime", "auto"], 10),
    ("bf16-base", "tiny-hf-bf16", [("tiny-all7", 1.0)], ["auto", "merge"], 10),
    ("rslora-subset", "gqa-hf-f32", [("gqa-rslora-subset", 1.0)], ["merge", "runtime"], 12),
    ("q8_0-base", "gqa-gguf-q8_0", [("gqa-all7-r16", 1.0)], ["auto", "merge"], 12),
    ("q4_1-base", "gqa-gguf-q4_1", [("gqa-all7-r16", 1.0)], ["runtime"], 8),
    ("stack", "gqa-hf-f32", [("gqa-rslora-subset", 0.5), ("gqa-all7-r16", 1.5), ("gqa-all7-r2", -1.0)],
     ["merge", "runtime"], 12),
    ("weighted", "gqa-hf-f32", [("gqa-all7-r2", 0.25)], ["auto"], 6),
]
# adapter name, refusal kind, model the refusal is checked on, expected status, substring of the message
REFUSALS = [
    ("dora", "dora", "tiny-hf-f32", "unsupported", "DoRA"),
    ("dora-tensor", "dora-tensor", "tiny-hf-f32", "unsupported", "DoRA"),
    ("bias", "bias", "tiny-hf-f32", "unsupported", "bias"),
    ("lora-bias", "lora-bias", "tiny-hf-f32", "unsupported", "LoRA biases"),
    ("lora-bias-tensor", "lora-bias-tensor", "tiny-hf-f32", "unsupported", "lora_B.bias"),
    ("modules-to-save", "modules-to-save", "tiny-hf-f32", "unsupported", "modules_to_save"),
    ("rank-pattern", "rank-pattern", "tiny-hf-f32", "unsupported", "rank_pattern"),
    ("alpha-pattern", "alpha-pattern", "tiny-hf-f32", "unsupported", "alpha_pattern"),
    ("embed", "embed", "tiny-hf-f32", "unsupported", "embed_tokens"),
    ("lm-head", "lm-head", "tiny-hf-f32", "unsupported", "lm_head"),
    ("lm-head-tensor", "lm-head-tensor", "tiny-hf-f32", "unsupported", "lm_head.lora_A.weight"),
    ("missing-b", "missing-b", "tiny-hf-f32", "shape", "model.layers.0.self_attn.q_proj.lora_A.weight has no matching lora_B"),
    ("bad-rank", "bad-rank", "tiny-hf-f32", "shape", "rank 5, but adapter_config.json says r = 4"),
    ("not-lora", "not-lora", "tiny-hf-f32", "unsupported", "PREFIX_TUNING"),
    # found when applied to a model
    ("bad-shape", "bad-shape", "tiny-hf-f32", "shape",
     "tensor base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight is [65, 4], but the base's "
     "model.layers.0.self_attn.q_proj.weight is [64, 64]"),
    ("hidden", "hidden", "tiny-hf-f32", "shape", "adapter made for hidden size 128, the model's is 64"),
    ("layer", "layer", "tiny-hf-f32", "shape", "adapts layer 2, the model has 2 layers"),
]


def run(*args):
    subprocess.run([PY, *args], check=True, stdout=subprocess.DEVNULL)


def main():
    out = os.path.abspath(sys.argv[1])
    os.makedirs(out, exist_ok=True)
    models = {}
    for i, (name, preset, fmt, extra) in enumerate(MODELS):
        models[name] = os.path.join(out, name + (".gguf" if fmt.startswith("gguf") else ""))
        run(os.path.join(TOOLS, "make_model.py"), "--preset", preset, "--format", fmt, "--seed", str(300 + i),
            "--out", models[name], "--quiet", *extra)
    adapters = {}
    for i, (name, model, extra) in enumerate(ADAPTERS):
        adapters[name] = os.path.join(out, "adapter-" + name)
        run(os.path.join(TOOLS, "make_adapter.py"), "write", "--model", models[model], "--out", adapters[name],
            "--seed", str(400 + i), "--quiet", *extra)
    cases = []
    for i, (name, model, stack, modes, n) in enumerate(CASES):
        vocab = 256 if model.startswith("tiny") else 512
        ids = ids_for(n, vocab, 11 + i)
        expected = os.path.join(out, name + ".expected.json")
        run(os.path.join(TOOLS, "make_adapter.py"), "reference", "--model", models[model], "--ids",
            ",".join(map(str, ids)), "--out", expected,
            *[a for ad, w in stack for a in ("--adapter", f"{adapters[ad]}:{w}")])
        cases.append({"name": name, "model": models[model], "modes": modes, "expected": expected,
                      "adapters": [{"dir": adapters[ad], "weight": w} for ad, w in stack]})
    refusals = []
    for name, kind, model, status, message in REFUSALS:
        d = os.path.join(out, "refuse-" + name)
        run(os.path.join(TOOLS, "make_adapter.py"), "write", "--model", models[model], "--out", d,
            "--rank", "4", "--refuse", kind, "--quiet")
        refusals.append({"name": name, "dir": d, "model": models[model], "status": status, "message": message})
    doc = {"cases": cases, "refusals": refusals}
    for path in (os.path.join(out, "cases.json"), sys.argv[2]):
        with open(path, "w") as f:
            json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()

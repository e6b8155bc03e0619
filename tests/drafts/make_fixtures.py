#!/usr/bin/python3
"""Write the random drafts, their expected proposals and the broken drafts for test_drafts.

Usage: make_fixtures.py OUTDIR STAMP

OUTDIR/target: a tiny random Qwen3 target (tools/testmodels/make_model.py, hidden 64, 2 layers,
vocabulary 256). For each draft (tools/testmodels/make_draft.py) a few steps, each: forget the
draft context past `keep` positions, append the features of new positions (random float32 rows),
propose a block; the expected logits and tokens come from tools/testmodels/draft_reference.py
(float64, from all the features so far). OUTDIR/cases.json lists them; OUTDIR/broken.json lists
draft directories that must be refused, each with the status and a text the message must hold.
STAMP is written last.
"""
import copy
import json
import os
import shutil
import struct
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOLS = os.path.join(ROOT, "tools", "testmodels")
sys.path.insert(0, TOOLS)
import draft_reference  # noqa: E402
import make_draft  # noqa: E402
import reference  # noqa: E402

DRAFTS = [
    # name, make_draft arguments, steps: (keep (-1: all), new positions, block length, first token)
    ("dflash-f32-sharded",
     ["--kind", "dflash", "--dtype", "f32", "--shards", "2", "--layers", "2", "--heads", "4", "--kv-heads", "2",
      "--head-dim", "16", "--ffn", "96", "--block-size", "6", "--target-layers", "0,1",
      "--layer-types", "sliding_attention,full_attention", "--sliding-window", "5",
      "--output-multiplier", "0.7", "--embedding-scale", "1.5", "--seed", "3"],
     [(-1, 9, 6, 17), (7, 4, 4, 42), (-1, 3, 6, 200)]),
    ("dflash2-bf16",
     ["--kind", "dflash2", "--dtype", "bf16", "--layers", "2", "--heads", "2", "--kv-heads", "1",
      "--head-dim", "32", "--ffn", "128", "--block-size", "8", "--target-layers", "1,0,1",
      "--layer-types", "sliding_attention,sliding_attention", "--sliding-window", "7", "--is-causal", "false",
      "--output-multiplier", "0.5", "--softcap", "6.0", "--taps", "3", "--group-size", "16", "--rank", "8",
      "--top-k", "5", "--eps", "1e-5", "--rope-theta", "500000", "--seed", "4"],
     [(-1, 10, 8, 5), (6, 5, 5, 77), (-1, 2, 8, 130)]),
    ("dflash2-f16-full",
     ["--kind", "dflash2", "--dtype", "f16", "--layers", "1", "--heads", "4", "--kv-heads", "4",
      "--head-dim", "16", "--ffn", "64", "--block-size", "4", "--target-layers", "1", "--taps", "2",
      "--group-size", "32", "--rank", "16", "--top-k", "3", "--seed", "5"],
     [(-1, 4, 4, 9), (-1, 1, 3, 250)]),
]


def run(*args):
    subprocess.run([sys.executable, *args], check=True)


def expected_steps(target, draft_dir, steps, n_feat, rng):
    """The steps of a case with the reference's logits and tokens, and the smallest margin."""
    draft = draft_reference.load_draft(draft_dir)
    mask = draft["config"]["dflash_config"]["mask_token_id"]
    feats = np.zeros((0, n_feat), np.float32)
    out, margin = [], np.inf
    for keep, new, n_block, first in steps:
        if keep >= 0:
            feats = feats[:keep]
        rows = rng.standard_normal((new, n_feat)).astype(np.float32)
        feats = np.concatenate([feats, rows])
        block = [first] + [mask] * (n_block - 1)
        r = draft_reference.propose(draft, target, feats.astype(np.float64), block)
        margin = min(margin, r["margin"])
        out.append({"keep": keep, "append": rows.astype(np.float64).tolist(), "block": block,
                    "logits": r["logits"].tolist(), "tokens": [int(t) for t in r["tokens"]]})
    return out, margin


def write_broken(out, good):
    """Draft directories made from the good DFlash2 one, each broken one way: (name, status, text)."""
    cases = []
    with open(os.path.join(good, "config.json")) as f:
        base = json.load(f)

    def variant(name, status, text, edit=None, tensors=None):
        d = os.path.join(out, "broken", name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        c = copy.deepcopy(base)
        if edit:
            edit(c)
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(c, f)
        src = os.path.join(good, "model.safetensors")
        if tensors:
            tensors(src, os.path.join(d, "model.safetensors"))
        else:
            shutil.copy(src, d)
        cases.append({"name": name, "dir": d, "status": status, "text": text})

    def set_key(key, value, inner=False):
        return lambda c: (c["dflash_config"] if inner else c).__setitem__(key, value)

    def rewrite(fn):
        """Rewrite the safetensors file through fn(header dict, data bytes) -> (header, data)."""
        def go(src, dst):
            raw = open(src, "rb").read()
            (n,) = struct.unpack("<Q", raw[:8])
            header, data = fn(json.loads(raw[8:8 + n]), raw[8 + n:])
            h = json.dumps(header).encode()
            with open(dst, "wb") as f:
                f.write(struct.pack("<Q", len(h)) + h + data)
        return go

    def drop(name):
        return rewrite(lambda h, d: ({k: v for k, v in h.items() if k != name}, d))

    def reshape(name, shape):
        def fn(h, d):
            h[name]["shape"] = shape
            return h, d
        return rewrite(fn)

    def retype(name):
        def fn(h, d):
            h[name]["dtype"] = "I16"
            return h, d
        return rewrite(fn)

    variant("arch", 3, "Qwen3ForCausalLM", set_key("architectures", ["Qwen3ForCausalLM"]))
    variant("hidden", 4, "hidden size 32", set_key("hidden_size", 32))
    variant("vocab", 4, "vocabulary 300", set_key("vocab_size", 300))
    variant("layer-id", 5, "target_layer_ids[1] = 2", set_key("target_layer_ids", [1, 2], True))
    variant("mask-id", 5, "mask_token_id 256", set_key("mask_token_id", 256, True))
    variant("no-mask-id", 2, "missing mask_token_id", lambda c: c["dflash_config"].pop("mask_token_id"))
    variant("no-rank", 2, "missing selector_rank", lambda c: c["dflash_config"].pop("selector_rank"))
    variant("group", 5, "conv_group_size 24", set_key("conv_group_size", 24, True))
    variant("block", 5, "block_size 1", set_key("block_size", 1, True))
    variant("rope", 3, "yarn", set_key("rope_parameters", {"rope_type": "yarn", "rope_theta": 1e6}))
    variant("layer-types", 2, "layer_types", set_key("layer_types", ["sliding_attention"]))
    variant("missing-tensor", 4, "layers.1.mlp.up_proj.weight", tensors=drop("layers.1.mlp.up_proj.weight"))
    variant("missing-codebook", 4, "candidate_selector.successor_codebook",
            tensors=drop("candidate_selector.successor_codebook"))
    variant("shape", 4, "hidden_norm.weight has shape [2, 32], expected [64]",
            tensors=reshape("hidden_norm.weight", [2, 32]))
    variant("conv-shape", 4, "layers.0.attention_conv.kernel_projection.weight",
            tensors=reshape("layers.0.attention_conv.kernel_projection.weight", [64, 24]))
    variant("dtype", 3, "I16", tensors=retype("norm.weight"))
    variant("truncated", 2, "model.safetensors",
            tensors=lambda src, dst: open(dst, "wb").write(open(src, "rb").read()[:-100]))
    variant("json", 2, "config.json", edit=lambda c: c.clear())
    with open(os.path.join(out, "broken", "json", "config.json"), "w") as f:
        f.write("{\"architectures\": [")
    cases[-1]["text"] = "config.json: line"
    variant("no-weights", 1, "no model.safetensors", tensors=lambda src, dst: None)
    os.makedirs(os.path.join(out, "broken", "no-config"), exist_ok=True)
    cases.append({"name": "no-config", "dir": os.path.join(out, "broken", "no-config"), "status": 1,
                  "text": "config.json"})
    cases.append({"name": "not-a-dir", "dir": os.path.join(out, "broken", "missing"), "status": 1,
                  "text": "cannot open"})
    return cases


def main():
    out = os.path.abspath(sys.argv[1])
    os.makedirs(out, exist_ok=True)
    target_dir = os.path.join(out, "target")
    run(os.path.join(TOOLS, "make_model.py"), "--preset", "tiny", "--format", "hf-f32", "--untied", "--seed", "11",
        "--out", target_dir, "--quiet")
    target = reference.load_model(target_dir)
    hidden = target["config"]["hidden"]
    cases = []
    for i, (name, args, steps) in enumerate(DRAFTS):
        d = os.path.join(out, name)
        shutil.rmtree(d, ignore_errors=True)
        make_draft.main(["--target", target_dir, "--out", d, *args])
        n_targets = len(make_draft_config(d)["dflash_config"]["target_layer_ids"])
        # the features' seed is moved on until every token is decided by a clear margin
        for seed in range(100 + 10 * i, 110 + 10 * i):
            got, margin = expected_steps(target, d, steps, n_targets * hidden, np.random.default_rng(seed))
            if margin > 1e-3:
                break
        else:
            raise SystemExit(f"{name}: no features seed gives tokens decided by a margin above 1e-3")
        cases.append({"name": name, "dir": d, "target": target_dir, "steps": got})
    with open(os.path.join(out, "cases.json"), "w") as f:
        json.dump({"cases": cases}, f)
    with open(os.path.join(out, "broken.json"), "w") as f:
        json.dump({"target": target_dir, "cases": write_broken(out, os.path.join(out, "dflash2-bf16"))}, f)
    write_states(out, target_dir, target)
    write_generation(out)
    with open(sys.argv[2], "w") as f:
        f.write("ok\n")


def write_states(out, target_dir, target):
    """states.json: the target's residual stream after layers [1, 0] for a fixed id sequence."""
    ids, x = [], 7
    for _ in range(10):
        x = (x * 1103515245 + 12345) % (1 << 31)
        ids.append(x % target["config"]["vocab"])
    states = []
    reference.forward(target, ids, states=states)
    rows = np.concatenate([states[1], states[0]], axis=1)
    with open(os.path.join(out, "states.json"), "w") as f:
        json.dump({"target": target_dir, "ids": ids, "layers": [1, 0], "states": rows.tolist()}, f)


def write_generation(out):
    """generate.json: a tied target (greedy repeats its input) with a DFlash and a DFlash2 draft,
    and prompts for pd_generate against pd_draft_generate."""
    target_dir = os.path.join(out, "target-tied")
    run(os.path.join(TOOLS, "make_model.py"), "--preset", "tiny", "--format", "hf-f32", "--seed", "12",
        "--out", target_dir, "--quiet")
    drafts = []
    # The target repeats its last token; with a large input_embedding_scale the draft's rows keep
    # their token's embedding, so it proposes its mask token: 'a' (id 64), accepted after an 'a'.
    common = ["--mask-id", "64", "--embedding-scale", "30"]
    for name, args in (("gen-dflash", ["--kind", "dflash", "--block-size", "6", "--target-layers", "0,1",
                                       "--seed", "6", *common]),
                       ("gen-dflash2", ["--kind", "dflash2", "--dtype", "bf16", "--block-size", "8",
                                        "--target-layers", "1", "--layer-types", "sliding_attention,full_attention",
                                        "--sliding-window", "3", "--softcap", "30.0", "--top-k", "4", "--seed", "7",
                                        *common])):
        d = os.path.join(out, name)
        shutil.rmtree(d, ignore_errors=True)
        make_draft.main(["--target", target_dir, "--out", d, *args])
        drafts.append(d)
    # a draft whose down projection is 80 columns wide: loads as stored, cannot be quantized
    unquantizable = os.path.join(out, "ffn80")
    shutil.rmtree(unquantizable, ignore_errors=True)
    make_draft.main(["--target", target_dir, "--out", unquantizable, "--kind", "dflash", "--ffn", "80",
                     "--target-layers", "0"])
    prompts = ["hello world", "the cat sat on the mat", "aaaa", "zq", "banana"]
    # the same weights as BF16 and as Q4_0 blocks: other kernels, the same identity
    others = []
    for fmt, path in (("hf-bf16", "target-tied-bf16"), ("gguf-q4_0", "target-tied-q4_0.gguf")):
        others.append(os.path.join(out, path))
        run(os.path.join(TOOLS, "make_model.py"), "--preset", "tiny", "--format", fmt, "--seed", "12",
            "--out", others[-1], "--quiet")
    with open(os.path.join(out, "generate.json"), "w") as f:
        json.dump({"target": target_dir, "targets": [target_dir, *others], "drafts": drafts, "prompts": prompts,
                   "unquantizable": unquantizable}, f)


def make_draft_config(d):
    with open(os.path.join(d, "config.json")) as f:
        return json.load(f)


if __name__ == "__main__":
    main()

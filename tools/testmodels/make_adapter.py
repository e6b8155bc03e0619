#!/usr/bin/python3
"""Write random PEFT LoRA adapters for the random Qwen3 test models, and compute
what a model with adapters applied must output (an independent numpy merge).

  make_adapter.py write --model PATH | --preset NAME  --out DIR [options]
      adapter_config.json + adapter_model.safetensors as PEFT writes them.
      --rank R --alpha A [--rslora] --targets q,k,v,o,gate,up,down --layers 0,2
      --no-prefix (keys without "base_model.model.") --adapter-name NAME
      (keys "lora_A.NAME.weight") --dtype F32|BF16|F16 --seed S
      --refuse KIND writes an adapter that pocketdec must refuse (see REFUSALS).
  make_adapter.py reference --model PATH --adapter DIR[:WEIGHT] ... --ids 1,2,3 --out FILE
      W += WEIGHT * scale * B @ A in float64 for every adapter (scale = alpha/r,
      or alpha/sqrt(r) with rsLoRA), then reference.py's forward: the JSON holds
      ids, logits and hidden of every position.

The reference reads the adapter files with its own parser (not pocketdec's),
so a key or scale mistake on either side shows up as a mismatch.
"""

import argparse
import json
import os
import sys
import zlib

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_model  # noqa: E402  (f32_to_bf16_bits, PRESETS)
import reference  # noqa: E402
import safetensors_io  # noqa: E402  (on the path make_model adds)

PROJ = {"q": "self_attn.q_proj", "k": "self_attn.k_proj", "v": "self_attn.v_proj", "o": "self_attn.o_proj",
        "gate": "mlp.gate_proj", "up": "mlp.up_proj", "down": "mlp.down_proj"}

# kind: what the adapter holds that pocketdec must refuse
REFUSALS = {
    "dora": "use_dora true, with lora_magnitude_vector tensors",
    "dora-tensor": "a lora_magnitude_vector tensor although use_dora is false",
    "bias": 'bias "all"',
    "lora-bias": "lora_bias true, with lora_B.bias tensors",
    "lora-bias-tensor": "a lora_B.bias tensor only",
    "modules-to-save": 'modules_to_save ["score"]',
    "rank-pattern": 'rank_pattern {"q_proj": 2}',
    "alpha-pattern": 'alpha_pattern {"q_proj": 2}',
    "embed": "target_modules with embed_tokens, lora_embedding_A/B tensors",
    "lm-head": "target_modules with lm_head, lm_head.lora_A/B tensors",
    "lm-head-tensor": "lm_head.lora_A/B tensors although target_modules does not list it",
    "missing-b": "a lora_A without its lora_B",
    "bad-shape": "a lora_B with one row too many",
    "bad-rank": "a lora_A whose rank differs from r",
    "hidden": "made for a model with twice the hidden size",
    "layer": "adapts a layer the model does not have",
    "not-lora": 'peft_type "PREFIX_TUNING"',
}


def shapes_of(c):
    """[out, in] of each projection for a reference config dict."""
    q, kv = c["heads"] * c["head_dim"], c["kv_heads"] * c["head_dim"]
    H, F = c["hidden"], c["ffn"]
    return {"q": (q, H), "k": (kv, H), "v": (kv, H), "o": (H, q), "gate": (F, H), "up": (F, H), "down": (H, F)}


def config_of(args):
    if args.preset:
        p = make_model.PRESETS[args.preset]
        return {k: p[k] for k in ("layers", "hidden", "heads", "kv_heads", "head_dim", "ffn")}
    return reference.load_model(args.model)["config"]


def write_safetensors(path, tensors):
    """tensors: {name: (dtype, array)}; PEFT/safetensors layout."""
    safetensors_io.write(path, tensors, metadata={"format": "pt"})


def rng_for(seed, name):
    return np.random.default_rng([seed, zlib.crc32(name.encode())])


def write(args):
    c = config_of(args)
    if args.refuse == "hidden":
        c = dict(c, hidden=2 * c["hidden"])
    shapes = shapes_of(c)
    targets = args.targets.split(",")
    layers = range(c["layers"]) if args.layers is None else [int(x) for x in args.layers.split(",")]
    if args.refuse == "layer":
        layers = [c["layers"]]
    r, dt = args.rank, args.dtype
    scale = args.alpha / (np.sqrt(r) if args.rslora else r)
    prefix = "" if args.no_prefix else "base_model.model."
    name = f".{args.adapter_name}" if args.adapter_name else ""
    tensors = {}
    for layer in layers:
        for t in targets:
            out, inp = shapes[t]
            module = f"{prefix}model.layers.{layer}.{PROJ[t]}"
            # A ~ N(0, 1/in), B ~ N(0, 1/r) / scale / 2: the update is half the size of W
            a = rng_for(args.seed, module + "A").standard_normal((r, inp)) / np.sqrt(inp)
            b = rng_for(args.seed, module + "B").standard_normal((out, r)) / np.sqrt(r) / scale / 2
            tensors[f"{module}.lora_A{name}.weight"] = (dt, a)
            tensors[f"{module}.lora_B{name}.weight"] = (dt, b)
    cfg = {"peft_type": "LORA", "task_type": "CAUSAL_LM", "base_model_name_or_path": args.base_name,
           "r": r, "lora_alpha": args.alpha, "use_rslora": args.rslora, "lora_dropout": 0.0,
           "target_modules": sorted(PROJ[t].split(".")[1] for t in targets), "bias": "none",
           "modules_to_save": None, "use_dora": False, "rank_pattern": {}, "alpha_pattern": {},
           "fan_in_fan_out": False, "layers_to_transform": None if args.layers is None else list(layers),
           "layer_replication": None, "init_lora_weights": True, "inference_mode": True, "revision": None}
    first = f"{prefix}model.layers.{layers[0]}.{PROJ[targets[0]]}"
    kind = args.refuse
    if kind in ("dora", "dora-tensor"):
        cfg["use_dora"] = kind == "dora"
        tensors[f"{first}.lora_magnitude_vector{name}.weight"] = (dt, np.ones((1, shapes[targets[0]][0])))
    elif kind == "bias":
        cfg["bias"] = "all"
    elif kind in ("lora-bias", "lora-bias-tensor"):
        cfg["lora_bias"] = kind == "lora-bias"
        tensors[f"{first}.lora_B{name}.bias"] = (dt, np.ones((1, shapes[targets[0]][0])))
    elif kind == "modules-to-save":
        cfg["modules_to_save"] = ["score"]
    elif kind in ("rank-pattern", "alpha-pattern"):
        cfg[kind.replace("-", "_")] = {"q_proj": 2}
    elif kind in ("embed", "lm-head", "lm-head-tensor"):
        module, rows = ("model.embed_tokens", "lora_embedding") if kind == "embed" else ("lm_head", "lora")
        if kind != "lm-head-tensor":
            cfg["target_modules"].append(module.split(".")[-1])
        vocab = 64
        tensors[f"{prefix}{module}.{rows}_A{name}" + ("" if kind == "embed" else ".weight")] = (dt, np.ones((r, vocab)))
        tensors[f"{prefix}{module}.{rows}_B{name}" + ("" if kind == "embed" else ".weight")] = (dt, np.ones((vocab, r)))
    elif kind == "missing-b":
        del tensors[f"{first}.lora_B{name}.weight"]
    elif kind == "bad-shape":
        k = f"{first}.lora_B{name}.weight"
        tensors[k] = (dt, np.ones((tensors[k][1].shape[0] + 1, r)))
    elif kind == "bad-rank":
        k = f"{first}.lora_A{name}.weight"
        tensors[k] = (dt, np.ones((r + 1, tensors[k][1].shape[1])))
    elif kind == "not-lora":
        cfg["peft_type"] = "PREFIX_TUNING"
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "adapter_config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    write_safetensors(os.path.join(args.out, "adapter_model.safetensors"), tensors)
    if not args.quiet:
        print(f"wrote {args.out}: {len(tensors)} tensors, rank {r}, scale {scale:g}"
              + (f", refusal {kind}" if kind else ""), file=sys.stderr)


def read_adapter(path):
    """[(base weight name, float64 delta = scale * B @ A)] of a PEFT directory."""
    with open(os.path.join(path, "adapter_config.json")) as f:
        cfg = json.load(f)
    r, alpha = cfg["r"], cfg.get("lora_alpha", 8)
    scale = alpha / (np.sqrt(r) if cfg.get("use_rslora") else r)
    tensors = reference.read_safetensors(os.path.join(path, "adapter_model.safetensors"))
    pairs = {}
    for key, x in tensors.items():
        module, _, rest = key.removeprefix("base_model.model.").partition(".lora_")
        pairs.setdefault(module, {})[rest[0]] = x  # rest is "A.weight" or "A.<name>.weight"
    return [(m + ".weight", scale * (p["B"] @ p["A"])) for m, p in sorted(pairs.items())]


def adapted_model(model_path, adapters):
    """reference.load_model with every (dir, weight) adapter merged in float64."""
    model = reference.load_model(model_path)
    w = model["weights"]
    for d, weight in adapters:
        for name, delta in read_adapter(d):
            w[name] = w[name] + weight * delta
    return model


def parse_adapter_arg(s):
    d, sep, wt = s.rpartition(":")
    try:
        return (d, float(wt)) if sep else (s, 1.0)
    except ValueError:
        return (s, 1.0)


def ref(args):
    model = adapted_model(args.model, [parse_adapter_arg(a) for a in args.adapter])
    ids = [int(t) for t in args.ids.split(",")]
    hidden, logits = reference.forward(model, ids)
    with open(args.out, "w") as f:
        json.dump({"ids": ids, "logits": logits.tolist(), "hidden": hidden.tolist()}, f)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write")
    g = w.add_mutually_exclusive_group(required=True)
    g.add_argument("--model", help="the model the adapter is for (HF dir or .gguf)")
    g.add_argument("--preset", choices=sorted(make_model.PRESETS))
    w.add_argument("--out", required=True)
    w.add_argument("--rank", type=int, default=4)
    w.add_argument("--alpha", type=float, default=8.0)
    w.add_argument("--rslora", action="store_true")
    w.add_argument("--targets", default="q,k,v,o,gate,up,down")
    w.add_argument("--layers", help="comma-separated layer indices (default: all)")
    w.add_argument("--no-prefix", action="store_true")
    w.add_argument("--adapter-name", help='insert the adapter name in the keys ("default")')
    w.add_argument("--dtype", default="F32", choices=["F32", "BF16", "F16"])
    w.add_argument("--seed", type=int, default=0)
    w.add_argument("--base-name", default="pocketdec/random-qwen3")
    w.add_argument("--refuse", choices=sorted(REFUSALS))
    w.add_argument("--quiet", action="store_true")
    r = sub.add_parser("reference")
    r.add_argument("--model", required=True)
    r.add_argument("--adapter", action="append", default=[], help="DIR[:WEIGHT], repeatable")
    r.add_argument("--ids", required=True)
    r.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    (write if args.cmd == "write" else ref)(args)


if __name__ == "__main__":
    main()

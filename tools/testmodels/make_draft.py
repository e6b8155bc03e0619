#!/usr/bin/python3
"""Write a random DFlash or DFlash2 draft model for a target made by make_model.py.

The draft is an HF directory in the layout of the z-lab release
(tests/fixtures/dflash2-config.json and dflash2-safetensors-header.json of z-lab/dflash):
config.json with `architectures` ["DFlashDraftModel"] or ["DFlash2DraftModel"] and a
`dflash_config` (block_size, mask_token_id, target_layer_ids, output_multiplier,
final_logit_softcapping, and for DFlash2 conv_kernel_size, conv_group_size, selector_rank,
selector_top_k), `layer_types` with `sliding_window`, `rope_parameters`; tensors without a
`model.` prefix:

  fc.weight [H, n_targets*H]   hidden_norm.weight [H]   norm.weight [H]
  layers.N.{input_layernorm,post_attention_layernorm}.weight [H]
  layers.N.self_attn.{q,k,v,o}_proj.weight, layers.N.self_attn.{q,k}_norm.weight [head_dim]
  layers.N.mlp.{gate,up,down}_proj.weight
  DFlash2: layers.N.{attention_conv,mlp_conv}.base_kernel [2, taps, H]
           layers.N.{attention_conv,mlp_conv}.kernel_projection.weight [2*taps*H/group, H]
           candidate_selector.hidden_projection.weight [rank, H]
           candidate_selector.{predecessor,successor}_codebook [vocab, rank]   (no ".weight")

Hidden size and vocabulary come from the target's config.json. Each tensor has its own
generator seeded with (seed, crc32(name)), as in make_model.py.

  make_draft.py --target /tmp/tiny-hf --kind dflash2 --out /tmp/tiny-dflash2 --dtype bf16
"""

import argparse
import json
import os
import sys
import zlib

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import safetensors_io  # noqa: E402


def tensor_shapes(c):
    """{name: shape} of a draft with config dict c (the keys written to config.json)."""
    dc = c["dflash_config"]
    H, hd, F = c["hidden_size"], c["head_dim"], c["intermediate_size"]
    Q, KV = c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd
    shapes = {"fc.weight": (H, len(dc["target_layer_ids"]) * H), "hidden_norm.weight": (H,), "norm.weight": (H,)}
    for i in range(c["num_hidden_layers"]):
        p = f"layers.{i}."
        shapes.update({
            p + "input_layernorm.weight": (H,), p + "post_attention_layernorm.weight": (H,),
            p + "self_attn.q_proj.weight": (Q, H), p + "self_attn.k_proj.weight": (KV, H),
            p + "self_attn.v_proj.weight": (KV, H), p + "self_attn.o_proj.weight": (H, Q),
            p + "self_attn.q_norm.weight": (hd,), p + "self_attn.k_norm.weight": (hd,),
            p + "mlp.gate_proj.weight": (F, H), p + "mlp.up_proj.weight": (F, H), p + "mlp.down_proj.weight": (H, F)})
        if "conv_kernel_size" in dc:
            taps, groups = dc["conv_kernel_size"], H // dc["conv_group_size"]
            for conv in ("attention_conv", "mlp_conv"):
                shapes[p + conv + ".base_kernel"] = (2, taps, H)
                shapes[p + conv + ".kernel_projection.weight"] = (2 * taps * groups, H)
    if "selector_rank" in dc:
        r = dc["selector_rank"]
        shapes["candidate_selector.hidden_projection.weight"] = (r, H)
        shapes["candidate_selector.predecessor_codebook"] = (c["vocab_size"], r)
        shapes["candidate_selector.successor_codebook"] = (c["vocab_size"], r)
    return shapes


def generate(name, shape, seed):
    """Random float32 values: norms 1 + 0.1 N(0,1), kernels and codebooks N(0, 0.5^2),
    matrices N(0, 1/in)."""
    rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
    x = rng.standard_normal(shape)
    if len(shape) == 1:
        x = 1.0 + 0.1 * x
    elif name.endswith("base_kernel") or "codebook" in name:
        x = 0.5 * x
    elif name.endswith("kernel_projection.weight"):
        x = x * (0.3 / np.sqrt(shape[1]))
    else:
        x = x / np.sqrt(shape[1])
    return x.astype(np.float32)


def draft_config(args, target):
    kind2 = args.kind == "dflash2"
    n = args.layers
    types = args.layer_types.split(",") if args.layer_types else ["full_attention"] * n
    if len(types) != n:
        raise SystemExit(f"--layer-types lists {len(types)} types for {n} layers")
    dc = {"block_size": args.block_size,
          "mask_token_id": target["vocab_size"] - 1 if args.mask_id is None else args.mask_id,
          "target_layer_ids": [int(v) for v in args.target_layers.split(",")],
          "output_multiplier": args.output_multiplier,
          "final_logit_softcapping": args.softcap}
    if args.embedding_scale != 1.0:
        dc["input_embedding_scale"] = args.embedding_scale
    if kind2:
        dc.update(conv_kernel_size=args.taps, conv_group_size=args.group_size, selector_rank=args.rank,
                  selector_top_k=args.top_k)
    c = {"architectures": ["DFlash2DraftModel" if kind2 else "DFlashDraftModel"],
         "attention_bias": False, "attention_dropout": 0.0,
         "dflash_config": dc, "dtype": {"f32": "float32", "bf16": "bfloat16", "f16": "float16"}[args.dtype],
         "head_dim": args.head_dim, "hidden_act": "silu", "hidden_size": target["hidden_size"],
         "intermediate_size": args.ffn, "layer_types": types,
         "max_position_embeddings": target.get("max_position_embeddings", 4096),
         "model_type": "qwen3", "num_attention_heads": args.heads, "num_hidden_layers": n,
         "num_key_value_heads": args.kv_heads, "num_target_layers": target["num_hidden_layers"],
         "rms_norm_eps": args.eps, "rope_parameters": {"rope_theta": args.rope_theta, "rope_type": "default"},
         "sliding_window": args.sliding_window if "sliding_attention" in types else None,
         "tie_word_embeddings": False, "use_cache": False,
         "use_sliding_window": "sliding_attention" in types, "vocab_size": target["vocab_size"]}
    if args.is_causal is not None:
        c["is_causal"] = args.is_causal == "true"
    return c


def write_draft(out, config, seed, dtype, shards=1):
    """config.json and the safetensors of a random draft (sharded with an index when shards > 1)."""
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    st_dtype = {"f32": "F32", "bf16": "BF16", "f16": "F16"}[dtype]
    tensors = {name: generate(name, shape, seed) for name, shape in tensor_shapes(config).items()}
    names = sorted(tensors)
    if shards <= 1:
        safetensors_io.write(os.path.join(out, "model.safetensors"), tensors, st_dtype, metadata={"format": "pt"})
        return
    weight_map = {}
    for s in range(shards):
        file = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        part = {n: tensors[n] for n in names[s::shards]}
        safetensors_io.write(os.path.join(out, file), part, st_dtype, metadata={"format": "pt"})
        weight_map.update({n: file for n in part})
    with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {}, "weight_map": weight_map}, f, indent=2)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target", required=True, help="the target's HF directory (its config.json)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--kind", choices=["dflash", "dflash2"], default="dflash2")
    ap.add_argument("--dtype", choices=["f32", "bf16", "f16"], default="f32")
    ap.add_argument("--shards", type=int, default=1)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--head-dim", type=int, default=16)
    ap.add_argument("--ffn", type=int, default=96)
    ap.add_argument("--block-size", type=int, default=8)
    ap.add_argument("--target-layers", default="0", help="comma-separated target layer ids")
    ap.add_argument("--mask-id", type=int, help="default: the target's last id")
    ap.add_argument("--layer-types", help="comma-separated full_attention / sliding_attention")
    ap.add_argument("--sliding-window", type=int, default=4)
    ap.add_argument("--is-causal", choices=["true", "false"])
    ap.add_argument("--output-multiplier", type=float, default=1.0)
    ap.add_argument("--softcap", type=float, help="final_logit_softcapping (default none)")
    ap.add_argument("--embedding-scale", type=float, default=1.0)
    ap.add_argument("--taps", type=int, default=2, help="DFlash2 conv_kernel_size")
    ap.add_argument("--group-size", type=int, default=16, help="DFlash2 conv_group_size")
    ap.add_argument("--rank", type=int, default=8, help="DFlash2 selector_rank")
    ap.add_argument("--top-k", type=int, default=4, help="DFlash2 selector_top_k")
    ap.add_argument("--eps", type=float, default=1e-6)
    ap.add_argument("--rope-theta", type=float, default=1e6)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    with open(os.path.join(args.target, "config.json")) as f:
        target = json.load(f)
    write_draft(args.out, draft_config(args, target), args.seed, args.dtype, args.shards)


if __name__ == "__main__":
    main()

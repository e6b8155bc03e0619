#!/usr/bin/python3
"""Independent float64 numpy reference of a DFlash / DFlash2 draft's forward pass.

Semantics of the z-lab release (z-lab/dflash, dflash/model.py with DFlash2DraftModel):
  context  c = RMSNorm(fc(features)) with hidden_norm; features = the target's hidden states
           after each target layer, concatenated (HF hidden_states[layer + 1]), positions 0..S-1
  block    x = target embeddings of the block ids (times input_embedding_scale), positions S..S+T-1
  layer    h = RMSNorm(x); DFlash2: h = conv_0(h) with kernels from kernel_projection(h);
           q = q_norm(q_proj h); k = k_norm(k_proj [c; h]); v = v_proj [c; h]; RoPE (rotate-half);
           attention of the block over context and block: all of it, except that a causal layer
           (is_causal, or when absent a sliding_attention layer) sees no later block row and a
           sliding layer no key sliding_window or more positions away (either side);
           o = o_proj(att); DFlash2: o = conv_1(o) with the kernels of the same projection; x += o;
           then the same around the SwiGLU MLP (post_attention_layernorm, mlp_conv)
  conv     out[t] = sum_k (base[side][k] + dyn[t, side, k, group]) * in[t - k], zero before row 0
  output   RMSNorm(x) with norm for rows 1..T-1, the target's lm_head, times output_multiplier,
           then softcap * tanh(z / softcap) when final_logit_softcapping is set
  tokens   DFlash: argmax; DFlash2: top-k candidates of each row, then the greedy walk
           score[c] = logit[c] + sum_r pred[prev, r] * P(h)[r] * succ[c, r], prev = block[0] first

  draft_reference.py --target T --draft D --features F.npy --block 5,9,9,9 --out expected.json
"""

import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference  # noqa: E402  (the target's readers and the Qwen3 pieces: RMSNorm, RoPE, SiLU)


def load_draft(path):
    """{"config": config.json, "weights": {name: float64}} of a draft directory."""
    with open(os.path.join(path, "config.json")) as f:
        config = json.load(f)
    _, weights = reference.load_hf(path)
    weights = {k[:-len(".weight")] if "codebook" in k and k.endswith(".weight") else k: v for k, v in weights.items()}
    return {"config": config, "weights": weights}


def _value(c, key, default=None):
    v = c.get("dflash_config", {}).get(key)
    if v is None:
        v = c.get(key)
    return default if v is None else v


def _theta(c):
    if c.get("rope_theta") is not None:
        return float(c["rope_theta"])
    for key in ("rope_parameters", "rope_scaling"):
        if isinstance(c.get(key), dict) and c[key].get("rope_theta") is not None:
            return float(c[key]["rope_theta"])
    return 10000.0


def _conv(x, dyn, base, group):
    """Grouped dynamic causal convolution over the rows of x [T, H]: dyn [T, taps, G], base [taps, H]."""
    T, H = x.shape
    out = np.zeros_like(x)
    for k in range(base.shape[0]):
        shifted = np.zeros_like(x)
        shifted[k:] = x[:T - k]
        out += (base[k][None, :] + np.repeat(dyn[:, k, :], group, axis=1)) * shifted
    return out


def _attention(q, k, v, visible):
    """q [T, nh, hd], k/v [N, nkv, hd], visible [T, N] -> [T, nh*hd]."""
    group = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    s = np.einsum("qhd,khd->hqk", q, k) / np.sqrt(q.shape[-1])
    s = np.where(visible[None], s, -np.inf)
    s -= s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(axis=-1, keepdims=True)
    return np.einsum("hqk,khd->qhd", p, v).reshape(q.shape[0], -1)


def hidden_states(draft, target, features, block):
    """Final-norm hidden states [T, H] of the block's rows."""
    c, w = draft["config"], draft["weights"]
    tw = target["weights"]
    eps, theta = float(c.get("rms_norm_eps", 1e-6)), _theta(c)
    nh = c["num_attention_heads"]
    nkv = c.get("num_key_value_heads", nh)
    hd = c.get("head_dim") or c["hidden_size"] // nh
    taps = _value(c, "conv_kernel_size")
    two = "DFlash2DraftModel" in c["architectures"]
    group = _value(c, "conv_group_size")
    features = np.asarray(features, np.float64)
    block = np.asarray(block, np.int64)
    S, T = features.shape[0], block.size
    ctx = reference.rms_norm(features @ w["fc.weight"].T, w["hidden_norm.weight"], eps)
    x = tw["model.embed_tokens.weight"][block] * float(_value(c, "input_embedding_scale", 1.0))
    qpos, kpos = S + np.arange(T), np.arange(S + T)
    types = c.get("layer_types") or ["full_attention"] * c["num_hidden_layers"]

    def sublayer(i, conv_name, x, body):
        h = reference.rms_norm(x, w[f"layers.{i}.{'input_layernorm' if conv_name == 'attention_conv' else 'post_attention_layernorm'}.weight"], eps)
        if not two:
            return x + body(h)
        p = f"layers.{i}.{conv_name}."
        dyn = (h @ w[p + "kernel_projection.weight"].T).reshape(T, 2, taps, -1)
        h = _conv(h, dyn[:, 0], w[p + "base_kernel"][0], group)
        return x + _conv(body(h), dyn[:, 1], w[p + "base_kernel"][1], group)

    for i in range(c["num_hidden_layers"]):
        p = f"layers.{i}."
        sliding = types[i] == "sliding_attention"
        causal = bool(c["is_causal"]) if c.get("is_causal") is not None else sliding
        visible = np.ones((T, S + T), bool)
        if causal:
            visible &= kpos[None, :] <= qpos[:, None]
        if sliding:
            window = c["sliding_window"]
            visible &= qpos[:, None] - kpos[None, :] < window
            if not causal:
                visible &= kpos[None, :] - qpos[:, None] < window

        def attend(h, p=p, visible=visible):
            both = np.concatenate([ctx, h])
            q = (h @ w[p + "self_attn.q_proj.weight"].T).reshape(T, nh, hd)
            k = (both @ w[p + "self_attn.k_proj.weight"].T).reshape(S + T, nkv, hd)
            v = (both @ w[p + "self_attn.v_proj.weight"].T).reshape(S + T, nkv, hd)
            q = reference.rope(reference.rms_norm(q, w[p + "self_attn.q_norm.weight"], eps), qpos, theta)
            k = reference.rope(reference.rms_norm(k, w[p + "self_attn.k_norm.weight"], eps), kpos, theta)
            return _attention(q, k, v, visible) @ w[p + "self_attn.o_proj.weight"].T

        def mlp(h, p=p):
            gate, up = h @ w[p + "mlp.gate_proj.weight"].T, h @ w[p + "mlp.up_proj.weight"].T
            return (reference.silu(gate) * up) @ w[p + "mlp.down_proj.weight"].T

        x = sublayer(i, "attention_conv", x, attend)
        x = sublayer(i, "mlp_conv", x, mlp)
    return reference.rms_norm(x, w["norm.weight"], eps)


def top_k(logits, k):
    """Ids of the k largest values of each row, best first (ties: lower id first)."""
    return np.argsort(-logits, axis=-1, kind="stable")[:, :k]


def propose(draft, target, features, block):
    """{"logits": [T-1, V], "tokens": [T-1], "margin": smallest gap that decides a token}."""
    c, w = draft["config"], draft["weights"]
    hidden = hidden_states(draft, target, features, block)[1:]
    z = hidden @ target["weights"]["lm_head.weight"].T * float(_value(c, "output_multiplier", 1.0))
    cap = _value(c, "final_logit_softcapping")
    if cap is not None and float(cap) > 0:
        z = float(cap) * np.tanh(z / float(cap))
    srt = -np.sort(-z, axis=-1)
    if "DFlash2DraftModel" not in c["architectures"]:
        return {"logits": z, "tokens": top_k(z, 1)[:, 0], "margin": float(np.min(srt[:, 0] - srt[:, 1]))}
    k = int(_value(c, "selector_top_k"))
    cand = top_k(z, k)
    margin = float(np.min(srt[:, k - 1] - srt[:, k])) if k < z.shape[1] else np.inf
    proj = hidden @ w["candidate_selector.hidden_projection.weight"].T
    pred, succ = w["candidate_selector.predecessor_codebook"], w["candidate_selector.successor_codebook"]
    prev, path = int(block[0]), []
    for p in range(z.shape[0]):
        scores = z[p, cand[p]] + (succ[cand[p]] * (pred[prev] * proj[p])[None, :]).sum(axis=1)
        order = np.sort(scores)[::-1]
        margin = min(margin, float(order[0] - order[1]))
        prev = int(cand[p][int(np.argmax(scores))])
        path.append(prev)
    return {"logits": z, "tokens": np.array(path), "margin": margin}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target", required=True)
    ap.add_argument("--draft", required=True)
    ap.add_argument("--features", required=True, help=".npy of [positions, n_targets * hidden]")
    ap.add_argument("--block", required=True, help="comma-separated ids")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    r = propose(load_draft(args.draft), reference.load_model(args.target), np.load(args.features),
                [int(v) for v in args.block.split(",")])
    with open(args.out, "w") as f:
        json.dump({"logits": r["logits"].tolist(), "tokens": [int(t) for t in r["tokens"]], "margin": r["margin"]}, f)


if __name__ == "__main__":
    main()

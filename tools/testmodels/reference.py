#!/usr/bin/python3
"""Independent float64 numpy reference of the Qwen3 forward pass (HF semantics).

It has its own readers (it shares no code with make_model.py):
  - an HF directory: config.json plus model.safetensors, or sharded
    model-0000N-of-0000M.safetensors with model.safetensors.index.json (F32, F16, BF16);
  - a GGUF v3 file: F32, F16, BF16, Q8_0, Q4_0, Q4_1, dequantized exactly as ggml's
    dequantize_row_* (float32 results; Q4_1's d*q + m is rounded to float32 like ggml).

All weights are held as float64 (exact images of the stored values) and the whole
forward runs in float64, so it is an exact-as-possible target for F32 compute.

  reference.py --model PATH --ids 1,2,3 --out expected.json

writes {"ids": [...], "logits": [[V floats] per position], "hidden": [[H floats] per position]}
with "hidden" the final-norm hidden states.  As a module: load_model(path) -> dict,
forward(model, ids) -> (hidden [T, H], logits [T, V]).
"""

import argparse
import json
import os
import struct
import sys

import numpy as np

# ----------------------------------------------------------------------------- safetensors

ST_DTYPES = {"F32": ("<f4", 4), "F16": ("<f2", 2), "BF16": ("<u2", 2)}


def _bf16_to_f32(u16):
    return (u16.astype(np.uint32) << np.uint32(16)).view(np.float32)


def read_safetensors(path):
    """{name: float64 array} of one safetensors file, validating the header."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        if n > size - 8:
            raise ValueError(f"{path}: header length {n} past the end of the file")
        header = json.loads(f.read(n))
    data = np.memmap(path, np.uint8, "r", offset=8 + n) if size > 8 + n else np.zeros(0, np.uint8)
    out, spans = {}, []
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dt, item = ST_DTYPES[info["dtype"]]
        begin, end = info["data_offsets"]
        count = int(np.prod(info["shape"], dtype=np.int64))
        if not 0 <= begin <= end <= data.size or end - begin != count * item:
            raise ValueError(f"{path}: bad data_offsets for {name}")
        spans.append((begin, end, name))
        raw = np.frombuffer(data[begin:end], dtype=dt)
        vals = _bf16_to_f32(raw) if info["dtype"] == "BF16" else raw
        out[name] = vals.astype(np.float64).reshape(info["shape"])
    spans.sort()
    for (b0, e0, n0), (b1, _, n1) in zip(spans, spans[1:]):
        if b1 < e0:
            raise ValueError(f"{path}: tensors {n0} and {n1} overlap")
    return out


def load_hf(path):
    """Config and float64 weights (HF names) of an HF model directory."""
    with open(os.path.join(path, "config.json")) as f:
        c = json.load(f)
    index = os.path.join(path, "model.safetensors.index.json")
    weights = {}
    if os.path.exists(index):
        with open(index) as f:
            weight_map = json.load(f)["weight_map"]
        for shard in sorted(set(weight_map.values())):
            part = read_safetensors(os.path.join(path, shard))
            for k, v in part.items():
                if weight_map.get(k) != shard:
                    raise ValueError(f"{shard}: {k} not mapped to this shard by the index")
            weights.update(part)
        missing = set(weight_map) - set(weights)
        if missing:
            raise ValueError(f"tensors in the index but in no shard: {sorted(missing)[:5]}")
    else:
        weights = read_safetensors(os.path.join(path, "model.safetensors"))
    heads = c["num_attention_heads"]
    config = {
        "layers": c["num_hidden_layers"], "hidden": c["hidden_size"], "heads": heads,
        "kv_heads": c.get("num_key_value_heads", heads),
        "head_dim": c.get("head_dim") or c["hidden_size"] // heads,
        "ffn": c["intermediate_size"], "vocab": c["vocab_size"],
        "rope_theta": float(c.get("rope_theta", 10000.0)), "eps": float(c.get("rms_norm_eps", 1e-6)),
        "tied": bool(c.get("tie_word_embeddings", False)),
        "max_pos": c.get("max_position_embeddings"),
    }
    return config, weights


# ----------------------------------------------------------------------------- GGUF

GGUF_SCALARS = {0: "<u1", 1: "<i1", 2: "<u2", 3: "<i2", 4: "<u4", 5: "<i4", 6: "<f4", 7: "<u1",
                10: "<u8", 11: "<i8", 12: "<f8"}


class _Reader:
    def __init__(self, buf):
        self.buf, self.pos = buf, 0

    def take(self, fmt):
        vals = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += struct.calcsize(fmt)
        return vals if len(vals) > 1 else vals[0]

    def string(self):
        n = self.take("<Q")
        s = bytes(self.buf[self.pos:self.pos + n]).decode("utf-8")
        self.pos += n
        return s

    def value(self, vtype):
        if vtype == 8:
            return self.string()
        if vtype == 9:
            etype, n = self.take("<I"), self.take("<Q")
            if etype in GGUF_SCALARS:
                dt = np.dtype(GGUF_SCALARS[etype])
                arr = np.frombuffer(self.buf, dt, n, self.pos)
                self.pos += n * dt.itemsize
                return arr.tolist()
            return [self.value(etype) for _ in range(n)]
        v = np.frombuffer(self.buf, GGUF_SCALARS[vtype], 1, self.pos)[0]
        self.pos += np.dtype(GGUF_SCALARS[vtype]).itemsize
        return bool(v) if vtype == 7 else v.item()


def _deq_q8_0(raw):
    b = raw.view(np.dtype([("d", "<f2"), ("q", "i1", 32)]))
    return b["d"].astype(np.float32)[:, None] * b["q"].astype(np.float32)


def _nibbles(qs):
    """[nb, 16] bytes -> [nb, 32]: low nibbles are weights 0..15, high nibbles 16..31."""
    return np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.float32)


def _deq_q4_0(raw):
    b = raw.view(np.dtype([("d", "<f2"), ("q", "u1", 16)]))
    return (_nibbles(b["q"]) - np.float32(8)) * b["d"].astype(np.float32)[:, None]


def _deq_q4_1(raw):
    b = raw.view(np.dtype([("d", "<f2"), ("m", "<f2"), ("q", "u1", 16)]))
    return _nibbles(b["q"]) * b["d"].astype(np.float32)[:, None] + b["m"].astype(np.float32)[:, None]


# ggml type: (name, bytes per block, weights per block, float32 decoder of a raw uint8 array)
GGML = {
    0: ("F32", 4, 1, lambda r: r.view("<f4")),
    1: ("F16", 2, 1, lambda r: r.view("<f2").astype(np.float32)),
    30: ("BF16", 2, 1, lambda r: _bf16_to_f32(r.view("<u2"))),
    8: ("Q8_0", 34, 32, _deq_q8_0),
    2: ("Q4_0", 18, 32, _deq_q4_0),
    3: ("Q4_1", 20, 32, _deq_q4_1),
}


def read_gguf(path, dequantize=True):
    """(metadata dict, {name: array}, {name: type name}); arrays in numpy order (dims reversed),
    float64 when dequantize, else the raw uint8 blocks [rows, row bytes]."""
    buf = np.memmap(path, np.uint8, "r")
    r = _Reader(buf)
    if bytes(buf[:4]) != b"GGUF":
        raise ValueError(f"{path}: not a GGUF file")
    r.pos = 4
    version, n_tensors, n_kv = r.take("<I"), r.take("<Q"), r.take("<Q")
    if version != 3:
        raise ValueError(f"{path}: GGUF version {version}, want 3")
    meta = {}
    for _ in range(n_kv):
        key = r.string()
        meta[key] = r.value(r.take("<I"))
    infos = []
    for _ in range(n_tensors):
        name = r.string()
        nd = r.take("<I")
        dims = [r.take("<Q") for _ in range(nd)]
        infos.append((name, dims, r.take("<I"), r.take("<Q")))
    align = meta.get("general.alignment", 32)
    start = r.pos + (-r.pos % align)
    tensors, types = {}, {}
    for name, dims, t, off in infos:
        if t not in GGML:
            raise ValueError(f"{path}: {name} has unsupported ggml type {t}")
        tname, bbytes, bsize, dec = GGML[t]
        if off % align:
            raise ValueError(f"{path}: {name} offset {off} not aligned to {align}")
        if dims[0] % bsize:
            raise ValueError(f"{path}: {name} row of {dims[0]} not a multiple of {bsize}")
        count = int(np.prod(dims, dtype=np.int64))
        nbytes = count // bsize * bbytes
        if start + off + nbytes > buf.size:
            raise ValueError(f"{path}: {name} data past the end of the file")
        raw = np.asarray(buf[start + off:start + off + nbytes])
        shape = dims[::-1]
        types[name] = tname
        if dequantize:
            tensors[name] = dec(raw).astype(np.float64).reshape(shape)
        else:
            tensors[name] = raw.reshape(-1, dims[0] // bsize * bbytes)
    return meta, tensors, types


def _gguf_to_hf_name(name):
    fixed = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight",
             "output.weight": "lm_head.weight"}
    if name in fixed:
        return fixed[name]
    parts = name.split(".")
    if parts[0] != "blk":
        raise ValueError(f"unexpected GGUF tensor {name}")
    sub = {"attn_norm": "input_layernorm", "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj",
           "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj",
           "attn_q_norm": "self_attn.q_norm", "attn_k_norm": "self_attn.k_norm",
           "ffn_norm": "post_attention_layernorm", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
           "ffn_down": "mlp.down_proj"}[parts[2]]
    return f"model.layers.{parts[1]}.{sub}.{parts[3]}"


def load_gguf(path):
    """Config and float64 weights (HF names) of a GGUF file."""
    meta, tensors, _ = read_gguf(path)
    arch = meta["general.architecture"]
    if arch != "qwen3":
        raise ValueError(f"{path}: architecture {arch}, want qwen3")
    g = lambda k, d=None: meta.get(f"qwen3.{k}", d)
    weights = {_gguf_to_hf_name(k): v for k, v in tensors.items()}
    heads = g("attention.head_count")
    config = {
        "layers": g("block_count"), "hidden": g("embedding_length"), "heads": heads,
        "kv_heads": g("attention.head_count_kv", heads),
        "head_dim": g("attention.key_length") or g("embedding_length") // heads,
        "ffn": g("feed_forward_length"), "vocab": weights["model.embed_tokens.weight"].shape[0],
        "rope_theta": float(g("rope.freq_base", 10000.0)),
        "eps": float(g("attention.layer_norm_rms_epsilon", 1e-6)),
        "tied": "lm_head.weight" not in weights, "max_pos": g("context_length"),
    }
    return config, weights


# ----------------------------------------------------------------------------- model

def load_model(path):
    """{"config": {...}, "weights": {HF name: float64 array}} of an HF directory or a GGUF file."""
    config, weights = load_hf(path) if os.path.isdir(path) else load_gguf(path)
    if config["tied"]:
        weights.setdefault("lm_head.weight", weights["model.embed_tokens.weight"])
    elif "lm_head.weight" not in weights:
        raise ValueError("untied model without lm_head.weight")
    check_shapes(config, weights)
    return {"config": config, "weights": weights}


def check_shapes(c, w):
    H, hd, F, V = c["hidden"], c["head_dim"], c["ffn"], c["vocab"]
    want = {"model.embed_tokens.weight": (V, H), "model.norm.weight": (H,), "lm_head.weight": (V, H)}
    for i in range(c["layers"]):
        p = f"model.layers.{i}."
        want.update({
            p + "input_layernorm.weight": (H,), p + "post_attention_layernorm.weight": (H,),
            p + "self_attn.q_proj.weight": (c["heads"] * hd, H),
            p + "self_attn.k_proj.weight": (c["kv_heads"] * hd, H),
            p + "self_attn.v_proj.weight": (c["kv_heads"] * hd, H),
            p + "self_attn.o_proj.weight": (H, c["heads"] * hd),
            p + "self_attn.q_norm.weight": (hd,), p + "self_attn.k_norm.weight": (hd,),
            p + "mlp.gate_proj.weight": (F, H), p + "mlp.up_proj.weight": (F, H),
            p + "mlp.down_proj.weight": (H, F)})
    for k, shape in want.items():
        if k not in w:
            raise ValueError(f"missing tensor {k}")
        if tuple(w[k].shape) != shape:
            raise ValueError(f"{k}: shape {tuple(w[k].shape)}, want {shape}")
    extra = set(w) - set(want)
    if extra:
        raise ValueError(f"unexpected tensors: {sorted(extra)[:5]}")


def rms_norm(x, w, eps):
    """x / sqrt(mean(x^2) + eps) * w over the last axis."""
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rope(x, positions, theta):
    """NeoX rotate-half RoPE of x [T, n_heads, head_dim] at the given positions."""
    hd = x.shape[-1]
    half = hd // 2
    inv_freq = theta ** (-(2.0 * np.arange(half)) / hd)
    ang = np.asarray(positions, np.float64)[:, None] * inv_freq[None, :]
    cos = np.concatenate([np.cos(ang)] * 2, axis=-1)[:, None, :]
    sin = np.concatenate([np.sin(ang)] * 2, axis=-1)[:, None, :]
    rotated = np.concatenate([-x[..., half:], x[..., :half]], axis=-1)
    return x * cos + rotated * sin


def silu(x):
    return x * (0.5 * (1.0 + np.tanh(0.5 * x)))  # x * sigmoid(x), without overflow


def attention(q, k, v, head_dim):
    """Causal GQA attention; q [T, nh, hd], k/v [T, nkv, hd] -> [T, nh*hd]."""
    T, nh, _ = q.shape
    group = nh // k.shape[1]
    k = np.repeat(k, group, axis=1)  # query head h reads kv head h // group
    v = np.repeat(v, group, axis=1)
    scores = np.einsum("qhd,khd->hqk", q, k) / np.sqrt(head_dim)
    scores[:, np.triu(np.ones((T, T), bool), 1)] = -np.inf
    scores -= scores.max(axis=-1, keepdims=True)
    p = np.exp(scores)
    p /= p.sum(axis=-1, keepdims=True)
    return np.einsum("hqk,khd->qhd", p, v).reshape(T, -1)


def forward(model, ids, positions=None, states=None):
    """Final-norm hidden states [T, H] and logits [T, V] (float64) for token ids at
    positions 0..T-1 (or the positions given). A list given as states receives the
    residual stream [T, H] after each layer (HF's hidden_states[1:], before the final norm)."""
    c, w = model["config"], model["weights"]
    ids = np.asarray(ids, np.int64)
    if ids.ndim != 1 or ids.size == 0 or ids.min() < 0 or ids.max() >= c["vocab"]:
        raise ValueError(f"ids must be a non-empty list in [0, {c['vocab']})")
    pos = np.arange(ids.size) if positions is None else np.asarray(positions)
    T, hd, eps = ids.size, c["head_dim"], c["eps"]
    x = w["model.embed_tokens.weight"][ids]
    for i in range(c["layers"]):
        p = f"model.layers.{i}."
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        q = (h @ w[p + "self_attn.q_proj.weight"].T).reshape(T, c["heads"], hd)
        k = (h @ w[p + "self_attn.k_proj.weight"].T).reshape(T, c["kv_heads"], hd)
        v = (h @ w[p + "self_attn.v_proj.weight"].T).reshape(T, c["kv_heads"], hd)
        q = rope(rms_norm(q, w[p + "self_attn.q_norm.weight"], eps), pos, c["rope_theta"])
        k = rope(rms_norm(k, w[p + "self_attn.k_norm.weight"], eps), pos, c["rope_theta"])
        x = x + attention(q, k, v, hd) @ w[p + "self_attn.o_proj.weight"].T
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        gate = h @ w[p + "mlp.gate_proj.weight"].T
        up = h @ w[p + "mlp.up_proj.weight"].T
        x = x + (silu(gate) * up) @ w[p + "mlp.down_proj.weight"].T
        if states is not None:
            states.append(x)
    hidden = rms_norm(x, w["model.norm.weight"], eps)
    return hidden, hidden @ w["lm_head.weight"].T


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="HF model directory or .gguf file")
    ap.add_argument("--ids", required=True, help="comma-separated token ids, e.g. 1,2,3")
    ap.add_argument("--out", help="output JSON (default: stdout)")
    args = ap.parse_args(argv)
    ids = [int(t) for t in args.ids.split(",") if t.strip()]
    model = load_model(args.model)
    hidden, logits = forward(model, ids)
    doc = {"ids": ids, "logits": logits.tolist(), "hidden": hidden.tolist()}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(doc, f)
            f.write("\n")
        print(f"wrote {args.out}: {len(ids)} positions, argmax {logits.argmax(-1).tolist()}", file=sys.stderr)
    else:
        json.dump(doc, sys.stdout)
        sys.stdout.write("\n")


if __name__ == "__main__":
    main()

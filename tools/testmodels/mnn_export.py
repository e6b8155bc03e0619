"""A random Qwen3 model written in MNN's LLM export layout, as MNN's exporter lays it out with
its defaults (llmexport.py --quant_bit 4 --quant_block 64, asymmetric, 16-bit scales, fused
q/k/v and gate/up projections, the RMSNorm before gate/up folded into their op):

  llm.mnn          the graph, a FlatBuffer of MNN's schema (schema/default/*.fbs): the ops
                   pocketdec reads (LayerNorm, FusedLinear, RoPE, Attention, Convolution),
                   a RoPE cos table, a little plumbing (Input, Reshape, BinaryOp)
  llm.mnn.weight   per projection: a 22-byte header (2 dims as int16, the 16-entry value map
                   -8..7), the nibbles (element 2i in the high nibble of byte i), then one F16
                   (zero, scale) pair a block of 64: w = zero + (q - 8) * scale; norms as F32
                   gamma then F32 zero beta
  llm_config.json  the model's facts, tie_embeddings pointing at the LM head's blocks
  tokenizer.txt    MNN's tokenizer file (kind 3) for the same vocabulary

Used by make_model.py (--format mnn, and hf-mnn-f32: the same values dequantized, as F32
safetensors, for the float64 reference).
"""

import json
import os
import struct

import numpy as np

# OpType and OpParameter union values, and field ids, of MNN's schema (declaration order).
OP_BINARY, OP_CONST, OP_CONV, OP_INPUT, OP_ATTENTION, OP_ROPE, OP_FUSED, OP_LN = 7, 11, 12, 34, 299, 306, 307, 603
P_BLOB, P_CONV, P_LN, P_ATTENTION, P_ROPE, P_FUSED = 7, 9, 88, 98, 102, 103
BLOCK = 64


# ----------------------------------------------------------------------------- a FlatBuffer writer

class Table:
    """A table: {field id: (kind, value)}, kinds u8, i32, f32, table, str, vi32, vi64, vf32, vtable."""

    def __init__(self, fields):
        self.fields = dict(fields)

    of = classmethod(lambda cls, fields: cls(fields))


def flatbuffer(root):
    """Bytes of a FlatBuffer with root table `root`: objects laid out front to back, each
    child after the slot that points to it (uoffsets are unsigned and point forward)."""
    buf = bytearray(4)

    def align(n, extra=0):
        while (len(buf) + extra) % n:
            buf.append(0)

    def put_table(t):
        ids = sorted(t.fields)
        n = (ids[-1] + 1) if ids else 0
        align(4)
        vt = len(buf)
        offs = [0] * n
        for k, fid in enumerate(ids):
            offs[fid] = 4 + 4 * k
        buf.extend(struct.pack("<HH", 4 + 2 * n, 4 + 4 * len(ids)) + struct.pack(f"<{n}H", *offs))
        align(4)
        pos = len(buf)
        buf.extend(struct.pack("<i", pos - vt) + bytes(4 * len(ids)))
        for k, fid in enumerate(ids):
            kind, value = t.fields[fid]
            slot = pos + 4 + 4 * k
            if kind == "u8":
                buf[slot] = int(value) & 0xFF
            elif kind == "i32":
                buf[slot:slot + 4] = struct.pack("<i", value)
            elif kind == "f32":
                buf[slot:slot + 4] = struct.pack("<f", value)
            else:
                target = put(kind, value)
                buf[slot:slot + 4] = struct.pack("<I", target - slot)
        return pos

    def put(kind, value):
        if kind == "table":
            return put_table(value)
        if kind == "str":
            data = value.encode() + b"\0"
            align(4)
            pos = len(buf)
            buf.extend(struct.pack("<I", len(data) - 1) + data)
            return pos
        if kind == "vtable":
            align(4)
            pos = len(buf)
            buf.extend(struct.pack("<I", len(value)) + bytes(4 * len(value)))
            for i, t in enumerate(value):
                target = put_table(t)
                slot = pos + 4 + 4 * i
                buf[slot:slot + 4] = struct.pack("<I", target - slot)
            return pos
        fmt, size = {"vi32": ("<i", 4), "vi64": ("<q", 8), "vf32": ("<f", 4)}[kind]
        align(size, 4)  # the elements themselves aligned
        pos = len(buf)
        buf.extend(struct.pack("<I", len(value)))
        buf.extend(np.asarray(value, dtype=fmt).tobytes())
        return pos

    buf[0:4] = struct.pack("<I", put_table(root))
    return bytes(buf)


# ----------------------------------------------------------------------------- the weights

def quantize(x):
    """MNN's asymmetric 4-bit blocks of 64 of a float32 matrix [rows, cols]: the stored
    nibbles (0..15), the F16 zero and scale of each block, and the values they stand for
    (zero + (q - 8) * scale in float64)."""
    rows, cols = x.shape
    b = x.reshape(rows, cols // BLOCK, BLOCK).astype(np.float64)
    mn, mx = b.min(axis=2), b.max(axis=2)
    scale = ((mx - mn) / 15).astype(np.float16)
    zero = (mn + 8 * scale.astype(np.float64)).astype(np.float16)
    s64 = scale.astype(np.float64)
    s_safe = np.where(s64 > 0, s64, 1.0)
    q = np.clip(np.rint((b - zero.astype(np.float64)[..., None]) / s_safe[..., None]) + 8, 0, 15).astype(np.uint8)
    values = zero.astype(np.float64)[..., None] + (q.astype(np.float64) - 8) * s64[..., None]
    return q.reshape(rows, cols), np.stack([zero, scale], axis=2).reshape(-1), values.reshape(rows, cols)


def linear_bytes(x):
    """A projection's bytes in llm.mnn.weight: header, nibbles, (zero, scale) pairs; the
    sizes of its two parts; its header's length. Dims are int16, or int32 past 65535
    (then the op says shapeInt32), as MNN's exporter writes them."""
    rows, cols = x.shape
    q, alpha, _ = quantize(x)
    wide = rows > 65535 or cols > 65535
    header = struct.pack("<B2I" if wide else "<B2H", 2, rows, cols) + struct.pack("<B16b", 16, *range(-8, 8))
    flat = q.reshape(-1)
    nibbles = ((flat[0::2] << 4) | flat[1::2]).astype(np.uint8).tobytes()
    alpha_bytes = alpha.astype("<f2").tobytes()
    return header + nibbles + alpha_bytes, len(header) + len(nibbles), len(alpha_bytes), len(header)


def conv(rows, cols, ext, variant=None):
    common = Table.of({10: ("i32", rows), 11: ("i32", cols)})
    ext = list(ext)
    if variant == "sym":  # one scale a block
        ext[2] //= 2
    if variant == "bias":
        ext[3] = 4 * rows
    quan = Table.of({2: ("i32", 1), 7: ("i32", 8 if variant == "bits8" else 4), 8: ("i32", 1),
                     9: ("i32", rows * cols // BLOCK), 11: ("u8", int(rows > 65535 or cols > 65535)),
                     15: ("u8", 0 if variant == "fp32-scales" else 1)})
    return Table.of({0: ("table", common), 3: ("table", quan), 6: ("vi64", ext)})


def layer_norm(eps, ext=None, gamma=None):
    fields = {1: ("f32", eps), 6: ("u8", 1)}
    if ext is not None:
        fields[5] = ("vi64", ext)
    if gamma is not None:
        fields[2] = ("vf32", gamma)
    return Table.of(fields)


def op(name, op_type, param_type=0, param=None, inputs=(), outputs=()):
    fields = {3: ("str", name), 5: ("i32", op_type), 0: ("vi32", list(inputs)), 4: ("vi32", list(outputs))}
    if param is not None:
        fields[1] = ("u8", param_type)
        fields[2] = ("table", param)
    return Table.of(fields)


# Graphs pocketdec must refuse (make_model.py --mnn-variant), each differing from the export in one
# thing at layer 0's q/k/v op: what the reader's tests expect to see named.
VARIANTS = ("sym", "bits8", "fp32-scales", "bias", "partial-rope", "unknown-op")


def write_mnn(out, cfg, tensor, tok_json, vocab, variant=None):
    """Write the export of the model whose F32 tensors tensor(hf_name) gives into directory out
    (variant: one of VARIANTS, or None)."""
    os.makedirs(out, exist_ok=True)
    H, D = cfg.hidden, cfg.head_dim
    weight = bytearray()

    headers = {}

    def add_linear(name):
        data, wbytes, abytes, headers[name] = linear_bytes(tensor(name))
        off = len(weight)
        weight.extend(data)
        return [off, wbytes, abytes, 0, 0]

    def add_norm(name):
        g = tensor(name).astype("<f4")
        off = len(weight)
        weight.extend(g.tobytes() + bytes(4 * g.size))
        return [off, 4 * g.size, 4 * g.size]

    half = D // 2
    inv = cfg.rope_theta ** (-np.arange(half, dtype=np.float64) * 2 / D)
    cos = np.cos(np.arange(64, dtype=np.float64)[:, None] * inv[None, :]).astype(np.float32)
    blob = Table.of({0: ("vi32", [64, half]), 2: ("i32", 1), 7: ("vf32", cos.reshape(-1))})
    ops = [op("input_ids", OP_INPUT, outputs=[0]), op("/rotary/cos", OP_CONST, P_BLOB, blob, outputs=[1]),
           op("/blocks.0/input_layernorm", OP_LN, P_LN, layer_norm(cfg.eps, add_norm("model.layers.0.input_layernorm.weight")))]
    for i in range(cfg.layers):
        p = f"model.layers.{i}."
        qkv = [conv(cfg.heads * D, H, add_linear(p + "self_attn.q_proj.weight"), variant if i == 0 else None),
               conv(cfg.kv_heads * D, H, add_linear(p + "self_attn.k_proj.weight")),
               conv(cfg.kv_heads * D, H, add_linear(p + "self_attn.v_proj.weight"))]
        fused = {0: ("vtable", qkv)}
        if i:
            fused.update({2: ("u8", 1), 3: ("table", layer_norm(cfg.eps, add_norm(p + "input_layernorm.weight"))),
                          4: ("u8", 1)})
        ops.append(op(f"/layers.{i}/self_attn/q_proj/Linear", OP_FUSED, P_FUSED, Table.of(fused)))
        if i == 0 and variant == "unknown-op":
            ops.append(op("/layers.0/self_attn/MatMul", 39))  # MatMul: attention written out, unfused
        cut = D // 2 if i == 0 and variant == "partial-rope" else D
        rope = Table.of({0: ("i32", cut), 1: ("i32", cfg.heads), 2: ("i32", cfg.kv_heads), 3: ("i32", D),
                         4: ("table", layer_norm(cfg.eps, gamma=tensor(p + "self_attn.q_norm.weight"))),
                         5: ("table", layer_norm(cfg.eps, gamma=tensor(p + "self_attn.k_norm.weight")))})
        ops.append(op(f"/layers.{i}/self_attn/FusedRoPE", OP_ROPE, P_ROPE, rope))
        ops.append(op(f"/layers.{i}/self_attn/FusedAttention", OP_ATTENTION, P_ATTENTION,
                      Table.of({2: ("i32", i), 3: ("i32", -1)})))
        ops.append(op(f"/layers.{i}/self_attn/o_proj/Linear", OP_CONV, P_CONV,
                      conv(H, cfg.heads * D, add_linear(p + "self_attn.o_proj.weight"))))
        ln = layer_norm(cfg.eps, add_norm(p + "post_attention_layernorm.weight"))
        gate_up = [conv(cfg.ffn, H, add_linear(p + "mlp.gate_proj.weight")),
                   conv(cfg.ffn, H, add_linear(p + "mlp.up_proj.weight"))]
        ops.append(op(f"/layers.{i}/mlp/gate_proj/Linear", OP_FUSED, P_FUSED,
                      Table.of({0: ("vtable", gate_up), 1: ("u8", 1), 2: ("u8", 1), 3: ("table", ln), 4: ("u8", 1)})))
        ops.append(op(f"/layers.{i}/mlp/down_proj/Linear", OP_CONV, P_CONV,
                      conv(H, cfg.ffn, add_linear(p + "mlp.down_proj.weight"))))
    ops.append(op(f"/blocks.{cfg.layers - 1}/Add_1", OP_BINARY, 0, None))
    ops.append(op("hidden_states", OP_LN, P_LN, layer_norm(cfg.eps, add_norm("model.norm.weight"))))
    head_name = "model.embed_tokens.weight" if cfg.tied else "lm_head.weight"
    head = add_linear(head_name)
    ops.append(op("/lm/lm_head/Linear", OP_CONV, P_CONV, conv(cfg.vocab, H, head)))
    tie = {"weight_offset": head[0] + headers[head_name], "alpha_offset": head[0] + head[1], "alpha_size": head[2],
           "quant_bit": 4, "quant_block": BLOCK, "alpha_dtype": "fp16"}
    if not cfg.tied:  # the embedding table on its own: nibbles, then scale pairs
        data, wbytes, abytes, hl = linear_bytes(tensor("model.embed_tokens.weight"))
        tie.update(weight_offset=len(weight), alpha_offset=len(weight) + wbytes - hl, alpha_size=abytes)
        weight.extend(data[hl:])
    net = Table.of({3: ("vtable", ops), 0: ("str", "pocketdec test model")})
    with open(os.path.join(out, "llm.mnn"), "wb") as f:
        f.write(flatbuffer(net))
    with open(os.path.join(out, "llm.mnn.weight"), "wb") as f:
        f.write(weight)
    llm_config = {"model_type": "qwen3", "hidden_size": H, "layer_nums": cfg.layers, "attention_mask": "float",
                  "attention_type": "full", "is_mrope": False, "max_position_embeddings": cfg.max_pos,
                  "tie_embeddings": tie}
    with open(os.path.join(out, "llm_config.json"), "w") as f:
        json.dump(llm_config, f, indent=4)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump({"llm_model": "llm.mnn", "llm_weight": "llm.mnn.weight", "tokenizer_file": "tokenizer.txt"}, f)
    if vocab is not None:
        write_tokenizer_txt(os.path.join(out, "tokenizer.txt"), vocab)


def write_tokenizer_txt(path, vocab):
    """MNN's tokenizer.txt (kind 3): the special ids (the added tokens), eos as the stop id."""
    special = [i for i, t in enumerate(vocab.types) if t == 3]
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(f"430 3\n{len(special)} 1 0\n{' '.join(map(str, special + [vocab.eos]))}\n")
        f.write(f"{len(vocab.tokens)} {len(vocab.merges)}\n")
        for t in vocab.tokens + vocab.merges:
            f.write(t + "\n")

#!/usr/bin/python3
"""Self-checks of make_model.py (the writers) against reference.py (the readers), and
of the reference forward against an independent step-by-step decoder.

  selfcheck.py [-v] [-k SUBSTRING] [--tokenizer tokenizer.json]

Prints one line per check and "N passed, M failed" at the end; exits 1 on any failure.
--tokenizer also checks embedding a real HF tokenizer.json (e.g. Qwen3's).
"""

import argparse
import contextlib
import hashlib
import io
import json
import math
import os
import struct
import sys
import tempfile
import time
import traceback

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_model as mm  # noqa: E402
import reference as ref  # noqa: E402

f32 = np.float32
CHECKS = []


def check(fn):
    CHECKS.append(fn)
    return fn


class Env:
    """A temporary directory with models written on demand (cached by arguments)."""

    def __init__(self, root, tokenizer=None):
        self.root, self.tokenizer, self.cache = root, tokenizer, {}

    def cfg(self, preset="tiny", **kw):
        base = dict(mm.PRESETS[preset])
        base.update(kw)
        return mm.Config(**base)

    def model(self, fmt, preset="tiny", **kw):
        key = (fmt, preset, tuple(sorted(kw.items())))
        if key not in self.cache:
            opts = {k: kw.pop(k) for k in ("tokenizer", "synthetic_tok") if k in kw}
            name = f"m{len(self.cache)}-{fmt}" + (".gguf" if fmt.startswith("gguf") else "")
            path = os.path.join(self.root, name)
            mm.write_model(self.cfg(preset, **kw), fmt, path, **opts)
            self.cache[key] = path
        return self.cache[key]

    def generated(self, preset="tiny", **kw):
        """The F32 weights as generated, keyed by HF name."""
        cfg = self.cfg(preset, **kw)
        return {s.hf: mm.generate(cfg, s) for s in mm.tensor_specs(cfg)}


def eq(a, b, what):
    if not np.array_equal(a, b):
        raise AssertionError(f"{what}: differ (max |diff| {np.max(np.abs(np.asarray(a) - np.asarray(b)))})")


def close(a, b, rtol, what):
    err = np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300)
    if not err <= rtol:
        raise AssertionError(f"{what}: relative error {err:.3g} > {rtol:g}")


def tensor_bytes(path):
    """{name: raw uint8 bytes} of every tensor in a safetensors file, in offset order, plus header."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    return n, header, data


# ----------------------------------------------------------------------------- rounding

def bf16_nearest(x):
    """BF16 bits by comparing the two neighbours in float64 (ties to even); finite x only."""
    u = int(np.asarray(x, f32).view(np.uint32))
    lo = u >> 16
    cands = [lo, lo + 1]
    vals = [float(np.array([c << 16], np.uint32).view(f32)[0]) for c in cands]
    dist = [abs(float(x) - v) for v in vals]
    if dist[0] != dist[1]:
        return cands[int(dist[1] < dist[0])]
    return cands[0] if cands[0] % 2 == 0 else cands[1]


@check
def bf16_round_to_nearest_even(env):
    one = 1.0
    crafted = [(one + 2 ** -8, 0x3F80), (one + 3 * 2 ** -8, 0x3F82), (one + 2 ** -8 + 2 ** -20, 0x3F81),
               (-(one + 2 ** -8), 0xBF80), (-(one + 3 * 2 ** -8), 0xBF82), (0.0, 0), (-0.0, 0x8000),
               (float(np.finfo(f32).max), 0x7F80), (float("inf"), 0x7F80), (float("-inf"), 0xFF80)]
    for x, want in crafted:
        got = int(mm.f32_to_bf16_bits(np.array([x], f32))[0])
        assert got == want, f"bf16({x!r}) = {got:#06x}, want {want:#06x}"
    nan = int(mm.f32_to_bf16_bits(np.array([np.nan], f32))[0])
    assert (nan & 0x7F80) == 0x7F80 and nan & 0x7F, "NaN must stay NaN"
    rng = np.random.default_rng(1)
    xs = np.concatenate([rng.standard_normal(3000).astype(f32),
                         (rng.integers(0, 2 ** 16, 2000, dtype=np.uint32) << 16 | 0x8000).view(f32)])
    xs = xs[np.isfinite(xs)]
    got = mm.f32_to_bf16_bits(xs)
    want = np.array([bf16_nearest(x) for x in xs], np.uint32) & 0xFFFF
    eq(got, want, "bf16 bits vs nearest-even by distance")


@check
def f16_round_to_nearest_even(env):
    for x, want in {1 + 2 ** -11: 1.0, 1 + 3 * 2 ** -11: 1 + 2 ** -9, 1 + 2 ** -11 + 2 ** -20: 1 + 2 ** -10,
                    2 ** -25: 0.0, 3 * 2 ** -25: 2 ** -23, 2 ** -24 + 2 ** -30: 2 ** -24, 65520.0: float("inf")}.items():
        with np.errstate(over="ignore"):
            got = float(np.frombuffer(mm.ENCODERS["F16"](np.array([x], f32)), "<f2")[0])
        assert got == want, f"f16({x!r}) = {got!r}, want {want!r}"


@check
def hf_bf16_and_f16_store_rounded_weights(env):
    gen = env.generated()
    for fmt, conv in (("hf-bf16", lambda a: mm.f32_to_bf16_bits(a)), ("hf-f16", lambda a: a.astype("<f2"))):
        n, header, data = tensor_bytes(os.path.join(env.model(fmt), "model.safetensors"))
        for name, info in header.items():
            if name == "__metadata__":
                continue
            b, e = info["data_offsets"]
            assert info["dtype"] == fmt[3:].upper(), f"{fmt} {name}: dtype {info['dtype']}"
            eq(np.frombuffer(data[b:e], "<u2"), conv(gen[name]).reshape(-1).view("<u2"), f"{fmt} {name}")
    for fmt, hf in (("gguf-bf16", "hf-bf16"), ("gguf-f16", "hf-f16")):
        g, h = ref.load_model(env.model(fmt)), ref.load_model(env.model(hf))
        for k, v in h["weights"].items():
            if v.ndim == 2:
                eq(g["weights"][k], v, f"{fmt} vs {hf} {k}")
            else:
                eq(g["weights"][k], gen[k].astype(np.float64), f"{fmt} {k} (1-D stays F32)")


# ----------------------------------------------------------------------------- layouts

@check
def safetensors_layout(env):
    for fmt in ("hf-f32", "hf-bf16"):
        path = os.path.join(env.model(fmt), "model.safetensors")
        n, header, data = tensor_bytes(path)
        assert n % 8 == 0, "header length not a multiple of 8"
        assert header.pop("__metadata__") == {"format": "pt"}
        spans = sorted((v["data_offsets"], k) for k, v in header.items())
        pos = 0
        for (b, e), k in spans:
            assert b == pos, f"{k}: gap or overlap at {b}"
            want = int(np.prod(header[k]["shape"])) * mm.ST_SIZES[header[k]["dtype"]]
            assert e - b == want, f"{k}: {e - b} bytes, want {want}"
            pos = e
        assert pos == len(data), "trailing bytes after the last tensor"
        want_names = [s.hf for s in mm.tensor_specs(env.cfg())]
        assert sorted(header) == sorted(want_names), "tensor set"
        cfg = json.load(open(os.path.join(env.model(fmt), "config.json")))
        for k in ("architectures", "model_type", "head_dim", "tie_word_embeddings", "rope_theta", "rms_norm_eps",
                  "max_position_embeddings", "bos_token_id", "eos_token_id", "torch_dtype", "vocab_size",
                  "num_key_value_heads", "intermediate_size"):
            assert k in cfg, f"config.json lacks {k}"
        assert cfg["architectures"] == ["Qwen3ForCausalLM"] and cfg["model_type"] == "qwen3"
        assert cfg["torch_dtype"] == {"hf-f32": "float32", "hf-bf16": "bfloat16"}[fmt]


@check
def sharded_matches_single(env):
    d = env.model("hf-sharded-f32")
    index = json.load(open(os.path.join(d, "model.safetensors.index.json")))
    files = sorted(f for f in os.listdir(d) if f.endswith(".safetensors"))
    assert files == [f"model-0000{i}-of-00003.safetensors" for i in (1, 2, 3)], files
    assert sorted(set(index["weight_map"].values())) == files
    sizes = sum(tensor_bytes(os.path.join(d, f))[2].__len__() for f in files)
    assert index["metadata"]["total_size"] == sizes, "total_size"
    a, b = ref.load_model(d), ref.load_model(env.model("hf-f32"))
    assert a["weights"].keys() == b["weights"].keys()
    for k in a["weights"]:
        eq(a["weights"][k], b["weights"][k], k)
    eq(ref.forward(a, [5, 6, 7])[1], ref.forward(b, [5, 6, 7])[1], "sharded vs single logits")


def read_gguf_header(path):
    """Independent minimal parse: (version, metadata {key: (type, value)}, infos, data start)."""
    buf = open(path, "rb").read()
    pos = 0

    def take(fmt):
        nonlocal pos
        v = struct.unpack_from(fmt, buf, pos)
        pos += struct.calcsize(fmt)
        return v[0]

    def string():
        nonlocal pos
        n = take("<Q")
        pos += n
        return buf[pos - n:pos].decode()

    scal = {4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q"}

    def value(t):
        if t == 8:
            return string()
        if t == 9:
            et, n = take("<I"), take("<Q")
            return (et, [value(et) for _ in range(n)])
        return take(scal[t])

    assert buf[:4] == b"GGUF"
    pos = 4
    version, nt, nkv = take("<I"), take("<Q"), take("<Q")
    meta = {}
    for _ in range(nkv):
        k = string()
        t = take("<I")
        meta[k] = (t, value(t))
    infos = []
    for _ in range(nt):
        name = string()
        dims = [take("<Q") for _ in range(take("<I"))]
        infos.append((name, dims, take("<I"), take("<Q")))
    return version, meta, infos, pos + (-pos % 32), len(buf)


@check
def gguf_layout(env):
    for fmt, mtype, ftype in (("gguf-f32", 0, 0), ("gguf-q8_0", 8, 7), ("gguf-q4_1", 3, 3)):
        for untied in (False, True):
            cfg = env.cfg("gqa", tied=not untied)
            path = env.model(fmt, "gqa", tied=not untied)
            version, meta, infos, start, size = read_gguf_header(path)
            assert version == 3
            u32 = lambda k: meta[k] == (4, getattr(cfg, {
                "block_count": "layers", "context_length": "max_pos", "embedding_length": "hidden",
                "feed_forward_length": "ffn", "attention.head_count": "heads",
                "attention.head_count_kv": "kv_heads", "attention.key_length": "head_dim",
                "attention.value_length": "head_dim"}[k[6:]]))
            for k in ("block_count", "context_length", "embedding_length", "feed_forward_length",
                      "attention.head_count", "attention.head_count_kv", "attention.key_length",
                      "attention.value_length"):
                assert u32("qwen3." + k), f"{k}: {meta.get('qwen3.' + k)}"
            assert meta["general.architecture"] == (8, "qwen3") and meta["general.name"][0] == 8
            assert meta["general.alignment"] == (4, 32) and meta["general.file_type"] == (4, ftype)
            assert meta["qwen3.rope.freq_base"] == (6, 1e6)
            assert meta["qwen3.attention.layer_norm_rms_epsilon"] == (6, float(f32(1e-6)))
            assert meta["tokenizer.ggml.model"] == (8, "gpt2") and meta["tokenizer.ggml.pre"] == (8, "qwen2")
            specs = {s.gguf: s for s in mm.tensor_specs(cfg)}
            assert [i[0] for i in infos] == list(specs), "tensor names / order"
            assert ("output.weight" in specs) == untied
            end = start
            for name, dims, t, off in infos:
                s = specs[name]
                assert dims == list(s.shape[::-1]), f"{name}: dims {dims}, want innermost first"
                assert t == (0 if len(dims) == 1 else mtype), f"{name}: type {t}"
                assert off % 32 == 0 and start + off >= end, f"{name}: offset {off}"
                end = start + off + mm.encoded_size(s.size, ref.GGML[t][0])
            assert size == end + (-end % 32) or size == end, f"file size {size} vs end {end}"
    q = env.cfg("gqa")
    assert mm.tensor_specs(q)[2].shape == (448, 128), "gqa q_proj must be [448, 128]"


@check
def gguf_without_tokenizer(env):
    _, meta, _, _, _ = read_gguf_header(env.model("gguf-q8_0", synthetic_tok=False))
    assert not [k for k in meta if k.startswith("tokenizer.")]
    d = env.model("hf-f32", synthetic_tok=False)
    assert not os.path.exists(os.path.join(d, "tokenizer.json"))


# ----------------------------------------------------------------------------- equality across formats

@check
def hf_f32_equals_gguf_f32(env):
    for preset, tied in (("tiny", True), ("gqa", True), ("tiny", False)):
        h = ref.load_model(env.model("hf-f32", preset, tied=tied))
        g = ref.load_model(env.model("gguf-f32", preset, tied=tied))
        gen = env.generated(preset, tied=tied)
        assert h["weights"].keys() == g["weights"].keys()
        for k, v in h["weights"].items():
            eq(v, g["weights"][k], f"{preset} {k}")
            eq(v, gen[k if k in gen else "model.embed_tokens.weight"].astype(np.float64), f"{k} vs generated")
        for k in ("layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "vocab", "tied", "max_pos",
                  "rope_theta"):
            assert h["config"][k] == g["config"][k], k
        assert g["config"]["eps"] == float(f32(h["config"]["eps"]))  # GGUF stores eps as f32
        ids = [3, 1, 4, 1, 5, 9, 2, 6]
        lh, lg = ref.forward(h, ids)[1], ref.forward(g, ids)[1]
        close(lg, lh, 1e-12, f"{preset} logits hf vs gguf")
        g["config"]["eps"] = h["config"]["eps"]
        eq(ref.forward(g, ids)[1], lh, f"{preset} logits hf vs gguf (same eps)")


@check
def untied_uses_lm_head(env):
    d = env.model("hf-f32", tied=False)
    m = ref.load_model(d)
    assert not m["config"]["tied"]
    assert not json.load(open(os.path.join(d, "config.json")))["tie_word_embeddings"]
    w = m["weights"]
    assert not np.array_equal(w["lm_head.weight"], w["model.embed_tokens.weight"])
    hidden, logits = ref.forward(m, [1, 2])
    eq(logits, hidden @ w["lm_head.weight"].T, "logits = hidden @ lm_head^T")


@check
def deterministic_for_seed(env):
    def digest(fmt, seed):
        path = os.path.join(env.root, f"det-{seed}-{fmt}")
        mm.write_model(env.cfg(seed=seed), fmt, path)
        if os.path.isdir(path):
            path = os.path.join(path, "model.safetensors")
        return hashlib.sha256(open(path, "rb").read()).hexdigest()
    for fmt in ("gguf-q4_1", "hf-bf16"):
        assert digest(fmt, 7) == digest(fmt, 7), f"{fmt}: same seed, different bytes"
        assert digest(fmt, 7) != digest(fmt, 8), f"{fmt}: different seeds, same bytes"


# ----------------------------------------------------------------------------- quantisation

def roundf(x):
    return math.copysign(math.floor(abs(float(x)) + 0.5), float(x))


def q8_0_scalar(xs):
    """Port of ggml quantize_row_q8_0_ref for one block (float32 scalars)."""
    amax = f32(0)
    for v in xs:
        amax = max(amax, abs(v))
    d = f32(amax / f32(127))
    inv = f32(1) / d if d else f32(0)
    qs = [int(roundf(f32(v * inv))) for v in xs]
    return np.float16(d).tobytes() + np.array(qs, np.int8).tobytes()


def q4_0_scalar(xs):
    """Port of ggml quantize_row_q4_0_ref for one block."""
    amax, mx = f32(0), f32(0)
    for v in xs:
        if amax < abs(v):
            amax, mx = abs(v), v
    d = f32(mx / f32(-8))
    inv = f32(1) / d if d else f32(0)
    q = [min(15, int(f32(f32(v * inv) + f32(8.5)))) for v in xs]
    return np.float16(d).tobytes() + bytes(q[j] | q[j + 16] << 4 for j in range(16))


def q4_1_scalar(xs):
    """Port of ggml quantize_row_q4_1_ref for one block (of 32; of 64 for Q4_64, written as
    two Q4_1 blocks with the same d and min)."""
    mn, mx = f32(np.finfo(f32).max), f32(-np.finfo(f32).max)
    for v in xs:
        if v < mn:
            mn = v
        if v > mx:
            mx = v
    d = f32(f32(mx - mn) / f32(15))
    inv = f32(1) / d if d else f32(0)
    q = [min(15, int(f32(f32(f32(v - mn) * inv) + f32(0.5)))) for v in xs]
    return b"".join(np.float16(d).tobytes() + np.float16(mn).tobytes()
                    + bytes(q[h + j] | q[h + j + 16] << 4 for j in range(16)) for h in range(0, len(xs), 32))


def crafted_blocks():
    rng = np.random.default_rng(3)
    blocks = [rng.standard_normal(32) * s for s in (1.0, 1e-3, 1e-6, 300.0)]
    ties = np.zeros(32)
    ties[:8] = [127, 0.5, 1.5, -0.5, -2.5, 126.5, 63.5, -126.5]  # q8_0: d = 1, halves away from 0
    blocks.append(ties)
    q4 = np.zeros(32)
    q4[:8] = [-8, 0.5, -7.5, 7.9, 7.5, -0.5, 3.5, 8.0]  # q4_0: d = 1, +8.5 then truncation, clamp
    blocks.append(q4)
    q41 = np.linspace(0, 15, 32)
    q41[:6] = [0, 15, 2.5, 7.5, 14.5, 0.5]  # q4_1: d = 1, +0.5 then truncation
    blocks.append(q41)
    both = rng.standard_normal(32)
    both[3], both[9] = 5.0, -5.0  # same |max| twice: the first one wins
    blocks.append(both)
    blocks.append(-both)
    blocks.append(np.zeros(32))
    blocks.append(np.full(32, 0.25))
    neg0 = np.zeros(32)
    neg0[::2] = -0.0
    blocks.append(neg0)
    blocks.append(np.abs(rng.standard_normal(32)) + 1)
    blocks.append(-np.abs(rng.standard_normal(32)) - 1)
    return [b.astype(f32) for b in blocks]


@check
def quantizers_match_ggml_scalar_code(env):
    blocks = crafted_blocks()
    rng = np.random.default_rng(4)
    blocks += list(rng.standard_normal((40, 32)).astype(f32) / 7)
    # Q4_64: blocks of 64, each crafted block next to its neighbour (the last one twice)
    pairs = [np.concatenate([blocks[i], blocks[min(i + 1, len(blocks) - 1)]]) for i in range(0, len(blocks), 2)]
    for name, scalar, bl in (("Q8_0", q8_0_scalar, blocks), ("Q4_0", q4_0_scalar, blocks),
                             ("Q4_1", q4_1_scalar, blocks), ("Q4_64", q4_1_scalar, pairs)):
        vec = mm.ENCODERS[name](np.concatenate(bl))
        want = b"".join(scalar(list(b)) for b in bl)
        size = mm.GGML_TYPES[name][1]
        assert len(vec) == len(want) == size * len(bl), (name, len(vec), len(want))
        for i in range(len(bl)):
            got, exp = vec[i * size:(i + 1) * size], want[i * size:(i + 1) * size]
            assert got == exp, f"{name} block {i}: {got.hex()} != {exp.hex()}"
    # known answers for the tie blocks (C roundf / truncation semantics)
    q8 = np.frombuffer(mm.quantize_q8_0(blocks[4])[2:10], np.int8).tolist()
    assert q8 == [127, 1, 2, -1, -3, 127, 64, -127], q8
    q4 = mm.quantize_q4_0(blocks[5])
    assert np.frombuffer(q4[:2], "<f2")[0] == 1.0
    nib = [b & 15 for b in q4[2:10]]
    assert nib == [0, 9, 1, 15, 15, 8, 12, 15], nib


def scalar_dequant(name, raw):
    """Plain per-weight decoding of one block, from the block layouts in FORMATS.md."""
    d = float(np.frombuffer(raw[:2], "<f2")[0])
    if name == "Q8_0":
        return [d * q for q in np.frombuffer(raw[2:], np.int8).tolist()]
    qs = raw[2:] if name == "Q4_0" else raw[4:]
    q = [qs[j] & 15 for j in range(16)] + [qs[j] >> 4 for j in range(16)]
    if name == "Q4_0":
        return [d * (v - 8) for v in q]
    m = float(np.frombuffer(raw[2:4], "<f2")[0])
    return [float(f32(f32(d * v) + f32(m))) for v in q]


@check
def quantized_files_hold_ggml_blocks(env):
    """The raw blocks in the file are the encoder's output for the generated weights, and the
    reader's dequantisation equals a plain per-weight decoding of those blocks."""
    gen = env.generated("gqa")
    for fmt in ("gguf-q8_0", "gguf-q4_0", "gguf-q4_1"):
        name = fmt[5:].upper()
        path = env.model(fmt, "gqa")
        _, raw, types = ref.read_gguf(path, dequantize=False)
        _, deq, _ = ref.read_gguf(path)
        for gname, blocks in raw.items():
            hf = ref._gguf_to_hf_name(gname)
            if types[gname] == "F32":
                eq(blocks.view("<f4").reshape(gen[hf].shape), gen[hf], gname)
                continue
            assert types[gname] == name
            assert blocks.tobytes() == mm.ENCODERS[name](gen[hf].reshape(-1)), f"{fmt} {gname} bytes"
        bsize = mm.GGML_TYPES[name][1]
        raw_q = raw["blk.1.attn_v.weight"].tobytes()
        flat = deq["blk.1.attn_v.weight"].reshape(-1)
        for i in range(0, len(raw_q) // bsize, 7):
            eq(flat[i * 32:(i + 1) * 32], np.array(scalar_dequant(name, raw_q[i * bsize:(i + 1) * bsize])),
               f"{fmt} block {i} dequant")


@check
def quantization_error_within_rounding(env):
    gen = env.generated("gqa")
    for fmt in ("gguf-q8_0", "gguf-q4_0", "gguf-q4_1"):
        m = ref.load_model(env.model(fmt, "gqa"))
        for k, w in gen.items():
            if w.ndim == 1:
                eq(m["weights"][k], w.astype(np.float64), f"{fmt} {k} (F32)")
                continue
            x = w.reshape(-1, 32).astype(np.float64)
            y = m["weights"][k].reshape(-1, 32)
            err = np.abs(y - x).max(axis=1)
            if fmt == "gguf-q8_0":
                d = np.abs(x).max(axis=1) / 127
                d16 = d.astype(np.float16).astype(np.float64)
                bound = 0.5 * d + 127 * np.abs(d16 - d)
            elif fmt == "gguf-q4_0":
                d = np.abs(x).max(axis=1) / 8  # the value of opposite sign at +8 clamps to 7: error up to d
                bound = d * (1 + 2 ** -10) + 8 * d * 2 ** -11
            else:
                mn, mx = x.min(axis=1), x.max(axis=1)
                d = (mx - mn) / 15
                bound = 0.5 * d + 15 * d * 2 ** -11 + np.abs(mn) * 2 ** -11
            bound = bound * (1 + 1e-5) + 1e-12
            bad = np.nonzero(err > bound)[0]
            assert bad.size == 0, f"{fmt} {k}: block {bad[0]} error {err[bad[0]]:.3g} > {bound[bad[0]]:.3g}"
        ids = [7, 100, 3, 42]
        lq = ref.forward(m, ids)[1]
        lf = ref.forward(ref.load_model(env.model("gguf-f32", "gqa")), ids)[1]
        tol = {"gguf-q8_0": 0.02, "gguf-q4_0": 0.3, "gguf-q4_1": 0.3}[fmt]
        close(lq, lf, tol, f"{fmt} logits vs f32")


# ----------------------------------------------------------------------------- the reference itself

@check
def causality(env):
    for preset in ("tiny", "gqa"):
        m = ref.load_model(env.model("hf-f32", preset))
        h3, l3 = ref.forward(m, [11, 22, 33])
        h4, l4 = ref.forward(m, [11, 22, 33, 44])
        close(l4[:3], l3, 1e-13, f"{preset} logits of a prefix")
        close(h4[:3], h3, 1e-13, f"{preset} hidden of a prefix")
        assert not np.allclose(ref.forward(m, [11, 22, 34])[1][2], l3[2]), "last token must matter"
        assert not np.allclose(ref.forward(m, [12, 22, 33])[1][2], l3[2]), "first token must matter"


def naive_decode(model, ids):
    """Token-at-a-time decoder with a KV cache, written with explicit loops from FORMATS.md."""
    c, w = model["config"], model["weights"]
    hd, nh, nkv, eps = c["head_dim"], c["heads"], c["kv_heads"], c["eps"]
    half = hd // 2

    def norm(v, g):
        return v / math.sqrt(float(np.dot(v, v)) / v.size + eps) * g

    def rotate(v, pos):
        out = np.empty_like(v)
        for i in range(half):
            a = pos * c["rope_theta"] ** (-2.0 * i / hd)
            out[i] = v[i] * math.cos(a) - v[i + half] * math.sin(a)
            out[i + half] = v[i + half] * math.cos(a) + v[i] * math.sin(a)
        return out

    cache = [([], []) for _ in range(c["layers"])]
    hidden, logits = [], []
    for pos, tok in enumerate(ids):
        x = w["model.embed_tokens.weight"][tok].copy()
        for layer in range(c["layers"]):
            p = f"model.layers.{layer}."
            h = norm(x, w[p + "input_layernorm.weight"])
            q, k, v = (w[p + f"self_attn.{n}_proj.weight"] @ h for n in "qkv")
            ks, vs = cache[layer]
            ks.append([rotate(norm(k[j * hd:(j + 1) * hd], w[p + "self_attn.k_norm.weight"]), pos)
                       for j in range(nkv)])
            vs.append([v[j * hd:(j + 1) * hd] for j in range(nkv)])
            att = np.zeros(nh * hd)
            for head in range(nh):
                qh = rotate(norm(q[head * hd:(head + 1) * hd], w[p + "self_attn.q_norm.weight"]), pos)
                kvh = head * nkv // nh
                s = [float(np.dot(qh, ks[t][kvh])) / math.sqrt(hd) for t in range(pos + 1)]
                top = max(s)
                e = [math.exp(v_ - top) for v_ in s]
                for t in range(pos + 1):
                    att[head * hd:(head + 1) * hd] += e[t] / sum(e) * vs[t][kvh]
            x = x + w[p + "self_attn.o_proj.weight"] @ att
            h = norm(x, w[p + "post_attention_layernorm.weight"])
            g = w[p + "mlp.gate_proj.weight"] @ h
            u = w[p + "mlp.up_proj.weight"] @ h
            x = x + w[p + "mlp.down_proj.weight"] @ (g / (1 + np.exp(-g)) * u)
        hn = norm(x, w["model.norm.weight"])
        hidden.append(hn)
        logits.append(w["lm_head.weight"] @ hn)
    return np.array(hidden), np.array(logits)


@check
def forward_matches_naive_decoder(env):
    for preset, fmt, kw in (("tiny", "hf-f32", {}), ("gqa", "gguf-q4_1", {}), ("tiny", "hf-bf16", {"tied": False}),
                            ("tiny", "gguf-f32", {"rope_theta": 10000.0, "eps": 1e-5})):
        m = ref.load_model(env.model(fmt, preset, **kw))
        ids = [9, 0, 200, 17, 17]
        h, l = ref.forward(m, ids)
        nh, nl = naive_decode(m, ids)
        close(h, nh, 1e-11, f"{preset} {fmt} hidden")
        close(l, nl, 1e-11, f"{preset} {fmt} logits")


@check
def rope_depends_on_relative_position_only(env):
    m = ref.load_model(env.model("hf-f32", "gqa"))
    ids = [5, 6, 7, 8]
    _, a = ref.forward(m, ids)
    _, b = ref.forward(m, ids, positions=np.arange(4) + 1000)
    close(b, a, 1e-9, "logits at positions +1000")
    _, c = ref.forward(m, ids, positions=[0, 1, 2, 4])
    assert not np.allclose(c[3], a[3], rtol=1e-6), "a gap in positions must change the output"


@check
def reference_cli_writes_json(env):
    d = env.model("hf-f32")
    out = os.path.join(env.root, "expected.json")
    with contextlib.redirect_stderr(io.StringIO()):
        ref.main(["--model", d, "--ids", "1,2,3", "--out", out])
    doc = json.load(open(out))
    assert doc["ids"] == [1, 2, 3]
    h, l = ref.forward(ref.load_model(d), [1, 2, 3])
    eq(np.array(doc["logits"]), l, "logits in JSON (round trip)")
    eq(np.array(doc["hidden"]), h, "hidden in JSON (round trip)")
    assert np.array(doc["logits"]).shape == (3, 256) and np.array(doc["hidden"]).shape == (3, 64)


@check
def reader_rejects_bad_safetensors(env):
    bad = os.path.join(env.root, "bad.safetensors")
    hdr = json.dumps({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                      "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}).encode()
    open(bad, "wb").write(struct.pack("<Q", len(hdr)) + hdr + bytes(12))
    try:
        ref.read_safetensors(bad)
    except ValueError as e:
        assert "overlap" in str(e)
    else:
        raise AssertionError("overlapping tensors accepted")


# ----------------------------------------------------------------------------- tokenizer

def check_tokenizer_in_gguf(path, tok, vocab_size):
    _, meta, _, _, _ = read_gguf_header(path)
    v = mm.vocab_from_tokenizer(tok, vocab_size)
    tokens = meta["tokenizer.ggml.tokens"][1][1]
    types = meta["tokenizer.ggml.token_type"][1][1]
    merges = meta["tokenizer.ggml.merges"][1][1]
    assert len(tokens) == len(types) == vocab_size
    vocab = tok["model"]["vocab"]
    for t, i in vocab.items():
        assert tokens[i] == t and types[i] == 1, f"token {i}"
    for a in tok["added_tokens"]:
        assert tokens[a["id"]] == a["content"] and types[a["id"]] == (3 if a["special"] else 4)
    want_merges = [m if isinstance(m, str) else " ".join(m) for m in tok["model"]["merges"]]
    assert merges == want_merges
    assert meta["tokenizer.ggml.bos_token_id"] == (4, v.bos) and meta["tokenizer.ggml.eos_token_id"] == (4, v.eos)
    return tokens, types


@check
def synthetic_tokenizer_is_valid_bpe(env):
    for vocab in (256, 300, 2000):
        tok = mm.synthetic_tokenizer(vocab, 0)
        ids = sorted(list(tok["model"]["vocab"].values()) + [a["id"] for a in tok["added_tokens"]])
        assert ids == list(range(vocab)), f"vocab {vocab}: ids not 0..{vocab - 1}"
        known = set(list(tok["model"]["vocab"])[:256])
        for m in tok["model"]["merges"]:
            a, b = m.split(" ")
            assert a in known and b in known, f"merge {m!r} uses an unknown token"
            known.add(a + b)
        assert known == set(tok["model"]["vocab"])
    d = env.model("hf-f32", "gqa")
    tok = json.load(open(os.path.join(d, "tokenizer.json")))
    cfg = json.load(open(os.path.join(d, "config.json")))
    assert [a["content"] for a in tok["added_tokens"]] == ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    assert (cfg["bos_token_id"], cfg["eos_token_id"]) == (509, 511)
    check_tokenizer_in_gguf(env.model("gguf-q8_0", "gqa"), tok, 512)


@check
def tokenizer_option(env):
    src = env.tokenizer
    if not src:  # stand-in for a real file: a list-form-merges tokenizer with a non-special added token
        tok = mm.synthetic_tokenizer(400, 5)
        tok["model"]["merges"] = [m.split(" ") for m in tok["model"]["merges"]]
        last = next(t for t, i in tok["model"]["vocab"].items() if i == 396)  # the newest merged token
        del tok["model"]["vocab"][last]
        assert "".join(tok["model"]["merges"].pop()) == last
        tok["added_tokens"].append(dict(tok["added_tokens"][0], id=396, content="<think>", special=False))
        src = os.path.join(env.root, "tokenizer.json")
        with open(src, "w", encoding="utf-8") as f:
            json.dump(tok, f, ensure_ascii=False)
    tok = json.load(open(src, encoding="utf-8"))
    n = max(list(tok["model"]["vocab"].values()) + [a["id"] for a in tok["added_tokens"]]) + 1
    big = n + 45
    kw = dict(preset="tiny", vocab=big, tokenizer=src)
    d = env.model("hf-f32", **kw)
    assert open(os.path.join(d, "tokenizer.json"), "rb").read() == open(src, "rb").read()
    tokens, types = check_tokenizer_in_gguf(env.model("gguf-q4_0", **kw), tok, big)
    assert tokens[n:] == [f"[PAD{i}]" for i in range(n, big)] and set(types[n:]) == {5}
    try:
        env.model("gguf-q8_0", "tiny", vocab=n - 1, tokenizer=src)
    except ValueError as e:
        assert "--vocab" in str(e)
    else:
        raise AssertionError("a tokenizer larger than --vocab must be refused")


@check
def tiny_presets_are_fast(env):
    for preset in ("tiny", "gqa"):
        for fmt in mm.FORMATS:
            t0 = time.perf_counter()
            out = os.path.join(env.root, f"speed-{preset}-{fmt}")
            mm.write_model(env.cfg(preset), fmt, out + (".gguf" if fmt.startswith("gguf") else ""))
            dt = time.perf_counter() - t0
            assert dt < 0.5, f"{preset} {fmt}: {dt:.2f} s"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-k", help="run only checks whose name contains this")
    ap.add_argument("-v", action="store_true", help="print tracebacks")
    ap.add_argument("--tokenizer", help="a real HF tokenizer.json to test --tokenizer with")
    args = ap.parse_args()
    passed = failed = 0
    with tempfile.TemporaryDirectory(prefix="pocketdec-testmodels-") as root:
        env = Env(root, args.tokenizer)
        for fn in CHECKS:
            if args.k and args.k not in fn.__name__:
                continue
            t0 = time.perf_counter()
            try:
                fn(env)
                passed += 1
                print(f"ok   {fn.__name__} ({time.perf_counter() - t0:.2f} s)")
            except Exception as e:  # noqa: BLE001 - report every failure and go on
                failed += 1
                print(f"FAIL {fn.__name__}: {type(e).__name__}: {e}")
                if args.v:
                    traceback.print_exc()
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

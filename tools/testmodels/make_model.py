#!/usr/bin/python3
"""Write a random Qwen3 decoder (MNN-Pocket-0.3B family) in HF or GGUF form.

The same seed gives the same F32 weights in every format: each tensor is drawn
from its own generator seeded with (seed, crc32(HF tensor name)), so the HF and
GGUF writers, and every shard layout, see identical numbers.  Tensors are
generated, encoded and written one at a time (large ones in chunks), so even
the full `pocket` shape needs well under 2 GB of memory.

Formats:
  hf-f32 hf-bf16 hf-f16 hf-sharded-f32   a directory: config.json, safetensors, tokenizer.json
  gguf-f32 gguf-f16 gguf-bf16 gguf-q8_0 gguf-q4_0 gguf-q4_1   one GGUF v3 file
  gguf-q4_64   Q4_1 blocks holding the Q4_64 quantization (blocks of 64, Q4_1's
               arithmetic, MNN's W4A16 layout), each block's d and m written for
               both of its halves: the values `--quantize q4_64` computes with
  mnn          a directory in MNN's LLM export layout (llm.mnn, llm.mnn.weight,
               llm_config.json, tokenizer.txt; mnn_export.py): 4-bit asymmetric blocks of 64
  hf-mnn-f32   an HF F32 directory of the values the mnn export stands for (its matrices
               and embeddings dequantized): the reference's input for that export

Quantisation follows ggml's reference code (quantize_row_*_ref) bit for bit,
in float32 arithmetic; 1-D tensors (norms) stay F32 in every GGUF, as in llama.cpp.

Examples:
  make_model.py --preset tiny --format hf-f32 --out /tmp/tiny
  make_model.py --preset pocket --format gguf-q8_0 --out /tmp/pocket-q8_0.gguf
  make_model.py --layers 1 --hidden 96 --heads 3 --kv-heads 1 --head-dim 32 --ffn 64 \\
                --vocab 300 --untied --format gguf-q4_1 --out /tmp/custom.gguf
"""

import argparse
import json
import os
import shutil
import struct
import sys
import time
import zlib
from dataclasses import dataclass, asdict

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import safetensors_io  # noqa: E402  (the one safetensors writer of train/ and tools/testmodels/)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mnn_export  # noqa: E402
from safetensors_io import f32_to_bf16_bits  # noqa: E402,F401  (BF16 round to nearest even, NaN kept)

PRESETS = {
    # name: layers, hidden, heads, kv_heads, head_dim, ffn, vocab, tied
    "tiny": dict(layers=2, hidden=64, heads=4, kv_heads=2, head_dim=16, ffn=128, vocab=256, tied=True),
    # MNN-Pocket proportions scaled down: GQA 7:1, head_dim 64, q_proj out (448) != hidden (128)
    "gqa": dict(layers=3, hidden=128, heads=7, kv_heads=1, head_dim=64, ffn=320, vocab=512, tied=True),
    # the real MNN-Pocket-0.3B shape (about 0.3B parameters)
    "pocket": dict(layers=28, hidden=896, heads=14, kv_heads=2, head_dim=64, ffn=2560, vocab=65536,
                   tied=True),
}

FORMATS = ["hf-f32", "hf-bf16", "hf-f16", "hf-sharded-f32",
           "gguf-f32", "gguf-f16", "gguf-bf16", "gguf-q8_0", "gguf-q4_0", "gguf-q4_1", "gguf-q4_64",
           "mnn", "hf-mnn-f32"]

# GGML tensor types: id, bytes per block, weights per block
GGML_TYPES = {"F32": (0, 4, 1), "F16": (1, 2, 1), "Q4_0": (2, 18, 32), "Q4_1": (3, 20, 32),
              "Q8_0": (8, 34, 32), "BF16": (30, 2, 1), "Q4_64": (3, 40, 64)}
# llama_ftype written as general.file_type
FILE_TYPES = {"F32": 0, "F16": 1, "Q4_0": 2, "Q4_1": 3, "Q8_0": 7, "BF16": 32, "Q4_64": 3}
ST_SIZES = {"F32": 4, "F16": 2, "BF16": 2}
TORCH_DTYPES = {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}
QWEN_SPLIT_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
                    r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
CHUNK = 1 << 20  # weights encoded per write (a multiple of 64)


@dataclass
class Config:
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    vocab: int
    tied: bool = True
    max_pos: int = 40960
    rope_theta: float = 1e6
    eps: float = 1e-6
    seed: int = 0

    def validate(self):
        for k in ("layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "vocab", "max_pos"):
            if getattr(self, k) <= 0:
                raise ValueError(f"--{k.replace('_', '-')} must be positive")
        if self.heads % self.kv_heads:
            raise ValueError("--heads must be a multiple of --kv-heads")
        if self.head_dim % 2:
            raise ValueError("--head-dim must be even (RoPE rotates halves)")


@dataclass
class Spec:
    """One tensor: its HF and GGUF names, HF shape ([out, in] for matrices) and kind."""
    hf: str
    gguf: str
    shape: tuple
    kind: str  # "embed" | "matrix" | "norm"

    @property
    def size(self):
        return int(np.prod(self.shape))


# ----------------------------------------------------------------------------- tensors

def tensor_specs(cfg):
    """All tensors of the model, in HF order (shared by every writer)."""
    H, F, V = cfg.hidden, cfg.ffn, cfg.vocab
    q_out, kv_out = cfg.heads * cfg.head_dim, cfg.kv_heads * cfg.head_dim
    specs = [Spec("model.embed_tokens.weight", "token_embd.weight", (V, H), "embed")]
    for i in range(cfg.layers):
        p, g = f"model.layers.{i}.", f"blk.{i}."
        specs += [
            Spec(p + "input_layernorm.weight", g + "attn_norm.weight", (H,), "norm"),
            Spec(p + "self_attn.q_proj.weight", g + "attn_q.weight", (q_out, H), "matrix"),
            Spec(p + "self_attn.k_proj.weight", g + "attn_k.weight", (kv_out, H), "matrix"),
            Spec(p + "self_attn.v_proj.weight", g + "attn_v.weight", (kv_out, H), "matrix"),
            Spec(p + "self_attn.o_proj.weight", g + "attn_output.weight", (H, q_out), "matrix"),
            Spec(p + "self_attn.q_norm.weight", g + "attn_q_norm.weight", (cfg.head_dim,), "norm"),
            Spec(p + "self_attn.k_norm.weight", g + "attn_k_norm.weight", (cfg.head_dim,), "norm"),
            Spec(p + "post_attention_layernorm.weight", g + "ffn_norm.weight", (H,), "norm"),
            Spec(p + "mlp.gate_proj.weight", g + "ffn_gate.weight", (F, H), "matrix"),
            Spec(p + "mlp.up_proj.weight", g + "ffn_up.weight", (F, H), "matrix"),
            Spec(p + "mlp.down_proj.weight", g + "ffn_down.weight", (H, F), "matrix"),
        ]
    specs.append(Spec("model.norm.weight", "output_norm.weight", (H,), "norm"))
    if not cfg.tied:
        specs.append(Spec("lm_head.weight", "output.weight", (V, H), "embed"))
    return specs


def generate(cfg, spec):
    """The F32 values of one tensor (HF shape), deterministic in (seed, name).

    Embeddings / lm_head: N(0, 1).  Matrices: N(0, 1/in) so activations stay O(1).
    Norm weights: 1 + 0.1 N(0, 1), so the norms are really exercised.
    """
    rng = np.random.default_rng([cfg.seed, zlib.crc32(spec.hf.encode())])
    x = rng.standard_normal(spec.shape, dtype=np.float32)
    if spec.kind == "matrix":
        x *= np.float32(1.0 / np.sqrt(spec.shape[1]))
    elif spec.kind == "norm":
        x *= np.float32(0.1)
        x += np.float32(1.0)
    return x


# ----------------------------------------------------------------------------- encoders
# Each encoder maps a flat float32 array (length a multiple of the block size) to bytes.

def _roundf(x):
    """C roundf (half away from zero) of float32 values, exactly: rint, then the (rare)
    ties, which rint sends to even, are moved away from zero (x +- 0.5 is exact there)."""
    r = np.rint(x).reshape(-1)
    flat = x.reshape(-1)
    t = flat - r
    np.abs(t, out=t)  # in place: numpy's temporary elision is slow on large arrays
    ties = np.nonzero(t == np.float32(0.5))[0]
    r[ties] = flat[ties] + np.copysign(np.float32(0.5), flat[ties])
    return r.reshape(x.shape)


def _inverse(d):
    """1.0f/d where d != 0, else 0 (float32), as ggml's `id = d ? 1.0f/d : 0.0f`."""
    out = np.zeros_like(d)
    np.divide(np.float32(1.0), d, out=out, where=d != 0)
    return out


def _pack_nibbles(q):
    """[nb, 32] values 0..15 -> [nb, 16] bytes: low nibble weight j, high nibble weight j+16."""
    q = q.astype(np.uint8)
    return q[:, :16] | (q[:, 16:] << np.uint8(4))


def quantize_q8_0(x):
    """quantize_row_q8_0_ref: d = amax/127, q = roundf(x * (1/d)); block = f16 d, 32 x int8."""
    b = x.reshape(-1, 32)
    d = np.abs(b).max(axis=1)
    d /= np.float32(127)
    q = _roundf(b * _inverse(d)[:, None]).astype(np.int8)
    out = np.empty((b.shape[0], 34), np.uint8)
    out[:, :2] = d.astype("<f2").view(np.uint8).reshape(-1, 2)
    out[:, 2:] = q.view(np.uint8)
    return out.tobytes()


def quantize_q4_0(x):
    """quantize_row_q4_0_ref: max = signed value of largest |x| (first one), d = max/-8,
    q = min(15, (int8)(x*(1/d) + 8.5f)); block = f16 d, 16 nibble-pair bytes."""
    b = x.reshape(-1, 32)
    a = np.abs(b)
    idx = np.argmax(a, axis=1)  # first maximum, as the C loop's strict '<'
    rows = np.arange(b.shape[0])
    mx = np.where(a[rows, idx] > 0, b[rows, idx], np.float32(0.0))  # C starts from max = +0.0f
    d = mx / np.float32(-8)
    t = b * _inverse(d)[:, None]
    t += np.float32(8.5)
    q = t.astype(np.int8)  # C float->int8 conversion truncates toward zero
    np.minimum(q, 15, out=q)
    out = np.empty((b.shape[0], 18), np.uint8)
    out[:, :2] = d.astype("<f2").view(np.uint8).reshape(-1, 2)
    out[:, 2:] = _pack_nibbles(q)
    return out.tobytes()


def _q4_min(x, block):
    """quantize_row_q4_1_ref's arithmetic over blocks of `block`: d = (max-min)/15,
    q = min(15, (int8)((x-min)*(1/d) + 0.5f)); returns d, min and q ([nb, block])."""
    b = x.reshape(-1, block)
    rows = np.arange(b.shape[0])
    mn = b[rows, np.argmin(b, axis=1)]  # first minimum / maximum, as the C loop's strict
    mx = b[rows, np.argmax(b, axis=1)]  # comparisons (this decides the sign of a zero min)
    d = (mx - mn) / np.float32(15)
    t = b - mn[:, None]
    t *= _inverse(d)[:, None]
    t += np.float32(0.5)
    q = t.astype(np.int8)
    np.minimum(q, 15, out=q)
    return d, mn, q


def _q4_1_blocks(d, mn, q):
    """Q4_1 blocks: f16 d, f16 min, 16 nibble-pair bytes of 32 values."""
    out = np.empty((q.shape[0], 20), np.uint8)
    out[:, 0:2] = d.astype("<f2").view(np.uint8).reshape(-1, 2)
    out[:, 2:4] = mn.astype("<f2").view(np.uint8).reshape(-1, 2)
    out[:, 4:] = _pack_nibbles(q)
    return out


def quantize_q4_1(x):
    """quantize_row_q4_1_ref: blocks of 32, block = f16 d, f16 min, 16 nibble-pair bytes."""
    return _q4_1_blocks(*_q4_min(x, 32)).tobytes()


def quantize_q4_64_as_q4_1(x):
    """Q4_1's arithmetic over blocks of 64, written as two Q4_1 blocks a block: its d and min
    with the nibbles of each half."""
    d, mn, q = _q4_min(x, 64)
    halves = [_q4_1_blocks(d, mn, q[:, 32 * h:32 * h + 32]) for h in range(2)]
    return np.stack(halves, axis=1).tobytes()


ENCODERS = {
    "F32": lambda x: x.astype("<f4").tobytes(),
    "F16": lambda x: x.astype("<f2").tobytes(),  # numpy casts round to nearest even
    "BF16": lambda x: f32_to_bf16_bits(x).astype("<u2").tobytes(),
    "Q8_0": quantize_q8_0,
    "Q4_0": quantize_q4_0,
    "Q4_1": quantize_q4_1,
    "Q4_64": quantize_q4_64_as_q4_1,
}


def encoded_size(n, dtype):
    _, block_bytes, block = GGML_TYPES[dtype]
    return n // block * block_bytes


def write_tensor(f, cfg, spec, dtype, values=None):
    """Generate one tensor (or take values(cfg, spec)) and write it encoded as dtype, chunk by
    chunk; returns bytes written."""
    flat = (values or generate)(cfg, spec).reshape(-1)
    written = 0
    for i in range(0, flat.size, CHUNK):
        data = ENCODERS[dtype](flat[i:i + CHUNK])
        f.write(data)
        written += len(data)
    assert written == encoded_size(flat.size, dtype)
    return written


# ----------------------------------------------------------------------------- tokenizer

def bytes_to_unicode():
    """GPT-2's byte -> printable character table, in its canonical order."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def synthetic_tokenizer(vocab, seed):
    """A valid Qwen-style byte-level BPE tokenizer.json (as a dict) with exactly `vocab` ids.

    Ids 0..255: the 256 byte symbols (GPT-2 order); then merged tokens built from random
    pairs of letter tokens (each merge joins two existing tokens, so every token is
    reachable); the last three ids are <|endoftext|>, <|im_start|>, <|im_end|> (special)
    when vocab >= 259.
    """
    table = bytes_to_unicode()
    tokens = list(table.values())[:vocab]
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"] if vocab >= 259 else []
    n_merged = max(0, vocab - 256 - len(specials))
    seen = set(tokens)
    letters = [c for c in tokens if c.isascii() and c.isalpha()]
    space = table[ord(" ")]
    heads = letters + [space]  # left parts; merges onto the space symbol make word-initial tokens
    tails = list(letters)      # right parts: never start with the space symbol
    merges = []
    rng = np.random.default_rng([seed, 0x70CE])
    draws, k = rng.random((0, 3)), 0
    while len(merges) < n_merged:
        if k == len(draws):
            draws, k = rng.random((2 * n_merged + 64, 3)), 0
        ra, rb, rc = draws[k]
        k += 1
        a = heads[int(ra * len(heads))]
        b = (tails if rc < 0.3 else letters)
        b = b[int(rb * len(b))]
        if a + b in seen:
            continue
        seen.add(a + b)
        merges.append(f"{a} {b}")
        tokens.append(a + b)
        if len(a + b) < 8:  # keep tokens short, like a real vocabulary
            heads.append(a + b)
            if not a.startswith(space):
                tails.append(a + b)
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                  "use_regex": False}
    added = [{"id": len(tokens) + i, "content": s, "single_word": False, "lstrip": False,
              "rstrip": False, "normalized": False, "special": True} for i, s in enumerate(specials)]
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": added,
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": QWEN_SPLIT_REGEX}, "behavior": "Isolated",
             "invert": False},
            byte_level]},
        "post_processor": byte_level,
        "decoder": byte_level,
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": False,
                  "vocab": {t: i for i, t in enumerate(tokens)}, "merges": merges},
    }


@dataclass
class Vocab:
    """What the GGUF and config need from a tokenizer.json."""
    tokens: list
    types: list
    merges: list
    bos: int
    eos: int


def vocab_from_tokenizer(tok, vocab_size):
    """Tokens in id order (gaps and the tail up to vocab_size as [PADn], type 5 unused),
    types (1 normal, 3 control = special added token, 4 user-defined = other added token),
    merges as "a b" strings, bos (<|endoftext|>) and eos (<|im_end|>, else bos)."""
    by_id = {int(i): (t, 1) for t, i in tok["model"]["vocab"].items()}
    for a in tok.get("added_tokens", []):
        by_id[int(a["id"])] = (a["content"], 3 if a.get("special") else 4)
    n = max(by_id) + 1 if by_id else 0
    if n > vocab_size:
        raise ValueError(f"the tokenizer has {n} ids but --vocab is {vocab_size}")
    tokens, types = [], []
    for i in range(vocab_size):
        t, ty = by_id.get(i, (f"[PAD{i}]", 5))
        tokens.append(t)
        types.append(ty)
    merges = [m if isinstance(m, str) else " ".join(m) for m in tok["model"].get("merges", [])]
    ids = {t: i for i, (t, _) in by_id.items()}
    bos = ids.get("<|endoftext|>", vocab_size - 1)
    eos = ids.get("<|im_end|>", bos)
    return Vocab(tokens, types, merges, bos, eos)


# ----------------------------------------------------------------------------- HF writer

def hf_config(cfg, dtype, vocab):
    """config.json as transformers' Qwen3Config writes it."""
    return {
        "architectures": ["Qwen3ForCausalLM"],
        "model_type": "qwen3",
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": vocab.bos if vocab else cfg.vocab - 1,
        "eos_token_id": vocab.eos if vocab else cfg.vocab - 1,
        "head_dim": cfg.head_dim,
        "hidden_act": "silu",
        "hidden_size": cfg.hidden,
        "initializer_range": 0.02,
        "intermediate_size": cfg.ffn,
        "max_position_embeddings": cfg.max_pos,
        "max_window_layers": cfg.layers,
        "num_attention_heads": cfg.heads,
        "num_hidden_layers": cfg.layers,
        "num_key_value_heads": cfg.kv_heads,
        "rms_norm_eps": cfg.eps,
        "rope_scaling": None,
        "rope_theta": cfg.rope_theta,
        "sliding_window": None,
        "tie_word_embeddings": cfg.tied,
        "torch_dtype": TORCH_DTYPES[dtype],
        "transformers_version": "4.51.0",
        "use_cache": True,
        "use_sliding_window": False,
        "vocab_size": cfg.vocab,
    }


def write_safetensors(path, cfg, specs, dtype, values=None):
    """One safetensors file holding `specs` (in order), all encoded as dtype."""
    entries = [(s.hf, dtype, s.shape, s.size * ST_SIZES[dtype]) for s in specs]
    with open(path, "wb") as f:
        f.write(safetensors_io.header(entries, {"format": "pt"}))
        for s in specs:
            write_tensor(f, cfg, s, dtype, values)
    return sum(e[3] for e in entries)


def split_shards(specs, n_shards, itemsize):
    """Split specs, in order, into n_shards contiguous groups of about equal bytes."""
    total = sum(s.size for s in specs) * itemsize
    shards, cur, acc = [], [], 0
    for i, s in enumerate(specs):
        cur.append(s)
        acc += s.size * itemsize
        left_specs, left_shards = len(specs) - i - 1, n_shards - len(shards) - 1
        if left_shards and (acc >= total * (len(shards) + 1) / n_shards or left_specs == left_shards):
            shards.append(cur)
            cur = []
    shards.append(cur)
    return shards


def write_hf(out, cfg, dtype, shards, vocab, tokenizer_path, tokenizer_json, values=None):
    """An HF model directory: config.json, safetensors (maybe sharded), tokenizer files."""
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(hf_config(cfg, dtype, vocab), f, indent=2)
        f.write("\n")
    specs = tensor_specs(cfg)
    if shards <= 1:
        write_safetensors(os.path.join(out, "model.safetensors"), cfg, specs, dtype, values)
    else:
        groups = split_shards(specs, shards, ST_SIZES[dtype])
        weight_map, total = {}, 0
        for k, group in enumerate(groups):
            name = f"model-{k + 1:05d}-of-{len(groups):05d}.safetensors"
            total += write_safetensors(os.path.join(out, name), cfg, group, dtype)
            weight_map.update({s.hf: name for s in group})
        with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
            f.write("\n")
    if tokenizer_path:
        shutil.copyfile(tokenizer_path, os.path.join(out, "tokenizer.json"))
        side = os.path.join(os.path.dirname(tokenizer_path), "tokenizer_config.json")
        if os.path.exists(side):
            shutil.copyfile(side, os.path.join(out, "tokenizer_config.json"))
    elif tokenizer_json is not None:
        with open(os.path.join(out, "tokenizer.json"), "w") as f:
            json.dump(tokenizer_json, f, ensure_ascii=False)


# ----------------------------------------------------------------------------- GGUF writer

GGUF_U32, GGUF_I32, GGUF_F32, GGUF_BOOL, GGUF_STR, GGUF_ARR = 4, 5, 6, 7, 8, 9


def _gguf_str(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def _gguf_value(vtype, value):
    if vtype == GGUF_U32:
        return struct.pack("<I", value)
    if vtype == GGUF_I32:
        return struct.pack("<i", value)
    if vtype == GGUF_F32:
        return struct.pack("<f", value)
    if vtype == GGUF_BOOL:
        return struct.pack("<?", value)
    if vtype == GGUF_STR:
        return _gguf_str(value)
    raise ValueError(vtype)


def _gguf_kv(key, vtype, value, elem=None):
    out = _gguf_str(key) + struct.pack("<I", vtype)
    if vtype == GGUF_ARR:
        out += struct.pack("<IQ", elem, len(value))
        if elem == GGUF_I32:
            return out + np.asarray(value, "<i4").tobytes()
        return out + b"".join(_gguf_value(elem, v) for v in value)
    return out + _gguf_value(vtype, value)


def gguf_metadata(cfg, dtype, name, vocab, chat_template):
    """The key/value section (as bytes) and the number of pairs."""
    a = "qwen3."
    kvs = [
        ("general.architecture", GGUF_STR, "qwen3"),
        ("general.name", GGUF_STR, name),
        ("general.alignment", GGUF_U32, 32),
        ("general.file_type", GGUF_U32, FILE_TYPES[dtype]),
        ("general.quantization_version", GGUF_U32, 2),
        (a + "block_count", GGUF_U32, cfg.layers),
        (a + "context_length", GGUF_U32, cfg.max_pos),
        (a + "embedding_length", GGUF_U32, cfg.hidden),
        (a + "feed_forward_length", GGUF_U32, cfg.ffn),
        (a + "vocab_size", GGUF_U32, cfg.vocab),
        (a + "attention.head_count", GGUF_U32, cfg.heads),
        (a + "attention.head_count_kv", GGUF_U32, cfg.kv_heads),
        (a + "attention.key_length", GGUF_U32, cfg.head_dim),
        (a + "attention.value_length", GGUF_U32, cfg.head_dim),
        (a + "rope.freq_base", GGUF_F32, cfg.rope_theta),
        (a + "attention.layer_norm_rms_epsilon", GGUF_F32, cfg.eps),
    ]
    out = [_gguf_kv(*kv) for kv in kvs]
    if vocab:
        t = "tokenizer.ggml."
        out += [
            _gguf_kv(t + "model", GGUF_STR, "gpt2"),
            _gguf_kv(t + "pre", GGUF_STR, "qwen2"),
            _gguf_kv(t + "tokens", GGUF_ARR, vocab.tokens, GGUF_STR),
            _gguf_kv(t + "token_type", GGUF_ARR, vocab.types, GGUF_I32),
            _gguf_kv(t + "merges", GGUF_ARR, vocab.merges, GGUF_STR),
            _gguf_kv(t + "bos_token_id", GGUF_U32, vocab.bos),
            _gguf_kv(t + "eos_token_id", GGUF_U32, vocab.eos),
            _gguf_kv(t + "padding_token_id", GGUF_U32, vocab.bos),
            _gguf_kv(t + "add_bos_token", GGUF_BOOL, False),
        ]
        if chat_template:
            out.append(_gguf_kv("tokenizer.chat_template", GGUF_STR, chat_template))
    return b"".join(out), len(out)


def write_gguf(path, cfg, matrix_dtype, name, vocab, chat_template=None, alignment=32):
    """A GGUF v3 file: matrices as matrix_dtype, 1-D tensors F32; dims innermost first."""
    specs = tensor_specs(cfg)
    types = [("F32" if len(s.shape) == 1 else matrix_dtype) for s in specs]
    for s, t in zip(specs, types):
        block = GGML_TYPES[t][2]
        if s.shape[-1] % block:
            raise ValueError(f"{s.gguf}: row length {s.shape[-1]} is not a multiple of {block} ({t})")
    meta, n_kv = gguf_metadata(cfg, matrix_dtype, name, vocab, chat_template)
    infos, offset = [], 0
    for s, t in zip(specs, types):
        dims = s.shape[::-1]
        infos.append(_gguf_str(s.gguf) + struct.pack("<I", len(dims))
                     + struct.pack(f"<{len(dims)}Q", *dims)
                     + struct.pack("<IQ", GGML_TYPES[t][0], offset))
        offset += encoded_size(s.size, t)
        offset += -offset % alignment
    with open(path, "wb") as f:
        f.write(b"GGUF" + struct.pack("<IQQ", 3, len(specs), n_kv))
        f.write(meta)
        f.write(b"".join(infos))
        f.write(b"\0" * (-f.tell() % alignment))
        for s, t in zip(specs, types):
            n = write_tensor(f, cfg, s, t)
            f.write(b"\0" * (-n % alignment))


# ----------------------------------------------------------------------------- driver

def write_model(cfg, fmt, out, tokenizer=None, synthetic_tok=True, shards=3, name=None, mnn_variant=None):
    """Write cfg in format fmt to out (a directory for hf-*, a file for gguf-*).

    tokenizer: path of an HF tokenizer.json to embed; otherwise a synthetic byte-level BPE
    tokenizer is written when synthetic_tok, and none at all when not.
    """
    cfg.validate()
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}")
    tok_json = None
    if tokenizer:
        with open(tokenizer, encoding="utf-8") as f:
            tok_json = json.load(f)
    elif synthetic_tok:
        tok_json = synthetic_tokenizer(cfg.vocab, cfg.seed)
    vocab = vocab_from_tokenizer(tok_json, cfg.vocab) if tok_json is not None else None
    by_name = {s.hf: s for s in tensor_specs(cfg)}
    if fmt == "mnn":
        mnn_export.write_mnn(out, cfg, lambda name: generate(cfg, by_name[name]), tok_json, vocab, mnn_variant)
        return
    if fmt == "hf-mnn-f32":
        def dequantized(cfg, spec):
            x = generate(cfg, spec)
            return x if spec.kind == "norm" else mnn_export.quantize(x)[2].astype(np.float32)
        write_hf(out, cfg, "F32", 1, vocab, tokenizer, tok_json, dequantized)
        return
    family, dtype = fmt.split("-", 1)
    if family == "hf":
        n = shards if dtype == "sharded-f32" else 1
        dtype = "F32" if dtype == "sharded-f32" else dtype.upper()
        write_hf(out, cfg, dtype, n, vocab, tokenizer, tok_json)
    else:
        chat_template = None
        if tokenizer:
            side = os.path.join(os.path.dirname(tokenizer), "tokenizer_config.json")
            if os.path.exists(side):
                with open(side, encoding="utf-8") as f:
                    chat_template = json.load(f).get("chat_template")
        if os.path.dirname(out):
            os.makedirs(os.path.dirname(out), exist_ok=True)
        write_gguf(out, cfg, dtype.upper(), name or "pocketdec-random-qwen3", vocab, chat_template)


def config_from_args(args):
    base = dict(PRESETS[args.preset]) if args.preset else {}
    for k in ("layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "vocab", "tied"):
        v = getattr(args, k)
        if v is not None:
            base[k] = v
    missing = [k for k in ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab") if k not in base]
    if missing:
        raise SystemExit("missing shape options (or use --preset): " + ", ".join("--" + m.replace("_", "-") for m in missing))
    base.setdefault("head_dim", base["hidden"] // base["heads"])
    return Config(max_pos=args.max_pos, rope_theta=args.rope_theta, eps=args.eps, seed=args.seed, **base)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="output directory (hf-*) or .gguf file (default: derived from preset/format)")
    ap.add_argument("--format", default="hf-f32", choices=FORMATS)
    ap.add_argument("--preset", choices=sorted(PRESETS))
    ap.add_argument("--layers", type=int)
    ap.add_argument("--hidden", type=int)
    ap.add_argument("--heads", type=int)
    ap.add_argument("--kv-heads", type=int)
    ap.add_argument("--head-dim", type=int, help="default hidden/heads")
    ap.add_argument("--ffn", type=int)
    ap.add_argument("--vocab", type=int)
    ap.add_argument("--max-pos", type=int, default=40960)
    ap.add_argument("--rope-theta", type=float, default=1e6)
    ap.add_argument("--eps", type=float, default=1e-6)
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--tied", dest="tied", action="store_true", default=None)
    g.add_argument("--untied", dest="tied", action="store_false")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--shards", type=int, default=3, help="shard count for hf-sharded-f32 (default 3)")
    ap.add_argument("--tokenizer", help="HF tokenizer.json to copy into the model (its vocab must fit --vocab)")
    ap.add_argument("--no-tokenizer", action="store_true",
                    help="write no tokenizer at all (default: a synthetic byte-level BPE one)")
    ap.add_argument("--name", help="general.name of a GGUF")
    ap.add_argument("--mnn-variant", choices=mnn_export.VARIANTS,
                    help="with --format mnn: a graph differing in one thing pocketdec refuses (for its tests)")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    cfg = config_from_args(args)
    out = args.out or f"{args.preset or 'qwen3'}-{args.format}" + (".gguf" if args.format.startswith("gguf") else "")
    t0 = time.time()
    try:
        write_model(cfg, args.format, out, tokenizer=args.tokenizer, synthetic_tok=not args.no_tokenizer,
                    shards=args.shards, name=args.name, mnn_variant=args.mnn_variant)
    except ValueError as e:
        raise SystemExit(f"make_model: error: {e}")
    if not args.quiet:
        size = (sum(os.path.getsize(os.path.join(out, p)) for p in os.listdir(out))
                if os.path.isdir(out) else os.path.getsize(out))
        print(f"wrote {out} ({args.format}, {size / 1e6:.1f} MB, {time.time() - t0:.2f} s): "
              + json.dumps(asdict(cfg)), file=sys.stderr)


if __name__ == "__main__":
    main()

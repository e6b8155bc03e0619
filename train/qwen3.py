"""Qwen3 decoder in PyTorch, written from the HF semantics (docs: /work/shared/FORMATS.md),
and HF directories (config.json, model.safetensors, tokenizer.json) read and written with numpy.

torch 1.13 (Debian 12) has no scaled_dot_product_attention: attention is written out.
Weight names are the HF ones, so state_dict() keys are the safetensors keys.
"""

import json
import math
import os
import struct
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools"))
import safetensors_io  # noqa: E402  (the one writer of train/ and tools/testmodels/)

CONFIG_KEYS = ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
               "num_attention_heads", "num_key_value_heads", "head_dim", "rope_theta",
               "rms_norm_eps", "tie_word_embeddings", "max_position_embeddings",
               "bos_token_id", "eos_token_id")


class RMSNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope(x, pos, theta):
    """Rotate-half RoPE of x [B, heads, T, D] at positions pos [B, T]."""
    d = x.shape[-1]
    inv = theta ** (-torch.arange(0, d // 2, dtype=torch.float64) * 2 / d)
    ang = (pos.to(torch.float64)[..., None] * inv).to(x.dtype)  # [B, T, D/2]
    cos = torch.cat([ang.cos(), ang.cos()], -1)[:, None]
    sin = torch.cat([ang.sin(), ang.sin()], -1)[:, None]
    x1, x2 = x[..., :d // 2], x[..., d // 2:]
    return x * cos + torch.cat([-x2, x1], -1) * sin


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        h, d = c["hidden_size"], c["head_dim"]
        self.nh, self.nkv, self.d, self.theta = c["num_attention_heads"], c["num_key_value_heads"], d, c["rope_theta"]
        self.q_proj = nn.Linear(h, self.nh * d, bias=False)
        self.k_proj = nn.Linear(h, self.nkv * d, bias=False)
        self.v_proj = nn.Linear(h, self.nkv * d, bias=False)
        self.o_proj = nn.Linear(self.nh * d, h, bias=False)
        self.q_norm = RMSNorm(d, c["rms_norm_eps"])
        self.k_norm = RMSNorm(d, c["rms_norm_eps"])

    def forward(self, x, pos, mask, cache=None):
        B, T, _ = x.shape
        q = self.q_norm(self.q_proj(x).view(B, T, self.nh, self.d)).transpose(1, 2)
        k = self.k_norm(self.k_proj(x).view(B, T, self.nkv, self.d)).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.nkv, self.d).transpose(1, 2)
        q, k = rope(q, pos, self.theta), rope(k, pos, self.theta)
        if cache is not None:  # [k, v] of the earlier tokens, extended in place
            if cache:
                k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)
            cache[:] = [k, v]
        rep = self.nh // self.nkv
        k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
        s = q @ k.transpose(-1, -2) / math.sqrt(self.d)
        s = s.masked_fill(~mask[:, None], float("-inf"))
        y = F.softmax(s, -1) @ v
        return self.o_proj(y.transpose(1, 2).reshape(B, T, self.nh * self.d))


class MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        h, f = c["hidden_size"], c["intermediate_size"]
        self.gate_proj = nn.Linear(h, f, bias=False)
        self.up_proj = nn.Linear(h, f, bias=False)
        self.down_proj = nn.Linear(f, h, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Layer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.input_layernorm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])
        self.self_attn = Attention(c)
        self.post_attention_layernorm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])
        self.mlp = MLP(c)

    def forward(self, x, pos, mask, cache=None):
        x = x + self.self_attn(self.input_layernorm(x), pos, mask, cache)
        return x + self.mlp(self.post_attention_layernorm(x))


class Trunk(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_tokens = nn.Embedding(c["vocab_size"], c["hidden_size"])
        self.layers = nn.ModuleList(Layer(c) for _ in range(c["num_hidden_layers"]))
        self.norm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])


class Qwen3(nn.Module):
    """Qwen3ForCausalLM: .model is the trunk, lm_head exists unless embeddings are tied."""

    def __init__(self, config):
        super().__init__()
        self.config = dict(config)
        self.model = Trunk(self.config)
        self.lm_head = None if self.config["tie_word_embeddings"] else \
            nn.Linear(self.config["hidden_size"], self.config["vocab_size"], bias=False)

    def init_weights(self, gen, std=0.02):
        """Seeded init: normal(std) matrices, unit norms; output projections scaled by depth."""
        for name, p in self.named_parameters():
            if name.endswith("norm.weight"):
                nn.init.ones_(p)
            else:
                s = std / math.sqrt(2 * self.config["num_hidden_layers"]) \
                    if name.endswith(("o_proj.weight", "down_proj.weight")) else std
                with torch.no_grad():
                    p.copy_(torch.randn(p.shape, generator=gen) * s)

    def hidden(self, ids, pos=None, mask=None, cache=None):
        """Final-norm hidden states [B, T, H]. pos [B, T] defaults to 0..T-1 after the cached
        tokens; mask [B, T, past + T] (query, key) booleans defaults to causal (pass it to hide
        padding or siblings). cache: a list, one [k, v] per layer, filled and extended."""
        B, T = ids.shape
        if cache is not None and not cache:
            cache += [[] for _ in self.model.layers]
        past = cache[0][0].shape[2] if cache and cache[0] else 0
        if pos is None:
            pos = torch.arange(past, past + T).expand(B, T)
        if mask is None:
            mask = torch.ones(T, past + T, dtype=torch.bool).tril(past).expand(B, T, past + T)
        x = self.model.embed_tokens(ids)
        for i, layer in enumerate(self.model.layers):
            x = layer(x, pos, mask, cache[i] if cache is not None else None)
        return self.model.norm(x)

    def logits(self, h):
        w = self.model.embed_tokens.weight if self.lm_head is None else self.lm_head.weight
        return h @ w.t()

    def forward(self, ids, pos=None, mask=None, cache=None):
        return self.logits(self.hidden(ids, pos, mask, cache))


def make_config(vocab_size, hidden=256, layers=4, heads=4, kv_heads=2, head_dim=64, ffn=704,
                bos=None, eos=None, max_pos=4096):
    return {"vocab_size": vocab_size, "hidden_size": hidden, "intermediate_size": ffn,
            "num_hidden_layers": layers, "num_attention_heads": heads, "num_key_value_heads": kv_heads,
            "head_dim": head_dim, "rope_theta": 1000000.0, "rms_norm_eps": 1e-6,
            "tie_word_embeddings": True, "max_position_embeddings": max_pos,
            "bos_token_id": bos if bos is not None else vocab_size - 1,
            "eos_token_id": eos if eos is not None else vocab_size - 1}


# ----------------------------------------------------------------------------- safetensors

def write_safetensors(path, tensors, metadata=None):
    """F32 safetensors of {name: array-like}, names sorted (tools/safetensors_io.py)."""
    safetensors_io.write(path, tensors, "F32", metadata)


def read_safetensors(path):
    """{name: float32 array} of a safetensors file (F32, F16, BF16)."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for k, info in header.items():
        if k == "__metadata__":
            continue
        b, e = info["data_offsets"]
        raw = data[b:e]
        if info["dtype"] == "BF16":
            a = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            a = np.frombuffer(raw, {"F32": "<f4", "F16": "<f2"}[info["dtype"]]).astype(np.float32)
        out[k] = a.reshape(info["shape"])
    return out


def save_hf(model, path, tokenizer_json=None):
    """Write an HF directory pocketdec loads: config.json, model.safetensors (F32), tokenizer.json."""
    os.makedirs(path, exist_ok=True)
    c = model.config
    cfg = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "attention_bias": False,
           "attention_dropout": 0.0, "hidden_act": "silu", "initializer_range": 0.02,
           "max_window_layers": c["num_hidden_layers"], "rope_scaling": None, "sliding_window": None,
           "use_sliding_window": False, "use_cache": True, "torch_dtype": "float32",
           **{k: c[k] for k in CONFIG_KEYS}}
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    sd = {k: v.detach().cpu().numpy() for k, v in model.state_dict().items()}
    write_safetensors(os.path.join(path, "model.safetensors"), sd, {"format": "pt"})
    if tokenizer_json is not None:
        with open(os.path.join(path, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(tokenizer_json, f, ensure_ascii=False)


def load_hf(path):
    """A Qwen3 (float32) from an HF directory: single or sharded safetensors, any stored dtype."""
    with open(os.path.join(path, "config.json")) as f:
        raw = json.load(f)
    c = make_config(raw["vocab_size"])
    c.update({k: raw[k] for k in CONFIG_KEYS if raw.get(k) is not None})
    if "head_dim" not in raw:
        c["head_dim"] = c["hidden_size"] // c["num_attention_heads"]
    index = os.path.join(path, "model.safetensors.index.json")
    files = sorted(set(json.load(open(index))["weight_map"].values())) if os.path.exists(index) \
        else ["model.safetensors"]
    sd = {}
    for name in files:
        sd.update(read_safetensors(os.path.join(path, name)))
    if c["tie_word_embeddings"]:
        sd.pop("lm_head.weight", None)
    m = Qwen3(c)
    m.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in sd.items()})
    return m

"""Pointer head (DESIGN.md "Decision heads"), its prompts and its file format (heads/).

Prompt: <|fim_prefix|>{text}<|fim_middle|>{question} then <|box_start|>{candidate}<|box_end|>
for each candidate, then <|fim_suffix|>; text, question and each candidate are tokenized
separately, as heads/decider.c does. Parallel layout: a candidate block sees the prefix and
itself, its positions restart after the prefix; the query token sees everything.
q = Wq h[query] + bq, k_i = Wk h[end marker of i] + bk, score_i = q.k_i / sqrt(d) / temperature.
"""

import json
import math
import os

import torch
import torch.nn as nn

import qwen3

MARKERS = {"prefix": "<|fim_prefix|>", "middle": "<|fim_middle|>", "candidate_start": "<|box_start|>",
           "candidate_end": "<|box_end|>", "suffix": "<|fim_suffix|>"}


class PointerHead(nn.Module):
    def __init__(self, hidden, head_dim, gen, temperature=1.0):
        super().__init__()
        self.q = nn.Linear(hidden, head_dim)
        self.k = nn.Linear(hidden, head_dim)
        self.head_dim, self.temperature = head_dim, temperature
        with torch.no_grad():
            for lin in (self.q, self.k):
                lin.weight.copy_(torch.randn(lin.weight.shape, generator=gen) / math.sqrt(hidden))
                lin.bias.zero_()

    def scores(self, hq, hk):
        """hq [B, H] query states, hk [B, C, H] candidate end states -> [B, C] scores."""
        q, k = self.q(hq), self.k(hk)
        return (k @ q[:, :, None])[..., 0] / math.sqrt(self.head_dim) / self.temperature


def prompt(tok, text, question, candidates):
    """(ids, positions, visibility [T, T] bool, end-marker indices, query index), parallel layout."""
    mk = {k: tok.token_id(v) for k, v in MARKERS.items()}
    ids = [mk["prefix"]] + tok.encode(text) + [mk["middle"]] + tok.encode(question)
    n_prefix = len(ids)
    blocks = []
    for c in candidates:
        start = len(ids)
        ids += [mk["candidate_start"]] + tok.encode(c) + [mk["candidate_end"]]
        blocks.append((start, len(ids)))
    query = len(ids)
    ids.append(mk["suffix"])
    T = len(ids)
    pos = list(range(T))
    group = [-1] * T
    for b, (s, e) in enumerate(blocks):
        for i in range(s, e):
            pos[i] = n_prefix + i - s
            group[i] = b
    g = torch.tensor(group)
    vis = torch.ones(T, T, dtype=torch.bool).tril() & \
        ((g[:, None] < 0) | (g[None, :] < 0) | (g[:, None] == g[None, :]))
    return ids, pos, vis, [e - 1 for _, e in blocks], query


def save(head, path, extra=None):
    """head.json and head.safetensors in the heads/ format."""
    os.makedirs(path, exist_ok=True)
    meta = {"type": "pointer", "head_dim": head.head_dim, "temperature": head.temperature,
            "layout": "parallel", "pool": "last", "markers": dict(MARKERS), **(extra or {})}
    with open(os.path.join(path, "head.json"), "w", encoding="utf-8") as f:
        json.dump(meta, f, ensure_ascii=False, indent=2)
    qwen3.write_safetensors(os.path.join(path, "head.safetensors"),
                            {k: v.detach().numpy() for k, v in head.state_dict().items()})

#!/usr/bin/python3
"""Train a DFlash draft (speculative decoding) for a generative model: models/tianchi-gen.

The draft is the z-lab "Block Diffusion for Flash Speculative Decoding" model (DFlashDraftModel,
the layout pocketdec's drafts/ loads and tools/testmodels/make_draft.py writes): a small Qwen3
stack with no embeddings and no LM head of its own (it reads the target's), whose keys and values
are first the target's hidden states after `target_layer_ids` at the accepted positions
(concatenated, then `fc` and `hidden_norm`), then the block itself: the last accepted token and
mask tokens, attended without a causal mask. One pass proposes the block's next block-1 tokens.

What it learns from is the target's own greedy output for the training reviews (the labelled
reviews outside the dev split) under the schema's prompt: the draft is to guess what the target
will say, not the gold labels. Every position of an output is an anchor: the draft sees the
target's features of the positions before it and the token at it, and is trained to give the
next block-1 tokens (cross-entropy, later positions weighted exp(-(k-1)/gamma), as the DFlash
paper does). The target is frozen; its features are computed on the fly.

At the end it measures, on the dev reviews, the mean acceptance length the draft would give
greedy speculative decoding of the target's own greedy outputs (tokens a verify pass produces:
the proposals that match plus the target's next), and writes config.json, model.safetensors
(F32) and train_log.json into --out.

  /usr/bin/python3 train/train_draft.py --out models/tianchi-gen/draft
  /usr/bin/python3 train/train_draft.py --out /tmp/d --limit 40 --epochs 1   # a smoke run
"""

import argparse
import json
import math
import os
import random
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bpe  # noqa: E402
import data as D  # noqa: E402
import lora  # noqa: E402
import qwen3  # noqa: E402
import tasks  # noqa: E402

ROOT = os.path.dirname(HERE)
GREEDY_BATCH = 64  # reviews decoded together by the target


# ----------------------------------------------------------------- the target

def load_target(bundle):
    """The bundle's base with its adapter merged (float32, frozen), and its tokenizer."""
    base = os.path.join(bundle, "base")
    target = qwen3.load_hf(base)
    if os.path.isdir(os.path.join(bundle, "adapter")):
        target = lora.merged_copy(lora.load_peft(target, os.path.join(bundle, "adapter")))
    target.eval()
    for p in target.parameters():
        p.requires_grad_(False)
    return target, bpe.load(os.path.join(base, "tokenizer.json"))


@torch.no_grad()
def layer_states(target, ids, layers):
    """[T, len(layers) * H]: the target's hidden state after each of layers (0-based; HF's
    hidden_states[layer + 1]) at every position of ids, causal from position 0."""
    T = len(ids)
    x = target.model.embed_tokens(torch.tensor([ids]))
    pos = torch.arange(T)[None]
    mask = torch.ones(T, T, dtype=torch.bool).tril()[None]
    out = []
    for i, layer in enumerate(target.model.layers):
        x = layer(x, pos, mask)
        if i in layers:
            out.append(x[0])
    return torch.cat(out, -1)  # layers are increasing (main checks it)


@torch.no_grad()
def greedy(target, prompts, end_id, max_new):
    """The target's greedy continuations of prompts (lists of ids), each through end_id or
    max_new tokens, decoded together: the prompts left-padded, the pads hidden from every query."""
    B, P = len(prompts), max(len(p) for p in prompts)
    ids = torch.zeros(B, P, dtype=torch.long)
    keys = torch.zeros(B, P, dtype=torch.bool)  # which cached positions are real tokens
    for b, p in enumerate(prompts):
        ids[b, P - len(p):] = torch.tensor(p)
        keys[b, P - len(p):] = True
    pos = (keys.cumsum(1) - 1).clamp(min=0)
    # a pad row sees itself alone (its output is never read), so that no softmax row is empty
    mask = (keys[:, None, :] & torch.ones(P, P, dtype=torch.bool).tril()[None]) | torch.eye(P, dtype=torch.bool)[None]
    cache = []
    nxt = target.logits(target.hidden(ids, pos, mask, cache)[:, -1]).argmax(-1)
    lens, outs, done = keys.sum(1), [[] for _ in prompts], torch.zeros(B, dtype=torch.bool)
    for step in range(max_new):
        for b in range(B):
            if not done[b]:
                outs[b].append(int(nxt[b]))
        done |= nxt == end_id
        if bool(done.all()) or step + 1 == max_new:
            break
        keys = torch.cat([keys, torch.ones(B, 1, dtype=torch.bool)], 1)
        h = target.hidden(nxt[:, None], (lens + step)[:, None], keys[:, None, :], cache)
        nxt = target.logits(h[:, -1]).argmax(-1)
    return outs


def target_outputs(target, tok, template, reviews, max_new, cache_path, log):
    """[(prompt ids, output ids)] of each review, cached in cache_path (JSON)."""
    key = {"n": len(reviews), "max_new": max_new, "first": reviews[0][0] if reviews else None}
    if cache_path and os.path.exists(cache_path):
        with open(cache_path) as f:
            c = json.load(f)
        if c["key"] == key:
            return [tuple(s) for s in c["seqs"]]
    end_id = tok.token_id(template["end"])
    seqs, t0 = [], time.time()
    prompts = [tok.encode(tasks.full_prompt(template, text)) for _, text, _ in reviews]
    for k in range(0, len(prompts), GREEDY_BATCH):
        part = prompts[k:k + GREEDY_BATCH]
        seqs += list(zip(part, greedy(target, part, end_id, max_new)))
        log(f"target outputs: {len(seqs)}/{len(reviews)} ({time.time() - t0:.0f} s)")
    if cache_path:
        with open(cache_path, "w") as f:
            json.dump({"key": key, "seqs": seqs}, f)
    return seqs


# ----------------------------------------------------------------- the draft

class DraftLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        H, d = c["hidden_size"], c["head_dim"]
        self.nh, self.nkv, self.d, self.theta = c["num_attention_heads"], c["num_key_value_heads"], d, \
            c["rope_parameters"]["rope_theta"]
        self.input_layernorm = qwen3.RMSNorm(H, c["rms_norm_eps"])
        self.post_attention_layernorm = qwen3.RMSNorm(H, c["rms_norm_eps"])
        self.self_attn = nn.Module()
        a = self.self_attn
        a.q_proj = nn.Linear(H, self.nh * d, bias=False)
        a.k_proj = nn.Linear(H, self.nkv * d, bias=False)
        a.v_proj = nn.Linear(H, self.nkv * d, bias=False)
        a.o_proj = nn.Linear(self.nh * d, H, bias=False)
        a.q_norm = qwen3.RMSNorm(d, c["rms_norm_eps"])
        a.k_norm = qwen3.RMSNorm(d, c["rms_norm_eps"])
        self.mlp = qwen3.MLP(c)

    def forward(self, x, ctx, q_pos, c_pos, sees):
        """x [K, B, H] the blocks; ctx [C, H] the projected context, shared by the blocks (its
        keys and values computed once); q_pos [K, B] and c_pos [C] positions; sees [K, C]
        whether block k sees context position c. A block sees all of itself."""
        a, (K, B, _), C = self.self_attn, x.shape, ctx.shape[0]
        g, r, d = self.nkv, self.nh // self.nkv, self.d
        h = self.input_layernorm(x)  # the context is not layer-normed: it is hidden_norm(fc(...))
        q = qwen3.rope(a.q_norm(a.q_proj(h).view(K, B, self.nh, d)).transpose(1, 2), q_pos, self.theta)
        kb = qwen3.rope(a.k_norm(a.k_proj(h).view(K, B, g, d)).transpose(1, 2), q_pos, self.theta)
        vb = a.v_proj(h).view(K, B, g, d).transpose(1, 2)
        kc = qwen3.rope(a.k_norm(a.k_proj(ctx).view(C, g, d)).transpose(0, 1)[None], c_pos[None], self.theta)
        vc = a.v_proj(ctx).view(C, g, d).transpose(0, 1)[None]
        q = q.reshape(K, g, r * B, d)  # query head j*r + i reads key/value head j
        sc = (q @ kc.transpose(-1, -2)).masked_fill(~sees[:, None, None], float("-inf"))
        p = F.softmax(torch.cat([sc, q @ kb.transpose(-1, -2)], -1) / math.sqrt(d), -1)
        y = p[..., :C] @ vc + p[..., C:] @ vb  # [K, g, r * B, d]
        y = y.view(K, g, r, B, d).permute(0, 3, 1, 2, 4).reshape(K, B, self.nh * d)
        x = x + a.o_proj(y)
        return x + self.mlp(self.post_attention_layernorm(x))


class Draft(nn.Module):
    """DFlashDraftModel: state_dict keys are the release's tensor names."""

    def __init__(self, c):
        super().__init__()
        H, n_t = c["hidden_size"], len(c["dflash_config"]["target_layer_ids"])
        self.c = c
        self.fc = nn.Linear(n_t * H, H, bias=False)
        self.hidden_norm = qwen3.RMSNorm(H, c["rms_norm_eps"])
        self.layers = nn.ModuleList(DraftLayer(c) for _ in range(c["num_hidden_layers"]))
        self.norm = qwen3.RMSNorm(H, c["rms_norm_eps"])

    def forward(self, feats, embed, anchors, block_ids):
        """Final-norm states [K, B, H] of K blocks over one sequence: feats [T, n_t * H] the
        target's features of its positions; anchors [K] each block's first position (the
        block sees the context positions before it); block_ids [K, B]."""
        K, B = block_ids.shape
        T = feats.shape[0]
        ctx = self.hidden_norm(self.fc(feats))
        q_pos = anchors[:, None] + torch.arange(B)[None]
        sees = torch.arange(T)[None] < anchors[:, None]
        x = embed(block_ids)
        for layer in self.layers:
            x = layer(x, ctx, q_pos, torch.arange(T), sees)
        return self.norm(x)


def draft_config(target, layers, heads, kv_heads, ffn, block, mask_id, target_layers):
    tc = target.config
    return {"architectures": ["DFlashDraftModel"], "attention_bias": False, "attention_dropout": 0.0,
            "block_size": block,
            "dflash_config": {"block_size": block, "mask_token_id": mask_id, "target_layer_ids": target_layers},
            "dtype": "float32", "head_dim": tc["head_dim"], "hidden_act": "silu", "hidden_size": tc["hidden_size"],
            "intermediate_size": ffn, "layer_types": ["full_attention"] * layers,
            "max_position_embeddings": tc["max_position_embeddings"], "model_type": "qwen3",
            "num_attention_heads": heads, "num_hidden_layers": layers, "num_key_value_heads": kv_heads,
            "num_target_layers": tc["num_hidden_layers"], "rms_norm_eps": tc["rms_norm_eps"],
            "rope_parameters": {"rope_theta": tc["rope_theta"], "rope_type": "default"},
            "sliding_window": None, "tie_word_embeddings": False, "use_cache": False,
            "use_sliding_window": False, "vocab_size": tc["vocab_size"]}


def blocks_of(ids, start, block, mask_id):
    """Anchors start..len-2 of ids: each block [ids[p], mask ...] and its labels ids[p+1..p+block-1]
    (-100 past the end)."""
    anchors = list(range(start, len(ids) - 1))
    blk = [[ids[p]] + [mask_id] * (block - 1) for p in anchors]
    lab = [[ids[p + k] if p + k < len(ids) else -100 for k in range(1, block)] for p in anchors]
    return torch.tensor(anchors), torch.tensor(blk), torch.tensor(lab)


# ----------------------------------------------------------------- acceptance

@torch.no_grad()
def acceptance(draft, target, seqs, block, mask_id, layers):
    """Greedy speculative decoding of each target output: passes and tokens produced, the mean
    acceptance length (tokens a verify pass produces)."""
    passes = produced = 0
    for prompt, out in seqs:
        ids = prompt + out
        feats = layer_states(target, ids, layers)
        start = len(prompt)  # the first output token came from the prompt's pass
        while start < len(ids) - 1:
            blk = torch.tensor([[ids[start]] + [mask_id] * (block - 1)])
            h = draft(feats[:start], target.model.embed_tokens, torch.tensor([start]), blk)
            prop = target.logits(h[0, 1:]).argmax(-1).tolist()
            a = 0
            while a < len(prop) and start + 1 + a < len(ids) and prop[a] == ids[start + 1 + a]:
                a += 1
            n = min(a + 1, len(ids) - 1 - start)  # the proposals kept and the target's next token
            passes += 1
            produced += n
            start += n
    return {"passes": passes, "tokens": produced, "mean_acceptance_length": produced / max(passes, 1)}


# ----------------------------------------------------------------- training

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=os.path.join(ROOT, "models", "tianchi-gen"))
    ap.add_argument("--schema", default=tasks.SCHEMA)
    ap.add_argument("--out", required=True)
    ap.add_argument("--layers", type=int, default=1)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--ffn", type=int, default=704)
    ap.add_argument("--block", type=int, default=8)
    ap.add_argument("--target-layers", default="0,1,2,3")
    ap.add_argument("--mask-token", default="<|fim_suffix|>", help="a token the outputs never hold")
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--gamma", type=float, default=4.0, help="position k of a block weighs exp(-(k-1)/gamma)")
    ap.add_argument("--seqs-per-step", type=int, default=8)
    ap.add_argument("--max-new", type=int, default=160)
    ap.add_argument("--limit", type=int, default=0, help="train on the first N reviews only (0: all)")
    ap.add_argument("--dev-limit", type=int, default=0, help="measure on the first N dev reviews (0: all)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cache", default=None, help="a JSON file for the target's outputs (reused when it matches)")
    a = ap.parse_args(argv)
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    random.seed(a.seed)
    t_start = time.time()

    def log(msg):
        print(f"train_draft: [{time.time() - t_start:6.0f} s] {msg}", flush=True)

    target, tok = load_target(a.model)
    template, _ = tasks.load_template(a.schema)
    layers = [int(v) for v in a.target_layers.split(",")]
    if any(not 0 <= l < target.config["num_hidden_layers"] for l in layers) or sorted(set(layers)) != layers:
        raise SystemExit(f"--target-layers {a.target_layers}: increasing layer ids below "
                         f"{target.config['num_hidden_layers']}")
    mask_id = tok.token_id(a.mask_token)
    train = D.labelled(split="train")
    dev = D.labelled(split="dev")
    if a.limit:
        train = train[:a.limit]
    if a.dev_limit:
        dev = dev[:a.dev_limit]
    log(f"target outputs: {len(train)} training and {len(dev)} dev reviews")
    cache = a.cache
    train_seqs = target_outputs(target, tok, template, train, a.max_new, cache, log)
    dev_seqs = target_outputs(target, tok, template, dev, a.max_new, cache and cache + ".dev", log)

    log(f"target outputs done: {sum(len(o) for _, o in train_seqs)} training tokens")
    c = draft_config(target, a.layers, a.heads, a.kv_heads, a.ffn, a.block, mask_id, layers)
    draft = Draft(c)
    gen = torch.Generator().manual_seed(a.seed)
    for name, p in draft.named_parameters():
        with torch.no_grad():
            if name.endswith("norm.weight"):
                p.fill_(1.0)
            else:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.02)
    opt = torch.optim.AdamW(draft.parameters(), lr=a.lr, weight_decay=0.0)
    weights = torch.exp(-torch.arange(a.block - 1, dtype=torch.float32) / a.gamma)
    steps = a.epochs * math.ceil(len(train_seqs) / a.seqs_per_step)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / 50) * 0.5 * (1 + math.cos(math.pi * min(s, steps) / steps)))
    losses, step = [], 0
    for epoch in range(a.epochs):
        order = list(range(len(train_seqs)))
        random.shuffle(order)
        for i in range(0, len(order), a.seqs_per_step):
            loss_sum, w_sum = 0.0, 0.0
            opt.zero_grad()
            for k in order[i:i + a.seqs_per_step]:
                prompt, out = train_seqs[k]
                ids = prompt + out
                if len(out) < 2:
                    continue
                feats = layer_states(target, ids, layers)
                anchors, blk, lab = blocks_of(ids, len(prompt), a.block, mask_id)
                h = draft(feats, target.model.embed_tokens, anchors, blk)
                logp = F.log_softmax(target.logits(h[:, 1:]), -1)  # [K, B-1, V]
                valid = lab >= 0
                nll = -logp.gather(-1, lab.clamp(min=0)[..., None])[..., 0]
                w = weights[None].expand_as(nll) * valid
                (nll * w).sum().backward()
                loss_sum += float((nll * w).sum())
                w_sum += float(w.sum())
            if w_sum == 0:
                continue
            for p in draft.parameters():
                if p.grad is not None:
                    p.grad /= w_sum
            torch.nn.utils.clip_grad_norm_(draft.parameters(), 1.0)
            opt.step()
            sched.step()
            step += 1
            losses.append(loss_sum / w_sum)
            if step % 50 == 0:
                log(f"epoch {epoch + 1} step {step}/{steps}: loss {np.mean(losses[-50:]):.4f}")
    draft.eval()
    acc = acceptance(draft, target, dev_seqs, a.block, mask_id, layers)
    log(f"dev: mean acceptance length {acc['mean_acceptance_length']:.2f} "
        f"({acc['tokens']} tokens in {acc['passes']} verify passes, block {a.block})")
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(c, f, indent=2)
    qwen3.write_safetensors(os.path.join(a.out, "model.safetensors"),
                            {k: v.detach().numpy() for k, v in draft.state_dict().items()}, {"format": "pt"})
    with open(os.path.join(a.out, "train_log.json"), "w") as f:
        json.dump({"args": vars(a), "steps": step, "seconds": round(time.time() - t_start, 1),
                   "loss_first": losses[:5], "loss_last": losses[-5:], "dev": acc,
                   "train_reviews": len(train_seqs), "dev_reviews": len(dev_seqs)}, f, indent=2)
    log(f"wrote {a.out}")


if __name__ == "__main__":
    main()

"""Stages 1 and 2 of train_tagger.py: the tokenizer and the label-free base, with outside text.

The base is a Qwen3 pre-trained from scratch on the head's echo prompt (the review written twice:
language on the first copy, copying on the second) of the review text outside the dev split and, with
--polarity-data, of polarity-labelled reviews from outside the task (data/outside/: shopping reviews
marked positive or negative), cut at sentence ends into pieces of at most --base-chars characters.
Each step draws --outside-share of its batch from the outside pieces. With --polarity-weight > 0 a
small head over the read copy's states (attention pooling, one logit) learns each outside piece's
review polarity with the language model, so the states the tagger head reads carry what the outside
reviews know about complaints. No Tianchi label is read: one base still serves every fold of kfold.py.
The polarity head is kept in the run folder (polarity_head.safetensors), not shipped with the base.
"""

import json
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

import bpe
import qwen3
import tagging
from train_all import fit, log, new_base

SENTENCE_ENDS = set("。！？；!?;…\n")
CLAUSE_ENDS = set("，、, \t　")


def pieces(text, max_chars):
    """text cut into consecutive pieces of at most max_chars characters, each cut after the last
    sentence end that fits, else the last clause end, else at max_chars (windows.c's preference,
    without overlap); blank pieces dropped."""
    out, s = [], 0
    while s < len(text):
        e = min(len(text), s + max_chars)
        if e < len(text):
            for ends in (SENTENCE_ENDS, CLAUSE_ENDS):
                cut = max((k + 1 for k in range(s, e) if text[k] in ends), default=0)
                if cut > s:
                    e = cut
                    break
        if text[s:e].strip():
            out.append(text[s:e])
        s = e
    return out


class PolarityHead(nn.Module):
    """A review's polarity from the read copy's states: attention pooling (a learned query's softmax
    over the positions), then one logit (positive > 0)."""

    def __init__(self, hidden):
        super().__init__()
        self.query = nn.Parameter(torch.zeros(hidden))
        self.out = nn.Linear(hidden, 1)

    def forward(self, h, keep):
        """h [B, N, H], keep [B, N] bool (the read copy's positions) -> logits [B]."""
        w = torch.softmax((h @ self.query).masked_fill(~keep, -1e4), -1)
        return self.out((w[..., None] * h).sum(1))[:, 0]


def echo_batch(seqs):
    """ids [B, L] (right-padded), next-token targets (-100 past each end) of token sequences."""
    L = max(map(len, seqs))
    ids = torch.zeros(len(seqs), L, dtype=torch.long)
    tgt = torch.full((len(seqs), L), -100, dtype=torch.long)
    for b, s in enumerate(seqs):
        ids[b, :len(s)] = torch.tensor(s)
        tgt[b, :len(s) - 1] = torch.tensor(s[1:])
    return ids, tgt


def base_stage(a, texts, meta, rng, record, outside=()):
    """Tokenizer and label-free base in a.out/base (loaded when an earlier run left it; a run
    stopped during pre-training continues from its last checkpoint). texts: the task's review
    texts; outside: [(text, label)] polarity-labelled reviews (dataset.polarity_reviews)."""
    base_dir = os.path.join(a.out, "base")
    if os.path.exists(os.path.join(base_dir, "model.safetensors")):
        with open(os.path.join(a.out, "base_log.json")) as f:
            record.update(json.load(f))
        log("base: loaded from an earlier run")
        return base_dir
    extra = [(p, lab) for t, lab in outside for p in pieces(t, a.base_chars)]
    tok_path = os.path.join(a.out, "tokenizer.json")
    if os.path.exists(tok_path):  # a run stopped during pre-training: the same tokenizer
        tok = bpe.load(tok_path)
    else:
        tok = bpe.train(list(texts) + [p for p, _ in extra], a.vocab, specials=bpe.SPECIALS, within_chars=True)
        tok.save(tok_path)
    model = new_base(a, tok, record)
    hidden = model.config["hidden_size"]
    pol = PolarityHead(hidden)
    use_pol = bool(extra) and a.polarity_weight > 0
    log(f"base: {record['parameters']} parameters, {len(texts)} texts and {len(extra)} outside pieces "
        f"({sum(1 for _, lab in extra if lab == 0)} of negative reviews), vocab {len(tok)}, "
        f"polarity objective {'weight %g' % a.polarity_weight if use_pol else 'off'}")
    echo = [tagging.prompt(tok, meta, t)[:2] for t in texts]
    out_echo = [(tagging.prompt(tok, meta, p)[:2], lab) for p, lab in extra]
    n_out = round(a.batch * a.outside_share) if extra else 0

    def batch_loss(step):
        own = rng.sample(echo, a.batch - n_out)
        far = rng.sample(out_echo, n_out) if n_out else []
        seqs = [ids for ids, _ in own] + [ids for (ids, _), _ in far]
        ids, tgt = echo_batch(seqs)
        h = model.hidden(ids)
        logits = model.logits(h)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt.reshape(-1), ignore_index=-100)
        if use_pol and far:
            keep = torch.zeros(ids.shape, dtype=torch.bool)
            for b, ((s, read), _) in enumerate(far):
                keep[len(own) + b, read:len(s) - 1] = True  # the read copy, not the closing marker
            z = pol(h[len(own):], keep[len(own):])
            y = torch.tensor([float(lab) for _, lab in far])
            loss = loss + a.polarity_weight * F.binary_cross_entropy_with_logits(z, y)
        return loss, int((tgt >= 0).sum())

    params = list(model.parameters()) + (list(pol.parameters()) if use_pol else [])
    fit(params, a.base_steps, a.lr, batch_loss, "base", record, os.path.join(a.out, "base_checkpoint.pt"), rng,
        a.checkpoint_every)
    qwen3.save_hf(model, base_dir, tok.to_json())
    if use_pol:
        qwen3.write_safetensors(os.path.join(a.out, "polarity_head.safetensors"),
                                {k: v.detach().numpy() for k, v in pol.state_dict().items()})
    record["base_data"] = {"texts": len(texts), "outside_pieces": len(extra), "outside_share": a.outside_share,
                           "polarity_weight": a.polarity_weight if use_pol else 0, "vocab": len(tok)}
    with open(os.path.join(a.out, "base_log.json"), "w") as f:
        json.dump({k: record[k] for k in ("parameters", "base", "base_data")}, f)
    return base_dir


def base_args(ap):
    """The base stage's options beyond the size and rate of train_all.common_args."""
    ap.add_argument("--base-steps", type=int, default=1500)
    ap.add_argument("--outside-share", type=float, default=0.5,
                    help="the share of each pre-training batch drawn from the --polarity-data reviews")
    ap.add_argument("--polarity-weight", type=float, default=1.0,
                    help="the weight of the review-polarity objective on the outside reviews (0: language alone)")
    ap.add_argument("--checkpoint-every", type=int, default=100,
                    help="pre-training saves a checkpoint every N steps; a rerun continues from the last one")
    ap.add_argument("--base-chars", type=int, default=64,
                    help="outside reviews are cut at sentence ends into pieces of at most this many characters")

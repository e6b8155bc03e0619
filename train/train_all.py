#!/usr/bin/python3
"""Train pocketdec's Tianchi default from scratch, or an adapter and head for an existing base.

  train_all.py --out DIR [--seed 0] [--base HFDIR] [--threads 2] [size and step options]

Without --base: a byte-level BPE tokenizer on all review text, then a small Qwen3 base LM
pre-trained on the review text outside the dev split (training and test reviews), mixed with the training
split's extraction sequences unless --no-pretrain-records (never the dev split's). Then, on the
labelled reviews minus the dev split: one LoRA adapter trained jointly for extraction
(generation of the schema's records) and for a pointer head that picks the (category,
polarity) of an (aspect, opinion) pair among the joint candidates. Writes
  DIR/tokenizer.json, DIR/base/ (HF), DIR/adapter/ (PEFT), DIR/head/ (heads/ format),
  DIR/merged/ (HF, adapter merged: for agreement checks), DIR/train_log.json.
Same seed, same threads, same outputs.
"""

import argparse
import json
import math
import os
import random
import sys
import time

import torch
import torch.nn.functional as F

import bpe
import data as D
import lora
import pointer
import qwen3
import tasks


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def lr_at(step, steps, peak, warmup):
    """Linear warmup, cosine decay to 10% of the peak."""
    if step < warmup:
        return peak * (step + 1) / warmup
    t = (step - warmup) / max(1, steps - warmup)
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t)))


def fit(params, steps, lr, batch_loss, name, record, checkpoint=None, rng=None, every=100):
    """AdamW over `steps` calls of batch_loss(step) -> (loss, tokens); logs and records tokens/s.

    checkpoint: a file where the parameters, the optimiser, the step, torch's and `rng`'s (a
    random.Random) states are saved every `every` steps (written aside, then renamed: a kill at any
    instant leaves the last whole one); a rerun finds it and continues from that step, to the same
    weights as a run never stopped. Removed once the last step is done."""
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.01, betas=(0.9, 0.95))
    t0, tokens, recent, loss, first = time.time(), 0, [], None, 0
    if checkpoint and os.path.exists(checkpoint):
        ck = torch.load(checkpoint)
        with torch.no_grad():
            for p, v in zip(params, ck["params"]):
                p.copy_(v)
        opt.load_state_dict(ck["optimizer"])
        torch.set_rng_state(ck["torch_rng"])
        if rng is not None:
            rng.setstate(ck["rng"])
        first, tokens = ck["step"], ck["tokens"]
        log(f"{name}: continuing from the checkpoint of step {first}")
    resumed = tokens  # the tokens/s logged are this process's
    for step in range(first, steps):
        for g in opt.param_groups:
            g["lr"] = lr_at(step, steps, lr, max(1, steps // 20))
        loss, n = batch_loss(step)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        tokens += n
        recent.append(loss.item())
        if (step + 1) % 50 == 0 or step + 1 == steps:
            log(f"{name} step {step + 1}/{steps} loss {sum(recent) / len(recent):.4f} "
                f"{(tokens - resumed) / (time.time() - t0):.0f} tok/s")
            recent = []
        if checkpoint and (step + 1) % every == 0 and step + 1 < steps:
            torch.save({"params": [p.detach() for p in params], "optimizer": opt.state_dict(), "step": step + 1,
                        "tokens": tokens, "torch_rng": torch.get_rng_state(),
                        "rng": rng.getstate() if rng is not None else None}, checkpoint + ".tmp")
            os.replace(checkpoint + ".tmp", checkpoint)
    secs = time.time() - t0
    record[name] = {"steps": steps, "seconds": round(secs, 1), "tokens": tokens,
                    "tokens_per_s": round((tokens - resumed) / max(secs, 1e-9)), "final_loss": loss.item() if loss is not None else None}
    if checkpoint and os.path.exists(checkpoint):
        os.remove(checkpoint)


def pretrain(model, tok, texts, a, rng, record, extraction=()):
    """Next-token LM on packed review text, <|endoftext|> after each review; with `extraction`
    (token sequences: a training review's extraction prompt and its records) those are packed
    in too, shuffled among the reviews, so the base knows the record format before the adapter."""
    eot = tok.token_id("<|endoftext|>")
    docs = [tok.encode(t) for t in texts] + [list(ids) for ids in extraction]
    if extraction:
        rng.shuffle(docs)
    stream = []
    for d in docs:
        stream += d + [eot]
    L, B = a.block, a.batch
    if len(stream) < L + 2:
        sys.exit(f"train_all: {len(stream)} tokens of text is less than one --block of {L}")
    params = [p for p in model.parameters() if p.requires_grad]
    mask = torch.ones(L, L, dtype=torch.bool).tril()[None]

    def batch(step):
        starts = [rng.randrange(0, len(stream) - L - 1) for _ in range(B)]
        x = torch.tensor([stream[s:s + L + 1] for s in starts])
        logits = model(x[:, :-1], mask=mask.expand(B, L, L))
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1)), B * L

    record["pretrain_stream_tokens"] = len(stream)
    fit(params, a.pretrain_steps, a.lr, batch, "pretrain", record)


def finetune(model, head, tok, t, train, a, rng, record):
    """One step = an extraction batch (LM loss on the records) + a decision batch (head loss)."""
    cands = tasks.candidates(t)
    ext = [tasks.extraction_example(tok, t, text, quads) for _, text, quads in train]
    pairs = [(text, q) for _, text, quads in train for q in quads]
    params = lora.add_lora(model, a.lora_r, a.lora_alpha, torch.Generator().manual_seed(a.seed + 1))
    params += list(head.parameters())

    def decision_batch():
        exs = []
        for text, q in rng.sample(pairs, a.head_batch):
            gold = t["candidate"].format(category=q[2], polarity=q[3])
            sub = [gold] + rng.sample([c for c in cands if c != gold], min(a.head_candidates, len(cands)) - 1)
            rng.shuffle(sub)
            exs.append(tasks.decision_examples(tok, t, text, [q], sub)[0])
        return tasks.collate_decisions(exs)

    def batch(step):
        ids, tgt, mask = tasks.collate_lm(rng.sample(ext, a.batch))
        logits = model(ids, mask=mask)
        lm = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt.reshape(-1), ignore_index=tasks.IGNORE)
        dids, pos, dmask, keys, query, gold = decision_batch()
        h = model.hidden(dids, pos, dmask)
        rows = torch.arange(len(gold))
        scores = head.scores(h[rows, query], h[rows[:, None], keys])
        dl = F.cross_entropy(scores, gold)
        return lm + a.head_weight * dl, int((tgt != tasks.IGNORE).sum()) + int(dids.numel())

    fit(params, a.finetune_steps, a.lora_lr, batch, "finetune", record)


def common_args(ap, data=True):
    """The options of every recipe: the run, the data (data=False: the caller adds its own --data, as
    dataset.add_args does), and the base's shape and rate."""
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=0)
    if data:
        ap.add_argument("--data", default=D.DATA)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--limit", type=int, default=0, help="use only the first N reviews (smoke tests)")
    ap.add_argument("--vocab", type=int, default=4096)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--ffn", type=int, default=704)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=2e-3)


def new_base(a, tok, record):
    """A Qwen3 of the size options for tok's vocabulary, initialised from a.seed; its parameter count
    goes in record."""
    cfg = qwen3.make_config(len(tok), a.hidden, a.layers, a.heads, a.kv_heads, a.head_dim, a.ffn,
                            bos=tok.token_id("<|endoftext|>"), eos=tok.token_id("<|im_end|>"))
    model = qwen3.Qwen3(cfg)
    model.init_weights(torch.Generator().manual_seed(a.seed))
    record["parameters"] = sum(p.numel() for p in model.parameters())
    return model


def start(a):
    """Seeds and threads of a run, its output folder: (rng, record, start time)."""
    torch.manual_seed(a.seed)
    torch.set_num_threads(a.threads)
    os.makedirs(a.out, exist_ok=True)
    return random.Random(a.seed), {"seed": a.seed, "args": vars(a)}, time.time()


def finish(a, model, tok, record, t_start):
    """The merged copy (for agreement checks) and train_log.json of a run."""
    qwen3.save_hf(lora.merged_copy(model), os.path.join(a.out, "merged"), tok.to_json())
    record["total_seconds"] = round(time.time() - t_start, 1)
    with open(os.path.join(a.out, "train_log.json"), "w", encoding="utf-8") as f:
        json.dump(record, f, ensure_ascii=False, indent=2)
    log(f"done in {record['total_seconds']} s: {a.out}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    common_args(ap)
    ap.add_argument("--base", help="existing HF base directory: train only the adapter and head")
    ap.add_argument("--schema", default=tasks.SCHEMA)
    ap.add_argument("--extra-text", action="append", default=[], metavar="FILE",
                    help="UTF-8 text (one document a non-empty line) added to tokenizer and base "
                         "training, e.g. from manpages-zh or fortunes-zh; repeatable")
    ap.add_argument("--block", type=int, default=128)
    ap.add_argument("--pretrain-steps", type=int, default=700)
    ap.add_argument("--pretrain-records", action=argparse.BooleanOptionalAction, default=True,
                    help="also pre-train the base on the training split's extraction sequences "
                         "(prompt and records; never the dev split)")
    ap.add_argument("--finetune-steps", type=int, default=1150)
    ap.add_argument("--lora-r", type=int, default=16)
    ap.add_argument("--lora-alpha", type=float, default=32)
    ap.add_argument("--lora-lr", type=float, default=2e-3)
    ap.add_argument("--head-dim-out", type=int, default=64, help="pointer head query/key size")
    ap.add_argument("--head-batch", type=int, default=8)
    ap.add_argument("--head-candidates", type=int, default=12,
                    help="candidates per training decision (gold + random others); all at inference")
    ap.add_argument("--head-weight", type=float, default=1.0)
    a = ap.parse_args(argv)
    rng, record, t_start = start(a)
    texts, train = D.all_text(a.data), D.labelled(a.data, "train")
    if a.limit:
        texts, train = texts[:a.limit], train[:a.limit]
    for path in a.extra_text:
        with open(path, encoding="utf-8", errors="replace") as f:
            texts += [line.strip() for line in f if line.strip()]
    t, prompt_src = tasks.load_template(a.schema)
    record["prompt_source"] = os.path.relpath(prompt_src, os.path.dirname(tasks.HERE))
    log(f"prompt from {record['prompt_source']}; {len(texts)} texts, {len(train)} labelled training reviews")

    if a.base:
        try:
            tok = bpe.load(os.path.join(a.base, "tokenizer.json"))
        except (OSError, ValueError, KeyError) as e:
            sys.exit(f"train_all: {e}")
        missing = [s for s in bpe.SPECIALS if s not in tok.ids]
        if missing:
            sys.exit(f"train_all: {a.base}/tokenizer.json lacks the marker tokens {missing}")
        model = qwen3.load_hf(a.base)
        base_name = os.path.abspath(a.base)
    else:
        t0 = time.time()
        tok = bpe.train(texts, a.vocab, log=log)
        record["tokenizer_seconds"] = round(time.time() - t0, 1)
        model = new_base(a, tok, record)
        log(f"base: {record['parameters']} parameters, vocab {len(tok)}")
        ext = []
        if a.pretrain_records:
            for _, text, quads in train:
                ids, tgt = tasks.extraction_example(tok, t, text, quads)
                ext.append(ids + [tgt[-1]])
        record["pretrain_records"] = len(ext)
        pretrain(model, tok, texts, a, rng, record, ext)
        base_name = "base"
        qwen3.save_hf(model, os.path.join(a.out, "base"), tok.to_json())
    tok.save(os.path.join(a.out, "tokenizer.json"))

    head = pointer.PointerHead(model.config["hidden_size"], a.head_dim_out,
                               torch.Generator().manual_seed(a.seed + 2))
    finetune(model, head, tok, t, train, a, rng, record)
    lora.save_peft(model, os.path.join(a.out, "adapter"), base_name)
    pointer.save(head, os.path.join(a.out, "head"))
    finish(a, model, tok, record, t_start)


if __name__ == "__main__":
    main()

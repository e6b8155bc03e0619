#!/usr/bin/python3
"""Train pocketdec's extraction-by-decisions default: a character tokenizer, a Qwen3 base, a LoRA
adapter and a tagger head (BIO tags with CRF transitions, opinion -> aspect links, 39 labels).

  train_tagger.py --out DIR [--seed 0] [--threads 2] [size and step options]

Stages (each saved, a finished stage is skipped on a rerun with the same --out: resumable):
  1. tokenizer: byte-level BPE whose merges never cross a character (bpe.train within_chars) on the
     review text outside the dev split (training and test reviews);
  2. base: a Qwen3 pre-trained from scratch on the head's echo prompt of that text (next-token loss:
     language on the first copy, copying on the second) mixed with the tagging task on the
     labelled training reviews (a head trained along, so the trunk learns the task's features);
  3. self-training: the base and its head decode the teacher-tagged reviews; where their spans are
     the teacher's, their links and labels become training records;
  4. adapter + head: LoRA on q/k/v/o/gate/up/down and the tagger head (its label classifier widened
     to the first and last token states of each span, with a no-record class for an aspect that no
     opinion links to), on the task alone; with --soup N, N times (each saved as DIR/stage<k>/),
     shipping their uniform average.
Writes DIR/base/ (HF), DIR/adapter/ (PEFT), DIR/head/ (heads/ tagger format), DIR/merged/,
DIR/dev_Result.csv (the dev split through pocketdec itself, python/: what users get; skipped with a
message when the library is not built), DIR/dev_python_Result.csv (the Python decode of compose/'s
rules, the agreement tests' reference) and DIR/train_log.json.
The dev split is never read for training.
"""

import argparse
import csv
import json
import os
import random
import sys
import time

import torch
import torch.nn.functional as F

import bpe
import data as D
import lora
import qwen3
import tagging
import tasks
import teacher
from train_all import common_args, finish, fit, log, start


def labelled_spans(data, split):
    """[(id, text, quads)] with quads = (a, a_start, a_end, o, o_start, o_end, category, polarity),
    character offsets (None for `_`)."""
    with open(os.path.join(data, "train_labels.csv"), encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))[1:]
    by = {}
    for r in rows:
        off = lambda a, b: (int(a), int(b)) if a.strip() else (None, None)  # noqa: E731
        by.setdefault(int(r[0]), []).append((r[1], *off(r[2], r[3]), r[4], *off(r[5], r[6]), r[7], r[8]))
    return [(i, t, by.get(i, [])) for i, t, _ in D.labelled(data, split)]


def char_tags(text, spans):
    """Per-character BIO tag names of [(field, start, end)] character spans."""
    out = ["O"] * len(text)
    for f, s, e in spans:
        out[s] = "B-" + f
        for c in range(s + 1, e):
            out[c] = "I-" + f
    return out


class Example:
    """One review as tensors for the task loss: tags always; links and labels when quads (gold
    quadruples) are given, not for a review the teacher tagged (spans only)."""

    def __init__(self, tok, meta, head_tags, labels, text, quads=None, spans=None, terms=None, orphans=True):
        self.ids, self.read, ranges = tagging.prompt(tok, meta, text, terms)
        self.n = len(ranges)
        self.mid = tagging.midchar(text, ranges)
        if spans is None and quads is not None:
            spans = sorted({(f, s, e) for q in quads for f, s, e in (("aspect", q[1], q[2]), ("opinion", q[4], q[5]))
                            if s is not None})
        starts = tagging.char_starts(text)
        # each span's first and last token: those holding its first and last byte (with a tokenizer
        # whose tokens cross characters, --tokenizer bpe, a span edge can fall inside a token; the
        # span then grows to whole tokens, as the decoder can only return whole tokens)
        where = {(f, s): (max(k for k, (b, _) in enumerate(ranges) if b <= starts[s]),
                          min(k for k, (_, x) in enumerate(ranges) if x >= starts[e])) for f, s, e in spans}
        tags = tagging.token_tags(text, ranges, char_tags(text, spans))
        for (f, _), (first, last) in sorted(where.items(), key=lambda w: w[1]):
            tags[first:last + 1] = ["B-" + f] + ["I-" + f] * (last - first)
        self.tags = [head_tags.index(t) for t in tags]
        self.links, self.labels = [], []
        aspects = sorted(v for (f, _), v in where.items() if f == "aspect")
        for q in quads or ():
            a = where[("aspect", q[1])] if q[1] is not None else None
            o = where[("opinion", q[4])] if q[4] is not None else None
            if o is not None:
                self.links.append((o[1], [x[1] for x in aspects], aspects.index(a) if a else len(aspects)))
            self.labels.append((a, o, labels.index((q[6], q[7]))))
        # for a head with the no-record class: the aspects that no quadruple holds without an
        # opinion, what decode would write as (aspect, _) when no opinion links to them
        alone = {where[("aspect", q[1])] for q in quads or () if q[1] is not None and q[4] is None}
        self.orphans = [(a, None) for a in aspects if a not in alone] if quads is not None and orphans else []
        # and (with --no-record 2) the pairs of a review's spans that no quadruple holds
        held = {(where[("aspect", q[1])] if q[1] is not None else None, where[("opinion", q[4])])
                for q in quads or () if q[4] is not None}
        opinions = sorted({o for _, o in held})
        self.wrong_pairs = [(a, o) for o in opinions for a in aspects + [None] if (a, o) not in held] \
            if quads is not None and orphans else []


def augment(train, rng, copies, p=0.5):
    """New labelled reviews: each span of a training review swapped, with probability p, for another
    term of the same field seen in training with the same label (an opinion with the same (category,
    polarity), an aspect with the same category); offsets, links and labels follow."""
    pools = {}
    for _, text, quads in train:
        for q in quads:
            if q[1] is not None:
                pools.setdefault(("aspect", q[6]), set()).add(q[0])
            if q[4] is not None:
                pools.setdefault(("opinion", q[6], q[7]), set()).add(q[3])
    pools = {k: sorted(v) for k, v in pools.items()}
    out = []
    for _ in range(copies):
        for i, text, quads in train:
            new = {}
            for q in quads:
                if q[1] is not None and ("aspect", q[1]) not in new:
                    new[("aspect", q[1])] = (q[2], rng.choice(pools[("aspect", q[6])]) if rng.random() < p else q[0])
                if q[4] is not None and ("opinion", q[4]) not in new:
                    new[("opinion", q[4])] = (q[5], rng.choice(pools[("opinion", q[6], q[7])])
                                              if rng.random() < p else q[3])
            pieces, at, moved = [], 0, {}
            for (f, s), (e, term) in sorted(new.items(), key=lambda kv: kv[0][1]):
                pieces.append(text[at:s])
                start = sum(map(len, pieces))
                pieces.append(term)
                moved[(f, s)] = (start, start + len(term))
                at = e
            pieces.append(text[at:])
            nq = []
            for q in quads:
                a = moved.get(("aspect", q[1]), (None, None))
                o = moved.get(("opinion", q[4]), (None, None))
                nq.append((new[("aspect", q[1])][1] if q[1] is not None else "_", *a,
                           new[("opinion", q[4])][1] if q[4] is not None else "_", *o, q[6], q[7]))
            out.append((i, "".join(pieces), nq))
    return out


def gazetteer(train):
    """term -> fields of the gold spans of train: the head's gazetteer."""
    terms = {}
    for _, _, quads in train:
        for q in quads:
            for f, k in (("aspect", 0), ("opinion", 3)):
                if q[k + 1] is not None:
                    terms.setdefault(q[k], set()).add(f)
    return terms


def teach(train, texts, epochs, seed):
    """The perceptron teacher trained on the gold spans of train, and its spans on texts."""
    data = [(t, [teacher.TAGS.index(x) for x in
                 char_tags(t, [(f, s, e) for q in quads for f, s, e in (("aspect", q[1], q[2]),
                                                                        ("opinion", q[4], q[5])) if s is not None])])
            for _, t, quads in train]
    p = teacher.Perceptron()
    p.train(data, epochs=epochs, seed=seed)
    return [(t, p.spans(t)) for t in texts]


@torch.no_grad()
def self_train(model, head, meta, tok, labels, head_tags, taught, terms, no_record):
    """Self-training: the trunk and its head decode the teacher-tagged reviews; where the trunk's
    spans are exactly the teacher's, its links and labels make a full training review, elsewhere the
    teacher's spans alone stay (tags only)."""
    model.eval()
    out = []
    for text, spans in taught:
        quads = []
        if text:
            ids, read, ranges = tagging.prompt(tok, meta, text, terms)
            h = model.hidden(torch.tensor([ids]))[0, read:read + len(ranges)]
            quads = tagging.decode(head, meta, h, text, ranges, labels)[2]
        mine = {(f, q[k + 1], q[k + 2]) for q in quads for f, k in (("aspect", 0), ("opinion", 3)) if q[k + 1] is not None}
        if quads and mine == set(spans):
            # records of a lone aspect are left out: a head without the no-record class writes one
            # for every aspect no opinion links to, and most of those are wrong
            quads = [q for q in quads if q[4] is not None or not no_record]
            out.append(Example(tok, meta, head_tags, labels, text, quads, spans=sorted(mine), terms=terms,
                               orphans=False))
        else:
            out.append(Example(tok, meta, head_tags, labels, text, spans=spans, terms=terms))
    model.train()
    return out


def task_loss(model, head, batch, drop, no_record=1):
    """CRF + link + label losses of a batch of Examples (mean of the three terms)."""
    B = len(batch)
    L = max(len(x.ids) for x in batch)
    N = max(x.n for x in batch)
    ids = torch.zeros(B, L, dtype=torch.long)
    for b, x in enumerate(batch):
        ids[b, :len(x.ids)] = torch.tensor(x.ids)
    h = model.hidden(ids)
    h = F.dropout(h, drop, head.training)
    idx = torch.zeros(B, N, dtype=torch.long)
    gold = torch.zeros(B, N, dtype=torch.long)
    mid = torch.zeros(B, N, dtype=torch.bool)
    for b, x in enumerate(batch):
        idx[b, :x.n] = torch.arange(x.read, x.read + x.n)
        gold[b, :x.n] = torch.tensor(x.tags)
        mid[b, :x.n] = torch.tensor(x.mid)
    hr = h[torch.arange(B)[:, None], idx]  # [B, N, H]
    lengths = torch.tensor([x.n for x in batch])
    crf = head.crf_nll(head.emissions(hr), gold, mid, lengths)
    link, n_link, lab, n_lab = 0.0, 0, 0.0, 0
    for b, x in enumerate(batch):
        for o, cands, g in x.links:
            s = head.link_scores(hr[b, o][None], hr[b, cands] if cands else hr[b, :0])
            link = link + F.cross_entropy(s, torch.tensor([g]))
            n_link += 1
        rows = x.labels
        if head.no_record:
            rows = rows + [(a, o, head.n_labels) for a, o in x.orphans + (x.wrong_pairs if no_record > 1 else [])]
        if rows:
            parts = head.label_parts(hr[b], [r[:2] for r in rows])
            lab = lab + F.cross_entropy(head.label_logits(parts), torch.tensor([r[2] for r in rows]),
                                        reduction="sum")
            n_lab += len(rows)
    return crf + link / max(1, n_link) + lab / max(1, n_lab), sum(len(x.ids) for x in batch)


def lm_loss(model, seqs, rng, batch):
    """Next-token loss of a batch drawn from seqs (the echo prompts' ids), and its target count."""
    pick = rng.sample(seqs, batch)
    L = max(map(len, pick))
    ids = torch.zeros(len(pick), L, dtype=torch.long)
    tgt = torch.full((len(pick), L), -100, dtype=torch.long)
    for b, s in enumerate(pick):
        ids[b, :len(s)] = torch.tensor(s)
        tgt[b, :len(s) - 1] = torch.tensor(s[1:])
    logits = model(ids)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt.reshape(-1), ignore_index=-100), \
        int((tgt >= 0).sum())


@torch.no_grad()
def predict(model, head, meta, tok, labels, reviews, path, terms):
    """Decode reviews [(id, text)] as compose/ does; write a Tianchi Result.csv."""
    model.eval()
    head.eval()
    with open(path, "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        for i, text in reviews:
            recs = []
            if text:
                ids, read, ranges = tagging.prompt(tok, meta, text, terms)
                h = model.hidden(torch.tensor([ids]))[0, read:read + len(ranges)]
                recs, _, _ = tagging.decode(head, meta, h, text, ranges, labels)
            for r in recs:
                w.writerow([i, r["aspect"], r["opinion"], r["category"], r["polarity"]])
            if not recs:
                w.writerow([i, "_", "_", "_", "_"])
    model.train()
    head.train()


def extract_dev(out, reviews, path, threads):
    """The dev split through pocketdec itself (python/: base, adapter and head as `pocketdec
    extract` loads them), written as a Result.csv: the figure users get. Returns False (with the
    reason logged) when the library is not built."""
    try:
        import evaluate
        pd = evaluate.package()
        with pd.Model(os.path.join(out, "base"), adapters=[(os.path.join(out, "adapter"), 1.0)],
                      threads=threads) as model, \
                pd.Extractor(model, tasks.SCHEMA, head=os.path.join(out, "head")) as ex:
            recs = list(ex.extract_many((t for _, t in reviews), parallel=1))
    except (ImportError, OSError) as e:
        log(f"dev through pocketdec skipped ({e}); build the library (scripts/setup.sh build) to score it")
        return False
    with open(path, "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        for (i, _), rs in zip(reviews, recs):
            w.writerows([[i, r["aspect"], r["opinion"], r["category"], r["polarity"]] for r in rs]
                        or [[i, "_", "_", "_", "_"]])
    return True


def f1(gold_path, pred_path):
    """Tianchi F1 (one-to-one multiset matching within an id) of a Result.csv."""
    def read(p, header):
        out = {}
        with open(p, encoding="utf-8", newline="") as f:
            rows = list(csv.reader(f))[1 if header else 0:]
        for r in rows:
            q = (r[1], r[4], r[7], r[8]) if header else tuple(r[1:5])
            if q != ("_", "_", "_", "_"):
                out.setdefault(r[0], []).append(q)
        return out
    g, p = read(gold_path, True), read(pred_path, False)
    S = P = G = 0
    for i in set(g) | set(p):
        rest = list(g.get(i, []))
        for q in p.get(i, []):
            if q in rest:
                rest.remove(q)
                S += 1
        P += len(p.get(i, []))
        G += len(g.get(i, []))
    pr, rc = S / max(P, 1), S / max(G, 1)
    return {"S": S, "P": P, "G": G, "precision": pr, "recall": rc, "f1": 2 * pr * rc / max(pr + rc, 1e-9)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    common_args(ap)
    ap.add_argument("--template", default=tagging.TEMPLATE)
    ap.add_argument("--tokenizer", choices=("char", "bpe"), default="char",
                    help="char: BPE merges learned within characters (every character boundary is a token "
                         "boundary); bpe: merges across characters too (byte-level BPE as train_all.py's, "
                         "--vocab ids; a span edge inside a token grows to the whole token)")
    ap.add_argument("--drop", type=float, default=0.1, help="dropout on the states the head reads")
    ap.add_argument("--base-steps", type=int, default=1000)
    ap.add_argument("--lm-weight", type=float, default=1.0, help="next-token loss weight in base training")
    ap.add_argument("--continue-steps", type=int, default=600,
                    help="more base steps after --base-steps (a new warmup and cosine at half the peak rate), "
                         "with the augmented reviews when --augment is given; also continues a base loaded "
                         "from an earlier run in --out")
    ap.add_argument("--extra-steps", type=int, default=0,
                    help="after those, more base steps (a new warmup and cosine at a quarter of the peak rate) "
                         "with a second augmented copy of the labelled reviews (with --augment); also on a "
                         "base loaded from an earlier run in --out")
    ap.add_argument("--finetune-steps", type=int, default=300)
    ap.add_argument("--lora-r", type=int, default=16)
    ap.add_argument("--lora-alpha", type=float, default=32)
    ap.add_argument("--lora-lr", type=float, default=3e-4)
    ap.add_argument("--link-dim", type=int, default=64)
    ap.add_argument("--soup", type=int, default=1,
                    help="train the adapter stage this many times (other random draws for batches, LoRA init "
                         "and dropout) and ship their uniform soup: the adapters side by side at 1/N each "
                         "(rank N x r, the same sum of deltas) and the mean of the heads")
    ap.add_argument("--soup-teachers", type=int, default=0,
                    help="1: soup stage k > 0 learns from a teacher of its own (--seed + k) and the self-training "
                         "set that teacher gives, instead of the run's (+ about 3 min a stage)")
    ap.add_argument("--no-record", type=int, default=1,
                    help="the adapter stage's label classifier gets a no-record class (head.json no_record), "
                         "trained on the aspects of the labelled reviews that no quadruple holds without an "
                         "opinion, so an aspect no opinion links to is written only when it stands alone; 2 = "
                         "also on the (aspect or _, opinion) pairs of gold spans that no quadruple holds; 0 = off")
    ap.add_argument("--label-states", default="first,last",
                    help="the span token states the adapter stage's label classifier reads (head.json "
                         "label_states; the base stage's head reads the last); first,last or last")
    ap.add_argument("--finetune-lm-weight", type=float, default=0.0,
                    help="next-token loss weight in the adapter stage (keeps the trunk's language)")
    ap.add_argument("--teacher-epochs", type=int, default=6,
                    help="distillation: a perceptron tagger trained on the gold spans tags the unlabelled "
                         "reviews (the test reviews; never dev) for the trunk's tagging loss; 0 = off")
    ap.add_argument("--pseudo-batch", type=int, default=8, help="teacher-tagged reviews per step")
    ap.add_argument("--self-train", type=int, default=1,
                    help="1: before the adapter stage the base and its head decode the teacher-tagged reviews; "
                         "where their spans are the teacher's, their links and labels train too; 0 = off")
    ap.add_argument("--folds", type=int, default=5,
                    help="with a gazetteer in the template: each labelled review's marks come from the terms "
                         "of the other folds of the training reviews (jackknife), so the trunk learns that a "
                         "mark can be wrong or missing; the shipped gazetteer has every training term")
    ap.add_argument("--dev-through-pocketdec", type=int, default=1,
                    help="1: score dev through the built library too (python/, what users get); 0 = the "
                         "Python decode alone")
    ap.add_argument("--augment", type=int, default=1,
                    help="augmented copies of the training reviews (terms swapped for others with the same "
                         "label) added to the labelled pool; 0 = off")
    a = ap.parse_args(argv)
    rng, record, t_start = start(a)
    meta = tagging.load_template(a.template)
    texts, train = D.all_text(a.data), labelled_spans(a.data, "train")
    dev = [(i, t) for i, t, _ in D.labelled(a.data, "dev")]
    if a.limit:
        texts, train, dev = texts[:a.limit], train[:a.limit], dev[:a.limit]
    labels = [(c, p) for c in D.CATEGORIES for p in D.POLARITIES]

    marks = [m for pair in meta.get("gazetteer", {}).get("marks", {}).values() for m in pair]
    tok = bpe.train(texts, a.vocab, specials=bpe.SPECIALS + [m for m in marks if m not in bpe.SPECIALS],
                    within_chars=a.tokenizer == "char")
    tok.save(os.path.join(a.out, "tokenizer.json"))
    cfg = qwen3.make_config(len(tok), a.hidden, a.layers, a.heads, a.kv_heads, a.head_dim, a.ffn,
                            bos=tok.token_id("<|endoftext|>"), eos=tok.token_id("<|im_end|>"))
    head_tags = tagging.tag_names(meta["spans"])
    terms = fold_terms = None
    if "gazetteer" in meta:
        terms = gazetteer(train)
        fold_terms = [gazetteer([r for r in train if r[0] % a.folds != k]) for k in range(a.folds)]
        record["gazetteer"] = {"terms": len(terms), "folds": a.folds}
    own = (lambda i: fold_terms[i % a.folds]) if terms else (lambda i: None)  # noqa: E731
    exs = [Example(tok, meta, head_tags, labels, t, q, terms=own(i)) for i, t, q in train]
    augmented = []
    if a.augment:
        augmented = [Example(tok, meta, head_tags, labels, t, q, terms=own(i))
                     for i, t, q in augment(train, random.Random(a.seed + 5), a.augment)]
    pseudo, taught = [], []
    if a.teacher_epochs:
        t0 = time.time()
        seen = {t for _, t, _ in train}
        unlabelled = [t for _, t in D.read_reviews(os.path.join(a.data, "test_reviews.csv")) if t not in seen]
        if a.limit:
            unlabelled = unlabelled[:a.limit]
        taught = teach(train, unlabelled, a.teacher_epochs, a.seed)
        pseudo = [Example(tok, meta, head_tags, labels, t, spans=sp, terms=terms) for t, sp in taught]
        record["teacher"] = {"reviews": len(pseudo), "seconds": round(time.time() - t0, 1)}
    log(f"{len(texts)} texts, {len(exs)} labelled reviews, {len(pseudo)} teacher-tagged, vocab {len(tok)}")

    def task_batch(r):
        return r.sample(exs, a.batch) + (r.sample(pseudo, min(a.pseudo_batch, len(pseudo))) if pseudo else [])

    base_dir = os.path.join(a.out, "base")
    text_terms = {t: own(i) for i, t, _ in train}
    echo = [tagging.prompt(tok, meta, t, text_terms.get(t, terms))[0] for t in texts]

    def mixed_batch(model, head, lm_weight, r=rng):
        """A step's loss: the task's, plus lm_weight x the next-token loss on the echo prompts."""
        def batch(step):
            l1, n1 = lm_loss(model, echo, r, a.batch) if lm_weight else (0.0, 0)
            l2, n2 = task_loss(model, head, task_batch(r), a.drop, a.no_record)
            return lm_weight * l1 + l2, n1 + n2
        return batch

    def base_stage(model, head0, steps, lr, name):
        fit(list(model.parameters()) + list(head0.parameters()), steps, lr, mixed_batch(model, head0, a.lm_weight),
            name, record)

    def save_base(model, head0):
        qwen3.save_hf(model, base_dir, tok.to_json())
        tagging.save(head0, meta, labels, os.path.join(a.out, "head0"), terms)
        with open(os.path.join(a.out, "base_log.json"), "w") as f:
            json.dump({k: record[k] for k in ("parameters", "base", "base_continued", "base_extra")
                       if k in record}, f)

    if os.path.exists(os.path.join(base_dir, "model.safetensors")):
        model = qwen3.load_hf(base_dir)
        head0 = tagging.load(os.path.join(a.out, "head0"), a.hidden)[0].train()
        record.update(json.load(open(os.path.join(a.out, "base_log.json"))))
        log("base: loaded from an earlier run")
    else:
        model = qwen3.Qwen3(cfg)
        model.init_weights(torch.Generator().manual_seed(a.seed))
        record["parameters"] = sum(p.numel() for p in model.parameters())
        log(f"base: {record['parameters']} parameters")
        head0 = tagging.TaggerHead(a.hidden, meta["spans"], a.link_dim, len(labels),
                                   torch.Generator().manual_seed(a.seed + 2))
        base_stage(model, head0, a.base_steps, a.lr, "base")
        save_base(model, head0)
    exs += augmented
    if a.continue_steps and "base_continued" not in record:
        base_stage(model, head0, a.continue_steps, a.lr / 2, "base_continued")
        save_base(model, head0)
    if a.extra_steps and a.augment:
        exs += [Example(tok, meta, head_tags, labels, t, q, terms=own(i))
                for i, t, q in augment(train, random.Random(a.seed + 6), a.augment)]
    if a.extra_steps and "base_extra" not in record:
        base_stage(model, head0, a.extra_steps, a.lr / 4, "base_extra")
        save_base(model, head0)
    if a.self_train and taught:
        t0 = time.time()
        pseudo = self_train(model, tagging.load(os.path.join(a.out, "head0"), a.hidden)[0], meta, tok, labels,
                            head_tags, taught, terms, a.no_record)
        record["self_train"] = {"agreed": sum(1 for x in pseudo if x.labels), "reviews": len(pseudo),
                                "seconds": round(time.time() - t0, 1)}
        log(f"self-training: the trunk agrees with the teacher on {record['self_train']['agreed']} of "
            f"{len(pseudo)} unlabelled reviews")

    def adapter_stage(k):
        """Adapter k of the soup on a fresh copy of the base (k = 0: the run's own random draws), saved
        under stage<k>/ so that an interrupted or longer soup run loads the stages it already has."""
        saved = os.path.join(a.out, f"stage{k}")
        if os.path.exists(os.path.join(saved, "stage_log.json")):
            m = lora.load_peft(model if k == 0 else qwen3.load_hf(base_dir), os.path.join(saved, "adapter"))
            record.update(json.load(open(os.path.join(saved, "stage_log.json"))))
            log(f"adapter stage {k}: loaded from an earlier run")
            return m, tagging.load(os.path.join(saved, "head"), a.hidden)[0]
        nonlocal pseudo
        m, r = model, rng
        if k:
            m, r = qwen3.load_hf(base_dir), random.Random(a.seed + 1000 * k)
            torch.manual_seed(a.seed + 1000 * k)
        if k and a.soup_teachers and taught:  # this stage's own teacher, and what the trunk agrees with
            t0 = time.time()
            own = teach(train, unlabelled, a.teacher_epochs, a.seed + k)
            pseudo = (self_train(m, tagging.load(os.path.join(a.out, "head0"), a.hidden)[0], meta, tok, labels,
                                 head_tags, own, terms, a.no_record) if a.self_train else
                      [Example(tok, meta, head_tags, labels, t, spans=sp, terms=terms) for t, sp in own])
            record[f"teacher{k}"] = {"agreed": sum(1 for x in pseudo if x.labels), "seconds": round(time.time() - t0, 1)}
            log(f"adapter stage {k}: its own teacher (seed {a.seed + k}); the trunk agrees on "
                f"{record[f'teacher{k}']['agreed']} of {len(pseudo)} reviews")
        head = tagging.load(os.path.join(a.out, "head0"), a.hidden)[0].with_label_states(a.label_states.split(","),
                                                                                     a.no_record)
        head.train()
        params = lora.add_lora(m, a.lora_r, a.lora_alpha, torch.Generator().manual_seed(a.seed + 1 + 1000 * k))
        params += list(head.parameters())
        fit(params, a.finetune_steps, a.lora_lr, mixed_batch(m, head, a.finetune_lm_weight, r),
            "finetune" + (str(k) if k else ""), record)
        lora.save_peft(m, os.path.join(saved, "adapter"), "base")
        tagging.save(head, meta, labels, os.path.join(saved, "head"), terms)
        with open(os.path.join(saved, "stage_log.json"), "w") as f:
            json.dump({n: record[n] for n in ("finetune" + (str(k) if k else ""), f"teacher{k}") if n in record}, f)
        return m, head

    stages = [adapter_stage(k) for k in range(a.soup)]
    if a.soup == 1:
        (model, head), = stages
        lora.save_peft(model, os.path.join(a.out, "adapter"), "base")
    else:  # the uniform soup: the mean of the adapters' deltas and of the heads
        lora.save_soup([m for m, _ in stages], os.path.join(a.out, "adapter"), "base")
        head = tagging.average([h for _, h in stages])
        model = lora.load_peft(qwen3.load_hf(base_dir), os.path.join(a.out, "adapter"))
        log(f"soup of {a.soup} adapter stages: adapter rank {a.soup * a.lora_r}")
    head.eval()
    tagging.save(head, meta, labels, os.path.join(a.out, "head"), terms)
    gold = os.path.join(a.data, "dev_labels.csv")
    t0 = time.time()
    predict(model, head, meta, tok, labels, dev, os.path.join(a.out, "dev_python_Result.csv"), terms)
    record["dev_python"] = f1(gold, os.path.join(a.out, "dev_python_Result.csv"))
    record["dev_python"]["seconds"] = round(time.time() - t0, 1)
    log(f"dev (the Python decode, the reference of the agreement tests): {record['dev_python']}")
    finish(a, model, tok, record, t_start)
    t0 = time.time()
    if a.dev_through_pocketdec and extract_dev(a.out, dev, os.path.join(a.out, "dev_Result.csv"), a.threads):
        record["dev"] = f1(gold, os.path.join(a.out, "dev_Result.csv"))
        record["dev"]["seconds"] = round(time.time() - t0, 1)
        log(f"dev (pocketdec extract, what users get): {record['dev']}")
        with open(os.path.join(a.out, "train_log.json"), "w", encoding="utf-8") as f:
            json.dump(record, f, ensure_ascii=False, indent=2)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Train pocketdec's extraction-by-decisions default: a character tokenizer, a Qwen3 base, a LoRA
adapter and a wide-and-deep tagger head (BIO tags with CRF transitions, opinion -> aspect links, 39
labels; each decision the trunk's states and the learned weights of hashed sparse features).

  train_tagger.py --out DIR [--seed 0] [--threads 2] [size, step and feature options]
  train_tagger.py --out DIR --base HFDIR ...       # the label stage alone, on an existing base
                                                   # (a pretrained Qwen3 too: its tokenizer, and the
                                                   # read copy one character at a time, --read-copy)
  train_tagger.py --data MY.jsonl --schema MY.yaml --out DIR ...   # other reviews, fields and labels

The data (--data, --schema, --strict, --dev, --dev-fraction, --dev-seed) is read by dataset.py: the
Tianchi CSV pair of data/tianchi by default, or JSONL; the head's span fields, label fields and joint
labels come from the schema (two span fields and one or more enum fields; train/README.md, "Training on
your own reviews").

Stages (each saved; a finished stage is loaded on a rerun with the same --out: resumable):
  1. tokenizer: byte-level BPE whose merges never cross a character (bpe.train within_chars) on the
     review text outside the dev split (training and test reviews; no labels);
  2. base: a Qwen3 pre-trained from scratch on the head's echo prompt of that text (next-token loss:
     language on the first copy, copying on the second). No label is read, so one base serves every
     fold of kfold.py;
  3. label stage: a LoRA adapter on q/k/v/o/gate/up/down and the tagger head, trained together on the
     labelled training reviews: the head's dense part (tags, links, labels from the trunk's states) and
     its wide part (features.py: tables of hashed character n-gram, lexicon, pair and memory features,
     head.json "features"). The lexicon and the memory (each (aspect, opinion) pair's majority label)
     are jackknifed: a review's features in training come from the other folds' terms (review id mod
     --jackknife), so a memorised feature is as often missing or wrong as on a new review. The head's
     weights are averaged over every step (as an averaged perceptron's are); the polarity prior's log,
     times --polarity-prior, is taken from the label biases (logit adjustment for the rare polarities).
Writes DIR/base/ (HF), DIR/adapter/ (PEFT), DIR/head/ (heads/ tagger format with lexicon.tsv and
memory.tsv), DIR/merged/, DIR/dev_Result.csv (the dev split through pocketdec itself, python/: what
users get; skipped with a message when the library is not built), DIR/dev_python_Result.csv (the Python
decode of compose/'s rules, the agreement tests' reference) and DIR/train_log.json.
The dev split is never read for training.
"""

import argparse
import collections
import copy
import csv
import json
import math
import os
import random
import time
import zlib

import torch
import torch.nn.functional as F

import augment
import bpe
import data as D
import dataset as DS
import features as FT
import lora
import qwen3
import sentiment
import tagging
import tasks
from tagger_base import base_args, base_stage
from train_all import common_args, finish, log, start


def labelled_spans(data=D.DATA, split="train"):
    """[(id, text, quads)] of a Tianchi directory (dataset.py's reader, strict, the default schema)
    in a split of its dev_ids.txt ("train", "dev", "all"), quads = (a, a_start, a_end, o, o_start,
    o_end, category, polarity), character offsets (None for `_`)."""
    reviews = DS.read(data, DS.Schema(DS.SCHEMA), DS.Report(strict=True))
    dev = D.dev_ids(data) if split != "all" else set()
    keep = {"train": lambda i: i not in dev, "dev": lambda i: i in dev, "all": lambda i: True}[split]
    return [(r.id, r.text, r.records) for r in reviews if keep(r.id)]


def schema_template(meta, schema):
    """The head template (tagger_template.json) for a schema's fields: its two span fields, in schema
    order, take the places of the template's (aspect, opinion: the link from the second to the first,
    the feature templates' field names), its enum fields are the label fields. On the Tianchi schema
    the template comes back unchanged. A schema needs exactly two span fields and one enum field or
    more (the head's links join two span fields; the labels are the enum fields' joint values)."""
    if len(schema.spans) != 2 or not schema.enums:
        raise DS.DataError(f"{schema.path}: the tagger head trains on two span fields and at least one enum field; "
                           f"this schema has {len(schema.spans)} span and {len(schema.enums)} enum fields")
    old = list(meta["spans"])
    names = dict(zip(old, schema.spans))
    if set(names.values()) & (set(old) - set(names)):
        raise DS.DataError(f"{schema.path}: span fields {schema.spans} clash with the template's names {old}")
    out = copy.deepcopy(meta)
    out["spans"] = list(schema.spans)
    out["link"] = {k: names.get(v, v) for k, v in meta["link"].items()}
    out["label_fields"] = list(schema.enums)
    if "features" in out:
        def rename(tpl):
            atoms = []
            for atom in tpl.split(" "):
                for o, n in names.items():
                    for pre in ("lex.", "text.", "chars.", "bigrams.", "polsum.", "polmin.", "polmax."):
                        if atom == pre + o or atom.startswith(pre + o + "["):
                            atom = pre + n + atom[len(pre + o):]
                atoms.append(atom)
            return " ".join(atoms)
        for d in FT.DECISIONS:
            if d in out["features"]:
                out["features"][d]["templates"] = [rename(t) for t in out["features"][d]["templates"]]
    return out


def char_tags(text, spans):
    """Per-character BIO tag names of [(field, start, end)] character spans."""
    out = ["O"] * len(text)
    for f, s, e in spans:
        out[s] = "B-" + f
        for c in range(s + 1, e):
            out[c] = "I-" + f
    return out


class Example:
    """One labelled review as tensors for the task loss: BIO tags of its tokens, each opinion's link
    (its last token, the aspects' last tokens, the gold choice or none), each quadruple's label row and
    the no-record rows (aspects that no quadruple holds alone); with spec (features.Spec holding the
    lexicon and memory this review may see), the feature ids of each token, link candidate and label
    row."""

    def __init__(self, tok, meta, head_tags, labels, text, quads, spec=None, identity_drop=False):
        self.text = text
        names = meta["spans"]
        nspan, src, dst = len(names), meta["link"]["from"], meta["link"]["to"]
        ksrc, kdst = names.index(src), names.index(dst)
        self.polarities = {q[-1] for q in quads}  # the values of the last label field (the prior's)
        self.ids, self.read, ranges = tagging.prompt(tok, meta, text)
        self.n = len(ranges)
        self.mid = tagging.midchar(text, ranges)
        spans = sorted({(f, q[3 * k + 1], q[3 * k + 2]) for q in quads for k, f in enumerate(names)
                        if q[3 * k + 1] is not None})
        starts = tagging.char_starts(text)
        # each span's first and last token: those holding its first and last byte
        where = {(f, s): (max(k for k, (b, _) in enumerate(ranges) if b <= starts[s]),
                          min(k for k, (_, x) in enumerate(ranges) if x >= starts[e])) for f, s, e in spans}
        chars = {where[(f, s)]: (s, e) for f, s, e in spans}
        tags = tagging.token_tags(text, ranges, char_tags(text, spans))
        for (f, _), (first, last) in sorted(where.items(), key=lambda w: w[1]):
            tags[first:last + 1] = ["B-" + f] + ["I-" + f] * (last - first)
        self.tags = [head_tags.index(t) for t in tags]
        # the link's target field is the aspect, its source the opinion (the Tianchi names)
        aspects = sorted(v for (f, _), v in where.items() if f == dst)
        self.links, self.rows, link_spans = [], [], []
        for q in quads:
            at = [where[(f, q[3 * k + 1])] if q[3 * k + 1] is not None else None for k, f in enumerate(names)]
            a, o = at[kdst], at[ksrc]
            if o is not None:
                self.links.append((o[1], [x[1] for x in aspects], aspects.index(a) if a else len(aspects)))
                link_spans.append(o)
            self.rows.append((*at, labels.index(tuple(q[3 * nspan:]))))
        # the no-record class: the aspects no quadruple holds without an opinion (what decode would
        # write as (aspect, _) when no opinion links to them)
        alone = {where[(dst, q[3 * kdst + 1])] for q in quads
                 if q[3 * kdst + 1] is not None and q[3 * ksrc + 1] is None}
        self.rows += [tuple(a if k == kdst else None for k in range(nspan)) + (len(labels),)
                      for a in aspects if a not in alone]
        self.weight = 1.0  # a --silver review's: --silver-weight
        self.partial = False  # a --silver review's tags: O means unknown (its spans alone are known)
        self.tag_ids = self.link_ids = self.label_ids = self.label_ids_unseen = None
        if spec is not None:
            self.tag_ids = spec.tag_ids(text, tagging.token_chars(text, ranges))
            to = [chars[a] for a in aspects]
            self.link_ids = [[spec.link_ids(text, chars[o], c, to) for c in to + [None]] for o in link_spans]
            self.label_ids = [spec.label_ids(text, [chars[x] if x else None for x in r[:-1]]) for r in self.rows]
            if identity_drop:  # each record as if its strings were never seen (--identity-drop)
                skip = spec.identity_templates()
                self.label_ids_unseen = [spec.label_ids(text, [chars[x] if x else None for x in r[:-1]], skip)
                                         for r in self.rows]


def lexicon_and_memory(train, spans=("aspect", "opinion")):
    """The lexicon ({span field: terms}) and memory ({(aspect, opinion): majority (category, polarity)},
    ties to the label seen first) of labelled reviews; records are dataset.py's flat tuples of the
    span fields `spans` then the label values."""
    n = len(spans)
    terms = {f: set() for f in spans}
    pairs = collections.defaultdict(collections.Counter)
    for _, _, quads in train:
        for q in quads:
            for k, f in enumerate(spans):
                if q[3 * k + 1] is not None:
                    terms[f].add(q[3 * k])
            pairs[tuple(q[3 * k] for k in range(n))][tuple(q[3 * n:])] += 1
    return terms, {k: c.most_common(1)[0][0] for k, c in pairs.items()}


def make_spec(meta, train, polarity=None):
    """The features.Spec of the head shipped after training on `train` (None without features);
    polarity: the polarity table (features.read_polarity) when meta's features name one."""
    if "features" not in meta:
        return None
    spec = FT.Spec(meta["features"], meta["spans"], *lexicon_and_memory(train, meta["spans"]), polarity)
    spec.set_link(meta["link"]["from"], meta["link"]["to"])
    return spec


def fold_of(i, folds):
    """The jackknife fold of a review id: id mod folds (a string id: its CRC-32 mod folds; a copy's id
    (review id, copy): its review's)."""
    if isinstance(i, tuple):
        return fold_of(i[0], folds)
    return i % folds if isinstance(i, int) else zlib.crc32(str(i).encode("utf-8")) % folds


def examples(tok, meta, labels, train, spec, folds, identity_drop=False, weights=None):
    """Examples of the labelled reviews, each with the lexicon and memory of the other jackknife folds
    (review id mod folds): the shipped spec's templates and hashing, other data; weights: {id: (what the
    review counts, whether its tags are partial)} of the reviews that are not labelled ones."""
    head_tags = tagging.tag_names(meta["spans"])
    out = []
    for k in range(folds):
        sub = None
        if spec is not None:
            sub = copy.copy(spec)
            sub.lexicon, sub.memory = lexicon_and_memory([r for r in train if fold_of(r[0], folds) != k],
                                                         meta["spans"])
        for i, t, q in train:
            if fold_of(i, folds) == k:
                out.append(Example(tok, meta, head_tags, labels, t, q, sub, identity_drop))
                if weights and i in weights:
                    out[-1].weight, out[-1].partial = weights[i]
    return out


def task_loss(head, batch, states, drop):
    """CRF + link + label losses of a batch of Examples (the mean of the three terms); states: the
    read copy's hidden states of each example."""
    B, N = len(batch), max(x.n for x in batch)
    hr = F.dropout(torch.stack([F.pad(s, (0, 0, 0, N - s.shape[0])) for s in states]), drop, head.training)
    gold = torch.zeros(B, N, dtype=torch.long)
    mid = torch.zeros(B, N, dtype=torch.bool)
    for b, x in enumerate(batch):
        gold[b, :x.n] = torch.tensor(x.tags)
        mid[b, :x.n] = torch.tensor(x.mid)
    tag_ids = None
    if batch[0].tag_ids is not None:
        tag_ids = [ids for x in batch for ids in x.tag_ids + [[]] * (N - x.n)]
    weighted = any(x.weight != 1.0 for x in batch)  # --silver reviews count less than gold ones
    partial = None
    if any(x.partial for x in batch):  # a silver review's tags: its spans known, elsewhere any tag
        partial = torch.zeros(B, N, len(head.tags), dtype=torch.bool)
        for b, x in enumerate(batch):
            if x.partial:
                for i, t in enumerate(x.tags):
                    if t:
                        partial[b, i, t] = True
                    else:  # any tag, but no I- just after a span (its end is known)
                        partial[b, i] = True
                        if i and x.tags[i - 1]:
                            partial[b, i, [j for j, n in enumerate(head.tags) if n.startswith("I-")]] = False
    crf = head.crf_nll(head.emissions(hr, tag_ids), gold, mid, torch.tensor([x.n for x in batch]),
                       torch.tensor([x.weight for x in batch]) if weighted else None, partial)
    link, n_link, lab, n_lab = 0.0, 0, 0.0, 0
    for b, x in enumerate(batch):
        for k, (o, cands, g) in enumerate(x.links):
            ids = [x.link_ids[k]] if x.link_ids is not None else None
            s = head.link_scores(hr[b, o][None], hr[b, cands] if cands else hr[b, :0], ids)
            ce = F.cross_entropy(s, torch.tensor([g]))
            link = link + (ce * x.weight if weighted else ce)
            n_link += 1
        if x.rows:
            parts = head.label_parts(hr[b], [r[:2] for r in x.rows])
            ids = x.label_ids
            if head.training and x.label_ids_unseen is not None:  # --identity-drop
                unseen = (torch.rand(len(x.rows)) < head.identity_drop).tolist()
                ids = [u if d else i for i, u, d in zip(x.label_ids, x.label_ids_unseen, unseen)]
            z = head.label_logits(parts, ids)
            ce = F.cross_entropy(z, torch.tensor([r[2] for r in x.rows]), reduction="sum")
            lab = lab + (ce * x.weight if weighted else ce)
            n_lab += len(x.rows)
    return crf + link / max(1, n_link) + lab / max(1, n_lab)


def polarity_prior(head, labels, train, tau):
    """Logit adjustment: each label's bias less tau x log of its polarity's share of the training
    quadruples, so that a rare polarity needs less evidence (the no-record class is left alone). The
    polarity is the last label field (any schema's: its last enum field)."""
    count = collections.Counter(q[-1] for _, _, quads in train for q in quads)
    total = max(sum(count.values()), 1)
    with torch.no_grad():
        for j, lab in enumerate(labels):
            polarity = lab[-1]
            head.label.bias[j] -= tau * math.log(max(count[polarity], 1) / total)


def table_prior(head, spec, labels, strength):
    """The polarity table as a prior on the label weights: the row of each single-atom polarity feature
    (polsum/polmin/polmax of a field, clausesum/min/max) starts at strength x the bucket's value on the
    labels of the last label field's first value (正面) and minus that on its last (负面), instead of
    zero; training moves it from there."""
    values = list(dict.fromkeys(lab[-1] for lab in labels))
    sign = torch.tensor([1.0 if lab[-1] == values[0] else -1.0 if lab[-1] == values[-1] else 0.0 for lab in labels])
    buckets = [FT.polarity_bucket(s * t) for s in (1, -1) for t in FT.POLARITY_THRESHOLDS]  # "0" adds nothing
    stats = tuple(pre for pre, _ in FT.SPAN_STATS + FT.CLAUSE_STATS)
    table = head.sparse["label"].weight
    with torch.no_grad():
        for tpl, atoms in spec.templates.get("label", ()):
            if len(atoms) != 1 or not atoms[0][0].startswith(stats):
                continue
            for b in buckets:
                table[spec.id("label", tpl + FT.SEP + b), :len(labels)] += strength * float(b) * sign


def label_factors(labels):
    """Per label field, the one-hot map [labels + the no-record class, the field's values] of each
    label to its value (the no-record row zero): the factors TaggerHead adds while training."""
    maps = []
    for j in range(len(labels[0])):
        values = list(dict.fromkeys(x[j] for x in labels))
        m = torch.zeros(len(labels) + 1, len(values))
        for r, x in enumerate(labels):
            m[r, values.index(x[j])] = 1.0
        maps.append(m)
    return maps


def window_chars(texts):
    """head.json's max_chars: the longest text the head reads whole, the 99th percentile of the
    training reviews' lengths (longer reviews are read in windows of at most that many characters, the
    lengths it learned on; docs/extraction.md "Long reviews"), at least 16."""
    lengths = sorted(len(t) for t in texts) or [16]
    return max(16, lengths[min(len(lengths) - 1, int(0.99 * len(lengths)))])


def label_stage(a, base_dir, meta, labels, train, record, name="label", polarity=None, silver=()):
    """The adapter and head trained on the labelled reviews `train` over the base in base_dir:
    (model with its LoRA layers, head). Deterministic for a.seed. polarity: the run's polarity table
    (sentiment.prepare); silver: outside reviews [(id, text, records)] trained on too, each counting
    a.silver_weight of a labelled one (their terms join the lexicon and the memory)."""
    t0 = time.time()
    torch.manual_seed(a.seed)
    rng = random.Random(a.seed + 1)
    if a.min_confidence is not None:
        meta["min_confidence"] = a.min_confidence
    meta["max_chars"] = a.max_chars or window_chars([t for _, t, _ in train])
    tok = bpe.load(os.path.join(base_dir, "tokenizer.json"))
    meta["prompt"] = tagging.read_copy(meta, tok, a.read_copy)["prompt"]
    model = qwen3.load_hf(base_dir)
    if getattr(a, "trunk_adapter", None):  # teach.py: a trained adapter kept as part of the trunk
        model = lora.load_peft(model, a.trunk_adapter)
    copies = augment.prepare(a, meta, train, random.Random(a.seed + 5), log)
    spec = make_spec(meta, list(train) + list(silver) + copies, polarity) if a.features else None
    weights = {i: (a.silver_weight, True) for i, _, _ in silver}
    weights.update({i: (a.augment_weight, False) for i, _, _ in copies})
    exs = examples(tok, meta, labels, list(train) + list(silver) + copies, spec, a.jackknife, a.identity_drop > 0,
                   weights)
    hidden = model.config["hidden_size"]
    head = tagging.TaggerHead(hidden, meta["spans"], a.link_dim, len(labels), torch.Generator().manual_seed(a.seed + 2),
                              ("first", "last"), True, spec, label_factors(labels) if a.label_factors else ())
    head.feature_drop, head.identity_drop = a.feature_drop, a.identity_drop
    if spec is not None and spec.polarity is not None and a.table_prior:
        table_prior(head, spec, labels, a.table_prior)
    lora_params = []
    if getattr(a, "continue_adapter", False):
        lora_params = lora.trainable(model)  # teach.py --adapter warm: the kept adapter trained on
    elif a.lora_r and a.deep:
        lora_params = lora.add_lora(model, a.lora_r, a.lora_alpha, torch.Generator().manual_seed(a.seed + 3))
    else:  # the trunk stays as it is: its states are computed once
        for p in model.parameters():
            p.requires_grad_(False)
    model.train()
    if not a.deep:  # the wide part alone: the head's dense weights stay zero (an ablation)
        for n, p in head.named_parameters():
            if n not in ("tag.weight", "link_q.weight", "link_k.weight", "label.weight") and \
                    not (n.startswith("factor_dense.") and n.endswith("weight")):
                continue
            with torch.no_grad():
                p.zero_()
            p.requires_grad_(False)
    is_table = lambda n: n.startswith(("sparse.", "factor_sparse."))  # noqa: E731
    dense = [p for n, p in head.named_parameters() if not is_table(n) and p.requires_grad]
    sparse = [p for n, p in head.named_parameters() if is_table(n)]
    opt = torch.optim.AdamW([{"params": dense, "lr": a.head_lr}, {"params": lora_params, "lr": a.lora_lr}],
                            weight_decay=0.01)
    opt_sparse = torch.optim.Adagrad(sparse, lr=a.sparse_lr) if sparse else None
    frozen = {}
    if not lora_params:
        log(f"{name}: the trunk's states of {len(exs)} reviews (computed once)")
        with torch.no_grad():
            model.eval()
            for x in exs:
                frozen[id(x)] = model.hidden(torch.tensor([x.ids]))[0, x.read:x.read + x.n]
    params = list(head.parameters())
    avg = [p.detach().clone() for p in params]
    if a.minority_copies < 1:
        raise SystemExit(f"--minority-copies must be at least 1, not {a.minority_copies}")
    # the reviews holding a rarer polarity than the most frequent one, a.minority_copies times an epoch
    common = collections.Counter(q[-1] for _, _, quads in train for q in quads).most_common(1)
    major = common[0][0] if common else None
    pool = exs + [x for x in exs if x.polarities - {major}] * (a.minority_copies - 1)
    steps, step, tokens, recent = a.epochs * math.ceil(len(pool) / a.batch), 0, 0, []
    log(f"{name}: {len(exs)} labelled reviews ({len(silver)} of them silver, {len(copies)} copies, {len(pool)} an epoch), {steps} steps, "
        f"LoRA r {lora_params[0].shape[0] if lora_params else 0}"
        f"{' (the kept adapter, trained on)' if lora_params and not a.lora_r else ''}, "
        f"features {'on' if spec else 'off'}")
    for epoch in range(a.epochs):
        t_epoch, step_epoch = time.time(), step
        order = list(pool)
        rng.shuffle(order)
        for b in range(0, len(order), a.batch):
            batch = order[b:b + a.batch]
            if lora_params:
                L = max(len(x.ids) for x in batch)
                ids = torch.zeros(len(batch), L, dtype=torch.long)
                for k, x in enumerate(batch):
                    ids[k, :len(x.ids)] = torch.tensor(x.ids)
                h = model.hidden(ids)
                states = [h[k, x.read:x.read + x.n] for k, x in enumerate(batch)]
                decay = 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * step / steps))  # cosine to 10%
                opt.param_groups[1]["lr"] = a.lora_lr * decay
            else:
                states = [frozen[id(x)] for x in batch]
            loss = task_loss(head, batch, states, a.drop)
            opt.zero_grad()
            if opt_sparse:
                opt_sparse.zero_grad()
            loss.backward()
            if lora_params:
                torch.nn.utils.clip_grad_norm_(lora_params, 1.0)
            opt.step()
            if opt_sparse:
                opt_sparse.step()
            step += 1
            with torch.no_grad():  # the running mean of the head's weights over the steps averaged
                k = step - int(a.average_from * steps)
                for m, p in zip(avg, params):
                    if k >= 1:
                        m += (p - m) / k
            tokens += sum(len(x.ids) for x in batch)
            recent.append(loss.item())
        left = (time.time() - t_epoch) * (a.epochs - epoch - 1)
        log(f"{name} epoch {epoch + 1}/{a.epochs} loss {sum(recent) / len(recent):.4f} "
            f"{tokens / (time.time() - t0):.0f} tok/s, {(time.time() - t_epoch) / (step - step_epoch):.2f} s a step, "
            f"about {left:.0f} s left")
        recent = []
    with torch.no_grad():
        for m, p in zip(avg, params):
            p.copy_(m)
    head.fold_factors()
    polarity_prior(head, labels, train, a.polarity_prior)
    model.eval()
    head.eval()
    record[name] = {"reviews": len(exs), "steps": steps, "seconds": round(time.time() - t0, 1),
                    "final_loss": loss.item()}
    return model, head


def save_stage(model, head, meta, labels, out, base_rel="base"):
    """out/adapter (PEFT; an adapter of zeros when the trunk was not trained) and out/head."""
    if not lora.wrapped(model):
        lora.add_lora(model, 1, 1, torch.Generator().manual_seed(0))  # B = 0: the base unchanged
    lora.save_peft(model, os.path.join(out, "adapter"), base_rel)
    tagging.save(head, meta, labels, os.path.join(out, "head"))


@torch.no_grad()
def predict(model, head, meta, tok, labels, reviews, path, fields=("aspect", "opinion", "category", "polarity")):
    """Decode reviews [(id, text)] as compose/ does; write a Result.csv (id, then the schema's fields:
    Tianchi's for its schema; a review without records gets one row of `_`)."""
    with open(path, "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        for i, text in reviews:
            recs = []
            if text:
                ids, read, ranges = tagging.prompt(tok, meta, text)
                h = model.hidden(torch.tensor([ids]))[0, read:read + len(ranges)]
                recs, _, _ = tagging.decode(head, meta, h, text, ranges, labels)
            for r in recs:
                w.writerow([i] + [r.get(x, "_") for x in fields])
            if not recs:
                w.writerow([i] + ["_"] * len(fields))


def extract_dev(base_dir, adapter_dir, head_dir, reviews, path, threads, schema=None):
    """The dev split through pocketdec itself (python/: base, adapter and head as `pocketdec
    extract` loads them), written as a Result.csv: the figure users get. Returns False (with the
    reason logged) when the library is not built."""
    try:
        import evaluate
        pd = evaluate.package()
        with pd.Model(base_dir, adapters=[(adapter_dir, 1.0)], threads=threads) as model, \
                pd.Extractor(model, schema.path if schema else tasks.SCHEMA, head=head_dir) as ex:
            recs = list(ex.extract_many((t for _, t in reviews), parallel=1))
    except (ImportError, OSError) as e:
        log(f"dev through pocketdec skipped ({e}); build the library (scripts/setup.sh build) to score it")
        return False
    fields = schema.fields if schema else ["aspect", "opinion", "category", "polarity"]
    with open(path, "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        for (i, _), rs in zip(reviews, recs):
            w.writerows([[i] + [r.get(x, "_") for x in fields] for r in rs] or [[i] + ["_"] * len(fields)])
    return True


def result_f1(gold, pred_path):
    """F1 (dataset.f1) of a Result.csv (id, then the schema's fields; rows of `_` alone are no records)
    against gold {str id: [field value tuples]}."""
    pred = {}
    with open(pred_path, encoding="utf-8", newline="") as f:
        for r in csv.reader(f):
            if any(x != "_" for x in r[1:]):
                pred.setdefault(r[0], []).append(tuple(r[1:]))
    return DS.f1(gold, pred)


def read_silver(path, schema):
    """[(id, text, records)] of a --silver file (dataset.py's JSONL, read with the schema's checks); []
    without one."""
    if not path:
        return []
    return [(r.id, r.text, list(r.records)) for r in DS.read_jsonl(path, schema, DS.Report()) if r.records]


def label_args(ap):
    """The options of the label stage (kfold.py takes them too)."""
    ap.add_argument("--template", default=tagging.TEMPLATE,
                    help="the head's prompt, fields, span rule and feature templates (head.json's keys)")
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--lora-r", type=int, default=16, help="0: the trunk is not trained (its states as they are)")
    ap.add_argument("--lora-alpha", type=float, default=32)
    ap.add_argument("--lora-lr", type=float, default=1e-3)
    ap.add_argument("--head-lr", type=float, default=3e-3, help="the head's dense part (AdamW)")
    ap.add_argument("--sparse-lr", type=float, default=0.05, help="the head's feature tables (Adagrad)")
    ap.add_argument("--link-dim", type=int, default=64)
    ap.add_argument("--drop", type=float, default=0.1, help="dropout on the states the head reads")
    ap.add_argument("--features", type=int, default=1, help="0: no wide part (the trunk's states alone)")
    ap.add_argument("--deep", type=int, default=1, help="0: no dense part and no adapter (the features alone)")
    ap.add_argument("--jackknife", type=int, default=5,
                    help="folds of the lexicon and memory features in training (review id mod N)")
    ap.add_argument("--feature-drop", type=float, default=0.0,
                    help="feature dropout: the share of sparse feature ids dropped at each training use")
    ap.add_argument("--silver", help="distant supervision: outside reviews with the records distant.py kept (dataset.py's "
                                     "JSONL; with kfold.py, {k} in the name is the fold's number)")
    ap.add_argument("--silver-weight", type=float, default=0.5, help="what a --silver review counts, a labelled one 1")
    augment.augment_args(ap)
    ap.add_argument("--table-prior", type=float, default=0.0,
                    help="the polarity table's label features start at this times their bucket's value on the "
                         "positive labels (minus on the negative ones) rather than zero")
    ap.add_argument("--identity-drop", type=float, default=0.0,
                    help="the share of training records whose label features that name their own strings (text., "
                         "chars., bigrams., pair, memory) are left out: labels learned as for a record never seen")
    ap.add_argument("--average-from", type=float, default=0.0,
                    help="the head's weights are averaged over the steps after this fraction of them (0: all)")
    ap.add_argument("--label-factors", type=int, default=0,
                    help="1: each label field (category, polarity) also a decision of its own while training, "
                         "folded into the joint labels before saving")
    ap.add_argument("--minority-copies", type=int, default=1,
                    help="each epoch holds N copies of the reviews with a quadruple of a polarity rarer than "
                         "the most frequent one (oversampling; 1: none)")
    ap.add_argument("--polarity-prior", type=float, default=0.5,
                    help="tau of the logit adjustment: label bias -= tau x log(share of its polarity)")
    ap.add_argument("--max-chars", type=int, default=0,
                    help="head.json's max_chars, the longest text read whole (0: the 99th percentile of the "
                         "training reviews' lengths)")
    ap.add_argument("--read-copy", choices=("auto", "text", "chars"), default="auto",
                    help="how the prompt's read copy (its last {text} or {chars}) is encoded: chars, one "
                         "character at a time (every character a token edge); text, as the tokenizer merges "
                         "it; auto (the default), chars when the base's tokenizer merges across characters")
    ap.add_argument("--min-confidence", type=float, default=None,
                    help="head.json's min_confidence, the least confidence of a written record (default: the "
                         "template's, 0.3)")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    common_args(ap, data=False)
    DS.add_args(ap)
    label_args(ap)
    sentiment.polarity_args(ap)
    ap.add_argument("--base", help="an HF base directory (tokenizer.json with it): train the label stage alone")
    base_args(ap)
    ap.set_defaults(vocab=8192)  # merges stop when every character is one token (1,868 ids on the Tianchi text)
    ap.add_argument("--dev-through-pocketdec", type=int, default=1,
                    help="1: score dev through the built library too (python/, what users get); 0 = the "
                         "Python decode alone")
    a = ap.parse_args(argv)
    try:
        data = DS.load(a)
        meta = schema_template(tagging.load_template(a.template), data.schema)
    except DS.DataError as e:
        raise SystemExit(f"train_tagger.py: {e}")
    rng, record, t_start = start(a)
    if not a.features:
        meta.pop("features", None)
    schema = data.schema
    texts, train = data.texts, data.labelled("train")
    dev_gold = data.labelled("dev")
    if a.limit:
        texts, train, dev_gold = texts[:a.limit], train[:a.limit], dev_gold[:a.limit]
    dev = [(i, t) for i, t, _ in dev_gold]
    gold = {str(i): [schema.values_of(q) for q in quads] for i, t, quads in dev_gold}
    labels = schema.labels()
    record["data"] = {"train": len(train), "dev": len(dev), "texts": len(texts), "schema": schema.name,
                      "skipped_records": data.report.skipped}
    log(f"data: {len(train)} labelled training reviews, {len(dev)} dev reviews, {len(texts)} texts for the base; "
        f"schema {schema.name}: spans {', '.join(schema.spans)}, {len(labels)} labels of {', '.join(schema.enums)}")
    outside = DS.polarity_reviews(a.polarity_data, data.report) if a.polarity_data and not a.base else []
    base_dir = a.base or base_stage(a, texts, meta, rng, record, outside)
    tok = bpe.load(os.path.join(base_dir, "tokenizer.json"))
    meta["prompt"] = tagging.read_copy(meta, tok, a.read_copy)["prompt"]
    polarity = sentiment.prepare(a, meta, a.out, log)
    stage_log = os.path.join(a.out, "label_log.json")
    if os.path.exists(stage_log):
        model = lora.load_peft(qwen3.load_hf(base_dir), os.path.join(a.out, "adapter")).eval()
        head = tagging.load(os.path.join(a.out, "head"), model.config["hidden_size"])[0]
        with open(stage_log) as f:
            record.update(json.load(f))
        log("label stage: loaded from an earlier run")
    else:
        model, head = label_stage(a, base_dir, meta, labels, train, record, polarity=polarity,
                                  silver=read_silver(a.silver, data.schema))
        save_stage(model, head, meta, labels, a.out, os.path.relpath(base_dir, a.out))
        with open(stage_log, "w") as f:
            json.dump({"label": record["label"]}, f)
    t0 = time.time()
    predict(model, head, meta, tok, labels, dev, os.path.join(a.out, "dev_python_Result.csv"), schema.fields)
    record["dev_python"] = result_f1(gold, os.path.join(a.out, "dev_python_Result.csv"))
    record["dev_python"]["seconds"] = round(time.time() - t0, 1)
    log(f"dev (the Python decode, the reference of the agreement tests): {record['dev_python']}")
    finish(a, model, tok, record, t_start)
    t0 = time.time()
    if a.dev_through_pocketdec and extract_dev(base_dir, os.path.join(a.out, "adapter"), os.path.join(a.out, "head"), dev,
                                                 os.path.join(a.out, "dev_Result.csv"), a.threads, schema):
        record["dev"] = result_f1(gold, os.path.join(a.out, "dev_Result.csv"))
        record["dev"]["seconds"] = round(time.time() - t0, 1)
        log(f"dev (pocketdec extract, what users get): {record['dev']}")
        with open(os.path.join(a.out, "train_log.json"), "w", encoding="utf-8") as f:
            json.dump(record, f, ensure_ascii=False, indent=2)


if __name__ == "__main__":
    main()

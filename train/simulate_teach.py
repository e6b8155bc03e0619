#!/usr/bin/python3
"""A simulated annotator on the folds: which order of asking for labels teaches the model fastest.

  simulate_teach.py --out DIR [--folds 0,1,2] [--orders random,confidence,entropy,complaint]
                    [--steps 100,200,400,800] [--seed-size 500] [--threads 1]
                    [--data PATH... --schema YAML]
  simulate_teach.py --out DIR --summary [--chart docs/images/teach_curve.svg]

For each fold k of kfold.py's folds of the labelled training reviews (the 2,546 outside dev): a model
is trained on --seed-size reviews of the fold's training part (the full label stage: adapter and head,
over the bundled base, which was pre-trained without labels); the rest of the training part is the
pool, whose gold labels are revealed as they are asked for. For each ordering, the annotator labels
the pool's reviews in the order the current model gives, up to each of --steps in all; at each step
the label stage is retrained on the seed and the reviews labelled so far with the trunk kept (the
initial base and adapter, as `teach.py --adapter keep` does: the head alone, on the trunk's states),
the held-out fold is decoded (tagging.decode: pocketdec's rules in Python) and scored (F1, and the F1
of the 负面 quadruples alone), and the pool left is ranked again for the next step.

With --seed-size 0 (a user who starts from nothing: no seed model, the head untrained, the base alone
the trunk) the first step's reviews are a seeded random sample for every ordering -- an untrained
head's confidences and marginals are noise, so ranking by it would be random with extra steps -- and
its model (trained once, shared) is the first that ranks; nothing is scored at 0 labels.

--data and --schema are dataset.py's (default: the Tianchi reviews and schema); the folds are
kfold.py's of whatever data is given.

Orderings (most useful first), from the current model's decode of each pool review, as `pocketdec
rank` defines them (pd_rank_order), computed here in Python from tagging.decode:
  random      a seeded shuffle;
  confidence  1 - the lowest confidence of the records written (1 for a review with none);
  entropy     the mean over its tokens of the entropy (nats) of the CRF's tag marginals;
  complaint   the largest probability any candidate record gives to the negative labels: those with a
              label value 负面, 差评, negative or neg (as pd_rank_order recognises them); the
              figure "neg_f1" is the F1 of the records of those values alone.

--summary prints mean +- SE over the folds of every step and the rule that picks the default ordering
(decide: the ordering that reaches random's F1 at the last step with the fewest labels, on every fold;
random when none does), and writes both as DIR/summary.json and DIR/decision.json.

Every step's figures (and the labelled ids, and the ranking of the pool left) are saved as
DIR/fold<k>/<order>_<n>.json as soon as they are known: a rerun continues where a run stopped. The
trunk's states are computed once a fold and kept in memory (the trunk does not change).
"""

import argparse
import json
import math
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import dataset as DS  # noqa: E402

ORDERS = ("random", "confidence", "entropy", "complaint")
NEGATIVE_VALUES = ("负面", "差评", "negative", "neg")  # compose/rank.c's negative_values


def negative(schema):
    """The schema's negative label values as {position in a record's field tuple: {values}} (any
    enum field may hold one, as pd_rank_order reads them); SystemExit when it has none."""
    out = {}
    for j, f in enumerate(schema.fields):
        vals = {v for v in schema.values.get(f, ()) if v in NEGATIVE_VALUES}
        if vals:
            out[j] = vals
    if not out:
        raise SystemExit(f"simulate_teach.py: {schema.path}: no label value {', '.join(NEGATIVE_VALUES)}: the "
                         "complaint ordering and the negative F1 need one")
    return out


def is_negative(neg, q):
    """Whether a field tuple (schema order) holds a negative value."""
    return any(q[j] in vals for j, vals in neg.items())


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def cache_states():
    """Memoise the trunk's states of a prompt (no gradient, one review): the trunk is the same for
    every step of a fold. Returns the cache (clear it when the trunk changes)."""
    import torch
    import qwen3
    if hasattr(qwen3.Qwen3.hidden, "cache"):  # installed already
        return qwen3.Qwen3.hidden.cache
    cache, plain = {}, qwen3.Qwen3.hidden

    def hidden(self, ids, *args, **kw):
        if args or kw or torch.is_grad_enabled() or ids.shape[0] != 1 or self.training:
            return plain(self, ids, *args, **kw)
        key = tuple(ids[0].tolist())
        if key not in cache:
            cache[key] = plain(self, ids)
        return cache[key]
    hidden.cache = cache
    qwen3.Qwen3.hidden = hidden
    return cache


def review_scores(model, head, meta, tok, schema, reviews):
    """For each (id, text): (records as field tuples in schema order, {order: usefulness, higher first})."""
    import torch
    import tagging
    labels, negs = schema.labels(), {v for vals in negative(schema).values() for v in vals}
    neg = [j for j, lab in enumerate(labels) if any(v in negs for v in lab)]
    out = {}
    with torch.no_grad():
        for i, text in reviews:
            recs, trace, _, ranges = tagging.decode_review(model, head, meta, tok, text, labels)
            conf = trace["confidences"]  # of the records written
            complaint = 0.0
            for lg in trace["labels"]:
                p = torch.softmax(torch.tensor(lg["logits"], dtype=torch.float64), 0)
                complaint = max(complaint, float(p[neg].sum()))
            lat = tagging.Lattice(head, torch.tensor(trace["emissions"]), tagging.midchar(text, ranges))
            entropy = 0.0
            for a, b in zip(lat.alpha, lat.beta):
                for k in range(lat.T):
                    m = math.exp(a[k] + b[k] - lat.log_z)
                    if m > 0:
                        entropy -= m * math.log(m)
            out[i] = ([tuple(r[f] for f in schema.fields) for r in recs],
                      {"confidence": 1.0 - min(conf) if conf else 1.0, "entropy": entropy / max(lat.n, 1),
                       "complaint": complaint})
    return out


def figures(gold, pred, neg):
    """F1 of every record and of the negative ones alone (neg: negative()): gold and pred {id: [tuples]}."""
    only = lambda d: {i: [q for q in v if is_negative(neg, q)] for i, v in d.items()}  # noqa: E731
    s, n = DS.f1(gold, pred), DS.f1(only(gold), only(pred))
    return {"f1": s["f1"], "precision": s["precision"], "recall": s["recall"], "S": s["S"], "P": s["P"],
            "G": s["G"], "neg_f1": n["f1"], "neg_S": n["S"], "neg_P": n["P"], "neg_G": n["G"]}


class Fold:
    """One fold's data, trunk and steps."""

    def __init__(self, a, k, parts, train, schema):
        self.a, self.k, self.schema = a, k, schema
        self.dir = os.path.join(a.out, f"fold{k}")
        os.makedirs(self.dir, exist_ok=True)
        held = set(parts[k])
        self.by_id = {i: (t, q) for i, t, q in train}
        self.test = [i for i, _, _ in train if i in held]
        rest = [i for i, _, _ in train if i not in held]
        random.Random(1000 + k).shuffle(rest)
        self.seed, self.pool = rest[:a.seed_size], rest[a.seed_size:]
        self.gold = {i: [schema.values_of(q) for q in self.by_id[i][1]] for i in self.test}
        self.neg = negative(schema)
        self.neg_name = "/".join(sorted({v for vals in self.neg.values() for v in vals}))
        self.model = None

    def labelled(self, ids):
        return [(i, self.by_id[i][0], self.by_id[i][1]) for i in ids]

    def args(self, trunk):
        import teach
        a = teach.recipe_args(self.dir, ["--threads", str(self.a.threads)])
        if self.a.epochs:
            a.epochs = self.a.epochs
        if trunk == "none":  # the base alone is the trunk
            a.lora_r = 0
        elif trunk:
            a.lora_r, a.trunk_adapter = 0, trunk
        return a

    def train(self, ids, trunk, name):
        """The label stage on ids: with trunk (an adapter folder) the head alone on its states."""
        import train_tagger as TT
        import tagging
        meta = TT.schema_template(tagging.load_template(), self.schema)
        record = {}
        model, head = TT.label_stage(self.args(trunk), self.a.base, meta, self.schema.labels(),
                                     self.labelled(ids), record, name=name)
        return model, head, meta, record[name]

    def decode(self, model, head, meta, tok, ids):
        return review_scores(model, head, meta, tok, self.schema, [(i, self.by_id[i][0]) for i in ids])

    def candidates(self, picked, n):
        """The pool left, in a seeded order; --rank-sample of them when set (the reviews ranked)."""
        taken = set(picked)
        left = [i for i in self.pool if i not in taken]
        random.Random(2000 + self.k + n).shuffle(left)
        return left[:self.a.rank_sample] if self.a.rank_sample else left

    def run_step(self, order, n, model, head, meta, tok, picked, record, test=None, pool=None):
        """Score the held-out fold and rank the pool left (decodes given are reused); save the step."""
        t0 = time.time()
        test = test or self.decode(model, head, meta, tok, self.test)
        fig = figures(self.gold, {i: v[0] for i, v in test.items()}, self.neg)
        left = self.candidates(picked, n)
        if order == "random":
            ranked = left
        else:
            sc = pool or self.decode(model, head, meta, tok, left)
            ranked = sorted(left, key=lambda i: -sc[i][1][order])
        out = {"fold": self.k, "order": order, "labels": n, "picked": picked, "next": ranked,
               "train": record, "score_seconds": round(time.time() - t0, 1), "negative": self.neg_name, **fig}
        DS.write_saved(os.path.join(self.dir, f"{order}_{n}.json"), out)
        log(f"fold {self.k} {order} {n}: F1 {fig['f1']:.4f}, {self.neg_name} F1 {fig['neg_f1']:.4f} "
            f"({record.get('seconds', 0)} s training, {out['score_seconds']} s scoring)")
        return out


def load_step(d, order, n):
    return DS.read_saved(os.path.join(d, f"{order}_{n}.json"))


def first_step(a, fold, tok):
    """--seed-size 0: the first step's reviews are a seeded random sample of the pool, the same for
    every ordering; its model, trained once (the head alone, on the base's states), scores the
    held-out fold and ranks the pool left for each ordering."""
    n = a.steps[0]
    if all(load_step(fold.dir, order, n) for order in a.orders):
        return
    picked = list(fold.pool)
    random.Random(2000 + fold.k).shuffle(picked)
    picked = picked[:n]
    model, head, meta, record = fold.train(picked, "none", f"fold{fold.k} first {n}")
    model.eval()
    test = fold.decode(model, head, meta, tok, fold.test)
    pool = fold.decode(model, head, meta, tok, fold.candidates(picked, n)) if a.orders != ["random"] else None
    for order in a.orders:
        if load_step(fold.dir, order, n) is None:
            fold.run_step(order, n, model, head, meta, tok, picked, record, test, pool)


def run_fold(a, fold, tok):
    import lora
    import qwen3
    import train_tagger as TT
    cache = cache_states()
    cache.clear()
    trunk = os.path.join(fold.dir, "init", "adapter")
    init = load_step(fold.dir, "init", 0)
    if a.seed_size == 0:  # from nothing: no seed model, the base alone is the trunk
        first_step(a, fold, tok)
    elif init is None:
        model, head, meta, record = fold.train(fold.seed, None if a.seed_adapter else "none", f"fold{fold.k} seed")
        TT.save_stage(model, head, meta, fold.schema.labels(), os.path.join(fold.dir, "init"), "../../base")
        model.eval()
        init = {}
        test = fold.decode(model, head, meta, tok, fold.test)
        pool = fold.decode(model, head, meta, tok, fold.candidates([], 0))
        for order in a.orders:  # every ordering starts from the same model and its own ranking
            init[order] = fold.run_step(order, 0, model, head, meta, tok, [], record, test, pool)["next"]
        DS.write_saved(os.path.join(fold.dir, "init_0.json"), init)
    model = qwen3.load_hf(a.base)
    if a.seed_adapter and a.seed_size:
        model = lora.load_peft(model, trunk)
    else:
        trunk = "none"
    model.eval()
    start = 0 if a.seed_size else a.steps[0]
    prev = {order: load_step(fold.dir, order, start) for order in a.orders}
    for n in a.steps[1:] if start else a.steps:  # every ordering a step before the next: a stopped run is even
        for order in a.orders:
            got = load_step(fold.dir, order, n)
            if got is None:
                picked = prev[order]["picked"] + prev[order]["next"][:n - len(prev[order]["picked"])]
                _, head, meta, record = fold.train(fold.seed + picked, trunk, f"fold{fold.k} {order} {n}")
                head.eval()
                got = fold.run_step(order, n, model, head, meta, tok, picked, record)
            prev[order] = got


def reach(curve, target):
    """The labels at which a curve [(labels, F1)] (increasing labels) first reaches target, linear
    between its steps; None when it never does."""
    for j, (n, v) in enumerate(curve):
        if v >= target:
            if j == 0:
                return float(n)
            n0, v0 = curve[j - 1]
            return n0 + (n - n0) * (target - v0) / (v - v0)
    return None


def decide(steps, orders, labels):
    """The default ordering by the rule of the work: the one that reaches random's F1 at the last step
    with the fewest labels. steps: {(fold, order, labels): step}. For each ordering: on each fold the
    labels it needs to reach that fold's random F1 at the last step (None: not by then), and its paired
    differences from random at each step (per fold, mean, SE). An ordering beats random when it reaches
    that F1 on every fold in fewer labels than random needs; of those, the fewest labels on the mean
    wins; with none, random stays. Only folds with every step of random and the ordering count."""
    last = labels[-1]
    out = {"last": last, "orders": {}, "default": "random"}
    for order in orders:
        folds = sorted(k for k in {f for f, _, _ in steps}
                       if all((k, o, n) in steps for o in ("random", order) for n in labels))
        if order == "random" or not folds:
            continue
        need, own, diffs = {}, {}, {}
        for k in folds:
            target = steps[k, "random", last]["f1"]
            need[k] = reach([(n, steps[k, order, n]["f1"]) for n in labels], target)
            own[k] = reach([(n, steps[k, "random", n]["f1"]) for n in labels], target)
        for n in labels:
            for key in ("f1", "neg_f1"):
                d = [steps[k, order, n][key] - steps[k, "random", n][key] for k in folds]
                m, se = DS.mean_se(d, float("nan"))
                diffs[f"{key}_{n}"] = {"folds": d, "mean": m, "se": se}
        got = [v for v in need.values() if v is not None]
        beats = len(got) == len(folds) and all(need[k] < own[k] for k in folds)
        out["orders"][order] = {"folds": folds, "labels_to_reach": need, "random_labels": own, "beats_random": beats,
                                "mean_labels": sum(got) / len(got) if beats else None, "differences": diffs}
    winners = [(v["mean_labels"], o) for o, v in out["orders"].items() if v["beats_random"]]
    if winners:
        out["default"] = min(winners)[1]
    return out


def summarise(a):
    """mean +- SE over the folds of every (order, labels); the decision (decide); the chart."""
    rows, steps = {}, {}
    for k in a.folds:
        d = os.path.join(a.out, f"fold{k}")
        for order in a.orders:
            for n in [0] + a.steps:
                s = load_step(d, order, n)
                if s is not None:
                    rows.setdefault((order, n), []).append(s)
                    steps[k, order, n] = s
    neg = next((s.get("negative", "负面") for ss in rows.values() for s in ss), "负面")  # older runs: 负面
    out = []
    for (order, n), ss in sorted(rows.items(), key=lambda x: (a.orders.index(x[0][0]), x[0][1])):
        row = {"order": order, "labels": n, "folds": [s["fold"] for s in ss]}
        for key in ("f1", "neg_f1"):
            row[key], row[key + "_se"] = DS.mean_se([s[key] for s in ss], float("nan"))
        out.append(row)
        print(f"{order:10s} {n:4d} labels: F1 {row['f1']:.4f} +- {row['f1_se']:.4f}, {neg} F1 "
              f"{row['neg_f1']:.4f} +- {row['neg_f1_se']:.4f} (folds {row['folds']})")
    with open(os.path.join(a.out, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=2)
    if "random" in a.orders:
        dec = decide(steps, a.orders, ([0] if a.seed_size else []) + a.steps)
        for order, v in dec["orders"].items():
            need = ", ".join("-" if n is None else f"{n:.0f}" for n in v["labels_to_reach"].values())
            d = v["differences"][f"f1_{dec['last']}"]
            print(f"{order:10s} reaches random's {dec['last']}-label F1 after {need} labels (folds {v['folds']}); "
                  f"F1 - random at {dec['last']}: {d['mean']:+.4f} +- {d['se']:.4f}")
        print(f"default ordering: {dec['default']}" + ("" if dec["default"] != "random" else
                                                       " (no ordering beats random on every fold)"))
        with open(os.path.join(a.out, "decision.json"), "w", encoding="utf-8") as f:
            json.dump(dec, f, ensure_ascii=False, indent=2)
    if a.chart:
        import teach_chart
        with open(a.chart, "w", encoding="utf-8") as f:
            f.write(teach_chart.svg(out, a.orders, ([0] if a.seed_size else []) + a.steps, a.seed_size, neg))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--out", required=True)
    ap.add_argument("--base", default=os.path.join(os.path.dirname(HERE), "models", "tianchi", "base"),
                    help="a base pre-trained without labels (the bundled default's)")
    ap.add_argument("--folds", type=lambda v: [int(x) for x in v.split(",")], default=[0, 1, 2])
    ap.add_argument("--orders", type=lambda v: v.split(","), default=list(ORDERS))
    ap.add_argument("--steps", type=lambda v: [int(x) for x in v.split(",")], default=[100, 200, 400, 800])
    ap.add_argument("--seed-size", type=int, default=500,
                    help="reviews the seed model is trained on; 0: start from nothing (an untrained head, the "
                         "first step's reviews picked at random for every ordering, the base alone the trunk)")
    ap.add_argument("--epochs", type=int, default=0, help="0: train_tagger.py's (5)")
    ap.add_argument("--seed-adapter", type=int, default=1,
                    help="1: the seed model's label stage trains an adapter, kept as the trunk after; 0: the base "
                         "alone is the trunk throughout (cheaper)")
    ap.add_argument("--rank-sample", type=int, default=0,
                    help="rank a seeded sample of this many reviews of the pool left at each step (0: all of it)")
    ap.add_argument("--threads", type=int, default=1)
    DS.add_args(ap)
    ap.add_argument("--limit", type=int, default=0, help="the first N labelled reviews only (a smoke run)")
    ap.add_argument("--summary", action="store_true", help="sum up the steps saved; train nothing")
    ap.add_argument("--chart", help="with --summary: write the SVG chart here")
    a = ap.parse_args(argv)
    bad = [o for o in a.orders if o not in ORDERS]
    if bad:
        raise SystemExit(f"simulate_teach.py: unknown order {bad[0]} (one of {', '.join(ORDERS)})")
    if a.steps != sorted(set(a.steps)) or a.steps[0] <= 0:
        raise SystemExit("simulate_teach.py: --steps must be increasing and positive")
    if a.summary:
        return summarise(a)
    import torch
    import bpe
    import kfold
    torch.set_num_threads(a.threads)
    try:
        data = DS.load(a)
    except DS.DataError as e:
        raise SystemExit(f"simulate_teach.py: {e}") from None
    train = data.labelled("train")
    if a.limit:
        train = train[:a.limit]
    parts = kfold.folds([i for i, _, _ in train], 5)
    tok = bpe.load(os.path.join(a.base, "tokenizer.json"))
    os.makedirs(a.out, exist_ok=True)
    for k in a.folds:
        run_fold(a, Fold(a, k, parts, train, data.schema), tok)
    summarise(a)


if __name__ == "__main__":
    main()

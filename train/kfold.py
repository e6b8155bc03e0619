#!/usr/bin/python3
"""Score a recipe by k-fold cross-validation on the labelled training reviews, through pocketdec.

  kfold.py --base RUN/base --out DIR [--folds 5] [label stage options of train_tagger.py]
  kfold.py --data MY.jsonl --schema MY.yaml --base RUN/base --out DIR     # any data dataset.py reads

The labelled reviews outside the dev split are cut into --folds folds (a seeded shuffle of their ids,
--fold-seed); for each fold the label stage of train_tagger.py (the adapter and the wide-and-deep
head: the only stages that read labels) is trained on the other folds over one base, and the fold's
reviews are extracted by the C library (the pocketdec package: what `pocketdec extract` writes) and
scored by tianchi-eval's library (on data other than the Tianchi CSV pair: dataset.score, the same
metric for any schema). The base must have been pre-trained without labels (train_tagger.py's
base stage reads review text only), so no fold's labels reach it; its text includes the folds'
reviews, as it includes the test reviews' (unlabelled text is what a user has too).

Writes DIR/fold<k>/ (adapter, head, Result.csv, gold.csv, score.json; a finished fold is loaded on a
rerun) and DIR/kfold.json, and prints the mean F1 over the folds with its standard error, the pooled
figures (every fold's records against every fold's gold) and the pooled precision, recall and F1 of
each polarity. A fold of about 509 reviews costs the label stage on 4/5 of the data plus a few
seconds to extract and score: 5-6 min on one thread with the defaults, so two processes of one thread
(--only 0 --only 2 --only 4 and --only 1 --only 3, --threads 1) score 5 folds in about 18 min on 2
cores; a rerun without --only then only sums them up.
"""

import argparse
import copy
import csv
import json
import os
import random
import sys
import time

import dataset as DS
import sentiment
import train_tagger as T
import tagging
from train_all import common_args, log, start

FOLD_SEED = 20261204


def folds(ids, k, seed=FOLD_SEED):
    """k lists of ids: a seeded shuffle of the sorted ids, dealt round robin; each list sorted."""
    order = sorted(ids, key=DS.id_key)
    random.Random(seed).shuffle(order)
    return [sorted(order[j::k], key=DS.id_key) for j in range(k)]


def write_gold(path, labels_csv, ids):
    """The original lines of ids in a train_labels.csv (with its header): tianchi-eval's gold file."""
    with open(labels_csv, encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    keep = set(ids)
    with open(path, "w", encoding="utf-8", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows([rows[0]] + [r for r in rows[1:] if int(r[0]) in keep])


class Scorer:
    """The figures of a Result.csv: tianchi-eval's library on the Tianchi CSV data read without a
    skipped record (gold: the original lines of train_labels.csv), dataset.score (the same metric, for any schema) on other data (gold:
    the records read, written as a Result.csv of the schema's fields)."""

    def __init__(self, pd, data):
        self.pd, self.data = pd, data
        self.tianchi = data.csv_pair is not None and not data.report.skipped and \
            data.schema.fields == ["aspect", "opinion", "category", "polarity"]
        self.gold = {str(i): [data.schema.values_of(q) for q in quads] for i, _, quads in data.labelled("train")}

    def write_gold(self, path, ids):
        if self.tianchi:
            return write_gold(path, self.data.csv_pair[1], ids)
        with open(path, "w", encoding="utf-8", newline="") as f:
            csv.writer(f, lineterminator="\n").writerows([[i] + list(q) for i in ids for q in self.gold[str(i)]])

    def score(self, gold, pred, reviews):
        if self.tianchi:
            s = self.pd.tianchi_eval.score(gold, pred, reviews=reviews)
            return {"overall": s["overall"], "polarities": s["polarities"], "pairs": s["pairs"]}
        return DS.score(self.data.schema, DS.read_result_rows(gold), DS.read_result_rows(pred))


def score_model(sc, base, adapter, head, reviews, result, gold, threads):
    """Extract reviews [(id, text)] with base, adapter and head through pocketdec into result (a
    Result.csv); their figures against gold (Scorer.write_gold's file)."""
    if not T.extract_dev(base, adapter, head, reviews, result, threads, sc.data.schema):
        sys.exit("kfold.py scores through the pocketdec library: build it first (meson compile -C build)")
    return sc.score(gold, result, dict(reviews))


def extract_and_score(a, sc, out, reviews, result, gold, head=None):
    """Extract reviews with out/adapter and the head (out/head) through pocketdec; their figures."""
    return score_model(sc, a.base, os.path.join(out, "adapter"), head or os.path.join(out, "head"), reviews, result,
                       gold, a.threads)


def run_fold(a, k, test_ids, train, meta, labels, sc, polarity=None):
    out = os.path.join(a.out, f"fold{k}")
    done = os.path.join(out, "score.json")
    if os.path.exists(done):
        with open(done, encoding="utf-8") as f:
            return json.load(f)
    os.makedirs(out, exist_ok=True)
    record = {}
    held = set(test_ids)
    fold_train = [r for r in train if r[0] not in held]
    silver = T.read_silver(a.silver.format(k=k) if a.silver else None, sc.data.schema)
    model, head = T.label_stage(a, a.base, meta, labels, fold_train, record, name=f"fold{k}", polarity=polarity,
                                silver=silver)
    T.save_stage(model, head, meta, labels, out, os.path.relpath(a.base, out))
    reviews = [(i, t) for i, t, _ in train if i in held]
    result, gold = os.path.join(out, "Result.csv"), os.path.join(out, "gold.csv")
    sc.write_gold(gold, test_ids)
    t0 = time.time()
    s = extract_and_score(a, sc, out, reviews, result, gold)
    s.update(record[f"fold{k}"], extract_seconds=round(time.time() - t0, 1), reviews=len(reviews))
    # the same trained fold with other polarity priors (only the label biases differ)
    for tau in a.compare_priors:
        sub = os.path.join(out, f"prior{tau:g}")
        other = copy.deepcopy(head)
        T.polarity_prior(other, labels, fold_train, tau - a.polarity_prior)
        tagging.save(other, meta, labels, os.path.join(sub, "head"))
        s[f"prior{tau:g}"] = extract_and_score(a, sc, out, reviews, os.path.join(sub, "Result.csv"), gold,
                                               os.path.join(sub, "head"))
    with open(done, "w", encoding="utf-8") as f:
        json.dump(s, f, ensure_ascii=False, indent=2)
    log(f"fold {k}: F1 {s['overall']['f1']:.4f} ({len(reviews)} reviews, {s['seconds']} s)")
    return s


def summary(scores, pooled):
    f = [s["overall"]["f1"] for s in scores]
    mean, se = DS.mean_se(f)
    return {"folds": len(f), "f1": f, "mean": mean, "standard_error": se,
            "pooled": pooled["overall"], "pooled_pairs": pooled["pairs"], "pooled_polarities": pooled["polarities"]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    common_args(ap, data=False)
    DS.add_args(ap)
    T.label_args(ap)
    sentiment.polarity_args(ap)
    ap.add_argument("--base", required=True, help="a base pre-trained without labels (train_tagger.py's RUN/base)")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--fold-seed", type=int, default=FOLD_SEED)
    ap.add_argument("--only", type=int, action="append", help="run this fold only (repeatable); no summary")
    ap.add_argument("--compare-priors", type=lambda v: [float(x) for x in v.split(",")], default=[],
                    help="also score each fold with these --polarity-prior values (comma-separated): the same "
                         "adapter and head, other label biases")
    a = ap.parse_args(argv)
    try:
        data = DS.load(a)
        meta = T.schema_template(tagging.load_template(a.template), data.schema)
    except DS.DataError as e:
        raise SystemExit(f"kfold.py: {e}")
    start(a)
    if not a.features:
        meta.pop("features", None)
    polarity = sentiment.prepare(a, meta, a.out, log)
    labels = data.schema.labels()
    train = data.labelled("train")
    if a.limit:
        train = train[:a.limit]
    parts = folds([i for i, _, _ in train], a.folds, a.fold_seed)
    import evaluate
    sc = Scorer(evaluate.package(), data)
    todo = a.only if a.only else range(a.folds)
    scores = [run_fold(a, k, parts[k], train, meta, labels, sc, polarity) for k in todo]
    if a.only:
        return
    # pooled: every fold's records and gold in one file each
    pred, gold = os.path.join(a.out, "pooled_Result.csv"), os.path.join(a.out, "pooled_gold.csv")
    with open(pred, "w", encoding="utf-8", newline="") as f:
        for k in range(a.folds):
            with open(os.path.join(a.out, f"fold{k}", "Result.csv"), encoding="utf-8") as g:
                f.write(g.read())
    sc.write_gold(gold, [i for p in parts for i in p])
    pooled = sc.score(gold, pred, {i: t for i, t, _ in train})
    s = summary(scores, pooled)
    for tau in a.compare_priors:
        pred = os.path.join(a.out, f"pooled_prior{tau:g}_Result.csv")
        with open(pred, "w", encoding="utf-8", newline="") as f:
            for k in range(a.folds):
                with open(os.path.join(a.out, f"fold{k}", f"prior{tau:g}", "Result.csv"), encoding="utf-8") as g:
                    f.write(g.read())
        s[f"prior{tau:g}"] = summary([x[f"prior{tau:g}"] for x in scores],
                                     sc.score(gold, pred, {i: t for i, t, _ in train}))
        report(s[f"prior{tau:g}"], a.folds, f"--polarity-prior {tau:g}: ")
    s["args"] = {k: v for k, v in vars(a).items() if k not in ("out", "data")}
    with open(os.path.join(a.out, "kfold.json"), "w", encoding="utf-8") as f:
        json.dump(s, f, ensure_ascii=False, indent=2)
    report(s, a.folds, f"--polarity-prior {a.polarity_prior:g}: ")


def report(s, n, what):
    pol = ", ".join(f"{v['label']} P {v['precision']:.3f} R {v['recall']:.3f} F1 {v['f1']:.3f}"
                    for v in s["pooled_polarities"])
    print(f"{what}{n} folds: F1 {s['mean']:.4f} +- {s['standard_error']:.4f} "
          f"(folds {', '.join(f'{x:.4f}' for x in s['f1'])}); pooled F1 {s['pooled']['f1']:.4f}, "
          f"pairs {s['pooled_pairs']['f1']:.4f}; {pol}")


if __name__ == "__main__":
    main()

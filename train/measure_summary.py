#!/usr/bin/python3
"""How honest are `pocketdec summarize`'s corrected counts? Measured on labelled reviews the model did not
train on, against their gold counts (docs/summarize.md, "Measured").

  measure_summary.py --pocketdec build/cli/pocketdec --model models/tianchi --out DIR
      [--reviews data/tianchi/dev_reviews.csv --labels data/tianchi/dev_labels.csv] [--folds 5]
      [--train-reviews data/tianchi/train_reviews.csv --train-labels data/tianchi/train_labels.csv]

The reviews are extracted once by `pocketdec extract` (JSONL), then cut into --folds folds (the sorted ids
shuffled with kfold.py's seed and dealt round robin, as kfold.py cuts the training reviews). For each fold,
`pocketdec summarize --calibrate` measures the rates on the other folds and summarizes the fold's records
with them; the fold's gold counts come from the labels, read here. Per fold: each polarity's raw and
corrected error, and for every polarity and every (category, polarity) with at least 5 gold records in the
fold, whether the 90% interval holds the gold count. With --train-reviews, the same summary of the whole
reviews with rates measured on the training reviews (which the bundled model learned: optimistic rates, a
warning of what in-sample rates do). Also the rates' standard deviation of log(G / Pr) by the delta method
(the command's) beside a bootstrap over the reviews (2,000 resamples). Writes DIR/measure.json and prints
the tables docs/summarize.md quotes.
"""

import argparse
import csv
import json
import math
import os
import random
import subprocess
import sys

FOLD_SEED = 20261204  # kfold.py's
MIN_GOLD = 5


def id_key(i):
    return (not i.isdigit(), int(i) if i.isdigit() else i)


def read_gold(path):
    """{id: [(aspect, opinion, category, polarity)]} of a Tianchi labels CSV."""
    gold = {}
    with open(path, encoding="utf-8", newline="") as f:
        rows = csv.reader(f)
        next(rows)
        for r in rows:
            gold.setdefault(r[0], []).append((r[1], r[4], r[7], r[8]))
    return gold


def read_records(path):
    """[(id, line)] of extract's JSONL, in order, and {id: [(aspect, opinion, category, polarity)]}."""
    order, recs = [], {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            order.append((str(d["id"]), line))
            recs[str(d["id"])] = [(r["aspect"], r["opinion"], r["category"], r["polarity"]) for r in d["records"]]
    return order, recs


def folds(ids, k):
    order = sorted(ids, key=id_key)
    random.Random(FOLD_SEED).shuffle(order)
    return [set(order[j::k]) for j in range(k)]


def write_subset(out, order, gold, ids, labels_header):
    """The records and the labels of ids, as files summarize reads."""
    rec, lab = out + ".jsonl", out + "_labels.csv"
    with open(rec, "w", encoding="utf-8") as f:
        f.writelines(line for i, line in order if i in ids)
    with open(lab, "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(labels_header)
        for i, _ in order:
            for a, o, c, p in gold.get(i, []) if i in ids else []:
                w.writerow([i, a, "", "", o, "", "", c, p])
    return rec, lab


def counts(recs, ids):
    """{(category or None, polarity): count} over ids."""
    n = {}
    for i in ids:
        for _, _, c, p in recs.get(i, []):
            n[(c, p)] = n.get((c, p), 0) + 1
            n[(None, p)] = n.get((None, p), 0) + 1
    return n


def summarize(a, records, labels, cal_records):
    cmd = [a.pocketdec, "summarize", "--records", records, "--calibrate", labels, "--calibrate-records", cal_records]
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)


def entries(s):
    out = {(None, p): e for p, e in s["polarity"].items()}
    out.update({(e["category"], e["polarity"]): e for e in s["cells"]})
    return out


def compare(s, gold_counts):
    """Per polarity: raw and corrected error; per cell with >= MIN_GOLD gold: the interval holds the gold?"""
    ent = entries(s)
    pol, cells = {}, []
    for key, g in sorted(gold_counts.items(), key=lambda kv: (kv[0][0] or "", kv[0][1])):
        e = ent.get(key)
        raw = e["records"] if e else 0
        est, low, high = (e["estimate"], e["low"], e["high"]) if e else (0.0, 0.0, 0.0)
        if key[0] is None:
            pol[key[1]] = {"gold": g, "raw": raw, "estimate": est, "raw_error": (raw - g) / g,
                           "error": (est - g) / g if g else 0.0}
        if g >= MIN_GOLD:
            held = low <= g and (high is None or g <= high)
            cells.append({"category": key[0], "polarity": key[1], "gold": g, "raw": raw, "estimate": est,
                          "low": low, "high": high, "held": held, "rates": e["rates"] if e else "none"})
    return pol, cells


def bootstrap_sd(recs, gold, ids, polarity, n=2000):
    ids = sorted(ids, key=id_key)
    g = [sum(1 for q in gold.get(i, []) if q[3] == polarity) for i in ids]
    p = [sum(1 for q in recs.get(i, []) if q[3] == polarity) for i in ids]
    G, P = sum(g), sum(p)
    delta = math.sqrt(len(ids) / (len(ids) - 1) * sum((gi / G - pi / P) ** 2 for gi, pi in zip(g, p)))
    rng = random.Random(1)
    logs = []
    for _ in range(n):
        idx = [rng.randrange(len(ids)) for _ in ids]
        gs, ps = sum(g[i] for i in idx), sum(p[i] for i in idx)
        if gs and ps:
            logs.append(math.log(gs / ps))
    m = sum(logs) / len(logs)
    return delta, math.sqrt(sum((x - m) ** 2 for x in logs) / (len(logs) - 1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--pocketdec", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--schema", default="schemas/tianchi-makeup.yaml")
    ap.add_argument("--reviews", default="data/tianchi/dev_reviews.csv")
    ap.add_argument("--labels", default="data/tianchi/dev_labels.csv")
    ap.add_argument("--train-reviews")
    ap.add_argument("--train-labels")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)

    def extract(reviews, out):
        if not os.path.exists(out):
            subprocess.run([a.pocketdec, "extract", "--model", a.model, "--schema", a.schema, "--input", reviews,
                            "--output", out, "--format", "jsonl", "--threads", "1"], check=True,
                           stderr=subprocess.DEVNULL)
        return out

    records = extract(a.reviews, os.path.join(a.out, "records.jsonl"))
    order, recs = read_records(records)
    gold = read_gold(a.labels)
    with open(a.labels, encoding="utf-8", newline="") as f:
        header = next(csv.reader(f))
    parts = folds([i for i, _ in order], a.folds)
    result = {"folds": [], "cells": []}
    for k, part in enumerate(parts):
        rest = set().union(*(p for j, p in enumerate(parts) if j != k))
        fr, _ = write_subset(os.path.join(a.out, f"fold{k}"), order, gold, part, header)
        cr, cl = write_subset(os.path.join(a.out, f"rest{k}"), order, gold, rest, header)
        pol, cells = compare(summarize(a, fr, cl, cr), counts(gold, part))
        result["folds"].append({"fold": k, "reviews": len(part), "polarity": pol})
        result["cells"] += [dict(c, fold=k) for c in cells]
    if a.train_reviews:
        tr = extract(a.train_reviews, os.path.join(a.out, "train_records.jsonl"))
        pol, cells = compare(summarize(a, records, a.train_labels, tr), counts(gold, [i for i, _ in order]))
        result["in_sample"] = {"polarity": pol, "cells": cells}
    result["sd"] = {p: dict(zip(("delta", "bootstrap"), bootstrap_sd(recs, gold, [i for i, _ in order], p)))
                    for p in ("负面", "正面", "中性")}
    pols = ["负面", "正面", "中性"]
    print("fold | reviews | " + " | ".join(f"{p} gold, raw, corrected" for p in pols))
    mean = {p: [0.0, 0.0] for p in pols}
    for fo in result["folds"]:
        row = []
        for p in pols:
            e = fo["polarity"].get(p)
            if not e:
                row.append("-")
                continue
            mean[p][0] += abs(e["raw_error"]) / len(parts)
            mean[p][1] += abs(e["error"]) / len(parts)
            row.append(f"{e['gold']}, {e['raw']} ({e['raw_error']:+.0%}), {e['estimate']:.1f} ({e['error']:+.0%})")
        print(f"{fo['fold']} | {fo['reviews']} | " + " | ".join(row))
    print("mean |error| | | " + " | ".join(f"raw {m[0]:.0%}, corrected {m[1]:.0%}" for m in mean.values()))
    pooled = []
    for p in pols:
        g = sum(fo["polarity"][p]["gold"] for fo in result["folds"] if p in fo["polarity"])
        r = sum(fo["polarity"][p]["raw"] for fo in result["folds"] if p in fo["polarity"])
        e = sum(fo["polarity"][p]["estimate"] for fo in result["folds"] if p in fo["polarity"])
        pooled.append(f"{p} gold {g}, raw {r} ({(r - g) / g:+.0%}), corrected {e:.1f} ({(e - g) / g:+.0%})")
    result["pooled"] = pooled
    print("the folds' sums: " + "; ".join(pooled))
    cat = [c for c in result["cells"] if c["category"] is not None]
    raw_err = sum(abs(c["raw"] - c["gold"]) / c["gold"] for c in cat) / len(cat)
    est_err = sum(abs(c["estimate"] - c["gold"]) / c["gold"] for c in cat) / len(cat)
    print(f"(category, polarity) entries with >= {MIN_GOLD} gold in their fold: {len(cat)}; mean |error| raw "
          f"{raw_err:.0%}, corrected {est_err:.0%}; intervals holding the gold "
          f"{sum(c['held'] for c in cat)} of {len(cat)}")
    for c in cat:
        print(f"  fold {c['fold']} {c['category']}/{c['polarity']}: gold {c['gold']}, raw {c['raw']}, "
              f"corrected {c['estimate']} [{c['low']}, {c['high']}] ({c['rates']})")
    held = [c["held"] for c in result["cells"]]
    print(f"90% intervals holding the gold count: {sum(held)} of {len(held)} cells with >= {MIN_GOLD} gold "
          f"({sum(held) / len(held):.0%})")
    for c in result["cells"]:
        if not c["held"]:
            print(f"  missed: fold {c['fold']} {c['category'] or ''}/{c['polarity']}: gold {c['gold']}, "
                  f"raw {c['raw']}, {c['estimate']} [{c['low']}, {c['high']}] ({c['rates']})")
    if "in_sample" in result:
        s = result["in_sample"]
        print("in-sample rates (training reviews) on all of dev: " + ", ".join(
            f"{p} gold {e['gold']} raw {e['raw']} ({e['raw_error']:+.0%}) corrected {e['estimate']:.1f} "
            f"({e['error']:+.0%})" for p, e in s["polarity"].items()) +
              f"; intervals {sum(c['held'] for c in s['cells'])} of {len(s['cells'])}")
    for p, v in result["sd"].items():
        print(f"sd of log(G/Pr) on all of dev, {p}: delta {v['delta']:.4f}, bootstrap {v['bootstrap']:.4f}")
    with open(os.path.join(a.out, "measure.json"), "w", encoding="utf-8") as f:
        json.dump(result, f, ensure_ascii=False, indent=1)


if __name__ == "__main__":
    sys.exit(main())

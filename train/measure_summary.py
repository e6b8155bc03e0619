#!/usr/bin/python3
"""How honest are `pocketdec summarize`'s corrected counts? Measured on labelled reviews the model did not
train on, against their gold counts (docs/summarize.md, "Measured").

  measure_summary.py --pocketdec build/cli/pocketdec --model models/tianchi --out DIR --kfold KDIR
  measure_summary.py --pocketdec build/cli/pocketdec --model models/tianchi --out DIR
      [--reviews data/tianchi/dev_reviews.csv --labels data/tianchi/dev_labels.csv] [--folds 5]
      [--train-reviews data/tianchi/train_reviews.csv --train-labels data/tianchi/train_labels.csv]

With --kfold (kfold.py's --out for the bundle's recipe: KDIR/fold<k>/Result.csv, each fold's reviews
extracted by the fold model that did not train on them, and gold.csv): each fold is summarized with rates
measured on the OTHER folds' out-of-fold records only (no fold corrected by rates it helped measure), and
the reviews of --reviews (dev, extracted by --model) with rates from every fold's; each against its gold
counts, as below. The rates' sd of log(G / Pr) by the delta method beside the bootstrap is then computed
over the out-of-fold records of all the folds. Without --kfold:

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

import dataset as DS

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
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"measure_summary.py: {' '.join(cmd)}: {p.stderr.strip()}")
    return json.loads(p.stdout)


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


def sds(recs, gold, ids):
    """{polarity: {"delta", "bootstrap"}} of the polarities with gold and predicted records among ids."""
    def some(d, p):
        return any(q[3] == p for i in ids for q in d.get(i, []))
    return {p: dict(zip(("delta", "bootstrap"), bootstrap_sd(recs, gold, ids, p)))
            for p in ("负面", "正面", "中性") if some(recs, p) and some(gold, p)}


def concat(out, paths, header):
    """The files at paths one after another in out (a labels CSV's header once when header)."""
    with open(out, "w", encoding="utf-8", newline="") as f:
        for k, path in enumerate(paths):
            with open(path, encoding="utf-8", newline="") as g:
                lines = g.readlines()
            f.writelines(lines[1 if header and k else 0:])
    return out


def measure_kfold(a, extract):
    """Each fold with the other folds' out-of-fold rates; dev with all of them."""
    dirs = []
    while os.path.exists(os.path.join(a.kfold, f"fold{len(dirs)}", "Result.csv")):
        dirs.append(os.path.join(a.kfold, f"fold{len(dirs)}"))
    if len(dirs) < 2:
        sys.exit(f"measure_summary.py: {a.kfold} has no fold0/Result.csv, fold1/Result.csv ... (kfold.py's --out)")
    res, gold = [os.path.join(d, "Result.csv") for d in dirs], [os.path.join(d, "gold.csv") for d in dirs]
    result = {"folds": [], "cells": []}
    for k, d in enumerate(dirs):
        others = [j for j in range(len(dirs)) if j != k]
        cr = concat(os.path.join(a.out, f"rest{k}_Result.csv"), [res[j] for j in others], False)
        cl = concat(os.path.join(a.out, f"rest{k}_gold.csv"), [gold[j] for j in others], True)
        recs = DS.read_result_rows(res[k])
        pol, cells = compare(summarize(a, res[k], cl, cr), counts(read_gold(gold[k]), recs))
        result["folds"].append({"fold": k, "reviews": len(recs), "polarity": pol})
        result["cells"] += [dict(c, fold=k) for c in cells]
    cr = concat(os.path.join(a.out, "oof_Result.csv"), res, False)
    cl = concat(os.path.join(a.out, "oof_gold.csv"), gold, True)
    records = extract(a.reviews, os.path.join(a.out, "records.jsonl"))
    order, _ = read_records(records)
    pol, cells = compare(summarize(a, records, cl, cr), counts(read_gold(a.labels), [i for i, _ in order]))
    result["dev"] = {"reviews": len(order), "polarity": pol, "cells": cells}
    recs, g = DS.read_result_rows(cr), read_gold(cl)
    result["sd"] = sds(recs, g, list(recs))
    result["sd_of"] = f"the out-of-fold records of {len(recs)} reviews"
    return result


def measure_dev(a, extract):
    """The reviews of --reviews cut into folds, each with rates measured on the others."""
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
    result["sd"] = sds(recs, gold, [i for i, _ in order])
    result["sd_of"] = "all of " + a.reviews
    return result


def held(cells):
    return f"{sum(c['held'] for c in cells)} of {len(cells)} ({sum(c['held'] for c in cells) / max(len(cells), 1):.0%})"


def cell_table(cells, by_fold):
    """Per (category, polarity): the raw and corrected errors and the intervals (over the folds it reaches
    MIN_GOLD in, when by_fold)."""
    keys = sorted({(c["category"], c["polarity"]) for c in cells}, key=lambda k: (k[1], k[0] or ""))
    print(("cell | folds | gold | raw error | corrected error | intervals holding the gold" if by_fold else
           "cell | gold | raw | corrected [90% interval] | raw error | corrected error"))
    for key in keys:
        cs = [c for c in cells if (c["category"], c["polarity"]) == key]
        name = f"{key[0] or '(all)'} / {key[1]}"
        err = lambda c, v: (c[v] - c["gold"]) / c["gold"]
        if by_fold:
            n = len(cs)
            print(f"{name} | {n} | {sum(c['gold'] for c in cs) / n:.1f} | "
                  f"{sum(err(c, 'raw') for c in cs) / n:+.0%} (|{sum(abs(err(c, 'raw')) for c in cs) / n:.0%}|) | "
                  f"{sum(err(c, 'estimate') for c in cs) / n:+.0%} (|{sum(abs(err(c, 'estimate')) for c in cs) / n:.0%}|)"
                  f" | {sum(c['held'] for c in cs)} of {n}" + (f" ({cs[0]['rates']} rates)" if key[0] else ""))
        else:
            c = cs[0]
            print(f"{name} | {c['gold']} | {c['raw']} | {c['estimate']:.1f} [{c['low']}, {c['high']}] | "
                  f"{err(c, 'raw'):+.0%} | {err(c, 'estimate'):+.0%}" + (f" ({c['rates']} rates)" if key[0] else "")
                  + ("" if c["held"] else " MISSED"))


def report(result):
    pols = ["负面", "正面", "中性"]
    folds_ = result["folds"]
    print("fold | reviews | " + " | ".join(f"{p} gold, raw, corrected" for p in pols))
    mean = {p: [0.0, 0.0, 0.0, 0.0] for p in pols}
    for fo in folds_:
        row = []
        for p in pols:
            e = fo["polarity"].get(p)
            if not e:
                row.append("-")
                continue
            for j, v in enumerate((e["raw_error"], e["error"])):
                mean[p][j] += v / len(folds_)
                mean[p][2 + j] += abs(v) / len(folds_)
            row.append(f"{e['gold']}, {e['raw']} ({e['raw_error']:+.0%}), {e['estimate']:.1f} ({e['error']:+.0%})")
        print(f"{fo['fold']} | {fo['reviews']} | " + " | ".join(row))
    print("mean over the folds | | " + " | ".join(
        f"raw {m[0]:+.1%} (|{m[2]:.1%}|), corrected {m[1]:+.1%} (|{m[3]:.1%}|)" for m in mean.values()))
    result["mean"] = {p: dict(zip(("raw_error", "error", "raw_abs_error", "abs_error"), m)) for p, m in mean.items()}
    pooled = []
    for p in pols:
        g = sum(fo["polarity"][p]["gold"] for fo in folds_ if p in fo["polarity"])
        r = sum(fo["polarity"][p]["raw"] for fo in folds_ if p in fo["polarity"])
        e = sum(fo["polarity"][p]["estimate"] for fo in folds_ if p in fo["polarity"])
        if g:
            pooled.append(f"{p} gold {g}, raw {r} ({(r - g) / g:+.0%}), corrected {e:.1f} ({(e - g) / g:+.0%})")
    result["pooled"] = pooled
    print("the folds' sums: " + "; ".join(pooled))
    cat = [c for c in result["cells"] if c["category"] is not None]
    raw_err = sum(abs(c["raw"] - c["gold"]) / c["gold"] for c in cat) / max(len(cat), 1)
    est_err = sum(abs(c["estimate"] - c["gold"]) / c["gold"] for c in cat) / max(len(cat), 1)
    print(f"(category, polarity) entries with >= {MIN_GOLD} gold in their fold: {len(cat)}; mean |error| raw "
          f"{raw_err:.0%}, corrected {est_err:.0%}; intervals holding the gold {held(cat)}")
    cell_table(result["cells"], True)
    print(f"folds: 90% intervals holding the gold count: {held(result['cells'])} of the polarity and (category, "
          f"polarity) entries with >= {MIN_GOLD} gold in their fold")
    for c in result["cells"]:
        if not c["held"]:
            print(f"  missed: fold {c['fold']} {c['category'] or ''}/{c['polarity']}: gold {c['gold']}, "
                  f"raw {c['raw']}, {c['estimate']} [{c['low']}, {c['high']}] ({c['rates']})")
    if "dev" in result:
        d = result["dev"]
        print(f"dev ({d['reviews']} reviews), rates from every fold's out-of-fold records:")
        cell_table(d["cells"], False)
        print(f"dev: 90% intervals holding the gold count: {held(d['cells'])}")
    if "in_sample" in result:
        s = result["in_sample"]
        print("in-sample rates (training reviews) on all of dev: " + ", ".join(
            f"{p} gold {e['gold']} raw {e['raw']} ({e['raw_error']:+.0%}) corrected {e['estimate']:.1f} "
            f"({e['error']:+.0%})" for p, e in s["polarity"].items()) + f"; intervals {held(s['cells'])}")
    for p, v in result["sd"].items():
        print(f"sd of log(G/Pr) over {result['sd_of']}, {p}: delta {v['delta']:.4f}, bootstrap {v['bootstrap']:.4f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--pocketdec", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--schema", default="schemas/tianchi-makeup.yaml")
    ap.add_argument("--reviews", default="data/tianchi/dev_reviews.csv")
    ap.add_argument("--labels", default="data/tianchi/dev_labels.csv")
    ap.add_argument("--kfold", help="kfold.py's --out for the model's recipe: its folds' out-of-fold records")
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

    result = measure_kfold(a, extract) if a.kfold else measure_dev(a, extract)
    report(result)
    with open(os.path.join(a.out, "measure.json"), "w", encoding="utf-8") as f:
        json.dump(result, f, ensure_ascii=False, indent=1)


if __name__ == "__main__":
    sys.exit(main())

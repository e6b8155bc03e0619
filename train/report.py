#!/usr/bin/python3
"""Figures of a Result.csv against gold labels beyond tianchi-eval's: aspect and opinion span F1.

  report.py GOLD_LABELS.csv RESULT.csv [--json]

Spans are matched as tianchi-eval matches quadruples: within an id, one-to-one on the string,
as multisets of the distinct (start of record) explicit terms (`_` left out). Prints aspect,
opinion and quadruple precision / recall / F1 (the quadruple figure equals tianchi-eval's).
"""

import argparse
import collections
import csv
import json


def prf(s, p, g):
    pr, rc = s / max(p, 1), s / max(g, 1)
    return {"S": s, "P": p, "G": g, "precision": round(pr, 4), "recall": round(rc, 4),
            "f1": round(2 * pr * rc / max(pr + rc, 1e-12), 4)}


def read(path, gold):
    out = collections.defaultdict(list)
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))[1 if gold else 0:]
    for r in rows:
        q = (r[1], r[4], r[7], r[8]) if gold else tuple(r[1:5])
        if q != ("_", "_", "_", "_"):
            out[r[0]].append(q)
    return out


def match(g, p, key):
    s = P = G = 0
    for i in set(g) | set(p):
        gs = collections.Counter(x for x in map(key, g.get(i, [])) if x is not None)
        ps = collections.Counter(x for x in map(key, p.get(i, [])) if x is not None)
        s += sum((gs & ps).values())
        P += sum(ps.values())
        G += sum(gs.values())
    return prf(s, P, G)


def terms(d, k):
    """Each review's distinct explicit terms of field k (an aspect in two records is one span)."""
    return {i: [(t,) for t in sorted(set(q[k] for q in v if q[k] != "_"))] for i, v in d.items()}


def figures(gold_path, pred_path):
    g, p = read(gold_path, True), read(pred_path, False)
    return {"aspect": match(terms(g, 0), terms(p, 0), lambda q: q),
            "opinion": match(terms(g, 1), terms(p, 1), lambda q: q),
            "pair": match(g, p, lambda q: q[:2]),
            "quadruple": match(g, p, lambda q: q)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("gold")
    ap.add_argument("pred")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    f = figures(a.gold, a.pred)
    if a.json:
        print(json.dumps(f))
        return
    for k, v in f.items():
        print(f"{k:10s} S {v['S']:4d} P {v['P']:4d} G {v['G']:4d}  precision {v['precision']:.4f} "
              f"recall {v['recall']:.4f} F1 {v['f1']:.4f}")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""The lexicon baseline of issue 7, on the dev split.

Predict, for each dev review, every training (aspect, opinion) pair seen at least --min-count
times whose strings occur in the review (`_` always occurs), with the pair's most frequent
(category, polarity) in training (ties: the one seen first). By default a match that another
match contains is dropped (opinion 好 inside 很好, aspect _ where the same opinion comes with an
explicit aspect); --literal keeps every match. Writes a Result.csv for the dev ids:

  baseline.py --out DIR [--min-count 2] [--literal]   ->  DIR/baseline_dev_Result.csv
  tianchi-eval data/tianchi/dev_labels.csv DIR/baseline_dev_Result.csv
"""

import argparse
import collections
import csv
import os

import data as D


def lexicon(train, min_count):
    """{(aspect, opinion): (category, polarity)} of the pairs seen min_count times or more."""
    seen = collections.Counter()
    labels = collections.defaultdict(collections.Counter)
    first = {}
    for _, _, quads in train:
        for k, (a, o, c, p) in enumerate(quads):
            seen[(a, o)] += 1
            labels[(a, o)][(c, p)] += 1
            first.setdefault((a, o, c, p), len(first))
    out = {}
    for pair, n in seen.items():
        if n >= min_count:
            out[pair] = max(labels[pair].items(), key=lambda kv: (kv[1], -first[pair + kv[0]]))[0]
    return out


def predict(lex, text):
    occurs = lambda s: s == "_" or s in text  # noqa: E731
    return [(a, o, c, p) for (a, o), (c, p) in lex.items() if occurs(a) and occurs(o)]


def subsumed(q, r):
    """Whether match q is part of the longer match r."""
    (a, o), (ra, ro) = q[:2], r[:2]
    if o != "_" and ro != o and o in ro and (a == "_" or a in ra):
        return True
    if a != "_" and ra != a and a in ra and o == ro:
        return True
    return a == "_" and ra != "_" and ro == o


def longest_only(preds):
    return [q for q in preds if not any(r is not q and subsumed(q, r) for r in preds)]


def write_result(path, rows):
    """Result.csv: no header, every id, `id,_,_,_,_` for a review with no quadruple."""
    with open(path, "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        for rid, quads in rows:
            for q in quads or [("_", "_", "_", "_")]:
                w.writerow([rid, *q])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--data", default=D.DATA)
    ap.add_argument("--min-count", type=int, default=2)
    ap.add_argument("--literal", action="store_true", help="keep matches that longer ones contain")
    a = ap.parse_args()
    lex = lexicon(D.labelled(a.data, "train"), a.min_count)
    dev = D.labelled(a.data, "dev")
    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, "baseline_dev_Result.csv")
    keep = (lambda p: p) if a.literal else longest_only
    write_result(path, [(rid, keep(predict(lex, text))) for rid, text, _ in dev])
    print(f"{len(lex)} lexicon pairs; wrote {path}")


if __name__ == "__main__":
    main()

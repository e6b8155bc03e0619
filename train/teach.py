#!/usr/bin/python3
"""Retrain a bundle's label stage on its original labels plus new ones, and write a new bundle.

  teach.py --bundle models/tianchi --labels MINE.jsonl [MORE.jsonl ...] --out NEW
           [--original data/tianchi|none] [--adapter keep|warm|retrain] [--schema S] [--threads 2]

The labels files are JSONL as dataset.py reads them ({"id", "text", "records": [...]}, what annotation
in the playground writes). The original labels are the bundle's training data (data/tianchi, less the
seeded dev split the bundle was trained without, as train_tagger.py splits it); --original FILE
--original-dev-fraction 0 takes a labels file whole (measure_teach_adapter.py's S_k); --original none
trains on the new labels alone (a schema of another domain, from an untrained head).

A review labelled again wins over the original: a new labelled review whose text is exactly that of an
original review replaces it, and within the new files a later file's (or line's) label of a text wins.
Reviews are matched by text, not id: a user's ids number their own file, not Tianchi's.

--adapter retrain (the default): the label stage of train_tagger.py, a new adapter and head over the
bundle's base, for EPOCHS["retrain"] (3) epochs rather than the recipe's 5, so that the bundled default
plus 500 new labels trains within 10 minutes on 2 cores; on the folds it buys about +0.01 F1 over keep
(train/README.md). --adapter keep: the bundle's base and adapter are the trunk, kept as they are; their
states are computed once and the head (dense part, feature tables, lexicon, memory, polarity prior) is
trained on them: about 3 minutes, but what the new labels teach the trunk is lost. --adapter warm: the
bundle's adapter trained on from where it stands, with a new head, for EPOCHS["warm"] (2) epochs (on the
folds a quarter of retrain's gain). The new bundle holds base/ (copied), adapter/ and head/, and
teach_log.json (what was trained on, the time). Progress is printed as the training goes: each epoch
with its loss and the time left.
"""

import argparse
import json
import os
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import dataset as DS  # noqa: E402


def read_new(paths, schema):
    """[(id, text, records)] of the labels files, a later label of a text winning; ids made unique
    across files ("FILE_INDEX:ID")."""
    by_text = {}
    report = DS.Report(False)
    for k, path in enumerate(paths):
        for r in DS.read([path], schema, report):
            if r.labelled():
                by_text.pop(r.text, None)  # the later label, at the later place
                by_text[r.text] = (f"{k}:{r.id}", r.text, list(r.records))
    msg = report.summary()
    if msg:
        print(msg, file=sys.stderr)
    return list(by_text.values())


def merge(original, new):
    """The original labelled reviews whose text no new label has, then the new ones: (train, replaced)."""
    texts = {t for _, t, _ in new}
    kept = [r for r in original if r[1] not in texts]
    return kept + new, len(original) - len(kept)


ADAPTERS = ("keep", "warm", "retrain")
ADAPTER = "retrain"  # the default: on the folds a new adapter pays (train/README.md, measure_teach_adapter.py)
# epochs when --epochs is not given (keep: the bundle's own, 5). A new adapter in 3, not the recipe's 5:
# the bundled default plus 500 labels is 573 steps then, within 10 minutes on 2 cores (955 steps at 5 are
# not), and on the folds 3 epochs keep the gain; a trained adapter continued in 2.
EPOCHS = {"warm": 2, "retrain": 3}

# the label-stage options a bundle's train_log.json records and a retrain takes over
RECIPE = ("lora_r", "lora_alpha", "lora_lr", "head_lr", "sparse_lr", "link_dim", "drop", "features", "deep",
          "jackknife", "polarity_prior", "batch", "epochs")


def recipe_args(run, argv=()):
    """train_tagger.py's options of the label stage at their defaults (the bundled default's recipe, as
    kfold.py takes them), argv applied, writing to run."""
    import train_tagger as TT
    ap = argparse.ArgumentParser()
    TT.common_args(ap, data=False)
    DS.add_args(ap)
    TT.label_args(ap)
    TT.sentiment.polarity_args(ap)
    return ap.parse_args(["--out", run] + list(argv))


def train_args(bundle, run, adapter, threads, epochs, seed):
    """train_tagger.py's options for the label stage, as the bundle was trained (its train_log.json),
    with the trunk kept (--adapter keep), its adapter trained on (warm) or a new adapter (retrain)."""
    a = recipe_args(run)
    try:
        with open(os.path.join(bundle, "train_log.json"), encoding="utf-8") as f:
            was = json.load(f).get("args", {})
    except (OSError, ValueError):
        was = {}
    for k in RECIPE:
        if k in was and hasattr(a, k):
            setattr(a, k, was[k])
    with open(os.path.join(bundle, "head", "head.json"), encoding="utf-8") as f:
        head = json.load(f)
    a.min_confidence = head.get("min_confidence")
    a.features = 1 if "features" in head else 0
    a.threads, a.seed = threads, seed
    if epochs:
        a.epochs = epochs
    elif adapter in EPOCHS:
        a.epochs = EPOCHS[adapter]
    if adapter in ("keep", "warm"):
        a.lora_r, a.trunk_adapter = 0, os.path.join(bundle, "adapter")
        a.continue_adapter = adapter == "warm"
    return a


def train_stage(a, base, schema, train, record, run, name="label"):
    """The label stage of options a over base on train [(id, text, records)], saved as run/adapter and
    run/head (the adapter naming ../base); its record (steps, seconds) goes to record[name]."""
    import torch
    import train_tagger as TT
    import tagging
    torch.manual_seed(a.seed)
    torch.set_num_threads(a.threads)
    meta = TT.schema_template(tagging.load_template(a.template), schema)
    if not a.features:
        meta.pop("features", None)
    model, head = TT.label_stage(a, base, meta, schema.labels(), train, record, name)
    TT.save_stage(model, head, meta, schema.labels(), run, "../base")


def write_bundle(bundle, run, out, adapter, record):
    """out/ from the bundle's base, the kept or new adapter and the new head, written beside and
    renamed into place (a failed run leaves no half bundle)."""
    tmp = out.rstrip("/") + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(os.path.join(bundle, "base"), os.path.join(tmp, "base"))
    shutil.copytree(os.path.join(bundle if adapter == "keep" else run, "adapter"), os.path.join(tmp, "adapter"))
    cfg_path = os.path.join(tmp, "adapter", "adapter_config.json")
    with open(cfg_path) as f:
        cfg = json.load(f)
    cfg["base_model_name_or_path"] = "../base"
    with open(cfg_path, "w") as f:
        json.dump(cfg, f, indent=2)
    shutil.copytree(os.path.join(run, "head"), os.path.join(tmp, "head"))
    with open(os.path.join(tmp, "teach_log.json"), "w", encoding="utf-8") as f:
        json.dump(record, f, ensure_ascii=False, indent=2)
    if os.path.isdir(out):
        shutil.rmtree(out)
    os.replace(tmp, out)


def teach(bundle, labels, out, original=DS.TIANCHI, adapter=ADAPTER, schema_path=DS.SCHEMA, threads=2,
          epochs=0, seed=0, log=print, original_dev=DS.DEV_FRACTION):
    """Train and write the new bundle; returns its record (teach_log.json). original_dev: the dev
    fraction left out of the original labels (the bundle's split; 0: every review of them)."""
    t0 = time.time()
    schema = DS.Schema(schema_path)
    new = read_new(labels, schema)
    if not new:
        raise DS.DataError(f"{', '.join(labels)}: no labelled review to train on")
    orig = []
    if original != "none":
        ns = argparse.Namespace(data=[original], schema=schema_path, strict=False, dev=None,
                                dev_fraction=original_dev, dev_seed=DS.DEV_SEED)
        orig = DS.load(ns).labelled("train")
    train, replaced = merge(orig, new)
    log(f"teach: {len(orig)} original labelled reviews, {len(new)} new ({replaced} of them relabel an original), "
        f"{len(train)} to train on; adapter {adapter}")
    run = out.rstrip("/") + ".run"
    shutil.rmtree(run, ignore_errors=True)
    os.makedirs(run)
    a = train_args(bundle, run, adapter, threads, epochs, seed)
    record = {"bundle": bundle, "labels": list(labels), "original": original, "adapter": adapter,
              "reviews": {"original": len(orig), "new": len(new), "replaced": replaced, "trained": len(train)},
              "threads": threads, "epochs": a.epochs}
    train_stage(a, os.path.join(bundle, "base"), schema, train, record, run)
    record["seconds"] = round(time.time() - t0, 1)
    write_bundle(bundle, run, out, adapter, record)
    shutil.rmtree(run, ignore_errors=True)
    log(f"teach: wrote {out} in {record['seconds']} s")
    return record


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--bundle", required=True, help="the bundle to start from (base/, adapter/, head/)")
    ap.add_argument("--labels", required=True, nargs="+", help="labels files (JSONL, dataset.py's format)")
    ap.add_argument("--out", required=True, help="the new bundle's folder (replaced if it exists)")
    ap.add_argument("--original", default=DS.TIANCHI,
                    help="the bundle's own labels (dataset.py's formats; default data/tianchi), or none")
    ap.add_argument("--adapter", choices=ADAPTERS, default=ADAPTER,
                    help=f"retrain (the default): a new adapter and head ({EPOCHS['retrain']} epochs); keep: the "
                         "bundle's adapter, the head retrained on its states (faster, learns less); warm: the "
                         f"bundle's adapter trained on with a new head ({EPOCHS['warm']} epochs)")
    ap.add_argument("--original-dev-fraction", type=float, default=DS.DEV_FRACTION,
                    help="the dev split left out of --original, as train_tagger.py split it (default 0.1, "
                         "seed 20261129); 0: train on every labelled review of it (a file of training reviews)")
    ap.add_argument("--schema", default=DS.SCHEMA)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=0,
                    help=f"0: {EPOCHS['retrain']} with --adapter retrain, {EPOCHS['warm']} with warm, the bundle's "
                         "own (5) with keep")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    for p in [a.bundle + "/base", a.bundle + "/adapter", a.bundle + "/head"]:
        if not os.path.isdir(p):
            raise SystemExit(f"teach.py: {p}: not found; --bundle takes a folder holding base/, adapter/, head/")
    try:
        import torch  # noqa: F401
    except ImportError:
        raise SystemExit("teach.py: PyTorch is needed (Debian: apt-get install python3-torch)")
    try:
        teach(a.bundle, a.labels, a.out, a.original, a.adapter, a.schema, a.threads, a.epochs, a.seed,
              original_dev=a.original_dev_fraction)
    except DS.DataError as e:
        raise SystemExit(f"teach.py: {e}")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""The rates `pocketdec summarize` corrects its counts with, written into a bundle (calibration.json).

  calibration.py --kfold KDIR --out models/tianchi [--pocketdec build/cli/pocketdec]
  calibration.py --labels LABELS --records RECORDS --out DIR

From kfold.py's out-of-fold predictions (KDIR/pooled_Result.csv: every fold's reviews extracted by the
model trained without them; KDIR/pooled_gold.csv: their gold lines), or from any labelled reviews and the
records the bundle's model wrote for them (reviews it did not train on). The rates are measured by the
command itself (`pocketdec summarize --calibrate ... --save-calibration`), so one rule counts them.
package.py --kfold KDIR calls this after packaging. Prints each entry's support (its gold records) and the
rates the command uses for it (its own, or its polarity's when its support is under --min-support).
"""

import argparse
import json
import os
import subprocess
import sys


def run(pocketdec, *args):
    p = subprocess.run([pocketdec, "summarize", *args], capture_output=True, text=True)
    if p.returncode:
        raise SystemExit(f"calibration.py: {p.stderr.strip()}")
    return p.stdout


def write(out, labels, records, pocketdec="build/cli/pocketdec", source=None):
    """out/calibration.json from labels and the model's records over those reviews (its "source": source,
    else the labels' path); its path."""
    path = os.path.join(out, "calibration.json")
    run(pocketdec, "--records", records, "--calibrate", labels, "--calibrate-records", records, "--save-calibration",
        path, "--json", os.devnull)
    if source:
        with open(path, encoding="utf-8") as f:
            cal = json.load(f)
        cal["source"] = source
        with open(path, "w", encoding="utf-8") as f:
            json.dump(cal, f, ensure_ascii=False, indent=1)
            f.write("\n")
    return path


def kfold_source(kdir):
    """What a calibration from kfold.py's folds was measured on, for its "source"."""
    try:
        with open(os.path.join(kdir, "kfold.json"), encoding="utf-8") as f:
            k = json.load(f)
        folds = f"{k['folds']} folds (seed {k['args'].get('fold_seed')}) of "
    except (OSError, ValueError, KeyError):
        folds = ""
    return (f"train/kfold.py's out-of-fold records: {folds}the labelled training reviews, each fold's extracted by "
            "pocketdec with the label stage trained on the other folds over the bundle's base "
            "(pooled_Result.csv), against their gold lines of train_labels.csv (pooled_gold.csv)")


def supports(records, path, pocketdec, min_support):
    """[(category or None, polarity, its own support, rates used, precision, recall)] of the entries the
    records reach, as `pocketdec summarize --calibration path` uses them (a cell's own support: its gold
    records in the calibration; "support" in the summary is that of the rates used)."""
    with open(path, encoding="utf-8") as f:
        own = {(c.get("category"), c["polarity"]): c["gold"] for c in json.load(f)["cells"]}
    s = json.loads(run(pocketdec, "--records", records, "--calibration", path, "--min-support", str(min_support)))
    es = [dict(e, category=None) for e in s["polarity"].values()] + s["cells"]
    es.sort(key=lambda e: (e["category"] is not None, e["polarity"], -own.get((e["category"], e["polarity"]), 0)))
    return [(e["category"], e["polarity"], own.get((e["category"], e["polarity"]), 0), e["rates"], e["precision"],
             e["recall"]) for e in es]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--kfold", help="kfold.py's --out: pooled_gold.csv and pooled_Result.csv")
    ap.add_argument("--labels")
    ap.add_argument("--records")
    ap.add_argument("--out", required=True, help="the bundle folder")
    ap.add_argument("--pocketdec", default="build/cli/pocketdec")
    ap.add_argument("--min-support", type=int, default=20, help="summarize's default, for the printed table")
    a = ap.parse_args(argv)
    source = None
    if a.kfold:
        a.labels, a.records = os.path.join(a.kfold, "pooled_gold.csv"), os.path.join(a.kfold, "pooled_Result.csv")
        source = kfold_source(a.kfold)
    if not a.labels or not a.records:
        ap.error("--kfold KDIR, or --labels and --records")
    path = write(a.out, a.labels, a.records, a.pocketdec, source)
    print(path)
    print("entry | support | rates | precision | recall")
    for c, p, n, which, pr, r in supports(a.records, path, a.pocketdec, a.min_support):
        rates = f"{pr:.3f} | {r:.3f}" if pr is not None else "- | -"
        print(f"{c or '(all)'} / {p} | {n:g} | {which} | {rates}")


if __name__ == "__main__":
    sys.exit(main())

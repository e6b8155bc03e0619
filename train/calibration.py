#!/usr/bin/python3
"""The rates `pocketdec summarize` corrects its counts with, written into a bundle (calibration.json).

  calibration.py --kfold KDIR --out models/tianchi [--pocketdec build/cli/pocketdec]
  calibration.py --labels LABELS --records RECORDS --out DIR

From kfold.py's out-of-fold predictions (KDIR/pooled_Result.csv: every fold's reviews extracted by the
model trained without them; KDIR/pooled_gold.csv: their gold lines), or from any labelled reviews and the
records the bundle's model wrote for them (reviews it did not train on). The rates are measured by the
command itself (`pocketdec summarize --calibrate ... --save-calibration`), so one rule counts them.
package.py --kfold KDIR calls this after packaging.
"""

import argparse
import os
import subprocess
import sys


def write(out, labels, records, pocketdec="build/cli/pocketdec"):
    """out/calibration.json from labels and the model's records over those reviews; its path."""
    path = os.path.join(out, "calibration.json")
    p = subprocess.run([pocketdec, "summarize", "--records", records, "--calibrate", labels, "--calibrate-records",
                        records, "--save-calibration", path, "--json", os.devnull], capture_output=True, text=True)
    if p.returncode:
        raise SystemExit(f"calibration.py: {p.stderr.strip()}")
    return path


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--kfold", help="kfold.py's --out: pooled_gold.csv and pooled_Result.csv")
    ap.add_argument("--labels")
    ap.add_argument("--records")
    ap.add_argument("--out", required=True, help="the bundle folder")
    ap.add_argument("--pocketdec", default="build/cli/pocketdec")
    a = ap.parse_args(argv)
    if a.kfold:
        a.labels, a.records = os.path.join(a.kfold, "pooled_gold.csv"), os.path.join(a.kfold, "pooled_Result.csv")
    if not a.labels or not a.records:
        ap.error("--kfold KDIR, or --labels and --records")
    print(write(a.out, a.labels, a.records, a.pocketdec))


if __name__ == "__main__":
    sys.exit(main())

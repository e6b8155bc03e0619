#!/usr/bin/python3
"""train/measure_summary.py --kfold on three tiny folds: each fold is corrected by the rates of the OTHER
folds' out-of-fold records only (hand-worked below), dev (two reviews, extracted by the bundle) by all.

  test_measure_summary.py POCKETDEC SOURCE_ROOT"""
import json
import os
import subprocess
import sys
import tempfile

HEADER = "id,AspectTerms,A_start,A_end,OpinionTerms,O_start,O_end,Categories,Polarities\n"


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def main():
    exe, root = sys.argv[1], sys.argv[2]
    d = tempfile.mkdtemp(prefix="measure-summary-")
    kdir = os.path.join(d, "kfold")
    # fold k: one review, its records (价格/负面) and gold (the first of each correct):
    #   fold 0: 2 found, 4 gold   fold 1: 1 found, 3 gold   fold 2: 3 found, 3 gold (+ in each a review
    #   with one 正面 record, found: every calibration knows the polarity)
    # fold 0 with folds 1 and 2's rates: 2 x (3 + 3) / (1 + 3) = 3.0 (with its own too: 2 x 10 / 6 = 3.33)
    # fold 1: 1 x (4 + 3) / (2 + 3) = 1.4; fold 2: 3 x (4 + 3) / (2 + 1) = 7.0
    for k, (i, found, gold) in enumerate([(1, 2, 4), (2, 1, 3), (3, 3, 3)]):
        rows = "".join(f"{i},_,贵{j},价格,负面\n" for j in range(found)) + f"{9 + k},_,好,整体,正面\n"
        write(os.path.join(kdir, f"fold{k}", "Result.csv"), rows)
        write(os.path.join(kdir, f"fold{k}", "gold.csv"), HEADER + "".join(
            f"{i},_, , ,贵{j},0,1,价格,负面\n" for j in range(gold)) + f"{9 + k},_, , ,好,0,1,整体,正面\n")
    reviews = write(os.path.join(d, "dev_reviews.csv"), "id,Reviews\n1,价格太贵了，不值\n2,很好用，物流很快\n")
    labels = write(os.path.join(d, "dev_labels.csv"), HEADER + "1,价格,0,2,太贵,2,4,价格,负面\n2,_, , ,很好用,0,3,整体,正面\n"
                   "2,物流,4,6,很快,6,8,物流,正面\n")
    out = os.path.join(d, "out")
    p = subprocess.run([sys.executable, os.path.join(root, "train", "measure_summary.py"), "--pocketdec", exe,
                        "--model", os.path.join(root, "models", "tianchi"), "--schema",
                        os.path.join(root, "schemas", "tianchi-makeup.yaml"), "--reviews", reviews, "--labels", labels,
                        "--kfold", kdir, "--out", out], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    m = json.load(open(os.path.join(out, "measure.json"), encoding="utf-8"))
    want = [(2, 2, 4, 3.0), (2, 1, 3, 1.4), (2, 3, 3, 7.0)]
    assert len(m["folds"]) == 3, m["folds"]
    for fo, (n, raw, gold, est) in zip(m["folds"], want):
        e = fo["polarity"]["负面"]
        assert (fo["reviews"], e["raw"], e["gold"]) == (n, raw, gold), fo
        assert abs(e["estimate"] - est) < 1e-9 and abs(e["error"] - (est - gold) / gold) < 1e-9, fo
    # only the cells with >= 5 gold in their fold are scored: none here
    assert m["cells"] == [], m["cells"]
    # dev: its 2 reviews against their gold, corrected by all three folds' rates (4 + 3 + 3) / (2 + 1 + 3)
    assert m["dev"]["reviews"] == 2 and m["dev"]["polarity"]["正面"]["gold"] == 2, m["dev"]
    neg = m["dev"]["polarity"]["负面"]
    assert neg["gold"] == 1 and abs(neg["estimate"] - round(neg["raw"] * 10 / 6, 2)) < 1e-9, neg
    assert "fold | reviews" in p.stdout and "dev (2 reviews)" in p.stdout, p.stdout
    # a folder without folds: a message, not a traceback
    p = subprocess.run([sys.executable, os.path.join(root, "train", "measure_summary.py"), "--pocketdec", exe,
                        "--model", os.path.join(root, "models", "tianchi"), "--kfold", d, "--out", out],
                       capture_output=True, text=True)
    assert p.returncode != 0 and "no fold0/Result.csv" in p.stderr, p.stderr
    print("ok")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Write the dev split of the labelled Tianchi reviews (run once; its outputs are committed).

  split.py [--data data/tianchi]

dev_ids.txt: one id a line; dev_reviews.csv and dev_labels.csv: the original lines of
train_reviews.csv and train_labels.csv for those ids, byte for byte, with their headers.
"""

import argparse
import csv
import io
import os

import data as D


def filter_lines(path, keep):
    """Header plus the raw lines (quoting untouched) whose first field is a kept id."""
    with open(path, encoding="utf-8", newline="") as f:
        lines = f.read().splitlines(keepends=True)
    out = [lines[0]]
    for line in lines[1:]:
        rid = int(next(csv.reader(io.StringIO(line)))[0])
        if rid in keep:
            out.append(line)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=D.DATA)
    a = ap.parse_args()
    ids = [i for i, _ in D.read_reviews(os.path.join(a.data, "train_reviews.csv"))]
    dev = set(D.split_ids(ids))
    with open(os.path.join(a.data, "dev_ids.txt"), "w") as f:
        f.writelines(f"{i}\n" for i in sorted(dev))
    for src, dst in [("train_reviews.csv", "dev_reviews.csv"), ("train_labels.csv", "dev_labels.csv")]:
        with open(os.path.join(a.data, dst), "w", encoding="utf-8", newline="") as f:
            f.writelines(filter_lines(os.path.join(a.data, src), dev))
    print(f"dev split: {len(dev)} of {len(ids)} labelled reviews")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""The quadruples of a CSV of reviews (id,Reviews) as a Tianchi submission, by the bundled
model (one forward pass a review, two at a time), then its F1 when gold labels are given.

    PYTHONPATH=python python3 examples/python/extract_csv.py data/tianchi/dev_reviews.csv Result.csv \
        data/tianchi/dev_labels.csv
"""
import csv
import sys

import pocketdec

with open(sys.argv[1], encoding="utf-8", newline="") as f:
    rows = [row for row in csv.reader(f) if row and row[0] != "id"]
with pocketdec.Model("models/tianchi", threads=1) as model, \
        pocketdec.Extractor(model, "schemas/tianchi-makeup.yaml") as extractor, \
        open(sys.argv[2], "w", encoding="utf-8", newline="") as out:
    writer = csv.writer(out, lineterminator="\n")
    for (rid, _), records in zip(rows, extractor.extract_many((text for _, text in rows), parallel=2)):
        writer.writerows([[rid, *r.values()] for r in records] or [[rid, "_", "_", "_", "_"]])
if len(sys.argv) > 3:
    print(pocketdec.tianchi_eval.score(sys.argv[3], sys.argv[2])["overall"])

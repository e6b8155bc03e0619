"""Tianchi makeup reviews: readers, the seeded dev split, label sets.

The dev split is a fixed, seeded 10% of the 2,829 labelled reviews (data/tianchi/dev_ids.txt,
written by split.py); training code gets reviews through train_reviews(), which leaves it out.
"""

import csv
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(os.path.dirname(HERE), "data", "tianchi")

CATEGORIES = ["包装", "成分", "尺寸", "服务", "功效", "价格", "气味", "使用体验", "物流",
              "新鲜度", "真伪", "整体", "其他"]
POLARITIES = ["正面", "中性", "负面"]
DEV_FRACTION = 0.10
DEV_SEED = 20261129


def read_reviews(path):
    """[(id, text)] in file order from an `id,Reviews` CSV."""
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    if not rows or rows[0] != ["id", "Reviews"]:
        raise ValueError(f"{path}: expected the header id,Reviews")
    return [(int(r[0]), r[1]) for r in rows[1:]]


def first_offset(row):
    """Where a label row's quadruple starts in its review: the smaller of A_start and O_start
    that is given (an implicit `_` field has blank offsets); None when neither is."""
    starts = [int(x) for x in (row[2], row[5]) if x.strip().isdigit()]
    return min(starts) if starts else None


def read_labels(path):
    """{id: [(aspect, opinion, category, polarity)]} from a train_labels.csv-style file, each
    review's quadruples in reading order (by first_offset; ties and quadruples without
    offsets keep the file's order, the latter after the others). The file's own order is
    arbitrary for a quarter of the reviews; reading order lets a model copy its spans in one
    left-to-right pass over the review."""
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    if not rows or rows[0][0] != "id" or len(rows[0]) != 9:
        raise ValueError(f"{path}: expected the 9-column train_labels.csv header")
    keyed = {}
    for r in rows[1:]:
        at = first_offset(r)
        keyed.setdefault(int(r[0]), []).append((at is None, at or 0, (r[1], r[4], r[7], r[8])))
    return {i: [q for _, _, q in sorted(qs, key=lambda k: k[:2])] for i, qs in keyed.items()}


def split_ids(ids, fraction=DEV_FRACTION, seed=DEV_SEED):
    """The dev ids: a seeded sample of `fraction` of `ids`, sorted."""
    ids = sorted(ids)
    n = round(len(ids) * fraction)
    return sorted(random.Random(seed).sample(ids, n))


def dev_ids(data=DATA):
    with open(os.path.join(data, "dev_ids.txt")) as f:
        return {int(line) for line in f if line.strip()}


def labelled(data=DATA, split="train"):
    """[(id, text, quads)] of the labelled reviews in `split` ("train": all but dev, "dev", "all")."""
    reviews = read_reviews(os.path.join(data, "train_reviews.csv"))
    labels = read_labels(os.path.join(data, "train_labels.csv"))
    dev = dev_ids(data) if split != "all" else set()
    keep = {"train": lambda i: i not in dev, "dev": lambda i: i in dev, "all": lambda i: True}[split]
    return [(i, t, labels.get(i, [])) for i, t in reviews if keep(i)]


def all_text(data=DATA):
    """Every review text but the dev split's: the labelled training reviews and the test
    reviews (no labels are read). Dev text stays out of the tokenizer and the base too, so
    the dev figures are those of reviews the model has never seen."""
    dev = dev_ids(data)
    return [t for i, t in read_reviews(os.path.join(data, "train_reviews.csv")) if i not in dev] + \
           [t for _, t in read_reviews(os.path.join(data, "test_reviews.csv"))]

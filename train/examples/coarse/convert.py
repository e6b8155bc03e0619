#!/usr/bin/python3
"""Write the Tianchi labelled reviews as JSONL for coarse.yaml (train/README.md, "Training on your own
reviews"): the same spans under the names target and expression, the 13 categories mapped to 4 topics
and the polarities to 好评 / 中评 / 差评.

  convert.py OUT.jsonl [--data data/tianchi] [--limit N] [--no-topic]

The Tianchi CSV pair is read (and checked) by train/dataset.py with the Tianchi schema; the records
are mapped field by field and written one review a line, so train_tagger.py --data OUT.jsonl
--schema train/examples/coarse/coarse.yaml trains a head of the coarse fields and labels. With
--no-topic the records have three fields (no topic), for sentiment.yaml.
"""

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))
import dataset as DS  # noqa: E402

TOPIC = {"成分": "商品", "尺寸": "商品", "功效": "商品", "气味": "商品", "使用体验": "商品", "新鲜度": "商品",
         "真伪": "商品", "包装": "物流服务", "服务": "物流服务", "物流": "物流服务", "价格": "价格", "整体": "整体",
         "其他": "整体"}
SENTIMENT = {"正面": "好评", "中性": "中评", "负面": "差评"}


def convert(reviews, topic=True):
    """JSON lines of Reviews read with the Tianchi schema (records: aspect, a_start, a_end, opinion,
    o_start, o_end, category, polarity)."""
    for r in reviews:
        recs = []
        for a, a0, a1, o, o0, o1, cat, pol in r.records:
            recs.append({"target": None if a0 is None else {"text": a, "start": a0, "end": a1},
                         "expression": None if o0 is None else {"text": o, "start": o0, "end": o1},
                         "topic": TOPIC[cat], "sentiment": SENTIMENT[pol]})
            if not topic:
                del recs[-1]["topic"]
        yield json.dumps({"id": r.id, "text": r.text, "records": recs}, ensure_ascii=False)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--data", default=DS.TIANCHI)
    ap.add_argument("--limit", type=int, default=0, help="the first N reviews only")
    ap.add_argument("--no-topic", action="store_true", help="three fields: leave the topic out (sentiment.yaml)")
    a = ap.parse_args(argv)
    reviews = DS.read(a.data, DS.Schema(DS.SCHEMA), DS.Report(strict=True))
    if a.limit:
        reviews = reviews[:a.limit]
    with open(a.out, "w", encoding="utf-8") as f:
        for line in convert(reviews, not a.no_topic):
            f.write(line + "\n")
    print(f"{a.out}: {len(reviews)} reviews")


if __name__ == "__main__":
    main()

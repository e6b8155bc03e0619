#!/usr/bin/python3
"""Write the extraction test fixtures: a tiny random Qwen3 model that carries
the real Qwen3 tokenizer (so the mask runs over the real 151K vocabulary), and
a random LoRA adapter for it, and the train reviews as JSONL read by Python's csv module (an independent reader).

Usage: make_fixtures.py SRCDIR OUTDIR STAMP
"""
import csv
import json
import os
import subprocess
import sys


def main():
    src, out, stamp = sys.argv[1], os.path.abspath(sys.argv[2]), sys.argv[3]
    root = os.path.dirname(os.path.dirname(os.path.abspath(src)))
    os.makedirs(out, exist_ok=True)
    subprocess.run([sys.executable, os.path.join(root, "tools", "testmodels", "make_model.py"),
                    "--layers", "1", "--hidden", "32", "--heads", "2", "--kv-heads", "1", "--head-dim", "16",
                    "--ffn", "64", "--vocab", "151936", "--max-pos", "4096", "--format", "hf-bf16", "--seed", "61",
                    "--tokenizer", os.path.join(root, "tests", "fixtures", "qwen3", "tokenizer.json"),
                    "--out", os.path.join(out, "tiny-qwen3"), "--quiet"], check=True, stdout=subprocess.DEVNULL)
    # a random LoRA adapter for the model, to check that extract applies --adapter
    subprocess.run([sys.executable, os.path.join(root, "tools", "testmodels", "make_adapter.py"), "write",
                    "--model", os.path.join(out, "tiny-qwen3"), "--out", os.path.join(out, "adapter"),
                    "--rank", "4", "--alpha", "16", "--seed", "5", "--quiet"], check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(src, "data", "train_reviews.csv"), newline="", encoding="utf-8") as f, \
            open(os.path.join(out, "train_reviews.jsonl"), "w", encoding="utf-8") as g:
        rows = list(csv.reader(f))
        assert rows[0] == ["id", "Reviews"], rows[0]
        for row in rows[1:]:
            g.write(json.dumps({"id": row[0], "text": row[1]}, ensure_ascii=False) + "\n")
    with open(stamp, "w") as f:
        f.write("ok\n")


if __name__ == "__main__":
    main()

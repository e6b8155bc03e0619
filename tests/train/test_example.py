#!/usr/bin/python3
"""The second worked example (train/examples/coarse/): training on data of other fields and labels
through the generic path, run by meson.

  test_example.py POCKETDEC SOURCE_ROOT

Without torch the test exits 77 (meson: skipped). Checks, on the first 80 Tianchi reviews converted
by convert.py (fields target/expression/topic/sentiment, 4 topics, 好评/中评/差评; and with
--no-topic, three fields for sentiment.yaml):
  - train_tagger.py --data JSONL --schema coarse.yaml (a tiny model, a few steps) writes the head
    files; head.json names the schema's span fields, link and label fields and its 12 joint labels in
    schema order (3 for sentiment.yaml); memory.tsv and lexicon.tsv hold the new fields and values;
  - pocketdec extract --schema coarse.yaml (sentiment.yaml) with the trained base, adapter and head
    runs on the dev reviews: every label it writes is a value of the schema, every span is text of
    its review, and its rows are the Python decode's (dev_python_Result.csv);
  - kfold.py on the same JSONL (2 folds) scores through pocketdec and the schema-generic scorer;
  - --strict stops train_tagger.py at the first bad record, before any training.
"""

import csv
import json
import os
import subprocess
import sys
import tempfile

POCKETDEC, ROOT = sys.argv[1:3]
SANITIZED = bool(os.environ.get("POCKETDEC_SANITIZED"))
EXAMPLE = os.path.join(ROOT, "train", "examples", "coarse")
SCHEMA = os.path.join(EXAMPLE, "coarse.yaml")
sys.path.insert(0, os.path.join(ROOT, "train"))
import dataset as DS  # noqa: E402

TINY = ["--seed", "3", "--threads", "1", "--hidden", "64", "--layers", "2", "--heads", "4", "--kv-heads", "2",
        "--head-dim", "16", "--ffn", "96", "--batch", "4", "--lora-r", "4", "--link-dim", "8", "--lr", "5e-3"]


def train_and_check(tmp, name, schema_path, convert_args, label_fields):
    """Convert, train a tiny tagger on the example's JSONL, check its head and pocketdec extract with
    the example's schema; (the JSONL path, the run directory)."""
    import train_tagger
    schema = DS.Schema(schema_path)
    data = os.path.join(tmp, name + ".jsonl")
    subprocess.run([sys.executable, os.path.join(EXAMPLE, "convert.py"), data, "--limit", "80"] + convert_args,
                   check=True)
    out = os.path.join(tmp, name)
    train_tagger.main(["--data", data, "--schema", schema_path, "--dev-fraction", "0.25", "--out", out,
                       "--base-steps", "30", "--epochs", "2",
                       "--dev-through-pocketdec", "0" if SANITIZED else "1"] + TINY)
    for f in ("base/model.safetensors", "adapter/adapter_model.safetensors", "head/head.json",
              "head/head.safetensors", "head/lexicon.tsv", "head/memory.tsv"):
        assert os.path.exists(os.path.join(out, f)), f"{f} was not written"
    head = json.load(open(os.path.join(out, "head", "head.json"), encoding="utf-8"))
    assert head["spans"] == ["target", "expression"], head["spans"]
    assert head["link"]["from"] == "expression" and head["link"]["to"] == "target", head["link"]
    assert head["label_fields"] == label_fields, head["label_fields"]
    assert [tuple(x) for x in head["labels"]] == schema.labels()
    assert "text.target" in head["features"]["label"]["templates"], head["features"]["label"]["templates"]
    assert not [t for d in ("tag", "label") for t in head["features"][d]["templates"]
                if "aspect" in t or "opinion" in t]
    with open(os.path.join(out, "head", "memory.tsv"), encoding="utf-8") as f:
        mem = [line.rstrip("\n").split("\t") for line in f if line.strip()]
    assert mem and all(len(m) == 2 + len(label_fields) for m in mem)
    assert all(v in schema.values[f] for m in mem for f, v in zip(label_fields, m[2:]))
    with open(os.path.join(out, "head", "lexicon.tsv"), encoding="utf-8") as f:
        assert {line.split("\t")[0] for line in f if not line.startswith("#")} <= {"target", "expression"}
    log = json.load(open(os.path.join(out, "train_log.json"), encoding="utf-8"))
    assert log["data"]["schema"] == schema.name and log["data"]["dev"] == 20, log["data"]

    # pocketdec extract with the example's schema on the dev reviews
    reviews = DS.read(data, schema, DS.Report(strict=True))
    dev_ids = set(DS.split_ids([r.id for r in reviews], 0.25))
    dev = [(r.id, r.text) for r in reviews if r.id in dev_ids]
    inp, got = os.path.join(tmp, name + "_dev.csv"), os.path.join(tmp, name + "_dev_Result.csv")
    with open(inp, "w", encoding="utf-8", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows([("id", "Reviews")] + dev)
    r = subprocess.run([POCKETDEC, "extract", "--model", os.path.join(out, "base"), "--adapter",
                        os.path.join(out, "adapter"), "--head", os.path.join(out, "head"), "--schema", schema_path,
                        "--input", inp, "--output", got], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    text = dict((str(i), t) for i, t in dev)
    rows = list(csv.reader(open(got, encoding="utf-8", newline="")))
    records = [x for x in rows if any(v != "_" for v in x[1:])]
    assert records, "the trained head wrote no record on the dev reviews"
    for x in rows:
        assert len(x) == 3 + len(label_fields) and x[0] in text, x
        assert all(v in schema.values[f] + ["_"] for f, v in zip(label_fields, x[3:])), x
        assert all(v == "_" or v in text[x[0]] for v in x[1:3]), x
    assert open(got, encoding="utf-8").read() == \
        open(os.path.join(out, "dev_python_Result.csv"), encoding="utf-8").read(), \
        "pocketdec extract and the Python decode disagree"
    print(f"ok: {name}: {len(records)} records on {len(dev)} dev reviews, every label in {schema_path}")
    return data, out


def main():
    try:
        import torch  # noqa: F401
    except ImportError:
        print("SKIP: python3-torch is not installed; the example's training test did not run")
        sys.exit(77)
    import kfold
    import train_tagger
    with tempfile.TemporaryDirectory() as tmp:
        data, out = train_and_check(tmp, "coarse", SCHEMA, [], ["topic", "sentiment"])
        # three fields instead of four: one label field
        train_and_check(tmp, "sentiment", os.path.join(EXAMPLE, "sentiment.yaml"), ["--no-topic"], ["sentiment"])

        if not SANITIZED:  # kfold.py extracts through the library loaded into python3
            kf = os.path.join(tmp, "kfold")
            kfold.main(["--data", data, "--schema", SCHEMA, "--base", os.path.join(out, "base"), "--out", kf,
                        "--threads", "1", "--batch", "4", "--epochs", "1", "--lora-r", "4", "--link-dim", "8",
                        "--folds", "2", "--limit", "40"])
            s = json.load(open(os.path.join(kf, "kfold.json"), encoding="utf-8"))
            assert s["folds"] == 2 and s["pooled"]["gold"] > 0, s
            assert [p["label"] for p in s["pooled_polarities"]] == ["好评", "中评", "差评"], s["pooled_polarities"]
            print(f"ok: kfold.py on the coarse JSONL, 2 folds: F1 {s['mean']:.4f}")

        # --strict: the first bad record stops the run before training
        bad = os.path.join(tmp, "bad.jsonl")
        with open(bad, "w", encoding="utf-8") as f:
            f.write(json.dumps({"id": 1, "text": "好", "records": [
                {"target": None, "expression": {"text": "好", "start": 0, "end": 1}, "topic": "颜色",
                 "sentiment": "好评"}]}, ensure_ascii=False) + "\n")
        try:
            train_tagger.main(["--data", bad, "--schema", SCHEMA, "--strict", "--out", os.path.join(tmp, "no")] + TINY)
            raise AssertionError("--strict trained on bad data")
        except SystemExit as e:
            assert str(e.code) == f"train_tagger.py: {bad}:1: id 1, record 1: field 'topic': '颜色' is not a value " \
                                  f"of the schema (商品 物流服务 价格 整体)", e.code
        assert not os.path.exists(os.path.join(tmp, "no", "base"))
    print("ok: the coarse example trains through the generic path")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""train/teach.py: a bundle retrained on new labels, run by meson.

  test_teach.py POCKETDEC SOURCE_ROOT

Without torch the torch-free checks run and the test exits 77 (meson: skipped). Checks:
  - the rule of the new labels: a new label of an original review's text replaces it; within the new
    files the later label of a text wins, once, at its later place;
  - a tiny retrain (12 reviews, one epoch, the bundled default's trunk kept: --adapter keep) writes a
    bundle: base/ and adapter/ the bundle's bytes, a new head whose memory.tsv holds the new labels'
    pairs and nothing else, teach_log.json with the counts;
  - the default (--adapter retrain, one step) writes the bundle's base and a new adapter;
  - pocketdec extract opens each new bundle as a bundle (--model NEW: its base, adapter and head) and
    runs it: every line a review of the input, every label one of the schema, every span text of its
    review.
"""

import filecmp
import json
import os
import subprocess
import sys
import tempfile

POCKETDEC, ROOT = sys.argv[1:3]
sys.path.insert(0, os.path.join(ROOT, "train"))
import dataset as DS  # noqa: E402
import teach  # noqa: E402

BUNDLE = os.path.join(ROOT, "models", "tianchi")
SCHEMA = os.path.join(ROOT, "schemas", "tianchi-makeup.yaml")


def labels_line(r):
    recs = []
    for a, a0, a1, o, o0, o1, c, p in r.records:
        recs.append({"aspect": None if a == "_" else {"text": a, "start": a0, "end": a1},
                     "opinion": None if o == "_" else {"text": o, "start": o0, "end": o1},
                     "category": c, "polarity": p})
    return json.dumps({"id": r.id, "text": r.text, "records": recs}, ensure_ascii=False) + "\n"


def check_merge(tmp):
    orig = [(1, "包装很好", ["a"]), (2, "物流快", ["b"])]
    new = [("0:9", "物流快", ["c"]), ("0:3", "味道淡", [])]
    train, replaced = teach.merge(orig, new)
    assert replaced == 1 and train == [(1, "包装很好", ["a"]), ("0:9", "物流快", ["c"]), ("0:3", "味道淡", [])], train
    schema = DS.Schema(SCHEMA)
    first, second = os.path.join(tmp, "a.jsonl"), os.path.join(tmp, "b.jsonl")
    with open(first, "w", encoding="utf-8") as f:
        f.write('{"id": 1, "text": "很好", "records": []}\n{"id": 2, "text": "一般", "records": []}\n')
    with open(second, "w", encoding="utf-8") as f:
        f.write('{"id": 5, "text": "很好", "records": [{"aspect": null, "opinion": {"text": "很好", "start": 0, '
                '"end": 2}, "category": "整体", "polarity": "正面"}]}\n')
    got = teach.read_new([first, second], schema)
    assert [(i, t) for i, t, _ in got] == [("0:2", "一般"), ("1:5", "很好")], got
    assert got[1][2] == [("_", None, None, "很好", 0, 2, "整体", "正面")], got[1][2]
    print("ok: new labels win (by text), a later file's label of a text wins")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        check_merge(tmp)
        try:
            import torch  # noqa: F401
        except ImportError:
            print("SKIP: python3-torch is not installed; the retrain did not run")
            sys.exit(77)
        schema = DS.Schema(SCHEMA)
        reviews = DS.read([os.path.join(ROOT, "data", "tianchi")], schema, DS.Report(True))[:12]
        labels = os.path.join(tmp, "mine.jsonl")
        with open(labels, "w", encoding="utf-8") as f:
            f.writelines(labels_line(r) for r in reviews)
        out = os.path.join(tmp, "new")
        record = teach.teach(BUNDLE, [labels], out, original="none", adapter="keep", schema_path=SCHEMA, threads=1,
                             epochs=1)
        assert record["reviews"] == {"original": 0, "new": 12, "replaced": 0, "trained": 12}, record["reviews"]
        for sub, names in (("base", ("config.json", "model.safetensors", "tokenizer.json")),
                           ("adapter", ("adapter_model.safetensors",))):
            for n in names:
                assert filecmp.cmp(os.path.join(BUNDLE, sub, n), os.path.join(out, sub, n), shallow=False), (sub, n)
        with open(os.path.join(out, "head", "memory.tsv"), encoding="utf-8") as f:
            mem = {tuple(line.rstrip("\n").split("\t")[:2]) for line in f if line.strip() and not line.startswith("#")}
        pairs = {(q[0], q[3]) for r in reviews for q in r.records}
        assert mem and mem <= pairs, mem - pairs
        assert os.path.exists(os.path.join(out, "teach_log.json"))
        assert not os.path.exists(out + ".tmp") and not os.path.exists(out + ".run")
        extracts(tmp, out, reviews, schema)

        new = os.path.join(tmp, "new-adapter")  # the default: a new adapter
        record = teach.teach(BUNDLE, [labels], new, original="none", schema_path=SCHEMA, threads=1, epochs=1)
        assert record["adapter"] == "retrain" and record["epochs"] == 1, record
        adapter = os.path.join("adapter", "adapter_model.safetensors")
        assert filecmp.cmp(os.path.join(BUNDLE, "base", "model.safetensors"),
                           os.path.join(new, "base", "model.safetensors"), shallow=False)
        assert not filecmp.cmp(os.path.join(BUNDLE, adapter), os.path.join(new, adapter), shallow=False)
        extracts(tmp, new, reviews, schema)


def extracts(tmp, out, reviews, schema):
    """pocketdec extract on the bundle out: every line a review, every label the schema's, every span its text's."""
    inp, got = os.path.join(tmp, "in.csv"), os.path.join(tmp, "out.jsonl")
    with open(inp, "w", encoding="utf-8") as f:
        f.write("id,Reviews\n" + "".join(f"{r.id},{r.text}\n" for r in reviews if "," not in r.text))
    # --model NEW alone: the bundle's base, adapter and head
    r = subprocess.run([POCKETDEC, "extract", "--model", out, "--schema", SCHEMA,
                        "--input", inp, "--output", got, "--format", "jsonl",
                        "--min-confidence", "0", "--threads", "1"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    text = {str(x.id): x.text for x in reviews}
    lines = [json.loads(line) for line in open(got, encoding="utf-8")]
    assert len(lines) == sum(1 for x in reviews if "," not in x.text), len(lines)
    n = 0
    for line in lines:
        assert line["id"] in text, line
        for rec in line["records"]:
            n += 1
            assert rec["category"] in schema.values["category"] and rec["polarity"] in schema.values["polarity"]
            assert all(rec[k] == "_" or rec[k] in text[line["id"]] for k in ("aspect", "opinion")), rec
    print(f"ok: {os.path.basename(out)} extracts ({n} records on {len(lines)} reviews)")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Agreement of pocketdec with the PyTorch model on the bundled default (models/tianchi/).

  test_default.py POCKETDEC MODEL_DIR

MODEL_DIR/expected.json was written by train/package.py with the PyTorch forward of
train/qwen3.py (BF16 base widened to F32, LoRA applied unmerged). Checks:
  - token ids: pocketdec's tokenizer on the prompts' texts gives the ids torch was fed;
  - hidden states (every position) and last-position logits of pocketdec with --adapter, merged
    on load and applied at runtime, within 2e-5 of the largest |value| (F32 against F32: about 1e-6
    measured; the difference is printed);
  - pointer-head scores of a 10-candidate decision (parallel layout), same tolerance, and the
    decision's token sequence (a pointer head);
  - a tagger head (extraction by decisions): `pocketdec tag` on a few reviews, against
    train/tagging.py's decode: prompt ids, tags, spans and records exactly; emissions, link scores,
    label logits and span probabilities within the same tolerance;
  - with python3-torch installed, expected.json is reproduced from the packaged files (so the
    committed values cannot drift from the files they describe).
"""

import json
import os
import subprocess
import sys

POCKETDEC, MODEL = sys.argv[1:3]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOL = 2e-5


def run(args, stdin=None):
    p = subprocess.run(args, input=stdin, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(args[:3])}... exit {p.returncode}: {p.stderr.strip()}")
    return p.stdout


def flat(v):
    return [x for r in v for x in r] if v and isinstance(v[0], list) else list(v)


def close(got, want, what):
    got, want = flat(got), flat(want)
    assert len(got) == len(want), f"{what}: {len(got)} values, want {len(want)}"
    scale = max(abs(x) for x in want)
    err = max(abs(a - b) for a, b in zip(got, want))
    print(f"{what}: max |diff| {err:.3g} = {err / scale:.2g} of the largest |value| {scale:.3g}")
    assert err <= TOL * scale, f"{what}: max |diff| {err:g} > {TOL} * {scale:g}"


def main():
    with open(os.path.join(MODEL, "expected.json"), encoding="utf-8") as f:
        doc = json.load(f)
    base, adapter, head = (os.path.join(MODEL, d) for d in ("base", "adapter", "head"))
    texts = [p["text"] for p in doc["prompts"] if "hidden" in p]
    lines = run([POCKETDEC, "tokenize", "--tokenizer", os.path.join(base, "tokenizer.json")],
                "".join(json.dumps(t, ensure_ascii=False) + "\n" for t in texts)).splitlines()
    for p in doc["prompts"]:
        if "hidden" not in p:
            continue
        assert json.loads(lines.pop(0)) == p["ids"], f"{p['name']}: pocketdec's token ids differ from torch's"
        ids = ",".join(map(str, p["ids"]))
        for mode in ("merge", "runtime"):
            common = ["--model", base, "--adapter", adapter, "--adapter-mode", mode, "--ids", ids]
            close(json.loads(run([POCKETDEC, "hidden"] + common)), p["hidden"], f"{p['name']} hidden ({mode})")
            close(json.loads(run([POCKETDEC, "logits"] + common)), p["logits"], f"{p['name']} logits ({mode})")
    for p in doc["prompts"]:
        if p["name"] == "tagger":
            check_tagger(p, base, adapter, head)
    dec = next((p for p in doc["prompts"] if p["name"] == "decision"), None)
    if dec is None:
        recheck()
        return
    args = [POCKETDEC, "score", "--model", base, "--adapter", adapter, "--head", head, "--layout", "parallel",
            "--explain", "--text", dec["text"], "--question", dec["question"]]
    got = json.loads(run(args + [x for c in dec["candidates"] for x in ("--candidate", c)]))
    assert got["tokens"] == dec["ids"], "the decision prompt's token ids differ from torch's"
    assert [c["label"] for c in got["candidates"]] == dec["candidates"]
    close([c["score"] for c in got["candidates"]], dec["scores"], "decision scores")
    recheck()


def check_tagger(p, base, adapter, head):
    schema = os.path.join(ROOT, "schemas", "tianchi-makeup.yaml")
    got = json.loads(run([POCKETDEC, "tag", "--model", base, "--adapter", adapter, "--head", head,
                          "--schema", schema, "--text", p["text"]]))
    what = f"tagger {p['text']!r}"
    assert got["tokens"] == p["ids"], f"{what}: prompt ids differ from torch's"
    assert got["read_start"] == p["read_start"], f"{what}: read_start {got['read_start']} != {p['read_start']}"
    assert got["tags"] == p["tags"], f"{what}: tags {got['tags']} != {p['tags']}"
    bare = [[{k: v for k, v in s.items() if k != "probability"} for s in x["spans"]] for x in (got, p)]
    assert bare[0] == bare[1], f"{what}: spans {got['spans']} != {p['spans']}"
    if p["spans"]:  # probabilities: within TOL of 1, the largest they can be
        close([s["probability"] for s in got["spans"]] + [1.0], [s["probability"] for s in p["spans"]] + [1.0],
              f"{what} span probabilities")
    assert got["records"] == p["records"], f"{what}: records {got['records']} != {p['records']}"
    if p["records"]:  # probabilities: within TOL of 1, the largest they can be
        close(got["confidences"] + [1.0], p["confidences"] + [1.0], f"{what} record confidences")
    assert got["forward_passes"] == 1
    close(got["emissions"], p["emissions"], f"{what} emissions")
    assert [ln["from"] for ln in got["links"]] == [ln["from"] for ln in p["links"]]
    assert [ln["choice"] for ln in got["links"]] == [ln["choice"] for ln in p["links"]]
    if p["links"]:
        close([x for ln in got["links"] for x in ln["scores"]], [x for ln in p["links"] for x in ln["scores"]],
              f"{what} link scores")
    if p["labels"]:
        close([lb["logits"] for lb in got["labels"]], [lb["logits"] for lb in p["labels"]], f"{what} label logits")


def recheck():
    try:
        import torch  # noqa: F401
    except ImportError:
        print("python3-torch is not installed: expected.json was not recomputed")
        return
    subprocess.run([sys.executable, os.path.join(ROOT, "train", "package.py"), "--check", MODEL], check=True)


if __name__ == "__main__":
    main()

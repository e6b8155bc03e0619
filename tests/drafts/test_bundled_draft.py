#!/usr/bin/python3
"""The shipped draft of models/tianchi-gen (models/tianchi-gen/draft, trained by train/train_draft.py):
it loads against its target, `pocketdec generate --draft` gives plain greedy's text for dev reviews
under the schema's prompt, and a verify pass keeps more than one token (a trained draft, not a random
one: its mean on these reviews is about 4.5, a random draft's about 1). `pocketdec extract --draft` (the
pipeline, generation under the schema) writes the JSONL of extraction without it (records, offsets,
probabilities), one review at a time and four in flight, with the draft's summary line; sampled, those of
the same seed without it; its usage errors;
and a draft refused with the tagger bundle (models/tianchi).

Usage: test_bundled_draft.py POCKETDEC SOURCE_ROOT
"""
import csv
import json
import os
import re
import subprocess
import sys
import tempfile

exe, root = sys.argv[1], sys.argv[2]
model = os.path.join(root, "models", "tianchi-gen")
draft = os.path.join(model, "draft")
with open(os.path.join(root, "schemas", "tianchi-makeup.yaml"), encoding="utf-8") as f:
    prompt = re.search(r'^prompt: "(.*)"$', f.read(), re.M).group(1).replace("\\n", "\n")
with open(os.path.join(root, "data", "tianchi", "dev_reviews.csv"), newline="", encoding="utf-8") as f:
    reviews = [r[1] for r in list(csv.reader(f))[1:13]]
summary = re.compile(r"pocketdec: (\d+) tokens in (\d+) passes; (\d+) drafted, (\d+) accepted")
failures, tokens, passes = [], 0, 0


def run(*args):
    return subprocess.run([exe, "generate", "--model", model, "--threads", "2", "--max-tokens", "160", *args],
                          capture_output=True)


for text in reviews:
    p = prompt.replace("{text}", text)
    plain, spec = run("--prompt", p), run("--prompt", p, "--draft", draft)
    if plain.returncode or spec.returncode:
        failures.append(f"{text!r}: {plain.stderr.decode(errors='replace')}{spec.stderr.decode(errors='replace')}")
        continue
    if plain.stdout != spec.stdout:
        failures.append(f"{text!r}: {spec.stdout!r} with the draft, {plain.stdout!r} without")
    m = summary.search(spec.stderr.decode(errors="replace"))
    if not m:
        failures.append(f"{text!r}: no summary line in {spec.stderr!r}")
        continue
    tokens += int(m.group(1))
    passes += int(m.group(2))
per_pass = tokens / max(passes, 1)

extract_summary = re.compile(r"draft \S+: (\d+) draft passes, (\d+) of (\d+) drafted tokens kept; ([0-9.]+) tokens a pass")


def extract(*args):
    return subprocess.run([exe, "extract", "--model", os.path.join(model, "base"), "--adapter", os.path.join(model, "adapter"),
                           "--schema", os.path.join(root, "schemas", "tianchi-makeup.yaml"), "--input", "-", "--output", "-",
                           "--input-format", "jsonl", "--format", "jsonl", "--threads", "1", *args],
                          input="".join('{"id": %d, "text": %s}\n' % (i, json.dumps(t)) for i, t in enumerate(reviews)),
                          capture_output=True, text=True)


want = extract("--speculate", "0")
for args in (["--parallel", "1"], ["--parallel", "4"], ["--parallel", "1", "--speculate", "0", "--draft-block", "5"],
             ["--parallel", "4", "--draft-quantize", "q8_0"]):
    got = extract("--draft", draft, *args)
    m = extract_summary.search(got.stderr)
    if want.returncode or got.returncode or not want.stdout or got.stdout != want.stdout:
        failures.append(f"extract --draft {args}: not the records without it: {got.stderr}{want.stderr}")
    elif not m or not 0 < int(m.group(2)) <= int(m.group(3)) or float(m.group(4)) < 2:
        failures.append(f"extract --draft {args}: no draft summary, or too few kept: {got.stderr}")
# sampling: the samples verify the draft; the records of the same seed without it
hot = ["--temperature", "0.7", "--seed", "5"]
want_hot, got_hot = extract("--speculate", "0", *hot), extract("--draft", draft, "--parallel", "4", *hot)
m = extract_summary.search(got_hot.stderr)
if want_hot.returncode or got_hot.returncode or not want_hot.stdout or got_hot.stdout != want_hot.stdout:
    failures.append(f"extract --draft {hot}: not the sampled records without it: {got_hot.stderr}{want_hot.stderr}")
elif not m or not 0 < int(m.group(2)) <= int(m.group(3)):
    failures.append(f"extract --draft {hot}: no drafted tokens kept: {got_hot.stderr}")
bad = extract("--draft-block", "3")
if bad.returncode != 2 or "--draft-block needs --draft" not in bad.stderr:
    failures.append(f"extract --draft-block without --draft: {bad.stderr}")
bad = extract("--draft", draft, "--draft-block", "9")
if bad.returncode != 1 or "blocks of 9 tokens" not in bad.stderr:
    failures.append(f"extract --draft-block past the draft's block: {bad.stderr}")
bad = extract("--draft", os.path.join(root, "models", "tianchi-gen", "head"))
if bad.returncode != 1 or "config.json" not in bad.stderr:
    failures.append(f"extract --draft of a folder that is no draft: {bad.stderr}")
# A draft that fits the tagger bundle's base is still refused: a tagger head decides in one pass and
# generates nothing for a draft to propose.
with tempfile.TemporaryDirectory() as tmp:
    made = subprocess.run([sys.executable, os.path.join(root, "tools", "testmodels", "make_draft.py"), "--target",
                           os.path.join(root, "models", "tianchi", "base"), "--out", tmp, "--kind", "dflash"],
                          capture_output=True, text=True)
    tagger = subprocess.run([exe, "extract", "--model", os.path.join(root, "models", "tianchi"), "--schema",
                             os.path.join(root, "schemas", "tianchi-makeup.yaml"), "--input", "-", "--output", "-",
                             "--input-format", "jsonl", "--format", "jsonl", "--draft", tmp],
                            input='{"id": 1, "text": "很好用"}\n', capture_output=True, text=True)
    if made.returncode or tagger.returncode != 1 or "does not apply to the tagger head" not in tagger.stderr \
            or tagger.stdout:
        failures.append(f"extract --draft with the tagger bundle: rc {tagger.returncode}, {made.stderr}{tagger.stderr}")
print(f"{len(reviews)} dev reviews: {tokens} tokens in {passes} passes, {per_pass:.2f} a pass")
if per_pass < 2.5:
    failures.append(f"{per_pass:.2f} tokens a verify pass: the shipped draft should keep about 4.5")
for f in failures:
    print("FAIL", f)
sys.exit(1 if failures else 0)

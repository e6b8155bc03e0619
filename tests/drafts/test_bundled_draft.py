#!/usr/bin/python3
"""The shipped draft of models/tianchi-gen (models/tianchi-gen/draft, trained by train/train_draft.py):
it loads against its target, `pocketdec generate --draft` gives plain greedy's text for dev reviews
under the schema's prompt, and a verify pass keeps more than one token (a trained draft, not a random
one: its mean on these reviews is about 4.5, a random draft's about 1).

Usage: test_bundled_draft.py POCKETDEC SOURCE_ROOT
"""
import csv
import os
import re
import subprocess
import sys

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
print(f"{len(reviews)} dev reviews: {tokens} tokens in {passes} passes, {per_pass:.2f} a pass")
if per_pass < 2.5:
    failures.append(f"{per_pass:.2f} tokens a verify pass: the shipped draft should keep about 4.5")
for f in failures:
    print("FAIL", f)
sys.exit(1 if failures else 0)

#!/usr/bin/env bash
# The main job on the bundled default (models/tianchi: a Qwen3 base, a LoRA
# adapter and a tagger head trained on the Tianchi makeup reviews by
# train/train_tagger.py): extract the quadruples of the dev split (reviews the
# model never saw) with the C library, one forward pass a review (tags, links
# and labels decided from the same hidden states); score them with
# tianchi-eval; write the submission for the test reviews; show how one review
# was decided. Installs only what building and running need (the tests'
# packages come with scripts/test.sh) and says what each step is doing.
set -euo pipefail
cd "$(dirname "$0")/.."
step() { printf '\n== %s\n' "$*"; }
elapsed() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "   (%.1f s)\n", b - a }'; }

step "1/6 Debian packages for building and running: compiler, meson, ninja, libyaml, jansson, PCRE2, utf8proc (scripts/setup.sh build)"
bash scripts/setup.sh build

step "2/6 build the pocketdec command, tianchi-eval and their shared libraries (for python/pocketdec) into build/ (about a minute on 2 cores the first time; the tests are built by scripts/test.sh)"
start=$EPOCHREALTIME
if [ ! -f build/build.ninja ]; then
  meson setup build -Dtests=false | grep -E '^(Project name|C compiler for the host|Run-time dependency|Build targets)|ERROR'
fi
meson compile -C build cli/pocketdec:executable tianchi-eval/tianchi-eval:executable \
  pocketdec:shared_library tianchieval:shared_library
elapsed "$start"

pd=build/cli/pocketdec
m=models/tianchi
data=data/tianchi
schema=schemas/tianchi-makeup.yaml
# the bundle folder: its base/ loaded, adapter/ applied, head/ used (the same as
# --model $m/base --adapter $m/adapter --head $m/head)
model=(--model "$m" --schema "$schema" --threads 2)

step "3/6 pocketdec extract: the dev split ($(($(wc -l < "$data/dev_ids.txt"))) reviews) -> Result.csv, one forward pass a review, 2 threads"
start=$EPOCHREALTIME
"$pd" extract "${model[@]}" --input "$data/dev_reviews.csv" --output Result.csv --progress 2
elapsed "$start"
step "4/6 tianchi-eval $data/dev_labels.csv Result.csv: F1 against the gold quadruples"
build/tianchi-eval/tianchi-eval "$data/dev_labels.csv" Result.csv --reviews "$data/dev_reviews.csv"

step "5/6 pocketdec extract: the test reviews -> Result_test.csv (the submission file)"
"$pd" extract "${model[@]}" --input "$data/test_reviews.csv" --output Result_test.csv --progress 2

# How one review was decided: its tags, the opinion -> aspect links and the
# labels, all from one forward pass.
review=$(sed -n 2p "$data/dev_reviews.csv" | cut -d, -f2-)
step "6/6 how one review was decided (pocketdec tag): \"$review\""
"$pd" tag "${model[@]}" --text "$review" | /usr/bin/python3 -c '
import json, sys, unicodedata
def pad(s, cols):  # by display width: a Chinese character takes two columns
    return s + " " * max(0, cols - sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in s))
d = json.load(sys.stdin)
print("   spans:   " + ", ".join("%s %s" % (s["field"], s["text"]) for s in d["spans"]))
keys = ("aspect", "opinion", "category", "polarity")
rows = [keys] + [tuple(r[k] for k in keys) for r in d["records"]]
for row in rows:
    print("   " + "  ".join(pad(v, 16 if i < 2 else 10) for i, v in enumerate(row)).rstrip())
fates = [c["fate"] for c in d["candidates"]]
print("   candidate records: " + ", ".join("%d %s" % (fates.count(f), f) for f in dict.fromkeys(fates)))
print("   (%d forward pass, %d prompt tokens)" % (d["forward_passes"], len(d["tokens"])))'

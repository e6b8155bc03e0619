#!/usr/bin/env bash
# The main job on the bundled default (models/tianchi: a Qwen3 base, a LoRA
# adapter and a tagger head trained on the Tianchi makeup reviews by
# train/train_tagger.py): extract the quadruples of the dev split (reviews the
# model never saw) with the C library, one forward pass a review (tags, links
# and labels decided from the same hidden states); score them with
# tianchi-eval; write the submission for the test reviews; show how one review
# was decided.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
[ -f build/build.ninja ] || meson setup build >/dev/null
meson compile -C build >/dev/null
pd=build/cli/pocketdec
m=models/tianchi
data=data/tianchi
schema=schemas/tianchi-makeup.yaml
model=(--model "$m/base" --adapter "$m/adapter" --head "$m/head" --schema "$schema" --threads 2)

echo "== pocketdec extract: the dev split ($(($(wc -l < "$data/dev_ids.txt"))) reviews) -> Result.csv"
start=$EPOCHREALTIME
"$pd" extract "${model[@]}" --input "$data/dev_reviews.csv" --output Result.csv
awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "   %.2f s on 2 threads\n", b - a }'
echo "== tianchi-eval $data/dev_labels.csv Result.csv"
build/tianchi-eval/tianchi-eval "$data/dev_labels.csv" Result.csv --reviews "$data/dev_reviews.csv"

echo "== pocketdec extract: the test reviews -> Result_test.csv (the submission file)"
"$pd" extract "${model[@]}" --input "$data/test_reviews.csv" --output Result_test.csv

# How one review was decided: its tags, the opinion -> aspect links and the
# labels, all from one forward pass.
review=$(sed -n 2p "$data/dev_reviews.csv" | cut -d, -f2-)
echo "== pocketdec tag: \"$review\""
"$pd" tag "${model[@]}" --text "$review" | /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
print("   spans:   " + ", ".join("%s %s" % (s["field"], s["text"]) for s in d["spans"]))
for r in d["records"]:
    print("   record:  " + ",".join(r[k] for k in ("aspect", "opinion", "category", "polarity")))
print("   (%d forward pass, %d prompt tokens)" % (d["forward_passes"], len(d["tokens"])))'

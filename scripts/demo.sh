#!/usr/bin/env bash
# The main job on the bundled default (models/tianchi: a Qwen3 base, a LoRA
# adapter and a pointer head trained on the Tianchi makeup reviews by
# train/train_all.py): extract the quadruples of the dev split (reviews the
# model never saw) with the C library, the schema-constrained decoder and the
# decision head; score them with tianchi-eval; write the submission for the
# test reviews; show one decision with its label probabilities.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
[ -f build/build.ninja ] || meson setup build >/dev/null
meson compile -C build >/dev/null
pd=build/cli/pocketdec
m=models/tianchi
data=data/tianchi
model=(--model "$m/base" --adapter "$m/adapter" --threads 2)

echo "== pocketdec extract: the dev split ($(($(wc -l < "$data/dev_ids.txt"))) reviews) -> Result.csv"
"$pd" extract "${model[@]}" --head "$m/head" --schema schemas/tianchi-makeup.yaml \
  --input "$data/dev_reviews.csv" --output Result.csv
echo "== tianchi-eval $data/dev_labels.csv Result.csv"
build/tianchi-eval/tianchi-eval "$data/dev_labels.csv" Result.csv --reviews "$data/dev_reviews.csv"

echo "== pocketdec extract: the test reviews -> Result_test.csv (the submission file)"
"$pd" extract "${model[@]}" --head "$m/head" --schema schemas/tianchi-makeup.yaml \
  --input "$data/test_reviews.csv" --output Result_test.csv

# One decision: the first dev review with its first extracted (aspect, opinion),
# all 39 (category, polarity) candidates scored in one forward pass.
IFS=, read -r id aspect opinion _ < <(grep -v -m1 ',_,_,' Result.csv)
review=$(grep -m1 "^$id," "$data/dev_reviews.csv" | cut -d, -f2-)
question="属性：$aspect；观点：$opinion"
cands=()
for c in 包装 成分 尺寸 服务 功效 价格 气味 使用体验 物流 新鲜度 真伪 整体 其他; do
  for p in 正面 中性 负面; do cands+=(--candidate "$c/$p"); done
done
echo "== pocketdec score: review $id \"$review\""
echo "   question \"$question\", 39 candidates; the five most probable:"
"$pd" score "${model[@]}" --head "$m/head" --text "$review" --question "$question" "${cands[@]}" |
  /usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)
for c in sorted(d["candidates"], key=lambda c: -c["prob"])[:5]:
    print("   %-10s p = %.3f" % (c["label"], c["prob"]))
print("   (%d forward pass, %d prompt tokens)" % (d["forward_passes"], d["prompt_tokens"]))'

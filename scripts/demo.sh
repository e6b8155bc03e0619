#!/usr/bin/env bash
# The main job on the bundled model: build, then show the CLI at work.
# Until the trained Tianchi model lands, the bundled model is a small random
# Qwen3 (written by tools/testmodels/make_model.py with the real Qwen3
# tokenizer): it proves the whole path (tokenizer, loader, trunk, sampling),
# not usefulness; its text is gibberish.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
[ -f build/build.ninja ] || meson setup build >/dev/null
meson compile -C build >/dev/null
pd=build/cli/pocketdec
model=build/demo-model
if [ ! -f "$model/config.json" ]; then
  /usr/bin/python3 tools/testmodels/make_model.py --layers 2 --hidden 64 --heads 4 --kv-heads 2 --head-dim 16 \
    --ffn 128 --vocab 151936 --format hf-bf16 --seed 1 \
    --tokenizer tests/fixtures/qwen3/tokenizer.json --out "$model" >/dev/null
fi
review=$(sed -n 2p tests/fixtures/tianchi/sample_reviews.csv | cut -d, -f2-)
echo "== pocketdec info"
"$pd" info --model "$model"
echo "== pocketdec tokenize: $review"
/usr/bin/python3 -c 'import json,sys; print(json.dumps(sys.argv[1], ensure_ascii=False))' "$review" \
  | "$pd" tokenize --tokenizer "$model/tokenizer.json"
echo "== pocketdec generate (random weights: expect gibberish)"
"$pd" generate --model "$model" --prompt "$review" --max-tokens 16 --temperature 0.8 --top-k 20 --top-p 0.8 --seed 7
echo "== pocketdec bench (prefill 64, decode 16)"
"$pd" bench --model "$model" --prompt-tokens 64 --gen-tokens 16 --threads 2 --reps 1

#!/usr/bin/env bash
# bench/contention.sh - pocketdec when other processes hold cores: prefill and
# decode tokens/s and the dev-split extraction time at several thread counts,
# on a quiet machine and with busy processes competing.
#
# Usage: bench/contention.sh [--threads 1,2,4,8] [--busy N] [--reps N] [--pocketdec PATH] [--bundle DIR] [--gen DIR]
#
#   --busy N: N busy loops (default 1), pinned to the first N cores (taskset), run
#       alongside every measurement of the "busy" half; pocketdec itself is not pinned.
#   The throughput model is the MNN-Pocket-0.3B shape in Q4_0 (random weights,
#   prefill 128 and decode 32 tokens, medians of --reps); the extraction is
#   `pocketdec extract` with the bundled default (models/tianchi, or --bundle: a folder
#   of base/, adapter/, head/) on the 283 dev reviews (wall time of the whole command,
#   load included; the best of --reps), and the same by generation with the generative bundle
#   (models/tianchi-gen, or --gen; its head relabels) one review at a time
#   (--parallel 1) and at the default --parallel (2 a thread, at most 16).
# Thread counts above the cores the process may use run that many (with a warning).
# Prints a markdown table; ratios are against 1 thread under the same condition.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${PD_BENCH_CACHE:-$ROOT/build-bench}
THREADS=1,2,4,8 BUSY=1 REPS=3 PD=$ROOT/build/cli/pocketdec B=$ROOT/models/tianchi G=$ROOT/models/tianchi-gen
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit "${1:-0}"; }
while [ $# -gt 0 ]; do
  case $1 in
    --threads) THREADS=$2; shift ;;
    --busy) BUSY=$2; shift ;;
    --reps) REPS=$2; shift ;;
    --pocketdec) PD=$(realpath "$2"); shift ;;
    --bundle) B=$(realpath "$2"); shift ;;
    --gen) G=$(realpath "$2"); shift ;;
    -h|--help) usage 0 ;;
    *) echo "bench/contention.sh: unknown argument '$1'" >&2; usage 2 >&2 ;;
  esac
  shift
done
[ -x "$PD" ] || { echo "bench/contention.sh: no pocketdec at $PD (build it, or pass --pocketdec)" >&2; exit 2; }
command -v taskset >/dev/null || { echo "bench/contention.sh: needs taskset (util-linux)" >&2; exit 2; }
mkdir -p "$CACHE/models"
MODEL=$CACHE/models/pocket-q4_0.gguf
if [ ! -f "$MODEL" ]; then
  echo "bench: writing $MODEL" >&2
  /usr/bin/python3 "$ROOT/tools/testmodels/make_model.py" --preset pocket --format gguf-q4_0 --out "$MODEL.tmp" --quiet
  mv "$MODEL.tmp" "$MODEL"
fi
DATA=$ROOT/data/tianchi
TMP=$(mktemp -d)
PIDS=()
stop_busy() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; PIDS=(); }
trap 'stop_busy; rm -rf "$TMP"' EXIT
start_busy() {
  for ((c = 0; c < BUSY; c++)); do
    taskset -c "$c" sh -c 'while :; do :; done' &
    PIDS+=($!)
  done
}

# seconds of `pocketdec extract` of the dev reviews (these arguments), the best of --reps runs
extract_s() {
  local s0 s1 times=""
  for ((r = 0; r < REPS; r++)); do
    s0=$(date +%s.%N)
    "$PD" extract --schema "$ROOT/schemas/tianchi-makeup.yaml" --input "$DATA/dev_reviews.csv" --output "$TMP/r.csv" \
      "$@" 2>"$TMP/err" || { cat "$TMP/err" >&2; exit 1; }
    s1=$(date +%s.%N)
    times="$times $s0:$s1"
  done
  /usr/bin/python3 -c "import sys; print(min(float(b) - float(a) for a, b in (x.split(':') for x in sys.argv[1:])))" $times
}

# one row: condition threads prefill decode extract_s gen_1_s gen_n_s
measure() {
  local cond=$1 t=$2
  "$PD" bench --model "$MODEL" --prompt-tokens 128 --gen-tokens 32 --threads "$t" --reps "$REPS" >"$TMP/b.json" \
    2>"$TMP/err" || { cat "$TMP/err" >&2; exit 1; }
  local tag gen1 genn
  tag=$(extract_s --threads "$t" --model "$B/base" --adapter "$B/adapter" --head "$B/head")
  gen1=$(extract_s --threads "$t" --model "$G" --parallel 1)
  genn=$(extract_s --threads "$t" --model "$G")
  /usr/bin/python3 - "$cond" "$t" "$TMP/b.json" "$tag" "$gen1" "$genn" <<'PY'
import json, sys
b = json.load(open(sys.argv[3]))
print(sys.argv[1], sys.argv[2], b["prefill_tokens_per_s"], b["decode_tokens_per_s"], *sys.argv[4:7])
PY
}

for cond in quiet busy; do
  [ "$cond" = busy ] && start_busy
  for t in ${THREADS//,/ }; do
    echo "bench: $cond, $t threads" >&2
    measure "$cond" "$t" >>"$TMP/rows"
  done
  stop_busy
done
/usr/bin/python3 - "$TMP/rows" "$BUSY" "$(nproc)" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1])]
print(f"{sys.argv[3]} cores; busy = {sys.argv[2]} busy loop(s) pinned to the first core(s)\n")
print("| condition | threads | prefill tok/s | decode tok/s | dev extract s (tagger) | dev extract s (generation, "
      "one at a time) | same, default --parallel | prefill vs 1 | decode vs 1 | tagger vs 1 | generation vs 1 |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
base = {}
for cond, t, *v in rows:
    p, d, e, g1, gn = map(float, v)
    if t == "1":
        base[cond] = (p, d, e, gn)
    b = base.get(cond)
    r = f"{p / b[0]:.2f}x | {d / b[1]:.2f}x | {b[2] / e:.2f}x | {b[3] / gn:.2f}x" if b else "| | |"
    print(f"| {cond} | {t} | {p:.0f} | {d:.1f} | {e:.2f} | {g1:.2f} | {gn:.2f} | {r} |")
PY

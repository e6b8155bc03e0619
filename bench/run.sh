#!/usr/bin/env bash
# bench/run.sh - pocketdec and llama.cpp side by side on the same GGUF files of
# the MNN-Pocket-0.3B shape (random weights), same threads, in turn.
#
# Usage: bench/run.sh [--formats q4_0,q4_1,q8_0,f16,q4_64] [--reps N] [--rounds N] [--threads N]
#                     [--decision] [--decision-only] [--decision-format FMT] [--interop]
#                     [--llama-tool bench|score] [--isa native|avx2] [--pocketdec PATH]
#                     [--extract] [--reviews N] [--draft]
#
#   throughput (default): prefill 512 and decode 128 tokens/s (medians), peak RSS,
#       load time; pocketdec `bench` and `llama-bench` alternate on each file,
#       --rounds times (the figures are medians over rounds of per-run medians).
#       q4_64 (MNN's W4A16 layout, blocks of 64, which no GGUF type holds): pocketdec
#       quantizes the F16 file at load (--quantize q4_64, its load time included) and
#       llama.cpp runs Q4_0, its 4-bit type of the same size (4.5 bits a weight).
#   --llama-tool score: time llama.cpp with bench/llama_score.c's --bench (the same pp/tg
#       tests through libllama) instead of llama-bench, which needs llama.cpp's common
#       library and its tools built too (most of the build time).
#   --isa avx2: both programs as on a CPU with AVX2+FMA but no AVX-512: pocketdec with
#       PD_KERNELS=avx2, llama.cpp built with GGML_NATIVE=OFF (AVX, AVX2, FMA, F16C, BMI2;
#       its own build directory). The default, native, uses what this CPU has.
#   --decision: one pointer-head decision over a Tianchi review with the 13
#       categories as candidates, against pocketdec's prefill of the same prompt
#       and against llama.cpp scoring one sequence per candidate (bench/llama_score.c).
#   --interop (instead of the throughput table): `pocketdec quantize` writes Q4_0, Q4_1
#       and Q8_0 GGUF from an HF directory; llama.cpp loads each, and its last-position
#       logits are compared with pocketdec's.
#   --extract (instead of the throughput table): batch extraction of the first --reviews N
#       (default 100) dev reviews under the Tianchi schema, greedy, on each --formats file (the
#       pocket shape with the real Qwen3 vocabulary and tokenizer) and
#       on models/tianchi-gen (bench/extract_many.c): pocketdec one review at a time with the
#       whole prompt each time, then with the prompt prefix reused, then N = 1, 4, 8, 16 in
#       flight (pd_extract_many), then the same with copy speculation (K = 4), best of --reps
#       runs; every configuration must give the records of the first. Beside it, llama.cpp's
#       unconstrained batched decode at the same N (llama_score --batched N,64,48: one token
#       of each of N sequences a llama_decode, no grammar: the best a constrained run reaches).
#       With --rounds R (R > 1) instead: only one at a time and N = 8 with speculation, one run
#       of each in turn R times, each round's ratio and their median (a drifting machine moves
#       both runs of a round alike); each round also times the passes alone (8 contexts, passes
#       of the rows N = 8 evaluated a pass on average, no schema, no LM head) and gives the
#       ratio they would allow at the rows a review took, whatever the decoding around them
#       (uniform passes: the extraction's mix of prompt passes and decode passes can run a
#       little faster).
#   --draft (instead of the throughput table): what speculative decoding with a DFlash2 draft costs on
#       the Q4_0 file, where a one-token pass reads all the weights. bench_draft_cost (pocketdec) times
#       the target's passes of 1-16 rows, a pocket-width DFlash2 draft of the release's depth (5 layers
#       of the target's layer shape over target layers 1,7,13,19,25, selector rank 256, top-16, BF16,
#       written with block 16 so that blocks of 8 and 16 are timed) and its appends; llama_score
#       --verify times llama.cpp's llama_decode of the same rows; both at --threads and at 1, one run
#       of each in turn --rounds times, each the best of --reps rounds of 20 calls; the draft's passes
#       again with its matrices quantized at load as Q8_0 and as Q4_0 (pd_draft_load_quantized).
#       report.py draft predicts the speed-up at the acceptance lengths measured on
#       models/tianchi-gen. Then llama-speculative-simple (built when missing) with a 5-layer Q4_0
#       model of the pocket shape as its autoregressive draft, what it prints (acceptance means
#       nothing on random weights), and llama.cpp's plain decoding of both models.
#
# Everything built or generated is cached in $PD_BENCH_CACHE (default build-bench/,
# ignored by git): a release build of pocketdec, llama.cpp v0.4.0 from the source
# bundled in npm node-llama-cpp@3.21.1 (CPU only, Release), the model files.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${PD_BENCH_CACHE:-$ROOT/build-bench}
PY=/usr/bin/python3 # numpy lives here
FORMATS=q4_0,q4_1,q8_0,f16 REPS=3 ROUNDS=1 THREADS=2 DECISION=0 THROUGHPUT=1 INTEROP=0 DEC_FORMAT=q8_0 PD= LLAMA_TOOL=bench
EXTRACT=0 REVIEWS=100 DRAFT=0
ISA=native
NPM_PKG=node-llama-cpp@3.21.1

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit "${1:-0}"; }
while [ $# -gt 0 ]; do
  case $1 in
    --formats) FORMATS=$2; shift ;;
    --reps) REPS=$2; shift ;;
    --rounds) ROUNDS=$2; shift ;;
    --threads) THREADS=$2; shift ;;
    --decision) DECISION=1 ;;
    --decision-only) DECISION=1 THROUGHPUT=0 ;;
    --decision-format) DEC_FORMAT=$2; shift ;;
    --interop) INTEROP=1 THROUGHPUT=0 ;;
    --extract) EXTRACT=1 THROUGHPUT=0 ;;
    --reviews) REVIEWS=$2; shift ;;
    --draft) DRAFT=1 THROUGHPUT=0 ;;
    --pocketdec) PD=$(realpath "$2"); shift ;;
    --llama-tool) LLAMA_TOOL=$2; shift ;;
    --isa) ISA=$2; shift ;;
    -h|--help) usage 0 ;;
    *) echo "bench/run.sh: unknown argument '$1'" >&2; usage 2 >&2 ;;
  esac
  shift
done
mkdir -p "$CACHE/models"
LLAMA_SRC=$CACHE/llama.cpp LLAMA_BUILD=$CACHE/llama-build LLAMA_ISA=(-DGGML_NATIVE=ON) SUFFIX=
case $ISA in
  native) ;;
  avx2) LLAMA_BUILD=$CACHE/llama-build-avx2 LLAMA_ISA=(-DGGML_NATIVE=OFF) SUFFIX=-avx2; export PD_KERNELS=avx2 ;;
  *) echo "bench/run.sh: --isa is native or avx2, not '$ISA'" >&2; exit 2 ;;
esac
log() { echo "bench: $*" >&2; }
cpu_name() { grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'; }

# ----------------------------------------------------------------- builds

build_pocketdec() {
  [ -n "$PD" ] && return
  if [ ! -f "$CACHE/pocketdec/build.ninja" ]; then
    meson setup "$CACHE/pocketdec" "$ROOT" -Dbuildtype=release -Dtests=false >/dev/null
  fi
  log "building pocketdec (release)"
  nice -n 10 meson compile -C "$CACHE/pocketdec" cli/pocketdec >/dev/null
  PD=$CACHE/pocketdec/cli/pocketdec
}

# llama.cpp once: the npm tarball's git bundle, cmake, libllama (+ the program $1 when set: llama-bench,
# llama-speculative-simple).
build_llama() {
  local want=$LLAMA_BUILD/bin/libllama.so target=llama
  [ -n "${1:-}" ] && want=$LLAMA_BUILD/bin/$1 target=$1
  if [ ! -e "$want" ]; then
    for tool in cmake ninja git npm; do
      command -v $tool >/dev/null || { apt-get update -qq && apt-get install -y -qq cmake ninja-build git npm g++ >/dev/null; }
    done
    if [ ! -d "$LLAMA_SRC" ]; then
      log "fetching $NPM_PKG (its llama/gitRelease.bundle holds the llama.cpp source)"
      (cd "$CACHE" && npm pack -q "$NPM_PKG" >/dev/null && tar xzf node-llama-cpp-*.tgz package/llama/gitRelease.bundle \
        && git clone -q package/llama/gitRelease.bundle llama.cpp)
    fi
    log "building llama.cpp $target (CPU, Release; takes a while on 2 cores)"
    [ -f "$LLAMA_BUILD/build.ninja" ] || nice -n 10 cmake -S "$LLAMA_SRC" -B "$LLAMA_BUILD" -G Ninja \
      -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON "${LLAMA_ISA[@]}" -DLLAMA_OPENSSL=OFF \
      -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=ON -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF >/dev/null
    # a build directory configured without the examples (before --draft)
    grep -q "build $target:" "$LLAMA_BUILD/build.ninja" || cmake -B "$LLAMA_BUILD" -DLLAMA_BUILD_EXAMPLES=ON >/dev/null
    nice -n 10 ninja -C "$LLAMA_BUILD" -j2 $target >/dev/null
  fi
  LLAMA_BENCH=$LLAMA_BUILD/bin/llama-bench LLAMA_SCORE=$CACHE/llama_score$SUFFIX
  if [ ! -x "$LLAMA_SCORE" ] || [ "$ROOT/bench/llama_score.c" -nt "$LLAMA_SCORE" ]; then
    cc -O2 -std=c11 -Wall -Wextra -D_POSIX_C_SOURCE=200809L "$ROOT/bench/llama_score.c" \
      -I"$LLAMA_SRC/include" -I"$LLAMA_SRC/ggml/include" -L"$LLAMA_BUILD/bin" -Wl,-rpath,"$LLAMA_BUILD/bin" \
      -lllama -lggml -lggml-base -lm -o "$LLAMA_SCORE"
  fi
}

# The pocket-shape model in one GGUF format (cached). $2: extra make_model options, $3: file tag.
model() {
  local f=$CACHE/models/pocket${3:-}-$1.gguf
  if [ ! -f "$f" ]; then
    log "writing $f"
    # shellcheck disable=SC2086
    $PY "$ROOT/tools/testmodels/make_model.py" --preset pocket --format "gguf-$1" ${2:-} --out "$f.tmp" --quiet
    mv "$f.tmp" "$f"
  fi
  echo "$f"
}

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# -------------------------------------------------------------- throughput

throughput() {
  local results=$TMP/throughput.jsonl
  : >"$results"
  for fmt in ${FORMATS//,/ }; do
    local m pm quant=()
    if [ "$fmt" = q4_64 ]; then
      m=$(model q4_0) pm=$(model f16) quant=(--quantize q4_64)
    else
      m=$(model "$fmt") pm=$m
    fi
    for ((r = 1; r <= ROUNDS; r++)); do
      log "$fmt round $r/$ROUNDS: pocketdec"
      /usr/bin/time -f %M -o "$TMP/pd.rss" "$PD" bench --model "$pm" "${quant[@]}" --prompt-tokens 512 \
        --gen-tokens 128 --threads "$THREADS" --reps "$REPS" >"$TMP/pd.json"
      log "$fmt round $r/$ROUNDS: llama.cpp"
      if [ "$LLAMA_TOOL" = bench ]; then
        /usr/bin/time -f %M -o "$TMP/ll.rss" "$LLAMA_BENCH" -m "$m" -p 512 -n 128 -t "$THREADS" -r "$REPS" \
          -o json >"$TMP/ll.json" 2>/dev/null
      else
        /usr/bin/time -f %M -o "$TMP/ll.rss" "$LLAMA_SCORE" "$m" --bench 512,128 --threads "$THREADS" \
          --reps "$REPS" >"$TMP/ll.json"
      fi
      "$LLAMA_SCORE" "$m" --load >"$TMP/ll_load.json"
      $PY "$ROOT/bench/report.py" collect "$fmt" "$TMP" >>"$results"
    done
  done
  echo
  echo "pocketdec vs llama.cpp (llama-$LLAMA_TOOL): MNN-Pocket-0.3B shape, random weights, $THREADS threads," \
    "$REPS reps x $ROUNDS rounds, instruction sets: $ISA"
  echo "($(nproc) CPUs: $(cpu_name))"
  echo
  $PY "$ROOT/bench/report.py" table "$results"
}

# ---------------------------------------------------------------- decision

# A Tianchi review of median length (20 characters) and the 13 categories.
REVIEW='用了还不错，店家还送了两瓶卸妆水也很好哦'
QUESTION='这条评论说的是哪个方面？'
CATEGORIES=(包装 成分 尺寸 服务 功效 价格 气味 使用体验 物流 新鲜度 真伪 整体 其他)

decision() {
  # the real Qwen3 vocabulary (151,936 ids, with the layout's marker tokens), so the review
  # tokenizes as it would with the published model
  local m head=$CACHE/models/pointer-head args=()
  m=$(model "$DEC_FORMAT" "--vocab 151936 --tokenizer $ROOT/tests/fixtures/qwen3/tokenizer.json" -qwen3tok)
  [ -f "$head/head.json" ] || $PY "$ROOT/tools/testmodels/make_head.py" write --type pointer --hidden 896 \
    --head-dim 64 --out "$head" >/dev/null
  for c in "${CATEGORIES[@]}"; do args+=(--candidate "$c"); done
  log "decision: pocketdec (one pass, 13 candidates) and its prefill of the same prompt"
  "$PD" score --model "$m" --head "$head" --text "$REVIEW" --question "$QUESTION" "${args[@]}" \
    --threads "$THREADS" --bench $((REPS * 3)) >"$TMP/pd_decision.json"
  # one sequence per candidate: the same layout with that candidate alone
  : >"$TMP/seqs.txt"
  for c in "${CATEGORIES[@]}"; do
    "$PD" score --model "$m" --head "$head" --text "$REVIEW" --question "$QUESTION" --candidate "$c" --explain |
      $PY -c 'import json,sys; print(",".join(map(str, json.load(sys.stdin)["tokens"])))' >>"$TMP/seqs.txt"
  done
  log "decision: llama.cpp, 13 sequences (serial and as one batch)"
  "$LLAMA_SCORE" "$m" --seqs "$TMP/seqs.txt" --threads "$THREADS" --reps $((REPS * 3)) >"$TMP/ll_decision.json"
  echo
  echo "One decision, pointer head, review '$REVIEW' + 13 categories, $DEC_FORMAT, $THREADS threads"
  echo
  $PY "$ROOT/bench/report.py" decision "$TMP/pd_decision.json" "$TMP/ll_decision.json"
}

# ----------------------------------------------------------------- extract

extract() {
  # the benchmark program beside the pocketdec that runs (--pocketdec: its build directory)
  local bdir=$CACHE/pocketdec
  [ -f "$bdir/build.ninja" ] || bdir=$(dirname "$PD")/..
  nice -n 10 meson compile -C "$bdir" bench_extract_many >/dev/null
  local bx=$bdir/bench_extract_many
  local schema=$ROOT/schemas/tianchi-makeup.yaml reviews=$ROOT/data/tianchi/dev_reviews.csv
  echo
  if [ "$ROUNDS" -gt 1 ]; then
    echo "Batch extraction, one at a time against N = 8 with speculation (K = 4), one run each in turn, $ROUNDS rounds:" \
      "first $REVIEWS dev reviews, Tianchi schema, greedy, $THREADS threads ($(nproc) CPUs: $(cpu_name))"
    echo
    echo "| model | round | one at a time reviews/s | N = 8 + speculation reviews/s | generated tok/s | ratio | same records" \
      "| rows a review at N = 8 | joint pass rows | joint passes rows/s | ratio the passes allow |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|"
  else
    echo "Batch extraction: first $REVIEWS dev reviews (the split has 283), Tianchi schema, greedy, $THREADS threads," \
      "best of $REPS ($(nproc) CPUs: $(cpu_name))"
    echo
    echo "| model | pocketdec | N in flight | K | reviews/s | generated tok/s | vs one at a time | peak RSS MB | same records | llama.cpp batched decode tok/s (same N) | pocketdec / llama.cpp |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|"
  fi
  for fmt in ${FORMATS//,/ } gen; do
    local args=() lfile=
    if [ "$fmt" = gen ]; then
      args=("$ROOT/models/tianchi-gen/base" "$schema" "$reviews" "$REVIEWS" "$THREADS" "$REPS" 4 - \
            "$ROOT/models/tianchi-gen/adapter")
    else
      # the real Qwen3 vocabulary, so that reviews and spans tokenize as with the published model
      lfile=$(model "$fmt" "--vocab 151936 --tokenizer $ROOT/tests/fixtures/qwen3/tokenizer.json" -qwen3tok)
      args=("$lfile" "$schema" "$reviews" "$REVIEWS" "$THREADS" "$REPS" 4)
    fi
    if [ "$ROUNDS" -gt 1 ]; then
      log "extract $fmt: one at a time and N = 8 with speculation, $ROUNDS rounds"
      PD_BENCH_ROUNDS=$ROUNDS "$bx" "${args[@]}" >"$TMP/pd_rounds.jsonl"
      $PY "$ROOT/bench/report.py" rounds "$fmt" "$TMP/pd_rounds.jsonl"
      continue
    fi
    if [ -n "$lfile" ]; then
      : >"$TMP/ll_batched.jsonl"
      for n in 1 4 8 16; do
        log "extract $fmt: llama.cpp batched decode, N = $n"
        "$LLAMA_SCORE" "$lfile" --batched "$n,64,48" --threads "$THREADS" --reps "$REPS" >>"$TMP/ll_batched.jsonl"
      done
    fi
    log "extract $fmt: pocketdec"
    "$bx" "${args[@]}" >"$TMP/pd_extract.jsonl"
    $PY "$ROOT/bench/report.py" extract "$fmt" "$TMP/pd_extract.jsonl" "${lfile:+$TMP/ll_batched.jsonl}"
  done
}

# ------------------------------------------------------------------- draft

# A random DFlash2 draft for the pocket-shape target (cached): the release's depth, the target's
# layer shape.
pocket_draft() {
  local d=$CACHE/models/pocket-l$1-dflash2 cfg=$CACHE/models/pocket-l$1-config shape
  shape=(--layers 5 --heads 14 --kv-heads 2 --head-dim 64 --ffn 2560 --target-layers 1,7,13,19,25 --rank 256 --top-k 16)
  if [ ! -f "$d/config.json" ]; then
    log "writing $d"
    mkdir -p "$cfg"  # make_draft.py reads the target's shape from an HF config.json
    $PY -c "import json, sys; sys.path.insert(0, sys.argv[1]); import make_model as mm
json.dump(mm.hf_config(mm.Config(**dict(mm.PRESETS['pocket'], layers=$1)), 'BF16', None), open(sys.argv[2], 'w'))" \
      "$ROOT/tools/testmodels" "$cfg/config.json"
    $PY "$ROOT/tools/testmodels/make_draft.py" --target "$cfg" --out "$d.tmp" --kind dflash2 --dtype bf16 \
      --block-size 16 --taps 4 --group-size 16 "${shape[@]}"
    mv "$d.tmp" "$d"
  fi
  echo "$d"
}

draft() {
  local bdir=$CACHE/pocketdec m small spec=$LLAMA_BUILD/bin/llama-speculative-simple t
  [ -f "$bdir/build.ninja" ] || bdir=$(dirname "$PD")/..
  nice -n 10 meson compile -C "$bdir" bench_draft_cost >/dev/null
  m=$(model q4_0) small=$(model q4_0 "--layers 5" -l5)
  local d28
  d28=$(pocket_draft 28)
  echo
  echo "Speculative decoding with a DFlash2 draft, MNN-Pocket-0.3B shape (random weights), Q4_0, 100 positions" \
    "in the caches; the best of $ROUNDS runs in turn x $REPS rounds of 20 calls ($(nproc) CPUs: $(cpu_name))"
  for t in $(printf '%s\n' "$THREADS" 1 | uniq); do
    : >"$TMP/pd$t.jsonl"
    : >"$TMP/ll$t.jsonl"
    : >"$TMP/q8_0-$t.jsonl"
    : >"$TMP/q4_0-$t.jsonl"
    for ((r = 1; r <= ROUNDS; r++)); do
      log "draft, $t thread(s), round $r/$ROUNDS: bench_draft_cost (the draft as stored, Q8_0, Q4_0), llama_score --verify"
      "$bdir/bench_draft_cost" "$m" - "$d28" "$t" 100 20 "$REPS" >>"$TMP/pd$t.jsonl"
      "$LLAMA_SCORE" "$m" --verify 100,20 --threads "$t" --reps "$REPS" >>"$TMP/ll$t.jsonl"
      for q in q8_0 q4_0; do
        "$bdir/bench_draft_cost" "$m" - "$d28" "$t" 100 20 "$REPS" "$q" >>"$TMP/$q-$t.jsonl"
      done
    done
    echo
    $PY "$ROOT/bench/report.py" draft "$t" "$TMP/pd$t.jsonl" "$TMP/ll$t.jsonl" "Q8_0=$TMP/q8_0-$t.jsonl" \
      "Q4_0=$TMP/q4_0-$t.jsonl"
  done
  echo
  if (build_llama llama-speculative-simple) >"$TMP/spec-build.log" 2>&1; then
    echo "llama-speculative-simple, the 5-layer Q4_0 model drafting up to 8 tokens (draft-simple), greedy," \
      "$THREADS threads, 128 tokens:"
    echo
    "$spec" -m "$m" -md "$small" --spec-type draft-simple -p "The quick brown fox" -n 128 -c 1024 -t "$THREADS" \
      -td "$THREADS" --temp 0 --spec-draft-n-max 8 --spec-draft-n-min 0 --spec-draft-p-min 0 2>&1 |
      grep -E '^The quick|encoded|decoded|n_draft|n_predict|n_accept|accept  |eval time|unaccounted' | cut -c1-160 || true
    echo
    echo "plain decoding (llama_score --bench 16,128, median of $REPS): target, then the 5-layer model:"
    "$LLAMA_SCORE" "$m" --bench 16,128 --threads "$THREADS" --reps "$REPS"
    "$LLAMA_SCORE" "$small" --bench 16,128 --threads "$THREADS" --reps "$REPS"
  else
    echo "llama-speculative-simple did not build:"
    tail -5 "$TMP/spec-build.log"
  fi
}

# ----------------------------------------------------------------- interop

interop() {
  local hf=$CACHE/models/interop-hf ids=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16
  # the real Qwen3 vocabulary and the GQA 7:1 / head_dim 64 proportions, small enough to be quick
  local shape=(--layers 2 --hidden 128 --heads 7 --kv-heads 1 --head-dim 64 --ffn 320 --vocab 151936
               --tokenizer "$ROOT/tests/fixtures/qwen3/tokenizer.json" --quiet)
  [ -f "$hf/config.json" ] || $PY "$ROOT/tools/testmodels/make_model.py" "${shape[@]}" --format hf-f32 --out "$hf"
  # control: the same weights as F32 GGUF, where no weight is rounded
  [ -f "$hf-f32.gguf" ] || $PY "$ROOT/tools/testmodels/make_model.py" "${shape[@]}" --format gguf-f32 --out "$hf-f32.gguf"
  echo
  echo "pocketdec quantize -> llama.cpp: last-position logits over 16 tokens (f32: the control, no rounded weight)"
  echo
  echo "| type | llama.cpp loads | max abs diff / max abs logit | same top-1 |"
  echo "|---|---|---|---|"
  for ty in f32 q4_0 q4_1 q8_0; do
    local g=$TMP/interop-$ty.gguf
    if [ $ty = f32 ]; then g=$hf-f32.gguf; else "$PD" quantize --model "$hf" --type "$ty" --out "$g" >/dev/null; fi
    "$PD" logits --model "$g" --ids "$ids" --threads "$THREADS" >"$TMP/pd_logits.json"
    if "$LLAMA_SCORE" "$g" --logits "$ids" --threads "$THREADS" >"$TMP/ll_logits.json" 2>"$TMP/ll.err"; then
      $PY "$ROOT/bench/report.py" interop "$ty" "$TMP/pd_logits.json" "$TMP/ll_logits.json"
    else
      echo "| $ty | no: $(head -c 200 "$TMP/ll.err" | tr '\n' ' ') | | |"
    fi
  done
}

build_pocketdec
# the rounds of --extract time pocketdec alone: no llama.cpp to build for them
if ! [ "$EXTRACT$THROUGHPUT$DECISION$INTEROP$DRAFT" = 10000 ] || [ "$ROUNDS" -le 1 ]; then
  build_llama "$([ "$THROUGHPUT$LLAMA_TOOL" = 1bench ] && echo llama-bench)"
fi
[ "$THROUGHPUT" = 1 ] && throughput
[ "$DECISION" = 1 ] && decision
[ "$INTEROP" = 1 ] && interop
[ "$EXTRACT" = 1 ] && extract
[ "$DRAFT" = 1 ] && draft
exit 0

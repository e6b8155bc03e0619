#!/usr/bin/env bash
# Fuzz every parser with libFuzzer (clang) under ASan + UBSan.
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET]   (default 20; e.g. 3600 for a long run)
# Seeds come from tests/fuzz/corpus/TARGET (read only); inputs found go to
# build-fuzz/corpus/TARGET; a crash stops with its input in build-fuzz/artifacts/
# (turn it into a regression test, and add it to the seeds).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
bash scripts/setup.sh
if ! command -v clang >/dev/null || ! ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq --no-install-recommends clang libclang-rt-14-dev >/dev/null
fi
dir=build-fuzz
if [ ! -f "$dir/build.ninja" ]; then
  CC=clang meson setup "$dir" -Dfuzz=true -Db_sanitize=address,undefined -Db_lundef=false \
    --buildtype=debugoptimized >/dev/null
fi
meson compile -C "$dir" >/dev/null
# the two fixtures the fuzz targets load (test fixtures are not built by default)
meson compile -C "$dir" tests/model/model-fixtures tests/heads/head-fixtures >/dev/null
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export PD_FUZZ_TOKENIZER="$PWD/tests/fixtures/qwen3/tokenizer.json"
# small models written at build time by the test fixtures: adapters are
# applied to one, heads decide on the other (its tokenizer has the markers)
export PD_FUZZ_MODEL="$PWD/$dir/tests/model/fixtures/tiny-hf-f32"
export PD_FUZZ_HEAD_MODEL="$PWD/$dir/tests/heads/fixtures/model-a"
export PD_FUZZ_HEAD_SCHEMA="$PWD/schemas/tianchi-makeup.yaml"  # tagger heads are bound to it
mkdir -p "$dir/artifacts"
for seeds in tests/fuzz/corpus/*/; do
  target=$(basename "$seeds")
  mkdir -p "$dir/corpus/$target"
  log="$dir/$target.log"
  if ! "$dir/tests/fuzz/$target" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=20 \
       -artifact_prefix="$dir/artifacts/$target-" "$dir/corpus/$target" "$seeds" >"$log" 2>&1; then
    echo "fuzz: $target FAILED (see $log and $dir/artifacts/)"; tail -n 40 "$log"; exit 1
  fi
  runs=$(grep -o 'Done [0-9]* runs' "$log" | tail -n 1 | awk '{print $2}')
  echo "fuzz: $target: ${runs:-?} executions in ${seconds}s, no crash"
done

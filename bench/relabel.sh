#!/usr/bin/env bash
# The cost of the decision-head relabel (pocketdec extract --head with a pointer head) on the
# bundled generative model: the dev split (283 reviews) extracted without and with
# models/tianchi-gen/head, best of R runs each, and what the head adds a record. Prints one
# line per binary; give several binaries (e.g. one built before a change) to compare them in
# one run, on the same machine at the same moment. The output files' checksums show whether
# the records are the same. Wall seconds move with whatever else the machine runs; CPU
# seconds (user + system) much less.
# Usage: bench/relabel.sh [-t THREADS] [-r RUNS] [POCKETDEC ...]   (default: build/cli/pocketdec)
set -euo pipefail
cd "$(dirname "$0")/.."
threads=2 runs=3
while getopts "t:r:" o; do
  case $o in t) threads=$OPTARG ;; r) runs=$OPTARG ;; *) exit 2 ;; esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || set -- build/cli/pocketdec
G=models/tianchi-gen
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
best() { # "wall cpu": the best wall and the best user+system seconds of $runs runs of "$@"
  local w=inf c=inf e u s
  for _ in $(seq "$runs"); do
    /usr/bin/time -f "%e %U %S" -o "$tmp/time" "$@" 2>/dev/null
    read -r e u s < "$tmp/time"
    w=$(python3 -c "print(min($e, float('$w')))")
    c=$(python3 -c "print(min($u + $s, float('$c')))")
  done
  echo "$w $c"
}
report='
import sys
bin, threads = sys.argv[1], int(sys.argv[2])
pw, pc, hw, hc = map(float, sys.argv[3:7])
records, md5 = int(sys.argv[7]), sys.argv[8]
print(f"{bin}: {threads} threads, 283 reviews, {records} output rows: extract {pw:.2f} s ({pc:.2f} s CPU), "
      f"with --head {hw:.2f} s ({hc:.2f} s CPU); the relabel {hc - pc:.2f} s CPU, {1000 * (hc - pc) / records:.1f} ms "
      f"a row, {hc / pc:.1f}x the CPU of extraction alone; output md5 {md5}")
'
for bin in "$@"; do
  args=(extract --model $G/base --adapter $G/adapter --schema schemas/tianchi-makeup.yaml
        --input data/tianchi/dev_reviews.csv --threads "$threads")
  plain=$(best "$bin" "${args[@]}" --output "$tmp/plain.csv")
  head=$(best "$bin" "${args[@]}" --head $G/head --output "$tmp/head.csv")
  # shellcheck disable=SC2086
  python3 -c "$report" "$bin" "$threads" $plain $head "$(wc -l < "$tmp/head.csv")" "$(md5sum < "$tmp/head.csv" | cut -c1-12)"
done

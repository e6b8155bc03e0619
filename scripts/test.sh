#!/usr/bin/env bash
# Build pocketdec and run every test. Usage: scripts/test.sh [BUILD_DIR [meson setup options...]]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh test
dir=${1:-build}
shift || true
if [ ! -f "$dir/build.ninja" ]; then
  meson setup "$dir" "$@" >/dev/null
elif meson configure "$dir" | grep -Eq '^ *tests +false'; then
  meson configure "$dir" -Dtests=true >/dev/null  # a build/ that scripts/demo.sh set up without the tests
fi
meson compile -C "$dir"
status=0
meson test -C "$dir" --print-errorlogs --num-processes 2 | tee "$dir/test-summary.txt" || status=$?
ok=$(awk '/^Ok:/ {print $2}' "$dir/test-summary.txt")
bad=$(awk '/^(Fail|Unexpected Pass|Timeout):/ {s += $2} END {print s + 0}' "$dir/test-summary.txt")
echo "${ok:-0} passed, ${bad} failed"
exit $status

#!/usr/bin/env bash
# The aarch64 (phone) kernels: cross-compile lib/core and the kernel test with
# Debian's aarch64 toolchain and run the test under qemu-user, once for plain
# ARMv8-A NEON (widening multiplies) and once for ARMv8.2-A with the dot-product
# extension (SDOT). The test checks that the NEON integer kernels give the
# portable reference's bits. No arm64 libraries are needed: the test links only
# lib/core and a cmocka stand-in (scripts/cross/cmocka.h).
# Usage: scripts/test-arm.sh [OUT_DIR]   (apt packages: see scripts/setup.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
cc=aarch64-linux-gnu-gcc
for tool in "$cc" qemu-aarch64; do
  command -v "$tool" >/dev/null || { echo "test-arm: $tool is missing (gcc-aarch64-linux-gnu, qemu-user)" >&2; exit 1; }
done
out=${1:-build-arm}
mkdir -p "$out"
flags=(-std=c11 -O2 -Wall -Wextra -Werror -ffp-contract=off -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE
       -Ilib -Ilib/core)
for march in armv8-a armv8.2-a+dotprod; do
  name=${march//+/-}
  echo "== aarch64 -march=$march"
  # every file of lib/core compiles for aarch64
  for f in lib/core/*.c; do "$cc" "${flags[@]}" -march="$march" -c "$f" -o "$out/$(basename "$f" .c)-$name.o"; done
  "$cc" "${flags[@]}" -march="$march" -Iscripts/cross lib/core/kernels.c lib/core/kernels_shared.c lib/core/kernels_portable.c \
    lib/core/kernels_avx2.c lib/core/kernels_avx2_int.c lib/core/kernels_avx512.c lib/core/kernels_neon.c \
    lib/formats/quantize.c lib/formats/numbers.c lib/formats/store.c lib/error.c \
    tests/model/test_kernels.c \
    -lm -o "$out/test_kernels-$name"
  qemu-aarch64 -L /usr/aarch64-linux-gnu "$out/test_kernels-$name"
done
echo "aarch64 kernels: ok"

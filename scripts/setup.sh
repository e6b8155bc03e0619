#!/usr/bin/env bash
# Install the Debian 12 packages pocketdec needs (run as root).
#   scripts/setup.sh build   what building the library and the tools and running them needs
#                            (scripts/demo.sh): compiler, meson, ninja, the five libraries (libmicrohttpd for
#                            `pocketdec serve`), python3
#   scripts/setup.sh [test]  that and what the tests need (scripts/test.sh, .ci/run): cmocka,
#                            numpy and PyYAML for the fixtures, pytest for the Python package,
#                            meson-python and venv for its `pip install` test (tests/python/check_wheel.py),
#                            pandas for pocketdec.summarize (tests/python/test_summarize.py),
#                            dask, distributed and GNU parallel for the sharding tests
#                            (tests/python/test_dask.py), PyTorch and OpenBLAS for the training
#                            tests, the aarch64 cross compiler and qemu-user for the NEON kernels,
#                            strace (its fault injection kills `extract` inside its progress update),
#                            chromium, python3-websocket and a CJK font (pages tested and
#                            screenshotted in a headless browser)
# Skips apt when every package is already there, so it is cheap to call twice.
set -euo pipefail
what=${1:-test}
packages=(build-essential meson ninja-build pkg-config
          libyaml-dev libjansson-dev libpcre2-dev libutf8proc-dev libmicrohttpd-dev python3)
case "$what" in
  build) ;;
  test) packages+=(libcmocka-dev python3-numpy python3-yaml python3-pytest python3-mesonpy python3-venv python3-pandas python3-dask nginx-light
                   python3-distributed parallel python3-torch libopenblas0-pthread strace chromium python3-websocket
                   fonts-wqy-microhei
                   gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user) ;;
  *) echo "usage: scripts/setup.sh [build|test]" >&2; exit 2 ;;
esac
find_missing() {
  missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
}
find_missing
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: the ${#packages[@]} packages for '$what' are installed"
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "setup: missing packages: ${missing[*]} (run as root, or apt-get install them)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
echo "setup: apt-get update"
apt-get update -qq
echo "setup: installing ${#missing[@]} packages for '$what' with their dependencies: ${missing[*]}"
# one line a package as it is unpacked and set up, so a long install shows where it is
apt-get install -y -q -o Dpkg::Use-Pty=0 --no-install-recommends "${missing[@]}" |
  grep --line-buffered -E '^(Get:|Unpacking|Setting up)' || true
find_missing
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: apt-get did not install: ${missing[*]}" >&2
  exit 1
fi

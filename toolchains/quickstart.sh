#!/usr/bin/env bash
# README's first command: install what is needed, build the `mote` tool, fetch and convert
# SmolLM2-135M-Instruct (once, cached in ~/.cache/mote) and answer a prompt with it.
#   toolchains/quickstart.sh [PROMPT]
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
prompt=${1:-"Give me three tips for writing clear code."}

"$repo/toolchains/install-deps.sh" --no-cross --no-python
cd "$repo"  # presets are looked up in the current folder
cmake --preset release >/dev/null
cmake --build --preset release --target mote_cli
mote="$repo/build/release/mote"
# `mote` on the PATH: a link in ~/.local/bin (on the PATH of Debian's default ~/.profile once the
# folder exists), so README's bare `mote ...` lines work as written.
mkdir -p "$HOME/.local/bin"
ln -sf "$mote" "$HOME/.local/bin/mote"
echo "quickstart: installed $HOME/.local/bin/mote (a link to $mote)" >&2
case ":$PATH:" in
  *":$HOME/.local/bin:"*) ;;
  *) echo "quickstart: add it to your PATH: export PATH=\"\$HOME/.local/bin:\$PATH\"" >&2 ;;
esac

model=$("$repo/models/fetch_smollm2.sh" "$mote")
"$mote" run --chat -m "$model" -p "$prompt" -n 256 --seed 42
echo

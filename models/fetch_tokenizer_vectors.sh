#!/usr/bin/env bash
# Fetches llama.cpp's tokenizer test vectors (MIT) into the cache, once: the vocabulary-only
# GGUFs models/ggml-vocab-*.gguf with their .inp/.out cases, and the chat templates
# models/templates/*.jinja, from the llama-cpp-python 0.3.36 sdist on PyPI (its vendored
# llama.cpp). Nothing is committed; tests/test_tokenizer_vectors.cpp reads
#   $XDG_CACHE_HOME/mote (default ~/.cache/mote)/tokenizer-vectors/
# A copy already unpacked in ~/.cache/mote/peers/llama-cpp-python-0.3.36 is reused.
# Usage: models/fetch_tokenizer_vectors.sh
# Exit status 3 means the sdist could not be fetched (tests skip on it; CI fails on it).
set -euo pipefail
cache="${XDG_CACHE_HOME:-$HOME/.cache}/mote"
out="$cache/tokenizer-vectors"
version=0.3.36
unpacked="$cache/peers/llama-cpp-python-$version/vendor/llama.cpp/models"

if [ -f "$out/ggml-vocab-qwen2.gguf.out" ] && [ -d "$out/templates" ]; then
  echo "$out"
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/out/templates"
if [ -d "$unpacked" ]; then
  cp "$unpacked"/ggml-vocab-*.gguf* "$tmp/out/"
  cp "$unpacked"/templates/*.jinja "$tmp/out/templates/"
else
  echo "fetch_tokenizer_vectors: downloading the llama-cpp-python==$version sdist from PyPI (~70 MB)" >&2
  if ! python3 -m pip download --no-deps --no-binary :all: --disable-pip-version-check --progress-bar on \
      --dest "$tmp" "llama-cpp-python==$version" >&2; then
    echo "fetch_tokenizer_vectors: cannot download llama-cpp-python==$version from PyPI (offline?)" >&2
    exit 3
  fi
  # Only the vectors and templates are extracted from the sdist.
  python3 - "$tmp"/llama_cpp_python-*.tar.gz "$tmp/out" <<'PY'
import os, re, shutil, sys, tarfile
keep = re.compile(r"^[^/]+/vendor/llama\.cpp/models/(ggml-vocab-[^/]+\.gguf(\.inp|\.out)?|templates/[^/]+\.jinja)$")
with tarfile.open(sys.argv[1]) as sdist:
    for member in sdist:
        m = keep.match(member.name)
        if m and member.isfile():
            with sdist.extractfile(member) as src, open(os.path.join(sys.argv[2], m.group(1)), "wb") as dst:
                shutil.copyfileobj(src, dst)
PY
fi
[ -f "$tmp/out/ggml-vocab-qwen2.gguf.out" ] ||
  { echo "fetch_tokenizer_vectors: the sdist holds no models/ggml-vocab-qwen2.gguf.out" >&2; exit 1; }
mkdir -p "$cache"
rm -rf "$out"
mv "$tmp/out" "$out"
echo "$out"

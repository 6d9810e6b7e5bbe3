#!/usr/bin/env bash
# Fetches llama.cpp's tokenizer test vectors (MIT) into the cache, once: the vocabulary-only
# GGUFs models/ggml-vocab-*.gguf with their .inp/.out cases, and the chat templates
# models/templates/*.jinja, and its grammars (grammars/*.gbnf, and the accept/reject cases of
# tests/test-grammar-integration.cpp turned into grammar-integration.txt by
# models/grammar_integration_cases.py), from the llama-cpp-python 0.3.36 sdist on PyPI (its
# vendored llama.cpp). Nothing is committed; tests/test_tokenizer_vectors.cpp and
# tests/test_grammar_reference.cpp read
#   $XDG_CACHE_HOME/mote (default ~/.cache/mote)/tokenizer-vectors/
# A copy already unpacked in ~/.cache/mote/peers/llama-cpp-python-0.3.36 is reused.
# Usage: models/fetch_tokenizer_vectors.sh
# Exit status 3 means the sdist could not be fetched (tests skip on it; CI fails on it).
set -euo pipefail
cache="${XDG_CACHE_HOME:-$HOME/.cache}/mote"
out="$cache/tokenizer-vectors"
version=0.3.36
vendored="$cache/peers/llama-cpp-python-$version/vendor/llama.cpp"
unpacked="$vendored/models"
here=$(cd "$(dirname "$0")" && pwd)

if [ -f "$out/ggml-vocab-qwen2.gguf.out" ] && [ -d "$out/templates" ] && [ -f "$out/grammar-integration.txt" ]; then
  echo "$out"
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/out/templates" "$tmp/out/grammars"
if [ -d "$unpacked" ] && [ -f "$vendored/tests/test-grammar-integration.cpp" ]; then
  cp "$unpacked"/ggml-vocab-*.gguf* "$tmp/out/"
  cp "$unpacked"/templates/*.jinja "$tmp/out/templates/"
  cp "$vendored"/grammars/*.gbnf "$tmp/out/grammars/"
  cp "$vendored/tests/test-grammar-integration.cpp" "$tmp/out/"
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
keep = re.compile(r"^[^/]+/vendor/llama\.cpp/(?:models/)?(ggml-vocab-[^/]+\.gguf(\.inp|\.out)?|templates/[^/]+\.jinja"
                  r"|grammars/[^/]+\.gbnf)$|^[^/]+/vendor/llama\.cpp/tests/(test-grammar-integration\.cpp)$")
with tarfile.open(sys.argv[1]) as sdist:
    for member in sdist:
        m = keep.match(member.name)
        if m and member.isfile():
            with sdist.extractfile(member) as src, open(os.path.join(sys.argv[2], m.group(1) or m.group(3)), "wb") as dst:
                shutil.copyfileobj(src, dst)
PY
fi
[ -f "$tmp/out/ggml-vocab-qwen2.gguf.out" ] ||
  { echo "fetch_tokenizer_vectors: the sdist holds no models/ggml-vocab-qwen2.gguf.out" >&2; exit 1; }
[ -f "$tmp/out/grammars/json.gbnf" ] && [ -f "$tmp/out/test-grammar-integration.cpp" ] ||
  { echo "fetch_tokenizer_vectors: the sdist holds no grammars/json.gbnf or tests/test-grammar-integration.cpp" >&2; exit 1; }
python3 "$here/grammar_integration_cases.py" "$tmp/out/test-grammar-integration.cpp" "$tmp/out/grammar-integration.txt"
mkdir -p "$cache"
rm -rf "$out"
mv "$tmp/out" "$out"
echo "$out"

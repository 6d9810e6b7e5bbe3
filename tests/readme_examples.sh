#!/usr/bin/env bash
# Runs the `mote ...` examples of README.md and of the documents its text moved to, file by file
# in the order of `documents` below and in order within each file, as a user pastes them, with the
# models CI has.
#   tests/readme_examples.sh MODELS_DIR [MOTE_BINARY_DIR]   (default: build/default)
# Each line of a ```sh block that starts with `mote ` runs in one scratch folder (shared by every
# document, so a file one example writes is there for the next) holding the files the examples
# name: model.gguf is the cached SmolLM2 GGUF (models/fetch_smollm2.sh), stories15M.bin +
# tokenizer.bin are MODELS_DIR's llama2.c aidreams260K (the tinyllamas need a network), the Hugging
# Face and GPT-2 folders are the tiny goldens, docs.txt the first golden embedder sentences,
# answer.gbnf a yes/no grammar, user.schema.json a JSON schema; the family GGUFs and the embedders
# are models/fetch_families.sh's and models/fetch_embedders.sh's, in the real cache. Optional parts
# of a synopsis (`[--check]`) are left out. Build lines (cmake, ctest, the quick start) are CI's own
# steps.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
models=$(cd "${1:?usage: tests/readme_examples.sh MODELS_DIR [MOTE_BINARY_DIR]}" && pwd)
bin_dir=$(cd "${2:-$repo/build/default}" && pwd)
[ -x "$bin_dir/mote" ] || { echo "readme_examples: no mote in $bin_dir" >&2; exit 1; }
cache="${XDG_CACHE_HOME:-$HOME/.cache}/mote"
gguf="$cache/SmolLM2-135M-Instruct.Q4_1.gguf"
[ -f "$gguf" ] || { echo "readme_examples: $gguf is absent: run models/fetch_smollm2.sh" >&2; exit 1; }

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
ln -s "$gguf" "$scratch/model.gguf"
# A cache of the scratch folder's own (holding the default model), so the GGUF examples leave no
# conversion behind in the user's cache.
mkdir -p "$scratch/cache/mote"
ln -s "$cache/SmolLM2-135M-Instruct.mote" "$scratch/cache/mote/SmolLM2-135M-Instruct.mote"
cp "$models/aidreams260K.bin" "$scratch/stories15M.bin"
cp "$models/aidreams_tok512.bin" "$scratch/tokenizer.bin"
cp -r "$repo/tests/golden/tiny_hf" "$scratch/hf_checkpoint_dir"
mkdir "$scratch/gpt2_dir"
cp "$repo/tests/golden/tiny_gpt2/prenorm_gelu_tanh/"* "$repo/tests/golden/tiny_gpt2/tokenizer"*.json "$scratch/gpt2_dir/"
cp "$repo/tests/golden/tiny_gpt2/prenorm_gelu_tanh.gguf" "$scratch/gpt2.gguf"
for _ in $(seq 40); do cat "$repo/tests/golden/perplexity_text.txt"; done >"$scratch/text.txt"
# The embedder examples' documents (the models are models/fetch_embedders.sh's, in the real cache)
# and the chat example's grammar.
head -n 20 "$repo/tests/golden/embedders/sentences.txt" >"$scratch/docs.txt"
printf 'root ::= ("yes" | "no") "."\n' >"$scratch/answer.gbnf"
printf '%s\n' '{"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}, "required": ["name", "age"]}' >"$scratch/user.schema.json"

export PATH="$bin_dir:$PATH" XDG_CACHE_HOME="$scratch/cache"
# README.md, then where its text moved: conversions come before the commands that use their files.
documents=(README.md docs/CONVERTING.md docs/USING.md docs/HARDENING.md docs/DESIGN.md
  bench/README.md toolchains/README.md ports/cuda/README.md)
for document in "${documents[@]}"; do
  [ -f "$repo/$document" ] || { echo "readme_examples: $document is missing" >&2; exit 1; }
done
count=0
while IFS=$'\t' read -r document line; do
  command=$(printf '%s' "$line" | sed -e 's/  *#.*$//' -e 's/ \[[^]]*\]//g')
  echo "readme_examples: $document: \$ $command" >&2
  # stdin: nothing (mote chat then answers no message and ends, as with Ctrl-D at once).
  (cd "$scratch" && bash -c "$command" </dev/null >"$scratch/out.txt" 2>"$scratch/err.txt") || {
    echo "readme_examples: failed ($document): $command" >&2
    cat "$scratch/err.txt" >&2
    exit 1
  }
  count=$((count + 1))
done < <(for document in "${documents[@]}"; do
  awk -v document="$document" '/^```sh/ { inside = 1; next } /^```/ { inside = 0 }
    inside && /^mote / { print document "\t" $0 }' "$repo/$document"
done)
echo "readme_examples: $count examples of ${#documents[@]} documents ran" >&2

#!/usr/bin/env bash
# Whether two mote binaries compute the same bits: for a restructuring that must change nothing
# (issue 35: every step lands bit-identical). Converts the llama2.c models of MODELS_DIR, the five
# tiny families (f32 and q8_0) and three GPT-2 variants with OLD, then runs `mote perplexity`
# with each binary over every model x KV type (f32, f16, q8_0) x batch size (1, 7, 64) and
# compares the saved log-probabilities (--kl-divergence-base) and the perplexity line byte for
# byte. Exit 1 on the first difference.
#   tests/bit_identical.sh OLD_MOTE NEW_MOTE [MODELS_DIR]   (default ../shared/models)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
old=$(realpath "${1:?usage: tests/bit_identical.sh OLD_MOTE NEW_MOTE [MODELS_DIR]}")
new=$(realpath "${2:?usage: tests/bit_identical.sh OLD_MOTE NEW_MOTE [MODELS_DIR]}")
models=$(cd "${3:-$repo/../shared/models}" && pwd)
golden="$repo/tests/golden"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
"$old" convert "$models/aidreams260K.bin" --tokenizer "$models/aidreams_tok512.bin" -o aidreams.mote >/dev/null 2>&1
"$old" convert "$models/stories260K.bin" --tokenizer "$models/aidreams_tok512.bin" -o stories.mote >/dev/null 2>&1
for family in gemma3 llama3 phi3 qwen2 qwen3; do
  "$old" convert "$golden/tiny_families/$family/model.gguf" -o "$family.mote" >/dev/null 2>&1
  "$old" convert "$golden/tiny_families/$family/model.gguf" -o "$family.q8_0.mote" --dtype q8_0 >/dev/null 2>&1
done
for variant in prenorm_gelu_tanh postnorm_sinusoidal prenorm_relu; do
  "$old" convert "$golden/tiny_gpt2/$variant" --tokenizer "$golden/tiny_gpt2/tokenizer.json" -o "gpt2_$variant.mote" >/dev/null 2>&1
done
head -c 3000 "$golden/perplexity_text.txt" > text.txt
runs=0
for model in *.mote; do
  for kv in f32 f16 q8_0; do
    for batch in 1 7 64; do
      for which in old new; do
        "${!which}" perplexity -m "$model" -f text.txt -c 64 -b "$batch" --kv "$kv" -t 2 --chunks 3 \
          --kl-divergence-base "$which.logprobs" 2>&1 | grep '^perplexity:' > "$which.txt"
      done
      if ! cmp -s old.logprobs new.logprobs || ! cmp -s old.txt new.txt; then
        echo "bit_identical: $model, KV $kv, batch $batch differs" >&2
        exit 1
      fi
      runs=$((runs + 1))
    done
  done
done
echo "bit_identical: $runs runs, every log-probability identical"

#!/bin/sh
# Writes tests/golden/smollm2_llama_base.logits: llama.cpp's own base-logits file
# (`llama-perplexity --kl-divergence-base`) for SmolLM2-135M-Instruct Q4_1 over the first window
# of 6 tokens of perplexity_text.txt (2 scored positions, 196,668 bytes), which test_kld reads
# back with `mote perplexity --kl-divergence`. Needs the peer built by bench/peers/build_llama_cpp.sh.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bin=${LLAMA_CPP_BIN:-$HOME/.cache/mote/peers/llama.cpp-build-0.3.36/bin}
model=${MOTE_SMOLLM2_GGUF:-$HOME/.cache/mote/SmolLM2-135M-Instruct.Q4_1.gguf}
LD_LIBRARY_PATH=$bin "$bin/llama-perplexity" -m "$model" -f "$here/perplexity_text.txt" -c 6 --chunks 1 -b 6 -t 1 \
  --kl-divergence-base "$here/smollm2_llama_base.logits"

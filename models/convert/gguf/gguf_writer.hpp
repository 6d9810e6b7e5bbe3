// Export of a converted model as a GGUF file (version 3) that llama.cpp loads unchanged, so a model
// quantized by mote moves to a llama.cpp server (host side: may allocate).
//
// Decisions (the next engineer should know):
// - The tensors are the blocks mote would store, byte for byte: an x8 interleaved layout
//   (q4_0x8, ...) is de-interleaved back to its plain GGUF blocks; no value is requantized. Every
//   dtype whose format row names a ggml type is written as that type.
// - Names and metadata keys are llama.cpp's for the family's architecture (families.cpp's row:
//   its block, the flags a file may add, its head shapes and keys). A config outside its row
//   (post-norm or sinusoidal GPT-2, exact GELU, ReLU, an encoder, ...) is refused: llama.cpp
//   would run it as something else.
// - GGUF's llama Q/K rows are in interleaved-pair RoPE order. A split-half config (Hugging Face
//   sources) has its attn_q / attn_k rows permuted per head (GGUF row 2i = row i, row 2i + 1 =
//   row i + head_dim / 2): whole rows move, so the blocks stay exact.
// - The tokenizer: sentencepiece -> model "llama" (a space back to U+2581, scores, types);
//   byte-level BPE -> model "gpt2" (normal tokens in GPT-2's byte-to-unicode form, merges as
//   "left right"), pre-tokenizer "gpt-2" when number runs stay whole, else "smollm" (digits
//   split one by one, as mote does). The chat template kind is written as a small ChatML or
//   Llama-2 template (mote keeps the kind, not the source's text).
// - Tensor data is 32-byte aligned (general.alignment = 32); general.file_type is the ftype of
//   the most frequent matrix type, the way llama.cpp guesses it when the key is absent.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model_data.hpp"

namespace mote::convert {

// Lays out model as a complete GGUF file in *out. False with a one-line message when the model
// cannot be expressed as llama.cpp's architecture for its family, or a tensor's dtype has no ggml
// type.
bool serialize_gguf(const ModelData &model, std::vector<uint8_t> *out, std::string *error);

}  // namespace mote::convert

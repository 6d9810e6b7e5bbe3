// The hf/ folder's door (convert.cpp includes this header alone). Import of Hugging Face
// checkpoints of every family families.hpp knows (config.json's model_type picks the row: llama,
// gpt2, qwen2, qwen3, gemma3_text, phi3; hf_families.hpp reads the keys and names the tensors): a
// directory with config.json, model.safetensors (or shards listed in model.safetensors.index.json),
// tokenizer.json and optionally tokenizer_config.json.
//
// Decisions (the next engineer should know):
// - Tensors (F32, F16 or BF16) are stored as options.dtype (f32, f16, q8_0, q4_0 or q4_1);
//   norm vectors as f32.
// - GPT-2's Conv1D weights (c_attn, c_proj, c_fc) are stored (in, out): they are transposed
//   into mote's (out, in) rows; c_attn stays one fused attn_qkv matrix (q, k, v rows).
// - Hugging Face rotates split halves (rotate_half) in every family: rope_layout = split_half,
//   and the Q/K weights are used as they are (no permutation).
// - Llama 3's rope_scaling becomes a rope_freqs tensor computed as llama.cpp's converter does;
//   Gemma's norm weights w are stored as the 1 + w its RMSNorm multiplies by (as GGUF holds them).
// - A tensor name the mapping does not know is an error, except `*.rotary_emb.inv_freq` (derived
//   from rope_theta), GPT-2's `*.attn.bias` / `*.attn.masked_bias` (causal mask buffers) and
//   `lm_head.weight` of a model with tied embeddings (a copy of the embedding). A known tensor the
//   config's architecture has no use for (wpe with sinusoidal positions) is an error too.
// - Only byte-level BPE tokenizers are imported (tokenizer.json with a BPE model and a ByteLevel
//   pre-tokenizer). When the embedding has more rows than the tokenizer has tokens (vocabularies
//   padded to a multiple of 64, say), the missing ids become empty tokens of type "unused".
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "dtype_policy.hpp"

namespace mote::convert {

struct SafetensorsOptions {
  format::DType dtype = format::DType::f16;       // for matrices: f32, f16, q8_0, q4_0 or q4_1
  Mix mix = Mix::none;                            // dtype's recipe (quantize_recipe.hpp)
  BlockLayout layout = BlockLayout::interleaved;  // of quantized matrices (see BlockLayout)
  std::string tokenizer_path;                     // tokenizer.json; empty: the one in the directory
  std::function<void(size_t done, size_t total)> progress;
};

// path: the checkpoint directory, or its config.json or a .safetensors file inside it.
bool load_hf_checkpoint(const std::string &path, const SafetensorsOptions &options, ModelData *out, std::string *error);

}  // namespace mote::convert

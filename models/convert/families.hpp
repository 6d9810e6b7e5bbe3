// The model families the importers know, as data (host side): one row per family gives the block
// its files describe — norm, positions, activation, the config flags fixed by the family — so a
// family is a row here, not an importer function. The sizes (dim, layers, ...) and the per-file
// choices (tied embeddings, windows, RoPE factors) come from each file.
#pragma once

#include <cstdint>
#include <string>

#include "format/format.hpp"

namespace mote::convert {

// The llama row's config: RMSNorm (epsilon 1e-5), RoPE (base 10000, interleaved pairs), SwiGLU,
// no biases, no sizes: llama2.c checkpoints and tests start from it.
format::ModelConfig llama_config();

// The sizes every importer reads from its source (already range-checked by it).
struct LlamaShape {
  int64_t dim, n_layers, n_heads, n_kv_heads, head_dim, ffn_dim, vocab_size, context;
};
// llama_config() with these sizes; the context is capped at the format's 2^20 positions.
format::ModelConfig llama_config(const LlamaShape &shape);

struct FamilyRow {
  const char *gguf_arch;  // GGUF's general.architecture, also its key prefix ("qwen2.block_count")
  const char *hf_type;    // config.json's model_type (null: no safetensors import)
  format::Family family;
  format::NormKind norm;
  format::PositionKind positions;
  // llama.cpp stores llama's q/k rows permuted so that adjacent pairs rotate as Hugging Face's
  // halves do; every other family keeps the halves (NeoX style). Safetensors always hold halves.
  format::RopeLayout gguf_rope_layout;
  format::Activation activation;
  uint32_t flags;       // the family's fixed config flags
  const char *eps_key;  // after the prefix: "attention.layer_norm_rms_epsilon" or "attention.layer_norm_epsilon"
  // A windowed family: every this-many-th layer attends globally (0: every layer is windowed when
  // the file gives a window), and the windowed layers' RoPE base (0: the file's base). llama.cpp
  // fixes both for Gemma 3 (5 local : 1 global, base 10000) instead of storing them.
  uint32_t swa_global_every;
  float rope_theta_local;
  // Gemma's RMSNorm multiplies by (1 + w): Hugging Face stores w, GGUF already stores 1 + w.
  bool hf_norm_adds_one;
  // llama.cpp reads <arch>.attention.sliding_window for this family (Gemma 3, Phi-3); for the
  // others it ignores the key, and so does mote's GGUF importer (with a note), so a file
  // generates alike in both (Hugging Face's Llama has no window, Qwen2's is off by default).
  bool gguf_window;
  // llama.cpp applies a rope_freqs tensor (Llama 3's per-pair RoPE divisors) for this family only
  // (llama); elsewhere the tensor has no place, and the GGUF writer refuses the factors.
  bool gguf_rope_factors;
  // The family's files may state fewer K/V heads than query heads and a head size apart from
  // dim / heads. GPT-2's fused c_attn cuts the embedding into whole heads: its GGUF import takes
  // head_count heads for K/V, and its GGUF export refuses any other shape.
  bool grouped_heads;
  // The GGUF writer states <arch>.vocab_size (llama.cpp's converter writes none for GPT-2, whose
  // files end their hyperparameters at the epsilon).
  bool gguf_vocab_size;
};

// The row of a GGUF architecture or a config.json model_type; null when mote does not know it.
const FamilyRow *family_by_gguf_arch(const std::string &arch);
const FamilyRow *family_by_hf_type(const std::string &model_type);
// The row of a config's family; null for a value no row has.
const FamilyRow *family_row(format::Family family);
// "llama, gpt2, qwen2, ..." for refusals.
std::string known_gguf_archs();
std::string known_hf_types();

// The config of row's block with these sizes; norm_eps and rope_theta as given (rope_theta
// ignored without RoPE); a sliding window of window positions (0: none; a window as wide as the
// context is no window); the context capped at the format's 2^20 positions; no BOS or EOS id.
format::ModelConfig family_config(const FamilyRow &row, const LlamaShape &shape, double norm_eps, double rope_theta,
                                  uint32_t window);

}  // namespace mote::convert

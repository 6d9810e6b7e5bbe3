// The Hugging Face side of the model families (host side): how each family's checkpoint names its
// tensors, and config.json read for any family (families.hpp's row gives the block; these are
// the keys and names). See hf.hpp for the importer's decisions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "families.hpp"
#include "hf/json.hpp"

namespace mote::convert {

struct HfName {
  const char *name;  // after the family's layer prefix ("model.layers.N.", "h.N.") for per-layer tensors
  format::Role role;
  bool per_layer;
  bool transposed;  // GPT-2's Conv1D stores (in, out): the transpose of a Linear's (out, in)
};

// How one checkpoint family names its tensors: its own names first (they win over the shared
// ones, both ways), then the names it shares with the other decoders.
struct HfNames {
  const char *what;  // "a Llama model", in "is not part of a Llama model"
  const HfName *own;
  size_t n_own;
  const HfName *shared;
  size_t n_shared;
  const char *layer_prefix;  // before the layer number
  const char *strip_prefix;  // dropped from every name first, when present
  // Names of derived data or of heads mote has no use for (null: unused): a name suffix, or with a
  // final '*' a prefix of the name after strip_prefix ("cls.*": BertForMaskedLM's head).
  const char *ignored[3];
};

// row's checkpoint names; null with a one-line *error naming a family mote has no Hugging Face
// import for (nomic-bert), never another family's names.
const HfNames *hf_names(const FamilyRow &row, std::string *error);
const HfName *find_hf_name(const HfNames &names, format::Role role);
// "model.layers.3.self_attn.q_proj.weight" for (attn_q, 3); "?" for a role the family never names.
std::string hf_tensor_name(const HfNames &names, format::Role role, uint32_t layer);
// The role and layer of a checkpoint tensor name; false for a name the family does not know.
bool parse_hf_tensor_name(const HfNames &names, const std::string &full_name, format::Role *role, uint32_t *layer);
// Gemma's norm weights w (the model multiplies by 1 + w) among the roles: the norm vectors.
bool is_norm_weight(format::Role role);

// config.json as a .mote config, for every family families.hpp knows (model_type picks the row;
// without model_type, the first architectures class; with neither, llama's).
struct HfConfig {
  const FamilyRow *row = nullptr;
  const HfNames *names = nullptr;  // the row's checkpoint names
  format::ModelConfig config{};
  bool tied = false;
  std::vector<float> rope_factors;  // Llama 3 scaling's per-pair divisors (kFlagRopeFactors); else empty
};
bool hf_config(const JsonValue &config, HfConfig *out, std::string *error);

// Llama 3 RoPE scaling's divisor of each of head_dim / 2 frequencies, in float32 step by step as
// llama.cpp's convert_hf_to_gguf.py computes the rope_freqs it stores (torch float32).
std::vector<float> llama3_rope_factors(uint32_t head_dim, double theta, double factor, double low_freq_factor,
                                       double high_freq_factor, double original_context);

}  // namespace mote::convert

#include "families.hpp"

namespace mote::convert {
namespace {

using format::Activation;
using format::Family;
using format::NormKind;
using format::PositionKind;
using format::RopeLayout;

constexpr const char *kRmsEps = "attention.layer_norm_rms_epsilon";
constexpr const char *kLayerNormEps = "attention.layer_norm_epsilon";
constexpr uint32_t kBertFlags = format::kFlagEncoder | format::kFlagPostNorm | format::kFlagNormBias |
                                format::kFlagEmbedNorm | format::kFlagTokenTypes;

// Facts from each family's published definition (and llama.cpp's GGUF conventions for it).
const FamilyRow kFamilies[] = {
    // gguf_arch, hf_type, family, norm, positions, gguf_rope_layout, activation, flags, eps_key,
    // swa_global_every, rope_theta_local, hf_norm_adds_one, gguf_window
    {"llama", "llama", Family::llama, NormKind::rmsnorm, PositionKind::rope, RopeLayout::interleaved,
     Activation::swiglu, 0, kRmsEps, 0, 0.0f, false, false},
    {"gpt2", "gpt2", Family::gpt2, NormKind::layernorm, PositionKind::learned, RopeLayout::none, Activation::gelu,
     format::kFlagAttentionBias | format::kFlagFfnBias | format::kFlagFusedQkv | format::kFlagNormBias, kLayerNormEps,
     0, 0.0f, false, false},
    {"qwen2", "qwen2", Family::qwen2, NormKind::rmsnorm, PositionKind::rope, RopeLayout::split_half, Activation::swiglu,
     format::kFlagQkvBias, kRmsEps, 0, 0.0f, false, false},
    {"qwen3", "qwen3", Family::qwen3, NormKind::rmsnorm, PositionKind::rope, RopeLayout::split_half, Activation::swiglu,
     format::kFlagQkNorm, kRmsEps, 0, 0.0f, false, false},
    {"gemma3", "gemma3_text", Family::gemma3, NormKind::rmsnorm, PositionKind::rope, RopeLayout::split_half,
     Activation::geglu, format::kFlagQkNorm | format::kFlagSandwichNorm | format::kFlagEmbedScale, kRmsEps, 6, 10000.0f,
     true, true},
    {"phi3", "phi3", Family::phi3, NormKind::rmsnorm, PositionKind::rope, RopeLayout::split_half, Activation::swiglu,
     format::kFlagFusedQkv | format::kFlagFusedGateUp, kRmsEps, 0, 0.0f, false, true},
    // Embedders: post-norm LayerNorm encoders with token types and an embedding norm.
    {"bert", "bert", Family::bert, NormKind::layernorm, PositionKind::learned, RopeLayout::none, Activation::gelu_erf,
     kBertFlags | format::kFlagAttentionBias | format::kFlagFfnBias, kLayerNormEps, 0, 0.0f, false, false},
    {"nomic-bert", nullptr, Family::nomic_bert, NormKind::layernorm, PositionKind::rope, RopeLayout::split_half,
     Activation::swiglu, kBertFlags | format::kFlagFusedQkv, kLayerNormEps, 0, 0.0f, false, false},
};

template <class Key>
const FamilyRow *find_row(Key key) {
  for (const FamilyRow &row : kFamilies) {
    if (key(row)) return &row;
  }
  return nullptr;
}

template <class Name>
std::string list_names(Name name) {
  std::string names;
  for (const FamilyRow &row : kFamilies) {
    if (name(row) != nullptr) names += (names.empty() ? "" : ", ") + std::string(name(row));
  }
  return names;
}

}  // namespace

const FamilyRow *family_by_gguf_arch(const std::string &arch) {
  return find_row([&](const FamilyRow &row) { return arch == row.gguf_arch; });
}

const FamilyRow *family_by_hf_type(const std::string &model_type) {
  return find_row([&](const FamilyRow &row) { return row.hf_type != nullptr && model_type == row.hf_type; });
}

std::string known_gguf_archs() {
  return list_names([](const FamilyRow &row) { return row.gguf_arch; });
}

std::string known_hf_types() {
  return list_names([](const FamilyRow &row) { return row.hf_type; });
}

format::ModelConfig family_config(const FamilyRow &row, const LlamaShape &shape, double norm_eps, double rope_theta,
                                  uint32_t window) {
  format::ModelConfig c = llama_config(shape);
  c.family = row.family;
  c.norm_kind = row.norm;
  c.norm_eps = static_cast<float>(norm_eps);
  c.position_kind = row.positions;
  const bool rotary = row.positions == PositionKind::rope;
  c.rope_theta = rotary ? static_cast<float>(rope_theta) : 0.0f;
  c.rope_layout = rotary ? row.gguf_rope_layout : RopeLayout::none;
  c.activation = row.activation;
  c.flags = row.flags;
  if (window != 0 && window < c.max_seq_len) {
    c.flags |= format::kFlagSlidingWindow;
    c.sliding_window = window;
    // A model shallower than the pattern has no global layer: every layer windowed (0), as the
    // pattern itself would give.
    c.swa_global_every = row.swa_global_every <= c.n_layers ? row.swa_global_every : 0;
    c.rope_theta_local = row.rope_theta_local != 0.0f ? row.rope_theta_local : c.rope_theta;
  }
  return c;
}

}  // namespace mote::convert

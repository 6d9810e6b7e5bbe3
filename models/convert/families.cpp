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
    // swa_global_every, rope_theta_local, hf_norm_adds_one, gguf_window, gguf_rope_factors, grouped_heads,
    // gguf_vocab_size
    {"llama", "llama", Family::llama, NormKind::rmsnorm, PositionKind::rope, RopeLayout::interleaved,
     Activation::swiglu, 0, kRmsEps, 0, 0.0f, false, false, true, true, true},
    {"gpt2", "gpt2", Family::gpt2, NormKind::layernorm, PositionKind::learned, RopeLayout::none, Activation::gelu,
     format::kFlagAttentionBias | format::kFlagFfnBias | format::kFlagFusedQkv | format::kFlagNormBias, kLayerNormEps,
     0, 0.0f, false, false, false, false, false},
    {"qwen2", "qwen2", Family::qwen2, NormKind::rmsnorm, PositionKind::rope, RopeLayout::split_half, Activation::swiglu,
     format::kFlagQkvBias, kRmsEps, 0, 0.0f, false, false, false, true, true},
    {"qwen3", "qwen3", Family::qwen3, NormKind::rmsnorm, PositionKind::rope, RopeLayout::split_half, Activation::swiglu,
     format::kFlagQkNorm, kRmsEps, 0, 0.0f, false, false, false, true, true},
    {"gemma3", "gemma3_text", Family::gemma3, NormKind::rmsnorm, PositionKind::rope, RopeLayout::split_half,
     Activation::geglu, format::kFlagQkNorm | format::kFlagSandwichNorm | format::kFlagEmbedScale, kRmsEps, 6, 10000.0f,
     true, true, false, true, true},
    {"phi3", "phi3", Family::phi3, NormKind::rmsnorm, PositionKind::rope, RopeLayout::split_half, Activation::swiglu,
     format::kFlagFusedQkv | format::kFlagFusedGateUp, kRmsEps, 0, 0.0f, false, true, false, true, true},
    // Embedders: post-norm LayerNorm encoders with token types and an embedding norm.
    {"bert", "bert", Family::bert, NormKind::layernorm, PositionKind::learned, RopeLayout::none, Activation::gelu_erf,
     kBertFlags | format::kFlagAttentionBias | format::kFlagFfnBias, kLayerNormEps, 0, 0.0f, false, false, false, true,
     true},
    {"nomic-bert", nullptr, Family::nomic_bert, NormKind::layernorm, PositionKind::rope, RopeLayout::split_half,
     Activation::swiglu, kBertFlags | format::kFlagFusedQkv, kLayerNormEps, 0, 0.0f, false, false, false, true, true},
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

const FamilyRow *family_row(Family family) {
  return find_row([&](const FamilyRow &row) { return family == row.family; });
}

std::string known_gguf_archs() {
  return list_names([](const FamilyRow &row) { return row.gguf_arch; });
}

std::string known_hf_types() {
  return list_names([](const FamilyRow &row) { return row.hf_type; });
}

format::ModelConfig family_config(const FamilyRow &row, const LlamaShape &shape, double norm_eps, double rope_theta,
                                  uint32_t window) {
  format::ModelConfig c{};
  c.family = row.family;
  c.dim = static_cast<uint32_t>(shape.dim);
  c.n_layers = static_cast<uint32_t>(shape.n_layers);
  c.n_heads = static_cast<uint32_t>(shape.n_heads);
  c.n_kv_heads = static_cast<uint32_t>(shape.n_kv_heads);
  c.head_dim = static_cast<uint32_t>(shape.head_dim);
  c.ffn_dim = static_cast<uint32_t>(shape.ffn_dim);
  c.vocab_size = static_cast<uint32_t>(shape.vocab_size);
  c.max_seq_len = static_cast<uint32_t>(shape.context < (1 << 20) ? shape.context : (1 << 20));
  c.bos_id = -1;
  c.eos_id = -1;
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

// llama.cpp's defaults for a llama file without the keys: epsilon 1e-5, RoPE base 10000.
format::ModelConfig llama_config(const LlamaShape &shape) {
  return family_config(*family_by_gguf_arch("llama"), shape, 1e-5, 10000.0, 0);
}

format::ModelConfig llama_config() { return llama_config(LlamaShape{}); }

}  // namespace mote::convert

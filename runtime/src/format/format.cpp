#include "format/format.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>

namespace mote::format {

namespace {

// When each optional role is needed (the always-needed ones use always).
bool always(const BlockSpec &) { return true; }
bool separate_qkv(const BlockSpec &s) { return !s.fused_qkv; }
bool fused_qkv(const BlockSpec &s) { return s.fused_qkv; }
bool separate_qkv_bias(const BlockSpec &s) { return s.qkv_bias && !s.fused_qkv; }
bool fused_qkv_bias(const BlockSpec &s) { return s.qkv_bias && s.fused_qkv; }
bool output_bias(const BlockSpec &s) { return s.output_bias; }
bool separate_gate(const BlockSpec &s) { return s.gated_ffn && !s.fused_gate_up; }
bool separate_up(const BlockSpec &s) { return !s.fused_gate_up; }
bool fused_gate_up(const BlockSpec &s) { return s.fused_gate_up; }
bool gate_bias(const BlockSpec &s) { return s.gated_ffn && s.ffn_bias; }
bool ffn_bias(const BlockSpec &s) { return s.ffn_bias; }
bool norm_bias(const BlockSpec &s) { return s.norm_bias; }
bool final_norm(const BlockSpec &s) { return !s.post_norm; }
bool final_norm_bias(const BlockSpec &s) { return !s.post_norm && s.norm_bias; }
bool untied(const BlockSpec &s) { return !s.tied_embeddings && !s.encoder; }
bool embed_norm(const BlockSpec &s) { return s.embed_norm; }
bool embed_norm_bias(const BlockSpec &s) { return s.embed_norm && s.norm_bias; }
bool token_types(const BlockSpec &s) { return s.token_types; }
bool learned_positions(const BlockSpec &s) { return s.positions == PositionKind::learned; }
bool qk_norm(const BlockSpec &s) { return s.qk_norm; }
bool sandwich_norm(const BlockSpec &s) { return s.sandwich_norm; }
bool rope_factors(const BlockSpec &s) { return s.positions == PositionKind::rope && s.rope_factors; }

using E = Extent;
constexpr RoleInfo kRoles[] = {
    // role, name, GGUF stem, GGUF stem under post-norm, per_layer, bias, rows, cols (== rows: a vector), needed
    {Role::token_embedding, "token_embd", "token_embd", nullptr, false, false, E::vocab, E::dim, always},
    {Role::attn_norm, "attn_norm", "attn_norm", "attn_output_norm", true, false, E::dim, E::dim, always},
    {Role::attn_q, "attn_q", "attn_q", nullptr, true, false, E::q_dim, E::dim, separate_qkv},
    {Role::attn_k, "attn_k", "attn_k", nullptr, true, false, E::kv_dim, E::dim, separate_qkv},
    {Role::attn_v, "attn_v", "attn_v", nullptr, true, false, E::kv_dim, E::dim, separate_qkv},
    {Role::attn_output, "attn_output", "attn_output", nullptr, true, false, E::dim, E::q_dim, always},
    {Role::ffn_norm, "ffn_norm", "ffn_norm", "layer_output_norm", true, false, E::dim, E::dim, always},
    {Role::ffn_gate, "ffn_gate", "ffn_gate", nullptr, true, false, E::ffn_dim, E::dim, separate_gate},
    {Role::ffn_down, "ffn_down", "ffn_down", nullptr, true, false, E::dim, E::ffn_dim, always},
    {Role::ffn_up, "ffn_up", "ffn_up", nullptr, true, false, E::ffn_dim, E::dim, separate_up},
    {Role::output_norm, "output_norm", "output_norm", nullptr, false, false, E::dim, E::dim, final_norm},
    {Role::output, "output", "output", nullptr, false, false, E::vocab, E::dim, untied},
    {Role::attn_qkv, "attn_qkv", "attn_qkv", nullptr, true, false, E::qkv_dim, E::dim, fused_qkv},
    {Role::attn_q_bias, "attn_q_bias", "attn_q", nullptr, true, true, E::q_dim, E::q_dim, separate_qkv_bias},
    {Role::attn_k_bias, "attn_k_bias", "attn_k", nullptr, true, true, E::kv_dim, E::kv_dim, separate_qkv_bias},
    {Role::attn_v_bias, "attn_v_bias", "attn_v", nullptr, true, true, E::kv_dim, E::kv_dim, separate_qkv_bias},
    {Role::attn_qkv_bias, "attn_qkv_bias", "attn_qkv", nullptr, true, true, E::qkv_dim, E::qkv_dim, fused_qkv_bias},
    {Role::attn_output_bias, "attn_output_bias", "attn_output", nullptr, true, true, E::dim, E::dim, output_bias},
    {Role::ffn_gate_bias, "ffn_gate_bias", "ffn_gate", nullptr, true, true, E::ffn_dim, E::ffn_dim, gate_bias},
    {Role::ffn_up_bias, "ffn_up_bias", "ffn_up", nullptr, true, true, E::ffn_dim, E::ffn_dim, ffn_bias},
    {Role::ffn_down_bias, "ffn_down_bias", "ffn_down", nullptr, true, true, E::dim, E::dim, ffn_bias},
    {Role::attn_norm_bias, "attn_norm_bias", "attn_norm", "attn_output_norm", true, true, E::dim, E::dim, norm_bias},
    {Role::ffn_norm_bias, "ffn_norm_bias", "ffn_norm", "layer_output_norm", true, true, E::dim, E::dim, norm_bias},
    {Role::output_norm_bias, "output_norm_bias", "output_norm", nullptr, false, true, E::dim, E::dim, final_norm_bias},
    {Role::pos_embd, "pos_embd", "position_embd", nullptr, false, false, E::context, E::dim, learned_positions},
    {Role::attn_q_norm, "attn_q_norm", "attn_q_norm", nullptr, true, false, E::head_dim, E::head_dim, qk_norm},
    {Role::attn_k_norm, "attn_k_norm", "attn_k_norm", nullptr, true, false, E::head_dim, E::head_dim, qk_norm},
    {Role::post_attn_norm, "post_attention_norm", "post_attention_norm", nullptr, true, false, E::dim, E::dim, sandwich_norm},
    {Role::post_ffn_norm, "post_ffw_norm", "post_ffw_norm", nullptr, true, false, E::dim, E::dim, sandwich_norm},
    {Role::rope_freqs, "rope_freqs", "rope_freqs", nullptr, false, false, E::half_head, E::half_head, rope_factors},
    // GGUF keeps Phi-3's fused gate and up under ffn_up's name: the spec tells the two apart.
    {Role::ffn_gate_up, "ffn_gate_up", "ffn_up", nullptr, true, false, E::gate_up_dim, E::dim, fused_gate_up},
    {Role::token_types, "token_types", "token_types", nullptr, false, false, E::dim, E::dim, token_types},
    {Role::embd_norm, "token_embd_norm", "token_embd_norm", nullptr, false, false, E::dim, E::dim, embed_norm},
    {Role::embd_norm_bias, "token_embd_norm_bias", "token_embd_norm", nullptr, false, true, E::dim, E::dim,
     embed_norm_bias},
};
static_assert(sizeof kRoles / sizeof kRoles[0] == kRoleCount - 1, "one row per role");

constexpr bool roles_in_order() {
  for (uint32_t i = 0; i < kRoleCount - 1; ++i) {
    if (static_cast<uint32_t>(kRoles[i].role) != i + 1) return false;
  }
  return true;
}
static_assert(roles_in_order(), "role r sits at row r - 1");

}  // namespace

const RoleInfo *role_info(uint32_t role) { return role >= 1 && role < kRoleCount ? &kRoles[role - 1] : nullptr; }

const char *family_name(Family family) {
  static const char *const kNames[kFamilyCount] = {nullptr, "llama", "gpt2", "qwen2", "gemma3", "qwen3", "phi3", "bert", "nomic-bert"};
  const uint32_t index = static_cast<uint32_t>(family);
  return index < kFamilyCount ? kNames[index] : nullptr;
}

const char *role_name(uint32_t role) {
  const RoleInfo *info = role_info(role);
  return info == nullptr ? nullptr : info->name;
}

uint32_t extent(const ModelConfig &c, Extent e) {
  switch (e) {
    case Extent::dim:
      return c.dim;
    case Extent::q_dim:
      return c.n_heads * c.head_dim;
    case Extent::kv_dim:
      return c.n_kv_heads * c.head_dim;
    case Extent::qkv_dim:
      return (c.n_heads + 2 * c.n_kv_heads) * c.head_dim;
    case Extent::ffn_dim:
      return c.ffn_dim;
    case Extent::gate_up_dim:
      return 2 * c.ffn_dim;
    case Extent::head_dim:
      return c.head_dim;
    case Extent::half_head:
      return c.head_dim / 2;
    case Extent::vocab:
      return c.vocab_size;
    case Extent::context:
      return c.max_seq_len;
  }
  return 0;
}

BlockSpec block_spec(const ModelConfig &c) {
  const auto flag = [&](uint32_t bit) { return (c.flags & bit) != 0; };
  BlockSpec spec{};
  spec.norm = c.norm_kind;
  spec.norm_bias = flag(kFlagNormBias);
  spec.norm_eps = c.norm_eps;
  spec.positions = c.position_kind;
  spec.rope_layout = c.rope_layout;
  spec.rope_factors = flag(kFlagRopeFactors);
  spec.activation = c.activation;
  spec.gated_ffn = c.activation == Activation::swiglu || c.activation == Activation::geglu;
  spec.fused_gate_up = flag(kFlagFusedGateUp);
  spec.qkv_bias = flag(kFlagAttentionBias) || flag(kFlagQkvBias);
  spec.output_bias = flag(kFlagAttentionBias);
  spec.ffn_bias = flag(kFlagFfnBias);
  spec.fused_qkv = flag(kFlagFusedQkv);
  spec.qk_norm = flag(kFlagQkNorm);
  spec.sandwich_norm = flag(kFlagSandwichNorm);
  spec.embed_scale = flag(kFlagEmbedScale);
  spec.post_norm = flag(kFlagPostNorm);
  spec.tied_embeddings = flag(kFlagTiedEmbeddings);
  spec.encoder = flag(kFlagEncoder);
  spec.embed_norm = flag(kFlagEmbedNorm);
  spec.token_types = flag(kFlagTokenTypes);
  spec.normalize_embeddings = flag(kFlagNormalizeEmbeddings);
  spec.pooling = spec.encoder ? c.pooling : Pooling::mean;
  if (flag(kFlagSlidingWindow)) {
    spec.sliding_window = c.sliding_window;
    spec.swa_global_every = c.swa_global_every;
    spec.rope_theta_local = c.rope_theta_local;
  }
  spec.attention_scale =
      flag(kFlagAttentionScale) ? c.attention_scale : 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  return spec;
}

bool is_global_role(Role role) {
  const RoleInfo *info = role_info(static_cast<uint32_t>(role));
  return info != nullptr && !info->per_layer;
}

bool role_needed(const BlockSpec &spec, Role role) {
  const RoleInfo *info = role_info(static_cast<uint32_t>(role));
  return info != nullptr && info->needed(spec);
}

void tensor_name(const TensorEntry &entry, char *out, size_t capacity) {
  const char *role = role_name(entry.role);
  if (role == nullptr) {
    std::snprintf(out, capacity, "role#%u", static_cast<unsigned>(entry.role));
  } else if (entry.layer == kNoLayer) {
    std::snprintf(out, capacity, "%s", role);
  } else {
    std::snprintf(out, capacity, "blk.%u.%s", static_cast<unsigned>(entry.layer), role);
  }
}

uint64_t payload_checksum(const uint8_t *bytes, size_t n) {
  uint64_t hash = 0xcbf29ce484222325ull;  // FNV-1a 64 offset basis
  for (size_t i = 0; i + 8 <= n; i += 8) {
    uint64_t word = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    std::memcpy(&word, bytes + i, sizeof word);  // one load (GCC does not fuse the byte loop below)
#else
    for (int b = 7; b >= 0; --b) word = (word << 8) | bytes[i + b];  // little-endian, any host
#endif
    hash ^= word;
    hash *= 0x100000001b3ull;  // FNV prime
  }
  return hash;
}

}  // namespace mote::format

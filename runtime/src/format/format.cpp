#include "format/format.hpp"

#include <cstdio>

namespace mote::format {

const char *role_name(uint32_t role) {
  switch (static_cast<Role>(role)) {
    case Role::token_embedding:
      return "token_embd";
    case Role::attn_norm:
      return "attn_norm";
    case Role::attn_q:
      return "attn_q";
    case Role::attn_k:
      return "attn_k";
    case Role::attn_v:
      return "attn_v";
    case Role::attn_output:
      return "attn_output";
    case Role::ffn_norm:
      return "ffn_norm";
    case Role::ffn_gate:
      return "ffn_gate";
    case Role::ffn_down:
      return "ffn_down";
    case Role::ffn_up:
      return "ffn_up";
    case Role::output_norm:
      return "output_norm";
    case Role::output:
      return "output";
    case Role::attn_qkv:
      return "attn_qkv";
    case Role::attn_q_bias:
      return "attn_q_bias";
    case Role::attn_k_bias:
      return "attn_k_bias";
    case Role::attn_v_bias:
      return "attn_v_bias";
    case Role::attn_qkv_bias:
      return "attn_qkv_bias";
    case Role::attn_output_bias:
      return "attn_output_bias";
    case Role::ffn_gate_bias:
      return "ffn_gate_bias";
    case Role::ffn_up_bias:
      return "ffn_up_bias";
    case Role::ffn_down_bias:
      return "ffn_down_bias";
    case Role::attn_norm_bias:
      return "attn_norm_bias";
    case Role::ffn_norm_bias:
      return "ffn_norm_bias";
    case Role::output_norm_bias:
      return "output_norm_bias";
    case Role::pos_embd:
      return "pos_embd";
  }
  return nullptr;
}

BlockSpec block_spec(const ModelConfig &c) {
  BlockSpec spec{};
  spec.norm = c.norm_kind;
  spec.norm_bias = (c.flags & kFlagNormBias) != 0;
  spec.norm_eps = c.norm_eps;
  spec.positions = c.position_kind;
  spec.rope_layout = c.rope_layout;
  spec.activation = c.activation;
  spec.gated_ffn = c.activation == Activation::swiglu;
  spec.attention_bias = (c.flags & kFlagAttentionBias) != 0;
  spec.ffn_bias = (c.flags & kFlagFfnBias) != 0;
  spec.fused_qkv = (c.flags & kFlagFusedQkv) != 0;
  spec.post_norm = (c.flags & kFlagPostNorm) != 0;
  spec.tied_embeddings = (c.flags & kFlagTiedEmbeddings) != 0;
  return spec;
}

bool is_global_role(Role role) {
  return role == Role::token_embedding || role == Role::output_norm || role == Role::output ||
         role == Role::output_norm_bias || role == Role::pos_embd;
}

bool role_needed(const BlockSpec &spec, Role role) {
  switch (role) {
    case Role::token_embedding:
    case Role::attn_norm:
    case Role::attn_output:
    case Role::ffn_norm:
    case Role::ffn_up:
    case Role::ffn_down:
      return true;
    case Role::attn_q:
    case Role::attn_k:
    case Role::attn_v:
      return !spec.fused_qkv;
    case Role::attn_qkv:
      return spec.fused_qkv;
    case Role::attn_q_bias:
    case Role::attn_k_bias:
    case Role::attn_v_bias:
      return spec.attention_bias && !spec.fused_qkv;
    case Role::attn_qkv_bias:
      return spec.attention_bias && spec.fused_qkv;
    case Role::attn_output_bias:
      return spec.attention_bias;
    case Role::ffn_gate:
      return spec.gated_ffn;
    case Role::ffn_gate_bias:
      return spec.gated_ffn && spec.ffn_bias;
    case Role::ffn_up_bias:
    case Role::ffn_down_bias:
      return spec.ffn_bias;
    case Role::attn_norm_bias:
    case Role::ffn_norm_bias:
      return spec.norm_bias;
    case Role::output_norm:
      return !spec.post_norm;
    case Role::output_norm_bias:
      return !spec.post_norm && spec.norm_bias;
    case Role::output:
      return !spec.tied_embeddings;
    case Role::pos_embd:
      return spec.positions == PositionKind::learned;
  }
  return false;
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
    for (int b = 7; b >= 0; --b) word = (word << 8) | bytes[i + b];  // little-endian, any host
    hash ^= word;
    hash *= 0x100000001b3ull;  // FNV prime
  }
  return hash;
}

}  // namespace mote::format

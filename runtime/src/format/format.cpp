#include "format/format.hpp"

#include <cstdio>

namespace mote::format {

const DTypeTraits *dtype_traits(uint32_t dtype) {
  // Quantized blocks are GGUF's: 32 elements with an fp16 scale (and fp16 min); the x8 types
  // hold the same blocks, 8 rows interleaved.
  static const DTypeTraits kTraits[] = {
      {"f32", 1, 4, 1},    {"f16", 1, 2, 1},      {"bf16", 1, 2, 1},     {"q8_0", 32, 34, 1},   {"q4_0", 32, 18, 1},
      {"q4_1", 32, 20, 1}, {"q8_0x8", 32, 34, 8}, {"q4_0x8", 32, 18, 8}, {"q4_1x8", 32, 20, 8},
  };
  if (dtype >= sizeof kTraits / sizeof kTraits[0]) return nullptr;
  return &kTraits[dtype];
}

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
  }
  return nullptr;
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

#include "dequant.hpp"

#include <cstring>

#include "core/fp16.hpp"

namespace mote::convert {
namespace {

// ggml's blocks, field for field (fp16 fields as their bits; the host is little-endian, as the
// GGUF file is). Read by memcpy: tensor data in a file is not aligned for the uint16_t fields.
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[32];
};
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[16];  // element j: low nibble of qs[j], element j + 16: its high nibble
};
struct BlockQ4_1 {
  uint16_t d, m;
  uint8_t qs[16];
};
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];  // bit j (of the little-endian uint32): the fifth bit of element j
  uint8_t qs[16];
};
struct BlockQ5_1 {
  uint16_t d, m;
  uint8_t qh[4];
  uint8_t qs[16];
};
struct BlockIQ4_NL {
  uint16_t d;
  uint8_t qs[16];  // indices into kIQ4Values, packed as Q4_0's
};
struct BlockQ2_K {
  uint8_t scales[16];  // per 16 elements: scale in the low nibble, min in the high
  uint8_t qs[64];      // 2-bit codes
  uint16_t d, dmin;
};
struct BlockQ3_K {
  uint8_t hmask[32];   // bit k of hmask[l]: the third bit of element 32k + l
  uint8_t qs[64];      // low 2 bits
  uint8_t scales[12];  // 16 six-bit scales, offset by 32
  uint16_t d;
};
struct BlockQ4_K {
  uint16_t d, dmin;
  uint8_t scales[12];  // 8 six-bit scales and 8 six-bit mins (unpack_k_scales)
  uint8_t qs[128];
};
struct BlockQ5_K {
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t qh[32];  // bit s of qh[j]: the fifth bit of element j of sub-block s
  uint8_t qs[128];
};
struct BlockQ6_K {
  uint8_t ql[128];  // low 4 bits
  uint8_t qh[64];   // high 2 bits
  int8_t scales[16];
  uint16_t d;
};
struct BlockIQ4_XS {
  uint16_t d;
  uint16_t scales_h;    // bits 2s, 2s+1: the top two bits of sub-block s's six-bit scale
  uint8_t scales_l[4];  // the low nibbles, two sub-blocks a byte
  uint8_t qs[128];      // 16 bytes a 32-element sub-block, packed as Q4_0's
};
static_assert(sizeof(BlockQ8_0) == 34 && sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20, "ggml block sizes");
static_assert(sizeof(BlockQ5_0) == 22 && sizeof(BlockQ5_1) == 24 && sizeof(BlockIQ4_NL) == 18, "ggml block sizes");
static_assert(sizeof(BlockQ2_K) == 84 && sizeof(BlockQ3_K) == 110 && sizeof(BlockQ4_K) == 144, "ggml block sizes");
static_assert(sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210 && sizeof(BlockIQ4_XS) == 136, "ggml block sizes");

constexpr int kQK = 256;  // elements per K-quant super-block

// IQ4_NL's and IQ4_XS's 16 non-uniform levels (ggml's kvalues_iq4nl).
constexpr int8_t kIQ4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

float half(uint16_t bits) { return fp16_to_f32(bits); }

// Calls fn(block, out) for each of n_blocks blocks of type Block at src, out advancing by
// elements floats from dst.
template <typename Block, typename Fn>
void for_each_block(const uint8_t *src, size_t n_blocks, float *dst, int elements, Fn fn) {
  for (size_t b = 0; b < n_blocks; ++b) {
    Block block;
    std::memcpy(&block, src + b * sizeof(Block), sizeof(Block));
    fn(block, dst + b * static_cast<size_t>(elements));
  }
}

// The 4-bit code of element j (0..31) of a 32-element run packed in 16 bytes.
int nibble(const uint8_t *qs, int j) { return j < 16 ? qs[j] & 0x0F : qs[j - 16] >> 4; }

// Q5_0/Q5_1's five-bit code of element j.
int five_bits(const uint8_t *qs, const uint8_t qh_bytes[4], int j) {
  uint32_t qh;
  std::memcpy(&qh, qh_bytes, 4);
  return nibble(qs, j) | static_cast<int>((qh >> j) & 1) << 4;
}

// The K-quants' twelve bytes of packed 6-bit scales and mins for 8 sub-blocks:
// bytes 0..3 hold scales 0..3 (low 6 bits) and the top 2 bits of scales 4..7; bytes 4..7 the
// same for mins; bytes 8..11 the low 4 bits of scales 4..7 (low nibble) and mins 4..7 (high).
void unpack_k_scales(const uint8_t *packed, uint8_t scales[8], uint8_t mins[8]) {
  for (int j = 0; j < 4; ++j) {
    scales[j] = packed[j] & 0x3F;
    mins[j] = packed[j + 4] & 0x3F;
    scales[j + 4] = static_cast<uint8_t>((packed[j + 8] & 0x0F) | ((packed[j] >> 2) & 0x30));
    mins[j + 4] = static_cast<uint8_t>((packed[j + 8] >> 4) | ((packed[j + 4] >> 2) & 0x30));
  }
}

// Q4_K / Q5_K: x = (d * scale[s]) * q - dmin * min[s] over sub-blocks s of 32, where
// code(s, j) gives q for element j of sub-block s.
template <typename Code>
void dequantize_k_sub_blocks(uint16_t d_bits, uint16_t dmin_bits, const uint8_t packed[12], float *out, Code code) {
  const float d = half(d_bits), dmin = half(dmin_bits);
  uint8_t scales[8], mins[8];
  unpack_k_scales(packed, scales, mins);
  for (int s = 0; s < 8; ++s) {
    const float ds = d * static_cast<float>(scales[s]), dm = dmin * static_cast<float>(mins[s]);
    for (int j = 0; j < 32; ++j) out[32 * s + j] = ds * static_cast<float>(code(s, j)) - dm;
  }
}

// Q4_K's code: sub-block s reads the low (s even) or high (s odd) nibbles of qs[32*(s/2), +32).
int q4_k_code(const uint8_t *qs, int s, int j) { return (qs[32 * (s / 2) + j] >> (4 * (s % 2))) & 0x0F; }

const GgmlTypeInfo kUnknown = {nullptr, 0, 0, false};

}  // namespace

const GgmlTypeInfo *ggml_type_info(uint32_t type) {
  // ggml's GGML_QUANT_SIZES, indexed by type id (ids 4 and 5 were removed from ggml).
  static const GgmlTypeInfo kTable[] = {
      {"F32", 1, 4, true},
      {"F16", 1, 2, true},
      {"Q4_0", 32, sizeof(BlockQ4_0), true},
      {"Q4_1", 32, sizeof(BlockQ4_1), true},
      kUnknown,
      kUnknown,
      {"Q5_0", 32, sizeof(BlockQ5_0), true},
      {"Q5_1", 32, sizeof(BlockQ5_1), true},
      {"Q8_0", 32, sizeof(BlockQ8_0), true},
      {"Q8_1", 32, 40, false},
      {"Q2_K", kQK, sizeof(BlockQ2_K), true},
      {"Q3_K", kQK, sizeof(BlockQ3_K), true},
      {"Q4_K", kQK, sizeof(BlockQ4_K), true},
      {"Q5_K", kQK, sizeof(BlockQ5_K), true},
      {"Q6_K", kQK, sizeof(BlockQ6_K), true},
      {"Q8_K", kQK, 292, false},
      {"IQ2_XXS", kQK, 66, false},
      {"IQ2_XS", kQK, 74, false},
      {"IQ3_XXS", kQK, 98, false},
      {"IQ1_S", kQK, 50, false},
      {"IQ4_NL", 32, sizeof(BlockIQ4_NL), true},
      {"IQ3_S", kQK, 110, false},
      {"IQ2_S", kQK, 82, false},
      {"IQ4_XS", kQK, sizeof(BlockIQ4_XS), true},
      {"I8", 1, 1, false},
      {"I16", 1, 2, false},
      {"I32", 1, 4, false},
      {"I64", 1, 8, false},
      {"F64", 1, 8, false},
      {"IQ1_M", kQK, 56, false},
      {"BF16", 1, 2, true},
      {"Q4_0_4_4", 32, 18, false},
      {"Q4_0_4_8", 32, 18, false},
      {"Q4_0_8_8", 32, 18, false},
  };
  if (type >= sizeof kTable / sizeof kTable[0] || kTable[type].name == nullptr) return nullptr;
  return &kTable[type];
}

void dequantize_f32(const uint8_t *src, size_t n, float *dst) { std::memcpy(dst, src, n * 4); }

void dequantize_f16(const uint8_t *src, size_t n, float *dst) {
  for (size_t i = 0; i < n; ++i) {
    uint16_t bits;
    std::memcpy(&bits, src + 2 * i, 2);
    dst[i] = half(bits);
  }
}

void dequantize_bf16(const uint8_t *src, size_t n, float *dst) {
  for (size_t i = 0; i < n; ++i) {
    uint16_t upper;
    std::memcpy(&upper, src + 2 * i, 2);
    const uint32_t bits = static_cast<uint32_t>(upper) << 16;
    std::memcpy(&dst[i], &bits, 4);
  }
}

// x = q * d.
void dequantize_q8_0(const uint8_t *src, size_t n_blocks, float *dst) {
  for_each_block<BlockQ8_0>(src, n_blocks, dst, 32, [](const BlockQ8_0 &b, float *out) {
    const float d = half(b.d);
    for (int j = 0; j < 32; ++j) out[j] = static_cast<float>(b.qs[j]) * d;
  });
}

// x = d * (q - 8).
void dequantize_q4_0(const uint8_t *src, size_t n_blocks, float *dst) {
  for_each_block<BlockQ4_0>(src, n_blocks, dst, 32, [](const BlockQ4_0 &b, float *out) {
    const float d = half(b.d);
    for (int j = 0; j < 32; ++j) out[j] = d * static_cast<float>(nibble(b.qs, j) - 8);
  });
}

// x = d * q + m.
void dequantize_q4_1(const uint8_t *src, size_t n_blocks, float *dst) {
  for_each_block<BlockQ4_1>(src, n_blocks, dst, 32, [](const BlockQ4_1 &b, float *out) {
    const float d = half(b.d), m = half(b.m);
    for (int j = 0; j < 32; ++j) out[j] = d * static_cast<float>(nibble(b.qs, j)) + m;
  });
}

// x = d * (q - 16).
void dequantize_q5_0(const uint8_t *src, size_t n_blocks, float *dst) {
  for_each_block<BlockQ5_0>(src, n_blocks, dst, 32, [](const BlockQ5_0 &b, float *out) {
    const float d = half(b.d);
    for (int j = 0; j < 32; ++j) out[j] = d * static_cast<float>(five_bits(b.qs, b.qh, j) - 16);
  });
}

// x = d * q + m.
void dequantize_q5_1(const uint8_t *src, size_t n_blocks, float *dst) {
  for_each_block<BlockQ5_1>(src, n_blocks, dst, 32, [](const BlockQ5_1 &b, float *out) {
    const float d = half(b.d), m = half(b.m);
    for (int j = 0; j < 32; ++j) out[j] = d * static_cast<float>(five_bits(b.qs, b.qh, j)) + m;
  });
}

// x = d * level[q].
void dequantize_iq4_nl(const uint8_t *src, size_t n_blocks, float *dst) {
  for_each_block<BlockIQ4_NL>(src, n_blocks, dst, 32, [](const BlockIQ4_NL &b, float *out) {
    const float d = half(b.d);
    for (int j = 0; j < 32; ++j) out[j] = d * static_cast<float>(kIQ4Values[nibble(b.qs, j)]);
  });
}

// Element e = 128h + 32k + l (half h, shift k, l < 32) is bits 2k..2k+1 of qs[32h + l]; each 16
// elements have a scale/min byte: x = (d * scale) * q - dmin * min.
void dequantize_q2_k(const uint8_t *src, size_t n_blocks, float *dst) {
  for_each_block<BlockQ2_K>(src, n_blocks, dst, kQK, [](const BlockQ2_K &b, float *out) {
    const float d = half(b.d), dmin = half(b.dmin);
    for (int group = 0; group < 16; ++group) {
      const float dl = d * static_cast<float>(b.scales[group] & 0x0F);
      const float ml = dmin * static_cast<float>(b.scales[group] >> 4);
      for (int i = 0; i < 16; ++i) {
        const int e = 16 * group + i, h = e / 128, k = (e % 128) / 32, l = e % 32;
        out[e] = dl * static_cast<float>((b.qs[32 * h + l] >> (2 * k)) & 3) - ml;
      }
    }
  });
}

// As Q2_K's codes, less 4 where the element's hmask bit is clear; sixteen six-bit scales:
// x = (d * (scale - 32)) * q.
void dequantize_q3_k(const uint8_t *src, size_t n_blocks, float *dst) {
  for_each_block<BlockQ3_K>(src, n_blocks, dst, kQK, [](const BlockQ3_K &b, float *out) {
    const float d = half(b.d);
    for (int group = 0; group < 16; ++group) {
      // Low 4 bits: nibble group/8 of byte group%8; top 2 bits: bits 2(group/4) of byte 8 + group%4.
      const int low = (b.scales[group % 8] >> (4 * (group / 8))) & 0x0F;
      const int high = (b.scales[8 + group % 4] >> (2 * (group / 4))) & 0x03;
      const float dl = d * static_cast<float>((low | high << 4) - 32);
      for (int i = 0; i < 16; ++i) {
        const int e = 16 * group + i, h = e / 128, k = (e % 128) / 32, l = e % 32;
        const int code = (b.qs[32 * h + l] >> (2 * k)) & 3;
        const bool no_offset = (b.hmask[l] >> (e / 32)) & 1;
        out[e] = dl * static_cast<float>(code - (no_offset ? 0 : 4));
      }
    }
  });
}

void dequantize_q4_k(const uint8_t *src, size_t n_blocks, float *dst) {
  for_each_block<BlockQ4_K>(src, n_blocks, dst, kQK, [](const BlockQ4_K &b, float *out) {
    dequantize_k_sub_blocks(b.d, b.dmin, b.scales, out, [&](int s, int j) { return q4_k_code(b.qs, s, j); });
  });
}

void dequantize_q5_k(const uint8_t *src, size_t n_blocks, float *dst) {
  for_each_block<BlockQ5_K>(src, n_blocks, dst, kQK, [](const BlockQ5_K &b, float *out) {
    dequantize_k_sub_blocks(b.d, b.dmin, b.scales, out,
                            [&](int s, int j) { return q4_k_code(b.qs, s, j) | ((b.qh[j] >> s) & 1) << 4; });
  });
}

// In each half h of 128 elements, element r takes the nibble of ql[64h + r%64] selected by r/64
// and the 2 bits of qh[32h + r%32] selected by r/32; x = (d * scale[e/16]) * (q - 32).
void dequantize_q6_k(const uint8_t *src, size_t n_blocks, float *dst) {
  for_each_block<BlockQ6_K>(src, n_blocks, dst, kQK, [](const BlockQ6_K &b, float *out) {
    const float d = half(b.d);
    for (int e = 0; e < kQK; ++e) {
      const int h = e / 128, r = e % 128;
      const int low = (b.ql[64 * h + r % 64] >> (4 * (r / 64))) & 0x0F;
      const int high = (b.qh[32 * h + r % 32] >> (2 * (r / 32))) & 0x03;
      out[e] = (d * static_cast<float>(b.scales[e / 16])) * static_cast<float>((low | high << 4) - 32);
    }
  });
}

// Eight sub-blocks of 32, each with a six-bit scale: x = (d * (scale - 32)) * level[q].
void dequantize_iq4_xs(const uint8_t *src, size_t n_blocks, float *dst) {
  for_each_block<BlockIQ4_XS>(src, n_blocks, dst, kQK, [](const BlockIQ4_XS &b, float *out) {
    const float d = half(b.d);
    for (int s = 0; s < 8; ++s) {
      const int low = (b.scales_l[s / 2] >> (4 * (s % 2))) & 0x0F;
      const int high = (b.scales_h >> (2 * s)) & 0x03;
      const float dl = d * static_cast<float>((low | high << 4) - 32);
      for (int j = 0; j < 32; ++j) out[32 * s + j] = dl * static_cast<float>(kIQ4Values[nibble(b.qs + 16 * s, j)]);
    }
  });
}

bool dequantize_ggml(uint32_t type, const uint8_t *src, size_t n_elements, float *dst) {
  const GgmlTypeInfo *info = ggml_type_info(type);
  if (info == nullptr || !info->dequantizable || n_elements % info->block_elements != 0) return false;
  const size_t n_blocks = n_elements / info->block_elements;
  void (*per_block)(const uint8_t *, size_t, float *) = nullptr;
  switch (static_cast<GgmlType>(type)) {
    case GgmlType::f32:
      dequantize_f32(src, n_elements, dst);
      return true;
    case GgmlType::f16:
      dequantize_f16(src, n_elements, dst);
      return true;
    case GgmlType::bf16:
      dequantize_bf16(src, n_elements, dst);
      return true;
    case GgmlType::q8_0:
      per_block = dequantize_q8_0;
      break;
    case GgmlType::q4_0:
      per_block = dequantize_q4_0;
      break;
    case GgmlType::q4_1:
      per_block = dequantize_q4_1;
      break;
    case GgmlType::q5_0:
      per_block = dequantize_q5_0;
      break;
    case GgmlType::q5_1:
      per_block = dequantize_q5_1;
      break;
    case GgmlType::q2_k:
      per_block = dequantize_q2_k;
      break;
    case GgmlType::q3_k:
      per_block = dequantize_q3_k;
      break;
    case GgmlType::q4_k:
      per_block = dequantize_q4_k;
      break;
    case GgmlType::q5_k:
      per_block = dequantize_q5_k;
      break;
    case GgmlType::q6_k:
      per_block = dequantize_q6_k;
      break;
    case GgmlType::iq4_nl:
      per_block = dequantize_iq4_nl;
      break;
    case GgmlType::iq4_xs:
      per_block = dequantize_iq4_xs;
      break;
    default:
      return false;
  }
  per_block(src, n_blocks, dst);
  return true;
}

}  // namespace mote::convert

#include "dequant.hpp"

#include <cstring>

#include "core/fp16.hpp"

namespace mote::convert {
namespace {

constexpr size_t kQK = 256;  // elements per K-quant super-block

uint16_t load_u16(const uint8_t *p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
float load_fp16(const uint8_t *p) { return fp16_to_f32(load_u16(p)); }

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

const GgmlTypeInfo kUnknown = {nullptr, 0, 0, false};

}  // namespace

const GgmlTypeInfo *ggml_type_info(uint32_t type) {
  // ggml's GGML_QUANT_SIZES, indexed by type id (ids 4 and 5 were removed from ggml).
  static const GgmlTypeInfo kTable[] = {
      {"F32", 1, 4, true},
      {"F16", 1, 2, true},
      {"Q4_0", 32, 18, true},
      {"Q4_1", 32, 20, true},
      kUnknown,
      kUnknown,
      {"Q5_0", 32, 22, false},
      {"Q5_1", 32, 24, false},
      {"Q8_0", 32, 34, true},
      {"Q8_1", 32, 40, false},
      {"Q2_K", 256, 84, false},
      {"Q3_K", 256, 110, false},
      {"Q4_K", 256, 144, true},
      {"Q5_K", 256, 176, true},
      {"Q6_K", 256, 210, true},
      {"Q8_K", 256, 292, false},
      {"IQ2_XXS", 256, 66, false},
      {"IQ2_XS", 256, 74, false},
      {"IQ3_XXS", 256, 98, false},
      {"IQ1_S", 256, 50, false},
      {"IQ4_NL", 32, 18, false},
      {"IQ3_S", 256, 110, false},
      {"IQ2_S", 256, 82, false},
      {"IQ4_XS", 256, 136, false},
      {"I8", 1, 1, false},
      {"I16", 1, 2, false},
      {"I32", 1, 4, false},
      {"I64", 1, 8, false},
      {"F64", 1, 8, false},
      {"IQ1_M", 256, 56, false},
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
  for (size_t i = 0; i < n; ++i) dst[i] = load_fp16(src + 2 * i);
}

void dequantize_bf16(const uint8_t *src, size_t n, float *dst) {
  for (size_t i = 0; i < n; ++i) {
    const uint32_t bits = static_cast<uint32_t>(load_u16(src + 2 * i)) << 16;
    std::memcpy(&dst[i], &bits, 4);
  }
}

// Q8_0 (34 bytes): fp16 d, 32 x int8 q; x = q * d.
void dequantize_q8_0(const uint8_t *src, size_t n_blocks, float *dst) {
  for (size_t b = 0; b < n_blocks; ++b, src += 34, dst += 32) {
    const float d = load_fp16(src);
    for (int j = 0; j < 32; ++j) dst[j] = static_cast<float>(static_cast<int8_t>(src[2 + j])) * d;
  }
}

// Q4_0 (18 bytes): fp16 d, 16 bytes; element j is the low nibble of byte j, element j + 16 the
// high nibble; x = d * (q - 8).
void dequantize_q4_0(const uint8_t *src, size_t n_blocks, float *dst) {
  for (size_t b = 0; b < n_blocks; ++b, src += 18, dst += 32) {
    const float d = load_fp16(src);
    const uint8_t *qs = src + 2;
    for (int j = 0; j < 16; ++j) {
      dst[j] = d * static_cast<float>((qs[j] & 0x0F) - 8);
      dst[j + 16] = d * static_cast<float>((qs[j] >> 4) - 8);
    }
  }
}

// Q4_1 (20 bytes): fp16 d, fp16 m, 16 bytes as Q4_0; x = d * q + m.
void dequantize_q4_1(const uint8_t *src, size_t n_blocks, float *dst) {
  for (size_t b = 0; b < n_blocks; ++b, src += 20, dst += 32) {
    const float d = load_fp16(src), m = load_fp16(src + 2);
    const uint8_t *qs = src + 4;
    for (int j = 0; j < 16; ++j) {
      dst[j] = d * static_cast<float>(qs[j] & 0x0F) + m;
      dst[j + 16] = d * static_cast<float>(qs[j] >> 4) + m;
    }
  }
}

// Q4_K (144 bytes): fp16 d, fp16 dmin, 12 bytes of scales/mins, 128 bytes of nibbles. Sub-block
// s (32 elements) reads the low (s even) or high (s odd) nibbles of bytes [32*(s/2), +32);
// x = (d * scale[s]) * q - dmin * min[s].
void dequantize_q4_k(const uint8_t *src, size_t n_blocks, float *dst) {
  for (size_t b = 0; b < n_blocks; ++b, src += 144, dst += kQK) {
    const float d = load_fp16(src), dmin = load_fp16(src + 2);
    uint8_t scales[8], mins[8];
    unpack_k_scales(src + 4, scales, mins);
    const uint8_t *qs = src + 16;
    for (int s = 0; s < 8; ++s) {
      const float ds = d * static_cast<float>(scales[s]), dm = dmin * static_cast<float>(mins[s]);
      const uint8_t *q = qs + 32 * (s / 2);
      const int shift = 4 * (s % 2);
      for (int j = 0; j < 32; ++j) dst[32 * s + j] = ds * static_cast<float>((q[j] >> shift) & 0x0F) - dm;
    }
  }
}

// Q5_K (176 bytes): as Q4_K with 32 bytes of high bits after the scales; bit s of qh[j] is the
// fifth bit of element j of sub-block s.
void dequantize_q5_k(const uint8_t *src, size_t n_blocks, float *dst) {
  for (size_t b = 0; b < n_blocks; ++b, src += 176, dst += kQK) {
    const float d = load_fp16(src), dmin = load_fp16(src + 2);
    uint8_t scales[8], mins[8];
    unpack_k_scales(src + 4, scales, mins);
    const uint8_t *qh = src + 16;
    const uint8_t *qs = src + 48;
    for (int s = 0; s < 8; ++s) {
      const float ds = d * static_cast<float>(scales[s]), dm = dmin * static_cast<float>(mins[s]);
      const uint8_t *q = qs + 32 * (s / 2);
      const int shift = 4 * (s % 2);
      for (int j = 0; j < 32; ++j) {
        const int value = ((q[j] >> shift) & 0x0F) | (((qh[j] >> s) & 1) << 4);
        dst[32 * s + j] = ds * static_cast<float>(value) - dm;
      }
    }
  }
}

// Q6_K (210 bytes): 128 bytes of low nibbles, 64 bytes of 2-bit high parts, 16 int8 scales (one
// per 16 elements), fp16 d. In each half h of 128 elements, element r takes the nibble of
// ql[64h + r%64] selected by r/64 and the 2 bits of qh[32h + r%32] selected by r/32;
// x = (d * scale) * (q - 32).
void dequantize_q6_k(const uint8_t *src, size_t n_blocks, float *dst) {
  for (size_t b = 0; b < n_blocks; ++b, src += 210, dst += kQK) {
    const uint8_t *ql = src, *qh = src + 128;
    const int8_t *scales = reinterpret_cast<const int8_t *>(src + 192);
    const float d = load_fp16(src + 208);
    for (int h = 0; h < 2; ++h) {
      for (int r = 0; r < 128; ++r) {
        const int low = (ql[64 * h + r % 64] >> (4 * (r / 64))) & 0x0F;
        const int high = (qh[32 * h + r % 32] >> (2 * (r / 32))) & 0x03;
        const int e = 128 * h + r;
        dst[e] = (d * static_cast<float>(scales[e / 16])) * static_cast<float>((low | (high << 4)) - 32);
      }
    }
  }
}

bool dequantize_ggml(uint32_t type, const uint8_t *src, size_t n_elements, float *dst) {
  const GgmlTypeInfo *info = ggml_type_info(type);
  if (info == nullptr || !info->dequantizable || n_elements % info->block_elements != 0) return false;
  const size_t n_blocks = n_elements / info->block_elements;
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
      dequantize_q8_0(src, n_blocks, dst);
      return true;
    case GgmlType::q4_0:
      dequantize_q4_0(src, n_blocks, dst);
      return true;
    case GgmlType::q4_1:
      dequantize_q4_1(src, n_blocks, dst);
      return true;
    case GgmlType::q4_k:
      dequantize_q4_k(src, n_blocks, dst);
      return true;
    case GgmlType::q5_k:
      dequantize_q5_k(src, n_blocks, dst);
      return true;
    case GgmlType::q6_k:
      dequantize_q6_k(src, n_blocks, dst);
      return true;
    default:
      return false;
  }
}

}  // namespace mote::convert

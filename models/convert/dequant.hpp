// Dequantization of ggml tensor blocks into floats (host side, for the GGUF importer).
//
// One function per block type, each over whole blocks, plus one dispatcher. The block layouts are
// ggml's (block structs in dequant.cpp, their sizes checked): 32-element blocks with an fp16 scale
// for Q4_0..Q8_0 and IQ4_NL, 256-element super-blocks with packed sub-block scales for the
// K-quants and IQ4_XS. The arithmetic is done in float in the same order as ggml's reference
// (d*q + m, (d*sc)*q - dmin*m, no fused multiply-adds) so the results match
// gguf.quants.dequantize bit for bit (tests/golden/gen_dequant_goldens.py).
#pragma once

#include <cstddef>
#include <cstdint>

namespace mote::convert {

// ggml's type ids (GGMLQuantizationType); only those listed in ggml_type_info are known.
enum class GgmlType : uint32_t {
  f32 = 0,
  f16 = 1,
  q4_0 = 2,
  q4_1 = 3,
  q5_0 = 6,
  q5_1 = 7,
  q8_0 = 8,
  q8_1 = 9,
  q2_k = 10,
  q3_k = 11,
  q4_k = 12,
  q5_k = 13,
  q6_k = 14,
  q8_k = 15,
  iq4_nl = 20,
  iq4_xs = 23,
  bf16 = 30,
};

struct GgmlTypeInfo {
  const char *name;         // "Q4_K"
  uint32_t block_elements;  // elements per block
  uint32_t block_bytes;     // bytes per block
  bool dequantizable;       // dequantize_ggml supports it
};

// Null for a type id ggml does not define (the GGUF parser rejects those). Types that ggml
// defines but mote cannot import (Q8_1, IQ2_XXS, ...) have an entry with dequantizable = false, so the
// container still validates their sizes.
const GgmlTypeInfo *ggml_type_info(uint32_t type);

// Per block type: n_blocks blocks from src into n_blocks * block_elements floats at dst.
void dequantize_f32(const uint8_t *src, size_t n, float *dst);  // n elements
void dequantize_f16(const uint8_t *src, size_t n, float *dst);
void dequantize_bf16(const uint8_t *src, size_t n, float *dst);
void dequantize_q8_0(const uint8_t *src, size_t n_blocks, float *dst);
void dequantize_q4_0(const uint8_t *src, size_t n_blocks, float *dst);
void dequantize_q4_1(const uint8_t *src, size_t n_blocks, float *dst);
void dequantize_q5_0(const uint8_t *src, size_t n_blocks, float *dst);
void dequantize_q5_1(const uint8_t *src, size_t n_blocks, float *dst);
void dequantize_q2_k(const uint8_t *src, size_t n_blocks, float *dst);
void dequantize_q3_k(const uint8_t *src, size_t n_blocks, float *dst);
void dequantize_q4_k(const uint8_t *src, size_t n_blocks, float *dst);
void dequantize_q5_k(const uint8_t *src, size_t n_blocks, float *dst);
void dequantize_q6_k(const uint8_t *src, size_t n_blocks, float *dst);
void dequantize_iq4_nl(const uint8_t *src, size_t n_blocks, float *dst);
void dequantize_iq4_xs(const uint8_t *src, size_t n_blocks, float *dst);

// Dequantizes n_elements (a multiple of the type's block) of type from src (which holds
// n_elements / block_elements * block_bytes bytes) into dst. False for a type that is not
// dequantizable or a count that is not a whole number of blocks.
bool dequantize_ggml(uint32_t type, const uint8_t *src, size_t n_elements, float *dst);

}  // namespace mote::convert

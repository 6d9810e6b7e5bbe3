// Dequantization of ggml tensor blocks into floats (host side, for the GGUF importer).
//
// One function per block type, each over whole blocks, plus one dispatcher. The block layouts are
// ggml's (see the gguf Python package's quants.py): 32-element blocks with fp16 scales for the
// legacy types, 256-element super-blocks with 6-bit packed sub-block scales for the K-quants.
// The arithmetic is done in float in the same order as ggml's reference (d*q + m, (d*sc)*q - dmin*m)
// so the results match gguf.quants.dequantize exactly.
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
  bf16 = 30,
};

struct GgmlTypeInfo {
  const char *name;         // "Q4_K"
  uint32_t block_elements;  // elements per block
  uint32_t block_bytes;     // bytes per block
  bool dequantizable;       // dequantize_ggml supports it
};

// Null for a type id ggml does not define (the GGUF parser rejects those). Types that ggml
// defines but mote cannot import (IQ*, Q5_0, ...) have an entry with dequantizable = false, so the
// container still validates their sizes.
const GgmlTypeInfo *ggml_type_info(uint32_t type);

// Per block type: n_blocks blocks from src into n_blocks * block_elements floats at dst.
void dequantize_f32(const uint8_t *src, size_t n, float *dst);  // n elements
void dequantize_f16(const uint8_t *src, size_t n, float *dst);
void dequantize_bf16(const uint8_t *src, size_t n, float *dst);
void dequantize_q8_0(const uint8_t *src, size_t n_blocks, float *dst);
void dequantize_q4_0(const uint8_t *src, size_t n_blocks, float *dst);
void dequantize_q4_1(const uint8_t *src, size_t n_blocks, float *dst);
void dequantize_q4_k(const uint8_t *src, size_t n_blocks, float *dst);
void dequantize_q5_k(const uint8_t *src, size_t n_blocks, float *dst);
void dequantize_q6_k(const uint8_t *src, size_t n_blocks, float *dst);

// Dequantizes n_elements (a multiple of the type's block) of type from src (which holds
// n_elements / block_elements * block_bytes bytes) into dst. False for a type that is not
// dequantizable or a count that is not a whole number of blocks.
bool dequantize_ggml(uint32_t type, const uint8_t *src, size_t n_elements, float *dst);

}  // namespace mote::convert

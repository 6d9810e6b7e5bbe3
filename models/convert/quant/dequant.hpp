// ggml's tensor types as the importers read them: one table by GGUF type id (name, block size,
// to_float). A type mote runs is decoded by the runtime's own reference decoder over its own
// block struct (kernels::ref::dequantize_*, kernels/quant.hpp and quant_k.hpp: GGUF's formulas in
// ggml's float order), so each block layout and decoder exists once; this file decodes only what
// the runtime does not run (BF16, IQ4_XS) and the plain floats. Every to_float equals
// gguf.quants.dequantize bit for bit (tests/golden/gen_dequant_goldens.py, test_dequant).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

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
  // n elements (whole blocks) at src (any alignment) into floats at dst, as ggml's to_float
  // gives them; null for a type mote cannot import.
  void (*to_float)(const uint8_t *src, size_t n, float *dst);
};

// Null for a type id ggml does not define (the GGUF parser rejects those). Types that ggml
// defines but mote cannot import (Q8_1, IQ2_XXS, ...) have a row without to_float, so the
// container still validates their sizes.
const GgmlTypeInfo *ggml_type_info(uint32_t type);

// "F32, F16, Q4_0, ...": the types with a to_float, in id order, for messages.
std::string importable_ggml_types();

// The decoders this file keeps: the float types (a value is its own block) and those the runtime
// does not run (BF16; IQ4_XS, n a whole number of its super-blocks).
void dequantize_f32(const uint8_t *src, size_t n, float *dst);
void dequantize_f16(const uint8_t *src, size_t n, float *dst);
void dequantize_bf16(const uint8_t *src, size_t n, float *dst);
void dequantize_iq4_xs(const uint8_t *src, size_t n, float *dst);

// Dequantizes n_elements (a multiple of the type's block) of type from src (which holds
// n_elements / block_elements * block_bytes bytes) into dst. False for a type without to_float
// or a count that is not a whole number of blocks.
bool dequantize_ggml(uint32_t type, const uint8_t *src, size_t n_elements, float *dst);

}  // namespace mote::convert

// Float -> ggml block quantizers, the quantize_ref of host_types.hpp's rows (host side:
// converters may allocate).
//
// Bit for bit the same bytes as the gguf Python package's gguf.quants.quantize (the version
// pinned in toolchains/requirements-goldens.txt), which mirrors ggml's quantize_row_*_ref;
// tests/golden/gen_quant_goldens.py writes the goldens that hold them to it. The block layouts
// are in models/FORMAT.md; dequant.hpp reads them back.
#pragma once

#include <cstddef>
#include <cstdint>

#include "format/format.hpp"

namespace mote::convert {

constexpr size_t kQuantBlock = 32;  // elements per q8_0 / q4_0 / q4_1 block

// Floats stored as they are (f32) or rounded to IEEE half (f16): a float is its own block.
void quantize_f32(const float *src, size_t n, uint8_t *dst);
void quantize_f16(const float *src, size_t n, uint8_t *dst);

// Per block type: n_blocks * 32 floats from src into n_blocks blocks at dst.
// q8_0: d = amax / 127, q = round(x / d) (halves away from zero).
void quantize_q8_0(const float *src, size_t n_blocks, uint8_t *dst);
// q4_0: d = -max / 8 with max the value of largest magnitude, q = min(15, trunc(x / d + 8.5)).
void quantize_q4_0(const float *src, size_t n_blocks, uint8_t *dst);
// q4_1: d = (max - min) / 15, m = min, q = min(15, trunc((x - min) / d + 0.5)).
void quantize_q4_1(const float *src, size_t n_blocks, uint8_t *dst);

// GGUF's other block types, byte for byte as llama-quantize writes them without an importance
// matrix (ggml's quantize_row_*_ref; tests/golden/gen_kquant_goldens.py holds them to it).
// quantize_q5.cpp: 32-value blocks. q5_0: d = -max / 16, q = min(31, trunc(x / d + 16.5));
// q5_1: d = (max - min) / 31, m = min; iq4_nl: a fitted scale on 16 non-uniform levels.
void quantize_q5_0(const float *src, size_t n_blocks, uint8_t *dst);
void quantize_q5_1(const float *src, size_t n_blocks, uint8_t *dst);
void quantize_iq4_nl(const float *src, size_t n_blocks, uint8_t *dst);
// quantize_k.cpp: 256-value super-blocks whose sub-block scales are searched, then quantized.
void quantize_q2_k(const float *src, size_t n_blocks, uint8_t *dst);
void quantize_q3_k(const float *src, size_t n_blocks, uint8_t *dst);
void quantize_q4_k(const float *src, size_t n_blocks, uint8_t *dst);
void quantize_q5_k(const float *src, size_t n_blocks, uint8_t *dst);
void quantize_q6_k(const float *src, size_t n_blocks, uint8_t *dst);

}  // namespace mote::convert

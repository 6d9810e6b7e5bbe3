// The scalar reference twins: plain loops that define what every kernel computes. They are the
// table on targets without SIMD and the oracle the SIMD kernels are tested against.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/attention_query.hpp"
#include "kernels/quant.hpp"

namespace mote::kernels::ref {

// Declares one function per kernel with exactly the type kernel_list.inc gives it
// (`Function<void(int)> f;` declares `void f(int);`).
template <class Signature>
using Function = Signature;

#define MOTE_KERNEL(name, type) Function<type> name;
#include "kernels/kernel_list.inc"
#undef MOTE_KERNEL

// n weights (whole blocks) as floats, GGUF's formulas exactly: for embedding lookups, not kernels.
void dequantize_q8_0(float *out, const BlockQ8_0 *blocks, size_t n);
void dequantize_q4_0(float *out, const BlockQ4_0 *blocks, size_t n);
void dequantize_q4_1(float *out, const BlockQ4_1 *blocks, size_t n);
void dequantize_q5_0(float *out, const BlockQ5_0 *blocks, size_t n);
void dequantize_q5_1(float *out, const BlockQ5_1 *blocks, size_t n);
void dequantize_iq4_nl(float *out, const BlockIQ4_NL *blocks, size_t n);
// Row `row` (0..7) of an x8 group's n weights (whole blocks), likewise.
void dequantize_q8_0x8(float *out, const BlockQ8_0x8 *group, size_t row, size_t n);
void dequantize_q4_0x8(float *out, const BlockQ4_0x8 *group, size_t row, size_t n);
void dequantize_q4_1x8(float *out, const BlockQ4_1x8 *group, size_t row, size_t n);
void dequantize_q5_0x8(float *out, const BlockQ5_0x8 *group, size_t row, size_t n);
void dequantize_q5_1x8(float *out, const BlockQ5_1x8 *group, size_t row, size_t n);
void dequantize_iq4_nlx8(float *out, const BlockIQ4_NLx8 *group, size_t row, size_t n);

}  // namespace mote::kernels::ref

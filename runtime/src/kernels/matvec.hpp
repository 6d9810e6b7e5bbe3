// Matrix-vector products over xsimd batches: the memory-bound hot path of decoding.
//
// Every row is summed in one fixed order, whichever path computes it: one accumulator takes the
// SIMD blocks of columns in order, it is reduced by reduce_rows (sum_rows' lane order), then
// the remaining columns are added one by one. The 4-row path, the 1-row path and matmul.hpp's tiles follow it exactly,
// so a row's result does not depend on how many rows or tokens the caller passed (callers split rows across threads and
// batch prompt tokens, and expect bit-identical logits). One chain per row is enough here: decoding is bound by memory,
// and four rows give four chains.
#pragma once

#include "kernels/simd.hpp"

namespace mote::kernels::simd {

// out[i] = the sum of partials[i]'s lanes for i < n, each by sum_rows' one fixed order (a row is
// summed alike whether reduced alone or beside others), sum_group<Arch>() rows per transposing
// reduction: a tile's many sums cost a few instructions each, not a horizontal sum each.
template <class Arch>
inline void reduce_rows(const Floats<Arch> *partials, size_t n, float *out) {
  using Batch = Floats<Arch>;
  constexpr size_t G = sum_group<Arch>();
  size_t i0 = 0;
  for (; i0 + G <= n; i0 += G) sum_group_rows<Arch>(partials + i0, out + i0);
  if (i0 < n) {
    // A short last group: zero rows in the unused slots, their sums dropped.
    const size_t m = n - i0;
    Batch rows[G];
#pragma GCC unroll 16
    for (size_t j = 0; j < G; ++j) rows[j] = j < m ? partials[i0 + j] : Batch(0.0f);
    float sums[G];
    sum_group_rows<Arch>(rows, sums);
    for (size_t j = 0; j < m; ++j) out[i0 + j] = sums[j];
  }
}

// Adds the columns past the last full SIMD block to a row's reduced sum, in order. An explicit
// fused multiply-add, so the result cannot hinge on whether the compiler contracts a * b + c.
template <class Arch, class Weight>
inline float finish_row(float sum, const Weight *row, const float *x, size_t simd_end, size_t cols) {
  for (size_t c = simd_end; c < cols; ++c) sum = __builtin_fmaf(to_float<Arch>(row[c]), x[c], sum);
  return sum;
}

template <class Arch, class Weight>
inline float dot_row(const Weight *row, const float *x, size_t cols) {
  using Batch = Floats<Arch>;
  constexpr size_t width = Batch::size;
  const size_t simd_end = cols - cols % width;
  Batch acc(0.0f);
  for (size_t c = 0; c < simd_end; c += width) {
    acc = xsimd::fma(load_floats<Arch>(row + c), Batch::load_unaligned(x + c), acc);
  }
  float sum;
  reduce_rows<Arch>(&acc, 1, &sum);
  return finish_row<Arch>(sum, row, x, simd_end, cols);
}

// Four rows at once share every load of x.
template <class Arch, class Weight>
inline void dot_4_rows(float *out, const Weight *w, size_t row_stride, const float *x, size_t cols) {
  using Batch = Floats<Arch>;
  constexpr size_t width = Batch::size;
  const size_t simd_end = cols - cols % width;
  const Weight *row0 = w;
  const Weight *row1 = w + row_stride;
  const Weight *row2 = w + 2 * row_stride;
  const Weight *row3 = w + 3 * row_stride;
  Batch acc[4] = {Batch(0.0f), Batch(0.0f), Batch(0.0f), Batch(0.0f)};
  // Four rows are four short streams (a row of 576 halves is 18 cache lines), too short for the
  // hardware prefetcher to ramp up: ask for the rows 8 rows below, into L2 (prefetcht2 on x86),
  // at the pace these are read. 8 rows into L2 beat 4 into L1 and 16 into L2 (bench/README.md, "Tuning decisions").
  const char *ahead_block = reinterpret_cast<const char *>(w + 8 * row_stride);
  constexpr size_t kStepBytes = 4 * width * sizeof(Weight);
  for (size_t c = 0; c < simd_end; c += width) {
    const char *ahead = ahead_block + 4 * c * sizeof(Weight);
    for (size_t b = 0; b < kStepBytes; b += 64) __builtin_prefetch(ahead + b, 0, 1);
    const Batch xc = Batch::load_unaligned(x + c);
    acc[0] = xsimd::fma(load_floats<Arch>(row0 + c), xc, acc[0]);
    acc[1] = xsimd::fma(load_floats<Arch>(row1 + c), xc, acc[1]);
    acc[2] = xsimd::fma(load_floats<Arch>(row2 + c), xc, acc[2]);
    acc[3] = xsimd::fma(load_floats<Arch>(row3 + c), xc, acc[3]);
  }
  float sums[4];
  reduce_rows<Arch>(acc, 4, sums);
  out[0] = finish_row<Arch>(sums[0], row0, x, simd_end, cols);
  out[1] = finish_row<Arch>(sums[1], row1, x, simd_end, cols);
  out[2] = finish_row<Arch>(sums[2], row2, x, simd_end, cols);
  out[3] = finish_row<Arch>(sums[3], row3, x, simd_end, cols);
}

// out[r] = dot(w + r * row_stride, x) over cols columns, for r < rows.
template <class Arch, class Weight>
inline void dot_rows(float *out, const Weight *w, size_t row_stride, const float *x, size_t rows, size_t cols) {
  size_t r = 0;
  for (; r + 4 <= rows; r += 4) dot_4_rows<Arch>(out + r, w + r * row_stride, row_stride, x, cols);
  for (; r < rows; ++r) out[r] = dot_row<Arch>(w + r * row_stride, x, cols);
}

template <class Arch>
void matvec_f32(float *out, const float *w, const float *x, size_t rows, size_t cols) {
  dot_rows<Arch>(out, w, cols, x, rows, cols);
}

template <class Arch>
void matvec_f16(float *out, const uint16_t *w, const float *x, size_t rows, size_t cols) {
  dot_rows<Arch>(out, w, cols, x, rows, cols);
}

}  // namespace mote::kernels::simd

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

// R rows at once share every load of x, and give R independent FMA chains (one per row).
template <class Arch, size_t R, class Weight>
inline void dot_n_rows(float *out, const Weight *w, size_t row_stride, const float *x, size_t cols) {
  using Batch = Floats<Arch>;
  constexpr size_t width = Batch::size;
  const size_t simd_end = cols - cols % width;
  Batch acc[R];
#pragma GCC unroll 8
  for (size_t i = 0; i < R; ++i) acc[i] = Batch(0.0f);
  // R rows are R short streams (a row of 576 halves is 18 cache lines), too short for the
  // hardware prefetcher to ramp up: ask for the rows 8 rows below (the next tile's where R is 8),
  // into L2 (prefetcht2 on x86), at the pace these are read. 8 rows into L2 beat 4 into L1 and
  // 16 into L2 (bench/README.md, "Tuning decisions").
  const char *ahead_block = reinterpret_cast<const char *>(w + 8 * row_stride);
  constexpr size_t kStepBytes = R * width * sizeof(Weight);
  for (size_t c = 0; c < simd_end; c += width) {
    const char *ahead = ahead_block + R * c * sizeof(Weight);
#pragma GCC unroll 8
    for (size_t b = 0; b < kStepBytes; b += 64) __builtin_prefetch(ahead + b, 0, 1);
    const Batch xc = Batch::load_unaligned(x + c);
#pragma GCC unroll 8
    for (size_t i = 0; i < R; ++i) acc[i] = xsimd::fma(load_floats<Arch>(w + i * row_stride + c), xc, acc[i]);
  }
  float sums[R];
  reduce_rows<Arch>(acc, R, sums);
#pragma GCC unroll 8
  for (size_t i = 0; i < R; ++i) out[i] = finish_row<Arch>(sums[i], w + i * row_stride, x, simd_end, cols);
}

// Rows per dot_n_rows tile. x86: 8, as an FMA's latency (4 cycles on Zen 4, 2 pipes) needs 8
// chains in flight to issue one per pipe and cycle; 4 rows left avx2's f16 product at ~0.9x
// ggml's AVX-512 one (issue 36). Each row keeps its one order: the same bits at any tile size.
#if defined(__AVX2__)
constexpr size_t kDotRows = 8;
#else
constexpr size_t kDotRows = 4;
#endif

// out[r] = dot(w + r * row_stride, x) over cols columns, for r < rows.
template <class Arch, class Weight>
inline void dot_rows(float *out, const Weight *w, size_t row_stride, const float *x, size_t rows, size_t cols) {
  size_t r = 0;
  for (; r + kDotRows <= rows; r += kDotRows)
    dot_n_rows<Arch, kDotRows>(out + r, w + r * row_stride, row_stride, x, cols);
  if constexpr (kDotRows > 4) {
    for (; r + 4 <= rows; r += 4) dot_n_rows<Arch, 4>(out + r, w + r * row_stride, row_stride, x, cols);
  }
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

// Matrix-vector products over xsimd batches: the memory-bound hot path of decoding.
//
// Every row is summed in one fixed order, whichever path computes it: two accumulators take
// alternate SIMD blocks of columns, a last odd block goes to the first, the two are added and
// reduced, then the remaining columns are added one by one. The 4-row path and the 1-row path
// follow it exactly, so a row's result does not depend on how many rows the caller passed
// (callers split rows across threads and expect bit-identical logits).
#pragma once

#include "kernels/simd.hpp"

namespace mote::kernels::simd {

// Adds the columns past the last full SIMD block, in order. An explicit fused multiply-add, so
// the result cannot hinge on whether the compiler contracts a * b + c at this call site.
template <class Arch, class Weight>
inline float finish_row(Floats<Arch> partial, const Weight *row, const float *x, size_t simd_end, size_t cols) {
  float sum = reduce_sum<Arch>(partial);
  for (size_t c = simd_end; c < cols; ++c) sum = __builtin_fmaf(to_float<Arch>(row[c]), x[c], sum);
  return sum;
}

template <class Arch, class Weight>
inline float dot_row(const Weight *row, const float *x, size_t cols) {
  using Batch = Floats<Arch>;
  constexpr size_t width = Batch::size;
  const size_t paired_end = cols - cols % (2 * width);
  const size_t simd_end = cols - cols % width;
  Batch even(0.0f), odd(0.0f);
  for (size_t c = 0; c < paired_end; c += 2 * width) {
    even = xsimd::fma(load_floats<Arch>(row + c), Batch::load_unaligned(x + c), even);
    odd = xsimd::fma(load_floats<Arch>(row + c + width), Batch::load_unaligned(x + c + width), odd);
  }
  if (simd_end > paired_end) {
    even = xsimd::fma(load_floats<Arch>(row + paired_end), Batch::load_unaligned(x + paired_end), even);
  }
  return finish_row<Arch>(even + odd, row, x, simd_end, cols);
}

// Four rows at once share every load of x and keep eight independent FMA chains in flight.
template <class Arch, class Weight>
inline void dot_4_rows(float *out, const Weight *w, size_t row_stride, const float *x, size_t cols) {
  using Batch = Floats<Arch>;
  constexpr size_t width = Batch::size;
  const size_t paired_end = cols - cols % (2 * width);
  const size_t simd_end = cols - cols % width;
  const Weight *row0 = w;
  const Weight *row1 = w + row_stride;
  const Weight *row2 = w + 2 * row_stride;
  const Weight *row3 = w + 3 * row_stride;
  Batch even0(0.0f), even1(0.0f), even2(0.0f), even3(0.0f);
  Batch odd0(0.0f), odd1(0.0f), odd2(0.0f), odd3(0.0f);
  // Half-precision rows are consumed in half-width loads, which keep too few cache-line misses
  // in flight for the hardware prefetcher: fetch the next four rows (contiguous after these)
  // at the pace these are read. +50% from DRAM for f16; f32 measured no better, so it skips this.
  const char *next_block = reinterpret_cast<const char *>(w + 4 * row_stride);
  constexpr size_t kStepBytes = 4 * 2 * width * sizeof(Weight);
  for (size_t c = 0; c < paired_end; c += 2 * width) {
    if constexpr (sizeof(Weight) < sizeof(float)) {
      const char *ahead = next_block + 4 * c * sizeof(Weight);
      for (size_t b = 0; b < kStepBytes; b += 64) __builtin_prefetch(ahead + b);
    }
    const Batch x_even = Batch::load_unaligned(x + c);
    const Batch x_odd = Batch::load_unaligned(x + c + width);
    even0 = xsimd::fma(load_floats<Arch>(row0 + c), x_even, even0);
    even1 = xsimd::fma(load_floats<Arch>(row1 + c), x_even, even1);
    even2 = xsimd::fma(load_floats<Arch>(row2 + c), x_even, even2);
    even3 = xsimd::fma(load_floats<Arch>(row3 + c), x_even, even3);
    odd0 = xsimd::fma(load_floats<Arch>(row0 + c + width), x_odd, odd0);
    odd1 = xsimd::fma(load_floats<Arch>(row1 + c + width), x_odd, odd1);
    odd2 = xsimd::fma(load_floats<Arch>(row2 + c + width), x_odd, odd2);
    odd3 = xsimd::fma(load_floats<Arch>(row3 + c + width), x_odd, odd3);
  }
  if (simd_end > paired_end) {
    const Batch x_last = Batch::load_unaligned(x + paired_end);
    even0 = xsimd::fma(load_floats<Arch>(row0 + paired_end), x_last, even0);
    even1 = xsimd::fma(load_floats<Arch>(row1 + paired_end), x_last, even1);
    even2 = xsimd::fma(load_floats<Arch>(row2 + paired_end), x_last, even2);
    even3 = xsimd::fma(load_floats<Arch>(row3 + paired_end), x_last, even3);
  }
  out[0] = finish_row<Arch>(even0 + odd0, row0, x, simd_end, cols);
  out[1] = finish_row<Arch>(even1 + odd1, row1, x, simd_end, cols);
  out[2] = finish_row<Arch>(even2 + odd2, row2, x, simd_end, cols);
  out[3] = finish_row<Arch>(even3 + odd3, row3, x, simd_end, cols);
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

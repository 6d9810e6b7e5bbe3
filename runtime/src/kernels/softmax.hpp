// Softmax over xsimd batches, shifted by the maximum so exp never overflows.
#pragma once

#include "kernels/simd.hpp"

namespace mote::kernels::simd {

template <class Arch>
void softmax(float *x, size_t n) {
  using Batch = Floats<Arch>;
  constexpr size_t width = Batch::size;
  const size_t simd_end = n - n % width;

  Batch max_batch(x[0]);
  for (size_t i = 0; i < simd_end; i += width) {
    // select rather than xsimd::max: GCC 12 warns falsely inside _mm512_max_ps.
    const Batch v = Batch::load_unaligned(x + i);
    max_batch = xsimd::select(v > max_batch, v, max_batch);
  }
  float max = reduce_max<Arch>(max_batch);
  for (size_t i = simd_end; i < n; ++i) max = x[i] > max ? x[i] : max;

  const Batch shift(max);
  Batch sums(0.0f);
  for (size_t i = 0; i < simd_end; i += width) {
    const Batch e = xsimd::exp(Batch::load_unaligned(x + i) - shift);
    e.store_unaligned(x + i);
    sums += e;
  }
  float sum = reduce_sum<Arch>(sums);
  for (size_t i = simd_end; i < n; ++i) {
    x[i] = __builtin_expf(x[i] - max);
    sum += x[i];
  }

  const float inverse = 1.0f / sum;
  const Batch inverse_batch(inverse);
  for (size_t i = 0; i < simd_end; i += width) {
    (Batch::load_unaligned(x + i) * inverse_batch).store_unaligned(x + i);
  }
  for (size_t i = simd_end; i < n; ++i) x[i] *= inverse;
}

}  // namespace mote::kernels::simd

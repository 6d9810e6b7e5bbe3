// RMS normalization over xsimd batches.
#pragma once

#include "kernels/simd.hpp"

namespace mote::kernels::simd {

template <class Arch>
void rmsnorm(float *out, const float *x, const float *weight, size_t n, float eps) {
  using Batch = Floats<Arch>;
  constexpr size_t width = Batch::size;
  const size_t simd_end = n - n % width;
  Batch squares(0.0f);
  for (size_t i = 0; i < simd_end; i += width) {
    const Batch v = Batch::load_unaligned(x + i);
    squares = xsimd::fma(v, v, squares);
  }
  float sum_of_squares = reduce_sum<Arch>(squares);
  for (size_t i = simd_end; i < n; ++i) sum_of_squares += x[i] * x[i];

  const float scale = 1.0f / __builtin_sqrtf(sum_of_squares / static_cast<float>(n) + eps);
  const Batch scale_batch(scale);
  for (size_t i = 0; i < simd_end; i += width) {  // out may alias x: each lane is read, then written
    const Batch v = Batch::load_unaligned(x + i) * scale_batch * Batch::load_unaligned(weight + i);
    v.store_unaligned(out + i);
  }
  for (size_t i = simd_end; i < n; ++i) out[i] = x[i] * scale * weight[i];
}

}  // namespace mote::kernels::simd

// RMS and layer normalization over xsimd batches.
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

// Two passes as torch.nn.LayerNorm: the mean, then the variance of the centered values.
template <class Arch>
void layernorm(float *out, const float *x, const float *weight, const float *bias, size_t n, float eps) {
  using Batch = Floats<Arch>;
  constexpr size_t width = Batch::size;
  const size_t simd_end = n - n % width;
  Batch sums(0.0f);
  for (size_t i = 0; i < simd_end; i += width) sums += Batch::load_unaligned(x + i);
  float sum = reduce_sum<Arch>(sums);
  for (size_t i = simd_end; i < n; ++i) sum += x[i];
  const float mean = sum / static_cast<float>(n);

  const Batch mean_batch(mean);
  Batch squares(0.0f);
  for (size_t i = 0; i < simd_end; i += width) {
    const Batch d = Batch::load_unaligned(x + i) - mean_batch;
    squares = xsimd::fma(d, d, squares);
  }
  float sum_of_squares = reduce_sum<Arch>(squares);
  for (size_t i = simd_end; i < n; ++i) sum_of_squares += (x[i] - mean) * (x[i] - mean);

  const float scale = 1.0f / __builtin_sqrtf(sum_of_squares / static_cast<float>(n) + eps);
  const Batch scale_batch(scale);
  for (size_t i = 0; i < simd_end; i += width) {
    Batch v = (Batch::load_unaligned(x + i) - mean_batch) * scale_batch * Batch::load_unaligned(weight + i);
    if (bias != nullptr) v += Batch::load_unaligned(bias + i);
    v.store_unaligned(out + i);
  }
  for (size_t i = simd_end; i < n; ++i) {
    out[i] = (x[i] - mean) * scale * weight[i] + (bias != nullptr ? bias[i] : 0.0f);
  }
}

}  // namespace mote::kernels::simd

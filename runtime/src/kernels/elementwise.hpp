// Element-wise kernels over xsimd batches: the SwiGLU gate and the residual add.
#pragma once

#include "kernels/simd.hpp"

namespace mote::kernels::simd {

// gate = silu(gate) * up, silu(g) = g / (1 + exp(-g)).
template <class Arch>
void swiglu(float *gate, const float *up, size_t n) {
  using Batch = Floats<Arch>;
  constexpr size_t width = Batch::size;
  const size_t simd_end = n - n % width;
  const Batch one(1.0f);
  for (size_t i = 0; i < simd_end; i += width) {
    const Batch g = Batch::load_unaligned(gate + i);
    const Batch silu = g / (one + xsimd::exp(-g));
    (silu * Batch::load_unaligned(up + i)).store_unaligned(gate + i);
  }
  for (size_t i = simd_end; i < n; ++i) {
    const float silu = gate[i] / (1.0f + __builtin_expf(-gate[i]));
    gate[i] = silu * up[i];
  }
}

template <class Arch>
void add(float *y, const float *x, size_t n) {
  using Batch = Floats<Arch>;
  constexpr size_t width = Batch::size;
  const size_t simd_end = n - n % width;
  for (size_t i = 0; i < simd_end; i += width) {
    (Batch::load_unaligned(y + i) + Batch::load_unaligned(x + i)).store_unaligned(y + i);
  }
  for (size_t i = simd_end; i < n; ++i) y[i] += x[i];
}

}  // namespace mote::kernels::simd

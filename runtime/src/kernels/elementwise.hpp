// Element-wise kernels over xsimd batches: the FFN activations and the residual add.
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

// One activation applied in place: Op maps a batch and, for the tail, one float.
template <class Arch, class Op>
inline void map_in_place(float *x, size_t n, Op op) {
  using Batch = Floats<Arch>;
  constexpr size_t width = Batch::size;
  const size_t simd_end = n - n % width;
  for (size_t i = 0; i < simd_end; i += width) op(Batch::load_unaligned(x + i)).store_unaligned(x + i);
  alignas(64) float tail[width] = {};
  for (size_t i = simd_end; i < n; ++i) tail[i - simd_end] = x[i];
  const Batch last = op(Batch::load_aligned(tail));
  last.store_aligned(tail);
  for (size_t i = simd_end; i < n; ++i) x[i] = tail[i - simd_end];
}

template <class Arch>
void gelu_tanh(float *x, size_t n) {
  using Batch = Floats<Arch>;
  map_in_place<Arch>(x, n, [](Batch v) {
    const Batch inner = Batch(0.7978845608028654f) * xsimd::fma(Batch(0.044715f) * v, v * v, v);
    return Batch(0.5f) * v * (Batch(1.0f) + xsimd::tanh(inner));
  });
}

// gate = gelu_tanh(gate) * up: the activation as gelu_tanh computes it, then the gating product.
template <class Arch>
void geglu(float *gate, const float *up, size_t n) {
  using Batch = Floats<Arch>;
  constexpr size_t width = Batch::size;
  gelu_tanh<Arch>(gate, n);
  const size_t simd_end = n - n % width;
  for (size_t i = 0; i < simd_end; i += width) {
    (Batch::load_unaligned(gate + i) * Batch::load_unaligned(up + i)).store_unaligned(gate + i);
  }
  for (size_t i = simd_end; i < n; ++i) gate[i] *= up[i];
}

template <class Arch>
void gelu_erf(float *x, size_t n) {
  using Batch = Floats<Arch>;
  map_in_place<Arch>(
      x, n, [](Batch v) { return Batch(0.5f) * v * (Batch(1.0f) + xsimd::erf(v * Batch(0.7071067811865476f))); });
}

template <class Arch>
void relu(float *x, size_t n) {
  using Batch = Floats<Arch>;
  map_in_place<Arch>(x, n, [](Batch v) { return xsimd::max(v, Batch(0.0f)); });
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

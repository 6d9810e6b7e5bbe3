// Rotary position embedding over xsimd batches: each pair (a, b) turns by its angle,
// (a, b) -> (a cos - b sin, a sin + b cos), in either pair layout.
#pragma once

#include "kernels/simd.hpp"

namespace mote::kernels::simd {

// Lane patterns (xsimd batch_constant generators) for the interleaved layout.
struct SwapAdjacentLanes {  // (1, 0, 3, 2, ...)
  static constexpr uint32_t get(size_t i, size_t) { return static_cast<uint32_t>(i ^ 1u); }
};
struct LowHalfEachTwice {  // (0, 0, 1, 1, ...)
  static constexpr uint32_t get(size_t i, size_t) { return static_cast<uint32_t>(i / 2); }
};
struct HighHalfEachTwice {  // (n/2, n/2, n/2 + 1, n/2 + 1, ...)
  static constexpr uint32_t get(size_t i, size_t n) { return static_cast<uint32_t>(n / 2 + i / 2); }
};

// Rotates the width/2 adjacent pairs in one batch at p. Lane 2j of the result is
// a cos - b sin and lane 2j+1 is b cos + a sin, so sin arrives negated on even lanes.
template <class Arch>
inline void rotate_adjacent_pairs(float *p, Floats<Arch> cos_per_lane, Floats<Arch> signed_sin_per_lane) {
  using Lanes = xsimd::batch<uint32_t, Arch>;
  constexpr auto swap_adjacent = xsimd::make_batch_constant<Lanes, SwapAdjacentLanes>();
  const Floats<Arch> v = Floats<Arch>::load_unaligned(p);
  (v * cos_per_lane + xsimd::swizzle(v, swap_adjacent) * signed_sin_per_lane).store_unaligned(p);
}

template <class Arch>
void rope_interleaved(float *x, const float *cos, const float *sin, size_t n_heads, size_t head_dim) {
  using Batch = Floats<Arch>;
  using Lanes = xsimd::batch<uint32_t, Arch>;
  constexpr size_t width = Batch::size;
  constexpr auto low_half_twice = xsimd::make_batch_constant<Lanes, LowHalfEachTwice>();
  constexpr auto high_half_twice = xsimd::make_batch_constant<Lanes, HighHalfEachTwice>();
  alignas(64) float minus_plus[width];
  for (size_t i = 0; i < width; ++i) minus_plus[i] = (i % 2 == 0) ? -1.0f : 1.0f;
  const Batch sign = Batch::load_aligned(minus_plus);

  // One step takes `width` angles and rotates `width` pairs: two batches of x.
  const size_t n_pairs = head_dim / 2;
  const size_t simd_pairs = n_pairs - n_pairs % width;
  for (size_t h = 0; h < n_heads; ++h) {
    float *head = x + h * head_dim;
    for (size_t i = 0; i < simd_pairs; i += width) {
      const Batch c = Batch::load_unaligned(cos + i);
      const Batch s = Batch::load_unaligned(sin + i);
      rotate_adjacent_pairs<Arch>(head + 2 * i, xsimd::swizzle(c, low_half_twice),
                                  xsimd::swizzle(s, low_half_twice) * sign);
      rotate_adjacent_pairs<Arch>(head + 2 * i + width, xsimd::swizzle(c, high_half_twice),
                                  xsimd::swizzle(s, high_half_twice) * sign);
    }
    for (size_t i = simd_pairs; i < n_pairs; ++i) {
      const float a = head[2 * i];
      const float b = head[2 * i + 1];
      head[2 * i] = a * cos[i] - b * sin[i];
      head[2 * i + 1] = a * sin[i] + b * cos[i];
    }
  }
}

template <class Arch>
void rope_split_half(float *x, const float *cos, const float *sin, size_t n_heads, size_t head_dim) {
  using Batch = Floats<Arch>;
  constexpr size_t width = Batch::size;
  const size_t half = head_dim / 2;
  const size_t simd_end = half - half % width;
  for (size_t h = 0; h < n_heads; ++h) {
    float *first = x + h * head_dim;
    float *second = first + half;
    for (size_t i = 0; i < simd_end; i += width) {
      const Batch a = Batch::load_unaligned(first + i);
      const Batch b = Batch::load_unaligned(second + i);
      const Batch c = Batch::load_unaligned(cos + i);
      const Batch s = Batch::load_unaligned(sin + i);
      (a * c - b * s).store_unaligned(first + i);
      (a * s + b * c).store_unaligned(second + i);
    }
    for (size_t i = simd_end; i < half; ++i) {
      const float a = first[i];
      const float b = second[i];
      first[i] = a * cos[i] - b * sin[i];
      second[i] = a * sin[i] + b * cos[i];
    }
  }
}

}  // namespace mote::kernels::simd

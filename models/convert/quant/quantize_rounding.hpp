// Rounding steps the ggml reference quantizers share (host side), spelled once so every
// quantize_*.cpp rounds the same way. Each is the reference's own operation, not an equivalent:
// the goldens hold the output bytes to llama-quantize's.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/fp16.hpp"

namespace mote::convert::rounding {

inline void store_fp16(float value, uint8_t *dst) {
  const uint16_t h = f32_to_fp16(value);
  std::memcpy(dst, &h, 2);
}

// The float a stored fp16 scale reads back as (the K quantizers re-derive levels from it).
inline float load_fp16(const uint8_t *src) {
  uint16_t h;
  std::memcpy(&h, src, 2);
  return fp16_to_f32(h);
}

// ggml's nearest_int: adding 1.5 * 2^23 leaves the integer in the low mantissa bits, rounded to
// nearest even. Exact for |value| < 2^22; outside that it wraps exactly as the reference does.
inline int32_t nearest_int(float value) {
  const float shifted = value + 12582912.0f;
  int32_t bits;
  std::memcpy(&bits, &shifted, sizeof bits);
  return (bits & 0x007FFFFF) - 0x00400000;
}

// C's float -> int conversion as x86's cvttss2si does it: toward zero, and INT32_MIN for NaN
// and values out of range (where C++ leaves it undefined).
inline int32_t truncate_to_int(float value) {
  if (!(value > -2147483648.0f && value < 2147483648.0f)) return INT32_MIN;
  return static_cast<int32_t>(value);
}

// The value of largest magnitude in x[0..n) (the first on a tie) and that magnitude; 0 and 0 for
// an all-zero x (so q5_0's d is then -0: its sign is in the reference's bytes).
inline void signed_max(const float *x, size_t n, float *max, float *amax) {
  *max = 0.0f;
  *amax = 0.0f;
  for (size_t i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > *amax) {
      *amax = std::fabs(x[i]);
      *max = x[i];
    }
  }
}

}  // namespace mote::convert::rounding

#include "quant/quantize.hpp"

#include <cmath>
#include <cstddef>
#include <cstring>

#include "core/fp16.hpp"
#include "kernels/quant.hpp"

// Each rounding step below is the reference's own (float32 unless it says double), so the
// compiler must not fuse a multiply and an add: CMakeLists.txt builds this file with
// -ffp-contract=off, and every product is its own statement besides.

namespace mote::convert {
namespace {

void store_fp16(float value, uint8_t *dst) {
  const uint16_t h = f32_to_fp16(value);
  std::memcpy(dst, &h, 2);
}

// Element j in the low nibble of byte j, element j + 16 in its high nibble.
void pack_nibbles(const uint8_t q[kQuantBlock], uint8_t *dst) {
  for (size_t j = 0; j < kQuantBlock / 2; ++j) dst[j] = static_cast<uint8_t>(q[j] | (q[j + kQuantBlock / 2] << 4));
}

// numpy's float -> uint8 cast of an already truncated value, then clip(0, 15).
uint8_t clip_nibble(float truncated) {
  if (!(truncated > 0.0f)) return 0;
  return truncated >= 15.0f ? 15 : static_cast<uint8_t>(truncated);
}

}  // namespace

void quantize_f32(const float *src, size_t n, uint8_t *dst) { std::memcpy(dst, src, n * sizeof(float)); }

void quantize_f16(const float *src, size_t n, uint8_t *dst) {
  for (size_t i = 0; i < n; ++i) store_fp16(src[i], dst + 2 * i);
}

void quantize_q8_0(const float *src, size_t n_blocks, uint8_t *dst) {
  for (size_t b = 0; b < n_blocks; ++b, src += kQuantBlock, dst += sizeof(kernels::BlockQ8_0)) {
    float amax = 0.0f;
    for (size_t j = 0; j < kQuantBlock; ++j) amax = std::fmax(amax, std::fabs(src[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    store_fp16(d, dst);
    for (size_t j = 0; j < kQuantBlock; ++j) {
      // |x| <= amax makes |scaled| <= 127, except when 1 / d overflows (amax a tiny subnormal):
      // then inf (or 0 x inf) would be undefined to convert, so the range is kept explicitly.
      float scaled = src[j] * id;
      if (!(std::fabs(scaled) <= 127.0f)) scaled = std::isnan(scaled) ? 0.0f : std::copysign(127.0f, scaled);
      dst[offsetof(kernels::BlockQ8_0, qs) + j] =
          static_cast<uint8_t>(static_cast<int8_t>(std::round(scaled)));  // round: halves away from 0
    }
  }
}

void quantize_q4_0(const float *src, size_t n_blocks, uint8_t *dst) {
  for (size_t b = 0; b < n_blocks; ++b, src += kQuantBlock, dst += sizeof(kernels::BlockQ4_0)) {
    // The signed value of largest magnitude; the first one on a tie (numpy's argmax).
    float amax = std::fabs(src[0]), max = src[0];
    for (size_t j = 1; j < kQuantBlock; ++j) {
      if (std::fabs(src[j]) > amax) {
        amax = std::fabs(src[j]);
        max = src[j];
      }
    }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    store_fp16(d, dst);
    uint8_t q[kQuantBlock];
    for (size_t j = 0; j < kQuantBlock; ++j) {
      // gguf computes x * id + 8.5 in double (the product is exact there), then truncates the
      // value rounded to float: ggml's "FMA-dependent" rounding, pinned down.
      const double shifted = static_cast<double>(src[j]) * static_cast<double>(id) + 8.5;
      q[j] = clip_nibble(std::trunc(static_cast<float>(shifted)));
    }
    pack_nibbles(q, dst + offsetof(kernels::BlockQ4_0, qs));
  }
}

void quantize_q4_1(const float *src, size_t n_blocks, uint8_t *dst) {
  for (size_t b = 0; b < n_blocks; ++b, src += kQuantBlock, dst += sizeof(kernels::BlockQ4_1)) {
    float min = src[0], max = src[0];
    for (size_t j = 1; j < kQuantBlock; ++j) {
      min = std::fmin(min, src[j]);
      max = std::fmax(max, src[j]);
    }
    const float d = (max - min) / 15.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    store_fp16(d, dst);
    store_fp16(min, dst + offsetof(kernels::BlockQ4_1, m));
    uint8_t q[kQuantBlock];
    for (size_t j = 0; j < kQuantBlock; ++j) {
      const float offset = src[j] - min;
      const float scaled = offset * id;
      q[j] = clip_nibble(std::trunc(scaled + 0.5f));
    }
    pack_nibbles(q, dst + offsetof(kernels::BlockQ4_1, qs));
  }
}

}  // namespace mote::convert

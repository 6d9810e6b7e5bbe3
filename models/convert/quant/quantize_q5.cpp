// The 32-value quantizers GGUF's small-model mixes fall back to: q5_0, q5_1 (ggml's
// quantize_row_q5_*_ref) and iq4_nl (quantize_iq4_nl without an importance matrix), the paths
// llama-quantize takes without one. Block layouts: models/FORMAT.md.
//
// Float steps are the reference's own, in its order (built with -ffp-contract=off).

#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstring>

#include "kernels/quant.hpp"
#include "quant/quantize.hpp"
#include "quant/quantize_rounding.hpp"

namespace mote::convert {
namespace {

using kernels::kIQ4NLValues;  // IQ4_NL's 16 non-uniform levels (ggml's kvalues_iq4nl)
using rounding::signed_max;
using rounding::store_fp16;
using rounding::truncate_to_int;

constexpr size_t kBlock = kernels::kQuantBlock;

// Five-bit levels: the low nibbles as q4_0 packs them (element j low, j + 16 high), the fifth
// bits as a little-endian 32-bit mask, bit j for element j.
void pack_5bit(const uint8_t q[kBlock], uint8_t *qh, uint8_t *qs) {
  uint32_t high = 0;
  for (size_t j = 0; j < kBlock / 2; ++j) {
    qs[j] = static_cast<uint8_t>((q[j] & 0x0F) | ((q[j + kBlock / 2] & 0x0F) << 4));
    high |= static_cast<uint32_t>((q[j] >> 4) & 1u) << j;
    high |= static_cast<uint32_t>((q[j + kBlock / 2] >> 4) & 1u) << (j + kBlock / 2);
  }
  for (int i = 0; i < 4; ++i) qh[i] = static_cast<uint8_t>(high >> (8 * i));
}

// The index of the level nearest x (the upper one on a tie), by bisection as ggml does.
int nearest_level(float x) {
  if (x <= kIQ4NLValues[0]) return 0;
  if (x >= kIQ4NLValues[15]) return 15;
  int lo = 0, hi = 15;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (x < kIQ4NLValues[mid]) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  return x - kIQ4NLValues[hi - 1] < kIQ4NLValues[hi] - x ? hi - 1 : hi;
}

// sum w*q*x and sum w*q*q (w = x^2) of the block's values on the levels x * inv_scale picks.
void level_sums(const float *x, float inv_scale, float *sumqx, float *sumq2) {
  *sumqx = *sumq2 = 0;
  for (size_t j = 0; j < kBlock; ++j) {
    const float q = kIQ4NLValues[nearest_level(inv_scale * x[j])];
    const float w = x[j] * x[j];
    *sumqx += w * q * x[j];
    *sumq2 += w * q * q;
  }
}

// One iq4_nl block: the scale that minimizes the x^2-weighted error among the least-squares fit
// at max / -127 and 15 nudged candidates, then each value's nearest level at that scale.
void quantize_iq4_nl_block(const float *x, uint8_t *dst) {
  float max, amax;
  signed_max(x, kBlock, &max, &amax);
  float d = 0;
  if (amax >= 1e-15f) {
    constexpr int kTries = 7;
    float sumqx, sumq2;
    level_sums(x, 1 / (-max / kIQ4NLValues[0]), &sumqx, &sumq2);
    d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
    float best = d * sumqx;
    for (int t = -kTries; t <= kTries; ++t) {
      level_sums(x, (t + kIQ4NLValues[0]) / max, &sumqx, &sumq2);
      if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
        d = sumqx / sumq2;
        best = d * sumqx;
      }
    }
  }
  store_fp16(d, dst);
  const float id = d != 0 ? 1 / d : 0;
  uint8_t *qs = dst + offsetof(kernels::BlockIQ4_NL, qs);
  for (size_t j = 0; j < kBlock / 2; ++j) {
    qs[j] = static_cast<uint8_t>(nearest_level(id * x[j]) | (nearest_level(id * x[j + kBlock / 2]) << 4));
  }
}

}  // namespace

void quantize_q5_0(const float *src, size_t n_blocks, uint8_t *dst) {
  for (size_t b = 0; b < n_blocks; ++b, src += kBlock, dst += sizeof(kernels::BlockQ5_0)) {
    float max, amax;
    signed_max(src, kBlock, &max, &amax);
    const float d = max / -16;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    store_fp16(d, dst);
    uint8_t q[kBlock];
    for (size_t j = 0; j < kBlock; ++j) {
      // Product and sum rounded separately (ggml's reference without FMA), then C's float ->
      // int8 conversion, capped at 31.
      const float scaled = src[j] * id;
      const int8_t level = static_cast<int8_t>(truncate_to_int(scaled + 16.5f));
      q[j] = static_cast<uint8_t>(level < 31 ? level : 31);
    }
    pack_5bit(q, dst + offsetof(kernels::BlockQ5_0, qh), dst + offsetof(kernels::BlockQ5_0, qs));
  }
}

void quantize_q5_1(const float *src, size_t n_blocks, uint8_t *dst) {
  for (size_t b = 0; b < n_blocks; ++b, src += kBlock, dst += sizeof(kernels::BlockQ5_1)) {
    float min = FLT_MAX, max = -FLT_MAX;
    for (size_t j = 0; j < kBlock; ++j) {
      if (src[j] < min) min = src[j];
      if (src[j] > max) max = src[j];
    }
    const float d = (max - min) / 31;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    store_fp16(d, dst);
    store_fp16(min, dst + offsetof(kernels::BlockQ5_1, m));
    uint8_t q[kBlock];
    for (size_t j = 0; j < kBlock; ++j) {
      const float scaled = (src[j] - min) * id;
      q[j] = static_cast<uint8_t>(truncate_to_int(scaled + 0.5f));
    }
    pack_5bit(q, dst + offsetof(kernels::BlockQ5_1, qh), dst + offsetof(kernels::BlockQ5_1, qs));
  }
}

void quantize_iq4_nl(const float *src, size_t n_blocks, uint8_t *dst) {
  for (size_t b = 0; b < n_blocks; ++b) quantize_iq4_nl_block(src + b * kBlock, dst + b * sizeof(kernels::BlockIQ4_NL));
}

}  // namespace mote::convert

// The K super-block quantizers (q2_k .. q6_k): ggml's quantize_row_*_ref, the path
// llama-quantize takes without an importance matrix. Block layouts: models/FORMAT.md.
//
// Every float step is the reference's own, in its order (CMakeLists.txt builds this file with
// -ffp-contract=off): a search that picks a scale by comparing float errors changes its answer
// on one different rounding, so "equivalent" arithmetic is not byte-identical.

#include <cmath>
#include <cstddef>
#include <cstring>

#include "kernels/quant.hpp"
#include "quant/quantize.hpp"
#include "quant/quantize_rounding.hpp"

namespace mote::convert {
namespace {

using rounding::load_fp16;
using rounding::nearest_int;
using rounding::signed_max;
using rounding::store_fp16;

constexpr int kSuper = 256;         // values per super-block
constexpr float kAllZero = 1e-15f;  // a group whose largest |value| is below this is all zero
// The blocks are the runtime's structs (kernels/quant_k.hpp), written field by field at their offsets.
using kernels::BlockQ2_K;
using kernels::BlockQ3_K;
using kernels::BlockQ4_K;
using kernels::BlockQ5_K;
using kernels::BlockQ6_K;
static_assert(offsetof(BlockQ4_K, scales) == offsetof(BlockQ5_K, scales), "q4_k and q5_k share their header");

int clamp_int(int value, int lo, int hi) { return value < lo ? lo : value > hi ? hi : value; }

// Levels 0..nmax with a minimum (q2_k, q4_k, q5_k): fits x ~ scale * level - the_min by a
// weighted least-squares search over nstep + 1 candidate scales; returns the scale.
struct MinSearch {
  int nmax;
  float rmin, rdelta;
  int nstep;
  bool absolute_error;  // q2_k weighs |error|, the others error^2
};

float fit_with_min(int n, const MinSearch &s, const float *x, const float *weights, uint8_t *levels, float *the_min) {
  float min = x[0], max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    const float w = weights[i];
    sum_w += w;
    sum_x += w * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    for (int i = 0; i < n; ++i) levels[i] = 0;
    *the_min = -min;
    return 0.0f;
  }
  const auto error_of = [&](float scale, float offset, const uint8_t *l) {
    float total = 0;
    for (int i = 0; i < n; ++i) {
      float diff = scale * l[i] + offset - x[i];
      diff = s.absolute_error ? std::fabs(diff) : diff * diff;
      total += weights[i] * diff;
    }
    return total;
  };
  float iscale = s.nmax / (max - min);
  float scale = 1 / iscale;
  for (int i = 0; i < n; ++i)
    levels[i] = static_cast<uint8_t>(clamp_int(nearest_int(iscale * (x[i] - min)), 0, s.nmax));
  float best_error = error_of(scale, min, levels);
  uint8_t trial[32];
  for (int is = 0; is <= s.nstep; ++is) {
    iscale = (s.rmin + s.rdelta * is + s.nmax) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = clamp_int(nearest_int(iscale * (x[i] - min)), 0, s.nmax);
      trial[i] = static_cast<uint8_t>(l);
      const float w = weights[i];
      sum_l += w * l;
      sum_l2 += w * l * l;
      sum_xl += w * l * x[i];
    }
    const float det = sum_w * sum_l2 - sum_l * sum_l;
    if (!(det > 0)) continue;
    float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
    float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
    if (this_min > 0) {
      this_min = 0;
      this_scale = sum_xl / sum_l2;
    }
    const float error = error_of(this_scale, this_min, trial);
    if (error < best_error) {
      std::memcpy(levels, trial, static_cast<size_t>(n));
      best_error = error;
      scale = this_scale;
      min = this_min;
    }
  }
  *the_min = -min;
  return scale;
}

// Signed levels -nmax..nmax-1 stored as level + nmax, scale fitted by weight x^2 over 18 nudged
// candidates (q6_k's make_qx_quants, rmse_type 1); returns the (signed) scale.
float fit_signed_search(int n, int nmax, const float *x, int8_t *levels) {
  float max, amax;
  signed_max(x, n, &max, &amax);
  if (amax < kAllZero) {
    for (int i = 0; i < n; ++i) levels[i] = 0;
    return 0.0f;
  }
  const auto sums = [&](float iscale, float *sumlx, float *suml2) {
    *sumlx = *suml2 = 0;
    for (int i = 0; i < n; ++i) {
      const int l = clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1);
      const float w = x[i] * x[i];
      *sumlx += w * x[i] * l;
      *suml2 += w * l * l;
    }
  };
  const auto store_levels = [&](float iscale) {
    for (int i = 0; i < n; ++i)
      levels[i] = static_cast<int8_t>(nmax + clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1));
  };
  float iscale = -nmax / max;
  float sumlx, suml2;
  sums(iscale, &sumlx, &suml2);
  store_levels(iscale);
  float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(nmax + 0.1f * is) / max;
    sums(iscale, &sumlx, &suml2);
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      store_levels(iscale);
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

// q3_k's make_q3_quants (rmse): signed levels -nmax..nmax-1 refined one value at a time, up to
// five passes; stored as level + nmax; returns the scale.
float fit_signed_refine(int n, int nmax, const float *x, int8_t *levels) {
  float max, amax;
  signed_max(x, n, &max, &amax);
  if (amax < kAllZero) {
    for (int i = 0; i < n; ++i) levels[i] = 0;
    return 0.0f;
  }
  const float iscale = -nmax / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1);
    levels[i] = static_cast<int8_t>(l);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * l;
    suml2 += w * l * l;
  }
  for (int pass = 0; pass < 5; ++pass) {
    int changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      float slx = sumlx - w * x[i] * levels[i];
      if (!(slx > 0)) continue;
      float sl2 = suml2 - w * levels[i] * levels[i];
      const int l = clamp_int(nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
      if (l == levels[i]) continue;
      slx += w * x[i] * l;
      sl2 += w * l * l;
      if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
        levels[i] = static_cast<int8_t>(l);
        sumlx = slx;
        suml2 = sl2;
        ++changed;
      }
    }
    if (changed == 0) break;
  }
  for (int i = 0; i < n; ++i) levels[i] = static_cast<int8_t>(levels[i] + nmax);
  return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

// Fits the super-block's 16 sub-blocks of 16 with fit (levels stored as level + nmax); returns
// the sub-block scale of largest magnitude, the first on a tie.
float fit_signed_sub_blocks(const float *x, int nmax, float (*fit)(int, int, const float *, int8_t *),
                            int8_t levels[kSuper], float scales[16]) {
  float max_scale = 0, amax = 0;
  for (int j = 0; j < 16; ++j) {
    scales[j] = fit(16, nmax, x + 16 * j, levels + 16 * j);
    if (std::fabs(scales[j]) > amax) {
      amax = std::fabs(scales[j]);
      max_scale = scales[j];
    }
  }
  return max_scale;
}

// Four 2-bit levels a byte: byte l of each 32-byte group holds values l, l+32, l+64, l+96 of
// its 128 (q2_k's and q3_k's low bits).
void pack_2bit(const uint8_t *levels, uint8_t *qs) {
  for (int j = 0; j < kSuper; j += 128) {
    for (int l = 0; l < 32; ++l) {
      qs[j / 4 + l] = static_cast<uint8_t>(levels[j + l] | (levels[j + l + 32] << 2) | (levels[j + l + 64] << 4) |
                                           (levels[j + l + 96] << 6));
    }
  }
}

// q4_k / q5_k: eight 32-value groups with 6-bit scales and minimums in 12 bytes.
void pack_scale_min_6bit(const uint8_t ls[8], const uint8_t lm[8], uint8_t scales[12]) {
  for (int j = 0; j < 8; ++j) {
    if (j < 4) {
      scales[j] = ls[j];
      scales[j + 4] = lm[j];
    } else {
      scales[j + 4] = static_cast<uint8_t>((ls[j] & 0xF) | ((lm[j] & 0xF) << 4));
      scales[j - 4] |= static_cast<uint8_t>((ls[j] >> 4) << 6);
      scales[j] |= static_cast<uint8_t>((lm[j] >> 4) << 6);
    }
  }
}

void unpack_scale_min_6bit(int j, const uint8_t scales[12], int *sc, int *m) {
  if (j < 4) {
    *sc = scales[j] & 63;
    *m = scales[j + 4] & 63;
  } else {
    *sc = (scales[j + 4] & 0xF) | ((scales[j - 4] >> 6) << 4);
    *m = (scales[j + 4] >> 4) | ((scales[j] >> 6) << 4);
  }
}

// q4_k and q5_k share everything but the level count and the search range: fits the super-block
// at x into levels[256] (0..nmax) and the 16 header bytes at dst (d, dmin, 12 scale bytes).
void fit_scale_min_super(const float *x, const MinSearch &search, uint8_t levels[kSuper], uint8_t *dst) {
  float scales[8], mins[8], weights[32];
  uint8_t *trial = levels;  // filled group by group, then refitted below
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    const float *group = x + 32 * j;
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += group[l] * group[l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(group[l]);
    scales[j] = fit_with_min(32, search, group, weights, trial + 32 * j, &mins[j]);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  uint8_t ls[8], lm[8];
  for (int j = 0; j < 8; ++j) {
    // The reference keeps the low byte of the rounded value, then caps it at 63.
    ls[j] = static_cast<uint8_t>(nearest_int(inv_scale * scales[j]));
    lm[j] = static_cast<uint8_t>(nearest_int(inv_min * mins[j]));
    if (ls[j] > 63) ls[j] = 63;
    if (lm[j] > 63) lm[j] = 63;
  }
  uint8_t *scale_bytes = dst + offsetof(BlockQ4_K, scales);
  std::memset(scale_bytes, 0, 12);
  pack_scale_min_6bit(ls, lm, scale_bytes);
  store_fp16(max_scale / 63.f, dst);
  store_fp16(max_min / 63.f, dst + offsetof(BlockQ4_K, dmin));
  const float d_all = load_fp16(dst), dmin_all = load_fp16(dst + offsetof(BlockQ4_K, dmin));
  for (int j = 0; j < 8; ++j) {
    int sc, m;
    unpack_scale_min_6bit(j, scale_bytes, &sc, &m);
    const float d = d_all * sc;
    if (d == 0) continue;  // keeps the search's levels
    const float dm = dmin_all * m;
    for (int ii = 0; ii < 32; ++ii) {
      levels[32 * j + ii] = static_cast<uint8_t>(clamp_int(nearest_int((x[32 * j + ii] + dm) / d), 0, search.nmax));
    }
  }
}

void quantize_q4_k_block(const float *x, uint8_t *dst) {
  uint8_t levels[kSuper];
  fit_scale_min_super(x, {15, -1.f, 0.1f, 20, false}, levels, dst);
  uint8_t *qs = dst + offsetof(BlockQ4_K, qs);
  for (int j = 0; j < kSuper; j += 64) {
    for (int l = 0; l < 32; ++l) qs[l] = static_cast<uint8_t>(levels[j + l] | (levels[j + l + 32] << 4));
    qs += 32;
  }
}

void quantize_q5_k_block(const float *x, uint8_t *dst) {
  uint8_t levels[kSuper];
  fit_scale_min_super(x, {31, -0.5f, 0.1f, 15, false}, levels, dst);
  uint8_t *qh = dst + offsetof(BlockQ5_K, qh), *ql = dst + offsetof(BlockQ5_K, qs);
  std::memset(qh, 0, 32);
  uint8_t m1 = 1, m2 = 2;
  for (int n = 0; n < kSuper; n += 64) {
    for (int j = 0; j < 32; ++j) {
      int l1 = levels[n + j], l2 = levels[n + j + 32];
      if (l1 > 15) {
        l1 -= 16;
        qh[j] |= m1;
      }
      if (l2 > 15) {
        l2 -= 16;
        qh[j] |= m2;
      }
      ql[j] = static_cast<uint8_t>(l1 | (l2 << 4));
    }
    m1 = static_cast<uint8_t>(m1 << 2);
    m2 = static_cast<uint8_t>(m2 << 2);
    ql += 32;
  }
}

// q2_k: layout scales[16] (low nibble scale, high nibble minimum), qs[64], d, dmin.
void quantize_q2_k_block(const float *x, uint8_t *dst) {
  uint8_t levels[kSuper];
  float scales[16], mins[16], weights[16];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 16; ++j) {
    for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * j + l]);
    scales[j] = fit_with_min(16, {3, -0.5f, 0.1f, 15, true}, x + 16 * j, weights, levels + 16 * j, &mins[j]);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  constexpr float q4scale = 15.f;
  uint8_t *sc = dst;
  uint8_t *qs = dst + offsetof(BlockQ2_K, qs);
  uint8_t *d_at = dst + offsetof(BlockQ2_K, d), *dmin_at = dst + offsetof(BlockQ2_K, dmin);
  if (max_scale > 0) {
    const float iscale = q4scale / max_scale;
    for (int j = 0; j < 16; ++j) sc[j] = static_cast<uint8_t>(nearest_int(iscale * scales[j]));
    store_fp16(max_scale / q4scale, d_at);
  } else {
    std::memset(sc, 0, 16);
    store_fp16(0.f, d_at);
  }
  if (max_min > 0) {
    const float iscale = q4scale / max_min;
    for (int j = 0; j < 16; ++j) sc[j] |= static_cast<uint8_t>(nearest_int(iscale * mins[j]) << 4);
    store_fp16(max_min / q4scale, dmin_at);
  } else {
    store_fp16(0.f, dmin_at);
  }
  const float d_all = load_fp16(d_at), dmin_all = load_fp16(dmin_at);
  for (int j = 0; j < 16; ++j) {
    const float d = d_all * (sc[j] & 0xF);
    if (d == 0) continue;
    const float dm = dmin_all * (sc[j] >> 4);
    for (int ii = 0; ii < 16; ++ii) {
      levels[16 * j + ii] = static_cast<uint8_t>(clamp_int(nearest_int((x[16 * j + ii] + dm) / d), 0, 3));
    }
  }
  pack_2bit(levels, qs);
}

// q3_k: layout hmask[32], qs[64], scales[12] (16 6-bit signed scales), d.
void quantize_q3_k_block(const float *x, uint8_t *dst) {
  int8_t levels[kSuper];
  float scales[16];
  const float max_scale = fit_signed_sub_blocks(x, 4, fit_signed_refine, levels, scales);
  uint8_t *hmask = dst, *qs = dst + offsetof(BlockQ3_K, qs), *sc = dst + offsetof(BlockQ3_K, scales);
  uint8_t *d_at = dst + offsetof(BlockQ3_K, d);
  std::memset(sc, 0, 12);
  if (max_scale != 0) {
    const float iscale = -32.f / max_scale;
    for (int j = 0; j < 16; ++j) {
      // The reference narrows the rounded value to int8 before clamping it.
      int l = static_cast<int8_t>(nearest_int(iscale * scales[j]));
      l = clamp_int(l, -32, 31) + 32;
      if (j < 8) {
        sc[j] = static_cast<uint8_t>(l & 0xF);
      } else {
        sc[j - 8] |= static_cast<uint8_t>((l & 0xF) << 4);
      }
      sc[j % 4 + 8] |= static_cast<uint8_t>((l >> 4) << (2 * (j / 4)));
    }
    store_fp16(1 / iscale, d_at);
  } else {
    store_fp16(0.f, d_at);
  }
  const float d_all = load_fp16(d_at);
  for (int j = 0; j < 16; ++j) {
    int s = j < 8 ? sc[j] & 0xF : sc[j - 8] >> 4;
    s = (s | (((sc[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32;
    const float d = d_all * s;
    if (d == 0) continue;
    for (int ii = 0; ii < 16; ++ii) {
      levels[16 * j + ii] = static_cast<int8_t>(clamp_int(nearest_int(x[16 * j + ii] / d), -4, 3) + 4);
    }
  }
  // The third bit of value j goes to bit j / 32 of hmask[j % 32]; the low two bits to qs.
  std::memset(hmask, 0, 32);
  uint8_t low[kSuper];
  for (int j = 0; j < kSuper; ++j) {
    int l = levels[j];
    if (l > 3) {
      hmask[j % 32] |= static_cast<uint8_t>(1u << (j / 32));
      l -= 4;
    }
    low[j] = static_cast<uint8_t>(l);
  }
  pack_2bit(low, qs);
}

// q6_k: layout ql[128], qh[64], scales[16] (int8), d.
void quantize_q6_k_block(const float *x, uint8_t *dst) {
  int8_t levels[kSuper];
  float scales[16];
  const float max_scale = fit_signed_sub_blocks(x, 32, fit_signed_search, levels, scales);
  if (std::fabs(max_scale) < kAllZero) {
    std::memset(dst, 0, sizeof(BlockQ6_K));
    return;
  }
  uint8_t *ql = dst, *qh = dst + offsetof(BlockQ6_K, qh), *sc = dst + offsetof(BlockQ6_K, scales);
  uint8_t *d_at = dst + offsetof(BlockQ6_K, d);
  const float iscale = -128.f / max_scale;
  store_fp16(1 / iscale, d_at);
  for (int ib = 0; ib < 16; ++ib) {
    const int l = nearest_int(iscale * scales[ib]);
    sc[ib] = static_cast<uint8_t>(static_cast<int8_t>(l < 127 ? l : 127));
  }
  const float d_all = load_fp16(d_at);
  for (int j = 0; j < 16; ++j) {
    const float d = d_all * static_cast<int8_t>(sc[j]);
    if (d == 0) continue;
    for (int ii = 0; ii < 16; ++ii) {
      levels[16 * j + ii] = static_cast<int8_t>(clamp_int(nearest_int(x[16 * j + ii] / d), -32, 31) + 32);
    }
  }
  for (int j = 0; j < kSuper; j += 128) {
    for (int l = 0; l < 32; ++l) {
      const int q1 = levels[j + l], q2 = levels[j + l + 32], q3 = levels[j + l + 64], q4 = levels[j + l + 96];
      ql[l] = static_cast<uint8_t>((q1 & 0xF) | ((q3 & 0xF) << 4));
      ql[l + 32] = static_cast<uint8_t>((q2 & 0xF) | ((q4 & 0xF) << 4));
      qh[l] = static_cast<uint8_t>((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6));
    }
    ql += 64;
    qh += 32;
  }
}

template <void (*quantize_block)(const float *, uint8_t *), class Block>
void quantize_supers(const float *src, size_t n_blocks, uint8_t *dst) {
  for (size_t b = 0; b < n_blocks; ++b) quantize_block(src + b * kSuper, dst + b * sizeof(Block));
}

}  // namespace

void quantize_q2_k(const float *src, size_t n_blocks, uint8_t *dst) {
  quantize_supers<quantize_q2_k_block, BlockQ2_K>(src, n_blocks, dst);
}
void quantize_q3_k(const float *src, size_t n_blocks, uint8_t *dst) {
  quantize_supers<quantize_q3_k_block, BlockQ3_K>(src, n_blocks, dst);
}
void quantize_q4_k(const float *src, size_t n_blocks, uint8_t *dst) {
  quantize_supers<quantize_q4_k_block, BlockQ4_K>(src, n_blocks, dst);
}
void quantize_q5_k(const float *src, size_t n_blocks, uint8_t *dst) {
  quantize_supers<quantize_q5_k_block, BlockQ5_K>(src, n_blocks, dst);
}
void quantize_q6_k(const float *src, size_t n_blocks, uint8_t *dst) {
  quantize_supers<quantize_q6_k_block, BlockQ6_K>(src, n_blocks, dst);
}

}  // namespace mote::convert

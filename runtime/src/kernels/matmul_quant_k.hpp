// The K-quant super-blocks' integer products (kernels/quant.hpp defines the sum): each type
// says once, over an ISA's byte vectors, how sub-block s's 32 codes come out of its bit-planes;
// matmul_quant.hpp's driver walks a super-block as its eight 32-value activation blocks. q4_k and
// q5_k then sum as q4_1 does (a float scale and min per 32 values); q6_k, q3_k and q2_k multiply
// each int32 lane by its 16-value sub-block's integer scale (q2_k adds its min per 16 values).
// Included at the end of matmul_quant.hpp.
#pragma once

#include "kernels/matmul_quant.hpp"

namespace mote::kernels::simd {

// Sub-block s's codes, unsigned (the weight is code − kCodeOffset), over Bytes: bits(p, shift,
// mask) = (p[l] >> shift) & mask for l < 32; merge(low, high, left) = low | high << left.
template <class Bytes>
typename Bytes::V k_codes(const BlockQ4_K &b, size_t s) {
  return Bytes::bits(b.qs + 32 * (s / 2), 4 * (s % 2), 15);
}
template <class Bytes>
typename Bytes::V k_codes(const BlockQ5_K &b, size_t s) {
  return Bytes::merge(Bytes::bits(b.qs + 32 * (s / 2), 4 * (s % 2), 15), Bytes::bits(b.qh, s, 1), 4);
}
template <class Bytes>
typename Bytes::V k_codes(const BlockQ6_K &b, size_t s) {
  const size_t h = s / 4, j = s % 4;
  return Bytes::merge(Bytes::bits(b.ql + 64 * h + 32 * (j % 2), 4 * (j / 2), 15), Bytes::bits(b.qh + 32 * h, 2 * j, 3),
                      4);
}
template <class Bytes>
typename Bytes::V k_codes(const BlockQ3_K &b, size_t s) {
  return Bytes::merge(Bytes::bits(b.qs + 32 * (s / 4), 2 * (s % 4), 3), Bytes::bits(b.hmask, s, 1), 2);
}
template <class Bytes>
typename Bytes::V k_codes(const BlockQ2_K &b, size_t s) {
  return Bytes::bits(b.qs + 32 * (s / 4), 2 * (s % 4), 3);
}

#if defined(__AVX2__)
template <class Arch>
struct KBytes {
  using V = __m256i;
  static V bits(const uint8_t *p, size_t shift, int mask) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p));
    return _mm256_and_si256(_mm256_srl_epi16(v, _mm_cvtsi32_si128(static_cast<int>(shift))), _mm256_set1_epi8(mask));
  }
  // high's codes are small (< 16), so its 16-bit shift never carries into the next byte.
  static V merge(V low, V high, int left) {
    return _mm256_or_si256(low, _mm256_sll_epi16(high, _mm_cvtsi32_si128(left)));
  }
  static V minus(V v, int offset) { return _mm256_sub_epi8(v, _mm256_set1_epi8(static_cast<char>(offset))); }
  // out[s] = mul * float(bytes[s]) for 8 bytes, negated when asked (exactly: a sign flip).
  static void products(float *out, const uint8_t *bytes, float mul, bool negate) {
    const __m128i eight = _mm_loadl_epi64(reinterpret_cast<const __m128i *>(bytes));
    const __m256 p = _mm256_mul_ps(_mm256_set1_ps(mul), _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(eight)));
    _mm256_store_ps(out, negate ? _mm256_xor_ps(p, _mm256_set1_ps(-0.0f)) : p);
  }
};

template <class Arch>
inline float k_half(uint16_t h) {
  return _cvtsh_ss(h);
}

// Signed weights with one integer scale per 16 values (q6_k, q3_k, q2_k): |w| against x with w's
// sign, as q8_0; vpmaddwd's second operand is the lane's scale instead of ones, so each int32
// lane comes out already multiplied by it (exactly: |pair sum| <= 2 * 32 * 127, |scale| <= 128).
template <class Arch, bool kLaneMins>
struct SixteenOps {
  using Isa = QuantIsa<Arch>;
  struct Prepared {
    __m256i q, magnitude, lane_scales;  // int16 scales: elements 0-7 (lanes 0-3), 8-15 (lanes 4-7)
    __m256 lane_mins;
  };
  // Sub-block s's signed weights q with the scales (and q2_k's mins) of its two 16-value halves.
  template <class Block>
  static Prepared make(__m256i q, const Block &b, size_t s) {
    __m256i lane_scales;
    __m256 lane_mins = _mm256_setzero_ps();
    // The 16 scales as bytes: q6_k's int8s, q3_k's decoded (minus 32), q2_k's scale/min bytes.
    __m128i all;
    if constexpr (std::is_same_v<Block, BlockQ3_K>) {
      uint32_t words[4];
      q3_k_scale_words(b.scales, words);
      all = _mm_sub_epi8(_mm_setr_epi32(static_cast<int>(words[0]), static_cast<int>(words[1]),
                                        static_cast<int>(words[2]), static_cast<int>(words[3])),
                         _mm_set1_epi8(32));
    } else {
      all = _mm_loadu_si128(reinterpret_cast<const __m128i *>(b.scales));
    }
    // Bytes 2s and 2s + 1, each spread over 8 int16 (lanes 0-3, then 4-7).
    const __m128i first = _mm_set1_epi8(static_cast<char>(2 * s));
    const __m128i spread =
        _mm_shuffle_epi8(all, _mm_add_epi8(first, _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1)));
    if constexpr (std::is_same_v<Block, BlockQ2_K>) {
      lane_scales = _mm256_cvtepu8_epi16(_mm_and_si128(spread, _mm_set1_epi8(15)));
      // q2_k_lane_min per lane: -(dmin * mn), mn the high nibble of byte 2s (lanes 0-3), 2s + 1 (4-7).
      const __m128i four =
          _mm_shuffle_epi8(all, _mm_add_epi8(first, _mm_setr_epi8(0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0)));
      const __m128i mins = _mm_and_si128(_mm_srli_epi16(four, 4), _mm_set1_epi8(15));
      const __m256 products =
          _mm256_mul_ps(_mm256_set1_ps(k_half<Arch>(b.dmin)), _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(mins)));
      lane_mins = _mm256_xor_ps(products, _mm256_set1_ps(-0.0f));
    } else {
      lane_scales = _mm256_cvtepi8_epi16(spread);
    }
    return {q, _mm256_abs_epi8(q), lane_scales, lane_mins};
  }
  static __m256 accumulate(__m256 acc, const Prepared &w, const ActivationBlock &x, const float *scale, const float *) {
    const __m256i pairs = _mm256_maddubs_epi16(w.magnitude, _mm256_sign_epi8(Isa::load_q(x.q), w.q));
    acc = Isa::fold(acc, _mm256_madd_epi16(pairs, w.lane_scales), scale);
    if constexpr (kLaneMins) acc = _mm256_fmadd_ps(w.lane_mins, _mm256_loadu_ps(x.lane_sum_scaled), acc);
    return acc;
  }
};
#endif  // __AVX2__

#if defined(__ARM_NEON)
template <class Arch>
struct KBytes {
  using V = NeonPrepared;
  static V bits(const uint8_t *p, size_t shift, int mask) {
    const int8x16_t right = vdupq_n_s8(static_cast<int8_t>(-static_cast<int>(shift)));
    const uint8x16_t m = vdupq_n_u8(static_cast<uint8_t>(mask));
    return {vreinterpretq_s8_u8(vandq_u8(vshlq_u8(vld1q_u8(p), right), m)),
            vreinterpretq_s8_u8(vandq_u8(vshlq_u8(vld1q_u8(p + 16), right), m))};
  }
  static V merge(V low, V high, int left) {
    const int8x16_t shift = vdupq_n_s8(static_cast<int8_t>(left));
    return {vorrq_s8(low.lo, vshlq_s8(high.lo, shift)), vorrq_s8(low.hi, vshlq_s8(high.hi, shift))};
  }
  static V minus(V v, int offset) {
    const int8x16_t o = vdupq_n_s8(static_cast<int8_t>(offset));
    return {vsubq_s8(v.lo, o), vsubq_s8(v.hi, o)};
  }
  static void products(float *out, const uint8_t *bytes, float mul, bool negate) {
    const uint16x8_t wide = vmovl_u8(vld1_u8(bytes));
    float32x4_t lo = vmulq_n_f32(vcvtq_f32_u32(vmovl_u16(vget_low_u16(wide))), mul);
    float32x4_t hi = vmulq_n_f32(vcvtq_f32_u32(vmovl_u16(vget_high_u16(wide))), mul);
    if (negate) {
      lo = vnegq_f32(lo);
      hi = vnegq_f32(hi);
    }
    vst1q_f32(out, lo);
    vst1q_f32(out + 4, hi);
  }
};

template <class Arch>
inline float k_half(uint16_t h) {
  return half_to_float(Arch{}, h);
}

template <class Arch, bool kLaneMins>
struct SixteenOps {
  using Isa = QuantIsa<Arch>;
  struct Prepared {
    int8x16_t lo, hi;
    int32_t scale_lo, scale_hi;
    float min_lo, min_hi;
  };
  template <class Block>
  static Prepared make(NeonPrepared q, const Block &b, size_t s) {
    float min_lo = 0.0f, min_hi = 0.0f;
    if constexpr (kLaneMins) {
      const float dmin = k_half<Arch>(b.dmin);
      min_lo = q2_k_lane_min(b, dmin, 2 * s);
      min_hi = q2_k_lane_min(b, dmin, 2 * s + 1);
    }
    return {q.lo, q.hi, sixteen_scale(b, 2 * s), sixteen_scale(b, 2 * s + 1), min_lo, min_hi};
  }
  static NeonLanes accumulate(NeonLanes acc, const Prepared &w, const ActivationBlock &x, const float *scale,
                              const float *) {
    NeonInts lanes = Isa::dot_lanes(w.lo, w.hi, x.q);
    lanes = {vmulq_n_s32(lanes.lo, w.scale_lo), vmulq_n_s32(lanes.hi, w.scale_hi)};
    acc = Isa::fold(acc, lanes, scale);
    if constexpr (kLaneMins) {
      acc = {Isa::fma(acc.lo, vdupq_n_f32(w.min_lo), vld1q_f32(x.lane_sum_scaled)),
             Isa::fma(acc.hi, vdupq_n_f32(w.min_hi), vld1q_f32(x.lane_sum_scaled + 4))};
    }
    return acc;
  }
};
#endif  // __ARM_NEON

#if defined(__AVX2__) || defined(__ARM_NEON)
// One K type's ops for the driver: scales() once per (row, super-block), prepare() per
// 32-value sub-block; accumulate() is q4_1's (q4_k, q5_k) or SixteenOps' (q6_k, q3_k, q2_k).
template <class Arch, class Block>
using KAccumulate =
    std::conditional_t<kScaledBySixteen<Block>, SixteenOps<Arch, kKHasMin<Block>>, QuantBlock<Arch, BlockQ4_1>>;

template <class Arch, class Block>
struct KSuperBlockOps : KAccumulate<Arch, Block> {
  using Base = KAccumulate<Arch, Block>;
  using Bytes = KBytes<Arch>;
  using typename Base::Prepared;
  static constexpr bool kHasMin = !kScaledBySixteen<Block>;  // the driver's per-32 mins

  static float dmin(const Block &b) {
    if constexpr (kKHasMin<Block>) {
      return k_half<Arch>(b.dmin);
    } else {
      return 0.0f;
    }
  }
  // quant_k.hpp's super_block_scales, eight products at a time (each the same single rounding).
  static void scales(const Block &b, float *d, float *m) {
    if constexpr (kScaledBySixteen<Block>) {
      const float d_all = k_half<Arch>(b.d);
      for (size_t s = 0; s < kSubBlocks; ++s) d[s] = d_all;
    } else {
      alignas(8) uint8_t sub_scales[kSubBlocks], sub_mins[kSubBlocks];
      k_scales_mins(b.scales, sub_scales, sub_mins);
      Bytes::products(d, sub_scales, k_half<Arch>(b.d), false);
      Bytes::products(m, sub_mins, dmin(b), true);
    }
  }

  static Prepared prepare(const Block &b, size_t s) {
    const typename Bytes::V codes = k_codes<Bytes>(b, s);
    if constexpr (kScaledBySixteen<Block>) {
      return Base::make(Bytes::minus(codes, kCodeOffset<Block>), b, s);
    } else {
      return codes;
    }
  }
};

template <class Arch>
struct QuantBlock<Arch, BlockQ4_K> : KSuperBlockOps<Arch, BlockQ4_K> {};
template <class Arch>
struct QuantBlock<Arch, BlockQ5_K> : KSuperBlockOps<Arch, BlockQ5_K> {};
template <class Arch>
struct QuantBlock<Arch, BlockQ6_K> : KSuperBlockOps<Arch, BlockQ6_K> {};
template <class Arch>
struct QuantBlock<Arch, BlockQ3_K> : KSuperBlockOps<Arch, BlockQ3_K> {};
template <class Arch>
struct QuantBlock<Arch, BlockQ2_K> : KSuperBlockOps<Arch, BlockQ2_K> {};
#endif

template <class Arch>
void matmul_q4_k(float *out, size_t out_stride, const BlockQ4_K *w, const Q8Activations &x, size_t rows, size_t cols,
                 size_t n_tokens) {
  quant_matmul<Arch>(out, out_stride, w, x, rows, cols, n_tokens);
}
template <class Arch>
void matmul_q5_k(float *out, size_t out_stride, const BlockQ5_K *w, const Q8Activations &x, size_t rows, size_t cols,
                 size_t n_tokens) {
  quant_matmul<Arch>(out, out_stride, w, x, rows, cols, n_tokens);
}
template <class Arch>
void matmul_q6_k(float *out, size_t out_stride, const BlockQ6_K *w, const Q8Activations &x, size_t rows, size_t cols,
                 size_t n_tokens) {
  quant_matmul<Arch>(out, out_stride, w, x, rows, cols, n_tokens);
}
template <class Arch>
void matmul_q3_k(float *out, size_t out_stride, const BlockQ3_K *w, const Q8Activations &x, size_t rows, size_t cols,
                 size_t n_tokens) {
  quant_matmul<Arch>(out, out_stride, w, x, rows, cols, n_tokens);
}
template <class Arch>
void matmul_q2_k(float *out, size_t out_stride, const BlockQ2_K *w, const Q8Activations &x, size_t rows, size_t cols,
                 size_t n_tokens) {
  quant_matmul<Arch>(out, out_stride, w, x, rows, cols, n_tokens);
}

}  // namespace mote::kernels::simd

// Integer products of quantized weights with 8-bit activations (kernels/quant.hpp defines the
// exact sum). The tiling driver is written once; each ISA supplies a few intrinsics that turn
// one weight block and one activation block into eight int32 lanes and fold them into eight
// float lanes: x86 (AVX2 and the AVX-512 table) with vpmaddubsw + vpmaddwd, or vpdpbusd in the
// _vnni tables' TUs, NEON with sdot where the CPU has the dot-product extension and widening
// multiplies elsewhere.
//
// Every helper is a template on the xsimd arch, so the AVX2 and AVX-512 translation units never
// emit the same symbol (see simd.hpp).
#pragma once

#include <type_traits>

#include "kernels/matmul.hpp"
#include "kernels/quant.hpp"
#include "kernels/simd.hpp"

namespace mote::kernels::simd {

// Where token t's block b lives in the activations.
struct ActivationBlock {
  const int8_t *q;               // 32 values
  const int32_t *lane_offset;    // 8 lanes' 8 * sum of x
  const float *lane_sum_scaled;  // 8 scaled lane sums
};

inline ActivationBlock activation_block(const Q8Activations &x, size_t index) {
  return {x.q + index * kQuantBlock, x.lane_offset + index * kQuantLanes, x.lane_sum_scaled + index * kQuantLanes};
}

#if defined(__AVX2__)
// --- x86: eight float lanes are one ymm register ----------------------------------------------
template <class Arch>
struct QuantIsa {
  using Lanes = __m256;

  static Lanes zero() { return _mm256_setzero_ps(); }

  // ((a0 + a4) + (a2 + a6)) + ((a1 + a5) + (a3 + a7)), as quant.hpp fixes it.
  static float reduce(Lanes acc) {
    const __m128 four = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
    const __m128 two = _mm_add_ps(four, _mm_movehl_ps(four, four));
    return _mm_cvtss_f32(_mm_add_ss(two, _mm_shuffle_ps(two, two, 1)));
  }

  // acc + eight lanes of 4-element dot products of unsigned u with signed x, exact both ways:
  // vpdpbusd sums the four products straight into int32; vpmaddubsw's int16 pair sums cannot
  // saturate here (|u| <= 128 and |x| <= 127), and vpmaddwd widens them.
  static __m256i dot_add(__m256i acc, __m256i u, __m256i x) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
    return _mm256_dpbusd_epi32(acc, u, x);
#elif defined(__AVXVNNI__)
    return _mm256_dpbusd_avx_epi32(acc, u, x);
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, x), _mm256_set1_epi16(1)));
#endif
  }

  static __m256i dot_lanes(__m256i u, __m256i x) {
#if defined(__AVX512VNNI__) || defined(__AVXVNNI__)
    return dot_add(_mm256_setzero_si256(), u, x);
#else
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, x), _mm256_set1_epi16(1));
#endif
  }

  // 16 bytes of packed nibbles as 32 bytes: low nibbles, then high nibbles (the block order).
  static __m256i unpack_nibbles(const uint8_t *qs) {
    const __m256i both = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i *>(qs)));
    return _mm256_and_si256(_mm256_srlv_epi64(both, _mm256_set_epi64x(4, 4, 0, 0)), _mm256_set1_epi8(0x0F));
  }

  static __m256i load_q(const int8_t *q) { return _mm256_loadu_si256(reinterpret_cast<const __m256i *>(q)); }

  // acc + lanes * scale, the scale broadcast from memory.
  static Lanes fold(Lanes acc, __m256i lanes, const float *scale) {
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(lanes), _mm256_broadcast_ss(scale), acc);
  }

  // Lanes j < n of eight values; lanes past n repeat value n - 1 (always readable) and are zeroed.
  static __m256 keep_first(__m256 v, size_t n) {
    const __m256i mask =
        _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    return _mm256_and_ps(v, _mm256_castsi256_ps(mask));
  }

  // The halves at byte offset `offset` of the first n <= 8 blocks, as floats. Built in a register
  // from plain 16-bit loads: a gather stalled on the row's first cache miss, and halves stored
  // to memory and reloaded as a vector stall on store forwarding.
  template <class Block>
  static __m256 block_halves(const Block *blocks, size_t n, size_t offset) {
    const uint8_t *base = reinterpret_cast<const uint8_t *>(blocks) + offset;
    uint16_t h[8];
#pragma GCC unroll 8
    for (size_t j = 0; j < 8; ++j) __builtin_memcpy(&h[j], base + (j < n ? j : n - 1) * sizeof(Block), 2);
    __m128i v = _mm_cvtsi32_si128(h[0]);
    v = _mm_insert_epi16(v, h[1], 1);
    v = _mm_insert_epi16(v, h[2], 2);
    v = _mm_insert_epi16(v, h[3], 3);
    v = _mm_insert_epi16(v, h[4], 4);
    v = _mm_insert_epi16(v, h[5], 5);
    v = _mm_insert_epi16(v, h[6], 6);
    v = _mm_insert_epi16(v, h[7], 7);
    return keep_first(_mm256_cvtph_ps(v), n);
  }

  // d (and m, when given) of the first n <= 8 blocks as floats, zeros past n.
  template <class Block>
  static void block_scales(const Block *blocks, size_t n, float *d, float *m) {
    _mm256_store_ps(d, block_halves(blocks, n, 0));
    if (m != nullptr) _mm256_store_ps(m, block_halves(blocks, n, 2));  // q4_1's m follows d
  }

  // The first n <= 8 floats of p (read no further), zeros past n.
  static void load_scales(float *out, const float *p, size_t n) {
    if (n == 8) {
      _mm256_store_ps(out, _mm256_loadu_ps(p));
      return;
    }
    const auto at = [&](size_t j) { return p[j < n ? j : n - 1]; };
    _mm256_store_ps(out, keep_first(_mm256_setr_ps(at(0), at(1), at(2), at(3), at(4), at(5), at(6), at(7)), n));
  }

  // out[j] = a[j] * b[j] for the 8 floats of three aligned arrays.
  static void multiply(float *out, const float *a, const float *b) {
    _mm256_store_ps(out, _mm256_mul_ps(_mm256_load_ps(a), _mm256_load_ps(b)));
  }
};

// Each weight type: prepare() makes a block's values ready once per row (shared by every token
// of a tile); accumulate() adds one (row, token, block) product given d_w * d_x (and q4_1's m).
template <class Arch, class Block>
struct QuantBlock;

template <class Arch>
struct QuantBlock<Arch, BlockQ8_0> {
  using Isa = QuantIsa<Arch>;
  static constexpr bool kHasMin = false;
  struct Prepared {
    __m256i q, magnitude;
  };
  static Prepared prepare(const BlockQ8_0 &b) {
    const __m256i q = Isa::load_q(b.qs);
    return {q, _mm256_abs_epi8(q)};
  }
  static __m256 accumulate(__m256 acc, const Prepared &w, const ActivationBlock &x, const float *scale, const float *) {
    // |w| * (x with w's sign) = w * x, with the unsigned operand vpmaddubsw wants.
    return Isa::fold(acc, Isa::dot_lanes(w.magnitude, _mm256_sign_epi8(Isa::load_q(x.q), w.q)), scale);
  }
};

template <class Arch>
struct QuantBlock<Arch, BlockQ4_0> {
  using Isa = QuantIsa<Arch>;
  static constexpr bool kHasMin = false;
  using Prepared = __m256i;
  static Prepared prepare(const BlockQ4_0 &b) { return Isa::unpack_nibbles(b.qs); }
  static __m256 accumulate(__m256 acc, const Prepared &nibbles, const ActivationBlock &x, const float *scale,
                           const float *) {
    // sum (n - 8) x = sum n x - 8 sum x, exactly, per lane.
    const __m256i offsets = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(x.lane_offset));
    const __m256i lanes = _mm256_sub_epi32(Isa::dot_lanes(nibbles, Isa::load_q(x.q)), offsets);
    return Isa::fold(acc, lanes, scale);
  }
};

template <class Arch>
struct QuantBlock<Arch, BlockQ4_1> {
  using Isa = QuantIsa<Arch>;
  static constexpr bool kHasMin = true;
  using Prepared = __m256i;
  static Prepared prepare(const BlockQ4_1 &b) { return Isa::unpack_nibbles(b.qs); }
  static __m256 accumulate(__m256 acc, const Prepared &nibbles, const ActivationBlock &x, const float *scale,
                           const float *min) {
    acc = Isa::fold(acc, Isa::dot_lanes(nibbles, Isa::load_q(x.q)), scale);
    return _mm256_fmadd_ps(_mm256_broadcast_ss(min), _mm256_loadu_ps(x.lane_sum_scaled), acc);
  }
};

// 0x10 in byte i where bit i of qh is set: a q5 block's fifth bits, in the block's element order.
template <class Arch>
inline __m256i fifth_bits(const uint8_t qh_bytes[4]) {
  uint32_t qh;
  __builtin_memcpy(&qh, qh_bytes, sizeof qh);
  const __m256i byte_of_bit = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,  //
                                               2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
  const __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(qh)), byte_of_bit);
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(bytes, bit), bit), _mm256_set1_epi8(0x10));
}

// q5: the 5-bit values 0..31 as unsigned bytes (vpmaddubsw's pair sums stay exact: 2 * 31 * 127).
template <class Arch, class Block>
inline __m256i five_bit_values(const Block &b) {
  return _mm256_or_si256(QuantIsa<Arch>::unpack_nibbles(b.qs), fifth_bits<Arch>(b.qh));
}

template <class Arch>
struct QuantBlock<Arch, BlockQ5_0> {
  using Isa = QuantIsa<Arch>;
  static constexpr bool kHasMin = false;
  using Prepared = __m256i;
  static Prepared prepare(const BlockQ5_0 &b) { return five_bit_values<Arch>(b); }
  static __m256 accumulate(__m256 acc, const Prepared &values, const ActivationBlock &x, const float *scale,
                           const float *) {
    // sum (q - 16) x = sum q x - 2 * (8 sum x), exactly, per lane.
    const __m256i offsets = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(x.lane_offset));
    const __m256i lanes = _mm256_sub_epi32(Isa::dot_lanes(values, Isa::load_q(x.q)), _mm256_slli_epi32(offsets, 1));
    return Isa::fold(acc, lanes, scale);
  }
};

// q5_1 sums as q4_1, with five-bit values.
template <class Arch>
struct QuantBlock<Arch, BlockQ5_1> : QuantBlock<Arch, BlockQ4_1> {
  static __m256i prepare(const BlockQ5_1 &b) { return five_bit_values<Arch>(b); }
};

// iq4_nl: the nibbles looked up as signed levels (vpshufb), then summed as q8_0's signed bytes.
template <class Arch>
struct QuantBlock<Arch, BlockIQ4_NL> : QuantBlock<Arch, BlockQ8_0> {
  using Prepared = typename QuantBlock<Arch, BlockQ8_0>::Prepared;
  static Prepared prepare(const BlockIQ4_NL &b) {
    const __m256i levels =
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i *>(kIQ4NLValues)));
    const __m256i q = _mm256_shuffle_epi8(levels, QuantIsa<Arch>::unpack_nibbles(b.qs));
    return {q, _mm256_abs_epi8(q)};
  }
};

// Quantizes one block of 32 floats: d, q and the lane sums.
template <class Arch>
inline void quantize_block(const Q8Activations &out, size_t b, const float *x) {
  const __m256 sign_bit = _mm256_set1_ps(-0.0f);
  __m256 v[4];
  __m256 amax = _mm256_setzero_ps();
  for (size_t i = 0; i < 4; ++i) {
    v[i] = _mm256_loadu_ps(x + 8 * i);
    amax = _mm256_max_ps(_mm256_andnot_ps(sign_bit, v[i]), amax);  // a nan input is skipped, as fmaxf does
  }
  __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
  m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
  const float max_abs = _mm_cvtss_f32(_mm_max_ss(m4, _mm_shuffle_ps(m4, m4, 1)));
  const float d = max_abs / 127.0f;
  const __m256 inverse = _mm256_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
  __m256i q32[4];
  for (size_t i = 0; i < 4; ++i) {
    const __m256 clamped =
        _mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(v[i], inverse), _mm256_set1_ps(-127.0f)), _mm256_set1_ps(127.0f));
    q32[i] = _mm256_cvtps_epi32(clamped);  // round half to even (the default rounding mode)
  }
  // Packing works within 128-bit halves; the permute restores element order.
  const __m256i q16 = _mm256_packs_epi32(q32[0], q32[1]);
  const __m256i q16b = _mm256_packs_epi32(q32[2], q32[3]);
  const __m256i q8 =
      _mm256_permutevar8x32_epi32(_mm256_packs_epi16(q16, q16b), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256(reinterpret_cast<__m256i *>(out.q + b * kQuantBlock), q8);
  const __m256i lane_sums = QuantIsa<Arch>::dot_lanes(_mm256_set1_epi8(1), q8);
  _mm256_storeu_si256(reinterpret_cast<__m256i *>(out.lane_offset + b * kQuantLanes), _mm256_slli_epi32(lane_sums, 3));
  out.block_sum[b] = _mm256_extract_epi32(lane_sums, 0) + _mm256_extract_epi32(lane_sums, 1) +
                     _mm256_extract_epi32(lane_sums, 2) + _mm256_extract_epi32(lane_sums, 3) +
                     _mm256_extract_epi32(lane_sums, 4) + _mm256_extract_epi32(lane_sums, 5) +
                     _mm256_extract_epi32(lane_sums, 6) + _mm256_extract_epi32(lane_sums, 7);
  _mm256_storeu_ps(out.lane_sum_scaled + b * kQuantLanes,
                   _mm256_mul_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(lane_sums)));
  out.scale[b] = d;
}
#endif  // __AVX2__

#if defined(__ARM_NEON)
// --- NEON: eight float lanes are two q registers ------------------------------------------------
struct NeonLanes {
  float32x4_t lo, hi;
};
struct NeonInts {
  int32x4_t lo, hi;
};

template <class Arch>
struct QuantIsa {
  using Lanes = NeonLanes;

  static Lanes zero() { return {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)}; }

  static float reduce(Lanes acc) {
    const float32x4_t four = vaddq_f32(acc.lo, acc.hi);
    const float32x2_t two = vadd_f32(vget_low_f32(four), vget_high_f32(four));
    return vget_lane_f32(two, 0) + vget_lane_f32(two, 1);
  }

  // Four lanes of 4-element signed dot products of 16 weights and 16 activations.
  static int32x4_t dot4(int8x16_t w, int8x16_t x) {
#if defined(__ARM_FEATURE_DOTPROD)
    return vdotq_s32(vdupq_n_s32(0), w, x);
#else
    const int16x8_t low = vmull_s8(vget_low_s8(w), vget_low_s8(x));
    const int16x8_t high = vmull_s8(vget_high_s8(w), vget_high_s8(x));
    const int32x4_t pairs_low = vpaddlq_s16(low), pairs_high = vpaddlq_s16(high);
    return vcombine_s32(vpadd_s32(vget_low_s32(pairs_low), vget_high_s32(pairs_low)),
                        vpadd_s32(vget_low_s32(pairs_high), vget_high_s32(pairs_high)));
#endif
  }
  static NeonInts dot_lanes(int8x16_t w_lo, int8x16_t w_hi, const int8_t *x) {
    return {dot4(w_lo, vld1q_s8(x)), dot4(w_hi, vld1q_s8(x + 16))};
  }

  static float32x4_t fma(float32x4_t acc, float32x4_t a, float32x4_t b) {
#if defined(__aarch64__) || defined(__ARM_FEATURE_FMA)
    return vfmaq_f32(acc, a, b);
#else
    // VFPv3 NEON has no fused multiply-add; the contract needs fused results, so lane by lane.
    alignas(16) float lanes_acc[4], lanes_a[4], lanes_b[4];
    vst1q_f32(lanes_acc, acc);
    vst1q_f32(lanes_a, a);
    vst1q_f32(lanes_b, b);
    for (size_t i = 0; i < 4; ++i) lanes_acc[i] = __builtin_fmaf(lanes_a[i], lanes_b[i], lanes_acc[i]);
    return vld1q_f32(lanes_acc);
#endif
  }

  static Lanes fold(Lanes acc, NeonInts lanes, const float *scale) {
    const float32x4_t s = vdupq_n_f32(*scale);
    return {fma(acc.lo, vcvtq_f32_s32(lanes.lo), s), fma(acc.hi, vcvtq_f32_s32(lanes.hi), s)};
  }

  static void unpack_nibbles(const uint8_t *qs, int8x16_t *lo, int8x16_t *hi, int8_t offset) {
    const uint8x16_t packed = vld1q_u8(qs);
    const int8x16_t bias = vdupq_n_s8(offset);
    *lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(packed, vdupq_n_u8(0x0F))), bias);
    *hi = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(packed, 4)), bias);
  }

  template <class Block>
  static void block_scales(const Block *blocks, size_t n, float *d, float *m) {
    for (size_t j = 0; j < 8; ++j) {  // zeros past n, as x86's masked gather gives
      d[j] = j < n ? half_to_float(Arch{}, blocks[j].d) : 0.0f;
      if constexpr (kHasMinimum<Block>) {
        if (m != nullptr) m[j] = j < n ? half_to_float(Arch{}, blocks[j].m) : 0.0f;
      }
    }
  }

  static void load_scales(float *out, const float *p, size_t n) {
    for (size_t j = 0; j < 8; ++j) out[j] = j < n ? p[j] : 0.0f;
  }

  static void multiply(float *out, const float *a, const float *b) {
    vst1q_f32(out, vmulq_f32(vld1q_f32(a), vld1q_f32(b)));
    vst1q_f32(out + 4, vmulq_f32(vld1q_f32(a + 4), vld1q_f32(b + 4)));
  }
};

template <class Arch, class Block>
struct QuantBlock;

struct NeonPrepared {
  int8x16_t lo, hi;
};

template <class Arch>
struct QuantBlock<Arch, BlockQ8_0> {
  using Isa = QuantIsa<Arch>;
  static constexpr bool kHasMin = false;
  using Prepared = NeonPrepared;
  static Prepared prepare(const BlockQ8_0 &b) { return {vld1q_s8(b.qs), vld1q_s8(b.qs + 16)}; }
  static NeonLanes accumulate(NeonLanes acc, const Prepared &w, const ActivationBlock &x, const float *scale,
                              const float *) {
    return Isa::fold(acc, Isa::dot_lanes(w.lo, w.hi, x.q), scale);
  }
};

// q4 nibbles as signed bytes: n - 8 for q4_0 (the same integers as x86's lanes), n for q4_1.
template <class Arch, class Block>
inline NeonPrepared signed_nibbles(const Block &b) {
  NeonPrepared p;
  QuantIsa<Arch>::unpack_nibbles(b.qs, &p.lo, &p.hi, std::is_same_v<Block, BlockQ4_0> ? 8 : 0);
  return p;
}

template <class Arch>
struct QuantBlock<Arch, BlockQ4_0> {
  using Isa = QuantIsa<Arch>;
  static constexpr bool kHasMin = false;
  using Prepared = NeonPrepared;
  static Prepared prepare(const BlockQ4_0 &b) { return signed_nibbles<Arch>(b); }
  static NeonLanes accumulate(NeonLanes acc, const Prepared &w, const ActivationBlock &x, const float *scale,
                              const float *) {
    return Isa::fold(acc, Isa::dot_lanes(w.lo, w.hi, x.q), scale);
  }
};

template <class Arch>
struct QuantBlock<Arch, BlockQ4_1> {
  using Isa = QuantIsa<Arch>;
  static constexpr bool kHasMin = true;
  using Prepared = NeonPrepared;
  static Prepared prepare(const BlockQ4_1 &b) { return signed_nibbles<Arch>(b); }
  static NeonLanes accumulate(NeonLanes acc, const Prepared &w, const ActivationBlock &x, const float *scale,
                              const float *min) {
    acc = Isa::fold(acc, Isa::dot_lanes(w.lo, w.hi, x.q), scale);
    const float32x4_t m = vdupq_n_f32(*min);
    return {Isa::fma(acc.lo, m, vld1q_f32(x.lane_sum_scaled)), Isa::fma(acc.hi, m, vld1q_f32(x.lane_sum_scaled + 4))};
  }
};

// q5's five-bit values, minus offset, as signed bytes: elements 0-15 in lo, 16-31 in hi.
template <class Arch, class Block>
inline NeonPrepared five_bit_values(const Block &b, int8_t offset) {
  uint32_t qh;
  __builtin_memcpy(&qh, b.qh, sizeof qh);
  const uint8x16_t bit = vreinterpretq_u8_u64(vdupq_n_u64(0x8040201008040201ull));
  // 0x10 in byte i of a half where bit i of its 16 qh bits is set.
  const auto fifth = [&](uint32_t bits16) {
    const uint8x16_t bytes =
        vcombine_u8(vdup_n_u8(static_cast<uint8_t>(bits16)), vdup_n_u8(static_cast<uint8_t>(bits16 >> 8)));
    return vandq_u8(vtstq_u8(bytes, bit), vdupq_n_u8(0x10));
  };
  const uint8x16_t packed = vld1q_u8(b.qs);
  const int8x16_t bias = vdupq_n_s8(offset);
  const uint8x16_t lo = vorrq_u8(vandq_u8(packed, vdupq_n_u8(0x0F)), fifth(qh & 0xFFFF));
  const uint8x16_t hi = vorrq_u8(vshrq_n_u8(packed, 4), fifth(qh >> 16));
  return {vsubq_s8(vreinterpretq_s8_u8(lo), bias), vsubq_s8(vreinterpretq_s8_u8(hi), bias)};
}

// q5_0 and q5_1 sum as q4_0 and q4_1: their signed values (q - 16, or q) straight into sdot.
template <class Arch>
struct QuantBlock<Arch, BlockQ5_0> : QuantBlock<Arch, BlockQ4_0> {
  static NeonPrepared prepare(const BlockQ5_0 &b) { return five_bit_values<Arch>(b, 16); }
};

template <class Arch>
struct QuantBlock<Arch, BlockQ5_1> : QuantBlock<Arch, BlockQ4_1> {
  static NeonPrepared prepare(const BlockQ5_1 &b) { return five_bit_values<Arch>(b, 0); }
};

// iq4_nl: the nibbles looked up as signed levels, then summed as q8_0's bytes.
template <class Arch>
inline int8x16_t iq4_levels(uint8x16_t nibbles) {
#if defined(__aarch64__)
  return vqtbl1q_s8(vld1q_s8(kIQ4NLValues), nibbles);
#else
  const int8x8x2_t table = {{vld1_s8(kIQ4NLValues), vld1_s8(kIQ4NLValues + 8)}};
  return vcombine_s8(vtbl2_s8(table, vreinterpret_s8_u8(vget_low_u8(nibbles))),
                     vtbl2_s8(table, vreinterpret_s8_u8(vget_high_u8(nibbles))));
#endif
}

template <class Arch>
struct QuantBlock<Arch, BlockIQ4_NL> : QuantBlock<Arch, BlockQ8_0> {
  static NeonPrepared prepare(const BlockIQ4_NL &b) {
    const uint8x16_t packed = vld1q_u8(b.qs);
    return {iq4_levels<Arch>(vandq_u8(packed, vdupq_n_u8(0x0F))), iq4_levels<Arch>(vshrq_n_u8(packed, 4))};
  }
};

template <class Arch>
inline void quantize_block(const Q8Activations &out, size_t b, const float *x) {
  float32x4_t v[8];
  float32x4_t amax = vdupq_n_f32(0.0f);
  for (size_t i = 0; i < 8; ++i) {
    v[i] = vld1q_f32(x + 4 * i);
    amax = vmaxq_f32(amax, vabsq_f32(v[i]));
  }
  const float32x2_t two = vpmax_f32(vget_low_f32(amax), vget_high_f32(amax));
  const float max_abs = __builtin_fmaxf(vget_lane_f32(two, 0), vget_lane_f32(two, 1));
  const float d = max_abs / 127.0f;
  const float32x4_t inverse = vdupq_n_f32(d != 0.0f ? 1.0f / d : 0.0f);
  // Round half to even: adding and removing 1.5 * 2^23 leaves the nearest integer (|v| <= 127).
  const float32x4_t magic = vdupq_n_f32(12582912.0f);
  for (size_t i = 0; i < 8; ++i) {  // lane i: elements 4i .. 4i + 3
    const float32x4_t clamped =
        vminq_f32(vmaxq_f32(vmulq_f32(v[i], inverse), vdupq_n_f32(-127.0f)), vdupq_n_f32(127.0f));
    alignas(16) int32_t q[4];
    vst1q_s32(q, vcvtq_s32_f32(vsubq_f32(vaddq_f32(clamped, magic), magic)));
    int32_t sum = 0;
    for (size_t j = 0; j < 4; ++j) {
      out.q[b * kQuantBlock + 4 * i + j] = static_cast<int8_t>(q[j]);
      sum += q[j];
    }
    out.lane_offset[b * kQuantLanes + i] = 8 * sum;
    out.lane_sum_scaled[b * kQuantLanes + i] = d * static_cast<float>(sum);
  }
  out.scale[b] = d;
  int32_t block_sum = 0;
  for (size_t i = 0; i < kQuantLanes; ++i) block_sum += out.lane_offset[b * kQuantLanes + i] / 8;
  out.block_sum[b] = block_sum;
}
#endif  // __ARM_NEON

// --- the driver, shared by every ISA -----------------------------------------------------------

// The scales of row `row`'s blocks [g, g + n) (d, and m when the type has a min): one per
// 32-value block, read from each block's halves, or, for a super-block type (n = kSubBlocks,
// g a whole super-block), decoded once from its packed sub-block scales.
template <class Arch, class Block>
inline void weight_scales(const Block *row, size_t g, size_t n, float *d, float *m) {
  using Ops = QuantBlock<Arch, Block>;
  if constexpr (sub_blocks_of<Block> == 1) {
    QuantIsa<Arch>::block_scales(row + g, n, d, Ops::kHasMin ? m : nullptr);
  } else {
    Ops::scales(row[g / sub_blocks_of<Block>], d, m);
  }
}

// Block b's values of a row, ready for every token: a 32-value block, or sub-block b % kSubBlocks
// of a super-block.
template <class Arch, class Block>
inline typename QuantBlock<Arch, Block>::Prepared prepare_block(const Block *row, size_t b) {
  constexpr size_t kSub = sub_blocks_of<Block>;
  if constexpr (kSub == 1) {
    return QuantBlock<Arch, Block>::prepare(row[b]);
  } else {
    return QuantBlock<Arch, Block>::prepare(row[b / kSub], b % kSub);
  }
}

// out[t * out_stride + r] for R rows x T tokens, every block of the rows. n_blocks counts the
// 32-value activation blocks; a row holds n_blocks / sub_blocks_of<Block> weight blocks. Blocks
// go in groups of eight (for a super-block type, exactly one super-block): their scales are read
// and multiplied once per group (d_w * d_x for every row and token), then each block adds its
// integer lanes times its scale.
template <class Arch, class Block, size_t R, size_t T>
inline void quant_tile(float *out, size_t out_stride, const Block *w, size_t n_blocks, const Q8Activations &x,
                       size_t token0) {
  using Ops = QuantBlock<Arch, Block>;
  using Isa = QuantIsa<Arch>;
  constexpr size_t G = 8;
  constexpr size_t kSub = sub_blocks_of<Block>;
  static_assert(kSub == 1 || kSub == G, "a super-block is one group of eight activation blocks");
  const size_t row_blocks = n_blocks / kSub;
  typename Isa::Lanes acc[R][T];
#pragma GCC unroll 16
  for (size_t r = 0; r < R; ++r) {
#pragma GCC unroll 16
    for (size_t t = 0; t < T; ++t) acc[r][t] = Isa::zero();
  }
  alignas(32) float d[R][G], mins[R][G], x_scales[T][G], scales[R][T][G];
  for (size_t g = 0; g < n_blocks; g += G) {
    const size_t n = n_blocks - g < G ? n_blocks - g : G;
#pragma GCC unroll 16
    for (size_t t = 0; t < T; ++t) Isa::load_scales(x_scales[t], x.scale + (token0 + t) * n_blocks + g, n);
#pragma GCC unroll 16
    for (size_t r = 0; r < R; ++r) {
      weight_scales<Arch>(w + r * row_blocks, g, n, d[r], mins[r]);
#pragma GCC unroll 16
      for (size_t t = 0; t < T; ++t) Isa::multiply(scales[r][t], d[r], x_scales[t]);
    }
    const auto add_block = [&](size_t j) {
      // As matmul.hpp's dot_tile: the R rows are one contiguous run, consumed R blocks' bytes at
      // a time; ask for the run kPrefetchTilesAhead tiles below (never faults past the end).
      const char *ahead = reinterpret_cast<const char *>(w) +
                          (kPrefetchTilesAhead * R * row_blocks + R * (g + j) / kSub) * sizeof(Block);
#pragma GCC unroll 16
      for (size_t line = 0; line < R * sizeof(Block) / kSub; line += 64) __builtin_prefetch(ahead + line);
      typename Ops::Prepared weights[R];
#pragma GCC unroll 16
      for (size_t r = 0; r < R; ++r) weights[r] = prepare_block<Arch>(w + r * row_blocks, g + j);
#pragma GCC unroll 16
      for (size_t t = 0; t < T; ++t) {
        const ActivationBlock xb = activation_block(x, (token0 + t) * n_blocks + g + j);
#pragma GCC unroll 16
        for (size_t r = 0; r < R; ++r)
          acc[r][t] = Ops::accumulate(acc[r][t], weights[r], xb, &scales[r][t][j], &mins[r][j]);
      }
    };
    if constexpr (kSub > 1) {
      // A super-block's sub-blocks unrolled: each one's bit-plane offsets and shifts are constants.
#pragma GCC unroll 8
      for (size_t j = 0; j < kSub; ++j) add_block(j);
    } else {
      for (size_t j = 0; j < n; ++j) add_block(j);
    }
  }
#pragma GCC unroll 16
  for (size_t r = 0; r < R; ++r) {
#pragma GCC unroll 16
    for (size_t t = 0; t < T; ++t) out[t * out_stride + r] = Isa::reduce(acc[r][t]);
  }
}

// Rows per tile: 4 for one token (decoding: four independent chains hide the FMA latency),
// 2 when several tokens share each prepared weight block.
template <size_t T>
constexpr size_t quant_tile_rows() {
  return T == 1 ? 4 : 2;
}

// Every row of a block of rows against tokens [token0, token0 + K).
template <class Arch, class Block, size_t K>
inline void quant_token_tile(float *out, size_t out_stride, const Block *w, size_t rows, size_t n_blocks,
                             const Q8Activations &x, size_t token0) {
  constexpr size_t R = quant_tile_rows<K>();
  const size_t row_blocks = n_blocks / sub_blocks_of<Block>;
  size_t r = 0;
  for (; r + R <= rows; r += R)
    quant_tile<Arch, Block, R, K>(out + r, out_stride, w + r * row_blocks, n_blocks, x, token0);
  for (; r < rows; ++r) quant_tile<Arch, Block, 1, K>(out + r, out_stride, w + r * row_blocks, n_blocks, x, token0);
}

template <class Arch, class Block, size_t K>
inline void quant_token_rest(float *out, size_t out_stride, const Block *w, size_t rows, size_t n_blocks,
                             const Q8Activations &x, size_t token0, size_t n_tokens) {
  if (n_tokens == K) {
    quant_token_tile<Arch, Block, K>(out, out_stride, w, rows, n_blocks, x, token0);
  } else if constexpr (K > 1) {
    quant_token_rest<Arch, Block, K - 1>(out, out_stride, w, rows, n_blocks, x, token0, n_tokens);
  }
}

// Tokens per tile when prefilling: each prepared weight block serves this many tokens.
constexpr size_t kQuantTileTokens = 3;

template <class Arch, class Block>
inline void quant_matmul(float *out, size_t out_stride, const Block *w, const Q8Activations &x, size_t rows,
                         size_t cols, size_t n_tokens) {
  constexpr size_t T = kQuantTileTokens;
  const size_t n_blocks = cols / kQuantBlock;
  const size_t row_blocks = n_blocks / sub_blocks_of<Block>;
  const size_t row_bytes = row_blocks * sizeof(Block);
  // As matmul.hpp: a block of rows stays in L2 while every token tile passes over it.
  const size_t block_rows = row_bytes < kRowBlockBytes / 4 ? kRowBlockBytes / row_bytes / 4 * 4 : 4;
  for (size_t r0 = 0; r0 < rows; r0 += block_rows) {
    const size_t n_rows = rows - r0 < block_rows ? rows - r0 : block_rows;
    const Block *block_w = w + r0 * row_blocks;
    size_t t = 0;
    if (n_tokens > 1) {
      for (; t + T <= n_tokens; t += T) {
        quant_token_tile<Arch, Block, T>(out + t * out_stride + r0, out_stride, block_w, n_rows, n_blocks, x, t);
      }
    }
    if (t < n_tokens) {
      quant_token_rest<Arch, Block, T>(out + t * out_stride + r0, out_stride, block_w, n_rows, n_blocks, x, t,
                                       n_tokens - t);
    }
  }
}

template <class Arch>
void quantize_q8(const Q8Activations &out, const float *x, size_t cols, size_t n_tokens) {
  const size_t n_blocks = n_tokens * (cols / kQuantBlock);
  for (size_t b = 0; b < n_blocks; ++b) {
    quantize_block<Arch>(out, b, x + b * kQuantBlock);
    finish_block_sums(out, b);
  }
}

template <class Arch>
void matmul_q8_0(float *out, size_t out_stride, const BlockQ8_0 *w, const Q8Activations &x, size_t rows, size_t cols,
                 size_t n_tokens) {
  quant_matmul<Arch>(out, out_stride, w, x, rows, cols, n_tokens);
}

template <class Arch>
void matmul_q4_0(float *out, size_t out_stride, const BlockQ4_0 *w, const Q8Activations &x, size_t rows, size_t cols,
                 size_t n_tokens) {
  quant_matmul<Arch>(out, out_stride, w, x, rows, cols, n_tokens);
}

template <class Arch>
void matmul_q4_1(float *out, size_t out_stride, const BlockQ4_1 *w, const Q8Activations &x, size_t rows, size_t cols,
                 size_t n_tokens) {
  quant_matmul<Arch>(out, out_stride, w, x, rows, cols, n_tokens);
}

template <class Arch>
void matmul_q5_0(float *out, size_t out_stride, const BlockQ5_0 *w, const Q8Activations &x, size_t rows, size_t cols,
                 size_t n_tokens) {
  quant_matmul<Arch>(out, out_stride, w, x, rows, cols, n_tokens);
}

template <class Arch>
void matmul_q5_1(float *out, size_t out_stride, const BlockQ5_1 *w, const Q8Activations &x, size_t rows, size_t cols,
                 size_t n_tokens) {
  quant_matmul<Arch>(out, out_stride, w, x, rows, cols, n_tokens);
}

template <class Arch>
void matmul_iq4_nl(float *out, size_t out_stride, const BlockIQ4_NL *w, const Q8Activations &x, size_t rows,
                   size_t cols, size_t n_tokens) {
  quant_matmul<Arch>(out, out_stride, w, x, rows, cols, n_tokens);
}

}  // namespace mote::kernels::simd

#include "kernels/matmul_quant_k.hpp"  // the K-quant super-blocks' ops and kernels

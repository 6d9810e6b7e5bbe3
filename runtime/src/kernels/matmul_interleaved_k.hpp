// Integer products over the K types' row-interleaved x8 layouts (kernels/quant_k.hpp; quant.hpp
// defines the sum): 32 bytes of a group block hold the same 4 bytes of 8 rows, so one register's
// 32-bit lanes are the rows. A super-block's sub-block scales for all 8 rows come out of three
// (q4_k, q5_k) or four (q6_k) such registers with the plain decoder's bit operations, and each
// 32-value sub-block is eight 4-byte dot steps against broadcast activation quads.
#pragma once

#include <type_traits>

#include "kernels/matmul_interleaved.hpp"
#include "kernels/matmul_quant.hpp"
#include "kernels/quant.hpp"
#include "kernels/ref.hpp"

namespace mote::kernels::simd {

// One K x8 type's super-block step: super_block<K>(acc, mins, group block, activations, first
// activation block of each of K tokens) folds its 8 sub-blocks into the 8 rows' accumulators.
template <class Arch, class Group>
struct KGroupOps;

#if defined(__AVX2__)
// Per row lane: sum over quads k < N of the 4-byte dot of u[k] (unsigned codes <= kMaxCode) with
// activation bytes x[4k .. 4k + 3], exact.
template <class Arch, int kMaxCode, size_t N>
inline __m256i row_dots(const __m256i *u, const int8_t *x) {
#if defined(__AVX512VNNI__) || defined(__AVXVNNI__)
  __m256i chains[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};  // two chains hide vpdpbusd's latency
#pragma GCC unroll 8
  for (size_t k = 0; k < N; ++k)
    chains[k % 2] = QuantIsa<Arch>::dot_add(chains[k % 2], u[k], broadcast_quad<Arch>(x + 4 * k));
  return _mm256_add_epi32(chains[0], chains[1]);
#else
  // vpmaddubsw pair sums (<= 2 * kMaxCode * 127) added in int16 as far as they cannot overflow.
  constexpr size_t kPerInt16 = 32767 / (2 * kMaxCode * 127);
  static_assert(kPerInt16 >= 1, "one pair sum fits in int16");
  __m256i total = _mm256_setzero_si256();
#pragma GCC unroll 8
  for (size_t k0 = 0; k0 < N; k0 += kPerInt16) {
    __m256i pairs = _mm256_maddubs_epi16(u[k0], broadcast_quad<Arch>(x + 4 * k0));
    for (size_t k = k0 + 1; k < k0 + kPerInt16 && k < N; ++k)
      pairs = _mm256_add_epi16(pairs, _mm256_maddubs_epi16(u[k], broadcast_quad<Arch>(x + 4 * k)));
    total = _mm256_add_epi32(total, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
  }
  return total;
#endif
}

inline __m256i load_rows(const uint8_t *p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)); }
inline __m256 row_halves(const uint16_t *p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
}
// Byte j (0..3) of every row's 32-bit word, unsigned, as floats.
inline __m256 word_byte(__m256i words, size_t j) {
  return _mm256_cvtepi32_ps(
      _mm256_and_si256(_mm256_srlv_epi32(words, _mm256_set1_epi32(static_cast<int>(8 * j))), _mm256_set1_epi32(0xFF)));
}


// q4_kx8 and q5_kx8. rest: the 12 scale bytes (quads 0-2), q5's qh (quads 3-10), then qs.
template <class Arch, class Group>
struct KMinGroupOps {
  static constexpr bool kFifthBit = std::is_same_v<Group, BlockQ5_Kx8>;
  static constexpr size_t kQsAt = kFifthBit ? 12 * 8 + 32 * 8 : 12 * 8;
  static constexpr int kMaxCode = kFifthBit ? 31 : 15;

  template <size_t K>
  static void super_block(__m256 *acc, __m256 *acc_mins, const Group &g, const Q8Activations &x, const size_t *xb0) {
    const __m256 d = row_halves(g.fields), dmin = row_halves(g.fields + 8);
    // k_scales_mins on 8 rows' words at once: a, b, c are bytes 0-3, 4-7, 8-11 of each row.
    const __m256i a = load_rows(g.rest), b = load_rows(g.rest + 32), c = load_rows(g.rest + 64);
    const __m256i six = _mm256_set1_epi8(0x3F), four = _mm256_set1_epi8(0x0F), top = _mm256_set1_epi8(0x30);
    const __m256i scales[2] = {
        _mm256_and_si256(a, six),
        _mm256_or_si256(_mm256_and_si256(c, four), _mm256_and_si256(_mm256_srli_epi32(a, 2), top))};
    const __m256i mins[2] = {_mm256_and_si256(b, six), _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(c, 4), four),
                                                                       _mm256_and_si256(_mm256_srli_epi32(b, 2), top))};
#pragma GCC unroll 8
    for (size_t s = 0; s < kSubBlocks; ++s) {
      // Sub-block s: the low (s even) or high nibbles of qs bytes 32 (s / 2) .. + 31, one
      // register per quad (re-read per sub-block: 16 live registers would spill on AVX2).
      __m256i codes[8];
#pragma GCC unroll 8
      for (size_t k = 0; k < 8; ++k) {
        const __m256i v = load_rows(g.rest + kQsAt + 256 * (s / 2) + 32 * k);
        codes[k] = _mm256_and_si256(s % 2 == 0 ? v : _mm256_srli_epi16(v, 4), four);
        if constexpr (kFifthBit) {  // bit s of qh[l]: qh quad k holds elements 4k .. 4k + 3
          // Bit s moved straight to bit 4 (16-bit shifts: what crosses a byte is masked off).
          const __m256i qh = load_rows(g.rest + 96 + 32 * k);
          const __m256i moved = s < 4    ? _mm256_slli_epi16(qh, static_cast<int>(4 - s))
                                : s == 4 ? qh
                                         : _mm256_srli_epi16(qh, static_cast<int>(s - 4));
          codes[k] = _mm256_or_si256(codes[k], _mm256_and_si256(moved, _mm256_set1_epi8(0x10)));
        }
      }
      const __m256 d_sub = _mm256_mul_ps(d, word_byte(scales[s / 4], s % 4));
      const __m256 m_sub = _mm256_xor_ps(_mm256_mul_ps(dmin, word_byte(mins[s / 4], s % 4)), _mm256_set1_ps(-0.0f));
#pragma GCC unroll 8
      for (size_t t = 0; t < K; ++t) {
        const size_t xb = xb0[t] + s;
        const __m256i sums = row_dots<Arch, kMaxCode, 8>(codes, x.q + xb * kQuantBlock);
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), _mm256_mul_ps(d_sub, _mm256_set1_ps(x.scale[xb])), acc[t]);
        acc_mins[t] =
            _mm256_fmadd_ps(m_sub, _mm256_set1_ps(x.scale[xb] * static_cast<float>(x.block_sum[xb])), acc_mins[t]);
      }
    }
  }
};


// q6_kx8. rest: ql (quads 0-31), qh (quads 32-47), the 16 int8 scales (quads 48-51).
template <class Arch>
struct KGroupOps<Arch, BlockQ6_Kx8> {
  // The int8 scale of 16-value sub-block i for every row, sign-extended.
  static __m256i scale_of(const __m256i *words, size_t i) {
    return _mm256_srai_epi32(_mm256_sllv_epi32(words[i / 4], _mm256_set1_epi32(static_cast<int>(24 - 8 * (i % 4)))),
                             24);
  }
  // 32 * the sum of 16 activations: lane_offset holds 8 * each lane (4 values) sum.
  static int32_t thirty_two_sum(const int32_t *lane_offset) {
    return 4 * (lane_offset[0] + lane_offset[1] + lane_offset[2] + lane_offset[3]);
  }

  template <size_t K>
  static void super_block(__m256 *acc, __m256 *, const BlockQ6_Kx8 &g, const Q8Activations &x, const size_t *xb0) {
    const __m256 d = row_halves(g.fields);
    const __m256i scale_words[4] = {load_rows(g.rest + 1536), load_rows(g.rest + 1568), load_rows(g.rest + 1600),
                                    load_rows(g.rest + 1632)};
    const __m256i four = _mm256_set1_epi8(0x0F), high_bits = _mm256_set1_epi8(0x30);
#pragma GCC unroll 2
    for (size_t half = 0; half < 2; ++half) {
      __m256i qh[8];
#pragma GCC unroll 8
      for (size_t k = 0; k < 8; ++k) qh[k] = load_rows(g.rest + 1024 + 32 * (8 * half + k));
#pragma GCC unroll 4
      for (size_t j = 0; j < 4; ++j) {  // k_code: sub-block s = 4 half + j
        const size_t s = 4 * half + j;
        __m256i codes[8];
#pragma GCC unroll 8
        for (size_t k = 0; k < 8; ++k) {
          const __m256i ql = load_rows(g.rest + 32 * (16 * half + 8 * (j % 2) + k));
          const __m256i low = _mm256_and_si256(j < 2 ? ql : _mm256_srli_epi16(ql, 4), four);
          // Bits 2j, 2j + 1 of qh moved straight to bits 4-5 (one shift, or none for j = 2).
          const __m256i moved = j < 2 ? _mm256_slli_epi16(qh[k], 4 - 2 * j)
                                : j == 2 ? qh[k]
                                         : _mm256_srli_epi16(qh[k], 2);
          codes[k] = _mm256_or_si256(low, _mm256_and_si256(moved, high_bits));
        }
        const __m256i sc0 = scale_of(scale_words, 2 * s), sc1 = scale_of(scale_words, 2 * s + 1);
#pragma GCC unroll 8
        for (size_t t = 0; t < K; ++t) {
          const size_t xb = xb0[t] + s;
          const int8_t *xq = x.q + xb * kQuantBlock;
          const int32_t *offsets = x.lane_offset + xb * kQuantLanes;
          // sum (code - 32) x = sum code x - 32 sum x, per 16-value half.
          const __m256i h0 =
              _mm256_sub_epi32(row_dots<Arch, 63, 4>(codes, xq), _mm256_set1_epi32(thirty_two_sum(offsets)));
          const __m256i h1 = _mm256_sub_epi32(row_dots<Arch, 63, 4>(codes + 4, xq + 16),
                                              _mm256_set1_epi32(thirty_two_sum(offsets + 4)));
          const __m256i sums = _mm256_add_epi32(_mm256_mullo_epi32(sc0, h0), _mm256_mullo_epi32(sc1, h1));
          acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), _mm256_mul_ps(d, _mm256_set1_ps(x.scale[xb])), acc[t]);
        }
      }
    }
  }
};

// The 8 rows' results: acc + mins, one float per row.
template <class Arch>
inline void store_rows(float *out, __m256 acc, __m256 mins) {
  _mm256_storeu_ps(out, _mm256_add_ps(acc, mins));
}
#endif  // __AVX2__

#if defined(__ARM_NEON)
// NEON: a q register holds 4 bytes of each of 4 rows, so every 32-byte row register is two
// halves (rows 0-3, rows 4-7) and each row sum an int32x4_t pair; dot_quads (sdot, or widening
// multiplies) gives the exact 4-byte dots.
inline uint8x16_t row_bytes(const uint8_t *p, size_t half) { return vld1q_u8(p + 16 * half); }
inline uint32x4_t row_words(const uint8_t *p, size_t half) { return vreinterpretq_u32_u8(row_bytes(p, half)); }
// Byte j (0..3) of every row's 32-bit word, unsigned, as floats.
inline float32x4_t word_byte(uint32x4_t words, size_t j) {
  return vcvtq_f32_u32(vandq_u32(vshlq_u32(words, vdupq_n_s32(-static_cast<int>(8 * j))), vdupq_n_u32(0xFF)));
}
// Per row: sum over quads k < N of codes[k] (signed bytes) dotted with x[4k .. 4k + 3].
template <class Arch, size_t N>
inline int32x4_t row_dots(const int8x16_t *codes, const int8_t *x) {
  int32x4_t sums = vdupq_n_s32(0);
  for (size_t k = 0; k < N; ++k) sums = dot_quads<Arch>(sums, codes[k], x + 4 * k);
  return sums;
}


template <class Arch, class Group>
struct KMinGroupOps {
  using Isa = QuantIsa<Arch>;
  static constexpr bool kFifthBit = std::is_same_v<Group, BlockQ5_Kx8>;
  static constexpr size_t kQsAt = kFifthBit ? 12 * 8 + 32 * 8 : 12 * 8;

  template <size_t K>
  static void super_block(NeonLanes *acc, NeonLanes *acc_mins, const Group &g, const Q8Activations &x,
                          const size_t *xb0) {
    float32x4_t d[2], dmin[2];
    load_scales8<Arch, Group>(g.fields, d);
    load_scales8<Arch, Group>(g.fields + 8, dmin);
    for (size_t half = 0; half < 2; ++half) {
      // k_scales_mins on 4 rows' words at once, as the x86 kernel does on 8.
      const uint32x4_t a = row_words(g.rest, half), b = row_words(g.rest + 32, half), c = row_words(g.rest + 64, half);
      const uint32x4_t six = vdupq_n_u32(0x3F3F3F3Fu), four = vdupq_n_u32(0x0F0F0F0Fu), top = vdupq_n_u32(0x30303030u);
      const uint32x4_t scales[2] = {vandq_u32(a, six),
                                    vorrq_u32(vandq_u32(c, four), vandq_u32(vshrq_n_u32(a, 2), top))};
      const uint32x4_t mins[2] = {vandq_u32(b, six),
                                  vorrq_u32(vandq_u32(vshrq_n_u32(c, 4), four), vandq_u32(vshrq_n_u32(b, 2), top))};
      for (size_t s = 0; s < kSubBlocks; ++s) {
        int8x16_t codes[8];
        for (size_t k = 0; k < 8; ++k) {
          const uint8x16_t v = row_bytes(g.rest + kQsAt + 256 * (s / 2) + 32 * k, half);
          uint8x16_t code = vandq_u8(s % 2 == 0 ? v : vshrq_n_u8(v, 4), vdupq_n_u8(0x0F));
          if constexpr (kFifthBit) {
            const uint8x16_t qh = row_bytes(g.rest + 96 + 32 * k, half);
            const uint8x16_t bit =
                vandq_u8(vshlq_u8(qh, vdupq_n_s8(static_cast<int8_t>(-static_cast<int>(s)))), vdupq_n_u8(1));
            code = vorrq_u8(code, vshlq_n_u8(bit, 4));
          }
          codes[k] = vreinterpretq_s8_u8(code);
        }
        const float32x4_t d_sub = vmulq_f32(d[half], word_byte(scales[s / 4], s % 4));
        const float32x4_t m_sub = vnegq_f32(vmulq_f32(dmin[half], word_byte(mins[s / 4], s % 4)));
        for (size_t t = 0; t < K; ++t) {
          const size_t xb = xb0[t] + s;
          const int32x4_t sums = row_dots<Arch, 8>(codes, x.q + xb * kQuantBlock);
          float32x4_t &lanes = half == 0 ? acc[t].lo : acc[t].hi;
          float32x4_t &min_lanes = half == 0 ? acc_mins[t].lo : acc_mins[t].hi;
          lanes = Isa::fma(lanes, vcvtq_f32_s32(sums), vmulq_n_f32(d_sub, x.scale[xb]));
          min_lanes = Isa::fma(min_lanes, m_sub, vdupq_n_f32(x.scale[xb] * static_cast<float>(x.block_sum[xb])));
        }
      }
    }
  }
};


template <class Arch>
struct KGroupOps<Arch, BlockQ6_Kx8> {
  using Isa = QuantIsa<Arch>;
  template <size_t K>
  static void super_block(NeonLanes *acc, NeonLanes *, const BlockQ6_Kx8 &g, const Q8Activations &x,
                          const size_t *xb0) {
    float32x4_t d[2];
    load_scales8<Arch, BlockQ6_Kx8>(g.fields, d);
    for (size_t half = 0; half < 2; ++half) {
      const auto scale_of = [&](size_t i) {  // the int8 scale of 16-value sub-block i, per row
        const int32x4_t words = vreinterpretq_s32_u32(row_words(g.rest + 1536 + 32 * (i / 4), half));
        return vshlq_s32(vshlq_s32(words, vdupq_n_s32(static_cast<int>(24 - 8 * (i % 4)))), vdupq_n_s32(-24));
      };
      for (size_t s = 0; s < kSubBlocks; ++s) {
        const size_t h = s / 4, j = s % 4;  // k_code's half and quarter
        int8x16_t codes[8];
        for (size_t k = 0; k < 8; ++k) {
          const uint8x16_t ql = row_bytes(g.rest + 32 * (16 * h + 8 * (j % 2) + k), half);
          const uint8x16_t qh = row_bytes(g.rest + 1024 + 32 * (8 * h + k), half);
          const uint8x16_t low =
              vandq_u8(vshlq_u8(ql, vdupq_n_s8(static_cast<int8_t>(-static_cast<int>(4 * (j / 2))))), vdupq_n_u8(15));
          const uint8x16_t high =
              vandq_u8(vshlq_u8(qh, vdupq_n_s8(static_cast<int8_t>(-static_cast<int>(2 * j)))), vdupq_n_u8(3));
          codes[k] = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(low, vshlq_n_u8(high, 4))), vdupq_n_s8(32));
        }
        const int32x4_t sc0 = scale_of(2 * s), sc1 = scale_of(2 * s + 1);
        for (size_t t = 0; t < K; ++t) {
          const size_t xb = xb0[t] + s;
          const int8_t *xq = x.q + xb * kQuantBlock;
          // Signed codes (q - 32) straight into the dots: the same exact h0, h1 as x86's offsets.
          const int32x4_t sums =
              vmlaq_s32(vmulq_s32(sc0, row_dots<Arch, 4>(codes, xq)), sc1, row_dots<Arch, 4>(codes + 4, xq + 16));
          float32x4_t &lanes = half == 0 ? acc[t].lo : acc[t].hi;
          lanes = Isa::fma(lanes, vcvtq_f32_s32(sums), vmulq_n_f32(d[half], x.scale[xb]));
        }
      }
    }
  }
};

template <class Arch>
inline void store_rows(float *out, NeonLanes acc, NeonLanes mins) {
  vst1q_f32(out, vaddq_f32(acc.lo, mins.lo));
  vst1q_f32(out + 4, vaddq_f32(acc.hi, mins.hi));
}
#endif  // __ARM_NEON

#if defined(__AVX2__) || defined(__ARM_NEON)
template <class Arch>
struct KGroupOps<Arch, BlockQ4_Kx8> : KMinGroupOps<Arch, BlockQ4_Kx8> {};
template <class Arch>
struct KGroupOps<Arch, BlockQ5_Kx8> : KMinGroupOps<Arch, BlockQ5_Kx8> {};

// How far ahead of its reads a tile asks for weights (a prefetch never faults, even past the end).
constexpr size_t kKPrefetchBytes = 2048;

// One group of 8 rows against K tokens from token0, every super-block.
template <class Arch, class Group, size_t K>
inline void k_group_tile(float *out, size_t out_stride, const Group *group, size_t n_super, const Q8Activations &x,
                         size_t token0) {
  using Lanes = typename QuantIsa<Arch>::Lanes;
  Lanes acc[K], mins[K];
#pragma GCC unroll 8
  for (size_t t = 0; t < K; ++t) acc[t] = mins[t] = QuantIsa<Arch>::zero();
  for (size_t sb = 0; sb < n_super; ++sb) {
    // As interleaved_tile: the weights stream once per pass, so ask for them ahead.
    const char *ahead = reinterpret_cast<const char *>(group + sb) + kKPrefetchBytes;
    for (size_t line = 0; line < sizeof(Group); line += 64) __builtin_prefetch(ahead + line);
    size_t xb0[K];
    for (size_t t = 0; t < K; ++t) xb0[t] = ((token0 + t) * n_super + sb) * kSubBlocks;
    KGroupOps<Arch, Group>::template super_block<K>(acc, mins, group[sb], x, xb0);
  }
#pragma GCC unroll 8
  for (size_t t = 0; t < K; ++t) store_rows<Arch>(out + (token0 + t) * out_stride, acc[t], mins[t]);
}

// Tokens sharing each decoded super-block when prefilling.
#if defined(__AVX2__)
constexpr size_t kKGroupTokens = 4;
#else
constexpr size_t kKGroupTokens = 2;
#endif

// The last n_tokens < kKGroupTokens tokens as one tile of exactly that many (K counts down).
template <class Arch, class Group, size_t K>
inline void k_group_rest(float *out, size_t out_stride, const Group *group, size_t n_super, const Q8Activations &x,
                         size_t token0, size_t n_tokens) {
  if (n_tokens == K) {
    k_group_tile<Arch, Group, K>(out, out_stride, group, n_super, x, token0);
  } else if constexpr (K > 1) {
    k_group_rest<Arch, Group, K - 1>(out, out_stride, group, n_super, x, token0, n_tokens);
  }
}

template <class Arch, class Group>
inline void k_interleaved_matmul(float *out, size_t out_stride, const Group *w, const Q8Activations &x, size_t rows,
                                 size_t cols, size_t n_tokens) {
  constexpr size_t T = kKGroupTokens;
  const size_t n_super = cols / kSuperBlock, n_groups = rows / kInterleave;
  // As interleaved_matmul: a run of groups stays in L2 while every token tile passes over it.
  const size_t group_bytes = n_super * sizeof(Group);
  const size_t run = group_bytes < kRowBlockBytes ? kRowBlockBytes / group_bytes : 1;
  for (size_t g0 = 0; g0 < n_groups; g0 += run) {
    const size_t g_end = g0 + run < n_groups ? g0 + run : n_groups;
    size_t t = 0;
    for (; t + T <= n_tokens; t += T) {
      for (size_t g = g0; g < g_end; ++g)
        k_group_tile<Arch, Group, T>(out + g * kInterleave, out_stride, w + g * n_super, n_super, x, t);
    }
    if (t < n_tokens) {
      for (size_t g = g0; g < g_end; ++g)
        k_group_rest<Arch, Group, T - 1>(out + g * kInterleave, out_stride, w + g * n_super, n_super, x, t,
                                         n_tokens - t);
    }
  }
}
#else
// No SIMD x8 K products on this ISA: the scalar twin (the same sum, so the same bits).
template <class Arch, class Group>
inline void k_interleaved_matmul(float *out, size_t out_stride, const Group *w, const Q8Activations &x, size_t rows,
                                 size_t cols, size_t n_tokens) {
  if constexpr (std::is_same_v<Group, BlockQ4_Kx8>) ref::matmul_q4_kx8(out, out_stride, w, x, rows, cols, n_tokens);
  if constexpr (std::is_same_v<Group, BlockQ5_Kx8>) ref::matmul_q5_kx8(out, out_stride, w, x, rows, cols, n_tokens);
  if constexpr (std::is_same_v<Group, BlockQ6_Kx8>) ref::matmul_q6_kx8(out, out_stride, w, x, rows, cols, n_tokens);
}
#endif

template <class Arch>
void matmul_q4_kx8(float *out, size_t out_stride, const BlockQ4_Kx8 *w, const Q8Activations &x, size_t rows,
                   size_t cols, size_t n_tokens) {
  k_interleaved_matmul<Arch>(out, out_stride, w, x, rows, cols, n_tokens);
}
template <class Arch>
void matmul_q5_kx8(float *out, size_t out_stride, const BlockQ5_Kx8 *w, const Q8Activations &x, size_t rows,
                   size_t cols, size_t n_tokens) {
  k_interleaved_matmul<Arch>(out, out_stride, w, x, rows, cols, n_tokens);
}
template <class Arch>
void matmul_q6_kx8(float *out, size_t out_stride, const BlockQ6_Kx8 *w, const Q8Activations &x, size_t rows,
                   size_t cols, size_t n_tokens) {
  k_interleaved_matmul<Arch>(out, out_stride, w, x, rows, cols, n_tokens);
}

}  // namespace mote::kernels::simd

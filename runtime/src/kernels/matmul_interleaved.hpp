// Integer products over the row-interleaved x8 layouts (kernels/quant.hpp): one vector register
// holds 4 quant bytes of each of 8 rows, so the integer lanes are the rows. A group block's
// exact int32 sums for 8 rows come out in one register, and its scale step (convert, multiply by
// d_w * d_x, add) is one instruction each for all 8 rows instead of once per row.
#pragma once

#include <type_traits>

#include "kernels/matmul_quant.hpp"
#include "kernels/quant.hpp"
#include "kernels/simd.hpp"

namespace mote::kernels::simd {

#if defined(__AVX2__)
// The activation block of one token: its quants, d and the sum of its quants.
struct TokenBlock {
  const int8_t *q;
  float scale;
  int32_t sum;
};

// Four activation bytes x[4k .. 4k + 3] in every 32-bit lane.
template <class Arch>
inline __m256i broadcast_quad(const int8_t *q) {
  int32_t quad;
  __builtin_memcpy(&quad, q, sizeof quad);
  return _mm256_set1_epi32(quad);
}

template <class Arch, class Block>
struct InterleavedBlock;

// q4_0x8, q4_1x8, q5_0x8 and q5_1x8: the quants unpacked once per group block (eight
// registers), then for each token eight integer steps per block.
template <class Arch, class Block>
struct Nibbles {
  static constexpr bool kFiveBit = std::is_same_v<Block, BlockQ5_0x8> || std::is_same_v<Block, BlockQ5_1x8>;
  __m256i low[4], high[4];  // elements 4k .. 4k + 3 and 16 + 4k .. 16 + 4k + 3 of each row
  __m256 d;
  static Nibbles unpack(const Block &b) {
    Nibbles n;
    const __m256i mask = _mm256_set1_epi8(0x0F);
    for (size_t k = 0; k < 4; ++k) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(b.qs + 32 * k));
      n.low[k] = _mm256_and_si256(v, mask);
      n.high[k] = _mm256_and_si256(_mm256_srli_epi16(v, 4), mask);
    }
    if constexpr (kFiveBit) {
      const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(b.qh));
      for (size_t k = 0; k < 4; ++k) {
        n.low[k] = _mm256_or_si256(n.low[k], row_fifth_bits(qh, k));
        n.high[k] = _mm256_or_si256(n.high[k], row_fifth_bits(qh, 4 + k));
      }
    }
    n.d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(b.d)));
    return n;
  }
  // 0x10 in byte j of lane i where bit 4e + j of row i's qh is set (elements 4e .. 4e + 3).
  static __m256i row_fifth_bits(__m256i qh, size_t e) {
    const __m256i byte_index = _mm256_add_epi8(_mm256_setr_epi8(0, 0, 0, 0, 4, 4, 4, 4, 8, 8, 8, 8, 12, 12, 12, 12, 0,
                                                                0, 0, 0, 4, 4, 4, 4, 8, 8, 8, 8, 12, 12, 12, 12),
                                               _mm256_set1_epi8(static_cast<char>(e / 2)));
    const __m256i bit = _mm256_set1_epi32(static_cast<int>(0x08040201u << (4 * (e % 2))));
    const __m256i bytes = _mm256_shuffle_epi8(qh, byte_index);
    return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(bytes, bit), bit), _mm256_set1_epi8(0x10));
  }
  // Per row: sum over the block of value * x, exact.
  __m256i dot(const int8_t *x) const {
#if defined(__AVX512VNNI__) || defined(__AVXVNNI__)
    // Four independent chains of two vpdpbusd: one chain of eight would wait on its latency.
    __m256i sums[4];
    for (size_t k = 0; k < 4; ++k) {
      sums[k] = QuantIsa<Arch>::dot_add(_mm256_setzero_si256(), low[k], broadcast_quad<Arch>(x + 4 * k));
    }
    for (size_t k = 0; k < 4; ++k)
      sums[k] = QuantIsa<Arch>::dot_add(sums[k], high[k], broadcast_quad<Arch>(x + 16 + 4 * k));
    return _mm256_add_epi32(_mm256_add_epi32(sums[0], sums[1]), _mm256_add_epi32(sums[2], sums[3]));
#else
    // vpmaddubsw pair sums added in int16, then widened: eight steps of 4-bit values fit
    // (8 x 2 x 15 x 127 < 32768) but only four of 5-bit ones (4 x 2 x 31 x 127), so q5 widens
    // its two halves apart.
    const auto pair_sums = [](__m256i u, const int8_t *q) { return _mm256_maddubs_epi16(u, broadcast_quad<Arch>(q)); };
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i low_sums = pair_sums(low[0], x), high_sums = pair_sums(high[0], x + 16);
    for (size_t k = 1; k < 4; ++k) {
      low_sums = _mm256_add_epi16(low_sums, pair_sums(low[k], x + 4 * k));
      high_sums = _mm256_add_epi16(high_sums, pair_sums(high[k], x + 16 + 4 * k));
    }
    if constexpr (kFiveBit) {
      return _mm256_add_epi32(_mm256_madd_epi16(low_sums, ones), _mm256_madd_epi16(high_sums, ones));
    }
    return _mm256_madd_epi16(_mm256_add_epi16(low_sums, high_sums), ones);
#endif
  }
};

// q4_0x8 and q5_0x8: sum (q - offset) x = sum q x - offset sum x, exactly.
template <class Arch, class Block, int kOffset>
struct OffsetQuants {
  static constexpr size_t kTokens = 4;
  using Prepared = Nibbles<Arch, Block>;
  static Prepared prepare(const Block &b) { return Prepared::unpack(b); }
  static __m256 accumulate(__m256 acc, const Prepared &w, const TokenBlock &x) {
    const __m256i sums = _mm256_sub_epi32(w.dot(x.q), _mm256_set1_epi32(kOffset * x.sum));
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), _mm256_mul_ps(w.d, _mm256_set1_ps(x.scale)), acc);
  }
};

// q4_1x8 and q5_1x8: sum (d q + m) x = d sum q x + m sum x.
template <class Arch, class Block>
struct MinimumQuants {
  static constexpr size_t kTokens = 4;
  struct Prepared {
    Nibbles<Arch, Block> nibbles;
    __m256 m;
  };
  static Prepared prepare(const Block &b) {
    return {Nibbles<Arch, Block>::unpack(b), _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(b.m)))};
  }
  static __m256 accumulate(__m256 acc, const Prepared &w, const TokenBlock &x) {
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(w.nibbles.dot(x.q)), _mm256_mul_ps(w.nibbles.d, _mm256_set1_ps(x.scale)),
                          acc);
    return _mm256_fmadd_ps(w.m, _mm256_set1_ps(x.scale * static_cast<float>(x.sum)), acc);
  }
};

template <class Arch>
struct InterleavedBlock<Arch, BlockQ4_0x8> : OffsetQuants<Arch, BlockQ4_0x8, 8> {};
template <class Arch>
struct InterleavedBlock<Arch, BlockQ5_0x8> : OffsetQuants<Arch, BlockQ5_0x8, 16> {};
template <class Arch>
struct InterleavedBlock<Arch, BlockQ4_1x8> : MinimumQuants<Arch, BlockQ4_1x8> {};
template <class Arch>
struct InterleavedBlock<Arch, BlockQ5_1x8> : MinimumQuants<Arch, BlockQ5_1x8> {};

// q8_0x8: signed weights, so each 4-byte step is |w| times x with w's sign (vpmaddubsw wants
// one unsigned operand), widened to int32 at once (int16 sums of these could overflow).
template <class Arch>
struct InterleavedBlock<Arch, BlockQ8_0x8> {
  static constexpr size_t kTokens = 2;
  struct Prepared {
    __m256i q[8];
    __m256 d;
  };
  static Prepared prepare(const BlockQ8_0x8 &b) {
    Prepared p;
    for (size_t k = 0; k < 8; ++k) p.q[k] = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(b.qs + 32 * k));
    p.d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(b.d)));
    return p;
  }
  static __m256 accumulate(__m256 acc, const Prepared &w, const TokenBlock &x) {
    __m256i chains[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                         _mm256_setzero_si256()};  // independent chains hide vpdpbusd's latency
    for (size_t k = 0; k < 8; ++k) {
      const __m256i signed_x = _mm256_sign_epi8(broadcast_quad<Arch>(x.q + 4 * k), w.q[k]);
      chains[k % 4] = QuantIsa<Arch>::dot_add(chains[k % 4], _mm256_abs_epi8(w.q[k]), signed_x);
    }
    const __m256i sums =
        _mm256_add_epi32(_mm256_add_epi32(chains[0], chains[1]), _mm256_add_epi32(chains[2], chains[3]));
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), _mm256_mul_ps(w.d, _mm256_set1_ps(x.scale)), acc);
  }
};

// How far ahead of its reads a tile asks for weights (a prefetch never faults, even past a
// matrix's end).
constexpr size_t kPrefetchBytes = 2048;

// One group of 8 rows against K tokens from token0, every block.
template <class Arch, class Block, size_t K>
inline void interleaved_tile(float *out, size_t out_stride, const Block *group, size_t n_blocks, const Q8Activations &x,
                             size_t token0) {
  using Ops = InterleavedBlock<Arch, Block>;
  __m256 acc[K];
#pragma GCC unroll 8
  for (size_t t = 0; t < K; ++t) acc[t] = _mm256_setzero_ps();
  for (size_t b = 0; b < n_blocks; ++b) {
    // The weights stream from memory once per pass: ask for them kPrefetchBytes ahead (past
    // this group's end that is the next group's start). The hardware prefetcher alone left a
    // decoding core waiting on these loads at under half its bandwidth (perf: most samples on
    // the first use of each block).
    const char *ahead = reinterpret_cast<const char *>(group + b) + kPrefetchBytes;
    for (size_t line = 0; line < sizeof(Block); line += 64) __builtin_prefetch(ahead + line);
    const typename Ops::Prepared w = Ops::prepare(group[b]);
#pragma GCC unroll 8
    for (size_t t = 0; t < K; ++t) {
      const size_t xb = (token0 + t) * n_blocks + b;
      acc[t] = Ops::accumulate(acc[t], w, TokenBlock{x.q + xb * kQuantBlock, x.scale[xb], x.block_sum[xb]});
    }
  }
#pragma GCC unroll 8
  for (size_t t = 0; t < K; ++t) _mm256_storeu_ps(out + (token0 + t) * out_stride, acc[t]);
}

// The last n_tokens < kTokens tokens as one tile of exactly that many (K counts down).
template <class Arch, class Block, size_t K>
inline void interleaved_rest(float *out, size_t out_stride, const Block *group, size_t n_blocks, const Q8Activations &x,
                             size_t token0, size_t n_tokens) {
  if (n_tokens == K) {
    interleaved_tile<Arch, Block, K>(out, out_stride, group, n_blocks, x, token0);
  } else if constexpr (K > 1) {
    interleaved_rest<Arch, Block, K - 1>(out, out_stride, group, n_blocks, x, token0, n_tokens);
  }
}

template <class Arch, class Block>
inline void interleaved_matmul(float *out, size_t out_stride, const Block *w, const Q8Activations &x, size_t rows,
                               size_t cols, size_t n_tokens) {
  constexpr size_t T = InterleavedBlock<Arch, Block>::kTokens;
  const size_t n_blocks = cols / kQuantBlock, n_groups = rows / kInterleave;
  // As matmul.hpp: a run of groups stays in L2 while every token tile passes over it.
  const size_t group_bytes = n_blocks * sizeof(Block);
  const size_t run = group_bytes < kRowBlockBytes ? kRowBlockBytes / group_bytes : 1;
  for (size_t g0 = 0; g0 < n_groups; g0 += run) {
    const size_t g_end = g0 + run < n_groups ? g0 + run : n_groups;
    size_t t = 0;
    for (; t + T <= n_tokens; t += T) {
      for (size_t g = g0; g < g_end; ++g) {
        interleaved_tile<Arch, Block, T>(out + g * kInterleave, out_stride, w + g * n_blocks, n_blocks, x, t);
      }
    }
    if (t < n_tokens) {
      for (size_t g = g0; g < g_end; ++g) {
        interleaved_rest<Arch, Block, T - 1>(out + g * kInterleave, out_stride, w + g * n_blocks, n_blocks, x, t,
                                             n_tokens - t);
      }
    }
  }
}

#elif defined(__ARM_NEON)
// NEON: a q register holds 4 bytes of each of 4 rows, so a group block is two halves (rows
// 0-3 and 4-7) of int32x4 row sums: sdot where the CPU has the dot-product extension, widening
// multiplies and pairwise adds elsewhere.
struct RowQuads {
  int8x16_t half[2];  // rows 0-3 and 4-7, 4 bytes each
};

// acc[i] += sum_j w[4 i + j] * x[j] for the 4 rows of w, x one 4-byte quad.
template <class Arch>
inline int32x4_t dot_quads(int32x4_t acc, int8x16_t w, const int8_t *x) {
  int32_t quad;
  __builtin_memcpy(&quad, x, sizeof quad);
  const int8x16_t xq = vreinterpretq_s8_s32(vdupq_n_s32(quad));
#if defined(__ARM_FEATURE_DOTPROD)
  return vdotq_s32(acc, w, xq);
#else
  const int32x4_t low = vpaddlq_s16(vmull_s8(vget_low_s8(w), vget_low_s8(xq)));     // rows 0, 1: two pairs each
  const int32x4_t high = vpaddlq_s16(vmull_s8(vget_high_s8(w), vget_high_s8(xq)));  // rows 2, 3
  const int32x2_t rows01 = vpadd_s32(vget_low_s32(low), vget_high_s32(low));
  const int32x2_t rows23 = vpadd_s32(vget_low_s32(high), vget_high_s32(high));
  return vaddq_s32(acc, vcombine_s32(rows01, rows23));
#endif
}

// The 32 quant values of 8 rows as signed bytes: quads[k] holds elements 4k .. 4k + 3.
template <class Block>
struct SignedQuads {
  RowQuads quads[8];
  float32x4_t d[2];
};

template <class Arch, class Block>
inline void load_scales8(const uint16_t *halves, float32x4_t *out) {
  for (size_t h = 0; h < 2; ++h) {
    const float lanes[4] = {half_to_float(Arch{}, halves[4 * h]), half_to_float(Arch{}, halves[4 * h + 1]),
                            half_to_float(Arch{}, halves[4 * h + 2]), half_to_float(Arch{}, halves[4 * h + 3])};
    out[h] = vld1q_f32(lanes);
  }
}

// 0x10 in byte j of lane i where bit 4e + j of qh[i] is set, for 4 rows' qh words: the 4 bits
// spread one per byte by a multiply (bit j lands at bit 8j; no two products overlap).
template <class Arch>
inline uint8x16_t fifth_bits(const uint32_t *qh, size_t e) {
  const uint32x4_t nibble =
      vandq_u32(vshlq_u32(vld1q_u32(qh), vdupq_n_s32(-4 * static_cast<int32_t>(e))), vdupq_n_u32(0xF));
  const uint32x4_t spread = vandq_u32(vmulq_u32(nibble, vdupq_n_u32(0x00204081u)), vdupq_n_u32(0x01010101u));
  return vreinterpretq_u8_u32(vshlq_n_u32(spread, 4));
}

template <class Arch, class Block>
inline SignedQuads<Block> signed_quads(const Block &b) {
  SignedQuads<Block> w;
  if constexpr (std::is_same_v<Block, BlockQ8_0x8>) {
    for (size_t k = 0; k < 8; ++k) {
      for (size_t h = 0; h < 2; ++h) w.quads[k].half[h] = vld1q_s8(b.qs + 32 * k + 16 * h);
    }
  } else {
    // q4_0 keeps n - 8 and q5_0 q - 16 (the same integers as x86's sum q x - offset sum x);
    // q4_1 and q5_1 keep q.
    constexpr bool kFiveBit = std::is_same_v<Block, BlockQ5_0x8> || std::is_same_v<Block, BlockQ5_1x8>;
    const int8x16_t offset = vdupq_n_s8(std::is_same_v<Block, BlockQ4_0x8>   ? 8
                                        : std::is_same_v<Block, BlockQ5_0x8> ? 16
                                                                             : 0);
    for (size_t k = 0; k < 4; ++k) {
      for (size_t h = 0; h < 2; ++h) {
        const uint8x16_t packed = vld1q_u8(b.qs + 32 * k + 16 * h);
        uint8x16_t low = vandq_u8(packed, vdupq_n_u8(0x0F)), high = vshrq_n_u8(packed, 4);
        if constexpr (kFiveBit) {
          low = vorrq_u8(low, fifth_bits<Arch>(b.qh + 4 * h, k));
          high = vorrq_u8(high, fifth_bits<Arch>(b.qh + 4 * h, 4 + k));
        }
        w.quads[k].half[h] = vsubq_s8(vreinterpretq_s8_u8(low), offset);
        w.quads[4 + k].half[h] = vsubq_s8(vreinterpretq_s8_u8(high), offset);
      }
    }
  }
  load_scales8<Arch, Block>(b.d, w.d);
  return w;
}

template <class Arch, class Block, size_t K>
inline void interleaved_tile(float *out, size_t out_stride, const Block *group, size_t n_blocks, const Q8Activations &x,
                             size_t token0) {
  using Isa = QuantIsa<Arch>;
  constexpr bool kHasMin = kHasMinimum<Block>;
  float32x4_t acc[K][2];
  for (size_t t = 0; t < K; ++t) acc[t][0] = acc[t][1] = vdupq_n_f32(0.0f);
  for (size_t b = 0; b < n_blocks; ++b) {
    const SignedQuads<Block> w = signed_quads<Arch>(group[b]);
    float32x4_t m[2] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};
    if constexpr (kHasMin) load_scales8<Arch, Block>(group[b].m, m);
    for (size_t t = 0; t < K; ++t) {
      const size_t xb = (token0 + t) * n_blocks + b;
      const int8_t *xq = x.q + xb * kQuantBlock;
      for (size_t h = 0; h < 2; ++h) {
        int32x4_t sums = vdupq_n_s32(0);
        for (size_t k = 0; k < 8; ++k) sums = dot_quads<Arch>(sums, w.quads[k].half[h], xq + 4 * k);
        acc[t][h] = Isa::fma(acc[t][h], vcvtq_f32_s32(sums), vmulq_f32(w.d[h], vdupq_n_f32(x.scale[xb])));
        if constexpr (kHasMin) {
          acc[t][h] = Isa::fma(acc[t][h], m[h], vdupq_n_f32(x.scale[xb] * static_cast<float>(x.block_sum[xb])));
        }
      }
    }
  }
  for (size_t t = 0; t < K; ++t) {
    vst1q_f32(out + (token0 + t) * out_stride, acc[t][0]);
    vst1q_f32(out + (token0 + t) * out_stride + 4, acc[t][1]);
  }
}

template <class Arch, class Block>
inline void interleaved_matmul(float *out, size_t out_stride, const Block *w, const Q8Activations &x, size_t rows,
                               size_t cols, size_t n_tokens) {
  const size_t n_blocks = cols / kQuantBlock;
  for (size_t g = 0; g < rows / kInterleave; ++g) {
    size_t t = 0;
    for (; t + 2 <= n_tokens; t += 2)
      interleaved_tile<Arch, Block, 2>(out + g * kInterleave, out_stride, w + g * n_blocks, n_blocks, x, t);
    if (t < n_tokens)
      interleaved_tile<Arch, Block, 1>(out + g * kInterleave, out_stride, w + g * n_blocks, n_blocks, x, t);
  }
}
#endif

template <class Arch>
void matmul_q8_0x8(float *out, size_t out_stride, const BlockQ8_0x8 *w, const Q8Activations &x, size_t rows,
                   size_t cols, size_t n_tokens) {
  interleaved_matmul<Arch>(out, out_stride, w, x, rows, cols, n_tokens);
}
template <class Arch>
void matmul_q4_0x8(float *out, size_t out_stride, const BlockQ4_0x8 *w, const Q8Activations &x, size_t rows,
                   size_t cols, size_t n_tokens) {
  interleaved_matmul<Arch>(out, out_stride, w, x, rows, cols, n_tokens);
}
template <class Arch>
void matmul_q4_1x8(float *out, size_t out_stride, const BlockQ4_1x8 *w, const Q8Activations &x, size_t rows,
                   size_t cols, size_t n_tokens) {
  interleaved_matmul<Arch>(out, out_stride, w, x, rows, cols, n_tokens);
}

template <class Arch>
void matmul_q5_0x8(float *out, size_t out_stride, const BlockQ5_0x8 *w, const Q8Activations &x, size_t rows,
                   size_t cols, size_t n_tokens) {
  interleaved_matmul<Arch>(out, out_stride, w, x, rows, cols, n_tokens);
}
template <class Arch>
void matmul_q5_1x8(float *out, size_t out_stride, const BlockQ5_1x8 *w, const Q8Activations &x, size_t rows,
                   size_t cols, size_t n_tokens) {
  interleaved_matmul<Arch>(out, out_stride, w, x, rows, cols, n_tokens);
}

}  // namespace mote::kernels::simd

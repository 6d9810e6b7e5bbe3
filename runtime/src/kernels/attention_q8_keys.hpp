// The 8-bit (q8_0) cache's attention scores in integers, on x86 and aarch64. Converting every key to floats
// costs an int8 cache more instructions than an f16 one (two a batch, and a scale), and a prompt's
// attention is compute-bound, so that made the smaller cache the slower one. Here each query is
// rounded to 16 bits per block of kQuantBlock (scale amax / 32767: an error under 2^-16 of the
// block's largest element, far below the keys' own 8 bits), and a key block's dot with it is an
// exact int32. The keys of a block of positions are laid out once per group with one position
// per 32-bit lane (each lane a quad: 4 of the position's int8 elements), so no lane needs summing
// across: vpmaddwd multiplies the quad's elements 0 and 2 (sign-extended in place by two shifts)
// by the query's and adds the products, then 1 and 3 likewise; NEON widens the quads to 16 bits
// and multiply-accumulates each element apart (vmlal), summing a lane's four at the block's end.
// Integer sums are exact, so every way of adding them gives the same int32. A score is
//   scale * sum over blocks b, in order, fused: float(int sum_b) * (d_key_b * d_query_b)
// for every position, whatever the group, the batch or the table width (q8_score is that formula
// one position at a time; the vector lanes compute it alike, bit for bit).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "kernels/attention_query.hpp"
#include "kernels/quant.hpp"
#include "kernels/simd.hpp"

namespace mote::kernels::simd {

// A query's elements rounded to 16 bits per block, as two 32-bit words per quad j (elements 4j ..
// 4j + 3, zero past head_dim): word 2j holds elements 4j and 4j + 2 (low and high half), word
// 2j + 1 elements 4j + 1 and 4j + 3, the halves a key quad's two shifts line up; and each block's
// scale.
template <class Arch>
inline void quantize_query_words(const float *q, size_t head_dim, uint32_t *words, float *scales) {
  for (size_t b0 = 0; b0 < head_dim; b0 += kQuantBlock) {
    const size_t n = head_dim - b0 < kQuantBlock ? head_dim - b0 : kQuantBlock;
    float amax = 0.0f;
    for (size_t i = 0; i < n; ++i) amax = __builtin_fmaxf(amax, __builtin_fabsf(q[b0 + i]));
    scales[b0 / kQuantBlock] = amax / 32767.0f;
    const float inverse = amax > 0.0f ? 32767.0f / amax : 0.0f;
    const auto level = [&](size_t i) -> uint32_t {  // as store_q8_0 rounds: half to even, clamped
      if (i >= n) return 0;
      const float x = __builtin_fminf(__builtin_fmaxf(q[b0 + i] * inverse, -32767.0f), 32767.0f);
      return static_cast<uint16_t>(static_cast<int16_t>(__builtin_nearbyintf(x)));
    };
    for (size_t i = 0; i < n; i += 4) {
      words[(b0 + i) / 2] = level(i) | level(i + 2) << 16;
      words[(b0 + i) / 2 + 1] = level(i + 1) | level(i + 3) << 16;
    }
  }
}

// Element c of a block's query words (as quantize_query_words lays them out).
inline int32_t query_element(const uint32_t *words, size_t c) {
  const uint32_t word = words[c / 4 * 2 + c % 2];
  return static_cast<int16_t>(static_cast<uint16_t>(c % 4 < 2 ? word : word >> 16));
}

// One block's step of a score: acc + float(sum of the n elements' products) * (d_key * d_query),
// fused (words: the block's own).
template <class Arch>
inline float q8_block_step(float acc, const uint32_t *words, float query_scale, const int8_t *k, float key_scale,
                           size_t n) {
  int32_t sum = 0;
  for (size_t c = 0; c < n; ++c) sum += query_element(words, c) * k[c];
  return __builtin_fmaf(static_cast<float>(sum), key_scale * query_scale, acc);
}

// One position's score before `scale`, one key at a time, straight from the float query (each
// block rounded as quantize_query_words rounds it): what every lane of the vector path computes,
// for heads too wide for its scratch. key_scale(b): the key's block b scale.
template <class Arch, class KeyScale>
inline float q8_score(const float *q, const int8_t *k, const KeyScale &key_scale, size_t head_dim) {
  float acc = 0.0f;
  for (size_t b0 = 0; b0 < head_dim; b0 += kQuantBlock) {
    const size_t n = head_dim - b0 < kQuantBlock ? head_dim - b0 : kQuantBlock;
    uint32_t words[kQuantBlock / 2];
    float query_scale;
    quantize_query_words<Arch>(q + b0, n, words, &query_scale);
    acc = q8_block_step<Arch>(acc, words, query_scale, k + b0, key_scale(b0 / kQuantBlock), n);
  }
  return acc;
}

#if defined(__AVX2__) || (defined(__aarch64__) && defined(__ARM_NEON))
#define MOTE_Q8_INTEGER_SCORES 1
#endif

#if defined(__AVX2__)
// Keys of 8 positions (rows[r] from byte d0, 32 of each) to 8 words of each quad j in
// to[j * L + r] (L: words between quads): an 8 x 8 transpose of 32-bit words.
inline void transpose_8_rows(const int8_t *const *rows, size_t d0, uint32_t *to, size_t L) {
  __m256i w[8], t[8];
  for (size_t r = 0; r < 8; ++r) w[r] = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(rows[r] + d0));
  // Row r's quad j (8 a row) to word r of register j: within 128-bit lanes, then across.
  for (size_t r = 0; r < 8; r += 2) {
    t[r] = _mm256_unpacklo_epi32(w[r], w[r + 1]);
    t[r + 1] = _mm256_unpackhi_epi32(w[r], w[r + 1]);
  }
  for (size_t r = 0; r < 8; r += 4) {
    w[r] = _mm256_unpacklo_epi64(t[r], t[r + 2]);
    w[r + 1] = _mm256_unpackhi_epi64(t[r], t[r + 2]);
    w[r + 2] = _mm256_unpacklo_epi64(t[r + 1], t[r + 3]);
    w[r + 3] = _mm256_unpackhi_epi64(t[r + 1], t[r + 3]);
  }
  for (size_t j = 0; j < 4; ++j) {
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(to + j * L), _mm256_permute2x128_si256(w[j], w[j + 4], 0x20));
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(to + (j + 4) * L), _mm256_permute2x128_si256(w[j], w[j + 4], 0x31));
  }
}

// The lanes of one chunk of positions: 8 in a ymm, 16 in a zmm on the AVX-512 table; the most
// queries one pass over a chunk scores (their sums and scores stay in registers).
template <class Arch>
struct KeyLanes {
  static constexpr size_t kLanes = 8, kMaxRun = 4;
  static constexpr size_t kTransposeRows = 8, kTransposeBytes = 32;  // transpose_rows' square
  using Ints = __m256i;
  using Sums = __m256;
  struct Keys {
    Ints even, odd;  // each quad's elements 0 and 2, 1 and 3, as 16-bit pairs
  };
  static Keys load_keys(const uint32_t *p) {
    const Ints quads = _mm256_load_si256(reinterpret_cast<const __m256i *>(p));
    return {_mm256_srai_epi16(_mm256_slli_epi16(quads, 8), 8), _mm256_srai_epi16(quads, 8)};
  }
  static Ints zero() { return _mm256_setzero_si256(); }
  // acc + each lane's quad times the query's (words: the quad's two query words).
  static Ints dot_add(Ints acc, const Keys &keys, const uint32_t *words) {
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(keys.even, _mm256_set1_epi32(static_cast<int>(words[0]))));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(keys.odd, _mm256_set1_epi32(static_cast<int>(words[1]))));
  }
  static void arrange_query_words(uint32_t *, size_t) {}  // dot_add takes quantize_query_words' layout
  static void transpose_rows(const int8_t *const *rows, size_t d0, uint32_t *to) {
    transpose_8_rows(rows, d0, to, kLanes);
  }
  static Sums fzero() { return _mm256_setzero_ps(); }
  static Sums fold(Sums acc, Ints sums, const float *key_scales, float query_scale) {
    const __m256 scales = _mm256_mul_ps(_mm256_load_ps(key_scales), _mm256_set1_ps(query_scale));
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), scales, acc);
  }
  static void store(float *to, Sums acc, float scale) {
    _mm256_storeu_ps(to, _mm256_mul_ps(acc, _mm256_set1_ps(scale)));
  }
};
#if XSIMD_WITH_AVX512BW
template <>
struct KeyLanes<xsimd::avx512bw> {
  static constexpr size_t kLanes = 16, kMaxRun = 8;
  static constexpr size_t kTransposeRows = 8, kTransposeBytes = 32;
  using Ints = __m512i;
  using Sums = __m512;
  struct Keys {
    Ints even, odd;
  };
  static Keys load_keys(const uint32_t *p) {
    const Ints quads = _mm512_load_si512(p);
    return {_mm512_srai_epi16(_mm512_slli_epi16(quads, 8), 8), _mm512_srai_epi16(quads, 8)};
  }
  static Ints zero() { return _mm512_setzero_si512(); }
  static Ints dot_add(Ints acc, const Keys &keys, const uint32_t *words) {
    acc = _mm512_add_epi32(acc, _mm512_madd_epi16(keys.even, _mm512_set1_epi32(static_cast<int>(words[0]))));
    return _mm512_add_epi32(acc, _mm512_madd_epi16(keys.odd, _mm512_set1_epi32(static_cast<int>(words[1]))));
  }
  static void arrange_query_words(uint32_t *, size_t) {}
  static void transpose_rows(const int8_t *const *rows, size_t d0, uint32_t *to) {
    transpose_8_rows(rows, d0, to, kLanes);
  }
  static Sums fzero() { return _mm512_setzero_ps(); }
  static Sums fold(Sums acc, Ints sums, const float *key_scales, float query_scale) {
    const __m512 scales = _mm512_mul_ps(_mm512_load_ps(key_scales), _mm512_set1_ps(query_scale));
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums), scales, acc);
  }
  static void store(float *to, Sums acc, float scale) {
    _mm512_storeu_ps(to, _mm512_mul_ps(acc, _mm512_set1_ps(scale)));
  }
};
#endif
#endif  // __AVX2__

#if defined(__aarch64__) && defined(__ARM_NEON)
// aarch64: 4 positions a chunk. A lane's int32 sum is kept as four, one per element of its quads
// (vmlal multiplies 16-bit halves into 32-bit sums), and folded at the block's end (two pairwise
// adds): four multiply-accumulates a quad and query, no shuffles. The query's words are arranged
// once so that a quad's two words are its elements in order (0 1 2 3), as the keys widen.
template <class Arch>
struct KeyLanes {
  static constexpr size_t kLanes = 4, kMaxRun = 4;
  static constexpr size_t kTransposeRows = 4, kTransposeBytes = 16;
  struct Ints {
    int32x4_t lane[4];  // lane l's sums of its quads' elements 0, 1, 2, 3
  };
  using Sums = float32x4_t;
  struct Keys {
    int16x8_t low, high;  // lanes 0 and 1, 2 and 3: four 16-bit elements each
  };
  static Keys load_keys(const uint32_t *p) {
    const int8x16_t quads = vreinterpretq_s8_u32(vld1q_u32(p));
    return {vmovl_s8(vget_low_s8(quads)), vmovl_high_s8(quads)};
  }
  static Ints zero() { return {{vdupq_n_s32(0), vdupq_n_s32(0), vdupq_n_s32(0), vdupq_n_s32(0)}}; }
  static Ints dot_add(Ints acc, const Keys &keys, const uint32_t *words) {
    const int16x8_t query = vreinterpretq_s16_u64(vld1q_dup_u64(reinterpret_cast<const uint64_t *>(words)));
    acc.lane[0] = vmlal_s16(acc.lane[0], vget_low_s16(keys.low), vget_low_s16(query));
    acc.lane[1] = vmlal_high_s16(acc.lane[1], keys.low, query);
    acc.lane[2] = vmlal_s16(acc.lane[2], vget_low_s16(keys.high), vget_low_s16(query));
    acc.lane[3] = vmlal_high_s16(acc.lane[3], keys.high, query);
    return acc;
  }
  // quantize_query_words' quad (elements 0 | 2 << 16, 1 | 3 << 16) to (0 | 1 << 16, 2 | 3 << 16).
  static void arrange_query_words(uint32_t *words, size_t n_words) {
    for (size_t w = 0; w + 1 < n_words; w += 2) {
      const uint32_t even = words[w], odd = words[w + 1];
      words[w] = (even & 0xffffu) | odd << 16;
      words[w + 1] = even >> 16 | (odd & 0xffff0000u);
    }
  }
  static Sums fzero() { return vdupq_n_f32(0.0f); }
  static Sums fold(Sums acc, const Ints &sums, const float *key_scales, float query_scale) {
    const int32x4_t lanes = vpaddq_s32(vpaddq_s32(sums.lane[0], sums.lane[1]), vpaddq_s32(sums.lane[2], sums.lane[3]));
    const float32x4_t scales = vmulq_n_f32(vld1q_f32(key_scales), query_scale);
    return vfmaq_f32(acc, vcvtq_f32_s32(lanes), scales);
  }
  static void store(float *to, Sums acc, float scale) { vst1q_f32(to, vmulq_n_f32(acc, scale)); }
  // Keys of 4 positions (rows[r] from byte d0, 16 of each) to quad j's 4 words at to[j * kLanes]:
  // a 4 x 4 transpose of 32-bit words.
  static void transpose_rows(const int8_t *const *rows, size_t d0, uint32_t *to) {
    uint32x4_t r[4];
    for (size_t i = 0; i < 4; ++i) r[i] = vreinterpretq_u32_s8(vld1q_s8(rows[i] + d0));
    const uint32x4_t t0 = vtrn1q_u32(r[0], r[1]), t1 = vtrn2q_u32(r[0], r[1]);
    const uint32x4_t t2 = vtrn1q_u32(r[2], r[3]), t3 = vtrn2q_u32(r[2], r[3]);
    const auto pairs = [](uint32x4_t a, uint32x4_t b, bool second) {
      const uint64x2_t x = vreinterpretq_u64_u32(a), y = vreinterpretq_u64_u32(b);
      return vreinterpretq_u32_u64(second ? vtrn2q_u64(x, y) : vtrn1q_u64(x, y));
    };
    vst1q_u32(to + 0 * kLanes, pairs(t0, t2, false));
    vst1q_u32(to + 1 * kLanes, pairs(t1, t3, false));
    vst1q_u32(to + 2 * kLanes, pairs(t0, t2, true));
    vst1q_u32(to + 3 * kLanes, pairs(t1, t3, true));
  }
};
#endif

#if defined(MOTE_Q8_INTEGER_SCORES)
// The keys of chunks [c0, c1) of positions from p0 (chunk c: positions p0 + c * kLanes + lane,
// each past `last` reading position last - 1's key instead: computed, then dropped), laid out
// for KeyLanes: word (c * n_quads + j) * kLanes + lane holds that position's quad j (zero past
// head_dim); scales (c * n_blocks + b) * kLanes + lane its block b's scale. Eight positions at a
// time, 32 elements of each: an 8 x 8 transpose of 32-bit words.
template <class Arch, class Scales>
inline void pack_key_quads(uint32_t *words, float *scales_out, const int8_t *k, const Scales &key_scales, size_t p0,
                           size_t c0, size_t c1, size_t last, size_t head_dim, size_t kv_stride) {
  using K = KeyLanes<Arch>;
  constexpr size_t L = K::kLanes, R = K::kTransposeRows;
  const size_t n_quads = (head_dim + 3) / 4, n_blocks = (head_dim + kQuantBlock - 1) / kQuantBlock;
  const size_t wide_end = head_dim - head_dim % K::kTransposeBytes;
  for (size_t c = c0; c < c1; ++c) {
    uint32_t *chunk = words + c * n_quads * L;
    for (size_t half = 0; half < L; half += R) {
      const int8_t *rows[R];
      for (size_t r = 0; r < R; ++r) {
        const size_t t = p0 + c * L + half + r < last ? p0 + c * L + half + r : last - 1;
        rows[r] = k + t * kv_stride;
        prefetch_row<Arch>(rows[r] + kPrefetchAhead * kv_stride, head_dim);
        for (size_t b = 0; b < n_blocks; ++b) {
          scales_out[(c * n_blocks + b) * L + half + r] = key_scales.at(t, b * kQuantBlock);
        }
      }
      for (size_t d0 = 0; d0 < wide_end; d0 += K::kTransposeBytes) {
        K::transpose_rows(rows, d0, chunk + d0 / 4 * L + half);
      }
      for (size_t j = wide_end / 4; j < n_quads; ++j) {  // past the last whole transpose
        for (size_t r = 0; r < R; ++r) {
          uint32_t quad = 0;
          for (size_t e = 0; e < 4 && 4 * j + e < head_dim; ++e) {
            quad |= uint32_t{static_cast<uint8_t>(rows[r][4 * j + e])} << (8 * e);
          }
          chunk[j * L + half + r] = quad;
        }
      }
    }
  }
}

// Scores of kRun queries (query_words[i], query_scales[i]) for positions [begin, end), into
// rows[i] (row i's element 0 is position begin), from the chunks pack_key_quads laid out from p0.
template <class Arch, size_t kRun>
inline void q8_scores_run(float *const *rows, const uint32_t *const *query_words, const float *const *query_scales,
                          const uint32_t *words, const float *key_scales, size_t p0, size_t begin, size_t end,
                          size_t head_dim, float scale) {
  using K = KeyLanes<Arch>;
  constexpr size_t L = K::kLanes, kQuadsPerBlock = kQuantBlock / 4;
  const size_t n_quads = (head_dim + 3) / 4, n_blocks = (head_dim + kQuantBlock - 1) / kQuantBlock;
  for (size_t c = (begin - p0) / L; p0 + c * L < end; ++c) {
    const uint32_t *chunk = words + c * n_quads * L;
    typename K::Sums acc[kRun];
    for (size_t i = 0; i < kRun; ++i) acc[i] = K::fzero();
    for (size_t b = 0; b < n_blocks; ++b) {
      typename K::Ints sums[kRun];
      for (size_t i = 0; i < kRun; ++i) sums[i] = K::zero();
      const size_t j_end = (b + 1) * kQuadsPerBlock < n_quads ? (b + 1) * kQuadsPerBlock : n_quads;
      for (size_t j = b * kQuadsPerBlock; j < j_end; ++j) {
        const typename K::Keys keys = K::load_keys(chunk + j * L);
        for (size_t i = 0; i < kRun; ++i) sums[i] = K::dot_add(sums[i], keys, query_words[i] + 2 * j);
      }
      for (size_t i = 0; i < kRun; ++i) {
        acc[i] = K::fold(acc[i], sums[i], key_scales + (c * n_blocks + b) * L, query_scales[i][b]);
      }
    }
    const size_t first = p0 + c * L;  // the chunk's first position
    for (size_t i = 0; i < kRun; ++i) {
      if (first >= begin && first + L <= end) {
        K::store(rows[i] + (first - begin), acc[i], scale);
      } else {  // a chunk across the run's ends: its lanes in [begin, end) only
        alignas(64) float lanes[L];
        K::store(lanes, acc[i], scale);
        for (size_t l = 0; l < L; ++l) {
          if (first + l >= begin && first + l < end) rows[i][first + l - begin] = lanes[l];
        }
      }
    }
  }
}

template <class Arch, size_t... kRuns>
inline void q8_scores_run_of(size_t run, std::index_sequence<kRuns...>, float *const *rows,
                             const uint32_t *const *query_words, const float *const *query_scales,
                             const uint32_t *words, const float *key_scales, size_t p0, size_t begin, size_t end,
                             size_t head_dim, float scale) {
  ((run == kRuns + 1 ? q8_scores_run<Arch, kRuns + 1>(rows, query_words, query_scales, words, key_scales, p0, begin,
                                                      end, head_dim, scale)
                     : void()),
   ...);
}

// Every query's scores over its positions [first, end), into its score row: the queries rounded
// once, then block by block (kAttentionBlock positions, or kLanes at a time for heads over 256
// wide) the keys any query reads laid out once, and each run of consecutive queries (up to
// kMaxRun) over the same part of the block (part(query, b0, &begin, &end)) scored from them.
// False, with nothing done, where the group's rounded queries would not fit the scratch: the
// caller splits the group.
template <class Arch, class Scales, class Part>
inline bool q8_integer_scores(const AttentionQuery *queries, size_t n_queries, const int8_t *k,
                              const Scales &key_scales, size_t head_dim, size_t kv_stride, float scale, size_t lo,
                              size_t hi, const Part &part) {
  using K = KeyLanes<Arch>;
  constexpr size_t L = K::kLanes;
  constexpr size_t kQueryWords = 4096, kQueryScales = 512, kKeyWords = 8192, kKeyScales = 1024;
  const size_t n_words = 2 * ((head_dim + 3) / 4), n_quads = n_words / 2;
  const size_t n_blocks = (head_dim + kQuantBlock - 1) / kQuantBlock;
  if (n_quads * L > kKeyWords || (n_queries == 1 && n_words > kQueryWords)) {
    // Wider than any model's head (over 2048): each score by the formula, one key at a time.
    for (const AttentionQuery *a = queries; a < queries + n_queries; ++a) {
      for (size_t t = a->first; t < a->end; ++t) {
        const auto key_scale = [&](size_t b) { return key_scales.at(t, b * kQuantBlock); };
        a->scores[t - a->first] = scale * q8_score<Arch>(a->q, k + t * kv_stride, key_scale, head_dim);
      }
    }
    return true;
  }
  if (n_queries * n_words > kQueryWords || n_queries * n_blocks > kQueryScales) return false;
  alignas(64) uint32_t query_words[kQueryWords];
  float query_scales[kQueryScales];
  for (size_t i = 0; i < n_queries; ++i) {
    quantize_query_words<Arch>(queries[i].q, head_dim, query_words + i * n_words, query_scales + i * n_blocks);
    K::arrange_query_words(query_words + i * n_words, n_words);
  }
  alignas(64) uint32_t key_words[kKeyWords];
  alignas(64) float key_block_scales[kKeyScales];
  // Positions laid out at once: a whole block where it fits (its scales then take 64 x n_blocks).
  const size_t span = n_quads * kAttentionBlock <= kKeyWords ? kAttentionBlock : L;
  // Query i's part of [s0, s0 + span) within the block from b0, maybe empty.
  const auto part_of_span = [&](size_t i, size_t b0, size_t s0, size_t *begin, size_t *end) {
    if (!part(queries[i], b0, begin, end)) return false;
    *begin = *begin > s0 ? *begin : s0;
    *end = *end < s0 + span ? *end : s0 + span;
    return *begin < *end;
  };
  size_t begin, end, next_begin, next_end;
  for (size_t b0 = lo; b0 < hi; b0 += kAttentionBlock) {
    for (size_t s0 = b0; s0 < b0 + kAttentionBlock && s0 < hi; s0 += span) {
      size_t first = s0 + span, last = s0;  // the positions of the span that any query reads
      for (size_t i = 0; i < n_queries; ++i) {
        if (!part_of_span(i, b0, s0, &begin, &end)) continue;
        first = begin < first ? begin : first;
        last = end > last ? end : last;
      }
      if (first >= last) continue;
      pack_key_quads<Arch>(key_words, key_block_scales, k, key_scales, s0, (first - s0) / L, (last - s0 + L - 1) / L,
                           last, head_dim, kv_stride);
      for (size_t i = 0; i < n_queries;) {
        if (!part_of_span(i, b0, s0, &begin, &end)) {
          ++i;
          continue;
        }
        size_t run = 1;
        while (run < K::kMaxRun && i + run < n_queries && part_of_span(i + run, b0, s0, &next_begin, &next_end) &&
               next_begin == begin && next_end == end) {
          ++run;
        }
        float *rows[K::kMaxRun];
        const uint32_t *words[K::kMaxRun];
        const float *scales[K::kMaxRun];
        for (size_t r = 0; r < run; ++r) {
          rows[r] = queries[i + r].scores + (begin - queries[i + r].first);
          words[r] = query_words + (i + r) * n_words;
          scales[r] = query_scales + (i + r) * n_blocks;
        }
        q8_scores_run_of<Arch>(run, std::make_index_sequence<K::kMaxRun>{}, rows, words, scales, key_words,
                               key_block_scales, s0, begin, end, head_dim, scale);
        i += run;
      }
    }
  }
  return true;
}
#endif  // MOTE_Q8_INTEGER_SCORES

}  // namespace mote::kernels::simd

// The 8-bit (q8_0) cache's attention scores in integers, on x86. Converting every key to floats
// costs an int8 cache more instructions than an f16 one (two a batch, and a scale), and a prompt's
// attention is compute-bound, so that made the smaller cache the slower one. Here each query is
// rounded to 16 bits per block of kQuantBlock (scale amax / 32767: an error under 2^-16 of the
// block's largest element, far below the keys' own 8 bits), and a key block's dot with it is an
// exact int32: vpmaddwd multiplies a pair of adjacent elements and adds the two products in each
// 32-bit lane. The keys of a block of positions are laid out once per group with one position per
// lane (pairs of elements down the lanes), so no lane needs summing across: a score is
//   scale * sum over blocks b, in order, fused: float(int sum_b) * (d_key_b * d_query_b)
// for every position, whatever the group, the batch or the table width (q8_score is that formula
// one position at a time; the vector lanes compute it alike, bit for bit).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/attention_query.hpp"
#include "kernels/quant.hpp"
#include "kernels/simd.hpp"

namespace mote::kernels::simd {

// Query i's elements rounded to 16 bits per block, two to a 32-bit word (element 2p in the low
// half of word p, 2p + 1 in the high half, zero past head_dim), and each block's scale.
template <class Arch>
inline void quantize_query_pairs(const float *q, size_t head_dim, uint32_t *pairs, float *scales) {
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
    for (size_t i = 0; i < n; i += 2) pairs[(b0 + i) / 2] = level(i) | level(i + 1) << 16;
  }
}

// One block's step of a score: acc + float(sum of the n elements' products) * (d_key * d_query),
// fused (pairs: the block's own words).
template <class Arch>
inline float q8_block_step(float acc, const uint32_t *pairs, float query_scale, const int8_t *k, float key_scale,
                           size_t n) {
  int32_t sum = 0;
  for (size_t c = 0; c < n; ++c) {
    const auto element = static_cast<int16_t>(static_cast<uint16_t>(pairs[c / 2] >> (c % 2 == 0 ? 0 : 16)));
    sum += int32_t{element} * k[c];
  }
  return __builtin_fmaf(static_cast<float>(sum), key_scale * query_scale, acc);
}

// One position's score before `scale`, one key at a time, straight from the float query (each
// block rounded as quantize_query_pairs rounds it): what every lane of the vector path computes,
// for heads too wide for its scratch. key_scale(b): the key's block b scale.
template <class Arch, class KeyScale>
inline float q8_score(const float *q, const int8_t *k, const KeyScale &key_scale, size_t head_dim) {
  float acc = 0.0f;
  for (size_t b0 = 0; b0 < head_dim; b0 += kQuantBlock) {
    const size_t n = head_dim - b0 < kQuantBlock ? head_dim - b0 : kQuantBlock;
    uint32_t pairs[kQuantBlock / 2];
    float query_scale;
    quantize_query_pairs<Arch>(q + b0, n, pairs, &query_scale);
    acc = q8_block_step<Arch>(acc, pairs, query_scale, k + b0, key_scale(b0 / kQuantBlock), n);
  }
  return acc;
}

#if defined(__AVX2__)
// The lanes of one chunk of positions: 8 in a ymm, 16 in a zmm on the AVX-512 table.
template <class Arch>
struct KeyLanes {
  static constexpr size_t kLanes = 8;
  using Ints = __m256i;
  using Sums = __m256;
  static Ints load(const uint32_t *p) { return _mm256_load_si256(reinterpret_cast<const __m256i *>(p)); }
  static Ints zero() { return _mm256_setzero_si256(); }
  static Ints pair_dot_add(Ints acc, Ints keys, uint32_t pair) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(keys, _mm256_set1_epi32(static_cast<int>(pair))));
  }
  static Sums fzero() { return _mm256_setzero_ps(); }
  static Sums fold(Sums acc, Ints sums, const float *key_scales, float query_scale) {
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums),
                           _mm256_mul_ps(_mm256_load_ps(key_scales), _mm256_set1_ps(query_scale)), acc);
  }
  static void store(float *to, Sums acc, float scale) {
    _mm256_storeu_ps(to, _mm256_mul_ps(acc, _mm256_set1_ps(scale)));
  }
};
#if XSIMD_WITH_AVX512BW
template <>
struct KeyLanes<xsimd::avx512bw> {
  static constexpr size_t kLanes = 16;
  using Ints = __m512i;
  using Sums = __m512;
  static Ints load(const uint32_t *p) { return _mm512_load_si512(p); }
  static Ints zero() { return _mm512_setzero_si512(); }
  static Ints pair_dot_add(Ints acc, Ints keys, uint32_t pair) {
    return _mm512_add_epi32(acc, _mm512_madd_epi16(keys, _mm512_set1_epi32(static_cast<int>(pair))));
  }
  static Sums fzero() { return _mm512_setzero_ps(); }
  static Sums fold(Sums acc, Ints sums, const float *key_scales, float query_scale) {
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums),
                           _mm512_mul_ps(_mm512_load_ps(key_scales), _mm512_set1_ps(query_scale)), acc);
  }
  static void store(float *to, Sums acc, float scale) {
    _mm512_storeu_ps(to, _mm512_mul_ps(acc, _mm512_set1_ps(scale)));
  }
};
#endif

// The keys of chunks [c0, c1) of positions from p0 (chunk c: positions p0 + c * kLanes + lane,
// each past `last` reading position last - 1's key instead: computed, then dropped), laid out
// for KeyLanes: word (c * n_pairs + p) * kLanes + lane holds that position's elements 2p, 2p + 1
// as int16; scales (c * n_blocks + b) * kLanes + lane its block b's scale. Eight positions at a
// time: 16 elements of each widened to 16 bits, then an 8 x 8 transpose of 32-bit words.
template <class Arch, class Scales>
inline void pack_key_pairs(uint32_t *words, float *scales_out, const int8_t *k, const Scales &key_scales, size_t p0,
                           size_t c0, size_t c1, size_t last, size_t head_dim, size_t kv_stride) {
  constexpr size_t L = KeyLanes<Arch>::kLanes;
  const size_t n_pairs = (head_dim + 1) / 2, n_blocks = (head_dim + kQuantBlock - 1) / kQuantBlock;
  const size_t wide_end = head_dim - head_dim % 16;
  for (size_t c = c0; c < c1; ++c) {
    uint32_t *chunk = words + c * n_pairs * L;
    for (size_t half = 0; half < L; half += 8) {
      const int8_t *rows[8];
      for (size_t r = 0; r < 8; ++r) {
        const size_t t = p0 + c * L + half + r < last ? p0 + c * L + half + r : last - 1;
        rows[r] = k + t * kv_stride;
        for (size_t b = 0; b < n_blocks; ++b)
          scales_out[(c * n_blocks + b) * L + half + r] = key_scales.at(t, b * kQuantBlock);
      }
      for (size_t d0 = 0; d0 < wide_end; d0 += 16) {
        __m256i w[8], t[8];
        for (size_t r = 0; r < 8; ++r) {
          w[r] = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i *>(rows[r] + d0)));
        }
        // Row r's pair j (8 words a row) to word r of register j: within 128-bit lanes, then across.
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
          uint32_t *to = chunk + (d0 / 2 + j) * L + half;
          _mm256_storeu_si256(reinterpret_cast<__m256i *>(to), _mm256_permute2x128_si256(w[j], w[j + 4], 0x20));
          _mm256_storeu_si256(reinterpret_cast<__m256i *>(to + 4 * L), _mm256_permute2x128_si256(w[j], w[j + 4], 0x31));
        }
      }
      for (size_t p = wide_end / 2; p < n_pairs; ++p) {  // a head_dim that is not whole 16s
        for (size_t r = 0; r < 8; ++r) {
          const auto element = [&](size_t i) -> uint32_t {
            return i < head_dim ? static_cast<uint16_t>(int16_t{rows[r][i]}) : 0u;
          };
          chunk[p * L + half + r] = element(2 * p) | element(2 * p + 1) << 16;
        }
      }
    }
  }
}

// Scores of kRun queries (pairs[i], query_scales[i]) for positions [begin, end), into rows[i]
// (row i's element 0 is position begin), from the chunks pack_key_pairs laid out from p0.
template <class Arch, size_t kRun>
inline void q8_scores_run(float *const *rows, const uint32_t *const *pairs, const float *const *query_scales,
                          const uint32_t *words, const float *key_scales, size_t p0, size_t begin, size_t end,
                          size_t head_dim, float scale) {
  using K = KeyLanes<Arch>;
  constexpr size_t L = K::kLanes;
  const size_t n_pairs = (head_dim + 1) / 2, n_blocks = (head_dim + kQuantBlock - 1) / kQuantBlock;
  constexpr size_t kPairsPerBlock = kQuantBlock / 2;
  for (size_t c = (begin - p0) / L; p0 + c * L < end; ++c) {
    const uint32_t *chunk = words + c * n_pairs * L;
    typename K::Sums acc[kRun];
    for (size_t i = 0; i < kRun; ++i) acc[i] = K::fzero();
    for (size_t b = 0; b < n_blocks; ++b) {
      typename K::Ints sums[kRun];
      for (size_t i = 0; i < kRun; ++i) sums[i] = K::zero();
      const size_t p_end = (b + 1) * kPairsPerBlock < n_pairs ? (b + 1) * kPairsPerBlock : n_pairs;
      for (size_t p = b * kPairsPerBlock; p < p_end; ++p) {
        const typename K::Ints keys = K::load(chunk + p * L);
        for (size_t i = 0; i < kRun; ++i) sums[i] = K::pair_dot_add(sums[i], keys, pairs[i][p]);
      }
      for (size_t i = 0; i < kRun; ++i)
        acc[i] = K::fold(acc[i], sums[i], key_scales + (c * n_blocks + b) * L, query_scales[i][b]);
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
// Every query's scores over its positions [first, end), into its score row: the queries rounded
// once, then block by block (kAttentionBlock positions, or kLanes at a time for heads over 256
// wide) the keys any query reads laid out once, and runs of up to 4 queries over the same part
// of the block (for_each_run(b0, f): f(i, run, begin, end)) scored from them. False, with
// nothing done, where the group's rounded queries would not fit the scratch: the caller splits it.
template <class Arch, class Scales, class Part, class ForEachRun>
inline bool q8_integer_scores(const AttentionQuery *queries, size_t n_queries, const int8_t *k,
                              const Scales &key_scales, size_t head_dim, size_t kv_stride, float scale, size_t lo,
                              size_t hi, const Part &part, const ForEachRun &for_each_run) {
  constexpr size_t L = KeyLanes<Arch>::kLanes;
  constexpr size_t kQueryWords = 4096, kQueryScales = 512, kKeyWords = 8192, kKeyScales = 1024;
  const size_t n_pairs = (head_dim + 1) / 2, n_blocks = (head_dim + kQuantBlock - 1) / kQuantBlock;
  if (n_pairs * L > kKeyWords || (n_queries == 1 && n_pairs > kQueryWords)) {
    // Wider than any model's head (over 1024): each score by the formula, one key at a time.
    for (const AttentionQuery *a = queries; a < queries + n_queries; ++a) {
      for (size_t t = a->first; t < a->end; ++t) {
        const auto key_scale = [&](size_t b) { return key_scales.at(t, b * kQuantBlock); };
        a->scores[t - a->first] = scale * q8_score<Arch>(a->q, k + t * kv_stride, key_scale, head_dim);
      }
    }
    return true;
  }
  if (n_queries * n_pairs > kQueryWords || n_queries * n_blocks > kQueryScales) return false;
  alignas(64) uint32_t query_pairs[kQueryWords];
  float query_scales[kQueryScales];
  for (size_t i = 0; i < n_queries; ++i) {
    quantize_query_pairs<Arch>(queries[i].q, head_dim, query_pairs + i * n_pairs, query_scales + i * n_blocks);
  }
  alignas(64) uint32_t key_words[kKeyWords];
  alignas(64) float key_block_scales[kKeyScales];
  // Positions laid out at once: a whole block where it fits (the scales then need 64 x n_blocks).
  const size_t span = n_pairs * kAttentionBlock <= kKeyWords ? kAttentionBlock : L;
  size_t begin, end;
  for (size_t b0 = lo; b0 < hi; b0 += kAttentionBlock) {
    for (size_t s0 = b0; s0 < b0 + kAttentionBlock && s0 < hi; s0 += span) {
      // The positions of [s0, s0 + span) that any query reads.
      size_t first = s0 + span, last = s0;
      for (size_t i = 0; i < n_queries; ++i) {
        if (!part(queries[i], b0, &begin, &end)) continue;
        begin = begin > s0 ? begin : s0;
        end = end < s0 + span ? end : s0 + span;
        if (begin >= end) continue;
        first = begin < first ? begin : first;
        last = end > last ? end : last;
      }
      if (first >= last) continue;
      pack_key_pairs<Arch>(key_words, key_block_scales, k, key_scales, s0, (first - s0) / L, (last - s0 + L - 1) / L,
                           last, head_dim, kv_stride);
      for_each_run(b0, [&](size_t i, size_t run, size_t run_begin, size_t run_end) {
        run_begin = run_begin > s0 ? run_begin : s0;
        run_end = run_end < s0 + span ? run_end : s0 + span;
        if (run_begin >= run_end) return;
        float *rows[4];
        const uint32_t *pairs[4];
        const float *scales[4];
        for (size_t r = 0; r < run; ++r) {
          rows[r] = queries[i + r].scores + (run_begin - queries[i + r].first);
          pairs[r] = query_pairs + (i + r) * n_pairs;
          scales[r] = query_scales + (i + r) * n_blocks;
        }
        const auto go = [&](auto kRun) {
          q8_scores_run<Arch, decltype(kRun)::value>(rows, pairs, scales, key_words, key_block_scales, s0, run_begin,
                                                     run_end, head_dim, scale);
        };
        if (run == 4) go(std::integral_constant<size_t, 4>{});
        if (run == 3) go(std::integral_constant<size_t, 3>{});
        if (run == 2) go(std::integral_constant<size_t, 2>{});
        if (run == 1) go(std::integral_constant<size_t, 1>{});
      });
    }
  }
  return true;
}
#endif  // __AVX2__

}  // namespace mote::kernels::simd

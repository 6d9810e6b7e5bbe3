// Single-head attention over xsimd batches: scores by the same row dot products as matvec,
// softmax, then the value rows added up weighted by their probabilities; one body for f32, f16 and
// int8 (q8_0) elements, the last with a scale per position and block of 32.
#pragma once

#include "kernels/attention_query.hpp"
#include "kernels/matvec.hpp"
#include "kernels/quant.hpp"
#include "kernels/simd.hpp"
#include "kernels/softmax.hpp"

namespace mote::kernels::simd {

// The keys' and values' scales: none for f32 and f16 elements (scale 1 over one block as long as
// any head, which leaves every product exact), one per position and block of kQuantBlock for int8.
// from(p): the scales of the positions from p on.
struct Unscaled {
  static constexpr bool kScaled = false;
  static constexpr size_t kBlock = size_t{1} << 30;  // longer than any head (fits a 32-bit size_t)
  float operator()(size_t, size_t) const { return 1.0f; }
  Unscaled from(size_t) const { return *this; }
};
struct BlockScales {
  static constexpr bool kScaled = true;
  static constexpr size_t kBlock = kQuantBlock;
  const float *scales;
  size_t stride;  // between positions
  float operator()(size_t t, size_t block) const { return scales[t * stride + block]; }
  BlockScales from(size_t p) const { return {scales + p * stride, stride}; }
};

// An int8 cache's rows of a head are a cache line or less, a few lines apart: the hardware
// prefetchers left them to be fetched on demand (decode at depth 4096 ran at half the f16 cache's
// speed), so the scaled loops fetch kPrefetchAhead positions ahead. (f16 rows gain nothing.)
constexpr size_t kPrefetchAhead = 16;

// scores[t] = scale * dot(k_t, q) for t < n_pos (with k_t's block scales applied), one batch width
// W of keys at a time: their W partial-sum batches go through one transposing reduction (sum_rows:
// a few instructions a key, where a horizontal sum per key dominated 64-wide heads). Scaled keys
// scale each block's partial sums by a broadcast of its scale before that one reduction. A short
// last group repeats its last key in the unused slots (computed, then dropped), so every key takes
// the same path. A block is a whole number of batches; the columns past the last whole batch are
// added one by one.
template <class Arch, class Element, class Scales>
inline void attention_scores(float *scores, const float *q, const Element *k, const Scales &key_scales, size_t n_pos,
                             size_t head_dim, size_t kv_stride, float scale) {
  using Batch = Floats<Arch>;
  constexpr size_t W = Batch::size, kBlock = Scales::kBlock;
  static_assert(kBlock % W == 0, "a block is a whole number of batches");
  const size_t simd_end = head_dim - head_dim % W;
  for (size_t t0 = 0; t0 < n_pos; t0 += W) {
    const size_t n = n_pos - t0 < W ? n_pos - t0 : W;
    const size_t last = t0 + n - 1;
    const Element *rows[W];
#pragma GCC unroll 16
    for (size_t j = 0; j < W; ++j) rows[j] = k + (t0 + j < last ? t0 + j : last) * kv_stride;
    Batch total[W];
    if (Scales::kScaled) {
      // Key by key (the out-of-order core overlaps their chains): W accumulators next to W
      // totals would not fit avx2's 16 registers.
#pragma GCC unroll 16
      for (size_t j = 0; j < W; ++j) {
        const size_t t = t0 + j < last ? t0 + j : last;
        __builtin_prefetch(rows[j] + kPrefetchAhead * kv_stride);
        total[j] = Batch(0.0f);
        for (size_t begin = 0; begin < simd_end; begin += kBlock) {
          const size_t end = simd_end - begin < kBlock ? simd_end : begin + kBlock;
          Batch acc(0.0f);
          for (size_t c = begin; c < end; c += W) {
            acc = xsimd::fma(load_floats<Arch>(rows[j] + c), Batch::load_unaligned(q + c), acc);
          }
          total[j] = xsimd::fma(acc, Batch(key_scales(t, begin / kBlock)), total[j]);
        }
      }
    } else {
#pragma GCC unroll 16
      for (size_t j = 0; j < W; ++j) total[j] = Batch(0.0f);
      for (size_t c = 0; c < simd_end; c += W) {
        const Batch qc = Batch::load_unaligned(q + c);
#pragma GCC unroll 16
        for (size_t j = 0; j < W; ++j) total[j] = xsimd::fma(load_floats<Arch>(rows[j] + c), qc, total[j]);
      }
    }
    float sums[W];
    sum_rows<Arch>(total, sums);
    for (size_t j = 0; j < n; ++j) {
      float dot = sums[j];
      for (size_t c = simd_end; c < head_dim; ++c) {
        dot = __builtin_fmaf(to_float<Arch>(rows[j][c]) * key_scales(t0 + j, c / kBlock), q[c], dot);
      }
      scores[t0 + j] = scale * dot;
    }
  }
}

// out = sum_t p_t v_t (each v_t's block scales applied), element by element in position order
// (fused steps), with up to kPanel batches of out held in registers across all positions (an axpy
// per position stored and reloaded out each time: a store-to-load chain per position); one
// broadcast weight per position and block. accumulate: out already holds the sum over earlier
// positions, and the steps go on from it (the same steps as one call over all the positions).
template <class Arch, class Element, class Scales>
inline void attention_values(float *out, const float *p, const Element *v, const Scales &value_scales, size_t n_pos,
                             size_t head_dim, size_t kv_stride, bool accumulate = false) {
  using Batch = Floats<Arch>;
  constexpr size_t W = Batch::size, kPanel = 8, kBlock = Scales::kBlock;
  static_assert(kBlock % W == 0 && (kBlock >= kPanel * W || (kPanel * W) % kBlock == 0), "panels hold whole blocks");
  const size_t simd_end = head_dim - head_dim % W;
  for (size_t c0 = 0; c0 < simd_end; c0 += kPanel * W) {
    const size_t n_batches = (simd_end - c0) / W < kPanel ? (simd_end - c0) / W : kPanel;
    Batch acc[kPanel];
#pragma GCC unroll 8
    for (size_t b = 0; b < kPanel; ++b) {
      acc[b] = accumulate && b < n_batches ? Batch::load_unaligned(out + c0 + b * W) : Batch(0.0f);
    }
    for (size_t t = 0; t < n_pos; ++t) {
      const Element *row = v + t * kv_stride + c0;
      if (Scales::kScaled) __builtin_prefetch(row + kPrefetchAhead * kv_stride);
      Batch weight(p[t]);
#pragma GCC unroll 8
      for (size_t b = 0; b < kPanel; ++b) {
        if (Scales::kScaled && (b * W) % kBlock == 0 && b < n_batches) {
          weight = Batch(p[t] * value_scales(t, (c0 + b * W) / kBlock));
        }
        if (b < n_batches) acc[b] = xsimd::fma(weight, load_floats<Arch>(row + b * W), acc[b]);
      }
    }
#pragma GCC unroll 8
    for (size_t b = 0; b < kPanel; ++b) {
      if (b < n_batches) acc[b].store_unaligned(out + c0 + b * W);
    }
  }
  for (size_t c = simd_end; c < head_dim; ++c) {
    float sum = accumulate ? out[c] : 0.0f;
    for (size_t t = 0; t < n_pos; ++t) {
      sum = __builtin_fmaf(p[t] * value_scales(t, c / Scales::kBlock), to_float<Arch>(v[t * kv_stride + c]), sum);
    }
    out[c] = sum;
  }
}

template <class Arch, class Element, class Scales>
inline void attention(float *out, float *scores, const float *q, const Element *k, const Scales &key_scales,
                      const Element *v, const Scales &value_scales, size_t n_pos, size_t head_dim, size_t kv_stride,
                      float scale) {
  attention_scores<Arch>(scores, q, k, key_scales, n_pos, head_dim, kv_stride, scale);
  softmax<Arch>(scores, n_pos);
  attention_values<Arch>(out, scores, v, value_scales, n_pos, head_dim, kv_stride);
}

// attention_scores for kQueries queries over the same positions: each key's batches are loaded
// (and converted) once for all of them, kKeys keys at a time so that every (query, key) partial
// sum stays in a register. Each score is attention_scores' to the bit: the same steps per lane,
// and reduce_rows sums a key's partials alike beside any others.
template <class Arch, size_t kQueries, class Element, class Scales>
inline void attention_scores_shared(float *const *scores, const float *const *q, const Element *k,
                                    const Scales &key_scales, size_t n_pos, size_t head_dim, size_t kv_stride,
                                    float scale) {
  using Batch = Floats<Arch>;
  constexpr size_t W = Batch::size, kBlock = Scales::kBlock;
  // Half the vector registers (16, or 32 with AVX-512's 16-wide batches) hold partial sums (a
  // scaled cache keeps a block's and the total's).
  constexpr size_t kSums = (W == 16 ? 32 : 16) / 2 / (Scales::kScaled ? 2 : 1);
  constexpr size_t kKeys = kSums / kQueries > 0 ? kSums / kQueries : 1;
  const size_t simd_end = head_dim - head_dim % W;
  for (size_t t0 = 0; t0 < n_pos; t0 += kKeys) {
    const size_t n = n_pos - t0 < kKeys ? n_pos - t0 : kKeys;
    const size_t last = t0 + n - 1;
    const Element *rows[kKeys];
    for (size_t j = 0; j < kKeys; ++j) rows[j] = k + (t0 + j < last ? t0 + j : last) * kv_stride;
    Batch total[kQueries][kKeys];
    for (size_t i = 0; i < kQueries; ++i) {
      for (size_t j = 0; j < kKeys; ++j) total[i][j] = Batch(0.0f);
    }
    for (size_t begin = 0; begin < simd_end; begin += kBlock) {
      const size_t end = simd_end - begin < kBlock ? simd_end : begin + kBlock;
      Batch block[kQueries][kKeys];
      Batch(&sums)[kQueries][kKeys] = Scales::kScaled ? block : total;
      if (Scales::kScaled) {
        for (size_t i = 0; i < kQueries; ++i) {
          for (size_t j = 0; j < kKeys; ++j) block[i][j] = Batch(0.0f);
        }
      }
      for (size_t c = begin; c < end; c += W) {
        Batch qc[kQueries];
        for (size_t i = 0; i < kQueries; ++i) qc[i] = Batch::load_unaligned(q[i] + c);
        for (size_t j = 0; j < kKeys; ++j) {
          if (Scales::kScaled) __builtin_prefetch(rows[j] + kPrefetchAhead * kv_stride);
          const Batch kc = load_floats<Arch>(rows[j] + c);
          for (size_t i = 0; i < kQueries; ++i) sums[i][j] = xsimd::fma(kc, qc[i], sums[i][j]);
        }
      }
      if (Scales::kScaled) {
        for (size_t j = 0; j < kKeys; ++j) {
          const Batch key_scale(key_scales(t0 + j < last ? t0 + j : last, begin / kBlock));
          for (size_t i = 0; i < kQueries; ++i) total[i][j] = xsimd::fma(block[i][j], key_scale, total[i][j]);
        }
      }
    }
    for (size_t i = 0; i < kQueries; ++i) {
      float dots[kKeys];
      reduce_rows<Arch>(total[i], kKeys, dots);
      for (size_t j = 0; j < n; ++j) {
        float dot = dots[j];
        for (size_t c = simd_end; c < head_dim; ++c) {
          dot = __builtin_fmaf(to_float<Arch>(rows[j][c]) * key_scales(t0 + j, c / kBlock), q[i][c], dot);
        }
        scores[i][t0 + j] = scale * dot;
      }
    }
  }
}

// Positions a group reads per block: a block's keys of a 64-wide f16 head are 8 KB, read from
// memory once and from L1 by every other query of the group.
constexpr size_t kAttentionBlock = 64;

// Every query of a group over its positions [first, end), block by block: scores of a block for
// every query, then each query's softmax, then the values block by block. Each key's score and
// each value step are the single-query kernel's (attention_scores and attention_values compute
// every position alone, in position order), so each query's result is attention()'s to the bit.
template <class Arch, class Element, class Scales>
inline void attention_group(const AttentionQuery *queries, size_t n_queries, const Element *k, const Scales &key_scales,
                            const Element *v, const Scales &value_scales, size_t head_dim, size_t kv_stride,
                            float scale) {
  size_t lo = queries[0].first, hi = queries[0].end;
  for (size_t i = 1; i < n_queries; ++i) {
    lo = queries[i].first < lo ? queries[i].first : lo;
    hi = queries[i].end > hi ? queries[i].end : hi;
  }
  // Each query's part of the block [b0, b0 + kAttentionBlock): [begin, end), maybe empty.
  const auto part = [](const AttentionQuery &a, size_t b0, size_t *begin, size_t *end) {
    *begin = b0 > a.first ? b0 : a.first;
    *end = b0 + kAttentionBlock < a.end ? b0 + kAttentionBlock : a.end;
    return *begin < *end;
  };
  size_t begin, end;
  for (size_t b0 = lo; b0 < hi; b0 += kAttentionBlock) {
    // Runs of up to 4 consecutive queries over the same part of the block share its key loads.
    for (size_t i = 0; i < n_queries;) {
      const AttentionQuery &a = queries[i];
      if (!part(a, b0, &begin, &end)) {
        ++i;
        continue;
      }
      size_t run = 1, run_begin, run_end;
      while (run < 4 && i + run < n_queries && part(queries[i + run], b0, &run_begin, &run_end) && run_begin == begin &&
             run_end == end) {
        ++run;
      }
      float *rows[4];
      const float *qs[4];
      for (size_t r = 0; r < run; ++r) {
        rows[r] = queries[i + r].scores + (begin - queries[i + r].first);
        qs[r] = queries[i + r].q;
      }
      const Element *keys = k + begin * kv_stride;
      const Scales block_scales = key_scales.from(begin);
      const size_t n = end - begin;
      if (run == 4) attention_scores_shared<Arch, 4>(rows, qs, keys, block_scales, n, head_dim, kv_stride, scale);
      if (run == 3) attention_scores_shared<Arch, 3>(rows, qs, keys, block_scales, n, head_dim, kv_stride, scale);
      if (run == 2) attention_scores_shared<Arch, 2>(rows, qs, keys, block_scales, n, head_dim, kv_stride, scale);
      if (run == 1) attention_scores<Arch>(rows[0], qs[0], keys, block_scales, n, head_dim, kv_stride, scale);
      i += run;
    }
  }
  for (const AttentionQuery *a = queries; a < queries + n_queries; ++a) softmax<Arch>(a->scores, a->end - a->first);
  for (size_t b0 = lo; b0 < hi; b0 += kAttentionBlock) {
    for (const AttentionQuery *a = queries; a < queries + n_queries; ++a) {
      if (!part(*a, b0, &begin, &end)) continue;
      attention_values<Arch>(a->out, a->scores + (begin - a->first), v + begin * kv_stride, value_scales.from(begin),
                             end - begin, head_dim, kv_stride, begin > a->first);
    }
  }
}

template <class Arch>
void attention_group_f32(const AttentionQuery *queries, size_t n_queries, const float *k, const float *v,
                         size_t head_dim, size_t kv_stride, float scale) {
  attention_group<Arch>(queries, n_queries, k, Unscaled{}, v, Unscaled{}, head_dim, kv_stride, scale);
}

template <class Arch>
void attention_group_f16(const AttentionQuery *queries, size_t n_queries, const uint16_t *k, const uint16_t *v,
                         size_t head_dim, size_t kv_stride, float scale) {
  attention_group<Arch>(queries, n_queries, k, Unscaled{}, v, Unscaled{}, head_dim, kv_stride, scale);
}

template <class Arch>
void attention_group_q8(const AttentionQuery *queries, size_t n_queries, const int8_t *k, const float *k_scale,
                        const int8_t *v, const float *v_scale, size_t head_dim, size_t kv_stride, size_t scale_stride,
                        float scale) {
  attention_group<Arch>(queries, n_queries, k, BlockScales{k_scale, scale_stride}, v,
                        BlockScales{v_scale, scale_stride}, head_dim, kv_stride, scale);
}

// attention_q8: each block of 32 (or fewer, at a head's end) keys and values carries a scale.
template <class Arch>
void attention_q8(float *out, float *scores, const float *q, const int8_t *k, const float *k_scale, const int8_t *v,
                  const float *v_scale, size_t n_pos, size_t head_dim, size_t kv_stride, size_t scale_stride,
                  float scale) {
  attention<Arch>(out, scores, q, k, BlockScales{k_scale, scale_stride}, v, BlockScales{v_scale, scale_stride}, n_pos,
                  head_dim, kv_stride, scale);
}

template <class Arch>
void attention_f32(float *out, float *scores, const float *q, const float *k, const float *v, size_t n_pos,
                   size_t head_dim, size_t kv_stride, float scale) {
  attention<Arch>(out, scores, q, k, Unscaled{}, v, Unscaled{}, n_pos, head_dim, kv_stride, scale);
}

template <class Arch>
void attention_f16(float *out, float *scores, const float *q, const uint16_t *k, const uint16_t *v, size_t n_pos,
                   size_t head_dim, size_t kv_stride, float scale) {
  attention<Arch>(out, scores, q, k, Unscaled{}, v, Unscaled{}, n_pos, head_dim, kv_stride, scale);
}

}  // namespace mote::kernels::simd

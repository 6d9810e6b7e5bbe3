// Single-head attention over xsimd batches: scores by the same row dot products as matvec,
// softmax, then the value rows added up weighted by their probabilities; one body for f32, f16 and
// int8 (q8_0) elements, the last with a scale per position and block of 32 (its scores in integer
// products on x86 and aarch64: attention_q8_keys.hpp).
#pragma once

#include <type_traits>

#include "kernels/attention_q8_keys.hpp"
#include "kernels/attention_query.hpp"
#include "kernels/matvec.hpp"
#include "kernels/quant.hpp"
#include "kernels/simd.hpp"
#include "kernels/softmax.hpp"

namespace mote::kernels::simd {

// The keys' and values' scales: none for f32 and f16 elements (at() is 1 and never applied), one
// per position and block of kQuantBlock for int8. A key's elements are scaled as they are
// converted (one multiply per loaded batch, shared by a group's queries; then the f16 cache's
// products), a value's scale goes into its probability (p * scale made once per position and
// block for each query; then the f16 cache's loop). from(p): the scales of the positions from p on.
struct Unscaled {
  static constexpr bool kScaled = false;
  static constexpr size_t kBlock = size_t{1} << 30;  // longer than any head (fits a 32-bit size_t)
  float at(size_t, size_t) const { return 1.0f; }
  Unscaled from(size_t) const { return *this; }
};
struct BlockScales {
  static constexpr bool kScaled = true;
  static constexpr size_t kBlock = kQuantBlock;
  const float *scales;
  size_t stride;  // between positions
  float at(size_t t, size_t c) const { return scales[t * stride + c / kQuantBlock]; }
  BlockScales from(size_t p) const { return {scales + p * stride, stride}; }
};

// A key's or value's element c at position t as a float, its scale applied.
template <class Arch, class Element, class Scales>
inline float scaled_element(const Element *row, const Scales &scales, size_t t, size_t c) {
  return Scales::kScaled ? to_float<Arch>(row[c]) * scales.at(t, c) : to_float<Arch>(row[c]);
}

// scores[t] = scale * dot(k_t, q) for t < n_pos (k_t's elements scaled as loaded), one batch
// width W of keys at a time: their W partial-sum batches go through one transposing reduction
// (sum_rows: a few instructions a key, where a horizontal sum per key dominated 64-wide heads).
// A short last group repeats its last key in the unused slots (computed, then dropped), so every
// key takes the same path. The columns past the last whole batch are added one by one.
template <class Arch, class Element, class Scales, class HeadDim>
inline void attention_scores(float *scores, const float *q, const Element *k, const Scales &key_scales, size_t n_pos,
                             HeadDim head_dim, size_t kv_stride, float scale) {
  using Batch = Floats<Arch>;
  constexpr size_t W = Batch::size;
  const size_t simd_end = head_dim - head_dim % W;
  for (size_t t0 = 0; t0 < n_pos; t0 += W) {
    const size_t n = n_pos - t0 < W ? n_pos - t0 : W;
    const size_t last = t0 + n - 1;
    const Element *rows[W];
    size_t ts[W];
#pragma GCC unroll 16
    for (size_t j = 0; j < W; ++j) {
      ts[j] = t0 + j < last ? t0 + j : last;
      rows[j] = k + ts[j] * kv_stride;
      prefetch_row<Arch>(rows[j] + kPrefetchAhead * kv_stride, head_dim);
    }
    Batch total[W];
#pragma GCC unroll 16
    for (size_t j = 0; j < W; ++j) total[j] = Batch(0.0f);
    for (size_t begin = 0; begin < simd_end; begin += Scales::kBlock) {
      const size_t end = simd_end - begin < Scales::kBlock ? simd_end : begin + Scales::kBlock;
      for (size_t c = begin; c < end; c += W) {
        const Batch qc = Batch::load_unaligned(q + c);
#pragma GCC unroll 16
        for (size_t j = 0; j < W; ++j) {
          Batch kc = load_floats<Arch>(rows[j] + c);
          if constexpr (Scales::kScaled) kc = kc * Batch(key_scales.at(ts[j], begin));
          total[j] = xsimd::fma(kc, qc, total[j]);
        }
      }
    }
    float sums[W];
    sum_rows<Arch>(total, sums);
    for (size_t j = 0; j < n; ++j) {
      float dot = sums[j];
      for (size_t c = simd_end; c < head_dim; ++c) {
        dot = __builtin_fmaf(scaled_element<Arch>(rows[j], key_scales, t0 + j, c), q[c], dot);
      }
      scores[t0 + j] = scale * dot;
    }
  }
}

// out[i] = sum_t p[i][t] v_t for kQueries queries over the same n_pos <= kAttentionBlock
// positions, element by element in position order (fused steps), with a panel of out's batches
// for every query held in registers across the positions (an axpy per position stored and
// reloaded out each time: a store-to-load chain per position). Each value batch is loaded and
// converted once for all the queries. A scaled cache's steps weigh v_t by p[i][t] * scale(t, block),
// those weights made first, a batch of positions at a time (the scales copied out of their
// stride once for all the queries), so the loop over positions is the f16 cache's.
// accumulate[i]: out[i] already holds the sum over earlier positions, and the steps go on from it
// (the same steps as one call over all the positions). Each lane's steps are the same whatever
// kQueries and the panel width, so a query's result is the same alone or in a group.
template <class Arch, size_t kQueries, class Element, class Scales, class HeadDim>
inline void attention_values_block(float *const *out, const float *const *p, const Element *v,
                                   const Scales &value_scales, size_t n_pos, HeadDim head_dim, size_t kv_stride,
                                   const bool *accumulate) {
  using Batch = Floats<Arch>;
  constexpr size_t W = Batch::size;
  // Half the vector registers (16, or 32 with AVX-512's 16-wide batches) hold the sums; a panel
  // is a power of two batches, so it covers whole blocks or lies inside one.
  constexpr size_t kBudget = (W == 16 ? 32 : 16) / 2 / kQueries;
  constexpr size_t kPanel = kBudget >= 8 ? 8 : kBudget >= 4 ? 4 : kBudget >= 2 ? 2 : 1;
  constexpr size_t kPanelBlocks = kPanel * W >= kQuantBlock ? kPanel * W / kQuantBlock : 1;
  static_assert(kQuantBlock % W == 0 && (kPanel * W) % kQuantBlock % W == 0, "panels hold whole blocks or lie in one");
  // The scaled cache's weights of a slab of the head's columns: [query][block][position].
  constexpr size_t kSlabBlocks = 8, kSlab = kSlabBlocks * kQuantBlock;
  static_assert(kSlab % (kPanel * W) == 0, "a slab is whole panels");
  alignas(64) float weights[Scales::kScaled ? kQueries : 1][Scales::kScaled ? kSlabBlocks : 1]
                           [Scales::kScaled ? kAttentionBlock : 1];
  const size_t simd_end = head_dim - head_dim % W;
  for (size_t c0 = 0; c0 < simd_end; c0 += kPanel * W) {
    const size_t n_batches = (simd_end - c0) / W < kPanel ? (simd_end - c0) / W : kPanel;
    if constexpr (Scales::kScaled) {
      for (size_t blk = 0; c0 % kSlab == 0 && blk < kSlabBlocks && c0 + blk * kQuantBlock < simd_end; ++blk) {
        alignas(64) float scales[kAttentionBlock];
        for (size_t t = 0; t < n_pos; ++t) scales[t] = value_scales.at(t, c0 + blk * kQuantBlock);
        for (size_t i = 0; i < kQueries; ++i) {
          size_t t = 0;
          for (; t + W <= n_pos; t += W) {
            (Batch::load_unaligned(p[i] + t) * Batch::load_aligned(scales + t)).store_aligned(&weights[i][blk][t]);
          }
          for (; t < n_pos; ++t) weights[i][blk][t] = p[i][t] * scales[t];
        }
      }
    }
    const size_t first_block = c0 % kSlab / kQuantBlock;  // the panel's first block in the slab
    Batch acc[kQueries][kPanel];
#pragma GCC unroll 8
    for (size_t i = 0; i < kQueries; ++i) {
#pragma GCC unroll 8
      for (size_t b = 0; b < kPanel; ++b) {
        acc[i][b] = accumulate[i] && b < n_batches ? Batch::load_unaligned(out[i] + c0 + b * W) : Batch(0.0f);
      }
    }
    for (size_t t = 0; t < n_pos; ++t) {
      const Element *row = v + t * kv_stride + c0;
      prefetch_row<Arch>(row + kPrefetchAhead * kv_stride, n_batches * W);
      Batch weight[kQueries][kPanelBlocks];
#pragma GCC unroll 8
      for (size_t i = 0; i < kQueries; ++i) {
#pragma GCC unroll 8
        for (size_t blk = 0; blk < kPanelBlocks; ++blk) {
          if constexpr (Scales::kScaled) {
            const bool used = blk * kQuantBlock < n_batches * W;  // a short last panel's blocks
            weight[i][blk] = used ? Batch(weights[i][first_block + blk][t]) : Batch(0.0f);
          } else {
            weight[i][blk] = Batch(p[i][t]);
          }
        }
      }
#pragma GCC unroll 8
      for (size_t b = 0; b < kPanel; ++b) {
        if (b < n_batches) {
          const Batch value = load_floats<Arch>(row + b * W);
          constexpr size_t kBatchesPerBlock = kQuantBlock / W;
#pragma GCC unroll 8
          for (size_t i = 0; i < kQueries; ++i) {
            const size_t blk = kPanelBlocks > 1 ? b / kBatchesPerBlock : 0;
            acc[i][b] = xsimd::fma(weight[i][blk], value, acc[i][b]);
          }
        }
      }
    }
#pragma GCC unroll 8
    for (size_t i = 0; i < kQueries; ++i) {
#pragma GCC unroll 8
      for (size_t b = 0; b < kPanel; ++b) {
        if (b < n_batches) acc[i][b].store_unaligned(out[i] + c0 + b * W);
      }
    }
  }
  for (size_t i = 0; i < kQueries; ++i) {
    for (size_t c = simd_end; c < head_dim; ++c) {
      float sum = accumulate[i] ? out[i][c] : 0.0f;
      for (size_t t = 0; t < n_pos; ++t) {
        float weight = p[i][t];
        if constexpr (Scales::kScaled) weight *= value_scales.at(t, c);
        sum = __builtin_fmaf(weight, to_float<Arch>(v[t * kv_stride + c]), sum);
      }
      out[i][c] = sum;
    }
  }
}

template <class Arch, class Element, class Scales>
inline void attention(float *out, float *scores, const float *q, const Element *k, const Scales &key_scales,
                      const Element *v, const Scales &value_scales, size_t n_pos, size_t head_dim, size_t kv_stride,
                      float scale) {
  attention_scores<Arch>(scores, q, k, key_scales, n_pos, head_dim, kv_stride, scale);
  softmax<Arch>(scores, n_pos);
  for (size_t begin = 0; begin < n_pos; begin += kAttentionBlock) {
    const size_t n = n_pos - begin < kAttentionBlock ? n_pos - begin : kAttentionBlock;
    const bool accumulate = begin > 0;
    const float *p = scores + begin;
    attention_values_block<Arch, 1>(&out, &p, v + begin * kv_stride, value_scales.from(begin), n, head_dim, kv_stride,
                                    &accumulate);
  }
}

// attention_scores for kQueries queries over the same positions: each key's batches are loaded
// (and converted) once for all of them, kKeys keys at a time so that every (query, key) partial
// sum stays in a register. Each score is attention_scores' to the bit: the same steps per lane,
// and reduce_rows sums a key's partials alike beside any others.
template <class Arch, size_t kQueries, class Element, class Scales, class HeadDim>
inline void attention_scores_shared(float *const *scores, const float *const *q, const Element *k,
                                    const Scales &key_scales, size_t n_pos, HeadDim head_dim, size_t kv_stride,
                                    float scale) {
  using Batch = Floats<Arch>;
  constexpr size_t W = Batch::size;
  // Half the vector registers (16, or 32 with AVX-512's 16-wide batches) hold partial sums.
  constexpr size_t kSums = (W == 16 ? 32 : 16) / 2;
  constexpr size_t kKeys = kSums / kQueries > 0 ? kSums / kQueries : 1;
  const size_t simd_end = head_dim - head_dim % W;
  for (size_t t0 = 0; t0 < n_pos; t0 += kKeys) {
    const size_t n = n_pos - t0 < kKeys ? n_pos - t0 : kKeys;
    const size_t last = t0 + n - 1;
    const Element *rows[kKeys];
    size_t ts[kKeys];
    for (size_t j = 0; j < kKeys; ++j) {
      ts[j] = t0 + j < last ? t0 + j : last;
      rows[j] = k + ts[j] * kv_stride;
      prefetch_row<Arch>(rows[j] + kPrefetchAhead * kv_stride, head_dim);
    }
    Batch sums[kQueries][kKeys];
    for (size_t i = 0; i < kQueries; ++i) {
      for (size_t j = 0; j < kKeys; ++j) sums[i][j] = Batch(0.0f);
    }
    for (size_t begin = 0; begin < simd_end; begin += Scales::kBlock) {
      const size_t end = simd_end - begin < Scales::kBlock ? simd_end : begin + Scales::kBlock;
      Batch key_scale[kKeys];
      for (size_t j = 0; j < kKeys; ++j) key_scale[j] = Batch(key_scales.at(ts[j], begin));
      for (size_t c = begin; c < end; c += W) {
        Batch qc[kQueries];
        for (size_t i = 0; i < kQueries; ++i) qc[i] = Batch::load_unaligned(q[i] + c);
        for (size_t j = 0; j < kKeys; ++j) {
          Batch kc = load_floats<Arch>(rows[j] + c);
          if constexpr (Scales::kScaled) kc = kc * key_scale[j];
          for (size_t i = 0; i < kQueries; ++i) sums[i][j] = xsimd::fma(kc, qc[i], sums[i][j]);
        }
      }
    }
    for (size_t i = 0; i < kQueries; ++i) {
      float dots[kKeys];
      reduce_rows<Arch>(sums[i], kKeys, dots);
      for (size_t j = 0; j < n; ++j) {
        float dot = dots[j];
        for (size_t c = simd_end; c < head_dim; ++c) {
          dot = __builtin_fmaf(scaled_element<Arch>(rows[j], key_scales, t0 + j, c), q[i][c], dot);
        }
        scores[i][t0 + j] = scale * dot;
      }
    }
  }
}

// Calls f(std::integral_constant<size_t, run>) for 1 <= run <= N: a run's length as a template
// argument, so each length gets its own register tiles.
template <size_t N, class F>
inline void with_run(size_t run, const F &f) {
  if (run == N) {
    f(std::integral_constant<size_t, N>{});
  } else if constexpr (N > 1) {
    with_run<N - 1>(run, f);
  }
}

// The most queries that share one pass over a block's values: an 8-bit value costs two
// conversions and a scale (worth sharing with up to 8 queries), an f16 value one conversion (past
// 4 queries, the narrower panels' extra probability broadcasts cost more than the conversions
// saved). bench_attention, avx512_vnni, 128-wide heads x 6 queries at depth 4096 on AMD Zen 5:
// q8_0 100-104 -> 94 us with runs of 6, f16 122 -> 129.5 us.
template <class Scales>
constexpr size_t kMaxValueRun = Scales::kScaled ? 8 : 4;

// Every query of a group over its positions [first, end), block by block: scores of a block for
// every query, then each query's softmax, then the values block by block. Each key's score and
// each value step are the single-query kernel's (the score kernels and attention_values_block
// compute every position alone, in position order; attention() takes its values in the same
// blocks of positions), so each query's result is attention()'s to the bit. An 8-bit cache's
// scores on x86 and aarch64 are integer products (attention_q8_keys.hpp), the same for a group of
// one.
template <class Arch, class Element, class Scales, class HeadDim>
inline void attention_group_at(const AttentionQuery *queries, size_t n_queries, const Element *k,
                               const Scales &key_scales, const Element *v, const Scales &value_scales, HeadDim head_dim,
                               size_t kv_stride, float scale) {
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
  // Queries i, i + 1, ... (at most 4) whose part of the block is queries[i]'s [begin, end): how
  // many share it, so a run shares its key or value loads.
  const auto run_at = [&](size_t i, size_t b0, size_t begin, size_t end, size_t max_run) {
    size_t run = 1, run_begin, run_end;
    while (run < max_run && i + run < n_queries && part(queries[i + run], b0, &run_begin, &run_end) &&
           run_begin == begin && run_end == end) {
      ++run;
    }
    return run;
  };
  const auto score_run = [&](size_t run, float *const *rows, const float *const *qs, size_t begin, size_t end) {
    const Element *keys = k + begin * kv_stride;
    const Scales scales = key_scales.from(begin);
    const size_t n = end - begin;
    if (run == 4) attention_scores_shared<Arch, 4>(rows, qs, keys, scales, n, head_dim, kv_stride, scale);
    if (run == 3) attention_scores_shared<Arch, 3>(rows, qs, keys, scales, n, head_dim, kv_stride, scale);
    if (run == 2) attention_scores_shared<Arch, 2>(rows, qs, keys, scales, n, head_dim, kv_stride, scale);
    if (run == 1) attention_scores<Arch>(rows[0], qs[0], keys, scales, n, head_dim, kv_stride, scale);
  };
  // Runs of up to 4 consecutive queries over the same part of the block [b0, b0 + kAttentionBlock)
  // share its key or value loads: for_each_run(b0, f) calls f(i, run, begin, end) for each.
  const auto for_each_run = [&](size_t b0, size_t max_run, const auto &f) {
    size_t begin, end;
    for (size_t i = 0; i < n_queries;) {
      if (!part(queries[i], b0, &begin, &end)) {
        ++i;
        continue;
      }
      const size_t run = run_at(i, b0, begin, end, max_run);
      f(i, run, begin, end);
      i += run;
    }
  };
#if defined(MOTE_Q8_INTEGER_SCORES)
  if constexpr (Scales::kScaled) {
    if (!q8_integer_scores<Arch>(queries, n_queries, k, key_scales, head_dim, kv_stride, scale, lo, hi, part)) {
      // More queries than the quantized queries' scratch holds: the group in two (each query's
      // result is its own, whatever the group).
      const size_t half = n_queries / 2;
      attention_group_at<Arch>(queries, half, k, key_scales, v, value_scales, head_dim, kv_stride, scale);
      attention_group_at<Arch>(queries + half, n_queries - half, k, key_scales, v, value_scales, head_dim, kv_stride,
                               scale);
      return;
    }
  } else
#endif
  {
    for (size_t b0 = lo; b0 < hi; b0 += kAttentionBlock) {
      for_each_run(b0, 4, [&](size_t i, size_t run, size_t begin, size_t end) {
        float *rows[4];
        const float *qs[4];
        for (size_t r = 0; r < run; ++r) {
          rows[r] = queries[i + r].scores + (begin - queries[i + r].first);
          qs[r] = queries[i + r].q;
        }
        score_run(run, rows, qs, begin, end);
      });
    }
  }
  for (const AttentionQuery *a = queries; a < queries + n_queries; ++a) softmax<Arch>(a->scores, a->end - a->first);
  const auto value_run = [&](size_t run, float *const *outs, const float *const *ps, const Element *values,
                             const Scales &scales, size_t n, const bool *accumulate) {
    with_run<kMaxValueRun<Scales>>(run, [&](auto queries_in_run) {
      attention_values_block<Arch, decltype(queries_in_run)::value>(outs, ps, values, scales, n, head_dim, kv_stride,
                                                                    accumulate);
    });
  };
  for (size_t b0 = lo; b0 < hi; b0 += kAttentionBlock) {
    for_each_run(b0, kMaxValueRun<Scales>, [&](size_t i, size_t run, size_t begin, size_t end) {
      float *outs[kMaxValueRun<Scales>];
      const float *ps[kMaxValueRun<Scales>];
      bool accumulate[kMaxValueRun<Scales>];
      for (size_t r = 0; r < run; ++r) {
        const AttentionQuery &a = queries[i + r];
        outs[r] = a.out;
        ps[r] = a.scores + (begin - a.first);
        accumulate[r] = begin > a.first;
      }
      value_run(run, outs, ps, v + begin * kv_stride, value_scales.from(begin), end - begin, accumulate);
    });
  }
}

// The common head widths as compile-time constants (every column loop unrolled, the row
// pointers' offsets immediate), any other at run time: the same steps either way.
template <class Arch, class Element, class Scales>
inline void attention_group(const AttentionQuery *queries, size_t n_queries, const Element *k, const Scales &key_scales,
                            const Element *v, const Scales &value_scales, size_t head_dim, size_t kv_stride,
                            float scale) {
  if (head_dim == 64) {
    attention_group_at<Arch>(queries, n_queries, k, key_scales, v, value_scales, std::integral_constant<size_t, 64>{},
                             kv_stride, scale);
  } else if (head_dim == 128) {
    attention_group_at<Arch>(queries, n_queries, k, key_scales, v, value_scales, std::integral_constant<size_t, 128>{},
                             kv_stride, scale);
  } else {
    attention_group_at<Arch>(queries, n_queries, k, key_scales, v, value_scales, head_dim, kv_stride, scale);
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

// attention_q8: each block of 32 (or fewer, at a head's end) keys and values carries a scale. A
// group of one query, so that it is every group's kernel (the integer scores on x86 and aarch64).
template <class Arch>
void attention_q8(float *out, float *scores, const float *q, const int8_t *k, const float *k_scale, const int8_t *v,
                  const float *v_scale, size_t n_pos, size_t head_dim, size_t kv_stride, size_t scale_stride,
                  float scale) {
  const AttentionQuery query{q, out, scores, 0, n_pos};
  attention_group_q8<Arch>(&query, 1, k, k_scale, v, v_scale, head_dim, kv_stride, scale_stride, scale);
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

// Single-head attention over xsimd batches: scores by the same row dot products as matvec,
// softmax, then the value rows added up weighted by their probabilities.
#pragma once

#include "kernels/matvec.hpp"
#include "kernels/quant.hpp"
#include "kernels/simd.hpp"
#include "kernels/softmax.hpp"

namespace mote::kernels::simd {

// out += a * v over n elements (v in f32, f16 or int8).
template <class Arch, class Element>
inline void axpy(float *out, float a, const Element *v, size_t n) {
  using Batch = Floats<Arch>;
  constexpr size_t width = Batch::size;
  const size_t simd_end = n - n % width;
  const Batch a_batch(a);
  for (size_t i = 0; i < simd_end; i += width) {
    xsimd::fma(a_batch, load_floats<Arch>(v + i), Batch::load_unaligned(out + i)).store_unaligned(out + i);
  }
  for (size_t i = simd_end; i < n; ++i) out[i] += a * to_float<Arch>(v[i]);
}

// scores[t] = scale * dot(k_t, q) for t < n_pos, one batch width W of keys at a time: their W
// partial-sum batches go through one transposing reduction (sum_rows: a few instructions a key,
// where a horizontal sum per key dominated 64-wide heads). A short last group repeats its last key in
// the unused slots (computed, then dropped), so every key takes the same path.
template <class Arch, class Element>
inline void attention_scores(float *scores, const float *q, const Element *k, size_t n_pos, size_t head_dim,
                             size_t kv_stride, float scale) {
  using Batch = Floats<Arch>;
  constexpr size_t W = Batch::size;
  const size_t simd_end = head_dim - head_dim % W;
  for (size_t t0 = 0; t0 < n_pos; t0 += W) {
    const size_t n = n_pos - t0 < W ? n_pos - t0 : W;
    const Element *rows[W];
#pragma GCC unroll 16
    for (size_t j = 0; j < W; ++j) rows[j] = k + (t0 + (j < n ? j : n - 1)) * kv_stride;
    Batch acc[W];
#pragma GCC unroll 16
    for (size_t j = 0; j < W; ++j) acc[j] = Batch(0.0f);
    for (size_t c = 0; c < simd_end; c += W) {
      const Batch qc = Batch::load_unaligned(q + c);
#pragma GCC unroll 16
      for (size_t j = 0; j < W; ++j) acc[j] = xsimd::fma(load_floats<Arch>(rows[j] + c), qc, acc[j]);
    }
    float sums[W];
    sum_rows<Arch>(acc, sums);
    for (size_t j = 0; j < n; ++j) {
      float dot = sums[j];
      for (size_t c = simd_end; c < head_dim; ++c) dot = __builtin_fmaf(to_float<Arch>(rows[j][c]), q[c], dot);
      scores[t0 + j] = scale * dot;
    }
  }
}

// out = sum_t p_t v_t, element by element in position order (fused steps), with up to kPanel
// batches of out held in registers across all positions (an axpy per position stored and
// reloaded out each time: a store-to-load chain per position).
template <class Arch, class Element>
inline void attention_values(float *out, const float *p, const Element *v, size_t n_pos, size_t head_dim,
                             size_t kv_stride) {
  using Batch = Floats<Arch>;
  constexpr size_t W = Batch::size, kPanel = 8;
  const size_t simd_end = head_dim - head_dim % W;
  for (size_t c0 = 0; c0 < simd_end; c0 += kPanel * W) {
    const size_t n_batches = (simd_end - c0) / W < kPanel ? (simd_end - c0) / W : kPanel;
    Batch acc[kPanel];
#pragma GCC unroll 8
    for (size_t b = 0; b < kPanel; ++b) acc[b] = Batch(0.0f);
    for (size_t t = 0; t < n_pos; ++t) {
      const Batch weight(p[t]);
      const Element *row = v + t * kv_stride + c0;
#pragma GCC unroll 8
      for (size_t b = 0; b < kPanel; ++b) {
        if (b < n_batches) acc[b] = xsimd::fma(weight, load_floats<Arch>(row + b * W), acc[b]);
      }
    }
#pragma GCC unroll 8
    for (size_t b = 0; b < kPanel; ++b) {
      if (b < n_batches) acc[b].store_unaligned(out + c0 + b * W);
    }
  }
  for (size_t c = simd_end; c < head_dim; ++c) {
    float sum = 0.0f;
    for (size_t t = 0; t < n_pos; ++t) sum = __builtin_fmaf(p[t], to_float<Arch>(v[t * kv_stride + c]), sum);
    out[c] = sum;
  }
}

template <class Arch, class Element>
inline void attention(float *out, float *scores, const float *q, const Element *k, const Element *v, size_t n_pos,
                      size_t head_dim, size_t kv_stride, float scale) {
  attention_scores<Arch>(scores, q, k, n_pos, head_dim, kv_stride, scale);
  softmax<Arch>(scores, n_pos);
  attention_values<Arch>(out, scores, v, n_pos, head_dim, kv_stride);
}

// attention_q8: each block of 32 (or fewer, at a head's end) keys and values carries a scale.
template <class Arch>
void attention_q8(float *out, float *scores, const float *q, const int8_t *k, const float *k_scale, const int8_t *v,
                  const float *v_scale, size_t n_pos, size_t head_dim, size_t kv_stride, size_t scale_stride,
                  float scale) {
  const size_t n_blocks = (head_dim + kQuantBlock - 1) / kQuantBlock;
  for (size_t t = 0; t < n_pos; ++t) {
    float dot = 0.0f;
    for (size_t b = 0; b < n_blocks; ++b) {
      const size_t begin = b * kQuantBlock, n = head_dim - begin < kQuantBlock ? head_dim - begin : kQuantBlock;
      dot += k_scale[t * scale_stride + b] * dot_row<Arch>(k + t * kv_stride + begin, q + begin, n);
    }
    scores[t] = scale * dot;
  }
  softmax<Arch>(scores, n_pos);
  for (size_t d = 0; d < head_dim; ++d) out[d] = 0.0f;
  for (size_t t = 0; t < n_pos; ++t) {
    for (size_t b = 0; b < n_blocks; ++b) {
      const size_t begin = b * kQuantBlock, n = head_dim - begin < kQuantBlock ? head_dim - begin : kQuantBlock;
      axpy<Arch>(out + begin, scores[t] * v_scale[t * scale_stride + b], v + t * kv_stride + begin, n);
    }
  }
}

template <class Arch>
void attention_f32(float *out, float *scores, const float *q, const float *k, const float *v, size_t n_pos,
                   size_t head_dim, size_t kv_stride, float scale) {
  attention<Arch>(out, scores, q, k, v, n_pos, head_dim, kv_stride, scale);
}

template <class Arch>
void attention_f16(float *out, float *scores, const float *q, const uint16_t *k, const uint16_t *v, size_t n_pos,
                   size_t head_dim, size_t kv_stride, float scale) {
  attention<Arch>(out, scores, q, k, v, n_pos, head_dim, kv_stride, scale);
}

}  // namespace mote::kernels::simd

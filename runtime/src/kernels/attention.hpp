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

template <class Arch, class Element>
inline void attention(float *out, float *scores, const float *q, const Element *k, const Element *v, size_t n_pos,
                      size_t head_dim, size_t kv_stride, float scale) {
  dot_rows<Arch>(scores, k, kv_stride, q, n_pos, head_dim);
  for (size_t t = 0; t < n_pos; ++t) scores[t] *= scale;
  softmax<Arch>(scores, n_pos);
  for (size_t d = 0; d < head_dim; ++d) out[d] = 0.0f;
  for (size_t t = 0; t < n_pos; ++t) axpy<Arch>(out, scores[t], v + t * kv_stride, head_dim);
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

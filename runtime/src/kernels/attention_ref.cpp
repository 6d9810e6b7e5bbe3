// Scalar single-head attention: scaled dot-product scores, softmax, weighted sum of values.
#include "core/fp16.hpp"
#include "kernels/ref.hpp"

namespace mote::kernels::ref {
namespace {

inline float to_float(float value) { return value; }
inline float to_float(uint16_t half) { return fp16_to_f32(half); }

template <class Element>
void attention(float *out, float *scores, const float *q, const Element *k, const Element *v, size_t n_pos,
               size_t head_dim, size_t kv_stride, float scale) {
  for (size_t t = 0; t < n_pos; ++t) {
    const Element *key = k + t * kv_stride;
    float dot = 0.0f;
    for (size_t d = 0; d < head_dim; ++d) dot += q[d] * to_float(key[d]);
    scores[t] = scale * dot;
  }
  softmax(scores, n_pos);
  for (size_t d = 0; d < head_dim; ++d) out[d] = 0.0f;
  for (size_t t = 0; t < n_pos; ++t) {
    const Element *value = v + t * kv_stride;
    for (size_t d = 0; d < head_dim; ++d) out[d] += scores[t] * to_float(value[d]);
  }
}

template <class Element>
void attention_group(const AttentionQuery *queries, size_t n_queries, const Element *k, const Element *v,
                     size_t head_dim, size_t kv_stride, float scale) {
  for (const AttentionQuery *a = queries; a < queries + n_queries; ++a) {
    attention(a->out, a->scores, a->q, k + a->first * kv_stride, v + a->first * kv_stride, a->end - a->first, head_dim,
              kv_stride, scale);
  }
}

}  // namespace

void attention_q8(float *out, float *scores, const float *q, const int8_t *k, const float *k_scale, const int8_t *v,
                  const float *v_scale, size_t n_pos, size_t head_dim, size_t kv_stride, size_t scale_stride,
                  float scale) {
  // Each key element times its block's scale as it is read, then as the f32 cache's product; each
  // value weighed by its probability times its block's scale.
  for (size_t t = 0; t < n_pos; ++t) {
    float dot = 0.0f;
    for (size_t d = 0; d < head_dim; ++d) {
      dot += q[d] * (k_scale[t * scale_stride + d / kQuantBlock] * static_cast<float>(k[t * kv_stride + d]));
    }
    scores[t] = scale * dot;
  }
  softmax(scores, n_pos);
  for (size_t d = 0; d < head_dim; ++d) out[d] = 0.0f;
  for (size_t t = 0; t < n_pos; ++t) {
    for (size_t d = 0; d < head_dim; ++d) {
      out[d] += scores[t] * v_scale[t * scale_stride + d / kQuantBlock] * static_cast<float>(v[t * kv_stride + d]);
    }
  }
}

void attention_f32(float *out, float *scores, const float *q, const float *k, const float *v, size_t n_pos,
                   size_t head_dim, size_t kv_stride, float scale) {
  attention(out, scores, q, k, v, n_pos, head_dim, kv_stride, scale);
}

void attention_f16(float *out, float *scores, const float *q, const uint16_t *k, const uint16_t *v, size_t n_pos,
                   size_t head_dim, size_t kv_stride, float scale) {
  attention(out, scores, q, k, v, n_pos, head_dim, kv_stride, scale);
}

// The groups: each query alone, over its own positions.
void attention_group_f32(const AttentionQuery *queries, size_t n_queries, const float *k, const float *v,
                         size_t head_dim, size_t kv_stride, float scale) {
  attention_group(queries, n_queries, k, v, head_dim, kv_stride, scale);
}

void attention_group_f16(const AttentionQuery *queries, size_t n_queries, const uint16_t *k, const uint16_t *v,
                         size_t head_dim, size_t kv_stride, float scale) {
  attention_group(queries, n_queries, k, v, head_dim, kv_stride, scale);
}

void attention_group_q8(const AttentionQuery *queries, size_t n_queries, const int8_t *k, const float *k_scale,
                        const int8_t *v, const float *v_scale, size_t head_dim, size_t kv_stride, size_t scale_stride,
                        float scale) {
  for (const AttentionQuery *a = queries; a < queries + n_queries; ++a) {
    attention_q8(a->out, a->scores, a->q, k + a->first * kv_stride, k_scale + a->first * scale_stride,
                 v + a->first * kv_stride, v_scale + a->first * scale_stride, a->end - a->first, head_dim, kv_stride,
                 scale_stride, scale);
  }
}

}  // namespace mote::kernels::ref

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

}  // namespace

void attention_f32(float *out, float *scores, const float *q, const float *k, const float *v, size_t n_pos,
                   size_t head_dim, size_t kv_stride, float scale) {
  attention(out, scores, q, k, v, n_pos, head_dim, kv_stride, scale);
}

void attention_f16(float *out, float *scores, const float *q, const uint16_t *k, const uint16_t *v, size_t n_pos,
                   size_t head_dim, size_t kv_stride, float scale) {
  attention(out, scores, q, k, v, n_pos, head_dim, kv_stride, scale);
}

}  // namespace mote::kernels::ref

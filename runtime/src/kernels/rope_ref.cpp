// Scalar rotary position embedding: each pair (a, b) of a head turns by the pair's angle,
// (a, b) -> (a cos - b sin, a sin + b cos). The two layouts differ only in which elements pair up.
#include "kernels/ref.hpp"

namespace mote::kernels::ref {

void rope_interleaved(float *x, const float *cos, const float *sin, size_t n_heads, size_t head_dim) {
  for (size_t h = 0; h < n_heads; ++h) {
    float *head = x + h * head_dim;
    for (size_t i = 0; i < head_dim / 2; ++i) {
      const float a = head[2 * i];
      const float b = head[2 * i + 1];
      head[2 * i] = a * cos[i] - b * sin[i];
      head[2 * i + 1] = a * sin[i] + b * cos[i];
    }
  }
}

void rope_split_half(float *x, const float *cos, const float *sin, size_t n_heads, size_t head_dim) {
  const size_t half = head_dim / 2;
  for (size_t h = 0; h < n_heads; ++h) {
    float *head = x + h * head_dim;
    for (size_t i = 0; i < half; ++i) {
      const float a = head[i];
      const float b = head[i + half];
      head[i] = a * cos[i] - b * sin[i];
      head[i + half] = a * sin[i] + b * cos[i];
    }
  }
}

}  // namespace mote::kernels::ref

// Scalar RMS and layer normalization.
#include <cmath>

#include "kernels/ref.hpp"

namespace mote::kernels::ref {

void rmsnorm(float *out, const float *x, const float *weight, size_t n, float eps) {
  float sum_of_squares = 0.0f;
  for (size_t i = 0; i < n; ++i) sum_of_squares += x[i] * x[i];
  const float scale = 1.0f / std::sqrt(sum_of_squares / static_cast<float>(n) + eps);
  for (size_t i = 0; i < n; ++i) out[i] = x[i] * scale * weight[i];
}

void layernorm(float *out, const float *x, const float *weight, const float *bias, size_t n, float eps) {
  float sum = 0.0f;
  for (size_t i = 0; i < n; ++i) sum += x[i];
  const float mean = sum / static_cast<float>(n);
  float sum_of_squares = 0.0f;
  for (size_t i = 0; i < n; ++i) sum_of_squares += (x[i] - mean) * (x[i] - mean);
  const float scale = 1.0f / std::sqrt(sum_of_squares / static_cast<float>(n) + eps);
  for (size_t i = 0; i < n; ++i) out[i] = (x[i] - mean) * scale * weight[i] + (bias != nullptr ? bias[i] : 0.0f);
}

}  // namespace mote::kernels::ref

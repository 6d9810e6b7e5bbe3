// Scalar element-wise kernels: the FFN activations and the residual add.
#include <cmath>

#include "kernels/ref.hpp"

namespace mote::kernels::ref {

void swiglu(float *gate, const float *up, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const float silu = gate[i] / (1.0f + std::exp(-gate[i]));
    gate[i] = silu * up[i];
  }
}

void gelu_tanh(float *x, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const float v = x[i];
    x[i] = 0.5f * v * (1.0f + std::tanh(0.7978845608028654f * (v + 0.044715f * v * v * v)));
  }
}

void geglu(float *gate, const float *up, size_t n) {
  gelu_tanh(gate, n);
  for (size_t i = 0; i < n; ++i) gate[i] *= up[i];
}

void gelu_erf(float *x, size_t n) {
  for (size_t i = 0; i < n; ++i) x[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * 0.7071067811865476f));
}

void relu(float *x, size_t n) {
  for (size_t i = 0; i < n; ++i) x[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void add(float *y, const float *x, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] += x[i];
}

}  // namespace mote::kernels::ref

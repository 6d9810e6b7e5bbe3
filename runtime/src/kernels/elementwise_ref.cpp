// Scalar element-wise kernels: the SwiGLU gate and the residual add.
#include <cmath>

#include "kernels/ref.hpp"

namespace mote::kernels::ref {

void swiglu(float *gate, const float *up, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const float silu = gate[i] / (1.0f + std::exp(-gate[i]));
    gate[i] = silu * up[i];
  }
}

void add(float *y, const float *x, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] += x[i];
}

}  // namespace mote::kernels::ref

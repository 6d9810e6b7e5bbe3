// Scalar softmax, shifted by the maximum so exp never overflows.
#include <cmath>

#include "kernels/ref.hpp"

namespace mote::kernels::ref {

void softmax(float *x, size_t n) {
  float max = x[0];
  for (size_t i = 1; i < n; ++i) max = x[i] > max ? x[i] : max;
  float sum = 0.0f;
  for (size_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - max);
    sum += x[i];
  }
  for (size_t i = 0; i < n; ++i) x[i] /= sum;
}

}  // namespace mote::kernels::ref

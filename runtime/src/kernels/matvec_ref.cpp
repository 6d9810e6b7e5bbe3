// Scalar matrix-vector products: one row at a time, columns summed left to right in float.
// The batched products are defined as one matvec per token, so they match it bit for bit.
#include "core/fp16.hpp"
#include "kernels/ref.hpp"

namespace mote::kernels::ref {

void matvec_f32(float *out, const float *w, const float *x, size_t rows, size_t cols) {
  for (size_t r = 0; r < rows; ++r) {
    const float *row = w + r * cols;
    float sum = 0.0f;
    for (size_t c = 0; c < cols; ++c) sum += row[c] * x[c];
    out[r] = sum;
  }
}

void matvec_f16(float *out, const uint16_t *w, const float *x, size_t rows, size_t cols) {
  for (size_t r = 0; r < rows; ++r) {
    const uint16_t *row = w + r * cols;
    float sum = 0.0f;
    for (size_t c = 0; c < cols; ++c) sum += fp16_to_f32(row[c]) * x[c];
    out[r] = sum;
  }
}

void matmul_f32(float *out, size_t out_stride, const float *w, const float *x, size_t rows, size_t cols,
                size_t n_tokens) {
  for (size_t t = 0; t < n_tokens; ++t) {
    matvec_f32(out + t * out_stride, w, x + t * cols, rows, cols);
  }
}

void matmul_f16(float *out, size_t out_stride, const uint16_t *w, const float *x, size_t rows, size_t cols,
                size_t n_tokens) {
  for (size_t t = 0; t < n_tokens; ++t) {
    matvec_f16(out + t * out_stride, w, x + t * cols, rows, cols);
  }
}

}  // namespace mote::kernels::ref

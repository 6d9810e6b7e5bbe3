// The CUDA backend's kernels, as host functions that launch them on a stream: every pointer is
// device memory, every launch returns its cudaError_t. Each kernel mirrors a CPU scalar twin
// (kernels/*_ref.cpp) with one clear mapping of threads to outputs; tests/cuda checks them
// against those twins.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace mote::cuda {

// A matrix in device memory, laid out exactly as in the model file: (rows, cols) row-major in
// its dtype's blocks (format::DType: f32, f16, q8_0, q4_0, q4_1 and their x8 interleavings).
struct DeviceMatrix {
  const void *data;
  uint32_t dtype;
  uint32_t rows, cols;
  uint64_t row_bytes;  // the plain type's bytes per row (x8 groups hold 8 such rows)
};

// Whether these kernels read a weight dtype.
bool dtype_supported(uint32_t dtype);

// Element (row, col) of a matrix in host memory, read by the kernels' own accessor for its
// dtype (so tests check the block formats without a GPU).
float host_element(const DeviceMatrix &m, uint32_t row, uint32_t col);

// x[t] = row tokens[t] of m as floats, t < n_tokens.
cudaError_t embed(cudaStream_t stream, float *x, const DeviceMatrix &m, const int32_t *tokens, uint32_t n_tokens);

// out[t * w.rows + r] = row r of w . x[t] (x token-major, w.cols wide), t < n_tokens: one warp
// per (row, token), f32 accumulation.
cudaError_t matmul(cudaStream_t stream, float *out, const DeviceMatrix &w, const float *x, uint32_t n_tokens);

// out[t] = x[t] * w / sqrt(mean(x[t]^2) + eps), rows of dim; out may alias x.
cudaError_t rmsnorm(cudaStream_t stream, float *out, const float *x, const float *weight, uint32_t dim, float eps,
                    uint32_t n_tokens);

// Rotates token t's q and k heads by position *pos + t (angles in double from inv_freq, as the
// CPU computes them); split_half pairs x[i] with x[i + head_dim / 2], else x[2i] with x[2i + 1].
cudaError_t rope(cudaStream_t stream, float *q, float *k, const double *inv_freq, const int32_t *pos, uint32_t n_heads,
                 uint32_t n_kv_heads, uint32_t head_dim, bool split_half, uint32_t n_tokens);

// cache[(*pos + t) * kv_dim + i] = src[t * kv_dim + i] as f32 or f16 (round to nearest even).
cudaError_t store_kv(cudaStream_t stream, void *cache, bool f16, const float *src, const int32_t *pos, uint32_t kv_dim,
                     uint32_t n_tokens);

struct AttentionArgs {
  float *out;          // (n_tokens, n_heads * head_dim)
  const float *q;      // (n_tokens, n_heads * head_dim)
  const void *keys;    // (context, n_kv_heads * head_dim) this layer's cache, f32 or f16
  const void *values;  // same
  bool f16;
  float *scores;       // (n_tokens, n_heads, context) scratch
  float *partial;      // (n_tokens, n_heads, n_splits, head_dim + 2) scratch: max, sum, unnormalized out
  const int32_t *pos;  // position of token 0
  uint32_t n_tokens, n_heads, n_kv_heads, head_dim, context;
  uint32_t n_splits;  // 1: one block per (head, token); more: flash-decoding over context / n_splits
  bool causal;        // token t sees positions <= *pos + t (else the whole batch)
  float scale;        // 1 / sqrt(head_dim)
};
// Scaled dot-product attention over the cache, query head h on key/value head h / (n_heads /
// n_kv_heads): each split softmaxes its part of the positions, a second kernel combines them.
cudaError_t attention(cudaStream_t stream, const AttentionArgs &args);

// gate[i] = silu(gate[i]) * up[i].
cudaError_t swiglu(cudaStream_t stream, float *gate, const float *up, uint32_t n);

// x[i] += y[i].
cudaError_t add(cudaStream_t stream, float *x, const float *y, uint32_t n);

// *out = the index of the largest x[i] (the first on ties), i < n.
cudaError_t argmax(cudaStream_t stream, int32_t *out, const float *x, uint32_t n);

}  // namespace mote::cuda

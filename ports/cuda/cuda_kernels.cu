// The CUDA backend's kernels (see cuda_kernels.hpp). Weights are read in their stored blocks
// through one element accessor per dtype, the same formulas as kernels/quant_ref.cpp; products
// accumulate in f32 with warp shuffles. Every kernel bounds-checks its indices.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cfloat>

#include "cuda_kernels.hpp"
#include "format/format.hpp"
#include "kernels/quant.hpp"

namespace mote::cuda {
namespace {

using format::DType;
using kernels::BlockQ4_0;
using kernels::BlockQ4_0x8;
using kernels::BlockQ4_1;
using kernels::BlockQ4_1x8;
using kernels::BlockQ8_0;
using kernels::BlockQ8_0x8;
using kernels::kInterleave;
using kernels::kQuantBlock;

constexpr unsigned kWarp = 32;
constexpr unsigned kBlockThreads = 256;
constexpr unsigned kMatmulWarps = 4;  // rows per matmul block, one warp each

__host__ __device__ inline float half_to_float(uint16_t bits) { return __half2float(__ushort_as_half(bits)); }

// Element j (0..31) of a q4 block's 16 bytes: low nibbles first, then high nibbles.
__host__ __device__ inline int nibble(const uint8_t *qs, uint32_t j) {
  return j < 16 ? (qs[j] & 0x0F) : (qs[j - 16] >> 4);
}

// Byte j of row i's quants inside an x8 group block: 4-byte runs of the 8 rows interleaved.
__host__ __device__ inline uint32_t interleaved_byte(uint32_t i, uint32_t j) {
  return (kInterleave * (j / 4) + i) * 4 + j % 4;
}

// Element (row, col) of a matrix of dtype kType, as a float.
template <DType kType>
__host__ __device__ float element(const uint8_t *m, uint64_t row_bytes, uint32_t row, uint32_t col) {
  const uint32_t b = col / kQuantBlock, j = col % kQuantBlock;
  if constexpr (kType == DType::f32) {
    return reinterpret_cast<const float *>(m + row * row_bytes)[col];
  } else if constexpr (kType == DType::f16) {
    return half_to_float(reinterpret_cast<const uint16_t *>(m + row * row_bytes)[col]);
  } else if constexpr (kType == DType::q8_0) {
    const BlockQ8_0 &block = reinterpret_cast<const BlockQ8_0 *>(m + row * row_bytes)[b];
    return half_to_float(block.d) * static_cast<float>(block.qs[j]);
  } else if constexpr (kType == DType::q4_0) {
    const BlockQ4_0 &block = reinterpret_cast<const BlockQ4_0 *>(m + row * row_bytes)[b];
    return half_to_float(block.d) * static_cast<float>(nibble(block.qs, j) - 8);
  } else if constexpr (kType == DType::q4_1) {
    const BlockQ4_1 &block = reinterpret_cast<const BlockQ4_1 *>(m + row * row_bytes)[b];
    return half_to_float(block.d) * static_cast<float>(nibble(block.qs, j)) + half_to_float(block.m);
  } else {
    // x8: rows 8g..8g+7 form group g, stored from byte g * 8 * row_bytes, one group block per 32 columns.
    const uint8_t *group = m + static_cast<uint64_t>(row / kInterleave) * kInterleave * row_bytes;
    const uint32_t i = row % kInterleave;
    if constexpr (kType == DType::q8_0x8) {
      const BlockQ8_0x8 &block = reinterpret_cast<const BlockQ8_0x8 *>(group)[b];
      return half_to_float(block.d[i]) * static_cast<float>(block.qs[interleaved_byte(i, j)]);
    } else if constexpr (kType == DType::q4_0x8) {
      const BlockQ4_0x8 &block = reinterpret_cast<const BlockQ4_0x8 *>(group)[b];
      const uint8_t byte = block.qs[interleaved_byte(i, j % 16)];
      return half_to_float(block.d[i]) * static_cast<float>((j < 16 ? (byte & 0x0F) : (byte >> 4)) - 8);
    } else {
      static_assert(kType == DType::q4_1x8, "a dtype without an element accessor");
      const BlockQ4_1x8 &block = reinterpret_cast<const BlockQ4_1x8 *>(group)[b];
      const uint8_t byte = block.qs[interleaved_byte(i, j % 16)];
      return half_to_float(block.d[i]) * static_cast<float>(j < 16 ? (byte & 0x0F) : (byte >> 4)) +
             half_to_float(block.m[i]);
    }
  }
}

__device__ inline float warp_sum(float v) {
  for (unsigned offset = kWarp / 2; offset > 0; offset /= 2) v += __shfl_down_sync(0xFFFFFFFFu, v, offset);
  return v;  // in lane 0
}

// The sum (or max) of every thread's v, in all threads; blockDim.x a multiple of 32, at most 1024.
template <bool kMax>
__device__ float block_reduce(float v) {
  __shared__ float partial[32];
  __shared__ float result;
  const unsigned lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  for (unsigned offset = kWarp / 2; offset > 0; offset /= 2) {
    const float other = __shfl_down_sync(0xFFFFFFFFu, v, offset);
    v = kMax ? fmaxf(v, other) : v + other;
  }
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    float r = partial[0];
    for (unsigned w = 1; w < blockDim.x / kWarp; ++w) r = kMax ? fmaxf(r, partial[w]) : r + partial[w];
    result = r;
  }
  __syncthreads();
  return result;
}

template <DType kType>
__global__ void embed_kernel(float *x, const uint8_t *m, uint64_t row_bytes, uint32_t rows, uint32_t cols,
                             const int32_t *tokens) {
  const uint32_t t = blockIdx.x;
  const int32_t token = tokens[t];
  if (token < 0 || static_cast<uint32_t>(token) >= rows) return;  // the API checked; never read out of bounds
  for (uint32_t c = threadIdx.x; c < cols; c += blockDim.x) {
    x[static_cast<uint64_t>(t) * cols + c] = element<kType>(m, row_bytes, static_cast<uint32_t>(token), c);
  }
}

template <DType kType>
__global__ void matmul_kernel(float *out, const uint8_t *w, uint64_t row_bytes, uint32_t rows, uint32_t cols,
                              const float *x) {
  const uint32_t row = blockIdx.x * kMatmulWarps + threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const uint32_t t = blockIdx.y;
  if (row >= rows) return;  // a whole warp leaves together
  const float *xt = x + static_cast<uint64_t>(t) * cols;
  float sum = 0.0f;
  for (uint32_t c = lane; c < cols; c += kWarp) sum += element<kType>(w, row_bytes, row, c) * xt[c];
  sum = warp_sum(sum);
  if (lane == 0) out[static_cast<uint64_t>(t) * rows + row] = sum;
}

__global__ void rmsnorm_kernel(float *out, const float *x, const float *weight, uint32_t dim, float eps) {
  const float *xt = x + static_cast<uint64_t>(blockIdx.x) * dim;
  float *ot = out + static_cast<uint64_t>(blockIdx.x) * dim;
  float squares = 0.0f;
  for (uint32_t i = threadIdx.x; i < dim; i += blockDim.x) squares += xt[i] * xt[i];
  squares = block_reduce<false>(squares);  // every read of xt happens before this barrier
  const float scale = 1.0f / sqrtf(squares / static_cast<float>(dim) + eps);
  for (uint32_t i = threadIdx.x; i < dim; i += blockDim.x) ot[i] = xt[i] * scale * weight[i];
}

__global__ void rope_kernel(float *q, float *k, const double *inv_freq, const int32_t *pos, uint32_t n_heads,
                            uint32_t n_kv_heads, uint32_t head_dim, bool split_half) {
  const uint32_t t = blockIdx.x, half = head_dim / 2;
  const double position = static_cast<double>(*pos + static_cast<int32_t>(t));
  const uint32_t q_pairs = n_heads * half, pairs = (n_heads + n_kv_heads) * half;
  for (uint32_t p = threadIdx.x; p < pairs; p += blockDim.x) {
    const bool is_q = p < q_pairs;
    const uint32_t index = is_q ? p : p - q_pairs, head = index / half, i = index % half;
    float *x = is_q ? q + (static_cast<uint64_t>(t) * n_heads + head) * head_dim
                    : k + (static_cast<uint64_t>(t) * n_kv_heads + head) * head_dim;
    const double angle = position * inv_freq[i];
    const float cos_a = static_cast<float>(::cos(angle)), sin_a = static_cast<float>(::sin(angle));
    const uint32_t ia = split_half ? i : 2 * i, ib = split_half ? i + half : 2 * i + 1;
    const float a = x[ia], b = x[ib];
    x[ia] = a * cos_a - b * sin_a;
    x[ib] = a * sin_a + b * cos_a;
  }
}

__global__ void store_kv_kernel(void *cache, bool f16, const float *src, const int32_t *pos, uint32_t kv_dim) {
  const uint32_t t = blockIdx.x;
  const uint64_t base = (static_cast<uint64_t>(*pos) + t) * kv_dim;
  for (uint32_t i = threadIdx.x; i < kv_dim; i += blockDim.x) {
    const float v = src[static_cast<uint64_t>(t) * kv_dim + i];
    if (f16) {
      static_cast<uint16_t *>(cache)[base + i] = __half_as_ushort(__float2half_rn(v));
    } else {
      static_cast<float *>(cache)[base + i] = v;
    }
  }
}

__device__ inline float cache_value(const void *cache, bool f16, uint64_t index) {
  return f16 ? half_to_float(static_cast<const uint16_t *>(cache)[index]) : static_cast<const float *>(cache)[index];
}

// Block (head, token, split): softmax over the split's positions, kept unnormalized in partial:
// [0] the split's max score, [1] the sum of exp(score - max), [2..] sum of exp(score - max) * v.
__global__ void attention_partial_kernel(AttentionArgs a) {
  extern __shared__ float q_shared[];  // (head_dim)
  const uint32_t h = blockIdx.x, t = blockIdx.y, split = blockIdx.z;
  const uint32_t q_dim = a.n_heads * a.head_dim, kv_dim = a.n_kv_heads * a.head_dim;
  const uint32_t kv_head = h / (a.n_heads / a.n_kv_heads);
  const uint32_t n_pos_raw =
      a.causal ? static_cast<uint32_t>(*a.pos) + t + 1 : static_cast<uint32_t>(*a.pos) + a.n_tokens;
  const uint32_t n_pos = n_pos_raw < a.context ? n_pos_raw : a.context;
  const uint32_t chunk = (a.context + a.n_splits - 1) / a.n_splits;
  const uint32_t begin = split * chunk, end = begin + chunk < n_pos ? begin + chunk : n_pos;
  float *part = a.partial + ((static_cast<uint64_t>(t) * a.n_heads + h) * a.n_splits + split) * (a.head_dim + 2);
  float *scores = a.scores + (static_cast<uint64_t>(t) * a.n_heads + h) * a.context;
  const float *q = a.q + static_cast<uint64_t>(t) * q_dim + h * a.head_dim;
  for (uint32_t d = threadIdx.x; d < a.head_dim; d += blockDim.x) q_shared[d] = q[d];
  __syncthreads();

  float max = -FLT_MAX;
  for (uint32_t p = begin + threadIdx.x; p < end; p += blockDim.x) {
    const uint64_t key = static_cast<uint64_t>(p) * kv_dim + kv_head * a.head_dim;
    float dot = 0.0f;
    for (uint32_t d = 0; d < a.head_dim; ++d) dot += q_shared[d] * cache_value(a.keys, a.f16, key + d);
    scores[p] = a.scale * dot;
    max = fmaxf(max, scores[p]);
  }
  max = block_reduce<true>(max);
  float sum = 0.0f;
  for (uint32_t p = begin + threadIdx.x; p < end; p += blockDim.x) {
    scores[p] = expf(scores[p] - max);  // each thread rewrites only the scores it wrote
    sum += scores[p];
  }
  sum = block_reduce<false>(sum);  // its barriers make every thread's scores visible to the block
  for (uint32_t d = threadIdx.x; d < a.head_dim; d += blockDim.x) {
    float acc = 0.0f;
    for (uint32_t p = begin; p < end; ++p) {
      acc += scores[p] * cache_value(a.values, a.f16, static_cast<uint64_t>(p) * kv_dim + kv_head * a.head_dim + d);
    }
    part[2 + d] = acc;
  }
  if (threadIdx.x == 0) {
    part[0] = begin < end ? max : -FLT_MAX;
    part[1] = sum;  // 0 for an empty split
  }
}

// Block (head, token): out = sum_s exp(m_s - M) o_s / sum_s exp(m_s - M) l_s over non-empty splits.
__global__ void attention_combine_kernel(AttentionArgs a) {
  const uint32_t h = blockIdx.x, t = blockIdx.y, stride = a.head_dim + 2;
  const float *parts = a.partial + (static_cast<uint64_t>(t) * a.n_heads + h) * a.n_splits * stride;
  float max = -FLT_MAX;
  for (uint32_t s = 0; s < a.n_splits; ++s) {
    if (parts[s * stride + 1] > 0.0f) max = fmaxf(max, parts[s * stride]);
  }
  float denominator = 0.0f;
  for (uint32_t s = 0; s < a.n_splits; ++s) {
    if (parts[s * stride + 1] > 0.0f) denominator += expf(parts[s * stride] - max) * parts[s * stride + 1];
  }
  float *out = a.out + static_cast<uint64_t>(t) * a.n_heads * a.head_dim + h * a.head_dim;
  for (uint32_t d = threadIdx.x; d < a.head_dim; d += blockDim.x) {
    float acc = 0.0f;
    for (uint32_t s = 0; s < a.n_splits; ++s) {
      if (parts[s * stride + 1] > 0.0f) acc += expf(parts[s * stride] - max) * parts[s * stride + 2 + d];
    }
    out[d] = acc / denominator;
  }
}

__global__ void swiglu_kernel(float *gate, const float *up, uint32_t n) {
  const uint64_t i = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) gate[i] = gate[i] / (1.0f + expf(-gate[i])) * up[i];
}

__global__ void add_kernel(float *x, const float *y, uint32_t n) {
  const uint64_t i = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) x[i] += y[i];
}

// One block: each thread scans a stride, then a shared-memory tree keeps (value, first index).
__global__ void argmax_kernel(int32_t *out, const float *x, uint32_t n) {
  __shared__ float values[kBlockThreads];
  __shared__ uint32_t indices[kBlockThreads];
  float best = -FLT_MAX;
  uint32_t best_i = n;
  for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) {
    if (x[i] > best || best_i == n) {
      best = x[i];
      best_i = i;
    }
  }
  values[threadIdx.x] = best;
  indices[threadIdx.x] = best_i;
  __syncthreads();
  for (unsigned width = blockDim.x / 2; width > 0; width /= 2) {
    if (threadIdx.x < width) {
      const float v = values[threadIdx.x + width];
      const uint32_t i = indices[threadIdx.x + width];
      const bool better = i < n && (indices[threadIdx.x] == n || v > values[threadIdx.x] ||
                                    (v == values[threadIdx.x] && i < indices[threadIdx.x]));
      if (better) {
        values[threadIdx.x] = v;
        indices[threadIdx.x] = i;
      }
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) *out = static_cast<int32_t>(indices[0]);
}

uint32_t blocks_for(uint64_t n, uint32_t threads) { return static_cast<uint32_t>((n + threads - 1) / threads); }

// The dtype's kernels, one row per dtype, as the CPU's weight-type table.
struct TypeKernels {
  DType dtype;
  void (*embed)(float *, const uint8_t *, uint64_t, uint32_t, uint32_t, const int32_t *);
  void (*matmul)(float *, const uint8_t *, uint64_t, uint32_t, uint32_t, const float *);
  float (*host_element)(const uint8_t *, uint64_t, uint32_t, uint32_t);
};

template <DType kType>
constexpr TypeKernels type_kernels() {
  return TypeKernels{kType, embed_kernel<kType>, matmul_kernel<kType>, element<kType>};
}

constexpr TypeKernels kTypeKernels[] = {
    type_kernels<DType::f32>(),    type_kernels<DType::f16>(),    type_kernels<DType::q8_0>(),
    type_kernels<DType::q4_0>(),   type_kernels<DType::q4_1>(),   type_kernels<DType::q8_0x8>(),
    type_kernels<DType::q4_0x8>(), type_kernels<DType::q4_1x8>(),
};

const TypeKernels *type_row(uint32_t dtype) {
  for (const TypeKernels &row : kTypeKernels) {
    if (static_cast<uint32_t>(row.dtype) == dtype) return &row;
  }
  return nullptr;
}

}  // namespace

bool dtype_supported(uint32_t dtype) { return type_row(dtype) != nullptr; }

float host_element(const DeviceMatrix &m, uint32_t row, uint32_t col) {
  const TypeKernels *type = type_row(m.dtype);
  return type == nullptr ? 0.0f : type->host_element(static_cast<const uint8_t *>(m.data), m.row_bytes, row, col);
}

cudaError_t embed(cudaStream_t stream, float *x, const DeviceMatrix &m, const int32_t *tokens, uint32_t n_tokens) {
  const TypeKernels *row = type_row(m.dtype);
  if (row == nullptr) return cudaErrorInvalidValue;
  row->embed<<<n_tokens, kBlockThreads, 0, stream>>>(x, static_cast<const uint8_t *>(m.data), m.row_bytes, m.rows,
                                                     m.cols, tokens);
  return cudaGetLastError();
}

cudaError_t matmul(cudaStream_t stream, float *out, const DeviceMatrix &w, const float *x, uint32_t n_tokens) {
  const TypeKernels *row = type_row(w.dtype);
  if (row == nullptr) return cudaErrorInvalidValue;
  const dim3 grid(blocks_for(w.rows, kMatmulWarps), n_tokens);
  row->matmul<<<grid, kMatmulWarps * kWarp, 0, stream>>>(out, static_cast<const uint8_t *>(w.data), w.row_bytes, w.rows,
                                                         w.cols, x);
  return cudaGetLastError();
}

cudaError_t rmsnorm(cudaStream_t stream, float *out, const float *x, const float *weight, uint32_t dim, float eps,
                    uint32_t n_tokens) {
  rmsnorm_kernel<<<n_tokens, kBlockThreads, 0, stream>>>(out, x, weight, dim, eps);
  return cudaGetLastError();
}

cudaError_t rope(cudaStream_t stream, float *q, float *k, const double *inv_freq, const int32_t *pos, uint32_t n_heads,
                 uint32_t n_kv_heads, uint32_t head_dim, bool split_half, uint32_t n_tokens) {
  rope_kernel<<<n_tokens, kBlockThreads, 0, stream>>>(q, k, inv_freq, pos, n_heads, n_kv_heads, head_dim, split_half);
  return cudaGetLastError();
}

cudaError_t store_kv(cudaStream_t stream, void *cache, bool f16, const float *src, const int32_t *pos, uint32_t kv_dim,
                     uint32_t n_tokens) {
  store_kv_kernel<<<n_tokens, kBlockThreads, 0, stream>>>(cache, f16, src, pos, kv_dim);
  return cudaGetLastError();
}

cudaError_t attention(cudaStream_t stream, const AttentionArgs &args) {
  if (args.n_splits == 0 || args.n_kv_heads == 0 || args.n_heads % args.n_kv_heads != 0) return cudaErrorInvalidValue;
  const dim3 partial_grid(args.n_heads, args.n_tokens, args.n_splits);
  attention_partial_kernel<<<partial_grid, kBlockThreads, args.head_dim * sizeof(float), stream>>>(args);
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) return status;
  attention_combine_kernel<<<dim3(args.n_heads, args.n_tokens), kWarp * 4, 0, stream>>>(args);
  return cudaGetLastError();
}

cudaError_t swiglu(cudaStream_t stream, float *gate, const float *up, uint32_t n) {
  swiglu_kernel<<<blocks_for(n, kBlockThreads), kBlockThreads, 0, stream>>>(gate, up, n);
  return cudaGetLastError();
}

cudaError_t add(cudaStream_t stream, float *x, const float *y, uint32_t n) {
  add_kernel<<<blocks_for(n, kBlockThreads), kBlockThreads, 0, stream>>>(x, y, n);
  return cudaGetLastError();
}

cudaError_t argmax(cudaStream_t stream, int32_t *out, const float *x, uint32_t n) {
  argmax_kernel<<<1, kBlockThreads, 0, stream>>>(out, x, n);
  return cudaGetLastError();
}

}  // namespace mote::cuda

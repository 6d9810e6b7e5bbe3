// Scalar K-quant kernels: quant.hpp's sum for the super-block types written as plain loops (every
// SIMD table equals these bit for bit), and ggml's dequantization of each super-block.
#include "core/fp16.hpp"
#include "kernels/ref.hpp"

namespace mote::kernels::ref {
namespace {

float reduce_lanes(const float acc[kQuantLanes]) {
  return ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
}

float block_dmin(const BlockQ6_K &) { return 0.0f; }
float block_dmin(const BlockQ3_K &) { return 0.0f; }
template <class Block>
float block_dmin(const Block &b) {
  return fp16_to_f32(b.dmin);
}

// Lane k of sub-block s: its integer scale (the 16-value sub-block 2s + k / 4 in the types that
// have them, else 1) and its min term.
template <class Block>
int lane_scale(const Block &b, size_t s, size_t k) {
  if constexpr (kScaledBySixteen<Block>) {
    return sixteen_scale(b, 2 * s + k / 4);
  } else {
    return 1;
  }
}
template <class Block>
float lane_min(const Block &b, float dmin, const float *m_sub, size_t s, size_t k) {
  if constexpr (std::is_same_v<Block, BlockQ2_K>) {
    return q2_k_lane_min(b, dmin, 2 * s + k / 4);
  } else {
    return m_sub[s];
  }
}

template <class Block>
void matmul_super_blocks(float *out, size_t out_stride, const Block *w, const Q8Activations &x, size_t rows,
                         size_t cols, size_t n_tokens) {
  const size_t n_blocks = cols / kQuantBlock, n_super = cols / kSuperBlock;
  for (size_t t = 0; t < n_tokens; ++t) {
    for (size_t r = 0; r < rows; ++r) {
      float acc[kQuantLanes] = {};
      for (size_t sb = 0; sb < n_super; ++sb) {
        const Block &block = w[r * n_super + sb];
        const float dmin = block_dmin(block);
        float d_sub[kSubBlocks], m_sub[kSubBlocks];
        super_block_scales(block, fp16_to_f32(block.d), dmin, d_sub, m_sub);
        for (size_t s = 0; s < kSubBlocks; ++s) {
          const size_t xb = t * n_blocks + sb * kSubBlocks + s;
          const int8_t *xq = x.q + xb * kQuantBlock;
          const float scale = d_sub[s] * x.scale[xb];
          for (size_t k = 0; k < kQuantLanes; ++k) {
            int32_t lane = 0;
            for (size_t l = k * kLaneElements; l < (k + 1) * kLaneElements; ++l)
              lane += (k_code(block, s, l) - kCodeOffset<Block>)*xq[l];
            lane *= lane_scale(block, s, k);
            acc[k] = __builtin_fmaf(static_cast<float>(lane), scale, acc[k]);
            if constexpr (kKHasMin<Block>) {
              acc[k] =
                  __builtin_fmaf(lane_min(block, dmin, m_sub, s, k), x.lane_sum_scaled[xb * kQuantLanes + k], acc[k]);
            }
          }
        }
      }
      out[t * out_stride + r] = reduce_lanes(acc);
    }
  }
}

// quant.hpp's x8 sum: one accumulator per row, one int32 per 32-value sub-block (the 16-value
// types: its two halves times their integer scales), read from each row's plain block.
template <class Group>
void matmul_k_interleaved(float *out, size_t out_stride, const Group *w, const Q8Activations &x, size_t rows,
                          size_t cols, size_t n_tokens) {
  using Block = typename Group::Plain;
  const size_t n_blocks = cols / kQuantBlock, n_super = cols / kSuperBlock;
  for (size_t t = 0; t < n_tokens; ++t) {
    for (size_t r = 0; r < rows; ++r) {
      float acc = 0.0f, mins = 0.0f;
      for (size_t sb = 0; sb < n_super; ++sb) {
        const Block block = plain_row(w[r / kInterleave * n_super + sb], r % kInterleave);
        const float dmin = block_dmin(block);
        float d_sub[kSubBlocks], m_sub[kSubBlocks];
        super_block_scales(block, fp16_to_f32(block.d), dmin, d_sub, m_sub);
        for (size_t s = 0; s < kSubBlocks; ++s) {
          const size_t xb = t * n_blocks + sb * kSubBlocks + s;
          const int8_t *xq = x.q + xb * kQuantBlock;
          int32_t halves[2] = {0, 0}, x_halves[2] = {0, 0};
          for (size_t l = 0; l < kQuantBlock; ++l) {
            halves[l / 16] += (k_code(block, s, l) - kCodeOffset<Block>)*xq[l];
            x_halves[l / 16] += xq[l];
          }
          if constexpr (kScaledBySixteen<Block>) {
            const int32_t sum = sixteen_scale(block, 2 * s) * halves[0] + sixteen_scale(block, 2 * s + 1) * halves[1];
            acc = __builtin_fmaf(static_cast<float>(sum), d_sub[s] * x.scale[xb], acc);
            if constexpr (kKHasMin<Block>) {  // q2_k: its mins per 16 values against the halves' sums
              const int32_t min_sum = q2_k_min(block, 2 * s) * x_halves[0] + q2_k_min(block, 2 * s + 1) * x_halves[1];
              mins = __builtin_fmaf(static_cast<float>(min_sum), -(dmin * x.scale[xb]), mins);
            }
          } else {
            acc = __builtin_fmaf(static_cast<float>(halves[0] + halves[1]), d_sub[s] * x.scale[xb], acc);
            mins = __builtin_fmaf(m_sub[s], x.scale[xb] * static_cast<float>(x.block_sum[xb]), mins);
          }
        }
      }
      out[t * out_stride + r] = acc + mins;
    }
  }
}

// ggml's dequantize_row_*: q4_k, q5_k and q2_k x = (d·sc)·q − dmin·mn; q6_k and q3_k
// x = (d·sc)·(q − offset), each product rounded as ggml rounds it (no fused multiply-adds:
// CMakeLists.txt builds this file with -ffp-contract=off). The converter's GGUF import decodes
// through these too (models/convert/quant/dequant.cpp).
template <class Block>
void dequantize_super_blocks(float *out, const Block *blocks, size_t n) {
  for (size_t sb = 0; sb < n / kSuperBlock; ++sb) {
    const Block &b = blocks[sb];
    const float d = fp16_to_f32(b.d), dmin = block_dmin(b);
    float d_sub[kSubBlocks], m_sub[kSubBlocks];
    super_block_scales(b, d, dmin, d_sub, m_sub);
    for (size_t s = 0; s < kSubBlocks; ++s) {
      for (size_t l = 0; l < kQuantBlock; ++l) {
        float *value = out + sb * kSuperBlock + s * kQuantBlock + l;
        const int q = k_code(b, s, l) - kCodeOffset<Block>;
        if constexpr (kScaledBySixteen<Block>) {
          const size_t i = 2 * s + l / 16;
          const float dl = d * static_cast<float>(sixteen_scale(b, i));
          if constexpr (kKHasMin<Block>) {
            *value = dl * static_cast<float>(q) + q2_k_lane_min(b, dmin, i);  // − dmin·mn, exactly
          } else {
            *value = dl * static_cast<float>(q);
          }
        } else {
          *value = d_sub[s] * static_cast<float>(q) + m_sub[s];
        }
      }
    }
  }
}

// Row `row` of an x8 group: its plain super-blocks, dequantized as the plain type's.
template <class Group>
void dequantize_k_interleaved(float *out, const Group *group, size_t row, size_t n) {
  for (size_t sb = 0; sb < n / kSuperBlock; ++sb) {
    const typename Group::Plain block = plain_row(group[sb], row);
    dequantize_super_blocks(out + sb * kSuperBlock, &block, kSuperBlock);
  }
}

}  // namespace

void dequantize_q4_kx8(float *out, const BlockQ4_Kx8 *group, size_t row, size_t n) {
  dequantize_k_interleaved(out, group, row, n);
}
void dequantize_q5_kx8(float *out, const BlockQ5_Kx8 *group, size_t row, size_t n) {
  dequantize_k_interleaved(out, group, row, n);
}
void dequantize_q6_kx8(float *out, const BlockQ6_Kx8 *group, size_t row, size_t n) {
  dequantize_k_interleaved(out, group, row, n);
}
void dequantize_q3_kx8(float *out, const BlockQ3_Kx8 *group, size_t row, size_t n) {
  dequantize_k_interleaved(out, group, row, n);
}
void dequantize_q2_kx8(float *out, const BlockQ2_Kx8 *group, size_t row, size_t n) {
  dequantize_k_interleaved(out, group, row, n);
}
void matmul_q4_kx8(float *out, size_t out_stride, const BlockQ4_Kx8 *w, const Q8Activations &x, size_t rows,
                   size_t cols, size_t n_tokens) {
  matmul_k_interleaved(out, out_stride, w, x, rows, cols, n_tokens);
}
void matmul_q5_kx8(float *out, size_t out_stride, const BlockQ5_Kx8 *w, const Q8Activations &x, size_t rows,
                   size_t cols, size_t n_tokens) {
  matmul_k_interleaved(out, out_stride, w, x, rows, cols, n_tokens);
}
void matmul_q6_kx8(float *out, size_t out_stride, const BlockQ6_Kx8 *w, const Q8Activations &x, size_t rows,
                   size_t cols, size_t n_tokens) {
  matmul_k_interleaved(out, out_stride, w, x, rows, cols, n_tokens);
}
void matmul_q3_kx8(float *out, size_t out_stride, const BlockQ3_Kx8 *w, const Q8Activations &x, size_t rows,
                   size_t cols, size_t n_tokens) {
  matmul_k_interleaved(out, out_stride, w, x, rows, cols, n_tokens);
}
void matmul_q2_kx8(float *out, size_t out_stride, const BlockQ2_Kx8 *w, const Q8Activations &x, size_t rows,
                   size_t cols, size_t n_tokens) {
  matmul_k_interleaved(out, out_stride, w, x, rows, cols, n_tokens);
}

void dequantize_q4_k(float *out, const BlockQ4_K *blocks, size_t n) { dequantize_super_blocks(out, blocks, n); }
void dequantize_q5_k(float *out, const BlockQ5_K *blocks, size_t n) { dequantize_super_blocks(out, blocks, n); }
void dequantize_q6_k(float *out, const BlockQ6_K *blocks, size_t n) { dequantize_super_blocks(out, blocks, n); }
void dequantize_q3_k(float *out, const BlockQ3_K *blocks, size_t n) { dequantize_super_blocks(out, blocks, n); }
void dequantize_q2_k(float *out, const BlockQ2_K *blocks, size_t n) { dequantize_super_blocks(out, blocks, n); }

void matmul_q4_k(float *out, size_t out_stride, const BlockQ4_K *w, const Q8Activations &x, size_t rows, size_t cols,
                 size_t n_tokens) {
  matmul_super_blocks(out, out_stride, w, x, rows, cols, n_tokens);
}
void matmul_q5_k(float *out, size_t out_stride, const BlockQ5_K *w, const Q8Activations &x, size_t rows, size_t cols,
                 size_t n_tokens) {
  matmul_super_blocks(out, out_stride, w, x, rows, cols, n_tokens);
}
void matmul_q6_k(float *out, size_t out_stride, const BlockQ6_K *w, const Q8Activations &x, size_t rows, size_t cols,
                 size_t n_tokens) {
  matmul_super_blocks(out, out_stride, w, x, rows, cols, n_tokens);
}
void matmul_q3_k(float *out, size_t out_stride, const BlockQ3_K *w, const Q8Activations &x, size_t rows, size_t cols,
                 size_t n_tokens) {
  matmul_super_blocks(out, out_stride, w, x, rows, cols, n_tokens);
}
void matmul_q2_k(float *out, size_t out_stride, const BlockQ2_K *w, const Q8Activations &x, size_t rows, size_t cols,
                 size_t n_tokens) {
  matmul_super_blocks(out, out_stride, w, x, rows, cols, n_tokens);
}

}  // namespace mote::kernels::ref

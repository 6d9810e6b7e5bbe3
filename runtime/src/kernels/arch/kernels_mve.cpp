// Helium (MVE, Armv8.1-M: the Cortex-M55) kernels, with arm_mve.h intrinsics: xsimd has no
// M-profile arch. The f32 matrix-vector product and the q8_0 / q8_0x8 products run on MVE; every
// other entry is its scalar twin. Quantized results follow quant.hpp's sum exactly (bit for bit
// with every other ISA); a float row is summed in one fixed order (4 lanes of fused
// multiply-adds over the 4-column blocks, reduced ((l0 + l1) + (l2 + l3)), then the remaining
// columns one by one), and matmul_f32 is one matvec per token, so batching never changes it.
#include <arm_mve.h>

#include "core/fp16.hpp"
#include "kernels/arch/arch_tables.hpp"
#include "kernels/ref.hpp"

namespace mote::kernels {
namespace {

float reduce4(float32x4_t v) {
  return (vgetq_lane_f32(v, 0) + vgetq_lane_f32(v, 1)) + (vgetq_lane_f32(v, 2) + vgetq_lane_f32(v, 3));
}

float finish_row(float32x4_t acc, const float *row, const float *x, size_t simd_end, size_t cols) {
  float sum = reduce4(acc);
  for (size_t c = simd_end; c < cols; ++c) sum = __builtin_fmaf(row[c], x[c], sum);
  return sum;
}

void matvec_f32(float *out, const float *w, const float *x, size_t rows, size_t cols) {
  const size_t simd_end = cols - cols % 4;
  size_t r = 0;
  for (; r + 2 <= rows; r += 2) {  // two rows share every load of x
    const float *row0 = w + r * cols, *row1 = row0 + cols;
    float32x4_t acc0 = vdupq_n_f32(0.0f), acc1 = vdupq_n_f32(0.0f);
    for (size_t c = 0; c < simd_end; c += 4) {
      const float32x4_t xc = vld1q_f32(x + c);
      acc0 = vfmaq_f32(acc0, vld1q_f32(row0 + c), xc);
      acc1 = vfmaq_f32(acc1, vld1q_f32(row1 + c), xc);
    }
    out[r] = finish_row(acc0, row0, x, simd_end, cols);
    out[r + 1] = finish_row(acc1, row1, x, simd_end, cols);
  }
  for (; r < rows; ++r) {
    const float *row = w + r * cols;
    float32x4_t acc = vdupq_n_f32(0.0f);
    for (size_t c = 0; c < simd_end; c += 4) acc = vfmaq_f32(acc, vld1q_f32(row + c), vld1q_f32(x + c));
    out[r] = finish_row(acc, row, x, simd_end, cols);
  }
}

void matmul_f32(float *out, size_t out_stride, const float *w, const float *x, size_t rows, size_t cols,
                size_t n_tokens) {
  for (size_t t = 0; t < n_tokens; ++t) matvec_f32(out + t * out_stride, w, x + t * cols, rows, cols);
}

// Four exact int32 sums of 4 consecutive byte products: lane k = sum of a[4k..4k+3] * b[4k..4k+3].
// Bytes are widened to 16 bits (even bytes, odd bytes), then multiplied into 32 bits (even and
// odd 16-bit lanes): the four products of lane k come from bytes 4k, 4k+2 (even), 4k+1, 4k+3.
int32x4_t dot4(int8x16_t a, int8x16_t b) {
  const int16x8_t a_even = vmovlbq_s8(a), a_odd = vmovltq_s8(a);
  const int16x8_t b_even = vmovlbq_s8(b), b_odd = vmovltq_s8(b);
  int32x4_t sum = vmullbq_int_s16(a_even, b_even);
  sum = vaddq_s32(sum, vmulltq_int_s16(a_even, b_even));
  sum = vaddq_s32(sum, vmullbq_int_s16(a_odd, b_odd));
  return vaddq_s32(sum, vmulltq_int_s16(a_odd, b_odd));
}

// quant.hpp's plain-block sum: lanes 0..3 from the block's first 16 bytes, 4..7 from the last 16.
void matmul_q8_0(float *out, size_t out_stride, const BlockQ8_0 *w, const Q8Activations &x, size_t rows, size_t cols,
                 size_t n_tokens) {
  const size_t n_blocks = cols / kQuantBlock;
  for (size_t t = 0; t < n_tokens; ++t) {
    for (size_t r = 0; r < rows; ++r) {
      const BlockQ8_0 *row = w + r * n_blocks;
      float32x4_t acc_lo = vdupq_n_f32(0.0f), acc_hi = vdupq_n_f32(0.0f);  // lanes 0..3, 4..7
      for (size_t b = 0; b < n_blocks; ++b) {
        const size_t xb = t * n_blocks + b;
        const int8_t *xq = x.q + xb * kQuantBlock;
        const float scale = fp16_to_f32(row[b].d) * x.scale[xb];
        const int32x4_t lo = dot4(vld1q_s8(row[b].qs), vld1q_s8(xq));
        const int32x4_t hi = dot4(vld1q_s8(row[b].qs + 16), vld1q_s8(xq + 16));
        acc_lo = vfmaq_n_f32(acc_lo, vcvtq_f32_s32(lo), scale);
        acc_hi = vfmaq_n_f32(acc_hi, vcvtq_f32_s32(hi), scale);
      }
      // ((acc0 + acc4) + (acc2 + acc6)) + ((acc1 + acc5) + (acc3 + acc7))
      const float32x4_t s = vaddq_f32(acc_lo, acc_hi);
      out[t * out_stride + r] =
          (vgetq_lane_f32(s, 0) + vgetq_lane_f32(s, 2)) + (vgetq_lane_f32(s, 1) + vgetq_lane_f32(s, 3));
    }
  }
}

// quant.hpp's x8 sum: one exact int32 per row and block. 16 bytes of a group block hold 4 bytes
// of each of 4 rows for one k, so dot4 against x's 4 bytes k (repeated) gives those 4 rows.
void matmul_q8_0x8(float *out, size_t out_stride, const BlockQ8_0x8 *w, const Q8Activations &x, size_t rows,
                   size_t cols, size_t n_tokens) {
  const size_t n_blocks = cols / kQuantBlock;
  for (size_t t = 0; t < n_tokens; ++t) {
    for (size_t g = 0; g < rows / kInterleave; ++g) {
      const BlockQ8_0x8 *group = w + g * n_blocks;
      float32x4_t acc_lo = vdupq_n_f32(0.0f), acc_hi = vdupq_n_f32(0.0f);  // rows 0..3, 4..7
      for (size_t b = 0; b < n_blocks; ++b) {
        const size_t xb = t * n_blocks + b;
        const int8_t *xq = x.q + xb * kQuantBlock;
        int32x4_t sum_lo = vdupq_n_s32(0), sum_hi = vdupq_n_s32(0);
        for (size_t k = 0; k < kQuantLanes; ++k) {
          int32_t x4;
          __builtin_memcpy(&x4, xq + 4 * k, sizeof x4);
          const int8x16_t xk = vreinterpretq_s8_s32(vdupq_n_s32(x4));
          sum_lo = vaddq_s32(sum_lo, dot4(vld1q_s8(group[b].qs + 32 * k), xk));
          sum_hi = vaddq_s32(sum_hi, dot4(vld1q_s8(group[b].qs + 32 * k + 16), xk));
        }
        float scale[kInterleave];
        for (size_t i = 0; i < kInterleave; ++i) scale[i] = fp16_to_f32(group[b].d[i]) * x.scale[xb];
        acc_lo = vfmaq_f32(acc_lo, vcvtq_f32_s32(sum_lo), vld1q_f32(scale));
        acc_hi = vfmaq_f32(acc_hi, vcvtq_f32_s32(sum_hi), vld1q_f32(scale + 4));
      }
      float *o = out + t * out_stride + g * kInterleave;
      vst1q_f32(o, acc_lo);
      vst1q_f32(o + 4, acc_hi);
    }
  }
}

constexpr KernelTable make_mve_table() {
  KernelTable table{
      Isa::mve,
      "mve",
#define MOTE_KERNEL(name, type) &ref::name,
#include "kernels/kernel_list.inc"
#undef MOTE_KERNEL
  };
  table.matvec_f32 = &matvec_f32;
  table.matmul_f32 = &matmul_f32;
  table.matmul_q8_0 = &matmul_q8_0;
  table.matmul_q8_0x8 = &matmul_q8_0x8;
  return table;
}

constexpr KernelTable kMveTable = make_mve_table();

}  // namespace

const KernelTable &mve_kernels() { return kMveTable; }

}  // namespace mote::kernels

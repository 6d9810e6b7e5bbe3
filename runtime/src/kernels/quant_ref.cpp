// Scalar quantized kernels: the definition of the integer products (kernels/quant.hpp) written
// as plain loops. Every SIMD version must equal these bit for bit.
#include <type_traits>

#include "core/fp16.hpp"
#include "kernels/ref.hpp"

namespace mote::kernels::ref {
namespace {

// The 4-bit value of element i (0..31) of a block: low nibbles first, then high nibbles.
int nibble(const uint8_t *qs, size_t i) { return i < kQuantBlock / 2 ? qs[i] & 0x0F : qs[i - kQuantBlock / 2] >> 4; }

// The 5-bit value of element i of a q5 block: its nibble, and bit i of qh as the fifth bit.
int five_bits(const uint8_t *qs, uint32_t qh, size_t i) { return nibble(qs, i) | static_cast<int>((qh >> i) & 1) << 4; }
uint32_t load_qh(const uint8_t qh[4]) {
  return qh[0] | static_cast<uint32_t>(qh[1]) << 8 | static_cast<uint32_t>(qh[2]) << 16 |
         static_cast<uint32_t>(qh[3]) << 24;
}

// Each block type's weights as the integers the lanes multiply, and its per-lane min term.
int weight_q(const BlockQ8_0 &b, size_t i) { return b.qs[i]; }
int weight_q(const BlockQ4_0 &b, size_t i) { return nibble(b.qs, i) - 8; }
int weight_q(const BlockQ4_1 &b, size_t i) { return nibble(b.qs, i); }
int weight_q(const BlockQ5_0 &b, size_t i) { return five_bits(b.qs, load_qh(b.qh), i) - 16; }
int weight_q(const BlockQ5_1 &b, size_t i) { return five_bits(b.qs, load_qh(b.qh), i); }
int weight_q(const BlockIQ4_NL &b, size_t i) { return kIQ4NLValues[nibble(b.qs, i)]; }
template <class Block>
float block_min(const Block &b) {
  if constexpr (kHasMinimum<Block>) return fp16_to_f32(b.m);
  return 0.0f;
}

float reduce_lanes(const float acc[kQuantLanes]) {
  return ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
}

template <class Block>
void matmul_blocks(float *out, size_t out_stride, const Block *w, const Q8Activations &x, size_t rows, size_t cols,
                   size_t n_tokens) {
  const size_t n_blocks = cols / kQuantBlock;
  for (size_t t = 0; t < n_tokens; ++t) {
    for (size_t r = 0; r < rows; ++r) {
      const Block *row = w + r * n_blocks;
      float acc[kQuantLanes] = {};
      for (size_t b = 0; b < n_blocks; ++b) {
        const Block &block = row[b];
        const size_t xb = t * n_blocks + b;
        const int8_t *xq = x.q + xb * kQuantBlock;
        const float scale = fp16_to_f32(block.d) * x.scale[xb];
        for (size_t k = 0; k < kQuantLanes; ++k) {
          int32_t lane = 0;
          for (size_t i = k * kLaneElements; i < (k + 1) * kLaneElements; ++i) lane += weight_q(block, i) * xq[i];
          acc[k] = __builtin_fmaf(static_cast<float>(lane), scale, acc[k]);
          if (kHasMinimum<Block>)
            acc[k] = __builtin_fmaf(block_min(block), x.lane_sum_scaled[xb * kQuantLanes + k], acc[k]);
        }
      }
      out[t * out_stride + r] = reduce_lanes(acc);
    }
  }
}

// Element e (0..31) of row i's block inside an x8 group block: quant byte j of the row sits at
// qs[(8 * (j / 4) + i) * 4 + j % 4].
size_t interleaved_byte(size_t i, size_t j) { return (kInterleave * (j / 4) + i) * 4 + j % 4; }
int weight_q(const BlockQ8_0x8 &b, size_t i, size_t e) { return b.qs[interleaved_byte(i, e)]; }
// Nibble e of row i (low halves for e < 16, then high halves), as q4_0's.
int interleaved_nibble(const uint8_t *qs, size_t i, size_t e) {
  const uint8_t byte = qs[interleaved_byte(i, e % 16)];
  return e < 16 ? byte & 0x0F : byte >> 4;
}
int weight_q(const BlockQ4_0x8 &b, size_t i, size_t e) { return interleaved_nibble(b.qs, i, e) - 8; }
int weight_q(const BlockQ4_1x8 &b, size_t i, size_t e) { return interleaved_nibble(b.qs, i, e); }
int weight_q(const BlockQ5_0x8 &b, size_t i, size_t e) {
  return (interleaved_nibble(b.qs, i, e) | static_cast<int>((b.qh[i] >> e) & 1) << 4) - 16;
}
int weight_q(const BlockQ5_1x8 &b, size_t i, size_t e) {
  return interleaved_nibble(b.qs, i, e) | static_cast<int>((b.qh[i] >> e) & 1) << 4;
}
int weight_q(const BlockIQ4_NLx8 &b, size_t i, size_t e) { return kIQ4NLValues[interleaved_nibble(b.qs, i, e)]; }
template <class Block>
float block_min(const Block &b, size_t i) {
  if constexpr (kHasMinimum<Block>) return fp16_to_f32(b.m[i]);
  return 0.0f;
}

template <class Block>
void matmul_interleaved(float *out, size_t out_stride, const Block *w, const Q8Activations &x, size_t rows, size_t cols,
                        size_t n_tokens) {
  const size_t n_blocks = cols / kQuantBlock;
  for (size_t t = 0; t < n_tokens; ++t) {
    for (size_t r = 0; r < rows; ++r) {
      const Block *group = w + r / kInterleave * n_blocks;
      const size_t i = r % kInterleave;
      // The m terms (q4_1x8, q5_1x8) sum apart and join at the end, as the K types' do: two
      // independent chains, and the SIMD tables can take two blocks per register.
      float acc = 0.0f, mins = 0.0f;
      for (size_t b = 0; b < n_blocks; ++b) {
        const size_t xb = t * n_blocks + b;
        const int8_t *xq = x.q + xb * kQuantBlock;
        int32_t sum = 0;
        for (size_t e = 0; e < kQuantBlock; ++e) sum += weight_q(group[b], i, e) * xq[e];
        acc = __builtin_fmaf(static_cast<float>(sum), fp16_to_f32(group[b].d[i]) * x.scale[xb], acc);
        if (kHasMinimum<Block>) {
          mins = __builtin_fmaf(block_min(group[b], i), x.scale[xb] * static_cast<float>(x.block_sum[xb]), mins);
        }
      }
      out[t * out_stride + r] = kHasMinimum<Block> ? acc + mins : acc;
    }
  }
}

// GGUF's formulas exactly: d * q (plus m, as a separate add: no fused multiply-add, CMakeLists.txt
// builds this file with -ffp-contract=off). The converter's GGUF import decodes through these too.
template <class Block>
void dequantize_blocks(float *out, const Block *blocks, size_t n) {
  for (size_t b = 0; b < n / kQuantBlock; ++b, out += kQuantBlock) {
    const Block &block = blocks[b];
    const float d = fp16_to_f32(block.d), m = block_min(block);
    for (size_t i = 0; i < kQuantBlock; ++i) {
      const float value = d * static_cast<float>(weight_q(block, i));
      out[i] = kHasMinimum<Block> ? value + m : value;
    }
  }
}

template <class Block>
void dequantize_group_row(float *out, const Block *group, size_t row, size_t n) {
  for (size_t b = 0; b < n / kQuantBlock; ++b, out += kQuantBlock) {
    const Block &block = group[b];
    const float d = fp16_to_f32(block.d[row]), m = block_min(block, row);
    for (size_t e = 0; e < kQuantBlock; ++e) {
      const float value = d * static_cast<float>(weight_q(block, row, e));
      out[e] = kHasMinimum<Block> ? value + m : value;
    }
  }
}

}  // namespace

void quantize_q8(const Q8Activations &out, const float *x, size_t cols, size_t n_tokens) {
  const size_t n_blocks = n_tokens * (cols / kQuantBlock);
  for (size_t b = 0; b < n_blocks; ++b) {
    const float *xb = x + b * kQuantBlock;
    float amax = 0.0f;
    for (size_t i = 0; i < kQuantBlock; ++i) amax = __builtin_fmaxf(amax, __builtin_fabsf(xb[i]));
    const float d = amax / 127.0f;
    const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
    out.scale[b] = d;
    out.block_sum[b] = 0;
    for (size_t k = 0; k < kQuantLanes; ++k) {
      int32_t sum = 0;
      for (size_t i = k * kLaneElements; i < (k + 1) * kLaneElements; ++i) {
        // Clamped first so that no input (nan included) converts out of range.
        const float v = __builtin_fminf(__builtin_fmaxf(xb[i] * inverse, -127.0f), 127.0f);
        const int8_t q = static_cast<int8_t>(__builtin_rintf(v));
        out.q[b * kQuantBlock + i] = q;
        sum += q;
      }
      out.lane_offset[b * kQuantLanes + k] = 8 * sum;
      out.block_sum[b] += sum;
      out.lane_sum_scaled[b * kQuantLanes + k] = d * static_cast<float>(sum);
    }
    finish_block_sums(out, b);
  }
}

void dequantize_q8_0(float *out, const BlockQ8_0 *blocks, size_t n) { dequantize_blocks(out, blocks, n); }
void dequantize_q4_0(float *out, const BlockQ4_0 *blocks, size_t n) { dequantize_blocks(out, blocks, n); }
void dequantize_q4_1(float *out, const BlockQ4_1 *blocks, size_t n) { dequantize_blocks(out, blocks, n); }
void dequantize_q5_0(float *out, const BlockQ5_0 *blocks, size_t n) { dequantize_blocks(out, blocks, n); }
void dequantize_q5_1(float *out, const BlockQ5_1 *blocks, size_t n) { dequantize_blocks(out, blocks, n); }
void dequantize_iq4_nl(float *out, const BlockIQ4_NL *blocks, size_t n) { dequantize_blocks(out, blocks, n); }

void dequantize_q8_0x8(float *out, const BlockQ8_0x8 *group, size_t row, size_t n) {
  dequantize_group_row(out, group, row, n);
}
void dequantize_q4_0x8(float *out, const BlockQ4_0x8 *group, size_t row, size_t n) {
  dequantize_group_row(out, group, row, n);
}
void dequantize_q4_1x8(float *out, const BlockQ4_1x8 *group, size_t row, size_t n) {
  dequantize_group_row(out, group, row, n);
}
void dequantize_q5_0x8(float *out, const BlockQ5_0x8 *group, size_t row, size_t n) {
  dequantize_group_row(out, group, row, n);
}
void dequantize_q5_1x8(float *out, const BlockQ5_1x8 *group, size_t row, size_t n) {
  dequantize_group_row(out, group, row, n);
}
void dequantize_iq4_nlx8(float *out, const BlockIQ4_NLx8 *group, size_t row, size_t n) {
  dequantize_group_row(out, group, row, n);
}

void matmul_q8_0x8(float *out, size_t out_stride, const BlockQ8_0x8 *w, const Q8Activations &x, size_t rows,
                   size_t cols, size_t n_tokens) {
  matmul_interleaved(out, out_stride, w, x, rows, cols, n_tokens);
}

void matmul_q4_0x8(float *out, size_t out_stride, const BlockQ4_0x8 *w, const Q8Activations &x, size_t rows,
                   size_t cols, size_t n_tokens) {
  matmul_interleaved(out, out_stride, w, x, rows, cols, n_tokens);
}

void matmul_q4_1x8(float *out, size_t out_stride, const BlockQ4_1x8 *w, const Q8Activations &x, size_t rows,
                   size_t cols, size_t n_tokens) {
  matmul_interleaved(out, out_stride, w, x, rows, cols, n_tokens);
}

void matmul_q8_0(float *out, size_t out_stride, const BlockQ8_0 *w, const Q8Activations &x, size_t rows, size_t cols,
                 size_t n_tokens) {
  matmul_blocks(out, out_stride, w, x, rows, cols, n_tokens);
}

void matmul_q4_0(float *out, size_t out_stride, const BlockQ4_0 *w, const Q8Activations &x, size_t rows, size_t cols,
                 size_t n_tokens) {
  matmul_blocks(out, out_stride, w, x, rows, cols, n_tokens);
}

void matmul_q4_1(float *out, size_t out_stride, const BlockQ4_1 *w, const Q8Activations &x, size_t rows, size_t cols,
                 size_t n_tokens) {
  matmul_blocks(out, out_stride, w, x, rows, cols, n_tokens);
}

void matmul_q5_0(float *out, size_t out_stride, const BlockQ5_0 *w, const Q8Activations &x, size_t rows, size_t cols,
                 size_t n_tokens) {
  matmul_blocks(out, out_stride, w, x, rows, cols, n_tokens);
}

void matmul_q5_1(float *out, size_t out_stride, const BlockQ5_1 *w, const Q8Activations &x, size_t rows, size_t cols,
                 size_t n_tokens) {
  matmul_blocks(out, out_stride, w, x, rows, cols, n_tokens);
}

void matmul_iq4_nl(float *out, size_t out_stride, const BlockIQ4_NL *w, const Q8Activations &x, size_t rows,
                   size_t cols, size_t n_tokens) {
  matmul_blocks(out, out_stride, w, x, rows, cols, n_tokens);
}

void matmul_q5_0x8(float *out, size_t out_stride, const BlockQ5_0x8 *w, const Q8Activations &x, size_t rows,
                   size_t cols, size_t n_tokens) {
  matmul_interleaved(out, out_stride, w, x, rows, cols, n_tokens);
}

void matmul_q5_1x8(float *out, size_t out_stride, const BlockQ5_1x8 *w, const Q8Activations &x, size_t rows,
                   size_t cols, size_t n_tokens) {
  matmul_interleaved(out, out_stride, w, x, rows, cols, n_tokens);
}

void matmul_iq4_nlx8(float *out, size_t out_stride, const BlockIQ4_NLx8 *w, const Q8Activations &x, size_t rows,
                     size_t cols, size_t n_tokens) {
  matmul_interleaved(out, out_stride, w, x, rows, cols, n_tokens);
}

}  // namespace mote::kernels::ref

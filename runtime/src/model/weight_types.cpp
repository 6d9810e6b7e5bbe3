#include "model/weight_types.hpp"

#include <cstring>

#include "core/fp16.hpp"
#include "kernels/ref.hpp"

namespace mote {
namespace {

using format::DType;
using kernels::BlockQ4_0;
using kernels::BlockQ4_0x8;
using kernels::BlockQ4_1;
using kernels::BlockQ4_1x8;
using kernels::BlockQ8_0;
using kernels::BlockQ8_0x8;
using kernels::KernelTable;

// Float weights take float activations; one token is a matrix-vector product.
template <class Weight, auto kMatvec, auto kMatmul>
void matmul_float(const KernelTable &k, float *out, size_t out_stride, const void *w, const MatmulInput &x, size_t rows,
                  size_t cols, size_t n_tokens) {
  const Weight *weights = static_cast<const Weight *>(w);
  if (n_tokens == 1) {
    (k.*kMatvec)(out, weights, x.values, rows, cols);
  } else {
    (k.*kMatmul)(out, out_stride, weights, x.values, rows, cols, n_tokens);
  }
}

// Quantized weights take 8-bit activation blocks; one kernel serves one token or many.
template <class Block, auto kKernel>
void matmul_quantized(const KernelTable &k, float *out, size_t out_stride, const void *w, const MatmulInput &x,
                      size_t rows, size_t cols, size_t n_tokens) {
  (k.*kKernel)(out, out_stride, static_cast<const Block *>(w), x.q8, rows, cols, n_tokens);
}

// Row `row` of a plain matrix: rows follow each other, row_bytes apart.
template <class Block>
const Block *plain_row(const void *matrix, size_t row, size_t cols) {
  return static_cast<const Block *>(matrix) + row * (cols / kernels::kQuantBlock);
}

// The group block run holding row `row` of an x8 matrix; the row's index inside it is row % 8.
template <class Block>
const Block *interleaved_group(const void *matrix, size_t row, size_t cols) {
  return static_cast<const Block *>(matrix) + row / kernels::kInterleave * (cols / kernels::kQuantBlock);
}

void dequantize_f32(float *out, const void *matrix, size_t row, size_t cols) {
  std::memcpy(out, static_cast<const float *>(matrix) + row * cols, cols * sizeof(float));
}

void dequantize_f16(float *out, const void *matrix, size_t row, size_t cols) {
  const uint16_t *halves = static_cast<const uint16_t *>(matrix) + row * cols;
  for (size_t i = 0; i < cols; ++i) out[i] = fp16_to_f32(halves[i]);
}

void dequantize_q8_0(float *out, const void *matrix, size_t row, size_t cols) {
  kernels::ref::dequantize_q8_0(out, plain_row<BlockQ8_0>(matrix, row, cols), cols);
}

void dequantize_q4_0(float *out, const void *matrix, size_t row, size_t cols) {
  kernels::ref::dequantize_q4_0(out, plain_row<BlockQ4_0>(matrix, row, cols), cols);
}

void dequantize_q4_1(float *out, const void *matrix, size_t row, size_t cols) {
  kernels::ref::dequantize_q4_1(out, plain_row<BlockQ4_1>(matrix, row, cols), cols);
}

void dequantize_q8_0x8(float *out, const void *matrix, size_t row, size_t cols) {
  kernels::ref::dequantize_q8_0x8(out, interleaved_group<BlockQ8_0x8>(matrix, row, cols), row % 8, cols);
}

void dequantize_q4_0x8(float *out, const void *matrix, size_t row, size_t cols) {
  kernels::ref::dequantize_q4_0x8(out, interleaved_group<BlockQ4_0x8>(matrix, row, cols), row % 8, cols);
}

void dequantize_q4_1x8(float *out, const void *matrix, size_t row, size_t cols) {
  kernels::ref::dequantize_q4_1x8(out, interleaved_group<BlockQ4_1x8>(matrix, row, cols), row % 8, cols);
}

constexpr WeightType kWeightTypes[] = {
    {DType::f32, ActivationFormat::f32, 12, matmul_float<float, &KernelTable::matvec_f32, &KernelTable::matmul_f32>,
     dequantize_f32},
    {DType::f16, ActivationFormat::f32, 12, matmul_float<uint16_t, &KernelTable::matvec_f16, &KernelTable::matmul_f16>,
     dequantize_f16},
    {DType::q8_0, ActivationFormat::q8, 4, matmul_quantized<BlockQ8_0, &KernelTable::matmul_q8_0>, dequantize_q8_0},
    {DType::q4_0, ActivationFormat::q8, 4, matmul_quantized<BlockQ4_0, &KernelTable::matmul_q4_0>, dequantize_q4_0},
    {DType::q4_1, ActivationFormat::q8, 4, matmul_quantized<BlockQ4_1, &KernelTable::matmul_q4_1>, dequantize_q4_1},
    {DType::q8_0x8, ActivationFormat::q8, 8, matmul_quantized<BlockQ8_0x8, &KernelTable::matmul_q8_0x8>,
     dequantize_q8_0x8},
    {DType::q4_0x8, ActivationFormat::q8, 8, matmul_quantized<BlockQ4_0x8, &KernelTable::matmul_q4_0x8>,
     dequantize_q4_0x8},
    {DType::q4_1x8, ActivationFormat::q8, 8, matmul_quantized<BlockQ4_1x8, &KernelTable::matmul_q4_1x8>,
     dequantize_q4_1x8},
};

}  // namespace

const WeightType *weight_type(uint32_t dtype) {
  for (const WeightType &type : kWeightTypes) {
    if (static_cast<uint32_t>(type.dtype) == dtype) return &type;
  }
  return nullptr;
}

size_t weight_row_bytes(DType dtype, size_t cols) {
  const format::DTypeTraits &traits = *format::dtype_traits(static_cast<uint32_t>(dtype));
  return cols / traits.block_elements * traits.block_bytes;
}

}  // namespace mote

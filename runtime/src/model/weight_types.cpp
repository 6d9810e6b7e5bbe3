#include "model/weight_types.hpp"

#include <cstring>

#include "core/fp16.hpp"
#include "kernels/ref.hpp"

namespace mote {
namespace {

using format::DType;
using kernels::BlockIQ4_NL;
using kernels::BlockQ2_K;
using kernels::BlockQ3_K;
using kernels::BlockQ4_0;
using kernels::BlockQ4_0x8;
using kernels::BlockQ4_1;
using kernels::BlockQ4_1x8;
using kernels::BlockQ4_K;
using kernels::BlockQ5_0;
using kernels::BlockQ5_0x8;
using kernels::BlockQ5_1;
using kernels::BlockQ5_1x8;
using kernels::BlockQ5_K;
using kernels::BlockQ6_K;
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

// Every row checks its kernels' block struct against its format row at compile time, and the
// rows address blocks by the format row's sizes, so a 256-value super-block is never taken for
// eight 32-value blocks.
template <DType kDType, class Block>
constexpr bool block_matches_row() {
  constexpr const format::DTypeTraits &row = format::traits_of(kDType);
  static_assert(sizeof(Block) == size_t{row.block_bytes} * row.interleaved_rows,
                "a weight type's block struct is its format row's block bytes (times its interleaved rows)");
  static_assert(row.block_elements == 1 || row.block_elements % kernels::kQuantBlock == 0,
                "a quantized block holds whole 32-value activation blocks");
  static_assert(row.interleaved_rows == 1 || row.interleaved_rows == kernels::kInterleave,
                "x8 layouts interleave kernels::kInterleave rows");
  return true;
}

// Row `row` of a matrix as floats: plain rows follow each other weight_row_bytes apart; an x8
// matrix keeps rows in groups of interleaved_rows, one group's bytes that many rows long, and
// the kernel reads its row's index inside the group.
template <DType kDType, class Block, auto kDequantize>
void dequantize_row(float *out, const void *matrix, size_t row, size_t cols) {
  static_assert(block_matches_row<kDType, Block>());
  constexpr uint32_t kGroupRows = format::traits_of(kDType).interleaved_rows;
  const size_t group_bytes = kGroupRows * weight_row_bytes(kDType, cols);
  const uint8_t *bytes = static_cast<const uint8_t *>(matrix);
  const Block *group = reinterpret_cast<const Block *>(bytes + row / kGroupRows * group_bytes);
  if constexpr (kGroupRows == 1) {
    kDequantize(out, group, cols);
  } else {
    kDequantize(out, group, row % kGroupRows, cols);
  }
}

void dequantize_f32(float *out, const float *values, size_t n) { std::memcpy(out, values, n * sizeof(float)); }

void dequantize_f16(float *out, const uint16_t *halves, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = fp16_to_f32(halves[i]);
}

// The two row shapes: float weights (matrix-vector and matrix kernels, f32 activations) and
// quantized ones (one kernel, 8-bit activation blocks).
template <DType kDType, class Weight, auto kMatvec, auto kMatmul, auto kDequantize>
constexpr WeightType float_row(uint32_t chunk_rows) {
  return {kDType, ActivationFormat::f32, chunk_rows, matmul_float<Weight, kMatvec, kMatmul>,
          dequantize_row<kDType, Weight, kDequantize>};
}

template <DType kDType, class Block, auto kKernel, auto kDequantize>
constexpr WeightType quantized_row(uint32_t chunk_rows) {
  return {kDType, ActivationFormat::q8, chunk_rows, matmul_quantized<Block, kKernel>,
          dequantize_row<kDType, Block, kDequantize>};
}

namespace ref = kernels::ref;

// Each row: its dtype, block struct, kernel(s) and reference row reader, then its chunk_rows.
constexpr WeightType kWeightTypes[] = {
    float_row<DType::f32, float, &KernelTable::matvec_f32, &KernelTable::matmul_f32, dequantize_f32>(12),
    float_row<DType::f16, uint16_t, &KernelTable::matvec_f16, &KernelTable::matmul_f16, dequantize_f16>(12),
    quantized_row<DType::q8_0, BlockQ8_0, &KernelTable::matmul_q8_0, ref::dequantize_q8_0>(4),
    quantized_row<DType::q4_0, BlockQ4_0, &KernelTable::matmul_q4_0, ref::dequantize_q4_0>(4),
    quantized_row<DType::q4_1, BlockQ4_1, &KernelTable::matmul_q4_1, ref::dequantize_q4_1>(4),
    quantized_row<DType::q8_0x8, BlockQ8_0x8, &KernelTable::matmul_q8_0x8, ref::dequantize_q8_0x8>(8),
    quantized_row<DType::q4_0x8, BlockQ4_0x8, &KernelTable::matmul_q4_0x8, ref::dequantize_q4_0x8>(8),
    quantized_row<DType::q4_1x8, BlockQ4_1x8, &KernelTable::matmul_q4_1x8, ref::dequantize_q4_1x8>(8),
    quantized_row<DType::q5_0, BlockQ5_0, &KernelTable::matmul_q5_0, ref::dequantize_q5_0>(4),
    quantized_row<DType::q5_1, BlockQ5_1, &KernelTable::matmul_q5_1, ref::dequantize_q5_1>(4),
    quantized_row<DType::q5_0x8, BlockQ5_0x8, &KernelTable::matmul_q5_0x8, ref::dequantize_q5_0x8>(8),
    quantized_row<DType::q5_1x8, BlockQ5_1x8, &KernelTable::matmul_q5_1x8, ref::dequantize_q5_1x8>(8),
    quantized_row<DType::iq4_nl, BlockIQ4_NL, &KernelTable::matmul_iq4_nl, ref::dequantize_iq4_nl>(4),
    quantized_row<DType::q4_k, BlockQ4_K, &KernelTable::matmul_q4_k, ref::dequantize_q4_k>(4),
    quantized_row<DType::q5_k, BlockQ5_K, &KernelTable::matmul_q5_k, ref::dequantize_q5_k>(4),
    quantized_row<DType::q6_k, BlockQ6_K, &KernelTable::matmul_q6_k, ref::dequantize_q6_k>(4),
    quantized_row<DType::q3_k, BlockQ3_K, &KernelTable::matmul_q3_k, ref::dequantize_q3_k>(4),
    quantized_row<DType::q2_k, BlockQ2_K, &KernelTable::matmul_q2_k, ref::dequantize_q2_k>(4),
    quantized_row<DType::q4_kx8, kernels::BlockQ4_Kx8, &KernelTable::matmul_q4_kx8, ref::dequantize_q4_kx8>(8),
    quantized_row<DType::q5_kx8, kernels::BlockQ5_Kx8, &KernelTable::matmul_q5_kx8, ref::dequantize_q5_kx8>(8),
    quantized_row<DType::q6_kx8, kernels::BlockQ6_Kx8, &KernelTable::matmul_q6_kx8, ref::dequantize_q6_kx8>(8),
    quantized_row<DType::q3_kx8, kernels::BlockQ3_Kx8, &KernelTable::matmul_q3_kx8, ref::dequantize_q3_kx8>(8),
    quantized_row<DType::q2_kx8, kernels::BlockQ2_Kx8, &KernelTable::matmul_q2_kx8, ref::dequantize_q2_kx8>(8),
    quantized_row<DType::iq4_nlx8, kernels::BlockIQ4_NLx8, &KernelTable::matmul_iq4_nlx8, ref::dequantize_iq4_nlx8>(8),
};

}  // namespace

const WeightType *weight_type(uint32_t dtype) {
  for (const WeightType &type : kWeightTypes) {
    if (static_cast<uint32_t>(type.dtype) == dtype) return &type;
  }
  return nullptr;
}

size_t weight_row_bytes(DType dtype, size_t cols) {
  const format::DTypeTraits &traits = format::traits_of(dtype);
  return cols / traits.block_elements * traits.block_bytes;
}

}  // namespace mote

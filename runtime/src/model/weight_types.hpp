// One row per weight dtype, in the spirit of ggml's type traits: which activations its products
// take and how the forward pass multiplies and reads a matrix of that type. The forward pass,
// the session planner and check_supported index this table; adding a type is a block struct,
// its kernels, one row here and one in format::kDTypeTraits (whose block sizes address it).
#pragma once

#include <cstddef>
#include <cstdint>

#include "format/format.hpp"
#include "kernels/kernels.hpp"

namespace mote {

enum class ActivationFormat { f32, q8 };

// The input of a matrix product: n_tokens vectors of floats, and the same quantized to 8-bit
// blocks when some weight type of the model takes those (q8.q is null otherwise).
struct MatmulInput {
  const float *values;  // (n_tokens, cols)
  kernels::Q8Activations q8;
};

struct WeightType {
  format::DType dtype;
  ActivationFormat activation;
  // Threads split a matrix at multiples of this many rows: whole 8-row groups for the x8 types,
  // whole kernel tiles otherwise (float tiles are 3 or 4 rows, quantized ones 2 or 4), so no
  // chunk leaves a row to a slow 1-row tile.
  uint32_t chunk_rows;
  // out[t * out_stride + r] = row r of w . token t of x, for r < rows; w points at a row start.
  void (*matmul)(const kernels::KernelTable &k, float *out, size_t out_stride, const void *w, const MatmulInput &x,
                 size_t rows, size_t cols, size_t n_tokens);
  // Row `row` of a (rows, cols) matrix as floats (embedding lookups); exact.
  void (*dequantize_row)(float *out, const void *matrix, size_t row, size_t cols);
};

// The row for a stored dtype, or null when this build has no kernels for it.
const WeightType *weight_type(uint32_t dtype);

// Bytes of one row of cols elements (cols a whole number of blocks, as the reader checked).
size_t weight_row_bytes(format::DType dtype, size_t cols);

}  // namespace mote

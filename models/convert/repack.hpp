// Row interleaving of quantized blocks (host side): plain q8_0 / q4_0 / q4_1 rows <-> the
// q8_0x8 / q4_0x8 / q4_1x8 layouts of runtime/src/kernels/quant.hpp and models/FORMAT.md.
// A lossless reorder: the bytes per row and the values are the plain type's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "format/format.hpp"

namespace mote::convert {

// The x8 dtype holding plain's blocks 8 rows at a time (q8_0 -> q8_0x8, ...); none for the
// dtypes without one (f32, f16, bf16, and the x8 types themselves).
std::optional<format::DType> interleaved_dtype(format::DType plain);

// The plain dtype whose blocks dtype holds (q4_1x8 -> q4_1); any other dtype is its own.
format::DType plain_dtype(format::DType dtype);

// rows x cols values in plain blocks of plain (q8_0, q4_0 or q4_1), row-major, reordered into
// interleaved_dtype(plain)'s group blocks. rows must be a multiple of 8 and cols of 32.
std::vector<uint8_t> interleave_rows(const std::vector<uint8_t> &blocks, format::DType plain, size_t rows, size_t cols);

// The inverse of interleave_rows: group blocks back into plain row-major blocks.
std::vector<uint8_t> deinterleave_rows(const std::vector<uint8_t> &groups, format::DType plain, size_t rows,
                                       size_t cols);

}  // namespace mote::convert

// Row interleaving of quantized blocks (host side): plain rows (q8_0, ...) <-> their x8 twin's
// layout (q8_0x8, ...: the twin of format::DTypeTraits, runtime/src/kernels/quant.hpp and
// models/FORMAT.md). A lossless reorder: the bytes per row and the values are the plain type's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "format/format.hpp"

namespace mote::convert {

// The x8 dtype holding plain's blocks 8 rows at a time (q8_0 -> q8_0x8, ...: its format row's
// twin); none for the dtypes without one (f32, f16, bf16, and the x8 types themselves).
std::optional<format::DType> interleaved_dtype(format::DType plain);

// The plain dtype whose blocks dtype holds (q4_1x8 -> q4_1); any other dtype is its own.
format::DType plain_dtype(format::DType dtype);

// rows x cols values in plain blocks of plain (a dtype with an x8 twin), row-major, reordered
// into interleaved_dtype(plain)'s group blocks. rows must be a multiple of the twin's
// interleaved rows and cols of plain's block.
std::vector<uint8_t> interleave_rows(const std::vector<uint8_t> &blocks, format::DType plain, size_t rows, size_t cols);

// The inverse of interleave_rows: group blocks back into plain row-major blocks.
std::vector<uint8_t> deinterleave_rows(const std::vector<uint8_t> &groups, format::DType plain, size_t rows,
                                       size_t cols);

}  // namespace mote::convert

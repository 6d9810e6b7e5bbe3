// The converter's row per dtype it writes (ggml's from_float_ref): the matrix dtypes a user can
// ask for, each with its reference encoder. The block sizes, name, scale fields and x8 twin are
// the dtype's format::DTypeTraits row, and its decoder is the GGUF type table's to_float for the
// row's ggml type (dequant.hpp: the runtime's reference decoder); repack.cpp, the
// writer and every message listing the dtypes read these tables instead of naming types.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "format/format.hpp"

namespace mote::convert {

struct HostType {
  format::DType dtype;  // a plain one (x8 twins are written by repack.hpp from these blocks)
  // n_blocks blocks of the dtype (format row's block_elements values each; a float is a block)
  // from floats, bit for bit as the gguf Python package's gguf.quants.quantize.
  void (*quantize_ref)(const float *src, size_t n_blocks, uint8_t *dst);
};

// The row for dtype, or null when the converter does not write it (bf16, the x8 layouts).
const HostType *host_type(format::DType dtype);

// Every row, in the order messages list them ("f32, f16, q8_0, ..."); *count gets how many.
const HostType *host_types(size_t *count);

// "f32, f16, q8_0, q4_0 or q4_1": the dtypes matrices can be stored as, for messages.
std::string host_type_list();

// True for the block-quantized dtypes the converter writes (its host rows with blocks of values).
bool is_quantized(format::DType dtype);

// n values (a whole number of the dtype's blocks) as dtype, by its host row's quantize_ref;
// empty for a dtype the converter does not write.
std::vector<uint8_t> quantize(const float *values, size_t n, format::DType dtype);

// "a, b or c": names[0..n), as messages list choices.
std::string or_list(const char *const *names, size_t n);

}  // namespace mote::convert

// The safetensors container's header (host side): which tensors a file holds and where.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace mote::convert {

// One tensor of a .safetensors file, validated against the file's size.
struct SafetensorsTensor {
  std::string name;
  std::string dtype;            // "F32", "F16" or "BF16"
  std::vector<uint64_t> shape;  // outermost first
  uint64_t offset = 0;          // absolute file offset of the data
  uint64_t n_bytes = 0;
};

// Validates the header of a .safetensors file held in bytes[0, n). Tensors of other dtypes are
// rejected with a message naming them.
bool parse_safetensors(const uint8_t *bytes, size_t n, std::vector<SafetensorsTensor> *tensors, std::string *error);

}  // namespace mote::convert

// The safetensors container: an 8-byte header length, a JSON header naming each tensor's dtype,
// shape and data offsets, then the data. Only the header is read here (hf.cpp maps the data).
#include "hf/safetensors.hpp"

#include <algorithm>
#include <cstring>

#include "hf/json.hpp"
#include "message_text.hpp"

namespace mote::convert {
namespace {

constexpr uint64_t kMaxHeaderBytes = 100ull << 20;  // the safetensors spec's own limit
constexpr uint64_t kMaxElements = 1ull << 56;

}  // namespace

bool parse_safetensors(const uint8_t *bytes, size_t n, std::vector<SafetensorsTensor> *tensors, std::string *error) {
  tensors->clear();
  if (n < 8) {
    *error = "safetensors file of " + num(n) + " bytes is shorter than its 8-byte header length";
    return false;
  }
  uint64_t header_bytes = 0;
  std::memcpy(&header_bytes, bytes, 8);
  if (header_bytes > n - 8) {
    *error = "safetensors header length " + num(header_bytes) + " runs past the end of the file (" + num(n) + " bytes)";
    return false;
  }
  if (header_bytes > kMaxHeaderBytes) {
    *error = "safetensors header length " + num(header_bytes) + " is larger than the 100 MB limit";
    return false;
  }
  JsonValue header;
  if (!parse_json(reinterpret_cast<const char *>(bytes + 8), static_cast<size_t>(header_bytes), &header, error)) {
    *error = "safetensors header: " + *error;
    return false;
  }
  if (header.kind != JsonValue::Kind::object) {
    *error = "safetensors header is not a JSON object";
    return false;
  }
  const uint64_t data_start = 8 + header_bytes, data_size = n - data_start;
  uint64_t data_end = 0;  // the largest tensor end offset
  for (const auto &member : header.members) {
    if (member.first == "__metadata__") continue;
    const JsonValue &v = member.second;
    SafetensorsTensor t;
    t.name = member.first;
    const std::string what = "safetensors tensor '" + printable(t.name) + "'";
    const JsonValue *dtype = v.get("dtype"), *shape = v.get("shape"), *offsets = v.get("data_offsets");
    if (dtype == nullptr || !dtype->is_string() || shape == nullptr || shape->kind != JsonValue::Kind::array ||
        offsets == nullptr || offsets->kind != JsonValue::Kind::array) {
      *error = what + " lacks a dtype string, a shape array or a data_offsets array";
      return false;
    }
    t.dtype = dtype->text;
    // Every dtype the format names is parsed (a checkpoint keeps integer buffers such as BERT's
    // position_ids); only F32, F16 and BF16 tensors can become weights (convert_hf_tensor).
    static const struct {
      const char *name;
      uint64_t bytes;
    } kDtypes[] = {{"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8},
                   {"I32", 4}, {"I16", 2}, {"I8", 1},  {"U8", 1},   {"BOOL", 1}};
    uint64_t element_bytes = 0;
    for (const auto &d : kDtypes) element_bytes = t.dtype == d.name ? d.bytes : element_bytes;
    if (element_bytes == 0) {
      *error = what + " has dtype '" + printable(t.dtype) + "', which safetensors does not define";
      return false;
    }
    uint64_t elements = 1;
    for (const JsonValue &d : shape->items) {
      if (d.kind != JsonValue::Kind::number || !d.integral || d.integer < 0) {
        *error = what + " has a shape entry that is not a non-negative integer";
        return false;
      }
      const uint64_t dim = static_cast<uint64_t>(d.integer);
      if (dim != 0 && elements > kMaxElements / dim) {
        *error = what + " has too many elements (the product of its shape overflows)";
        return false;
      }
      elements *= dim;
      t.shape.push_back(dim);
    }
    if (offsets->items.size() != 2 || offsets->items[0].kind != JsonValue::Kind::number ||
        offsets->items[1].kind != JsonValue::Kind::number || !offsets->items[0].integral ||
        !offsets->items[1].integral || offsets->items[0].integer < 0 ||
        offsets->items[1].integer < offsets->items[0].integer) {
      *error = what + " has data_offsets that are not [begin, end] with 0 <= begin <= end";
      return false;
    }
    const uint64_t begin = static_cast<uint64_t>(offsets->items[0].integer);
    const uint64_t end = static_cast<uint64_t>(offsets->items[1].integer);
    if (end > data_size) {
      *error = what + " data [" + num(data_start + begin) + ", " + num(data_start + end) +
               ") runs past the end of the file (" + num(n) + " bytes)";
      return false;
    }
    if (end - begin != elements * element_bytes) {
      *error = what + " data_offsets hold " + num(end - begin) + " bytes but its shape and dtype need " +
               num(elements * element_bytes);
      return false;
    }
    t.offset = data_start + begin;
    t.n_bytes = end - begin;
    data_end = std::max(data_end, end);
    tensors->push_back(std::move(t));
  }
  // The header states the file's size: trailing bytes (a file padded or grown) are refused.
  if (data_size > data_end) {
    *error = "the file holds " + num(data_size - data_end) +
             " bytes past its last tensor's data (the safetensors format allows none)";
    return false;
  }
  return true;
}

}  // namespace mote::convert

#include "quant/value_checks.hpp"

#include <cmath>
#include <cstring>

#include "core/fp16.hpp"
#include "core/status.hpp"

namespace mote::convert {
namespace {

BadNumber bad(size_t index, float value, const char *what) { return BadNumber{true, index, value, what}; }

float half_at(const uint8_t *bytes) {
  uint16_t h;
  std::memcpy(&h, bytes, sizeof h);
  return fp16_to_f32(h);
}

}  // namespace

std::string describe(const BadNumber &b) {
  char number[32];
  float_text(b.value, number, sizeof number);
  const std::string where = " at index " + std::to_string(b.index);
  if (std::strcmp(b.what, "value") == 0) return std::string("holds ") + number + where;
  return std::string("has a ") + b.what + " of " + number + where;
}

BadNumber first_non_finite(const float *values, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(values[i])) return bad(i, values[i], "value");
  }
  return {};
}

BadNumber first_non_finite_stored(const uint8_t *bytes, size_t n_elements, format::DType dtype) {
  if (dtype == format::DType::f32) {
    for (size_t i = 0; i < n_elements; ++i) {
      float value;
      std::memcpy(&value, bytes + 4 * i, sizeof value);
      if (!std::isfinite(value)) return bad(i, value, "value");
    }
    return {};
  }
  if (dtype == format::DType::f16) {
    for (size_t i = 0; i < n_elements; ++i) {
      const float value = half_at(bytes + 2 * i);
      if (!std::isfinite(value)) return bad(i, value, "value");
    }
    return {};
  }
  // Each block keeps an fp16 scale, then (with two fields, as q4_1) an fp16 minimum, where its
  // format row says.
  const format::DTypeTraits &traits = format::traits_of(dtype);
  for (size_t block = 0; block < n_elements / traits.block_elements; ++block) {
    const uint8_t *b = bytes + block * traits.block_bytes + traits.scale_offset;
    const size_t first = block * traits.block_elements;
    if (!std::isfinite(half_at(b))) return bad(first, half_at(b), "block scale");
    if (traits.scale_fields > 1 && !std::isfinite(half_at(b + 2))) return bad(first, half_at(b + 2), "block minimum");
  }
  return {};
}

}  // namespace mote::convert

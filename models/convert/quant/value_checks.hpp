// The numbers a converter writes are checked before they are written: every source value (and
// every block scale and minimum of a quantized source) finite, every value representable in the
// dtype it is stored as (f16's largest is 65504; q8_0/q4_0/q4_1 keep f16 scales). A model whose
// weights hold NaN or inf would otherwise convert "successfully" and generate garbage.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "format/format.hpp"

namespace mote::convert {

// The first non-finite number found: a value, a block's scale or a q4_1 block's minimum.
struct BadNumber {
  bool found = false;
  size_t index = 0;  // of the value, or of the block's first element
  float value = 0.0f;
  const char *what = "value";  // "value", "block scale" or "block minimum"
};

// "holds nan at index 7", "has a block scale of inf at index 64".
std::string describe(const BadNumber &bad);

BadNumber first_non_finite(const float *values, size_t n);

// n_elements stored as dtype (a host row's: f32, f16 or blocks whose scales its format row places;
// never an x8 twin).
BadNumber first_non_finite_stored(const uint8_t *bytes, size_t n_elements, format::DType dtype);

}  // namespace mote::convert

// Finding NaN and inf in a validated model's tensors (mote_model_check_values, `mote inspect
// --check`). Opening a model checks its structure only: reading every weight would cost a full
// pass over the file at each load.
#pragma once

#include <cstdint>

#include "format/format.hpp"

namespace mote::format {

// The first non-finite number stored in tensor t (its bytes at data): an element of a float
// dtype, or the scale or minimum of a quantized block (finite scales make every value finite).
// Returns true and fills *index (the element; a block's first element) and *value when one is
// found. t must have passed open_model's checks.
bool find_non_finite(const TensorEntry &t, const uint8_t *data, uint64_t *index, float *value);

}  // namespace mote::format

// Validating reader of .mote bytes: after open_model succeeds every offset, size, shape, dtype
// and tokenizer table has been checked, so the forward pass reads them without checks.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/status.hpp"
#include "format/format.hpp"
#include "format/tokenizer_view.hpp"

namespace mote::format {

struct ModelView {
  const uint8_t *bytes = nullptr;
  size_t size = 0;
  ModelConfig config{};
  const TensorEntry *tensors = nullptr;  // the table, in the file
  uint32_t n_tensors = 0;
  uint64_t weight_bytes = 0;  // sum of tensor sizes
  uint32_t tokenizer_kind = 0;
  uint32_t chat_template = 0;
  TokenizerView tokenizer;
};

// Validates bytes[0, n) as a .mote file and fills *view. Never reads outside [bytes, bytes+n).
Status open_model(const uint8_t *bytes, size_t n, ModelView *view, ErrorSink err);

// The tensor with this role and layer (kNoLayer for global ones), or null.
const TensorEntry *find_tensor(const ModelView &view, Role role, uint32_t layer);

// The expected shape of a tensor for this config: n_dims and rows/cols. False when the role is
// not part of this architecture.
bool expected_shape(const ModelConfig &config, Role role, uint32_t *n_dims, uint32_t *rows, uint32_t *cols);

}  // namespace mote::format

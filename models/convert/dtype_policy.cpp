#include "dtype_policy.hpp"

#include <algorithm>
#include <cmath>

#include "core/status.hpp"
#include "quant/dequant.hpp"
#include "quant/host_types.hpp"
#include "quant/repack.hpp"
#include "quant/value_checks.hpp"

namespace mote::convert {

bool check_matrix_dtype(format::DType dtype, std::string *error) {
  if (host_type(dtype) != nullptr) return true;
  const format::DTypeTraits *traits = format::dtype_traits(static_cast<uint32_t>(dtype));
  *error =
      "matrices are stored as " + host_type_list() + ", not " + (traits != nullptr ? traits->name : "an unknown dtype");
  return false;
}

namespace {

// The .mote dtype the converter writes whose bytes are exactly those of a ggml type, if there is
// one (BF16 has none: the runtime computes in f16/f32, not bf16).
std::optional<format::DType> same_layout_dtype(uint32_t ggml_type) {
  size_t n = 0;
  const HostType *rows = host_types(&n);
  for (size_t i = 0; i < n; ++i) {
    if (format::traits_of(rows[i].dtype).ggml_type == ggml_type) return rows[i].dtype;
  }
  return std::nullopt;
}

std::string tensor_display_name(const TensorSlot &slot) {
  format::TensorEntry entry{};
  entry.role = static_cast<uint32_t>(slot.role);
  entry.layer = slot.layer;
  char name[64];
  format::tensor_name(entry, name, sizeof name);
  return name;
}

// The dtype a matrix of plain blocks is written as: those blocks, or their x8 twin where the
// layout interleaves and the rows are whole groups of 8.
format::DType with_layout(format::DType blocks, const TensorSlot &slot, BlockLayout layout) {
  const std::optional<format::DType> interleaved = interleaved_dtype(blocks);
  if (layout == BlockLayout::interleaved && interleaved &&
      slot.rows % format::traits_of(*interleaved).interleaved_rows == 0) {
    return *interleaved;
  }
  return blocks;
}

}  // namespace

format::DType output_dtype(const TensorSlot &slot, uint32_t ggml_type, std::optional<format::DType> requested,
                           BlockLayout layout, Mix mix, const format::ModelConfig *config) {
  if (slot.cols == 0) return format::DType::f32;  // the format keeps vectors in f32
  if (requested && mix != Mix::none && config != nullptr) {
    return with_layout(recipe_dtype(mix, *requested, {slot.role, slot.layer, slot.cols}, *config), slot, layout);
  }
  format::DType blocks = requested ? *requested : same_layout_dtype(ggml_type).value_or(format::DType::f16);
  // As llama-quantize does: 4-bit requests keep the token embedding and the classifier in 8 bits.
  // The classifier's errors reach every logit (the perplexity cost: bench/README.md, "Tuning decisions").
  // "4-bit" is any block type below 8 bits a value (q4_0's 4.5, q4_1's 5).
  const bool embedding_or_classifier = slot.role == format::Role::token_embedding || slot.role == format::Role::output;
  const format::DTypeTraits &row = format::traits_of(blocks);
  const bool below_8_bits = row.block_elements > 1 && row.block_bytes < row.block_elements;
  if (requested && below_8_bits && embedding_or_classifier) {
    blocks = format::DType::q8_0;
  }
  // As llama-quantize falls back for rows its blocks cannot tile: a requested quantized type
  // stores a matrix whose rows are not whole 32-value blocks in f16 (aidreams260K's FFN rows
  // hold 172 values; the rest of the model still quantizes).
  if (requested && is_quantized(blocks) && slot.cols % format::traits_of(blocks).block_elements != 0) {
    return format::DType::f16;
  }
  return with_layout(blocks, slot, layout);
}

bool add_tensor(const TensorSlot &slot, const SourceTensor &source, std::optional<format::DType> requested,
                BlockLayout layout, ModelData *model, std::string *error, Mix mix) {
  const bool vector = slot.cols == 0;
  TensorData t;
  t.role = slot.role;
  t.layer = slot.layer;
  t.dtype = output_dtype(slot, source.ggml_type, requested, layout, mix, &model->config);
  t.n_dims = vector ? 1 : 2;
  t.rows = static_cast<uint32_t>(slot.rows);
  t.cols = vector ? 1 : static_cast<uint32_t>(slot.cols);
  const size_t n = static_cast<size_t>(slot.rows) * t.cols;
  const format::DType blocks = plain_dtype(t.dtype);  // the blocks before any interleaving
  const format::DTypeTraits *traits = &format::traits_of(blocks);
  if (t.cols % traits->block_elements != 0) {
    *error = "tensor '" + tensor_display_name(slot) + "' cannot be stored as " + traits->name + ": its rows hold " +
             std::to_string(t.cols) + " values, not whole " + std::to_string(traits->block_elements) +
             "-value blocks (store it as f16 or f32)";
    return false;
  }
  if (same_layout_dtype(source.ggml_type) == blocks) {
    // Already in the output's blocks: copied as stored, so a GGUF Q4_1 tensor keeps its bytes.
    const BadNumber bad = first_non_finite_stored(source.bytes, n, blocks);
    if (bad.found) {
      *error = "tensor '" + tensor_display_name(slot) + "' " + describe(bad);
      return false;
    }
    const size_t n_bytes = n / traits->block_elements * traits->block_bytes;
    t.bytes.assign(source.bytes, source.bytes + n_bytes);
  } else {
    std::vector<float> values(n);
    if (!dequantize_ggml(source.ggml_type, source.bytes, n, values.data())) {
      *error = "tensor '" + tensor_display_name(slot) + "' has a source type mote cannot read";
      return false;
    }
    // A quantized source's bad scale or minimum makes its block's values non-finite.
    BadNumber bad = first_non_finite(values.data(), n);
    if (bad.found) {
      *error = "tensor '" + tensor_display_name(slot) + "' " + describe(bad);
      return false;
    }
    t.bytes = quantize(values.data(), n, blocks);
    // Finite values that still overflow: beyond f16's 65504, or a block scale beyond it.
    bad = first_non_finite_stored(t.bytes.data(), n, blocks);
    if (bad.found) {
      // The value to name: the one that overflowed, or the largest of the block whose scale did.
      size_t worst = bad.index;
      for (size_t i = bad.index; is_quantized(blocks) && i < bad.index + traits->block_elements; ++i) {
        if (std::fabs(values[i]) > std::fabs(values[worst])) worst = i;
      }
      char number[32];
      *error = "tensor '" + tensor_display_name(slot) + "' does not fit " + traits->name + ": the value " +
               float_text(values[worst], number, sizeof number) + " at index " + std::to_string(worst) +
               (is_quantized(blocks) ? " needs a block scale" : " is") +
               " beyond f16's largest, 65504 (convert with --dtype f32)";
      return false;
    }
  }
  if (t.dtype != blocks) t.bytes = interleave_rows(t.bytes, blocks, t.rows, t.cols);
  model->tensors.push_back(std::move(t));
  return true;
}

std::vector<uint8_t> encode_floats(const float *values, size_t n, format::DType dtype) {
  return quantize(values, n, dtype == format::DType::f16 ? format::DType::f16 : format::DType::f32);
}

}  // namespace mote::convert

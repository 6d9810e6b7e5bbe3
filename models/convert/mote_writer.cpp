#include "mote_writer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>

#include "core/fp16.hpp"
#include "core/status.hpp"
#include "format/reader.hpp"
#include "io/file_map.hpp"
#include "mote/mote.h"
#include "quant/dequant.hpp"
#include "quant/host_types.hpp"
#include "quant/quantize_recipe.hpp"
#include "quant/repack.hpp"
#include "quant/value_checks.hpp"

namespace mote::convert {
namespace {

size_t align_up(size_t n, size_t alignment) { return (n + alignment - 1) / alignment * alignment; }

template <typename T>
void put(std::vector<uint8_t> &out, size_t offset, const T &value) {
  std::memcpy(out.data() + offset, &value, sizeof value);
}

std::vector<uint8_t> serialize_tokenizer(const TokenizerData &tok) {
  const uint32_t n = static_cast<uint32_t>(tok.pieces.size());
  std::vector<uint32_t> offsets(n + 1, 0);
  uint32_t max_piece = 0;
  for (uint32_t i = 0; i < n; ++i) {
    offsets[i + 1] = offsets[i] + static_cast<uint32_t>(tok.pieces[i].size());
    max_piece = std::max(max_piece, static_cast<uint32_t>(tok.pieces[i].size()));
  }
  // Sorted by (bytes as unsigned, id): what the runtime's binary search and validation expect.
  std::vector<uint32_t> sorted(n);
  std::iota(sorted.begin(), sorted.end(), 0u);
  std::sort(sorted.begin(), sorted.end(), [&](uint32_t a, uint32_t b) {
    const std::string &pa = tok.pieces[a], &pb = tok.pieces[b];
    const int c = std::memcmp(pa.data(), pb.data(), std::min(pa.size(), pb.size()));
    if (c != 0) return c < 0;
    if (pa.size() != pb.size()) return pa.size() < pb.size();
    return a < b;
  });

  format::TokenizerHeader h{};
  h.kind = static_cast<uint32_t>(tok.kind);
  h.n_tokens = n;
  h.flags = tok.flags | (tok.pre_tokenizer != format::PreTokenizer::gpt2 ? uint32_t{format::kTokPreTokenizer} : 0u);
  h.chat_template = static_cast<uint32_t>(tok.chat_template);
  h.pre_tokenizer = static_cast<uint32_t>(tok.pre_tokenizer);
  h.bos_id = tok.bos_id;
  h.eos_id = tok.eos_id;
  h.unk_id = tok.unk_id;
  h.max_piece_bytes = max_piece;
  size_t at = sizeof h;
  h.piece_offsets_offset = at;
  at += (n + 1) * 4ull;
  h.piece_bytes_offset = at;
  at = align_up(at + offsets[n], 4);
  h.scores_offset = at;
  at += n * 4ull;
  h.types_offset = at;
  at = align_up(at + n, 4);
  h.sorted_ids_offset = at;
  at += n * 4ull;
  // Merges sorted by (left, right) for the encoder's binary search; the rank keeps the order.
  std::vector<format::BpeMerge> merges = tok.merges;
  for (size_t i = 0; i < merges.size(); ++i) merges[i].rank = static_cast<uint32_t>(i);
  std::sort(merges.begin(), merges.end(), [](const format::BpeMerge &a, const format::BpeMerge &b) {
    return a.left != b.left ? a.left < b.left : a.right < b.right;
  });
  h.n_merges = static_cast<uint32_t>(merges.size());
  h.merges_offset = merges.empty() ? 0 : at;
  at += merges.size() * sizeof(format::BpeMerge);

  std::vector<uint8_t> out(at, 0);
  put(out, 0, h);
  std::memcpy(out.data() + h.piece_offsets_offset, offsets.data(), offsets.size() * 4);
  for (uint32_t i = 0; i < n; ++i) {
    std::memcpy(out.data() + h.piece_bytes_offset + offsets[i], tok.pieces[i].data(), tok.pieces[i].size());
  }
  std::memcpy(out.data() + h.scores_offset, tok.scores.data(), n * 4ull);
  std::memcpy(out.data() + h.types_offset, tok.types.data(), n);
  std::memcpy(out.data() + h.sorted_ids_offset, sorted.data(), n * 4ull);
  if (!merges.empty())
    std::memcpy(out.data() + h.merges_offset, merges.data(), merges.size() * sizeof(format::BpeMerge));
  return out;
}

}  // namespace

std::vector<TensorSlot> tensor_slots(const format::ModelConfig &c) {
  using format::Role;
  // File order: the token embedding, the other global inputs in role order, each layer's tensors
  // in role order, the head.
  static const Role kLast[] = {Role::output_norm, Role::output_norm_bias, Role::output};
  std::vector<Role> first = {Role::token_embedding};
  for (uint32_t role = 1; role < format::kRoleCount; ++role) {
    const Role r = static_cast<Role>(role);
    if (!format::role_info(role)->per_layer && r != Role::token_embedding &&
        std::find(std::begin(kLast), std::end(kLast), r) == std::end(kLast))
      first.push_back(r);
  }
  const format::BlockSpec spec = format::block_spec(c);
  std::vector<TensorSlot> slots;
  auto add = [&](Role role, uint32_t layer) {
    if (!format::role_needed(spec, role)) return;
    uint32_t n_dims = 0, rows = 0, cols = 0;
    format::expected_shape(c, role, &n_dims, &rows, &cols);
    slots.push_back({role, layer, rows, n_dims == 2 ? cols : 0});
  };
  for (Role role : first) add(role, format::kNoLayer);
  for (uint32_t l = 0; l < c.n_layers; ++l) {
    for (uint32_t role = 1; role < format::kRoleCount; ++role) {
      if (format::role_info(role)->per_layer) add(static_cast<Role>(role), l);
    }
  }
  for (Role role : kLast) add(role, format::kNoLayer);
  return slots;
}

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

// blocks, or its x8 twin where the layout interleaves and the rows are whole groups of 8.
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

std::vector<uint8_t> serialize(const ModelData &model) {
  const size_t align = format::kAlignment;
  const std::vector<uint8_t> tokenizer = serialize_tokenizer(model.tokenizer);

  format::FileHeader h{};
  std::memcpy(h.magic, format::kMagic, sizeof h.magic);
  h.version = format::kVersion;
  h.header_size = sizeof(format::FileHeader);
  h.config_size = sizeof(format::ModelConfig);
  h.tensor_entry_size = sizeof(format::TensorEntry);
  h.config_offset = sizeof(format::FileHeader);
  h.tensor_table_offset = align_up(h.config_offset + sizeof(format::ModelConfig), align);
  h.tensor_count = static_cast<uint32_t>(model.tensors.size());
  h.tokenizer_offset = align_up(h.tensor_table_offset + model.tensors.size() * sizeof(format::TensorEntry), align);
  h.tokenizer_size = tokenizer.size();
  h.data_offset = align_up(h.tokenizer_offset + tokenizer.size(), align);

  std::vector<format::TensorEntry> entries;
  size_t at = h.data_offset;
  for (const TensorData &t : model.tensors) {
    format::TensorEntry e{};
    e.role = static_cast<uint32_t>(t.role);
    e.layer = t.layer;
    e.dtype = static_cast<uint32_t>(t.dtype);
    e.n_dims = t.n_dims;
    e.shape[0] = t.rows;
    e.shape[1] = t.n_dims == 2 ? t.cols : 1;
    e.shape[2] = e.shape[3] = 1;
    e.offset = at;
    e.size = t.bytes.size();
    entries.push_back(e);
    at = align_up(at + t.bytes.size(), align);
  }
  h.file_size = align_up(at, align);
  h.data_size = h.file_size - h.data_offset;

  std::vector<uint8_t> out(h.file_size, 0);
  put(out, h.config_offset, model.config);
  for (size_t i = 0; i < entries.size(); ++i) put(out, h.tensor_table_offset + i * sizeof entries[i], entries[i]);
  std::memcpy(out.data() + h.tokenizer_offset, tokenizer.data(), tokenizer.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    std::memcpy(out.data() + entries[i].offset, model.tensors[i].bytes.data(), model.tensors[i].bytes.size());
  }
  h.payload_checksum = format::payload_checksum(out.data() + sizeof h, out.size() - sizeof h);
  put(out, 0, h);
  return out;
}

bool check_opens(const std::vector<uint8_t> &bytes, std::string *error) {
  // mote_model_open reads only 64-byte aligned bytes (as an mmap is).
  std::unique_ptr<void, void (*)(void *)> aligned(std::aligned_alloc(format::kAlignment, align_up(bytes.size(), 64)),
                                                  std::free);
  if (aligned == nullptr) {
    *error = "cannot allocate " + std::to_string(bytes.size()) + " bytes to check the converted model";
    return false;
  }
  std::memcpy(aligned.get(), bytes.data(), bytes.size());
  mote_model model;
  char message[256] = "";
  if (mote_model_open(aligned.get(), bytes.size(), &model, message, sizeof message) != MOTE_OK) {
    *error = std::string("the converted model would not open: ") + message;
    return false;
  }
  return true;
}

bool write_file(const std::string &path, const std::vector<uint8_t> &bytes, std::string *error) {
  return posix::write_file_atomically(path, bytes.data(), bytes.size(), error);
}

}  // namespace mote::convert

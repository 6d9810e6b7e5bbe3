#include "mote_writer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>

#include "core/status.hpp"
#include "format/reader.hpp"
#include "io/file_map.hpp"
#include "mote/mote.h"

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

// Fixtures shared by the loader tests (test_loader*.cpp): the small valid model built in memory,
// reading and patching its bytes, and opening bytes held in a buffer of exactly their size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "dtype_policy.hpp"
#include "families.hpp"
#include "format/format.hpp"
#include "mote/mote.h"
#include "mote_writer.hpp"
#include "test_support.hpp"
#include "text/tokenizer.hpp"

namespace mote_loader_test {

using mote::format::DType;
using mote::format::FileHeader;
using mote::format::ModelConfig;
using mote::format::Role;
using mote::format::TensorEntry;
using mote::format::TokenizerHeader;
using Bytes = std::vector<uint8_t>;

constexpr uint32_t kDim = 32, kLayers = 2, kHeads = 4, kKvHeads = 2, kHeadDim = 8, kFfn = 48, kSeq = 16;
const char *const kWords[] = {" ",   "a",   "b",    "c",  "d",   "e",   " a",   " b", "ab",
                              " ab", "abc", " abc", "de", " de", "the", " the", "he", "th"};
constexpr uint32_t kVocab = 3 + 256 + sizeof kWords / sizeof kWords[0];

// ---- building the valid model ----------------------------------------------------------------

inline mote::convert::TensorData make_tensor(Role role, uint32_t layer, DType dtype, uint32_t rows, uint32_t cols,
                                             std::mt19937 &rng, bool ones = false) {
  std::uniform_real_distribution<float> dist(-0.2f, 0.2f);
  std::vector<float> values(static_cast<size_t>(rows) * cols);
  for (float &v : values) v = ones ? 1.0f : dist(rng);
  mote::convert::TensorData t;
  t.role = role;
  t.layer = layer;
  t.dtype = dtype;
  t.n_dims = cols == 1 && (role == Role::attn_norm || role == Role::ffn_norm || role == Role::output_norm) ? 1 : 2;
  t.rows = rows;
  t.cols = cols;
  t.bytes = mote::convert::encode_floats(values.data(), values.size(), dtype);
  return t;
}

inline mote::convert::ModelData valid_model_data(bool with_classifier = false) {
  std::mt19937 rng(1234);
  mote::convert::ModelData m;
  ModelConfig &c = m.config;
  c = mote::convert::llama_config();
  c.dim = kDim;
  c.n_layers = kLayers;
  c.n_heads = kHeads;
  c.n_kv_heads = kKvHeads;
  c.head_dim = kHeadDim;
  c.ffn_dim = kFfn;
  c.vocab_size = kVocab;
  c.max_seq_len = kSeq;
  c.bos_id = 1;
  c.eos_id = 2;
  c.flags = with_classifier ? 0u : static_cast<uint32_t>(mote::format::kFlagTiedEmbeddings);

  const uint32_t q_dim = kHeads * kHeadDim, kv_dim = kKvHeads * kHeadDim, G = mote::format::kNoLayer;
  m.tensors.push_back(make_tensor(Role::token_embedding, G, DType::f32, kVocab, kDim, rng));
  for (uint32_t l = 0; l < kLayers; ++l) {
    // One f16 matrix per layer so both weight paths run in the fuzz loop.
    m.tensors.push_back(make_tensor(Role::attn_norm, l, DType::f32, kDim, 1, rng, true));
    m.tensors.push_back(make_tensor(Role::attn_q, l, DType::f16, q_dim, kDim, rng));
    m.tensors.push_back(make_tensor(Role::attn_k, l, DType::f32, kv_dim, kDim, rng));
    m.tensors.push_back(make_tensor(Role::attn_v, l, DType::f32, kv_dim, kDim, rng));
    m.tensors.push_back(make_tensor(Role::attn_output, l, DType::f32, kDim, q_dim, rng));
    m.tensors.push_back(make_tensor(Role::ffn_norm, l, DType::f32, kDim, 1, rng, true));
    m.tensors.push_back(make_tensor(Role::ffn_gate, l, DType::f32, kFfn, kDim, rng));
    m.tensors.push_back(make_tensor(Role::ffn_down, l, DType::f32, kDim, kFfn, rng));
    m.tensors.push_back(make_tensor(Role::ffn_up, l, DType::f32, kFfn, kDim, rng));
  }
  m.tensors.push_back(make_tensor(Role::output_norm, G, DType::f32, kDim, 1, rng, true));
  if (with_classifier) m.tensors.push_back(make_tensor(Role::output, G, DType::f32, kVocab, kDim, rng));

  mote::convert::TokenizerData &t = m.tokenizer;
  t.bos_id = 1;
  t.eos_id = 2;
  t.unk_id = 0;
  t.pieces = {"<unk>", "<s>", "</s>"};
  t.types = {mote::kTokenUnknown, mote::kTokenControl, mote::kTokenControl};
  t.scores = {0.0f, 0.0f, 0.0f};
  for (int b = 0; b < 256; ++b) {
    char piece[8];
    std::snprintf(piece, sizeof piece, "<0x%02X>", b);
    t.pieces.push_back(piece);
    t.types.push_back(mote::kTokenByte);
    t.scores.push_back(0.0f);
  }
  float score = -1.0f;
  for (const char *w : kWords) {
    t.pieces.push_back(w);
    t.types.push_back(mote::kTokenNormal);
    t.scores.push_back(score);
    score -= 0.5f;
  }
  return m;
}

inline const Bytes &valid_file() {
  static const Bytes bytes = mote::convert::serialize(valid_model_data());
  return bytes;
}

// ---- reading and patching the file -------------------------------------------------------------

template <typename T>
T get(const Bytes &b, size_t offset) {
  T value;
  std::memcpy(&value, b.data() + offset, sizeof value);
  return value;
}

template <typename T>
void set(Bytes &b, size_t offset, const T &value) {
  REQUIRE(offset + sizeof value <= b.size());
  std::memcpy(b.data() + offset, &value, sizeof value);
}

inline FileHeader header_of(const Bytes &b) { return get<FileHeader>(b, 0); }

// Recomputes the payload checksum so a mutation inside the payload reaches the check it targets.
inline void refresh_checksum(Bytes &b) {
  if (b.size() < sizeof(FileHeader)) return;
  const uint64_t sum = mote::format::payload_checksum(b.data() + sizeof(FileHeader), b.size() - sizeof(FileHeader));
  std::memcpy(b.data() + offsetof(FileHeader, payload_checksum), &sum, sizeof sum);
}

// ---- opening ----------------------------------------------------------------------------------

// Exactly n bytes at a 64-byte aligned address (plus `shift` bytes before, to misalign it), so
// AddressSanitizer reports any read past the file's end.
struct ExactBuffer {
  struct Free {
    void operator()(void *p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t, Free> storage;
  uint8_t *data = nullptr;
  size_t size = 0;

  ExactBuffer(const Bytes &bytes, size_t shift = 0) : size(bytes.size()) {
    void *p = nullptr;
    REQUIRE(posix_memalign(&p, 64, bytes.size() + shift + (bytes.empty() && shift == 0 ? 1 : 0)) == 0);
    storage.reset(static_cast<uint8_t *>(p));
    data = storage.get() + shift;
    if (!bytes.empty()) std::memcpy(data, bytes.data(), bytes.size());
  }
};

struct Opened {
  mote_status status;
  std::string message;
};

inline Opened open_bytes(const Bytes &bytes, size_t shift = 0) {
  ExactBuffer buffer(bytes, shift);
  mote_model model;
  char message[256];
  std::memset(message, 0, sizeof message);
  const mote_status status = mote_model_open(buffer.data, buffer.size, &model, message, sizeof message);
  return {status, message};
}

}  // namespace mote_loader_test

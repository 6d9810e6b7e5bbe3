// A tiny Llama around a tokenizer (host side), opened both through the C API and as a format
// view: how tokenizer tests get a validated TokenizerView from converter tables.
#pragma once

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "dtype_policy.hpp"
#include "families.hpp"
#include "format/reader.hpp"
#include "gguf/gguf_meta.hpp"
#include "mote/mote.h"
#include "mote_writer.hpp"
#include "test_support.hpp"

namespace mote_test {

inline mote::convert::TensorData small_tensor(mote::format::Role role, uint32_t layer, uint32_t rows, uint32_t cols,
                                              bool vector = false) {
  std::vector<float> values(static_cast<size_t>(rows) * cols, 0.01f);
  mote::convert::TensorData t;
  t.role = role;
  t.layer = layer;
  t.dtype = mote::format::DType::f32;
  t.n_dims = vector ? 1 : 2;
  t.rows = rows;
  t.cols = cols;
  t.bytes = mote::convert::encode_floats(values.data(), values.size(), mote::format::DType::f32);
  return t;
}

// A tiny Llama around a tokenizer, opened through the C API.
struct TinyModel {
  mote_test::AlignedBuffer bytes{0};
  mote_model model{};
  mote::format::ModelView view;
};

// The tiny Llama's model data (the converter's form) around a tokenizer.
inline mote::convert::ModelData tiny_model_data(const mote::convert::TokenizerData &tokenizer) {
  constexpr uint32_t kDim = 8, kFfn = 16;
  const uint32_t vocab = static_cast<uint32_t>(tokenizer.pieces.size());
  mote::convert::ModelData m;
  m.config = mote::convert::llama_config();
  m.config.dim = kDim;
  m.config.n_layers = 1;
  m.config.n_heads = 1;
  m.config.n_kv_heads = 1;
  m.config.head_dim = kDim;
  m.config.ffn_dim = kFfn;
  m.config.vocab_size = vocab;
  m.config.max_seq_len = 8;
  m.config.bos_id = tokenizer.bos_id;
  m.config.eos_id = tokenizer.eos_id;
  m.config.flags = static_cast<uint32_t>(mote::format::kFlagTiedEmbeddings);
  const uint32_t G = mote::format::kNoLayer;
  m.tensors.push_back(small_tensor(mote::format::Role::token_embedding, G, vocab, kDim));
  m.tensors.push_back(small_tensor(mote::format::Role::attn_norm, 0, kDim, 1, true));
  m.tensors.push_back(small_tensor(mote::format::Role::attn_q, 0, kDim, kDim));
  m.tensors.push_back(small_tensor(mote::format::Role::attn_k, 0, kDim, kDim));
  m.tensors.push_back(small_tensor(mote::format::Role::attn_v, 0, kDim, kDim));
  m.tensors.push_back(small_tensor(mote::format::Role::attn_output, 0, kDim, kDim));
  m.tensors.push_back(small_tensor(mote::format::Role::ffn_norm, 0, kDim, 1, true));
  m.tensors.push_back(small_tensor(mote::format::Role::ffn_gate, 0, kFfn, kDim));
  m.tensors.push_back(small_tensor(mote::format::Role::ffn_down, 0, kDim, kFfn));
  m.tensors.push_back(small_tensor(mote::format::Role::ffn_up, 0, kFfn, kDim));
  m.tensors.push_back(small_tensor(mote::format::Role::output_norm, G, kDim, 1, true));
  m.tokenizer = tokenizer;
  return m;
}

inline std::unique_ptr<TinyModel> open_tiny_model(const mote::convert::TokenizerData &tokenizer) {
  auto tiny = std::make_unique<TinyModel>();
  tiny->bytes = mote_test::AlignedBuffer::copy_of(mote::convert::serialize(tiny_model_data(tokenizer)));
  char message[256] = "";
  REQUIRE_MESSAGE(
      mote_model_open(tiny->bytes.data.get(), tiny->bytes.size, &tiny->model, message, sizeof message) == MOTE_OK,
      message);
  REQUIRE(mote::format::open_model(tiny->bytes.data.get(), tiny->bytes.size, &tiny->view,
                                   mote::ErrorSink{message, sizeof message}) == MOTE_OK);
  return tiny;
}

// The text ids detokenize to, each piece after its predecessor (mote_detokenize).
inline std::string detokenize(const mote_model &model, const std::vector<int32_t> &ids) {
  std::string out;
  int32_t prev = -1;
  for (const int32_t id : ids) {
    char piece[512];
    size_t n = 0;
    REQUIRE(mote_detokenize(&model, prev, id, piece, sizeof piece, &n) == MOTE_OK);
    out.append(piece, n);
    prev = id;
  }
  return out;
}

// A file in mote's cache ($XDG_CACHE_HOME/mote, default ~/.cache/mote).
inline std::string cache_path(const std::string &name) {
  const char *cache = std::getenv("XDG_CACHE_HOME");
  const char *home = std::getenv("HOME");
  return (cache != nullptr && cache[0] != '\0' ? std::string(cache) : std::string(home ? home : ".") + "/.cache") +
         "/mote/" + name;
}

// The tokenizer of a GGUF file (a vocabulary-only one too) imported by mote's converter, around
// a tiny model; tweak may change the imported tables first.
template <typename Tweak>
std::unique_ptr<TinyModel> open_gguf_tokenizer(const std::string &path, Tweak tweak) {
  const std::vector<unsigned char> bytes = read_file(path);
  mote::convert::GgufFile file;
  std::string error;
  REQUIRE_MESSAGE(mote::convert::parse_gguf(bytes.data(), bytes.size(), &file, &error), path << ": " << error);
  std::vector<std::string> tokens;
  REQUIRE(file.strings("tokenizer.ggml.tokens", &tokens, &error));
  mote::convert::Meta meta{file, &error};
  mote::convert::ModelData m;
  REQUIRE_MESSAGE(mote::convert::map_tokenizer(file, meta, static_cast<uint32_t>(tokens.size()), &m, &error),
                  path << ": " << error);
  tweak(m.tokenizer);
  return open_tiny_model(m.tokenizer);
}

inline std::unique_ptr<TinyModel> open_gguf_tokenizer(const std::string &path) {
  return open_gguf_tokenizer(path, [](mote::convert::TokenizerData &) {});
}

}  // namespace mote_test

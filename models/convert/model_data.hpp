// A model in memory between an importer and a writer (host side): its config, its tensors in the
// .mote dtypes chosen for them (dtype_policy.hpp) and its tokenizer. mote_writer.hpp serializes
// it as .mote, gguf/gguf_writer.hpp as GGUF.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "format/format.hpp"

namespace mote::convert {

struct TensorData {
  format::Role role;
  uint32_t layer;  // format::kNoLayer for global tensors
  format::DType dtype;
  uint32_t n_dims;      // 1 or 2
  uint32_t rows, cols;  // cols = 1 for vectors
  std::vector<uint8_t> bytes;
};

struct TokenizerData {
  format::TokenizerKind kind = format::TokenizerKind::sentencepiece_bpe;
  uint32_t flags = format::kTokAddSpacePrefix;
  format::ChatTemplate chat_template = format::ChatTemplate::none;
  format::PreTokenizer pre_tokenizer = format::PreTokenizer::gpt2;  // byte-level BPE only
  int32_t bos_id = -1, eos_id = -1, unk_id = -1;
  std::vector<std::string> pieces;
  std::vector<float> scores;
  std::vector<uint8_t> types;
  // Byte-level BPE: pieces hold raw bytes; merges listed in priority order (first = rank 0),
  // each with left, right and result ids filled in (rank is assigned from the position).
  std::vector<format::BpeMerge> merges;
};

struct ModelData {
  format::ModelConfig config{};
  std::vector<TensorData> tensors;
  TokenizerData tokenizer;
  std::vector<std::string> notes;  // what the importer left out on purpose, one line each, for the user
};

// One tensor a model needs, shaped by its config (cols = 0 for a vector).
struct TensorSlot {
  format::Role role;
  uint32_t layer;  // format::kNoLayer for global tensors
  uint64_t rows, cols;
};

// Every tensor of a config in file order, as its block spec needs them (format::role_needed):
// the embedding (and learned positions), each layer's, the final norm, then the classifier
// unless the config ties it to the embedding.
std::vector<TensorSlot> tensor_slots(const format::ModelConfig &config);

}  // namespace mote::convert

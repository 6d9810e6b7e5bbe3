// The two small models the text targets use, converted once per process from the committed
// goldens: a byte-level BPE vocabulary with ChatML (tiny_llama.gguf) and a SentencePiece one
// (tiny_mha.bin with tiny_tok64.bin).
#pragma once

#include "fuzz_support.hpp"
#include "gguf.hpp"
#include "llama2c.hpp"

namespace mote_fuzz {

struct OpenModel {
  std::unique_ptr<AlignedBytes> bytes;
  mote_model model{};
};

inline OpenModel open_converted(const mote::convert::ModelData &data) {
  const std::vector<uint8_t> serialized = mote::convert::serialize(data);
  OpenModel m;
  m.bytes = std::make_unique<AlignedBytes>(serialized.data(), serialized.size());
  FUZZ_CHECK(mote_model_open(m.bytes->data.get(), m.bytes->size, &m.model, nullptr, 0) == MOTE_OK);
  return m;
}

inline const mote_model &byte_level_model() {
  static const OpenModel m = [] {
    mote::convert::ModelData data;
    std::string error;
    FUZZ_CHECK(mote::convert::load_gguf(MOTE_FUZZ_DATA_DIR "/tiny_llama.gguf", {}, &data, &error));
    return open_converted(data);
  }();
  return m.model;
}

inline const mote_model &sentencepiece_model() {
  static const OpenModel m = [] {
    mote::convert::ModelData data;
    std::string error;
    FUZZ_CHECK(mote::convert::load_llama2c(MOTE_FUZZ_DATA_DIR "/tiny_mha.bin", MOTE_FUZZ_DATA_DIR "/tiny_tok64.bin", {},
                                           &data, &error));
    return open_converted(data);
  }();
  return m.model;
}

}  // namespace mote_fuzz

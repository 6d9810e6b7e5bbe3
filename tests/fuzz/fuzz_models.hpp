// The two small models the text targets use, converted once per process from the committed
// goldens: a byte-level BPE vocabulary with ChatML (tiny_llama.gguf) and a SentencePiece one
// (tiny_mha.bin with tiny_tok64.bin). Variants (each converted once) give them another
// pre-tokenizer or chat template and spell some tokens as the new templates' control tokens,
// so every turn style and pre-tokenizer meets hostile text.
#pragma once

#include <map>
#include <utility>

#include "fuzz_support.hpp"
#include "gguf/gguf.hpp"
#include "llama2c/llama2c.hpp"

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

// The control tokens of every turn style (text/chat.cpp) and a user-defined one.
inline const std::vector<std::string> &template_tokens() {
  static const std::vector<std::string> tokens = {"<start_of_turn>",   "<end_of_turn>", "<|start_header_id|>",
                                                  "<|end_header_id|>", "<|eot_id|>",    "<|user|>",
                                                  "<|assistant|>",     "<|system|>",    "<|end|>"};
  return tokens;
}

// Respells the last normal multi-byte tokens that no merge uses as the template tokens (control),
// then one more as "\n\n" (user-defined: matched in any text).
inline void add_template_tokens(mote::convert::TokenizerData *tok) {
  std::vector<bool> used(tok->pieces.size(), false);
  for (const mote::format::BpeMerge &m : tok->merges) used[m.left] = used[m.right] = used[m.result] = true;
  size_t next = 0;
  for (size_t id = tok->pieces.size(); id-- > 0 && next <= template_tokens().size();) {
    if (used[id] || tok->types[id] != mote::format::kTokenNormal || tok->pieces[id].size() < 2) continue;
    if (static_cast<int32_t>(id) == tok->bos_id || static_cast<int32_t>(id) == tok->eos_id) continue;
    const bool user = next == template_tokens().size();
    tok->pieces[id] = user ? "\n\n" : template_tokens()[next];
    tok->types[id] = user ? mote::format::kTokenUserDefined : mote::format::kTokenControl;
    next += 1;
  }
}

// variant: 0 as converted; 1..6 another chat template (ChatTemplate values 3..7, then chatml)
// with the template tokens; for byte-level, pre-tokenizer variant % 3 (gpt2, llama3, qwen2).
inline const mote_model &converted_model(bool byte_level, uint32_t variant) {
  static std::map<std::pair<bool, uint32_t>, OpenModel> models;
  const auto found = models.find({byte_level, variant});
  if (found != models.end()) return found->second.model;
  mote::convert::ModelData data;
  std::string error;
  if (byte_level) {
    FUZZ_CHECK(mote::convert::load_gguf(MOTE_FUZZ_DATA_DIR "/tiny_llama.gguf", {}, &data, &error));
  } else {
    FUZZ_CHECK(mote::convert::load_llama2c(MOTE_FUZZ_DATA_DIR "/tiny_mha.bin", MOTE_FUZZ_DATA_DIR "/tiny_tok64.bin", {},
                                           &data, &error));
  }
  if (variant != 0) {
    mote::convert::TokenizerData &tok = data.tokenizer;
    add_template_tokens(&tok);
    tok.chat_template = static_cast<mote::format::ChatTemplate>(variant < 6 ? 2 + variant : 1);
    if (byte_level) {
      tok.pre_tokenizer = static_cast<mote::format::PreTokenizer>(variant % 3);
      if (variant % 3 != 0) tok.flags &= ~uint32_t{mote::format::kTokNoDigitSplit};
    }
  }
  return models.emplace(std::make_pair(byte_level, variant), open_converted(data)).first->second.model;
}

constexpr uint32_t kModelVariants = 7;

inline const mote_model &byte_level_model(uint32_t variant = 0) { return converted_model(true, variant); }

inline const mote_model &sentencepiece_model(uint32_t variant = 0) { return converted_model(false, variant); }

// The SentencePiece vocabulary respelled as WordPiece (a piece after a space starts a word, any
// other continues one with "##"), with the variant's template tokens; variant's low 4 bits pick
// BERT's normalizer options (lowercase, strip accents, CJK, clean text).
inline const mote_model &wordpiece_model(uint32_t variant = 0) {
  static std::map<uint32_t, OpenModel> models;
  const auto found = models.find(variant);
  if (found != models.end()) return found->second.model;
  mote::convert::ModelData data;
  std::string error;
  FUZZ_CHECK(mote::convert::load_llama2c(MOTE_FUZZ_DATA_DIR "/tiny_mha.bin", MOTE_FUZZ_DATA_DIR "/tiny_tok64.bin", {},
                                         &data, &error));
  mote::convert::TokenizerData &tok = data.tokenizer;
  if (variant % kModelVariants != 0) add_template_tokens(&tok);
  for (size_t id = 0; id < tok.pieces.size(); ++id) {
    std::string &piece = tok.pieces[id];
    if (tok.types[id] != mote::format::kTokenNormal) continue;
    piece = !piece.empty() && piece[0] == ' ' ? piece.substr(1) : "##" + piece;
  }
  tok.kind = mote::format::TokenizerKind::wordpiece;
  tok.flags = (variant & 15u) << 4;
  tok.unk_id = 0;
  return models.emplace(variant, open_converted(data)).first->second.model;
}

}  // namespace mote_fuzz

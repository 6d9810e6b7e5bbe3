// Hugging Face tokenizer files -> a .mote tokenizer (host side; hf_tokenizer.cpp).
#pragma once

#include <cstdint>
#include <string>

#include "model_data.hpp"

namespace mote::convert {

// Reads a byte-level BPE or WordPiece tokenizer.json (plus tokenizer_config.json's text, may be
// empty) for a model of vocab_size tokens. On entry tok->bos_id / eos_id hold config.json's ids
// (or -1); ids still -1 are looked up by tokenizer_config.json's bos_token / eos_token text.
// WordPiece: bos and eos are [CLS] and [SEP] (the post-processor's, else those texts').
bool hf_tokenizer(const std::string &tokenizer_json, const std::string &tokenizer_config_json, uint32_t vocab_size,
                  TokenizerData *tok, std::string *error);
// A BERT vocab.txt alone (no tokenizer.json): a WordPiece tokenizer with BertTokenizer's
// normalizer as tokenizer_config.json's text (may be empty) sets it: do_lower_case (default
// true), strip_accents (default: as do_lower_case), tokenize_chinese_chars (default true); the
// unk, cls, sep, pad and mask tokens it names (default "[UNK]"...) become control tokens.
bool hf_vocab_txt_tokenizer(const std::string &vocab_txt, const std::string &tokenizer_config_json, uint32_t vocab_size,
                            TokenizerData *tok, std::string *error);

}  // namespace mote::convert

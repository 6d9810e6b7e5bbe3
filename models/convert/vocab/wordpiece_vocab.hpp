// WordPiece (BERT) vocabularies (host side): shared by the GGUF and Hugging Face importers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model_data.hpp"

namespace mote::convert {

// The normalizer options of BertNormalizer / BertTokenizer: what the kTokLowercase..kTokCleanText
// flags say.
struct BertNormalizerOptions {
  bool clean_text = true;
  bool handle_chinese_chars = true;
  int strip_accents = -1;  // -1: as lowercase (Hugging Face's null), else 0 or 1
  bool lowercase = true;
};
uint32_t wordpiece_flags(const BertNormalizerOptions &options);

// Fills tok as a WordPiece tokenizer of these pieces ("##" continuation pieces as Hugging Face
// spells them) and types: kind, flags (kTokAddBos: BERT's [CLS] ... [SEP] by default), scores 0,
// and the special ids (unk required, in range; cls/sep may be -1). Refuses a continuation prefix
// other than "##" and a word limit other than 100, which mote fixes (format.hpp). `source`
// prefixes messages ("GGUF", "tokenizer.json").
bool build_wordpiece_vocab(std::vector<std::string> pieces, std::vector<uint8_t> types,
                           const BertNormalizerOptions &options, int32_t unk, int32_t cls, int32_t sep,
                           const std::string &prefix, int64_t max_word_chars, const char *source, TokenizerData *tok,
                           std::string *error);

// llama.cpp's BERT vocabularies (tokenizer.ggml.model "bert") spell a word's first piece with
// U+2581 before it and a continuation without its "##"; "[...]" tokens stay as they are. This
// undoes that into Hugging Face's spelling.
std::string wordpiece_from_phantom_space(const std::string &token);
// The inverse, for the GGUF writer.
std::string wordpiece_to_phantom_space(const std::string &piece);

// vocab.txt: one token per line, the id is the line number (a trailing "\r" is dropped).
std::vector<std::string> read_vocab_txt(const std::string &text);

}  // namespace mote::convert

// WordPiece (BERT) vocabularies -> a .mote WordPiece tokenizer (host side).
#include "vocab/wordpiece_vocab.hpp"

#include "message_text.hpp"

namespace mote::convert {

uint32_t wordpiece_flags(const BertNormalizerOptions &options) {
  const bool strip = options.strip_accents < 0 ? options.lowercase : options.strip_accents != 0;
  return (options.clean_text ? uint32_t{format::kTokCleanText} : 0u) |
         (options.handle_chinese_chars ? uint32_t{format::kTokChineseChars} : 0u) |
         (strip ? uint32_t{format::kTokStripAccents} : 0u) | (options.lowercase ? uint32_t{format::kTokLowercase} : 0u);
}

bool build_wordpiece_vocab(std::vector<std::string> pieces, std::vector<uint8_t> types,
                           const BertNormalizerOptions &options, int32_t unk, int32_t cls, int32_t sep,
                           const std::string &prefix, int64_t max_word_chars, const char *source, TokenizerData *tok,
                           std::string *error) {
  const std::string where = source;
  if (prefix != format::kWordPiecePrefix) {
    *error = where + " WordPiece continuing prefix '" + printable(prefix) + "' is not supported (mote has \"##\")";
    return false;
  }
  if (max_word_chars != format::kWordPieceMaxWordChars) {
    *error = where + " WordPiece max_input_chars_per_word " + std::to_string(max_word_chars) +
             " is not supported (mote has " + num(format::kWordPieceMaxWordChars) + ")";
    return false;
  }
  const int64_t n = static_cast<int64_t>(pieces.size());
  if (unk < 0 || unk >= n) {
    *error = where + " WordPiece vocabulary has no unknown token ([UNK]): mote needs one";
    return false;
  }
  if (cls >= n || sep >= n) {
    *error = where + " WordPiece [CLS]/[SEP] ids " + std::to_string(cls) + "/" + std::to_string(sep) +
             " are outside the vocabulary of " + num(pieces.size());
    return false;
  }
  tok->kind = format::TokenizerKind::wordpiece;
  tok->flags = wordpiece_flags(options) | format::kTokAddBos;
  tok->pre_tokenizer = format::PreTokenizer::gpt2;  // 0: unused by WordPiece
  tok->chat_template = format::ChatTemplate::none;
  tok->pieces = std::move(pieces);
  tok->types = std::move(types);
  tok->scores.assign(tok->pieces.size(), 0.0f);
  tok->merges.clear();
  tok->unk_id = unk;
  tok->bos_id = cls;
  tok->eos_id = sep;
  return true;
}

std::string wordpiece_from_phantom_space(const std::string &token) {
  static const std::string kPhantom = "\xE2\x96\x81";  // U+2581
  if (token.size() >= 2 && token.front() == '[' && token.back() == ']') return token;
  if (token.compare(0, kPhantom.size(), kPhantom) == 0) return token.substr(kPhantom.size());
  return format::kWordPiecePrefix + token;
}

std::string wordpiece_to_phantom_space(const std::string &piece) {
  if (piece.size() >= 2 && piece.front() == '[' && piece.back() == ']') return piece;
  const size_t prefix = sizeof format::kWordPiecePrefix - 1;
  if (piece.compare(0, prefix, format::kWordPiecePrefix) == 0) return piece.substr(prefix);
  return "\xE2\x96\x81" + piece;
}

std::vector<std::string> read_vocab_txt(const std::string &text) {
  std::vector<std::string> tokens;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    size_t stop = end;
    if (stop > pos && text[stop - 1] == '\r') stop -= 1;
    tokens.push_back(text.substr(pos, stop - pos));
    pos = end + 1;
  }
  return tokens;
}

}  // namespace mote::convert

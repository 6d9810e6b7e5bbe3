// WordPiece encoding, producing the ids Hugging Face tokenizers 0.19 gives for a BERT
// tokenizer.json (BertNormalizer, BertPreTokenizer, WordPiece), without any memory beyond the
// caller's token buffer and a word buffer on the stack.
//
// The pipeline, as Hugging Face runs it:
// 1. Added tokens: the text is cut at the literal text of user-defined tokens and, with
//    parse_special, control ones ([CLS], [SEP], [MASK]...), leftmost first and the longest at a
//    position; each becomes its token and the text between is encoded on its own.
// 2. BertNormalizer, per code point (classes and mappings: wordpiece_unicode.hpp), in this order:
//    clean_text (kTokCleanText) drops controls and U+FFFD and makes whitespace U+0020;
//    handle_chinese_chars (kTokChineseChars) puts a space each side of a CJK ideograph;
//    strip_accents (kTokStripAccents) takes NFD and drops category Mn; lowercase (kTokLowercase)
//    takes the full lowercase mapping.
// 3. BertPreTokenizer: whitespace separates words and is dropped; every punctuation code point
//    (ASCII punctuation or category P*) is a word of its own.
// 4. WordPiece per word: a word of more than kWordPieceMaxWordChars code points is [UNK] (unk_id);
//    otherwise from its start, the longest vocabulary piece that is a prefix of the rest (after
//    the first, spelled with "##" before it) is taken, until the word is consumed; when no piece
//    matches at some point the whole word is [UNK].
// Invalid UTF-8: a byte that does not start a valid, complete, shortest-form sequence stands for
// U+FFFD (as a lossy UTF-8 decode gives), which clean_text drops.
// Cost: normalization O(n log T) (a binary search in the Unicode tables per code point); each
// piece is found by narrowing sorted_ids one byte at a time (two binary searches per byte), so
// a word of c bytes costs O(c * p * log V) for pieces of at most p bytes.
#include "text/wordpiece.hpp"

#include "format/format.hpp"
#include "text/special_tokens.hpp"
#include "text/wordpiece_unicode.hpp"

namespace mote {
namespace {

using format::kWordPieceMaxWordChars;
constexpr size_t kPrefixBytes = sizeof format::kWordPiecePrefix - 1;  // "##"
constexpr size_t kMaxWordBytes = 4 * kWordPieceMaxWordChars;

bool is_continuation(uint8_t byte) { return (byte & 0xC0) == 0x80; }

// The code point at pos (before end) and its size; an invalid byte is U+FFFD of size 1.
uint32_t decode(Text &text, size_t pos, size_t end, size_t *size) {
  uint32_t cp = 0, n = 1;
  const bool valid = decode_utf8(text, pos, end, &cp, &n);
  *size = n;
  return valid ? cp : 0xFFFDu;
}

size_t encode_utf8(uint32_t cp, char *out) {
  if (cp < 0x80) {
    out[0] = static_cast<char>(cp);
    return 1;
  }
  if (cp < 0x800) {
    out[0] = static_cast<char>(0xC0 | (cp >> 6));
    out[1] = static_cast<char>(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = static_cast<char>(0xE0 | (cp >> 12));
    out[1] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out[2] = static_cast<char>(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = static_cast<char>(0xF0 | (cp >> 18));
  out[1] = static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
  out[2] = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
  out[3] = static_cast<char>(0x80 | (cp & 0x3F));
  return 4;
}

// The id and size of the longest piece that is a prefix of key [key, key + n), at least min_size
// bytes and ending on a code point boundary of the key (the lowest id among equal pieces), or -1.
// Pieces sharing a prefix are contiguous in sorted_ids, the prefix itself first, so each byte of
// the key narrows the range by two binary searches on the byte at that depth.
int32_t longest_piece(const TokenizerView &tok, const char *key, size_t n, size_t min_size, size_t *size) {
  uint32_t low = 0;
  uint32_t high = tok.n_tokens;
  int32_t best = -1;
  for (size_t depth = 0; depth < n && low < high; ++depth) {
    narrow_by_byte(tok, depth, static_cast<uint8_t>(key[depth]), &low, &high);
    const bool boundary = depth + 1 == n || !is_continuation(static_cast<uint8_t>(key[depth + 1]));
    if (low < high && depth + 1 >= min_size && boundary && piece_size(tok, tok.sorted_ids[low]) == depth + 1) {
      best = static_cast<int32_t>(tok.sorted_ids[low]);
      *size = depth + 1;
    }
  }
  return best;
}

class Encoder {
 public:
  Encoder(const TokenizerView &tok, Text &text, int32_t *tokens, size_t capacity)
      : tok_(tok), text_(text), tokens_(tokens), capacity_(capacity) {}

  size_t count() const { return count_; }

  // Writes while the buffer has room; counts on regardless.
  void push(int32_t token) {
    if (count_ < capacity_) tokens_[count_] = token;
    count_ += 1;
  }

  // Normalizes, pre-tokenizes and encodes [begin, end) (text without added tokens).
  void encode_text(size_t begin, size_t end) {
    const uint32_t flags = tok_.flags;
    for (size_t pos = begin; pos < end;) {
      size_t size = 1;
      const uint32_t cp = decode(text_, pos, end, &size);
      pos += size;
      const BertClass c = bert_class(cp);
      if ((flags & format::kTokCleanText) != 0 && (c == BertClass::control || c == BertClass::control_space)) continue;
      if (c == BertClass::space || c == BertClass::control_space) {
        end_word();
        continue;
      }
      // A CJK ideograph is padded with spaces by the normalizer; punctuation is split off by the
      // pre-tokenizer, which sees the normalized code points (add_normalized).
      const bool isolated = (flags & format::kTokChineseChars) != 0 && c == BertClass::cjk;
      if (isolated) end_word();
      uint32_t stripped[kMaxMappedCodePoints] = {cp};
      const size_t n = (flags & format::kTokStripAccents) != 0 ? strip_accents(cp, stripped) : 1;
      for (size_t i = 0; i < n; ++i) {
        uint32_t lowered[kMaxMappedCodePoints] = {stripped[i]};
        const size_t m = (flags & format::kTokLowercase) != 0 ? to_lowercase(stripped[i], lowered) : 1;
        for (size_t k = 0; k < m; ++k) add_normalized(lowered[k]);
      }
      if (isolated) end_word();
    }
    end_word();
  }

 private:
  // A code point of the normalized text, which the pre-tokenizer splits at whitespace and
  // punctuation (NFD can yield some: U+037E is ';').
  void add_normalized(uint32_t cp) {
    const BertClass c = cp == 0x20 ? BertClass::space : bert_class(cp);
    if (c == BertClass::space || c == BertClass::control_space) {
      end_word();
    } else if (c == BertClass::punct) {
      end_word();
      add_char(cp);
      end_word();
    } else {
      add_char(cp);
    }
  }

  void add_char(uint32_t cp) {
    if (word_chars_ < kWordPieceMaxWordChars) word_bytes_ += encode_utf8(cp, word_ + kPrefixBytes + word_bytes_);
    word_chars_ += 1;
  }

  // The greedy longest-match-first pieces of the word; "##" is written over the bytes before
  // each later start, which are consumed by then (the buffer has room for it before the word).
  void end_word() {
    if (word_chars_ == 0) return;
    const size_t first = count_;
    const size_t n = word_bytes_;
    const bool too_long = word_chars_ > kWordPieceMaxWordChars;
    word_chars_ = 0;
    word_bytes_ = 0;
    if (too_long) {
      push(tok_.unk_id);
      return;
    }
    for (size_t start = 0; start < n;) {
      char *key = word_ + kPrefixBytes + start;
      size_t key_n = n - start;
      size_t prefix = 0;
      if (start > 0) {
        prefix = kPrefixBytes;
        key -= prefix;
        key_n += prefix;
        for (size_t i = 0; i < prefix; ++i) key[i] = format::kWordPiecePrefix[i];
      }
      size_t size = 0;
      const int32_t id = longest_piece(tok_, key, key_n, prefix + 1, &size);
      if (id < 0) {
        count_ = first;
        push(tok_.unk_id);
        return;
      }
      push(id);
      start += size - prefix;
    }
  }

  const TokenizerView &tok_;
  Text &text_;
  int32_t *tokens_;
  size_t capacity_;
  size_t count_ = 0;
  char word_[kPrefixBytes + kMaxWordBytes];
  size_t word_bytes_ = 0;
  size_t word_chars_ = 0;
};

}  // namespace

Status encode_wordpiece(const TokenizerView &tok, const TextSpan *spans, size_t n_spans, bool add_special,
                        bool parse_special, int32_t *tokens, size_t capacity, size_t *n_tokens) {
  size_t total = 0;
  if (!check_encode_arguments(spans, n_spans, tokens, capacity, n_tokens, &total)) return MOTE_ERR_INVALID_ARGUMENT;
  Text text(spans, total);
  Encoder encoder(tok, text, tokens, capacity);
  if (add_special && tok.bos_id >= 0) encoder.push(tok.bos_id);
  const SpecialTokens specials = find_special_tokens(tok, true, parse_special);
  size_t begin = 0;  // of the text since the last added token
  for (size_t pos = 0; specials.max_size > 0 && pos < total;) {
    int32_t id = -1;
    size_t size = 0;
    if (specials.may_start(text.at(pos)) && match_special(tok, specials, text, pos, &id, &size)) {
      encoder.encode_text(begin, pos);
      encoder.push(id);
      pos += size;
      begin = pos;
    } else {
      pos += 1;
    }
  }
  encoder.encode_text(begin, total);
  if (add_special && tok.eos_id >= 0) encoder.push(tok.eos_id);
  *n_tokens = encoder.count();
  return encoder.count() > capacity ? MOTE_ERR_BUFFER_TOO_SMALL : MOTE_OK;
}

void wordpiece_piece(const TokenizerView &tok, int32_t prev_token, int32_t token, bool *space, const char **bytes,
                     size_t *n_bytes) {
  *space = false;
  *bytes = "";
  *n_bytes = 0;
  if (token < 0 || static_cast<uint32_t>(token) >= tok.n_tokens) return;
  const uint32_t id = static_cast<uint32_t>(token);
  const char *piece = tok.piece_bytes + tok.piece_offsets[id];
  size_t n = piece_size(tok, id);
  const bool continues =
      n > kPrefixBytes && piece[0] == format::kWordPiecePrefix[0] && piece[1] == format::kWordPiecePrefix[1];
  if (continues) {
    piece += kPrefixBytes;
    n -= kPrefixBytes;
  }
  // Hugging Face's decoder cleanup, per token: no space before a lone . ? ! or ,
  const bool tight = n == 1 && (piece[0] == '.' || piece[0] == '?' || piece[0] == '!' || piece[0] == ',');
  *space = !continues && !tight && prev_token >= 0;
  *bytes = piece;
  *n_bytes = n;
}

}  // namespace mote

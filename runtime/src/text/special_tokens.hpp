// Text given as spans, and the added tokens (control, user-defined) spelled in it: shared by the
// byte-level BPE and SentencePiece encoders, which cut text at such tokens before encoding the
// rest. No memory of its own.
#pragma once

#include <cstddef>
#include <cstdint>

#include "text/tokenizer.hpp"

namespace mote {

// The spans read as one text. Reads are nearly sequential, so the cursor's walk to the span
// that holds a position is amortized constant.
class Text {
 public:
  Text(const TextSpan *spans, size_t size) : spans_(spans), size_(size) {}

  size_t size() const { return size_; }

  uint8_t at(size_t pos) {  // pos < size()
    while (pos < begin_) {
      span_ -= 1;
      begin_ -= spans_[span_].n;
    }
    while (pos - begin_ >= spans_[span_].n) {
      begin_ += spans_[span_].n;
      span_ += 1;
    }
    return static_cast<uint8_t>(spans_[span_].bytes[pos - begin_]);
  }

 private:
  const TextSpan *spans_;
  size_t size_;
  size_t span_ = 0;   // the span holding the last position read
  size_t begin_ = 0;  // its first position
};

// The checks every encoder's entry makes: the output pointers, each span's bytes, and the text's
// total size (no wrap) into *total; *n_tokens is zeroed. False for an invalid argument.
inline bool check_encode_arguments(const TextSpan *spans, size_t n_spans, const int32_t *tokens, size_t capacity,
                                   size_t *n_tokens, size_t *total) {
  if (n_tokens == nullptr || (spans == nullptr && n_spans > 0) || (tokens == nullptr && capacity > 0)) return false;
  *n_tokens = 0;
  *total = 0;
  for (size_t i = 0; i < n_spans; ++i) {
    if ((spans[i].bytes == nullptr && spans[i].n > 0) || spans[i].n > SIZE_MAX - *total) return false;
    *total += spans[i].n;
  }
  return true;
}

// The code point at pos of text (all of its bytes before end) and its size in bytes; false for a
// byte that does not begin a well-formed UTF-8 character there (no overlongs, surrogates or code
// points past U+10FFFF), *size then 1.
inline bool decode_utf8(Text &text, size_t pos, size_t end, uint32_t *cp, uint32_t *size) {
  const uint8_t lead = text.at(pos);
  *cp = lead;
  *size = 1;
  if (lead < 0x80) return true;
  uint32_t n = 0;
  uint8_t second_min = 0x80;  // the narrower ranges exclude overlongs, surrogates, > U+10FFFF
  uint8_t second_max = 0xBF;
  uint32_t value = 0;
  if (lead >= 0xC2 && lead <= 0xDF) {
    n = 2;
    value = lead & 0x1Fu;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    n = 3;
    value = lead & 0x0Fu;
    if (lead == 0xE0) second_min = 0xA0;
    if (lead == 0xED) second_max = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    n = 4;
    value = lead & 0x07u;
    if (lead == 0xF0) second_min = 0x90;
    if (lead == 0xF4) second_max = 0x8F;
  } else {
    return false;
  }
  if (end - pos < n) return false;
  for (uint32_t i = 1; i < n; ++i) {
    const uint8_t byte = text.at(pos + i);
    if (i == 1 ? (byte < second_min || byte > second_max) : (byte & 0xC0) != 0x80) return false;
    value = (value << 6) | (byte & 0x3Fu);
  }
  *cp = value;
  *size = n;
  return true;
}

// Bytes that begin some matchable token, and the longest such token.
struct SpecialTokens {
  uint32_t first_bytes[8] = {};
  size_t max_size = 0;
  bool user_defined = false;  // which types match
  bool control = false;

  bool matches(const TokenizerView &tok, uint32_t id) const {
    return (user_defined && tok.types[id] == kTokenUserDefined) || (control && tok.types[id] == kTokenControl);
  }

  bool may_start(uint8_t byte) const { return (first_bytes[byte >> 5] >> (byte & 31)) & 1u; }
};

inline uint32_t piece_size(const TokenizerView &tok, uint32_t id) {
  return tok.piece_offsets[id + 1] - tok.piece_offsets[id];
}

inline uint8_t piece_byte(const TokenizerView &tok, uint32_t id, size_t i) {
  return static_cast<uint8_t>(tok.piece_bytes[tok.piece_offsets[id] + i]);
}

// Narrows [*low, *high), a range of sorted_ids whose pieces all begin with the same depth bytes,
// to those whose byte at depth is byte. Pieces sharing a prefix are contiguous in sorted_ids, the
// prefix itself first, so this is two binary searches on the byte at that depth (a piece that
// ends there sorts first, as -1).
inline void narrow_by_byte(const TokenizerView &tok, size_t depth, int byte, uint32_t *low, uint32_t *high) {
  auto key = [&](uint32_t i) {
    const uint32_t t = tok.sorted_ids[i];
    return piece_size(tok, t) > depth ? static_cast<int>(piece_byte(tok, t, depth)) : -1;
  };
  uint32_t a = *low;
  uint32_t b = *high;
  while (a < b) {  // the first key >= byte
    const uint32_t mid = a + (b - a) / 2;
    if (key(mid) < byte) {
      a = mid + 1;
    } else {
      b = mid;
    }
  }
  *low = a;
  b = *high;
  while (a < b) {  // the first key > byte
    const uint32_t mid = a + (b - a) / 2;
    if (key(mid) <= byte) {
      a = mid + 1;
    } else {
      b = mid;
    }
  }
  *high = a;
}

// One pass over the vocabulary (per encoding call, not per token).
inline SpecialTokens find_special_tokens(const TokenizerView &tok, bool user_defined, bool control) {
  SpecialTokens s;
  s.user_defined = user_defined;
  s.control = control;
  for (uint32_t id = 0; id < tok.n_tokens; ++id) {
    const uint32_t size = piece_size(tok, id);
    if (!s.matches(tok, id) || size == 0) continue;
    const uint8_t first = piece_byte(tok, id, 0);
    s.first_bytes[first >> 5] |= 1u << (first & 31);
    if (size > s.max_size) s.max_size = size;
  }
  return s;
}

// The longest matchable token spelled by the text at pos (the lowest id among
// equal spellings), as Hugging Face's leftmost-longest matching of added tokens finds it.
// Pieces sharing a prefix are contiguous in sorted_ids, the prefix itself first, so each byte
// of the text narrows the range by two binary searches on the byte at that depth.
inline bool match_special(const TokenizerView &tok, const SpecialTokens &specials, Text &text, size_t pos, int32_t *id,
                          size_t *size) {
  uint32_t low = 0;
  uint32_t high = tok.n_tokens;
  bool found = false;
  for (size_t depth = 0; depth < specials.max_size && pos + depth < text.size(); ++depth) {
    // Every piece in [low, high) starts with the text's first depth bytes.
    narrow_by_byte(tok, depth, text.at(pos + depth), &low, &high);
    if (low == high) break;
    for (uint32_t i = low; i < high && piece_size(tok, tok.sorted_ids[i]) == depth + 1; ++i) {
      if (specials.matches(tok, tok.sorted_ids[i])) {
        *id = static_cast<int32_t>(tok.sorted_ids[i]);
        *size = depth + 1;
        found = true;
        break;
      }
    }
  }
  return found;
}

}  // namespace mote

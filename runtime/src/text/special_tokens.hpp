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
    const int byte = text.at(pos + depth);
    // Every piece in [low, high) starts with the text's first depth bytes; key: its next byte,
    // or -1 where it ends.
    auto key = [&](uint32_t i) {
      const uint32_t t = tok.sorted_ids[i];
      return piece_size(tok, t) > depth ? static_cast<int>(piece_byte(tok, t, depth)) : -1;
    };
    uint32_t a = low;
    uint32_t b = high;
    while (a < b) {  // the first key >= byte
      const uint32_t mid = a + (b - a) / 2;
      if (key(mid) < byte) {
        a = mid + 1;
      } else {
        b = mid;
      }
    }
    low = a;
    b = high;
    while (a < b) {  // the first key > byte
      const uint32_t mid = a + (b - a) / 2;
      if (key(mid) <= byte) {
        a = mid + 1;
      } else {
        b = mid;
      }
    }
    high = a;
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

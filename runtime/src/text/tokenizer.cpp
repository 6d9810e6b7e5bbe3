// SentencePiece-style BPE encoding and decoding, behaving as llama2.c's run.c encode/decode do
// for its tokenizer.bin, without any memory beyond the caller's token buffer.
//
// Policies (the contract of mote_tokenize / mote_detokenize):
// - Text is split into code points. A code point is a valid, complete, shortest-form UTF-8
//   sequence (no overlongs, no surrogates, nothing above U+10FFFF). Any other byte is taken
//   alone. A code point (or lone byte) whose bytes are a text piece becomes that token;
//   otherwise each of its bytes becomes the byte token "<0xXX>", so decoding gives back the
//   input bytes exactly, valid UTF-8 or not.
// - If some byte of such a code point has no byte token (a vocabulary without byte fallback),
//   the whole code point becomes unk_id once, as SentencePiece does without byte fallback; with
//   no unk either, encoding fails with MOTE_ERR_UNSUPPORTED (nothing is silently dropped).
// - The dummy prefix " " (add_space_prefix, non-empty text) is encoded like any code point.
// - BOS is added only when asked for and the vocabulary has one; it never takes part in merges.
// - Only text tokens (type normal or user-defined, and not spelled "<0xXX>") are looked up or
//   produced by merges: byte and control tokens stand for something other than their spelling.
//   For llama2.c vocabularies this matches run.c exactly, which compares plain strings.
// - Merges: repeatedly merge the adjacent pair whose concatenation is a text token with the
//   highest score (the leftmost pair on ties, scores must exceed -1e10), until none is left.
#include "text/tokenizer.hpp"

#include <cstring>

#include "text/bpe_merge.hpp"
#include "text/special_tokens.hpp"

namespace mote {
namespace {

struct ByteRange {
  const char *data;
  size_t size;
};

ByteRange piece_of(const TokenizerView &tok, uint32_t id) {
  const uint32_t begin = tok.piece_offsets[id];
  return {tok.piece_bytes + begin, tok.piece_offsets[id + 1] - begin};
}

// Compares a against b as the sort order does: unsigned bytes, then the shorter first.
// Returns a negative, zero or positive value.
int compare_prefix(ByteRange a, ByteRange b) {
  const size_t common = a.size < b.size ? a.size : b.size;
  const int order = common == 0 ? 0 : std::memcmp(a.data, b.data, common);
  if (order != 0) return order;
  return a.size < b.size ? -1 : (a.size > b.size ? 1 : 0);
}

// Sign of (piece <=> left ++ right), without building the concatenation.
int compare_with_concat(ByteRange piece, ByteRange left, ByteRange right) {
  const size_t head = piece.size < left.size ? piece.size : left.size;
  const int order = compare_prefix({piece.data, head}, {left.data, head});
  if (order != 0) return order;
  if (piece.size < left.size) return -1;  // a proper prefix of left sorts first
  return compare_prefix({piece.data + left.size, piece.size - left.size}, right);
}

// Index into sorted_ids of the first piece not below left ++ right.
uint32_t lower_bound_concat(const TokenizerView &tok, ByteRange left, ByteRange right) {
  uint32_t low = 0;
  uint32_t high = tok.n_tokens;
  while (low < high) {
    const uint32_t mid = low + (high - low) / 2;
    if (compare_with_concat(piece_of(tok, tok.sorted_ids[mid]), left, right) < 0) {
      low = mid + 1;
    } else {
      high = mid;
    }
  }
  return low;
}

int hex_digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// The byte a "<0xXX>" piece stands for (either hex case, as run.c's sscanf accepts), or -1.
int byte_piece_value(ByteRange piece) {
  const char *p = piece.data;
  if (piece.size != 6 || p[0] != '<' || p[1] != '0' || p[2] != 'x' || p[5] != '>') return -1;
  const int high = hex_digit_value(p[3]);
  const int low = hex_digit_value(p[4]);
  return (high < 0 || low < 0) ? -1 : high * 16 + low;
}

// Tokens that stand for their own spelling: the only ones text lookups and merges yield.
bool is_text_token(const TokenizerView &tok, uint32_t id) {
  const uint8_t type = tok.types[id];
  if (type != kTokenNormal && type != kTokenUserDefined) return false;
  return byte_piece_value(piece_of(tok, id)) < 0;
}

// Lowest text-token id whose piece is left ++ right, or -1.
int32_t find_text_token(const TokenizerView &tok, ByteRange left, ByteRange right) {
  for (uint32_t i = lower_bound_concat(tok, left, right); i < tok.n_tokens; ++i) {
    const uint32_t id = tok.sorted_ids[i];
    if (compare_with_concat(piece_of(tok, id), left, right) != 0) break;
    if (is_text_token(tok, id)) return static_cast<int32_t>(id);
  }
  return -1;
}

bool is_continuation(uint8_t byte) { return (byte & 0xC0) == 0x80; }

// Length of the valid, complete, shortest-form UTF-8 sequence at s, or 0 if there is none.
size_t utf8_sequence_length(const uint8_t *s, size_t available) {
  const uint8_t lead = s[0];
  if (lead < 0x80) return 1;
  size_t length = 0;
  uint8_t second_min = 0x80;  // the narrower ranges exclude overlongs, surrogates, > U+10FFFF
  uint8_t second_max = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) second_min = 0xA0;
    if (lead == 0xED) second_max = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) second_min = 0x90;
    if (lead == 0xF4) second_max = 0x8F;
  } else {
    return 0;
  }
  if (available < length || s[1] < second_min || s[1] > second_max) return 0;
  for (size_t i = 2; i < length; ++i) {
    if (!is_continuation(s[i])) return 0;
  }
  return length;
}

// Appends the initial tokens of the code point (or lone byte) [bytes, bytes + n) at
// out[*count], or only counts them when out is null.
Status emit_code_point(const TokenizerView &tok, const char *bytes, size_t n, int32_t *out, size_t *count) {
  const int32_t id = find_text_token(tok, {bytes, n}, {bytes, 0});
  if (id >= 0) {
    if (out != nullptr) out[*count] = id;
    *count += 1;
    return MOTE_OK;
  }
  static const char kHex[] = "0123456789ABCDEF";
  int32_t byte_ids[4];
  bool all_bytes_found = true;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t byte = static_cast<uint8_t>(bytes[i]);
    const char spelling[6] = {'<', '0', 'x', kHex[byte >> 4], kHex[byte & 15], '>'};
    byte_ids[i] = find_token(tok, spelling, sizeof spelling);
    all_bytes_found = all_bytes_found && byte_ids[i] >= 0;
  }
  if (all_bytes_found) {
    if (out != nullptr) std::memcpy(out + *count, byte_ids, n * sizeof(int32_t));
    *count += n;
    return MOTE_OK;
  }
  if (tok.unk_id < 0 || static_cast<uint32_t>(tok.unk_id) >= tok.n_tokens) {
    return MOTE_ERR_UNSUPPORTED;
  }
  if (out != nullptr) out[*count] = tok.unk_id;
  *count += 1;
  return MOTE_OK;
}

// run.c's merge rule: candidates must beat this score, and a later pair must beat an earlier.
constexpr float kNoMergeScore = -1e10f;

int32_t merge_of(const TokenizerView &tok, uint32_t left, uint32_t right) {
  if (!is_text_token(tok, left) || !is_text_token(tok, right)) return -1;
  return find_text_token(tok, piece_of(tok, left), piece_of(tok, right));
}

// The merge loop, for vocabularies whose ids fit 16 bits (all SentencePiece ones mote knows
// but Gemma's). Looking up every pair on every pass costs O(n^2 log V) lookups; caching each
// pair's merge turns a pass into a scan of scores. The cache needs no memory of its own:
// cell i holds its token in the low half and the merge of (i, i+1) in the high half.
constexpr uint32_t kNoMerge16 = 0xFFFF;

void merge_packed(const TokenizerView &tok, uint32_t *cells, size_t *n) {
  size_t count = *n;
  auto token = [&](size_t i) { return cells[i] & 0xFFFF; };
  auto refresh_pair = [&](size_t i) {  // recomputes the merge of (i, i + 1)
    uint32_t merged = kNoMerge16;
    if (i + 1 < count) {
      const int32_t id = merge_of(tok, token(i), token(i + 1));
      if (id >= 0) merged = static_cast<uint32_t>(id);
    }
    cells[i] = (merged << 16) | token(i);
  };
  for (size_t i = 0; i < count; ++i) refresh_pair(i);
  for (;;) {
    float best_score = kNoMergeScore;
    size_t best = count;
    for (size_t i = 0; i + 1 < count; ++i) {
      const uint32_t merged = cells[i] >> 16;
      if (merged != kNoMerge16 && tok.scores[merged] > best_score) {
        best_score = tok.scores[merged];
        best = i;
      }
    }
    if (best == count) break;
    cells[best] = cells[best] >> 16;
    std::memmove(cells + best + 1, cells + best + 2, (count - best - 2) * sizeof(uint32_t));
    count -= 1;
    refresh_pair(best);
    if (best > 0) refresh_pair(best - 1);
  }
  for (size_t i = 0; i < count; ++i) cells[i] = token(i);
  *n = count;
}

// The same loop for larger vocabularies, looking every pair up on every pass (run.c's way).
void merge_uncached(const TokenizerView &tok, int32_t *ids, size_t *n) {
  size_t count = *n;
  for (;;) {
    float best_score = kNoMergeScore;
    size_t best = count;
    int32_t best_id = -1;
    for (size_t i = 0; i + 1 < count; ++i) {
      const int32_t id = merge_of(tok, static_cast<uint32_t>(ids[i]), static_cast<uint32_t>(ids[i + 1]));
      if (id >= 0 && tok.scores[id] > best_score) {
        best_score = tok.scores[id];
        best = i;
        best_id = id;
      }
    }
    if (best == count) break;
    ids[best] = best_id;
    std::memmove(ids + best + 1, ids + best + 2, (count - best - 2) * sizeof(int32_t));
    count -= 1;
  }
  *n = count;
}

// A word's pieces in their own cells for bpe_merge.hpp's exact O(n log n) merging: the low
// kIdBits bits of a cell hold the token at that piece (for a symbol's first piece, the whole
// symbol's), the 32 - kIdBits bits above are a block's field stream: two tree nodes, the leaf
// (32-bit keys each) and the start bits (16): 112 bits, which 8 cells of 14 spare bits hold.
// So vocabularies up to 2^18 ids (Gemma's 256000 included) merge exactly at any length.
constexpr unsigned kIdBits = 18;

struct PieceCells {
  static constexpr bool kCachesKeys = false;
  static constexpr unsigned kSpare = 32 - kIdBits;
  static constexpr uint32_t kIdMask = (1u << kIdBits) - 1u;
  uint32_t *cells;
  bpe::Blocks blocks;
  const TokenizerView &tok;

  // Bits [offset, offset + width) of block b's field stream.
  uint32_t get(size_t b, unsigned offset, unsigned width) const {
    uint32_t value = 0;
    size_t c = blocks.begin(b) + offset / kSpare;
    for (unsigned got = 0, in = offset % kSpare; got < width; ++c, in = 0) {
      const unsigned take = kSpare - in < width - got ? kSpare - in : width - got;
      value |= ((cells[c] >> (kIdBits + in)) & ((1u << take) - 1u)) << got;
      got += take;
    }
    return value;
  }
  void set(size_t b, unsigned offset, unsigned width, uint32_t value) {
    size_t c = blocks.begin(b) + offset / kSpare;
    for (unsigned got = 0, in = offset % kSpare; got < width; ++c, in = 0) {
      const unsigned take = kSpare - in < width - got ? kSpare - in : width - got;
      const uint32_t mask = ((1u << take) - 1u) << (kIdBits + in);
      cells[c] = (cells[c] & ~mask) | (((value >> got) << (kIdBits + in)) & mask);
      got += take;
    }
  }
  uint32_t node(size_t j) const { return get(j / 2, 32 * (j % 2), 32); }
  void set_node(size_t j, uint32_t key) { set(j / 2, 32 * (j % 2), 32, key); }
  uint32_t leaf(size_t b) const { return get(b, 64, 32); }
  void set_leaf(size_t b, uint32_t key) { set(b, 64, 32, key); }
  uint32_t starts(size_t b) const { return get(b, 96, 16); }
  void set_starts(size_t b, uint32_t bits) { set(b, 96, 16, bits); }
  uint32_t token(size_t p, bool) const { return cells[p] & kIdMask; }
  void set_token(size_t p, uint32_t token) { cells[p] = (cells[p] & ~kIdMask) | token; }
  // Higher scores first: the key is the score's order reversed (-0 counts as +0, as == does).
  bool pair(uint32_t left, uint32_t right, uint32_t *key, uint32_t *result) const {
    const int32_t id = merge_of(tok, left, right);
    if (id < 0) return false;
    const float score = tok.scores[id] == 0.0f ? 0.0f : tok.scores[id];
    if (!(score > kNoMergeScore)) return false;
    uint32_t bits = 0;
    std::memcpy(&bits, &score, sizeof bits);
    const uint32_t ordered = (bits & 0x80000000u) != 0 ? ~bits : bits | 0x80000000u;
    *key = ~ordered;  // never kNoKey: that would be a NaN, which fails the test above
    *result = static_cast<uint32_t>(id);
    return true;
  }
  void put(size_t i, uint32_t token) { cells[i] = token; }
  void prefetch_block(size_t b) const { __builtin_prefetch(cells + blocks.begin(b)); }
  uint32_t key(size_t) const { return bpe::kNoKey; }
  void set_key(size_t, uint32_t) {}
};

// A text (between added tokens) is merged whole, as SentencePiece and llama.cpp do: Gemma's
// vocabulary holds pieces with a space after other bytes (">▁</"), so cutting at words would
// differ. Text of kMinBlockedCells pieces or more merges exactly with PieceCells, whatever its
// length, in O(n (log V + log n)); shorter ones use the scan-per-merge loops above (quadratic,
// but in fewer than 16 pieces). Only a vocabulary of more than 2^18 ids (none known) cuts text
// into words (a piece that starts with a space after a piece that does not end with one), and
// long words every kMaxMergePieces pieces, where merges could then differ, to stay linear.
// The passes of encode: splitting into pieces O(n log V) (a binary search per code point),
// merging O(n (log V + log n)).
constexpr size_t kMaxMergePieces = 256;

bool starts_word(const TokenizerView &tok, int32_t prev, int32_t piece) {
  const ByteRange p = piece_of(tok, static_cast<uint32_t>(prev)), c = piece_of(tok, static_cast<uint32_t>(piece));
  return c.size > 0 && c.data[0] == ' ' && (p.size == 0 || p.data[p.size - 1] != ' ');
}

void merge_words(const TokenizerView &tok, int32_t *ids, size_t *n) {
  const bool blocked = tok.n_tokens <= (1u << kIdBits);
  size_t kept = 0;
  for (size_t start = 0; start < *n;) {
    size_t stop = start + 1;
    while (stop < *n && (blocked || (stop - start < kMaxMergePieces && !starts_word(tok, ids[stop - 1], ids[stop])))) {
      ++stop;
    }
    size_t count = stop - start;
    // int32_t and uint32_t may alias each other; ids are below 2^18 (2^16) so cells stay exact.
    uint32_t *cells = reinterpret_cast<uint32_t *>(ids + start);
    if (blocked && count >= bpe::kMinBlockedCells) {
      PieceCells piece_cells{cells, bpe::Blocks(count), tok};
      count = bpe::merge_blocked(piece_cells, count);
    } else if (tok.n_tokens <= kNoMerge16) {
      merge_packed(tok, cells, &count);
    } else {
      merge_uncached(tok, ids + start, &count);
    }
    for (size_t i = 0; i < count; ++i) ids[kept + i] = ids[start + i];  // kept <= start
    kept += count;
    start = stop;
  }
  *n = kept;
}

}  // namespace

int32_t find_token(const TokenizerView &tok, const char *text, size_t n) {
  const ByteRange key{text, n};
  const uint32_t i = lower_bound_concat(tok, key, {text, 0});
  if (i == tok.n_tokens) return -1;
  const uint32_t id = tok.sorted_ids[i];
  return compare_prefix(piece_of(tok, id), key) == 0 ? static_cast<int32_t>(id) : -1;
}

Status encode(const TokenizerView &tok, const char *text, size_t text_n, bool add_bos, int32_t *tokens, size_t capacity,
              size_t *n_tokens, bool parse_special) {
  if (text == nullptr && text_n > 0) return MOTE_ERR_INVALID_ARGUMENT;
  const TextSpan span{text, text_n};
  return encode_spans(tok, &span, 1, add_bos, tokens, capacity, n_tokens, parse_special);
}

namespace {

// The initial tokens of text [begin, end) (no added tokens in it): the dummy prefix when asked,
// then one or more per code point (a code point may span a join of spans), at out[*count] (or
// only counted when out is null).
Status split_text(const TokenizerView &tok, Text &text, size_t begin, size_t end, bool prefix, int32_t *out,
                  size_t *count) {
  if (prefix) {
    const Status status = emit_code_point(tok, " ", 1, out, count);
    if (status != MOTE_OK) return status;
  }
  for (size_t at = begin; at < end;) {
    uint8_t bytes[4];
    const size_t available = end - at < 4 ? end - at : 4;
    for (size_t i = 0; i < available; ++i) bytes[i] = text.at(at + i);
    size_t length = utf8_sequence_length(bytes, available);
    if (length == 0) length = 1;  // not valid UTF-8: this byte alone
    const Status status = emit_code_point(tok, reinterpret_cast<const char *>(bytes), length, out, count);
    if (status != MOTE_OK) return status;
    at += length;
  }
  return MOTE_OK;
}

// The tokens of the text, after BOS: user-defined tokens spelled in it (control ones too with
// parse_special) are cut out first, leftmost-longest, and each text between is split and, when
// out is given, merged on its own; the dummy prefix opens the text and each text after an added
// token of two bytes or more, as llama.cpp (and Hugging Face's per-segment normalizer) do.
// Counts only when out is null (an upper bound: nothing merged).
Status encode_text(const TokenizerView &tok, Text &text, const SpecialTokens &specials, int32_t *out, size_t *count) {
  *count = 0;
  bool after_added = true;  // the start counts as one
  size_t begin = 0;
  auto flush = [&](size_t end) {
    if (end == begin) return MOTE_OK;
    const size_t first = *count;
    const Status status = split_text(tok, text, begin, end, after_added && tok.add_space_prefix, out, count);
    if (status != MOTE_OK || out == nullptr) return status;
    size_t merged = *count - first;
    merge_words(tok, out + first, &merged);
    *count = first + merged;
    return MOTE_OK;
  };
  for (size_t pos = 0; specials.max_size > 0 && pos < text.size();) {
    int32_t id = -1;
    size_t size = 0;
    if (!specials.may_start(text.at(pos)) || !match_special(tok, specials, text, pos, &id, &size)) {
      pos += 1;
      continue;
    }
    const Status status = flush(pos);
    if (status != MOTE_OK) return status;
    if (out != nullptr) out[*count] = id;
    *count += 1;
    // A 1-byte added token (none in a vocabulary with the dummy prefix that mote knows) is not
    // followed by one, so text_n + 1 tokens always suffice (see encode_spans).
    after_added = size > 1;
    pos += size;
    begin = pos;
  }
  return flush(text.size());
}

}  // namespace

Status encode_spans(const TokenizerView &tok, const TextSpan *spans, size_t n_spans, bool add_bos, int32_t *tokens,
                    size_t capacity, size_t *n_tokens, bool parse_special) {
  if (n_tokens == nullptr || (spans == nullptr && n_spans > 0) || (tokens == nullptr && capacity > 0)) {
    return MOTE_ERR_INVALID_ARGUMENT;
  }
  *n_tokens = 0;
  size_t text_n = 0;
  for (size_t s = 0; s < n_spans; ++s) {
    if (spans[s].bytes == nullptr && spans[s].n > 0) return MOTE_ERR_INVALID_ARGUMENT;
    if (spans[s].n > SIZE_MAX - text_n) return MOTE_ERR_INVALID_ARGUMENT;
    text_n += spans[s].n;
  }
  const size_t n_bos = (add_bos && tok.bos_id >= 0) ? 1 : 0;
  Text text(spans, text_n);
  const SpecialTokens specials = find_special_tokens(tok, true, parse_special);
  // Every byte yields at most one initial token, an added token one for its bytes, and a dummy
  // prefix follows only the start or an added token of two bytes or more, so text_n + 1 bounds
  // the text's tokens; only a smaller buffer needs the exact count first.
  const bool bound_fits = text_n < capacity && capacity - text_n - 1 >= n_bos;
  if (!bound_fits) {
    size_t n_pieces = 0;
    const Status status = encode_text(tok, text, specials, nullptr, &n_pieces);
    if (status != MOTE_OK) return status;
    if (n_pieces + n_bos > capacity) {
      *n_tokens = n_pieces + n_bos;
      return MOTE_ERR_BUFFER_TOO_SMALL;
    }
  }
  if (n_bos == 1) tokens[0] = tok.bos_id;
  size_t n_text = 0;
  const Status status = encode_text(tok, text, specials, tokens + n_bos, &n_text);
  if (status != MOTE_OK) return status;
  *n_tokens = n_bos + n_text;
  return MOTE_OK;
}

void piece_for(const TokenizerView &tok, int32_t prev_token, int32_t token, char *byte_storage, const char **bytes,
               size_t *n_bytes) {
  *bytes = "";
  *n_bytes = 0;
  if (token < 0 || static_cast<uint32_t>(token) >= tok.n_tokens) return;
  const uint32_t id = static_cast<uint32_t>(token);
  const uint8_t type = tok.types[id];
  if (type == kTokenControl || type == kTokenUnused) return;
  ByteRange piece = piece_of(tok, id);
  if (tok.kind == static_cast<uint32_t>(format::TokenizerKind::byte_level_bpe)) {  // raw bytes
    *bytes = piece.data;
    *n_bytes = piece.size;
    return;
  }
  const int byte = byte_piece_value(piece);
  if (byte >= 0) {
    if (byte_storage == nullptr) return;
    *byte_storage = static_cast<char>(byte);
    *bytes = byte_storage;
    *n_bytes = 1;
    return;
  }
  // SentencePiece's decoder strips the dummy prefix's space after BOS.
  if (prev_token >= 0 && prev_token == tok.bos_id && piece.size > 0 && piece.data[0] == ' ') {
    piece.data += 1;
    piece.size -= 1;
  }
  *bytes = piece.data;
  *n_bytes = piece.size;
}

}  // namespace mote

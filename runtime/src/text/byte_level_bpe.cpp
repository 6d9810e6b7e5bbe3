// Byte-level BPE encoding (GPT-2 style), producing the ids Hugging Face tokenizers 0.19 gives
// for SmolLM2's tokenizer.json, without any memory beyond the caller's token buffer.
//
// The pipeline, as Hugging Face runs it:
// 1. Special tokens (parse_special only): the text is cut at the literal text of control and
//    user-defined tokens, leftmost first and the longest at a position; each becomes its
//    token, and the text between them is encoded on its own (steps 2-4 never see across).
// 2. Digits(individual_digits), unless the tokenizer says GPT-2 (TokenizerView::split_digits):
//    every number code point (UnicodeClass::number: Nd, Nl, No) is a word of its own and ends
//    the text the regex of step 3 sees before it. Without it numbers go through the regex.
// 3. ByteLevel's GPT-2 regex over each piece between those cuts, alternatives tried in order
//    at each position (leftmost-first, as Oniguruma matches):
//      's|'t|'re|'ve|'m|'ll|'d | ?\p{L}+ | ?\p{N}+ | ?[^\s\p{L}\p{N}]+ | \s+(?!\S) | \s+
//    The optional prefix is U+0020 only. A whitespace run followed by a non-space matches all
//    but its last code point when it has two or more (\s+(?!\S) backtracking), else it is
//    taken whole; at the end of a piece it is taken whole. Classes: unicode_classes.hpp.
// 4. BPE inside each word: the initial symbols are the words' single bytes (pieces hold raw
//    bytes), then the adjacent pair with the lowest merge rank is merged, the leftmost on
//    ties, until no pair has a merge.
// Invalid UTF-8: a byte that does not start a valid, complete, shortest-form sequence (no
// overlongs, no surrogates, nothing above U+10FFFF) is a word of its own, exactly like a
// number code point in step 2 (it also ends the regex's text, so " \xFF" is " " then "\xFF"),
// and encodes as its single-byte token; decoding therefore returns the input bytes. A UTF-8
// sequence is decoded across span joins and within the text between special tokens.
#include "text/byte_level_bpe.hpp"

#include "format/format.hpp"
#include "text/bpe_merge.hpp"
#include "text/special_tokens.hpp"
#include "text/unicode_classes.hpp"

namespace mote {
namespace {

// What pre-tokenization needs to know of a code point (or of an invalid byte).
enum class Kind : uint8_t { other, letter, number, space, invalid };

struct Unit {
  uint32_t cp;  // the code point, or the invalid byte's value
  uint32_t size;
  Kind kind;
};

Kind kind_of(UnicodeClass c) {
  switch (c) {
    case UnicodeClass::letter:
      return Kind::letter;
    case UnicodeClass::number:
      return Kind::number;
    case UnicodeClass::space:
      return Kind::space;
    default:
      return Kind::other;
  }
}

// The code point at pos, whose bytes must all lie before end.
Unit decode(Text &text, size_t pos, size_t end) {
  uint32_t cp = 0, size = 1;
  if (!decode_utf8(text, pos, end, &cp, &size)) return {cp, 1, Kind::invalid};  // cp: the lone byte
  return {cp, size, kind_of(unicode_class(cp))};
}

// Token ids of merges, found by binary search over the (left, right)-sorted table.
bool find_merge(const TokenizerView &tok, uint32_t left, uint32_t right, uint32_t *rank, uint32_t *result) {
  uint32_t low = 0;
  uint32_t high = tok.n_merges;
  while (low < high) {
    const uint32_t mid = low + (high - low) / 2;
    const format::BpeMerge &m = tok.merges[mid];
    if (m.left < left || (m.left == left && m.right < right)) {
      low = mid + 1;
    } else {
      high = mid;
    }
  }
  if (low == tok.n_merges || tok.merges[low].left != left || tok.merges[low].right != right) return false;
  *rank = tok.merges[low].rank;
  *result = tok.merges[low].result;
  return true;
}

constexpr uint32_t kNoRank = 0xFFFFFFFFu;

uint32_t merge_rank(const TokenizerView &tok, uint32_t left, uint32_t right) {
  uint32_t rank = kNoRank;
  uint32_t result = 0;
  return find_merge(tok, left, right, &rank, &result) ? rank : kNoRank;
}

// A word's symbols when ids and ranks fit 16 bits (SmolLM2: 49152 tokens, 48900 merges):
// cell i holds its token in the low half and the rank of the pair (i, i + 1) in the high
// half, so a pass over the word reads ranks without looking them up.
struct PackedCells {
  static constexpr uint32_t kNone16 = 0xFFFF;
  const TokenizerView &tok;
  uint32_t *cells;

  static bool fits(const TokenizerView &tok) { return tok.n_tokens <= 0x10000u && tok.n_merges < kNone16; }
  void start(size_t n) {
    for (size_t i = 0; i + 1 < n; ++i) pair(i, token(i + 1));
    cells[n - 1] = token(n - 1) | (kNone16 << 16);
  }
  void resize(size_t) {}
  void finish(size_t n) {
    for (size_t i = 0; i < n; ++i) cells[i] = token(i);
  }
  uint32_t token(size_t i) const { return cells[i] & 0xFFFFu; }
  uint32_t rank(size_t i) const {
    const uint32_t r = cells[i] >> 16;
    return r == kNone16 ? kNoRank : r;
  }
  void put(size_t i, uint32_t token) { cells[i] = token | (kNone16 << 16); }
  uint32_t pair(size_t i, uint32_t right) {  // cell i is now followed by right
    const uint32_t r = merge_rank(tok, token(i), right);
    cells[i] = token(i) | ((r == kNoRank ? kNone16 : r) << 16);
    return r;
  }
  void copy(size_t to, size_t from) { cells[to] = cells[from]; }
};

// The same for any vocabulary: ranks are looked up whenever they are read.
struct PlainCells {
  const TokenizerView &tok;
  int32_t *cells;
  size_t n;  // the symbols are [0, n) while reading ranks

  void start(size_t count) { n = count; }
  void resize(size_t count) { n = count; }
  void finish(size_t) {}
  uint32_t token(size_t i) const { return static_cast<uint32_t>(cells[i]); }
  uint32_t rank(size_t i) const { return i + 1 < n ? merge_rank(tok, token(i), token(i + 1)) : kNoRank; }
  void put(size_t i, uint32_t token) { cells[i] = static_cast<int32_t>(token); }
  uint32_t pair(size_t i, uint32_t right) { return merge_rank(tok, token(i), right); }
  void copy(size_t to, size_t from) { cells[to] = cells[from]; }
};

// Merges a word's n symbols in place; returns how many are left. Each round finds the lowest
// rank r among the pairs, then sweeps left to right merging every pair of rank r, which is
// what merging one leftmost lowest pair at a time does as long as no merge creates a pair of
// rank <= r (then the round ends early and the next one looks again). Trained vocabularies
// never create such pairs (a merge's parts are older than it), so the rounds number the
// distinct ranks used. The worst case (all-different merges) is quadratic: rounds x word
// length, so encode_word gives it only words shorter than bpe::kMinBlockedCells (16 bytes);
// longer ones merge exactly in O(n log n) with bpe_merge.hpp's block tree, in the same cells,
// very long ones after being cut where no merge can join (merge_cut).
//
// Cost of each pass of encode_byte_level, for text of n bytes: special-token matching O(n log V)
// (binary searches per byte that starts a special token); pre-tokenization O(n) (each code
// point decoded a bounded number of times); byte lookup O(n); merging O(n (log V + log n)) for
// any text, words of any length included (cut only where that is exact), plus at most one read
// of the merge table per byte for the cuts. n log n overall.
template <typename Cells>
size_t merge_word(const TokenizerView &tok, Cells cells, size_t n) {
  if (n < 2) return n;
  cells.start(n);
  for (;;) {
    uint32_t best = kNoRank;
    for (size_t i = 0; i + 1 < n; ++i) {
      const uint32_t r = cells.rank(i);
      if (r < best) best = r;
    }
    if (best == kNoRank) break;
    size_t w = 0;  // writes [0, w) lag behind reads [j, n)
    size_t j = 0;
    bool sweeping = true;
    while (j < n) {
      if (sweeping && j + 1 < n && cells.rank(j) == best) {
        uint32_t rank = 0;
        uint32_t merged = 0;
        find_merge(tok, cells.token(j), cells.token(j + 1), &rank, &merged);
        j += 2;
        cells.put(w, merged);
        if (w > 0 && cells.pair(w - 1, merged) <= best) sweeping = false;
        if (j < n && cells.pair(w, cells.token(j)) <= best) sweeping = false;
        w += 1;
      } else {
        cells.copy(w++, j++);
      }
    }
    n = w;
    cells.resize(n);
  }
  cells.finish(n);
  return n;
}

class Encoder {
 public:
  Encoder(const TokenizerView &tok, Text &text, int32_t *tokens) : tok_(tok), text_(text), tokens_(tokens) {
    for (int32_t &id : byte_ids_) id = kUnknown;
  }

  size_t count() const { return count_; }

  // Units that are words of their own, outside the regex: invalid bytes, and digits when split.
  bool is_isolated(Kind kind) const {
    return kind == Kind::invalid || (kind == Kind::number && tok_.split_digits &&
                                     tok_.pre_tokenizer == static_cast<uint32_t>(format::PreTokenizer::gpt2));
  }

  void push(int32_t token) { tokens_[count_++] = token; }

  // Pre-tokenizes [begin, end) (text with no special tokens) and encodes each word.
  Status encode_text(size_t begin, size_t end) {
    for (size_t pos = begin; pos < end;) {
      const size_t next = word_end(pos, end);
      const Status status = encode_word(pos, next);
      if (status != MOTE_OK) return status;
      pos = next;
    }
    return MOTE_OK;
  }

  // Where the pre-tokenizer's word that starts at pos ends (steps 2 and 3); the text ends at end.
  size_t word_end(size_t pos, size_t end) {
    const Unit u = decode(text_, pos, end);
    return is_isolated(u.kind) ? pos + u.size : match_word(pos, end, u);
  }

 private:
  static constexpr int32_t kUnknown = -2;

  // Where the regex's match starting at pos (unit u, not isolated) ends. The regex's text ends
  // at end or at the next isolated unit.
  size_t match_word(size_t pos, size_t end, const Unit &u) {
    return tok_.pre_tokenizer == static_cast<uint32_t>(format::PreTokenizer::gpt2) ? match_gpt2(pos, end, u)
                                                                                   : match_llama3(pos, end, u);
  }

  // 's 't 're 've 'm 'll 'd (any case when ignore_case): the match's end, or pos.
  size_t match_contraction(size_t pos, size_t end, const Unit &u, bool ignore_case) {
    if (u.cp != '\'' || pos + 1 >= end) return pos;
    auto lower = [&](uint32_t c) { return ignore_case && c >= 'A' && c <= 'Z' ? c + 32 : c; };
    const uint32_t c1 = lower(decode(text_, pos + 1, end).cp);
    if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') return pos + 2;
    if ((c1 == 'r' || c1 == 'v' || c1 == 'l') && pos + 2 < end) {
      const uint32_t c2 = lower(decode(text_, pos + 2, end).cp);
      if (c2 == (c1 == 'l' ? 'l' : 'e')) return pos + 3;
    }
    return pos;
  }

  // GPT-2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  size_t match_gpt2(size_t pos, size_t end, const Unit &u) {
    const size_t contraction = match_contraction(pos, end, u, false);
    if (contraction != pos) return contraction;
    if (u.kind == Kind::letter || u.kind == Kind::other || u.kind == Kind::number) return run_end(pos, end, u.kind);
    if (u.cp == ' ' && pos + 1 < end) {  // " ?\p{L}+", " ?\p{N}+" and " ?[^\s\p{L}\p{N}]+"
      const Unit next = decode(text_, pos + 1, end);
      if (next.kind == Kind::letter || next.kind == Kind::other || (next.kind == Kind::number && !tok_.split_digits))
        return run_end(pos + 1 + next.size, end, next.kind);
    }
    return match_spaces(pos, end);
  }

  // Llama 3 (Qwen2: \p{N} instead of \p{N}{1,3}), alternatives in order:
  //   (?i:'s|'t|'re|'ve|'m|'ll|'d) | [^\r\n\p{L}\p{N}]?\p{L}+ | \p{N}{1,3} |
  //   ?[^\s\p{L}\p{N}]+[\r\n]* | \s*[\r\n]+ | \s+(?!\S) | \s+
  size_t match_llama3(size_t pos, size_t end, const Unit &u) {
    const size_t contraction = match_contraction(pos, end, u, true);
    if (contraction != pos) return contraction;
    if (u.kind == Kind::letter) return run_end(pos, end, Kind::letter);
    const bool newline = u.cp == '\r' || u.cp == '\n';
    if (u.kind != Kind::number && !newline && pos + u.size < end) {
      const Unit next = decode(text_, pos + u.size, end);
      if (next.kind == Kind::letter) return run_end(pos + u.size, end, Kind::letter);
    }
    if (u.kind == Kind::number) {
      const size_t max_digits = tok_.pre_tokenizer == static_cast<uint32_t>(format::PreTokenizer::qwen2) ? 1 : 3;
      size_t at = pos;
      for (size_t n = 0; n < max_digits && at < end; ++n) {
        const Unit d = decode(text_, at, end);
        if (d.kind != Kind::number) break;
        at += d.size;
      }
      return at;
    }
    size_t punct = pos;  // " ?[^\s\p{L}\p{N}]+[\r\n]*"
    if (u.kind == Kind::other) {
      punct = run_end(pos, end, Kind::other);
    } else if (u.cp == ' ' && pos + 1 < end && decode(text_, pos + 1, end).kind == Kind::other) {
      punct = run_end(pos + 1, end, Kind::other);
    }
    if (punct != pos) return newlines_end(punct, end);
    // "\s*[\r\n]+": a whitespace run up to and including its last newline.
    size_t after_newline = pos;
    for (size_t at = pos; at < end;) {
      const Unit w = decode(text_, at, end);
      if (w.kind != Kind::space) break;
      at += w.size;
      if (w.cp == '\r' || w.cp == '\n') after_newline = at;
    }
    return after_newline != pos ? after_newline : match_spaces(pos, end);
  }

  size_t newlines_end(size_t pos, size_t end) {
    while (pos < end) {
      const uint8_t c = text_.at(pos);
      if (c != '\r' && c != '\n') break;
      pos += 1;
    }
    return pos;
  }

  // A whitespace run: "\s+(?!\S)" leaves its last code point to a following non-space when
  // that leaves at least one; "\s+" takes it whole otherwise.
  size_t match_spaces(size_t pos, size_t end) {
    size_t last = pos;
    size_t at = pos;
    size_t n = 0;
    Unit next{0, 0, Kind::invalid};
    while (at < end) {
      next = decode(text_, at, end);
      if (next.kind != Kind::space) break;
      last = at;
      at += next.size;
      n += 1;
    }
    const bool followed_by_non_space = at < end && !is_isolated(next.kind);
    return followed_by_non_space && n >= 2 ? last : at;
  }

  // The end of the run of kind that continues at pos.
  size_t run_end(size_t pos, size_t end, Kind kind) {
    while (pos < end) {
      const Unit u = decode(text_, pos, end);
      if (u.kind != kind) break;
      pos += u.size;
    }
    return pos;
  }

  // The word's bytes become their single-byte tokens where its tokens will end, then merge.
  Status encode_word(size_t begin, size_t end) {
    int32_t *symbols = tokens_ + count_;
    const size_t n = end - begin;
    if (tok_.pre_tokenizer == static_cast<uint32_t>(format::PreTokenizer::llama3) && n > 1) {
      // Llama 3 (ignore_merges): a word that is a token is that token. Its bytes are looked up
      // in its own cells (4n bytes for n), which the symbols overwrite otherwise.
      char *bytes = reinterpret_cast<char *>(symbols);
      for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<char>(text_.at(begin + i));
      const int32_t whole = find_token(tok_, bytes, n);
      if (whole >= 0) {
        push(whole);
        return MOTE_OK;
      }
    }
    for (size_t i = 0; i < n; ++i) {
      const uint8_t byte = text_.at(begin + i);
      if (byte_ids_[byte] == kUnknown) {
        const char c = static_cast<char>(byte);
        byte_ids_[byte] = find_token(tok_, &c, 1);
      }
      if (byte_ids_[byte] < 0) return MOTE_ERR_UNSUPPORTED;
      symbols[i] = byte_ids_[byte];
    }
    count_ += n >= kMinCutBytes && n / kCutBytesPerMerge >= tok_.n_merges ? merge_cut(symbols, begin, n)
                                                                          : merge_any(symbols, begin, n);
    return MOTE_OK;
  }

  size_t merge_any(int32_t *symbols, size_t begin, size_t n) {
    return n < bpe::kMinBlockedCells ? merge_symbols(symbols, n) : merge_long(symbols, begin, n);
  }

  // A long word is first cut where no merge can ever join the bytes on either side: no merge's
  // left piece ends with the first and its right piece starts with the second. Symbols are
  // always the text's own bytes (each merge result is its parts' bytes, checked at load), so
  // the first symbol across such a cut would need exactly such a merge: no symbol ever spans
  // it, the pair across it never merges, and each side merges as it would alone (in the same
  // order, since no merge on one side touches the other). The parts are exact, and short ones
  // merge in cache: a long random line has a cut every few bytes. The table of joinable byte
  // pairs (8 KiB) lives in the word's last cells: the parts before them merge first, then the
  // rest, whose tokens are read again from the text. Building it reads every merge once, so
  // only words of at least kCutBytesPerMerge bytes per merge use it (a constant per byte).
  static constexpr size_t kTableCells = 256 * 256 / 32;
  static constexpr size_t kMinCutBytes = 2 * kTableCells;
  static constexpr size_t kCutBytesPerMerge = 1;  // 1 byte per merge: at most one merge read per byte

  size_t merge_cut(int32_t *symbols, size_t begin, size_t n) {
    const size_t table_begin = n - kTableCells;
    // int32_t and uint32_t may alias each other.
    uint32_t *joinable = reinterpret_cast<uint32_t *>(symbols) + table_begin;
    for (size_t i = 0; i < kTableCells; ++i) joinable[i] = 0;
    for (uint32_t i = 0; i < tok_.n_merges; ++i) {
      const format::BpeMerge &m = tok_.merges[i];
      const uint32_t left_n = piece_size(tok_, m.left);
      if (left_n == 0 || piece_size(tok_, m.right) == 0) continue;  // no symbol is empty
      const uint32_t pair = piece_byte(tok_, m.left, left_n - 1) * 256u + piece_byte(tok_, m.right, 0);
      joinable[pair / 32] |= 1u << (pair % 32);
    }
    size_t kept = 0;
    size_t start = 0;
    for (size_t cut = 1; cut <= table_begin; ++cut) {  // parts end before the table
      const uint32_t pair = text_.at(begin + cut - 1) * 256u + text_.at(begin + cut);
      if ((joinable[pair / 32] >> (pair % 32)) & 1u) continue;
      kept += merge_part(symbols, kept, begin, start, cut);
      start = cut;
    }
    for (size_t i = table_begin; i < n; ++i) symbols[i] = byte_ids_[text_.at(begin + i)];
    kept += merge_part(symbols, kept, begin, start, n);
    return kept;
  }

  // Merges the word's cells [start, stop) and moves their tokens to [kept, ...), kept <= start.
  size_t merge_part(int32_t *symbols, size_t kept, size_t begin, size_t start, size_t stop) {
    const size_t merged = merge_any(symbols + start, begin + start, stop - start);
    for (size_t i = 0; i < merged; ++i) symbols[kept + i] = symbols[start + i];
    return merged;
  }

  size_t merge_symbols(int32_t *symbols, size_t n) {
    if (PackedCells::fits(tok_)) {
      // int32_t and uint32_t may alias each other; ids below 2^16 keep the low half exact.
      return merge_word(tok_, PackedCells{tok_, reinterpret_cast<uint32_t *>(symbols)}, n);
    }
    return merge_word(tok_, PlainCells{tok_, symbols, n}, n);
  }

  // A word of any length, exactly and in O(n log n) (bpe_merge.hpp), in its own n cells.
  // A one-byte symbol's token is its byte's, read again from the text, so its cell is free for
  // the block fields and for the tokens of longer symbols. Two layouts of a block's cells:
  //
  // WordCells, any vocabulary: cells 0-1 tree nodes, 2 the leaf, 3 the start bits, 4 + o / 2
  // the token of a symbol of two or more bytes starting at offset o (two such starts are at
  // least two bytes apart, so they never share a cell; the last block, up to 15 cells, needs
  // cells up to 4 + 14 / 2 = 11). Pair keys are looked up whenever a block is rescanned.
  struct WordCells {
    static constexpr bool kCachesKeys = false;
    uint32_t *cells;
    bpe::Blocks blocks;
    Text &text;
    size_t begin;  // of the word in the text
    const int32_t *byte_ids;
    const TokenizerView &tok;

    uint32_t &field(size_t b, size_t i) const { return cells[blocks.begin(b) + i]; }
    uint32_t node(size_t j) const { return field(j / 2, j % 2); }
    void set_node(size_t j, uint32_t key) { field(j / 2, j % 2) = key; }
    uint32_t leaf(size_t b) const { return field(b, 2); }
    void set_leaf(size_t b, uint32_t key) { field(b, 2) = key; }
    uint32_t starts(size_t b) const { return field(b, 3); }
    void set_starts(size_t b, uint32_t bits) { field(b, 3) = bits; }
    uint32_t &slot(size_t p) const {
      const size_t b = blocks.of(p);
      return field(b, 4 + (p - blocks.begin(b)) / 2);
    }
    uint32_t token(size_t p, bool single) const {
      return single ? static_cast<uint32_t>(byte_ids[text.at(begin + p)]) : slot(p);
    }
    void set_token(size_t p, uint32_t token) { slot(p) = token; }
    bool pair(uint32_t left, uint32_t right, uint32_t *key, uint32_t *result) const {
      return find_merge(tok, left, right, key, result);
    }
    void put(size_t i, uint32_t token) { cells[i] = token; }
    void prefetch_block(size_t b) const { __builtin_prefetch(cells + blocks.begin(b)); }
    uint32_t key(size_t) const { return bpe::kNoKey; }
    void set_key(size_t, uint32_t) {}
  };

  // PackedWordCells, ids and ranks below 2^16 (PackedCells::fits; SmolLM2): the high half of a
  // start's cell caches its pair's rank, so a rescan reads 8 halves instead of looking up 8
  // pairs. Low halves: offsets 1, 3, 5, 7 hold the two tree nodes, the leaf and the start
  // bits; the even cell o & ~1 holds the token of a longer symbol starting at o.
  struct PackedWordCells {
    static constexpr bool kCachesKeys = true;
    static constexpr uint32_t kNone16 = 0xFFFF;
    uint32_t *cells;
    bpe::Blocks blocks;
    Text &text;
    size_t begin;
    const int32_t *byte_ids;
    const TokenizerView &tok;

    static uint32_t widen(uint32_t half) { return half == kNone16 ? bpe::kNoKey : half; }
    uint32_t low(size_t c) const { return cells[c] & 0xFFFFu; }
    void set_low(size_t c, uint32_t v) { cells[c] = (cells[c] & 0xFFFF0000u) | v; }
    size_t field(size_t b, size_t i) const { return blocks.begin(b) + 2 * i + 1; }
    uint32_t node(size_t j) const { return widen(low(field(j / 2, j % 2))); }
    void set_node(size_t j, uint32_t key) { set_low(field(j / 2, j % 2), key & kNone16); }
    uint32_t leaf(size_t b) const { return widen(low(field(b, 2))); }
    void set_leaf(size_t b, uint32_t key) { set_low(field(b, 2), key & kNone16); }
    uint32_t starts(size_t b) const { return low(field(b, 3)); }
    void set_starts(size_t b, uint32_t bits) { set_low(field(b, 3), bits); }
    uint32_t token(size_t p, bool single) const {
      return single ? static_cast<uint32_t>(byte_ids[text.at(begin + p)]) : low(p & ~size_t{1});
    }
    void set_token(size_t p, uint32_t token) { set_low(p & ~size_t{1}, token); }
    bool pair(uint32_t left, uint32_t right, uint32_t *key, uint32_t *result) const {
      return find_merge(tok, left, right, key, result);
    }
    void put(size_t i, uint32_t token) { cells[i] = token; }
    void prefetch_block(size_t b) const { __builtin_prefetch(cells + blocks.begin(b)); }
    uint32_t key(size_t p) const { return widen(cells[p] >> 16); }
    void set_key(size_t p, uint32_t key) { cells[p] = (cells[p] & 0xFFFFu) | ((key & kNone16) << 16); }
  };

  size_t merge_long(int32_t *symbols, size_t begin, size_t n) {
    // int32_t and uint32_t may alias each other; token ids are below 2^31.
    uint32_t *cells = reinterpret_cast<uint32_t *>(symbols);
    if (PackedCells::fits(tok_)) {
      PackedWordCells packed{cells, bpe::Blocks(n), text_, begin, byte_ids_, tok_};
      return bpe::merge_blocked(packed, n);
    }
    WordCells plain{cells, bpe::Blocks(n), text_, begin, byte_ids_, tok_};
    return bpe::merge_blocked(plain, n);
  }

  const TokenizerView &tok_;
  Text &text_;
  int32_t *tokens_;
  size_t count_ = 0;
  int32_t byte_ids_[256];  // each byte's token, looked up on first use
};

}  // namespace

Status encode_byte_level(const TokenizerView &tok, const TextSpan *spans, size_t n_spans, bool parse_special,
                         int32_t *tokens, size_t capacity, size_t *n_tokens) {
  size_t total = 0;
  if (!check_encode_arguments(spans, n_spans, tokens, capacity, n_tokens, &total)) return MOTE_ERR_INVALID_ARGUMENT;
  // Every byte yields at most one token, and a word's bytes are its scratch space before
  // merging, so total entries always suffice and are required.
  if (capacity < total) {
    *n_tokens = total;
    return MOTE_ERR_BUFFER_TOO_SMALL;
  }
  Text text(spans, total);
  Encoder encoder(tok, text, tokens);
  Status status = MOTE_OK;
  if (!parse_special) {
    status = encoder.encode_text(0, total);
  } else {
    const SpecialTokens specials = find_special_tokens(tok, true, true);
    size_t begin = 0;  // of the text since the last special token
    for (size_t pos = 0; pos < total && status == MOTE_OK;) {
      int32_t id = -1;
      size_t size = 0;
      if (specials.may_start(text.at(pos)) && match_special(tok, specials, text, pos, &id, &size)) {
        status = encoder.encode_text(begin, pos);
        encoder.push(id);
        pos += size;
        begin = pos;
      } else {
        pos += 1;
      }
    }
    if (status == MOTE_OK) status = encoder.encode_text(begin, total);
  }
  if (status != MOTE_OK) return status;
  *n_tokens = encoder.count();
  return MOTE_OK;
}

size_t byte_level_words(const TokenizerView &tok, const char *text, size_t n, size_t *ends, size_t capacity) {
  const TextSpan span{text, n};
  Text cursor(&span, n);
  Encoder encoder(tok, cursor, nullptr);  // cuts words only: no token is written
  size_t n_words = 0;
  for (size_t pos = 0; pos < n; n_words += 1) {
    pos = encoder.word_end(pos, n);
    if (n_words < capacity) ends[n_words] = pos;
  }
  return n_words;
}

void byte_level_piece(const TokenizerView &tok, int32_t token, const char **bytes, size_t *n_bytes) {
  *bytes = "";
  *n_bytes = 0;
  if (token < 0 || static_cast<uint32_t>(token) >= tok.n_tokens) return;
  const uint32_t id = static_cast<uint32_t>(token);
  *bytes = tok.piece_bytes + tok.piece_offsets[id];
  *n_bytes = piece_size(tok, id);
}

}  // namespace mote

// Exact BPE merging of a long word inside the caller's token buffer, in O(n log n).
//
// The rule both tokenizers use: repeatedly merge the adjacent pair with the lowest key (the
// merge rank for byte-level BPE, the negated score for SentencePiece), the leftmost pair on
// ties, until no pair merges. Done literally (a scan per merge) that is quadratic; a priority
// queue makes it n log n but needs memory per symbol, and mote has none of its own: the word's
// n symbols start as n cells of the token buffer and that is all there is.
//
// Where the scratch comes from (the decision): from those n cells and nothing else. A scratch
// argument or arena would be memory a firmware caller must size for the longest word it might
// ever see; cutting long words into windows is not exact (a merge can depend on a symbol any
// distance away: with "aa" then "ab" merging, "aaa...ab" pairs from the left and the last "a"
// joins "b" or not by the parity of the whole run). The buffer already holds one entry per
// symbol, so the same call with the same buffer is now exact at any length.
//
// So the word's cells are cut into blocks of kBlock (the last block takes the remainder:
// kBlock..2 kBlock - 1 cells), and each block keeps, inside its own cells:
//   - starts: one bit per cell, set where a symbol starts (a symbol spans its start's cell
//     up to the next start);
//   - leaf: the lowest key of the pairs whose left symbol starts in the block;
//   - two nodes of a min-tree over the leaves (a complete binary tree of leaves_ >= m leaves
//     has leaves_ - 1 < 2m inner nodes, so two per block hold them all; they are laid out in
//     order, each beside the leaves it splits, so the low part of a merge's path lies near
//     its block; a word far larger than the cache still costs a few misses per merge, since
//     merges go in key order across the whole word);
//   - the tokens of the symbols starting there, kept where a Store says (see below).
// The lowest pair is found by walking down the tree (the left child on ties: leftmost), then
// scanning its block. A merge changes the pairs of at most three blocks (the merged symbol's,
// the removed symbol's, the previous symbol's): each is rescanned (kBlock pairs, one lookup
// each) and its path to the root updated (log m). With n cells: n log V to start, then per
// merge O(kBlock log V + log n), at most n - 1 merges: O(n (log V + log n)) in all, exact for
// any word length, no memory beyond the cells and a few locals.
//
// A Store gives the block fields and tokens their bits (byte_level_bpe.cpp and tokenizer.cpp
// each pack them their own way):
//   uint32_t node(size_t j) / set_node(j, key)   j in [1, 2m): node j lives in block j / 2
//   uint32_t leaf(size_t b) / set_leaf(b, key)
//   uint32_t starts(size_t b) / set_starts(b, bits)
//   uint32_t token(size_t p, bool single)         single: the symbol at p is one cell long
//   void set_token(size_t p, uint32_t token)      p now starts a symbol of two or more cells
//   bool pair(uint32_t left, uint32_t right, uint32_t *key, uint32_t *result)
//   void put(size_t i, uint32_t token)            the i-th final token (cell i), at the end
//   static constexpr bool kCachesKeys             true: it also keeps each start's pair key,
//   uint32_t key(size_t p) / set_key(p, key)      so rescanning a block looks nothing up
//   void prefetch_block(size_t b)                 a hint: block b's cells will be read soon
#pragma once

#include <cstddef>
#include <cstdint>

namespace mote {
namespace bpe {

constexpr uint32_t kNoKey = 0xFFFFFFFFu;
constexpr size_t kBlock = 8;
// Words shorter than this merge with the callers' simple loops (they need no block fields).
constexpr size_t kMinBlockedCells = 2 * kBlock;

// Block b covers cells [begin(b), end(b)); m = n / kBlock blocks.
struct Blocks {
  size_t n;
  size_t m;

  explicit Blocks(size_t cells) : n(cells), m(cells / kBlock) {}
  size_t of(size_t p) const { return p / kBlock < m ? p / kBlock : m - 1; }
  size_t begin(size_t b) const { return b * kBlock; }
  size_t end(size_t b) const { return b + 1 < m ? (b + 1) * kBlock : n; }
};

inline unsigned lowest_bit(uint32_t bits) { return static_cast<unsigned>(__builtin_ctz(bits)); }
inline unsigned highest_bit(uint32_t bits) { return 31u - static_cast<unsigned>(__builtin_clz(bits)); }
inline unsigned lowest_bit_of_size(size_t s) { return static_cast<unsigned>(__builtin_ctzll(s)); }

template <typename Store>
class BlockedMerger {
 public:
  // n >= kMinBlockedCells; the store's cells hold the word's initial symbols, one per cell.
  BlockedMerger(Store &store, size_t n) : s_(store), blocks_(n) {
    while (leaves_ < blocks_.m) leaves_ *= 2;
  }

  // Merges the word; the final tokens end up in cells [0, returned count).
  size_t run() {
    for (size_t b = 0; b < blocks_.m; ++b) s_.set_starts(b, (1u << (blocks_.end(b) - blocks_.begin(b))) - 1u);
    if constexpr (Store::kCachesKeys) {
      for (size_t p = 0; p < blocks_.n; ++p) s_.set_key(p, lookup_key(p, p + 1));
    }
    for (size_t b = 0; b < blocks_.m; ++b) s_.set_leaf(b, block_min(b));
    for (size_t step = 1; step < leaves_; step *= 2) {  // level by level, from the leaves up
      for (size_t split = step; split < leaves_; split += 2 * step) set_node(split, lower(left(split), right(split)));
    }
    while (node(root()) != kNoKey) merge_lowest();
    return emit();
  }

 private:
  static uint32_t lower(uint32_t a, uint32_t b) { return a < b ? a : b; }

  // Inner nodes are named by their split, the first leaf of their right half: split s has
  // level t = lowest set bit of s and covers leaves [s - 2^t, s + 2^t); its children are the
  // splits s -+ 2^(t-1), or the leaves s - 1 and s when t = 0. Node s is stored in block s
  // (store slot 2s) when s < m, else in block s - m (slot 2(s - m) + 1): the low nodes sit
  // beside their leaves. Leaves past m are empty.
  size_t root() const { return leaves_ / 2; }
  size_t slot_of(size_t split) const { return split < blocks_.m ? 2 * split : 2 * (split - blocks_.m) + 1; }
  uint32_t node(size_t split) const { return s_.node(slot_of(split)); }
  void set_node(size_t split, uint32_t key) { s_.set_node(slot_of(split), key); }
  uint32_t leaf(size_t b) const { return b < blocks_.m ? s_.leaf(b) : kNoKey; }
  uint32_t left(size_t split) const {
    const unsigned t = lowest_bit_of_size(split);
    return t == 0 ? leaf(split - 1) : node(split - (size_t{1} << (t - 1)));
  }
  uint32_t right(size_t split) const {
    const unsigned t = lowest_bit_of_size(split);
    return t == 0 ? leaf(split) : node(split + (size_t{1} << (t - 1)));
  }
  // Starts loading the block that left(split) reads.
  void prefetch_left(size_t split) const {
    const unsigned t = lowest_bit_of_size(split);
    const size_t b = t == 0 ? split - 1 : slot_of(split - (size_t{1} << (t - 1))) / 2;
    if (b < blocks_.m) s_.prefetch_block(b);
  }
  static size_t parent(size_t split) {
    const unsigned t = lowest_bit_of_size(split);
    return ((split >> (t + 2)) << (t + 2)) | (size_t{2} << t);
  }

  bool is_start(size_t p) const {
    const size_t b = blocks_.of(p);
    return (s_.starts(b) >> (p - blocks_.begin(b))) & 1u;
  }

  uint32_t token(size_t p) const { return s_.token(p, p + 1 == blocks_.n || is_start(p + 1)); }

  // The start after p, or n. Blocks without a start lie inside one symbol, so the walk is
  // bounded by the longest token.
  size_t next_start(size_t p) const {
    size_t b = blocks_.of(p);
    const uint32_t after = s_.starts(b) >> (p - blocks_.begin(b)) >> 1;
    if (after != 0) return p + 1 + lowest_bit(after);
    for (++b; b < blocks_.m; ++b) {
      const uint32_t bits = s_.starts(b);
      if (bits != 0) return blocks_.begin(b) + lowest_bit(bits);
    }
    return blocks_.n;
  }

  // The start before p, or n when p is the first.
  size_t prev_start(size_t p) const {
    size_t b = blocks_.of(p);
    uint32_t bits = s_.starts(b) & ((1u << (p - blocks_.begin(b))) - 1u);
    while (bits == 0) {
      if (b == 0) return blocks_.n;
      b -= 1;
      bits = s_.starts(b);
    }
    return blocks_.begin(b) + highest_bit(bits);
  }

  // The key of the pair (p, q) of starts (q = n: p is the last symbol, no pair).
  uint32_t lookup_key(size_t p, size_t q) const {
    uint32_t key = kNoKey;
    uint32_t merged = 0;
    if (q == blocks_.n || !s_.pair(token(p), token(q), &key, &merged)) return kNoKey;
    return key;
  }

  uint32_t key_at(size_t p) const {
    if constexpr (Store::kCachesKeys) {
      return s_.key(p);
    } else {
      return lookup_key(p, next_start(p));
    }
  }

  // The lowest key of the pairs starting in block b, or with want != kNoKey the leftmost
  // start whose pair has that key.
  uint32_t block_min(size_t b, uint32_t want = kNoKey, size_t *at = nullptr) const {
    uint32_t best = kNoKey;
    for (uint32_t bits = s_.starts(b); bits != 0; bits &= bits - 1u) {
      const size_t p = blocks_.begin(b) + lowest_bit(bits);
      const uint32_t key = key_at(p);
      if (want != kNoKey && key == want) {
        *at = p;
        return key;
      }
      best = lower(best, key);
    }
    return best;
  }

  void refresh(size_t b) {
    s_.set_leaf(b, block_min(b));
    for (size_t split = b | 1u;; split = parent(split)) {
      const uint32_t v = lower(left(split), right(split));
      if (v == node(split)) break;  // the ancestors already agree
      set_node(split, v);
      if (split == root()) break;
    }
  }

  // Walks down to the leftmost leaf holding the lowest key and merges its leftmost such pair.
  void merge_lowest() {
    const uint32_t key = node(root());
    size_t split = root();
    size_t b = 0;
    for (;;) {
      const unsigned t = lowest_bit_of_size(split);
      if (t >= 1) {  // the walk is a chain of cache misses in a large word: ask for two levels ahead
        const size_t half = size_t{1} << (t - 1);
        for (int side = 0; side < 2; ++side) {
          const size_t next = side == 0 ? split - half : split + half;
          prefetch_left(next);
          if (t >= 2) {
            prefetch_left(next - half / 2);
            prefetch_left(next + half / 2);
          }
        }
      }
      const bool go_left = left(split) == key;
      if (t == 0) {
        b = go_left ? split - 1 : split;
        break;
      }
      split = go_left ? split - (size_t{1} << (t - 1)) : split + (size_t{1} << (t - 1));
    }
    size_t p = 0;
    block_min(b, key, &p);
    const size_t q = next_start(p);
    const size_t r = prev_start(p);
    uint32_t merged = 0;
    uint32_t unused = 0;
    s_.pair(token(p), token(q), &unused, &merged);
    const size_t bq = blocks_.of(q);
    s_.set_starts(bq, s_.starts(bq) & ~(1u << (q - blocks_.begin(bq))));
    s_.set_token(p, merged);
    if constexpr (Store::kCachesKeys) {  // the two pairs the merge changed
      s_.set_key(p, lookup_key(p, next_start(p)));
      if (r != blocks_.n) s_.set_key(r, lookup_key(r, p));
    }
    refresh(b);
    if (bq != b) refresh(bq);
    if (r != blocks_.n && blocks_.of(r) != b && blocks_.of(r) != bq) refresh(blocks_.of(r));
  }

  // Writes the tokens to cells [0, count). A block's tokens are read before any is written,
  // and the tokens of blocks [0, b] never outnumber their cells, so writes stay behind reads.
  size_t emit() {
    size_t count = 0;
    for (size_t b = 0; b < blocks_.m; ++b) {
      uint32_t held[2 * kBlock];
      size_t k = 0;
      for (uint32_t bits = s_.starts(b); bits != 0; bits &= bits - 1u) {
        held[k++] = token(blocks_.begin(b) + lowest_bit(bits));
      }
      for (size_t i = 0; i < k; ++i) s_.put(count++, held[i]);
    }
    return count;
  }

  Store &s_;
  Blocks blocks_;
  size_t leaves_ = 1;
};

template <typename Store>
size_t merge_blocked(Store &store, size_t n) {
  BlockedMerger<Store> merger(store, n);
  return merger.run();
}

}  // namespace bpe
}  // namespace mote

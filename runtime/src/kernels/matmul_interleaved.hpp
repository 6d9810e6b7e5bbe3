// Integer products over the row-interleaved x8 layouts (kernels/quant.hpp): one vector register
// holds 4 quant bytes of each of 8 rows, so the integer lanes are the rows. A group block's
// exact int32 sums for 8 rows come out in one register, and its scale step (convert, multiply by
// d_w * d_x, add) is one instruction each for all 8 rows instead of once per row.
#pragma once

#include <cstddef>
#include <type_traits>

#include "kernels/matmul_quant.hpp"
#include "kernels/quant.hpp"
#include "kernels/simd.hpp"

namespace mote::kernels::simd {

// How far ahead of its reads a tile asks for weights, in each group it reads (a prefetch never
// faults, even past a matrix's end).
constexpr size_t kPrefetchBytes = 2048;

// The weights stream from memory once per pass: ask for the bytes kPrefetchBytes past byte `at`
// of each of the W::kGroups groups a tile reads side by side (`next` bytes apart). Past a
// group's end they are the next tile's: W::kGroups groups on, so that two streams read side by
// side do not fetch each other's bytes. The hardware prefetcher alone left a decoding core
// waiting on these loads at under half its bandwidth (perf: most samples on the first use of
// each block).
template <class W, size_t kBytes>
inline void prefetch_ahead(const void *groups, size_t next, size_t at) {
  const size_t ahead = at + kPrefetchBytes;
  const char *base = static_cast<const char *>(groups) + ahead + (ahead >= next ? (W::kGroups - 1) * next : 0);
#pragma GCC unroll 2
  for (size_t g = 0; g < W::kGroups; ++g) {
    for (size_t line = 0; line < kBytes; line += 64) __builtin_prefetch(base + g * next + line);
  }
}

#if defined(__AVX2__)
// The activation block of one token: its quants, d and the sum of its quants.
struct TokenBlock {
  const int8_t *q;
  const float *scale;  // this block's (BlockPairs: and the next one's)
  const int32_t *sum;
};

// Four activation bytes as one word (to broadcast to every 32-bit lane).
inline int32_t quad_word(const int8_t *q) {
  int32_t quad;
  __builtin_memcpy(&quad, q, sizeof quad);
  return quad;
}

// The registers a tile works in. Rows8: one group block's 8 rows, one per 32-bit lane of a ymm.
// Each helper takes the group block and `next`, the bytes from it to the same block of the next
// group, which Rows16 (below) reads too.
template <class Arch>
struct Rows8 {
  using Ints = __m256i;
  using Floats = __m256;
  static constexpr size_t kGroups = 1;
  static Ints load(const void *block, size_t /*next*/, size_t at) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i *>(static_cast<const char *>(block) + at));
  }
  static Floats halves(const uint16_t *h, size_t /*next*/) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(h)));
  }
  static Ints bytes(int c) { return _mm256_set1_epi8(static_cast<char>(c)); }
  // An activation block's quads: quad k (bytes 4k .. 4k + 3) in every lane, read as used.
  using Quads = const int8_t *;
  static Quads quads(const int8_t *q) { return q; }
  static Ints quad(Quads q, size_t k) { return _mm256_set1_epi32(quad_word(q + 4 * k)); }
  static Ints words(int32_t c) { return _mm256_set1_epi32(c); }
  static Ints zero() { return _mm256_setzero_si256(); }
  static Ints and_(Ints a, Ints b) { return _mm256_and_si256(a, b); }
  static Ints high_nibbles(Ints v) { return _mm256_and_si256(_mm256_srli_epi16(v, 4), bytes(0x0F)); }
  static Ints or_(Ints a, Ints b) { return _mm256_or_si256(a, b); }
  static Ints xor_(Ints a, Ints b) { return _mm256_xor_si256(a, b); }
  static Ints shift_left16(Ints v, int n) { return _mm256_slli_epi16(v, n); }
  static Ints shift_right16(Ints v, int n) { return _mm256_srli_epi16(v, n); }
  static Ints shift_right32(Ints v, int n) { return _mm256_srli_epi32(v, n); }
  // Byte j of every 32-bit lane, sign-extended.
  static Ints signed_byte(Ints v, size_t j) {
    return _mm256_srai_epi32(_mm256_sllv_epi32(v, words(static_cast<int>(24 - 8 * j))), 24);
  }
  static Ints mul32(Ints a, Ints b) { return _mm256_mullo_epi32(a, b); }
  static Ints add32(Ints a, Ints b) { return _mm256_add_epi32(a, b); }
  static Ints sub32(Ints a, Ints b) { return _mm256_sub_epi32(a, b); }
  static Ints add16(Ints a, Ints b) { return _mm256_add_epi16(a, b); }
  static Ints pair_sums(Ints u, Ints x) { return _mm256_maddubs_epi16(u, x); }
  static Ints widen(Ints pairs) { return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)); }
  static Ints dot_add(Ints acc, Ints u, Ints x) { return QuantIsa<Arch>::dot_add(acc, u, x); }
  static Ints magnitude(Ints w) { return _mm256_abs_epi8(w); }
  static Ints with_sign_of(Ints x, Ints w) { return _mm256_sign_epi8(x, w); }
  // A 16-byte table in every 128-bit lane, and each byte's entry at its index (0..15) in it.
  static Ints table16(const int8_t *t) {
    return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i *>(t)));
  }
  static Ints lookup(Ints table, Ints index) { return _mm256_shuffle_epi8(table, index); }
  // codes + 0x10 in byte j of row i's lane where bit 4e + j of the row's qh word is set: the
  // qh byte holding those bits spread to the 4 bytes, then tested.
  static Ints with_fifth_bits(Ints codes, Ints qh, size_t e) {
    const Ints byte_index = _mm256_add_epi8(_mm256_setr_epi8(0, 0, 0, 0, 4, 4, 4, 4, 8, 8, 8, 8, 12, 12, 12, 12, 0, 0,
                                                             0, 0, 4, 4, 4, 4, 8, 8, 8, 8, 12, 12, 12, 12),
                                            bytes(static_cast<int>(e / 2)));
    const Ints bit = words(static_cast<int>(0x08040201u << (4 * (e % 2))));
    const Ints spread = _mm256_shuffle_epi8(qh, byte_index);
#if defined(__AVX512BW__) && defined(__AVX512VL__)
    // A test into a mask and a masked add (codes < 0x10, so the add is the or): two
    // instructions where AVX2 takes four, on the decode path of q5_0x8 / q5_1x8.
    return _mm256_mask_add_epi8(codes, _mm256_test_epi8_mask(spread, bit), codes, bytes(0x10));
#else
    return _mm256_or_si256(codes, _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit), bytes(0x10)));
#endif
  }
  static Floats fzero() { return _mm256_setzero_ps(); }
  static Floats splat(float v) { return _mm256_set1_ps(v); }
  static Floats to_float(Ints v) { return _mm256_cvtepi32_ps(v); }
  static Floats mul(Floats a, Floats b) { return _mm256_mul_ps(a, b); }
  static Floats add(Floats a, Floats b) { return _mm256_add_ps(a, b); }
  static Floats negate(Floats a) { return _mm256_xor_ps(a, _mm256_set1_ps(-0.0f)); }
  static Floats fma(Floats a, Floats b, Floats c) { return _mm256_fmadd_ps(a, b, c); }
  static void store(float *out, Floats v) { _mm256_storeu_ps(out, v); }
  // A token block's factor * sum x and d_x in every lane, and acc + sums * scales.
  using Acc = Floats;
  // One token's running row sums in a tile: acc the d terms, mins the m terms of q4_1x8 and
  // q5_1x8, which sum apart and join at the end (the scalar twin's order).
  struct Sums {
    Acc acc, mins;
  };
  static constexpr size_t kBlocks = 1;
  static Ints token_words(const int32_t *sum, int32_t factor) { return words(factor * sum[0]); }
  static Floats token_floats(const float *v) { return splat(v[0]); }
  static Floats token_scaled_sums(const TokenBlock &x) { return splat(x.scale[0] * static_cast<float>(x.sum[0])); }
  static Acc add_rows(Acc acc, Floats sums, Floats scales) { return fma(sums, scales, acc); }
  static Acc add_acc(Acc a, Acc b) { return add(a, b); }
};

#if defined(__AVX512BW__)
// Rows16: two consecutive groups side by side in a zmm (rows 0-7 the first group's, 8-15 the
// next one's), so every unpack, dot and scale instruction serves 16 rows where one group's
// block would fill only half the register. Each lane does Rows8's arithmetic: the same bits.
template <class Arch>
struct Rows16 {
  using Ints = __m512i;
  using Floats = __m512;
  static constexpr size_t kGroups = 2;
  static Ints load(const void *block, size_t next, size_t at) {
    const char *p = static_cast<const char *>(block) + at;
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(p))),
                              _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p + next)), 1);
  }
  static Floats halves(const uint16_t *h, size_t next) {
    const char *p = reinterpret_cast<const char *>(h);
    return _mm512_cvtph_ps(
        _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p))),
                                _mm_loadu_si128(reinterpret_cast<const __m128i *>(p + next)), 1));
  }
  static Ints bytes(int c) { return _mm512_set1_epi8(static_cast<char>(c)); }
  using Quads = const int8_t *;
  static Quads quads(const int8_t *q) { return q; }
  static Ints quad(Quads q, size_t k) { return _mm512_set1_epi32(quad_word(q + 4 * k)); }
  static Ints words(int32_t c) { return _mm512_set1_epi32(c); }
  static Ints zero() { return _mm512_setzero_si512(); }
  static Ints and_(Ints a, Ints b) { return _mm512_and_si512(a, b); }
  static Ints high_nibbles(Ints v) { return _mm512_and_si512(_mm512_srli_epi16(v, 4), bytes(0x0F)); }
  static Ints or_(Ints a, Ints b) { return _mm512_or_si512(a, b); }
  static Ints xor_(Ints a, Ints b) { return _mm512_xor_si512(a, b); }
  static Ints shift_left16(Ints v, int n) { return _mm512_slli_epi16(v, static_cast<unsigned>(n)); }
  static Ints shift_right16(Ints v, int n) { return _mm512_srli_epi16(v, static_cast<unsigned>(n)); }
  static Ints shift_right32(Ints v, int n) { return _mm512_srli_epi32(v, static_cast<unsigned>(n)); }
  static Ints signed_byte(Ints v, size_t j) {
    return _mm512_srai_epi32(_mm512_sllv_epi32(v, words(static_cast<int>(24 - 8 * j))), 24);
  }
  static Ints mul32(Ints a, Ints b) { return _mm512_mullo_epi32(a, b); }
  static Ints add32(Ints a, Ints b) { return _mm512_add_epi32(a, b); }
  static Ints sub32(Ints a, Ints b) { return _mm512_sub_epi32(a, b); }
  static Ints add16(Ints a, Ints b) { return _mm512_add_epi16(a, b); }
  static Ints pair_sums(Ints u, Ints x) { return _mm512_maddubs_epi16(u, x); }
  static Ints widen(Ints pairs) { return _mm512_madd_epi16(pairs, _mm512_set1_epi16(1)); }
  static Ints dot_add(Ints acc, Ints u, Ints x) {
#if defined(__AVX512VNNI__)
    return _mm512_dpbusd_epi32(acc, u, x);
#else
    return _mm512_add_epi32(acc, widen(pair_sums(u, x)));
#endif
  }
  static Ints magnitude(Ints w) { return _mm512_abs_epi8(w); }
  // x where w > 0, -x where w < 0 (where w = 0 the magnitude is 0: any x gives Rows8's sum).
  static Ints with_sign_of(Ints x, Ints w) { return _mm512_mask_sub_epi8(x, _mm512_movepi8_mask(w), zero(), x); }
  static Ints table16(const int8_t *t) {
    return _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i *>(t)));
  }
  static Ints lookup(Ints table, Ints index) { return _mm512_shuffle_epi8(table, index); }
  static Ints with_fifth_bits(Ints codes, Ints qh, size_t e) {
    const int32_t step = 0x01010101 * static_cast<int32_t>(e / 2);  // as Rows8: byte e / 2 of each word
    const Ints byte_index =
        _mm512_setr_epi32(step, 0x04040404 + step, 0x08080808 + step, 0x0C0C0C0C + step, step, 0x04040404 + step,
                          0x08080808 + step, 0x0C0C0C0C + step, step, 0x04040404 + step, 0x08080808 + step,
                          0x0C0C0C0C + step, step, 0x04040404 + step, 0x08080808 + step, 0x0C0C0C0C + step);
    const Ints bit = words(static_cast<int>(0x08040201u << (4 * (e % 2))));
    return _mm512_mask_add_epi8(codes, _mm512_test_epi8_mask(_mm512_shuffle_epi8(qh, byte_index), bit), codes,
                                bytes(0x10));
  }
  static Floats fzero() { return _mm512_setzero_ps(); }
  static Floats splat(float v) { return _mm512_set1_ps(v); }
  static Floats to_float(Ints v) { return _mm512_cvtepi32_ps(v); }
  static Floats mul(Floats a, Floats b) { return _mm512_mul_ps(a, b); }
  static Floats add(Floats a, Floats b) { return _mm512_add_ps(a, b); }
  static Floats negate(Floats a) { return _mm512_xor_ps(a, _mm512_set1_ps(-0.0f)); }
  static Floats fma(Floats a, Floats b, Floats c) { return _mm512_fmadd_ps(a, b, c); }
  static void store(float *out, Floats v) { _mm512_storeu_ps(out, v); }
  using Acc = Floats;
  struct Sums {
    Acc acc, mins;
  };
  static constexpr size_t kBlocks = 1;
  static Ints token_words(const int32_t *sum, int32_t factor) { return words(factor * sum[0]); }
  static Floats token_floats(const float *v) { return splat(v[0]); }
  static Floats token_scaled_sums(const TokenBlock &x) { return splat(x.scale[0] * static_cast<float>(x.sum[0])); }
  static Acc add_rows(Acc acc, Floats sums, Floats scales) { return fma(sums, scales, acc); }
  static Acc add_acc(Acc a, Acc b) { return add(a, b); }
};

// BlockPairs: blocks b and b + 1 of one group side by side in a zmm (rows 0-7 of block b, then
// of block b + 1), for decoding: one weight stream as Rows8, but each unpack and dot instruction
// serves two blocks. The two halves meet activation blocks b and b + 1, and their float steps
// are applied to the 8 rows' sums in block order: each row sums as Rows8 does, bit for bit.
template <class Arch>
struct BlockPairs : Rows16<Arch> {
  using Ints = __m512i;
  using Floats = __m512;
  using Acc = __m256;
  using Sums = typename Rows8<Arch>::Sums;  // the last odd block of a group is Rows8's step
  static constexpr size_t kBlocks = 2;
  // kGroups stays Rows16's 2: prefetch_ahead then also asks for the next group's bytes at the
  // same offset, a whole group further ahead, which streams faster than one group's prefetch
  // (bench/README.md, "Tuning decisions").
  // Activation blocks b and b + 1 (64 bytes) in one register, read once; quad k of each fills
  // its half (dword k and 8 + k, one vpermd).
  using Quads = __m512i;
  static Quads quads(const int8_t *q) { return _mm512_loadu_si512(q); }
  static Ints quad(Quads pair, size_t k) {
    const int a = static_cast<int>(k), b = static_cast<int>(8 + k);
    return _mm512_permutexvar_epi32(_mm512_setr_epi32(a, a, a, a, a, a, a, a, b, b, b, b, b, b, b, b), pair);
  }
  static Ints token_words(const int32_t *sum, int32_t factor) {
    return _mm512_inserti64x4(_mm512_set1_epi32(factor * sum[0]), _mm256_set1_epi32(factor * sum[1]), 1);
  }
  static Floats token_floats(const float *v) {
    return _mm512_insertf32x8(_mm512_set1_ps(v[0]), _mm256_set1_ps(v[1]), 1);
  }
  static Floats token_scaled_sums(const TokenBlock &x) {
    return _mm512_insertf32x8(_mm512_set1_ps(x.scale[0] * static_cast<float>(x.sum[0])),
                              _mm256_set1_ps(x.scale[1] * static_cast<float>(x.sum[1])), 1);
  }
  static Acc add_rows(Acc acc, Floats sums, Floats scales) {
    acc = _mm256_fmadd_ps(_mm512_castps512_ps256(sums), _mm512_castps512_ps256(scales), acc);
    return _mm256_fmadd_ps(_mm512_extractf32x8_ps(sums, 1), _mm512_extractf32x8_ps(scales, 1), acc);
  }
  static Acc add_acc(Acc a, Acc b) { return _mm256_add_ps(a, b); }
  static Acc fzero() { return _mm256_setzero_ps(); }
  static void store(float *out, Acc v) { _mm256_storeu_ps(out, v); }
};
#endif

template <class W>
inline typename W::Sums zero_sums() {
  return {W::fzero(), W::fzero()};
}

template <class W, class Block>
inline void store_sums(float *out, const typename W::Sums &s) {
  if constexpr (kHasMinimum<Block>)
    W::store(out, W::add_acc(s.acc, s.mins));
  else
    W::store(out, s.acc);
}

template <class Arch, class Block, class W>
struct InterleavedBlock;

// q4_0x8, q4_1x8, q5_0x8, q5_1x8 and iq4_nlx8: the quants unpacked once per group block (eight
// registers), then for each token eight integer steps per block.
template <class Arch, class Block, class W>
struct Nibbles {
  using Ints = typename W::Ints;
  static constexpr bool kFiveBit = std::is_same_v<Block, BlockQ5_0x8> || std::is_same_v<Block, BlockQ5_1x8>;
  Ints low[4], high[4];  // elements 4k .. 4k + 3 and 16 + 4k .. 16 + 4k + 3 of each row
  typename W::Floats d;
  static Nibbles unpack(const Block &b, size_t next) {
    Nibbles n;
    const Ints mask = W::bytes(0x0F);
    for (size_t k = 0; k < 4; ++k) {
      const Ints v = W::load(&b, next, offsetof(Block, qs) + 32 * k);
      n.low[k] = W::and_(v, mask);
      n.high[k] = W::high_nibbles(v);
    }
    if constexpr (kFiveBit) {
      const Ints qh = W::load(&b, next, offsetof(Block, qh));
      for (size_t k = 0; k < 4; ++k) {
        n.low[k] = W::with_fifth_bits(n.low[k], qh, k);
        n.high[k] = W::with_fifth_bits(n.high[k], qh, 4 + k);
      }
    }
    n.d = W::halves(b.d, next);
    return n;
  }
  void tile_codes(Ints *codes) const {
    for (size_t k = 0; k < 4; ++k) {
      codes[k] = low[k];
      codes[4 + k] = high[k];
    }
  }
  // Per row: sum over the block of value * x, exact.
  Ints dot(const int8_t *x) const {
    const typename W::Quads xs = W::quads(x);
#if defined(__AVX512VNNI__) || defined(__AVXVNNI__)
    // Four independent chains of two vpdpbusd: one chain of eight would wait on its latency.
    Ints sums[4];
    for (size_t k = 0; k < 4; ++k) sums[k] = W::dot_add(W::zero(), low[k], W::quad(xs, k));
    for (size_t k = 0; k < 4; ++k) sums[k] = W::dot_add(sums[k], high[k], W::quad(xs, 4 + k));
    return W::add32(W::add32(sums[0], sums[1]), W::add32(sums[2], sums[3]));
#else
    // vpmaddubsw pair sums added in int16, then widened: eight steps of 4-bit values fit
    // (8 x 2 x 15 x 127 < 32768) but only four of 5-bit ones (4 x 2 x 31 x 127), so q5 widens
    // its two halves apart.
    Ints low_sums = W::pair_sums(low[0], W::quad(xs, 0)), high_sums = W::pair_sums(high[0], W::quad(xs, 4));
    for (size_t k = 1; k < 4; ++k) {
      low_sums = W::add16(low_sums, W::pair_sums(low[k], W::quad(xs, k)));
      high_sums = W::add16(high_sums, W::pair_sums(high[k], W::quad(xs, 4 + k)));
    }
    if constexpr (kFiveBit) return W::add32(W::widen(low_sums), W::widen(high_sums));
    return W::widen(W::add16(low_sums, high_sums));
#endif
  }
};

// q4_0x8 and q5_0x8: sum (q - offset) x = sum q x - offset sum x, exactly.
template <class Arch, class Block, class W, int kOffset>
struct OffsetQuants {
  static constexpr size_t kTokens = 4;
  using Prepared = Nibbles<Arch, Block, W>;
  static Prepared prepare(const Block &b, size_t next) { return Prepared::unpack(b, next); }
  // The 8 quads' codes (unsigned) in the order of the block's values: an AMX tile's rows.
  static void tile_codes(const Prepared &w, typename W::Ints *codes) { w.tile_codes(codes); }
  static void accumulate(typename W::Sums &s, const Prepared &w, const TokenBlock &x) { add_dot(s, w, w.dot(x.q), x); }
  // The float step from the exact dot of the unsigned codes with x (AMX tiles make it too).
  static void add_dot(typename W::Sums &s, const Prepared &w, typename W::Ints dot, const TokenBlock &x) {
    const typename W::Ints sums = W::sub32(dot, W::token_words(x.sum, kOffset));
    s.acc = W::add_rows(s.acc, W::to_float(sums), W::mul(w.d, W::token_floats(x.scale)));
  }
};

// q4_1x8 and q5_1x8: sum (d q + m) x = d sum q x + m sum x. The m terms run in their own sums
// (W::Sums::mins), so each chain takes one float step per block, as q5_0x8's, and BlockPairs
// decodes them (both steps in one chain, in order, the pairs were slower than Rows8).
template <class Arch, class Block, class W>
struct MinimumQuants {
  static constexpr size_t kTokens = 4;
  struct Prepared {
    Nibbles<Arch, Block, W> nibbles;
    typename W::Floats m;
  };
  static Prepared prepare(const Block &b, size_t next) {
    return {Nibbles<Arch, Block, W>::unpack(b, next), W::halves(b.m, next)};
  }
  static void tile_codes(const Prepared &w, typename W::Ints *codes) { w.nibbles.tile_codes(codes); }
  static void accumulate(typename W::Sums &s, const Prepared &w, const TokenBlock &x) {
    add_dot(s, w, w.nibbles.dot(x.q), x);
  }
  static void add_dot(typename W::Sums &s, const Prepared &w, typename W::Ints dot, const TokenBlock &x) {
    s.acc = W::add_rows(s.acc, W::to_float(dot), W::mul(w.nibbles.d, W::token_floats(x.scale)));
    s.mins = W::add_rows(s.mins, w.m, W::token_scaled_sums(x));
  }
};

template <class Arch, class W>
struct InterleavedBlock<Arch, BlockQ4_0x8, W> : OffsetQuants<Arch, BlockQ4_0x8, W, 8> {};
template <class Arch, class W>
struct InterleavedBlock<Arch, BlockQ5_0x8, W> : OffsetQuants<Arch, BlockQ5_0x8, W, 16> {};
template <class Arch, class W>
struct InterleavedBlock<Arch, BlockQ4_1x8, W> : MinimumQuants<Arch, BlockQ4_1x8, W> {};
template <class Arch, class W>
struct InterleavedBlock<Arch, BlockQ5_1x8, W> : MinimumQuants<Arch, BlockQ5_1x8, W> {};

// Signed weights in 8 registers per group block (register k: quad k, elements 4k .. 4k + 3, of
// the 8 rows), and the 8-bit products want one unsigned operand. With vpdpbusd the weights are
// held as w + 128 (unsigned, made once per block) and sum w x = sum (w + 128) x - 128 sum x,
// exact in int32: one instruction per 4-byte step and token. vpmaddubsw's int16 pair sums of
// (w + 128) x could saturate, so there each step is |w| times x with w's sign.
// kTileTokens: the tokens a tile takes per prepared block.
template <class Arch, class W, size_t kTileTokens>
struct SignedWeights {
  using Ints = typename W::Ints;
  static constexpr size_t kTokens = kTileTokens;
#if defined(__AVX512VNNI__) || defined(__AVXVNNI__)
  static constexpr bool kOffsetWeights = true;
#else
  static constexpr bool kOffsetWeights = false;
#endif
  struct Prepared {
    Ints q[8];  // w + 128 where kOffsetWeights, else w
    typename W::Floats d;
  };
  static void accumulate(typename W::Sums &s, const Prepared &w, const TokenBlock &x) {
    Ints chains[4] = {W::zero(), W::zero(), W::zero(), W::zero()};  // independent chains hide vpdpbusd's latency
    const typename W::Quads xs = W::quads(x.q);
    for (size_t k = 0; k < 8; ++k) {
      if constexpr (kOffsetWeights) {
        chains[k % 4] = W::dot_add(chains[k % 4], w.q[k], W::quad(xs, k));
      } else {
        chains[k % 4] = W::dot_add(chains[k % 4], W::magnitude(w.q[k]), W::with_sign_of(W::quad(xs, k), w.q[k]));
      }
    }
    add_dot(s, w, W::add32(W::add32(chains[0], chains[1]), W::add32(chains[2], chains[3])), x);
  }
  // The float step from the exact dot of q (as Prepared holds it) with x (AMX tiles make it too).
  static void add_dot(typename W::Sums &s, const Prepared &w, Ints dot, const TokenBlock &x) {
    if constexpr (kOffsetWeights) dot = W::sub32(dot, W::token_words(x.sum, 128));
    s.acc = W::add_rows(s.acc, W::to_float(dot), W::mul(w.d, W::token_floats(x.scale)));
  }
  static void tile_codes(const Prepared &w, Ints *codes) {
    for (size_t k = 0; k < 8; ++k) codes[k] = w.q[k];
  }
};

// q8_0x8: the stored bytes are the weights.
template <class Arch, class W>
struct InterleavedBlock<Arch, BlockQ8_0x8, W> : SignedWeights<Arch, W, 2> {
  using Base = SignedWeights<Arch, W, 2>;
  static typename Base::Prepared prepare(const BlockQ8_0x8 &b, size_t next) {
    typename Base::Prepared p;
    for (size_t k = 0; k < 8; ++k) {
      p.q[k] = W::load(&b, next, offsetof(BlockQ8_0x8, qs) + 32 * k);
      if constexpr (Base::kOffsetWeights) p.q[k] = W::xor_(p.q[k], W::bytes(0x80));
    }
    p.d = W::halves(b.d, next);
    return p;
  }
};

// IQ4_NL's levels + 128 as bytes (1 .. 241): vpdpbusd's unsigned operand, looked up directly.
inline constexpr struct OffsetLevels {
  int8_t v[16];
} kIQ4NLOffsetLevels = [] {
  OffsetLevels t{};
  for (size_t i = 0; i < 16; ++i) t.v[i] = static_cast<int8_t>(kIQ4NLValues[i] ^ -128);
  return t;
}();

// iq4_nlx8: the nibbles unpacked as q4_0x8's, then looked up (vpshufb) as signed levels, or as
// levels + 128 for vpdpbusd: from there q8_0x8's steps exactly. Unpacking costs more than
// q8_0x8's loads, so a tile shares each prepared block among 4 tokens, not 2 (1536x1536, 64
// tokens: 1.43 -> 1.13 ms on avx512_vnni, 3.4 -> 3.0 ms on avx2).
template <class Arch, class W>
struct InterleavedBlock<Arch, BlockIQ4_NLx8, W> : SignedWeights<Arch, W, 4> {
  using Base = SignedWeights<Arch, W, 4>;
  static typename Base::Prepared prepare(const BlockIQ4_NLx8 &b, size_t next) {
    const Nibbles<Arch, BlockIQ4_NLx8, W> n = Nibbles<Arch, BlockIQ4_NLx8, W>::unpack(b, next);
    const typename W::Ints levels = W::table16(Base::kOffsetWeights ? kIQ4NLOffsetLevels.v : kIQ4NLValues);
    typename Base::Prepared p;
    for (size_t k = 0; k < 4; ++k) {
      p.q[k] = W::lookup(levels, n.low[k]);
      p.q[4 + k] = W::lookup(levels, n.high[k]);
    }
    p.d = n.d;
    return p;
  }
};

// Blocks b .. b + W::kBlocks - 1 of W::kGroups groups from `group` folded into sums, K tokens.
template <class Arch, class Block, class W, size_t K>
inline void interleaved_step(typename W::Sums *sums, const Block *group, size_t n_blocks, const Q8Activations &x,
                             size_t token0, size_t b) {
  using Ops = InterleavedBlock<Arch, Block, W>;
  const size_t group_bytes = n_blocks * sizeof(Block);
  prefetch_ahead<W, W::kBlocks * sizeof(Block)>(group, group_bytes, b * sizeof(Block));
  const typename Ops::Prepared w = Ops::prepare(group[b], W::kBlocks == 2 ? sizeof(Block) : group_bytes);
#pragma GCC unroll 8
  for (size_t t = 0; t < K; ++t) {
    const size_t xb = (token0 + t) * n_blocks + b;
    Ops::accumulate(sums[t], w, TokenBlock{x.q + xb * kQuantBlock, x.scale + xb, x.block_sum + xb});
  }
}

// W::kGroups groups of 8 rows from `group` (each n_blocks blocks) against K tokens from token0,
// every block (W::kBlocks at a time; a last odd one as Rows8).
template <class Arch, class Block, class W, size_t K>
inline void interleaved_tile(float *out, size_t out_stride, const Block *group, size_t n_blocks, const Q8Activations &x,
                             size_t token0) {
  typename W::Sums sums[K];
#pragma GCC unroll 8
  for (size_t t = 0; t < K; ++t) sums[t] = zero_sums<W>();
  size_t b = 0;
  for (; b + W::kBlocks <= n_blocks; b += W::kBlocks)
    interleaved_step<Arch, Block, W, K>(sums, group, n_blocks, x, token0, b);
  if constexpr (W::kBlocks == 2) {
    if (b < n_blocks) interleaved_step<Arch, Block, Rows8<Arch>, K>(sums, group, n_blocks, x, token0, b);
  }
#pragma GCC unroll 8
  for (size_t t = 0; t < K; ++t) store_sums<W, Block>(out + (token0 + t) * out_stride, sums[t]);
}

// The last n_tokens < kTokens tokens as one tile of exactly that many (K counts down).
template <class Arch, class Block, class W, size_t K>
inline void interleaved_rest(float *out, size_t out_stride, const Block *group, size_t n_blocks, const Q8Activations &x,
                             size_t token0, size_t n_tokens) {
  if (n_tokens == K) {
    interleaved_tile<Arch, Block, W, K>(out, out_stride, group, n_blocks, x, token0);
  } else if constexpr (K > 1) {
    interleaved_rest<Arch, Block, W, K - 1>(out, out_stride, group, n_blocks, x, token0, n_tokens);
  }
}

// Whether a tile of n tokens reads two groups side by side (Rows16, where AVX-512 has it). Not
// when decoding: one token's pass streams the weights from memory, and two streams side by side
// decoded slower than one although the kernel is faster on weights in L2 (bench/README.md, "Tuning decisions");
// prefill reuses each block n times.
template <class Arch>
inline bool two_groups_per_tile(size_t n) {
  return n > 1;
}

// Groups g0 .. g_end - 1 against tokens t0 .. t0 + n - 1 (n <= T; n == T takes the full tile),
// two groups at a time where two_groups_per_tile says so.
template <class Arch, class Block>
inline void interleaved_groups(float *out, size_t out_stride, const Block *w, size_t n_blocks, const Q8Activations &x,
                               size_t g0, size_t g_end, size_t t0, size_t n) {
  constexpr size_t T = InterleavedBlock<Arch, Block, Rows8<Arch>>::kTokens;
  size_t g = g0;
#if defined(__AVX512BW__)
  for (; two_groups_per_tile<Arch>(n) && g + 2 <= g_end; g += 2)
    interleaved_rest<Arch, Block, Rows16<Arch>, T>(out + g * kInterleave, out_stride, w + g * n_blocks, n_blocks, x, t0,
                                                   n);
  for (; n == 1 && g < g_end; ++g)
    interleaved_tile<Arch, Block, BlockPairs<Arch>, 1>(out + g * kInterleave, out_stride, w + g * n_blocks, n_blocks, x,
                                                       t0);
#endif
  for (; g < g_end; ++g)
    interleaved_rest<Arch, Block, Rows8<Arch>, T>(out + g * kInterleave, out_stride, w + g * n_blocks, n_blocks, x, t0,
                                                  n);
}

template <class Arch, class Block>
inline void interleaved_matmul(float *out, size_t out_stride, const Block *w, const Q8Activations &x, size_t rows,
                               size_t cols, size_t n_tokens) {
  constexpr size_t T = InterleavedBlock<Arch, Block, Rows8<Arch>>::kTokens;
  const size_t n_blocks = cols / kQuantBlock, n_groups = rows / kInterleave;
  // As matmul.hpp: a run of groups stays in L2 while every token tile passes over it.
  // One tile of tokens passes once: all groups form one run. Runs are even, so groups pair up.
  const size_t group_bytes = n_blocks * sizeof(Block);
  size_t run = n_tokens <= T ? n_groups : group_bytes < kRowBlockBytes ? kRowBlockBytes / group_bytes : 1;
  run += run % 2;
  for (size_t g0 = 0; g0 < n_groups; g0 += run) {
    const size_t g_end = g0 + run < n_groups ? g0 + run : n_groups;
    for (size_t t = 0; t < n_tokens; t += T)
      interleaved_groups<Arch>(out, out_stride, w, n_blocks, x, g0, g_end, t, n_tokens - t < T ? n_tokens - t : T);
  }
}

#elif defined(__ARM_NEON)
// NEON: a q register holds 4 bytes of each of 4 rows, so a group block is two halves (rows
// 0-3 and 4-7) of int32x4 row sums: sdot where the CPU has the dot-product extension, widening
// multiplies and pairwise adds elsewhere.
struct RowQuads {
  int8x16_t half[2];  // rows 0-3 and 4-7, 4 bytes each
};

// acc[i] += sum_j w[4 i + j] * x[j] for the 4 rows of w, x one 4-byte quad.
template <class Arch>
inline int32x4_t dot_quads(int32x4_t acc, int8x16_t w, const int8_t *x) {
  int32_t quad;
  __builtin_memcpy(&quad, x, sizeof quad);
  const int8x16_t xq = vreinterpretq_s8_s32(vdupq_n_s32(quad));
#if defined(__ARM_FEATURE_DOTPROD)
  return vdotq_s32(acc, w, xq);
#else
  const int32x4_t low = vpaddlq_s16(vmull_s8(vget_low_s8(w), vget_low_s8(xq)));     // rows 0, 1: two pairs each
  const int32x4_t high = vpaddlq_s16(vmull_s8(vget_high_s8(w), vget_high_s8(xq)));  // rows 2, 3
  const int32x2_t rows01 = vpadd_s32(vget_low_s32(low), vget_high_s32(low));
  const int32x2_t rows23 = vpadd_s32(vget_low_s32(high), vget_high_s32(high));
  return vaddq_s32(acc, vcombine_s32(rows01, rows23));
#endif
}

// The 32 quant values of 8 rows as signed bytes: quads[k] holds elements 4k .. 4k + 3.
template <class Block>
struct SignedQuads {
  RowQuads quads[8];
  float32x4_t d[2];
};

template <class Arch, class Block>
inline void load_scales8(const uint16_t *halves, float32x4_t *out) {
  for (size_t h = 0; h < 2; ++h) {
    const float lanes[4] = {half_to_float(Arch{}, halves[4 * h]), half_to_float(Arch{}, halves[4 * h + 1]),
                            half_to_float(Arch{}, halves[4 * h + 2]), half_to_float(Arch{}, halves[4 * h + 3])};
    out[h] = vld1q_f32(lanes);
  }
}

// 0x10 in byte j of lane i where bit 4e + j of qh[i] is set, for 4 rows' qh words: the 4 bits
// spread one per byte by a multiply (bit j lands at bit 8j; no two products overlap).
template <class Arch>
inline uint8x16_t fifth_bits(const uint32_t *qh, size_t e) {
  const uint32x4_t nibble =
      vandq_u32(vshlq_u32(vld1q_u32(qh), vdupq_n_s32(-4 * static_cast<int32_t>(e))), vdupq_n_u32(0xF));
  const uint32x4_t spread = vandq_u32(vmulq_u32(nibble, vdupq_n_u32(0x00204081u)), vdupq_n_u32(0x01010101u));
  return vreinterpretq_u8_u32(vshlq_n_u32(spread, 4));
}

template <class Arch, class Block>
inline SignedQuads<Block> signed_quads(const Block &b) {
  SignedQuads<Block> w;
  if constexpr (std::is_same_v<Block, BlockQ8_0x8>) {
    for (size_t k = 0; k < 8; ++k) {
      for (size_t h = 0; h < 2; ++h) w.quads[k].half[h] = vld1q_s8(b.qs + 32 * k + 16 * h);
    }
  } else {
    // q4_0 keeps n - 8 and q5_0 q - 16 (the same integers as x86's sum q x - offset sum x);
    // q4_1 and q5_1 keep q; iq4_nl looks its nibbles up as levels (matmul_quant.hpp).
    constexpr bool kFiveBit = std::is_same_v<Block, BlockQ5_0x8> || std::is_same_v<Block, BlockQ5_1x8>;
    const int8x16_t offset = vdupq_n_s8(std::is_same_v<Block, BlockQ4_0x8>   ? 8
                                        : std::is_same_v<Block, BlockQ5_0x8> ? 16
                                                                             : 0);
    const auto to_signed = [&](uint8x16_t q) {
      if constexpr (std::is_same_v<Block, BlockIQ4_NLx8>) {
        return iq4_levels<Arch>(q);
      } else {
        return vsubq_s8(vreinterpretq_s8_u8(q), offset);
      }
    };
    for (size_t k = 0; k < 4; ++k) {
      for (size_t h = 0; h < 2; ++h) {
        const uint8x16_t packed = vld1q_u8(b.qs + 32 * k + 16 * h);
        uint8x16_t low = vandq_u8(packed, vdupq_n_u8(0x0F)), high = vshrq_n_u8(packed, 4);
        if constexpr (kFiveBit) {
          low = vorrq_u8(low, fifth_bits<Arch>(b.qh + 4 * h, k));
          high = vorrq_u8(high, fifth_bits<Arch>(b.qh + 4 * h, 4 + k));
        }
        w.quads[k].half[h] = to_signed(low);
        w.quads[4 + k].half[h] = to_signed(high);
      }
    }
  }
  load_scales8<Arch, Block>(b.d, w.d);
  return w;
}

template <class Arch, class Block, size_t K>
inline void interleaved_tile(float *out, size_t out_stride, const Block *group, size_t n_blocks, const Q8Activations &x,
                             size_t token0) {
  using Isa = QuantIsa<Arch>;
  constexpr bool kHasMin = kHasMinimum<Block>;
  float32x4_t acc[K][2], mins[K][2];  // the d terms and m terms of each row, summed apart (x86: W::Sums)
  for (size_t t = 0; t < K; ++t) acc[t][0] = acc[t][1] = mins[t][0] = mins[t][1] = vdupq_n_f32(0.0f);
  for (size_t b = 0; b < n_blocks; ++b) {
    const SignedQuads<Block> w = signed_quads<Arch>(group[b]);
    float32x4_t m[2] = {vdupq_n_f32(0.0f), vdupq_n_f32(0.0f)};
    if constexpr (kHasMin) load_scales8<Arch, Block>(group[b].m, m);
    for (size_t t = 0; t < K; ++t) {
      const size_t xb = (token0 + t) * n_blocks + b;
      const int8_t *xq = x.q + xb * kQuantBlock;
      for (size_t h = 0; h < 2; ++h) {
        int32x4_t sums = vdupq_n_s32(0);
        for (size_t k = 0; k < 8; ++k) sums = dot_quads<Arch>(sums, w.quads[k].half[h], xq + 4 * k);
        acc[t][h] = Isa::fma(acc[t][h], vcvtq_f32_s32(sums), vmulq_f32(w.d[h], vdupq_n_f32(x.scale[xb])));
        if constexpr (kHasMin) {
          mins[t][h] = Isa::fma(mins[t][h], m[h], vdupq_n_f32(x.scale[xb] * static_cast<float>(x.block_sum[xb])));
        }
      }
    }
  }
  for (size_t t = 0; t < K; ++t) {
    for (size_t h = 0; h < 2; ++h)
      vst1q_f32(out + (token0 + t) * out_stride + 4 * h, kHasMin ? vaddq_f32(acc[t][h], mins[t][h]) : acc[t][h]);
  }
}

template <class Arch, class Block>
inline void interleaved_matmul(float *out, size_t out_stride, const Block *w, const Q8Activations &x, size_t rows,
                               size_t cols, size_t n_tokens) {
  const size_t n_blocks = cols / kQuantBlock;
  for (size_t g = 0; g < rows / kInterleave; ++g) {
    size_t t = 0;
    for (; t + 2 <= n_tokens; t += 2)
      interleaved_tile<Arch, Block, 2>(out + g * kInterleave, out_stride, w + g * n_blocks, n_blocks, x, t);
    if (t < n_tokens)
      interleaved_tile<Arch, Block, 1>(out + g * kInterleave, out_stride, w + g * n_blocks, n_blocks, x, t);
  }
}
#endif

template <class Arch>
void matmul_q8_0x8(float *out, size_t out_stride, const BlockQ8_0x8 *w, const Q8Activations &x, size_t rows,
                   size_t cols, size_t n_tokens) {
  interleaved_matmul<Arch>(out, out_stride, w, x, rows, cols, n_tokens);
}
template <class Arch>
void matmul_q4_0x8(float *out, size_t out_stride, const BlockQ4_0x8 *w, const Q8Activations &x, size_t rows,
                   size_t cols, size_t n_tokens) {
  interleaved_matmul<Arch>(out, out_stride, w, x, rows, cols, n_tokens);
}
template <class Arch>
void matmul_q4_1x8(float *out, size_t out_stride, const BlockQ4_1x8 *w, const Q8Activations &x, size_t rows,
                   size_t cols, size_t n_tokens) {
  interleaved_matmul<Arch>(out, out_stride, w, x, rows, cols, n_tokens);
}

template <class Arch>
void matmul_q5_0x8(float *out, size_t out_stride, const BlockQ5_0x8 *w, const Q8Activations &x, size_t rows,
                   size_t cols, size_t n_tokens) {
  interleaved_matmul<Arch>(out, out_stride, w, x, rows, cols, n_tokens);
}
template <class Arch>
void matmul_q5_1x8(float *out, size_t out_stride, const BlockQ5_1x8 *w, const Q8Activations &x, size_t rows,
                   size_t cols, size_t n_tokens) {
  interleaved_matmul<Arch>(out, out_stride, w, x, rows, cols, n_tokens);
}
template <class Arch>
void matmul_iq4_nlx8(float *out, size_t out_stride, const BlockIQ4_NLx8 *w, const Q8Activations &x, size_t rows,
                     size_t cols, size_t n_tokens) {
  interleaved_matmul<Arch>(out, out_stride, w, x, rows, cols, n_tokens);
}

}  // namespace mote::kernels::simd

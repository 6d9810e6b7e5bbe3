// The block decoders of the 32-value row-interleaved x8 layouts on x86 (q4_0x8, q4_1x8, q5_0x8,
// q5_1x8, q8_0x8, iq4_nlx8): each prepares one group block's 8 rows in registers of a lane shape
// (matmul_interleaved_lanes.hpp) and folds it into the sums of K tokens. A group block's exact
// int32 sums for 8 rows come out in one register, and its scale step (convert, multiply by
// d_w * d_x, add) is one instruction each for all 8 rows instead of once per row.
#pragma once

#include <cstddef>
#include <type_traits>

#include "kernels/matmul_interleaved_lanes.hpp"
#include "kernels/quant.hpp"

namespace mote::kernels::simd {

#if defined(__AVX2__)
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
    for (size_t k = 0; k < 4; ++k) sums[k] = dot_add_quad<W>(W::zero(), low[k], xs, k);
    for (size_t k = 0; k < 4; ++k) sums[k] = dot_add_quad<W>(sums[k], high[k], xs, 4 + k);
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
        chains[k % 4] = dot_add_quad<W>(chains[k % 4], w.q[k], xs, k);
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

#endif  // __AVX2__

}  // namespace mote::kernels::simd

// Integer products over the K types' row-interleaved x8 layouts (kernels/quant_k.hpp; quant.hpp
// defines the sum): 32 bytes of a group block hold the same 4 bytes of 8 rows, so one register's
// 32-bit lanes are the rows. A super-block's sub-block scales for all 8 rows come out of three
// (q4_k, q5_k, q3_k), four (q6_k) or one (q2_k) such registers with the plain decoder's bit
// operations, and each 32-value sub-block is eight 4-byte dot steps against broadcast activation
// quads.
#pragma once

#include <cstddef>
#include <type_traits>

#include "kernels/matmul_interleaved.hpp"
#include "kernels/matmul_interleaved_k_pairs.hpp"
#include "kernels/matmul_quant.hpp"
#include "kernels/quant.hpp"
#include "kernels/ref.hpp"

namespace mote::kernels::simd {

// One K x8 type's super-block step: super_block<K>(acc, mins, group block, bytes to the next
// group's block, activations, first activation block of each of K tokens) folds its 8
// sub-blocks into the rows' accumulators; W says how many groups' rows a register holds.
template <class Arch, class Group, class W>
struct KGroupOps;

#if defined(__AVX2__)
#if defined(__AVX512VNNI__) || defined(__AVXVNNI__)
constexpr bool kVnniDots = true;  // vpdpbusd: 4-byte dots into int32, no int16 pair sums
#else
constexpr bool kVnniDots = false;
#endif

// Per row lane: start plus the sum over quads k < N of the 4-byte dot of u[k] (unsigned codes <=
// kMaxCode) with activation bytes x[4k .. 4k + 3], exact. W: Rows8 or Rows16
// (matmul_interleaved_lanes.hpp).
template <class W, int kMaxCode, size_t N>
inline typename W::Ints row_dots(const typename W::Ints *u, const int8_t *x, typename W::Ints start) {
  using Ints = typename W::Ints;
  const typename W::Quads xs = W::quads(x);
#if defined(__AVX512VNNI__) || defined(__AVXVNNI__)
  // One chain: the callers' sub-blocks (and tokens) are independent chains enough to hide
  // vpdpbusd's latency, and a second would cost a zeroing and an add per sub-block.
  Ints sum = start;
#pragma GCC unroll 8
  for (size_t k = 0; k < N; ++k) sum = dot_add_quad<W>(sum, u[k], xs, k);
  return sum;
#else
  // vpmaddubsw pair sums (<= 2 * kMaxCode * 127) added in int16 as far as they cannot overflow.
  constexpr size_t kPerInt16 = 32767 / (2 * kMaxCode * 127);
  static_assert(kPerInt16 >= 1, "one pair sum fits in int16");
  Ints total = start;
#pragma GCC unroll 8
  for (size_t k0 = 0; k0 < N; k0 += kPerInt16) {
    Ints pairs = W::pair_sums(u[k0], W::quad(xs, k0));
    for (size_t k = k0 + 1; k < k0 + kPerInt16 && k < N; ++k)
      pairs = W::add16(pairs, W::pair_sums(u[k], W::quad(xs, k)));
    total = W::add32(total, W::widen(pairs));
  }
  return total;
#endif
}

// Byte j (0..3) of every row's 32-bit word, unsigned, as int32 lanes and as floats.
template <class W>
inline typename W::Ints word_byte_ints(typename W::Ints words, size_t j) {
  return W::unsigned_byte(words, j);
}
template <class W>
inline typename W::Floats word_byte(typename W::Ints words, size_t j) {
  return W::to_float(word_byte_ints<W>(words, j));
}

// acc + (sc0 * h0 + sc1 * h1) * d * d_x of token block xb, per row: the float step of the types
// scaled per 16 values, h0 and h1 the halves' exact dots (the AMX tiles make them too).
template <class W>
inline typename W::Floats add_halves(typename W::Floats acc, typename W::Ints h0, typename W::Ints h1,
                                     typename W::Ints sc0, typename W::Ints sc1, typename W::Floats d,
                                     const Q8Activations &x, size_t xb) {
  const typename W::Ints sums = W::add32(W::mul32(sc0, h0), W::mul32(sc1, h1));
  return W::fma(W::to_float(sums), W::mul(d, W::splat(x.scale[xb])), acc);
}

// The dots of a 16-value half's codes (the first 4 quads at codes, activation bytes at xq) less
// kOffset times the half's activation sum. With int32 dots the chain starts at -kOffset x the sum
// (a broadcast for a shift and a subtraction after: q6_kx8 4-token tiles 1.06x on Zen 4); the int16
// pair sums measured 0.95-0.99x with that start, so they keep the subtraction.
template <class W, int kOffset, int kMaxCode>
inline typename W::Ints half_dots(const typename W::Ints *codes, const int8_t *xq, const Q8Activations &x,
                                  size_t half_index) {
  static_assert((kOffset & (kOffset - 1)) == 0, "the offset is a power of two");
  if constexpr (kOffset == 0) {
    return row_dots<W, kMaxCode, 4>(codes, xq, W::zero());
  } else if constexpr (kVnniDots) {
    return row_dots<W, kMaxCode, 4>(codes, xq, W::words(-kOffset * x.half_sum[half_index]));
  } else {
    const typename W::Ints offsets = W::shift_left32(W::words(x.half_sum[half_index]), log2_exact(kOffset));
    return W::sub32(row_dots<W, kMaxCode, 4>(codes, xq, W::zero()), offsets);
  }
}

// Sub-block s of a type scaled per 16 values (q6_k, q3_k, q2_k) for K tokens: per row
// sum = sc0 * h0 + sc1 * h1, h the dot of (code - kOffset) with each 16-value half's activations
// (unsigned codes <= kMaxCode in the dots, the offset taken off through the halves' sums).
template <class W, int kOffset, int kMaxCode, size_t K>
inline void fold_sixteen(typename W::Floats *acc, const typename W::Ints *codes, typename W::Ints sc0,
                         typename W::Ints sc1, typename W::Floats d, const Q8Activations &x, const size_t *xb0,
                         size_t s) {
  using Ints = typename W::Ints;
#pragma GCC unroll 8
  for (size_t t = 0; t < K; ++t) {
    const size_t xb = xb0[t] + s;
    const int8_t *xq = x.q + xb * kQuantBlock;
    const Ints h0 = half_dots<W, kOffset, kMaxCode>(codes, xq, x, 2 * xb);
    const Ints h1 = half_dots<W, kOffset, kMaxCode>(codes + 4, xq + 16, x, 2 * xb + 1);
    acc[t] = add_halves<W>(acc[t], h0, h1, sc0, sc1, d, x, xb);
  }
}

// q4_kx8 and q5_kx8. rest: the 12 scale bytes (quads 0-2), q5's qh (quads 3-10), then qs.
template <class Arch, class Group, class W>
struct KMinGroupOps {
  using Ints = typename W::Ints;
  using Floats = typename W::Floats;
  static constexpr bool kFifthBit = std::is_same_v<Group, BlockQ5_Kx8>;
  static constexpr size_t kRest = offsetof(Group, rest);
  static constexpr size_t kQsAt = kRest + (kFifthBit ? 12 * 8 + 32 * 8 : 12 * 8);
  static constexpr int kMaxCode = kFifthBit ? 31 : 15;
  // With int32 dots, q4's high nibbles enter where they lie (code * 16: <= 240 * 127 * 32, exact
  // in int32 and in float), one shift fewer per 32 bytes, and those sub-blocks take d / 16:
  // float(16 S) * (d / 16 * sc * d_x) is float(S) * (d * sc * d_x) to the bit, as scaling by a
  // power of two is exact in every rounding (products of real models' scales stay normal).
  static constexpr bool kHighNibblesInPlace = kVnniDots && !kFifthBit;
  // Two sub-blocks per read of their bytes (sub_block_pair) for tiles of several tokens with int32
  // dots, where it measured faster (bench_matvec 1536x1536, 2-8 tokens: 1.0-1.2x avx512_vnni,
  // 1.04-1.6x avx2_vnni); one token (decode) and the int16 pair sums measured no faster or slower
  // (0.8-1.1x; bench/README.md log, 2026-12-07).
  template <size_t K>
  static constexpr bool kPairedSubBlocks = (kVnniDots && K > 1);

  // A super-block's factors for every row: d, dmin and k_scales_mins on 8 rows' words at once
  // (a, b, c are bytes 0-3, 4-7, 8-11 of each row).
  // -dmin * m is -(dmin * m) to the bit (rounding is symmetric), so dmin is negated once.
  struct Factors {
    Floats d, d_high, negative_dmin;  // d_high: the odd (high-nibble) sub-blocks' d
    Ints scales[2], mins[2];
    Floats d_sub(size_t s) const { return W::mul(s % 2 == 0 ? d : d_high, word_byte<W>(scales[s / 4], s % 4)); }
    Floats m_sub(size_t s) const { return W::mul(negative_dmin, word_byte<W>(mins[s / 4], s % 4)); }
  };
  static Factors factors(const Group &g, size_t next) {
    Factors f;
    f.d = W::halves(g.fields, next);
    f.d_high = kHighNibblesInPlace ? W::mul(f.d, W::splat(1.0f / 16.0f)) : f.d;
    f.negative_dmin = W::negate(W::halves(g.fields + 8, next));
    const Ints a = W::load(&g, next, kRest), b = W::load(&g, next, kRest + 32), c = W::load(&g, next, kRest + 64);
    const Ints six = W::bytes(0x3F), four = W::bytes(0x0F), top = W::bytes(0x30);
    f.scales[0] = W::and_(a, six);
    f.scales[1] = W::or_(W::and_(c, four), W::and_(W::shift_right32(a, 2), top));
    f.mins[0] = W::and_(b, six);
    f.mins[1] = W::or_(W::and_(W::shift_right32(c, 4), four), W::and_(W::shift_right32(b, 2), top));
    return f;
  }

  // Sub-block s's 4-bit codes in qs bytes v: the low nibbles (s even) or the high ones.
  static Ints nibbles(Ints v, size_t s) {
    const Ints four = W::bytes(0x0F);
    if constexpr (kHighNibblesInPlace) return W::and_(v, s % 2 == 0 ? four : W::bytes(0xF0));
    return W::and_(s % 2 == 0 ? v : W::shift_right16(v, 4), four);
  }
  // q5: bit s of the qh bytes (qh quad k holds elements 4k .. 4k + 3) moved straight to bit 4
  // (16-bit shifts: what crosses a byte is masked off).
  static Ints fifth_bits(Ints qh, size_t s) {
    const Ints moved = s < 4    ? W::shift_left16(qh, static_cast<int>(4 - s))
                       : s == 4 ? qh
                                : W::shift_right16(qh, static_cast<int>(s - 4));
    return W::and_(moved, W::bytes(0x10));
  }
  static Ints qs_quad(const Group &g, size_t next, size_t j, size_t k) {
    return W::load(&g, next, kQsAt + 256 * j + 32 * k);
  }
  static Ints qh_quad(const Group &g, size_t next, size_t k) { return W::load(&g, next, kRest + 96 + 32 * k); }

  // Sub-block s, one register per quad (re-read per sub-block: 16 live registers would spill on
  // AVX2).
  static void sub_block_codes(Ints *codes, const Group &g, size_t next, size_t s) {
#pragma GCC unroll 8
    for (size_t k = 0; k < 8; ++k) {
      codes[k] = nibbles(qs_quad(g, next, s / 2, k), s);
      if constexpr (kFifthBit) codes[k] = W::or_(codes[k], fifth_bits(qh_quad(g, next, k), s));
    }
  }
  // Quad k of sub-blocks 2j and 2j + 1 from one read of their qs bytes (and of q5's qh quad).
  static void pair_codes(Ints *low, Ints *high, const Group &g, size_t next, size_t j, size_t k) {
    const Ints v = qs_quad(g, next, j, k);
    *low = nibbles(v, 2 * j);
    *high = nibbles(v, 2 * j + 1);
    if constexpr (kFifthBit) {
      const Ints qh = qh_quad(g, next, k);
      *low = W::or_(*low, fifth_bits(qh, 2 * j));
      *high = W::or_(*high, fifth_bits(qh, 2 * j + 1));
    }
  }

  // Token block xb's step: sums are the sub-block's exact code . x dots of every row.
  static void add_sub_block(Floats &acc, Floats &acc_min, Ints sums, Floats d_sub, Floats m_sub, const Q8Activations &x,
                            size_t xb) {
    acc = W::fma(W::to_float(sums), W::mul(d_sub, W::splat(x.scale[xb])), acc);
    acc_min = W::fma(m_sub, W::splat(x.scaled_sum[xb]), acc_min);
  }

  // Sub-blocks 2j and 2j + 1 of K tokens, quad by quad, with int32 dots: each weight register
  // read serves 2K dots where a sub-block at a time serves K. The sums are the same exact
  // integers and the rows' float steps still come in sub-block order: the same bits.
  template <size_t K>
  static void sub_block_pair(Floats *acc, Floats *acc_mins, const Group &g, size_t next, const Factors &f,
                             const Q8Activations &x, const size_t *xb0, size_t j) {
    Ints sums[2][K];
#pragma GCC unroll 8
    for (size_t t = 0; t < K; ++t) sums[0][t] = sums[1][t] = W::zero();
#pragma GCC unroll 8
    for (size_t k = 0; k < 8; ++k) {
      Ints low, high;
      pair_codes(&low, &high, g, next, j, k);
#pragma GCC unroll 8
      for (size_t t = 0; t < K; ++t) {
        const int8_t *xq = x.q + (xb0[t] + 2 * j) * kQuantBlock;
        sums[0][t] = dot_add_quad<W>(sums[0][t], low, W::quads(xq), k);
        sums[1][t] = dot_add_quad<W>(sums[1][t], high, W::quads(xq + kQuantBlock), k);
      }
    }
#pragma GCC unroll 2
    for (size_t h = 0; h < 2; ++h) {
      const size_t s = 2 * j + h;
      const Floats d_sub = f.d_sub(s), m_sub = f.m_sub(s);
#pragma GCC unroll 8
      for (size_t t = 0; t < K; ++t) add_sub_block(acc[t], acc_mins[t], sums[h][t], d_sub, m_sub, x, xb0[t] + s);
    }
  }

#if defined(__AVX512BW__) && defined(__AVX512VNNI__)
  // Decoding in sub-block pairs (zmm_halves): sub-blocks 2j and 2j + 1 share their qs bytes; one
  // mask leaves q4's low nibbles in the low half and the high ones in place (x16, d / 16) in the
  // high half. q5: the high half's nibbles shifted down (its d is not d / 16), and bits 2j,
  // 2j + 1 of the qh bytes moved to bit 4 in each half by a 16-bit shift of its own (left by
  // 4 - s, right by s - 4).
  static constexpr size_t kPairedTokens = kVnniDots && std::is_same_v<W, Rows8<Arch>> ? 2 : 0;
  template <size_t K>
  static void super_block_paired(Floats *acc, Floats *acc_mins, const Group &g, const Q8Activations &x,
                                 const size_t *xb0) {
    const Factors f = factors(g, 0);
    const __m512i four = _mm512_set1_epi8(0x0F);
    const __m512i nibbles = _mm512_inserti64x4(four, _mm256_set1_epi8(static_cast<char>(0xF0)), 1);
    const __m512i nibble_shift = zmm_halves16(0, 4);
#pragma GCC unroll 4
    for (size_t j = 0; j < kSubBlocks / 2; ++j) {
      __m512i xs[K], chains[K][2];
#pragma GCC unroll 4
      for (size_t t = 0; t < K; ++t) {
        xs[t] = BlockPairs<Arch>::quads(x.q + (xb0[t] + 2 * j) * kQuantBlock);
        chains[t][0] = chains[t][1] = _mm512_setzero_si512();
      }
      const int s = static_cast<int>(2 * j);
#pragma GCC unroll 8
      for (size_t k = 0; k < 8; ++k) {
        const __m512i v = broadcast_quad(&g, kQsAt + 256 * j + 32 * k);
        __m512i codes;
        if constexpr (kFifthBit) {
          const __m512i qh = broadcast_quad(&g, kRest + 96 + 32 * k);
          const __m512i moved = s < 4 ? _mm512_sllv_epi16(qh, zmm_halves16(4 - s, 3 - s))
                                      : _mm512_srlv_epi16(qh, zmm_halves16(s - 4, s - 3));
          codes = _mm512_or_si512(_mm512_and_si512(_mm512_srlv_epi16(v, nibble_shift), four),
                                  _mm512_and_si512(moved, _mm512_set1_epi8(0x10)));
        } else {
          static_assert(kHighNibblesInPlace, "q4's high half takes d / 16");
          codes = _mm512_and_si512(v, nibbles);
        }
#pragma GCC unroll 4
        for (size_t t = 0; t < K; ++t)
          chains[t][k % 2] = _mm512_dpbusd_epi32(chains[t][k % 2], codes, BlockPairs<Arch>::quad(xs[t], k));
      }
#pragma GCC unroll 4
      for (size_t t = 0; t < K; ++t) {
        const __m512i sums = _mm512_add_epi32(chains[t][0], chains[t][1]);
        const size_t xb = xb0[t] + 2 * j;
        add_sub_block(acc[t], acc_mins[t], _mm512_castsi512_si256(sums), f.d_sub(2 * j), f.m_sub(2 * j), x, xb);
        add_sub_block(acc[t], acc_mins[t], _mm512_extracti64x4_epi64(sums, 1), f.d_sub(2 * j + 1), f.m_sub(2 * j + 1),
                      x, xb + 1);
      }
    }
  }
#endif

  template <size_t K>
  static void super_block(Floats *acc, Floats *acc_mins, const Group &g, size_t next, const Q8Activations &x,
                          const size_t *xb0) {
    const Factors f = factors(g, next);
    if constexpr (kPairedSubBlocks<K>) {
#pragma GCC unroll 4
      for (size_t j = 0; j < kSubBlocks / 2; ++j) sub_block_pair<K>(acc, acc_mins, g, next, f, x, xb0, j);
    } else {
#pragma GCC unroll 8
      for (size_t s = 0; s < kSubBlocks; ++s) {
        Ints codes[8];
        sub_block_codes(codes, g, next, s);
        const Floats d_sub = f.d_sub(s), m_sub = f.m_sub(s);
#pragma GCC unroll 8
        for (size_t t = 0; t < K; ++t) {
          const size_t xb = xb0[t] + s;
          add_sub_block(acc[t], acc_mins[t], row_dots<W, kMaxCode, 8>(codes, x.q + xb * kQuantBlock, W::zero()), d_sub,
                        m_sub, x, xb);
        }
      }
    }
  }
};

// q6_kx8. rest: ql (quads 0-31), qh (quads 32-47), the 16 int8 scales (quads 48-51).
template <class Arch, class W>
struct KGroupOps<Arch, BlockQ6_Kx8, W> {
  using Ints = typename W::Ints;
  using Floats = typename W::Floats;
  static constexpr size_t kRest = offsetof(BlockQ6_Kx8, rest);
  static void scale_words(Ints *words, const BlockQ6_Kx8 &g, size_t next) {
    for (size_t i = 0; i < 4; ++i) words[i] = W::load(&g, next, kRest + 1536 + 32 * i);
  }
  // The int8 scale of 16-value sub-block i for every row, sign-extended.
  static Ints sub_scale(const Ints *words, size_t i) { return W::signed_byte(words[i / 4], i % 4); }
  // The qh quads of sub-blocks 4 half .. 4 half + 3.
  static void half_qh(Ints *qh, const BlockQ6_Kx8 &g, size_t next, size_t half) {
#pragma GCC unroll 8
    for (size_t k = 0; k < 8; ++k) qh[k] = W::load(&g, next, kRest + 1024 + 32 * (8 * half + k));
  }
  // Sub-block 4 half + j (k_code's half and quarter): unsigned 6-bit codes, one register per quad.
  static void sub_block_codes(Ints *codes, const BlockQ6_Kx8 &g, size_t next, size_t half, size_t j, const Ints *qh) {
    const Ints four = W::bytes(0x0F), high_bits = W::bytes(0x30);
#pragma GCC unroll 8
    for (size_t k = 0; k < 8; ++k) {
      const Ints ql = W::load(&g, next, kRest + 32 * (16 * half + 8 * (j % 2) + k));
      const Ints low = W::and_(j < 2 ? ql : W::shift_right16(ql, 4), four);
      // Bits 2j, 2j + 1 of qh moved straight to bits 4-5 (one shift, or none for j = 2).
      const Ints moved = j < 2    ? W::shift_left16(qh[k], static_cast<int>(4 - 2 * j))
                         : j == 2 ? qh[k]
                                  : W::shift_right16(qh[k], 2);
      codes[k] = W::or_(low, W::and_(moved, high_bits));
    }
  }

#if defined(__AVX512BW__) && defined(__AVX512VNNI__)
  // Decoding in sub-block pairs (zmm_halves): sub-blocks j and j + 2 of a half share their ql
  // bytes (low and high nibbles) and qh quads (bits 2j, 2j + 1 and 2j + 4, 2j + 5); their sums
  // are all made before the float steps, which go in sub-block order.
  static constexpr size_t kPairedTokens = std::is_same_v<W, Rows8<Arch>> ? 2 : 0;
  // A matmul of up to this many tokens (a check of a full draft and more) runs paired steps, a
  // tile of 3-4 tokens two per super-block (the second from L1): 16 rows and 4 tokens of per-16
  // sums in a Rows16 tile spill (bench/README.md, 2026-12-07 "a check's real cost").
  static constexpr size_t kPairedCheckTokens = 16;
  template <size_t K>
  static void super_block_paired(Floats *acc, Floats *, const BlockQ6_Kx8 &g, const Q8Activations &x,
                                 const size_t *xb0) {
    const Floats d = W::halves(g.fields, 0);
    const __m512i four = _mm512_set1_epi8(0x0F), high_bits = _mm512_set1_epi8(0x30);
    // Per half: ql's high nibbles for the second sub-block; qh bits 0-1 | 4-5 and (after a shift
    // right by 2) 2-3 | 6-7 moved to bits 4-5.
    const __m512i nibble_shift = zmm_halves16(0, 4), qh_shift = zmm_halves16(4, 0);
#pragma GCC unroll 2
    for (size_t half = 0; half < 2; ++half) {
      const __m512i scale_words =
          zmm_halves(W::load(&g, 0, kRest + 1536 + 64 * half), W::load(&g, 0, kRest + 1536 + 64 * half + 32));
      __m512i sums[2][K];  // sub-blocks (4 half, 4 half + 2) and (4 half + 1, 4 half + 3) of each token
#pragma GCC unroll 2
      for (size_t p = 0; p < 2; ++p) {
        const auto codes = [&](size_t k) {
          const __m512i ql = broadcast_quad(&g, kRest + 32 * (16 * half + 8 * p + k));
          const __m512i qh = broadcast_quad(&g, kRest + 32 * (32 + 8 * half + k));
          const __m512i moved = _mm512_sllv_epi16(p == 0 ? qh : _mm512_srli_epi16(qh, 2), qh_shift);
          return _mm512_or_si512(_mm512_and_si512(_mm512_srlv_epi16(ql, nibble_shift), four),
                                 _mm512_and_si512(moved, high_bits));
        };
        size_t xb[K];
        for (size_t t = 0; t < K; ++t) xb[t] = xb0[t] + 4 * half + p;
        paired_sixteen<Arch, 32, K>(sums[p], codes, Rows16<Arch>::signed_byte(scale_words, 2 * p),
                                    Rows16<Arch>::signed_byte(scale_words, 2 * p + 1), x, xb, 2);
      }
#pragma GCC unroll 4
      for (size_t j = 0; j < 4; ++j) {
#pragma GCC unroll 4
        for (size_t t = 0; t < K; ++t)
          acc[t] = add_paired_rows<W>(acc[t], sums[j % 2][t], j / 2, d, x, xb0[t] + 4 * half + j);
      }
    }
  }
#endif

  template <size_t K>
  static void super_block(Floats *acc, Floats *, const BlockQ6_Kx8 &g, size_t next, const Q8Activations &x,
                          const size_t *xb0) {
    const Floats d = W::halves(g.fields, next);
    Ints words[4];
    scale_words(words, g, next);
#pragma GCC unroll 2
    for (size_t half = 0; half < 2; ++half) {
      Ints qh[8];
      half_qh(qh, g, next, half);
#pragma GCC unroll 4
      for (size_t j = 0; j < 4; ++j) {
        const size_t s = 4 * half + j;
        Ints codes[8];
        sub_block_codes(codes, g, next, half, j, qh);
        fold_sixteen<W, 32, 63, K>(acc, codes, sub_scale(words, 2 * s), sub_scale(words, 2 * s + 1), d, x, xb0, s);
      }
    }
  }
};

// q3_kx8. rest: hmask (quads 0-7), qs (quads 8-23), the 12 packed scale bytes (quads 24-26).
template <class Arch, class W>
struct KGroupOps<Arch, BlockQ3_Kx8, W> {
  using Ints = typename W::Ints;
  using Floats = typename W::Floats;
  static constexpr size_t kRest = offsetof(BlockQ3_Kx8, rest);

  // q3_k_scale_words on 8 rows' words at once: a, b, c are scale bytes 0-3, 4-7, 8-11 of each
  // row (16-bit shifts: what crosses a byte is masked off).
  static void scale_words(Ints *words, const BlockQ3_Kx8 &g, size_t next) {
    const Ints a = W::load(&g, next, kRest + 768), b = W::load(&g, next, kRest + 800),
               c = W::load(&g, next, kRest + 832);
    const Ints four = W::bytes(0x0F), two = W::bytes(0x03);
    const auto high = [&](int shift) { return W::shift_left16(W::and_(W::shift_right16(c, shift), two), 4); };
    words[0] = W::or_(W::and_(a, four), high(0));
    words[1] = W::or_(W::and_(b, four), high(2));
    words[2] = W::or_(W::and_(W::shift_right16(a, 4), four), high(4));
    words[3] = W::or_(W::and_(W::shift_right16(b, 4), four), high(6));
  }

#if defined(__AVX512BW__) && defined(__AVX512VNNI__)
  // Decoding in sub-block pairs (zmm_halves): sub-blocks 2j and 2j + 1 share their qs bytes
  // (bits 2s, 2s + 1) and every hmask quad (bit s), and their 6-bit scales sit in one word.
  static constexpr size_t kPairedTokens = std::is_same_v<W, Rows8<Arch>> ? 1 : 0;
  template <size_t K>
  static void super_block_paired(Floats *acc_of, Floats *, const BlockQ3_Kx8 &g, const Q8Activations &x,
                                 const size_t *xb0_of) {
    static_assert(K == 1, "q3_kx8 pairs decode one token");
    Floats &acc = acc_of[0];
    const size_t xb0 = xb0_of[0];
    const Floats d = W::halves(g.fields, 0);
    Ints words[4];
    scale_words(words, g, 0);
    const __m512i two = _mm512_set1_epi8(0x03), bit2 = _mm512_set1_epi8(0x04);
    const __m512i thirty_two = _mm512_set1_epi32(32);
#pragma GCC unroll 4
    for (size_t j = 0; j < kSubBlocks / 2; ++j) {
      const int s = static_cast<int>(2 * j);
      const __m512i qs_shift = zmm_halves16(2 * (s % 4), 2 * (s % 4) + 2);
      const auto codes = [&](size_t k) {
        const __m512i qs = broadcast_quad(&g, kRest + 256 + 256 * (j / 2) + 32 * k);
        const __m512i hm = broadcast_quad(&g, kRest + 32 * k);
        const __m512i moved = s < 2    ? _mm512_sllv_epi16(hm, zmm_halves16(2 - s, 1 - s))
                              : s == 2 ? _mm512_srlv_epi16(hm, zmm_halves16(0, 1))
                                       : _mm512_srlv_epi16(hm, zmm_halves16(s - 2, s - 1));
        return _mm512_or_si512(_mm512_and_si512(_mm512_srlv_epi16(qs, qs_shift), two), _mm512_and_si512(moved, bit2));
      };
      // Sub-block s's scales are bytes 0 and 1 of scale word s / 2, s + 1's bytes 2 and 3.
      const __m512i scales = zmm_halves(words[j], words[j]);
      const auto scale = [&](size_t e) {
        const __m512i picker =
            zmm_halves(_mm256_broadcastsi128_si256(byte_picker(e)), _mm256_broadcastsi128_si256(byte_picker(e + 2)));
        return _mm512_sub_epi32(_mm512_shuffle_epi8(scales, picker), thirty_two);
      };
      const size_t xb = xb0 + s;
      __m512i sums;
      paired_sixteen<Arch, 4, 1>(&sums, codes, scale(0), scale(1), x, &xb, 1);
      acc = add_paired_rows<W>(acc, sums, 0, d, x, xb0 + s);
      acc = add_paired_rows<W>(acc, sums, 1, d, x, xb0 + s + 1);
    }
  }
#endif

  template <size_t K>
  static void super_block(Floats *acc, Floats *, const BlockQ3_Kx8 &g, size_t next, const Q8Activations &x,
                          const size_t *xb0) {
    const Floats d = W::halves(g.fields, next);
    const Ints two = W::bytes(0x03);
    Ints words[4];
    scale_words(words, g, next);
#pragma GCC unroll 8
    for (size_t s = 0; s < kSubBlocks; ++s) {
      Ints codes[8];  // k_code: 2 bits of qs byte 32 (s / 4) + l, bit s of hmask[l] as bit 2
#pragma GCC unroll 8
      for (size_t k = 0; k < 8; ++k) {
        const Ints qs = W::load(&g, next, kRest + 256 + 256 * (s / 4) + 32 * k);
        const Ints hm = W::load(&g, next, kRest + 32 * k);
        const Ints moved = s < 2    ? W::shift_left16(hm, static_cast<int>(2 - s))
                           : s == 2 ? hm
                                    : W::shift_right16(hm, static_cast<int>(s - 2));
        codes[k] =
            W::or_(W::and_(W::shift_right16(qs, static_cast<int>(2 * (s % 4))), two), W::and_(moved, W::bytes(0x04)));
      }
      const Ints sc0 = W::sub32(word_byte_ints<W>(words[s / 2], (2 * s) % 4), W::words(32));
      const Ints sc1 = W::sub32(word_byte_ints<W>(words[s / 2], (2 * s + 1) % 4), W::words(32));
      fold_sixteen<W, 4, 7, K>(acc, codes, sc0, sc1, d, x, xb0, s);
    }
  }
};

// q2_kx8. rest: the 16 scale bytes (scale | min << 4, quads 0-3), then qs (quads 4-19).
template <class Arch, class W>
struct KGroupOps<Arch, BlockQ2_Kx8, W> {
  using Ints = typename W::Ints;
  using Floats = typename W::Floats;
  static constexpr size_t kRest = offsetof(BlockQ2_Kx8, rest);

#if defined(__AVX512BW__) && defined(__AVX512VNNI__)
  // Decoding in sub-block pairs (zmm_halves): sub-blocks 2j and 2j + 1 share their qs bytes
  // (bits 2s, 2s + 1), and their scale | min bytes are bytes 0-1 and 2-3 of one word.
  static constexpr size_t kPairedTokens = std::is_same_v<W, Rows8<Arch>> ? 1 : 0;
  template <size_t K>
  static void super_block_paired(Floats *acc_of, Floats *acc_min_of, const BlockQ2_Kx8 &g, const Q8Activations &x,
                                 const size_t *xb0_of) {
    static_assert(K == 1, "q2_kx8 pairs decode one token");
    Floats &acc = acc_of[0], &acc_min = acc_min_of[0];
    const size_t xb0 = xb0_of[0];
    const Floats d = W::halves(g.fields, 0), dmin = W::halves(g.fields + 8, 0);
    const __m512i two = _mm512_set1_epi8(0x03), four = _mm512_set1_epi32(0x0F);
#pragma GCC unroll 4
    for (size_t j = 0; j < kSubBlocks / 2; ++j) {
      const size_t s = 2 * j, xb = xb0 + s;
      const __m512i qs_shift = zmm_halves16(static_cast<int>(2 * (s % 4)), static_cast<int>(2 * (s % 4) + 2));
      const auto codes = [&](size_t k) {
        return _mm512_and_si512(_mm512_srlv_epi16(broadcast_quad(&g, kRest + 128 + 256 * (s / 4) + 32 * k), qs_shift),
                                two);
      };
      const __m512i word = broadcast_quad(&g, kRest + 32 * j);
      const auto byte = [&](size_t e) {
        return _mm512_shuffle_epi8(word, zmm_halves(_mm256_broadcastsi128_si256(byte_picker(e)),
                                                    _mm256_broadcastsi128_si256(byte_picker(e + 2))));
      };
      const __m512i byte0 = byte(0), byte1 = byte(1);
      __m512i sums;
      paired_sixteen<Arch, 0, 1>(&sums, codes, _mm512_and_si512(byte0, four), _mm512_and_si512(byte1, four), x, &xb, 1);
      const __m512i mins =
          _mm512_add_epi32(_mm512_mullo_epi32(_mm512_srli_epi32(byte0, 4), half_sums(x, xb, xb + 1, 0)),
                           _mm512_mullo_epi32(_mm512_srli_epi32(byte1, 4), half_sums(x, xb, xb + 1, 1)));
#pragma GCC unroll 2
      for (size_t h = 0; h < 2; ++h) {
        acc = add_paired_rows<W>(acc, sums, h, d, x, xb + h);
        const __m256i m = h == 0 ? _mm512_castsi512_si256(mins) : _mm512_extracti64x4_epi64(mins, 1);
        acc_min = W::fma(W::to_float(m), W::negate(W::mul(dmin, W::splat(x.scale[xb + h]))), acc_min);
      }
    }
  }
#endif

  template <size_t K>
  static void super_block(Floats *acc, Floats *acc_mins, const BlockQ2_Kx8 &g, size_t next, const Q8Activations &x,
                          const size_t *xb0) {
    const Floats d = W::halves(g.fields, next), dmin = W::halves(g.fields + 8, next);
    const Ints four = W::words(0x0F);
#pragma GCC unroll 8
    for (size_t s = 0; s < kSubBlocks; ++s) {
      Ints codes[8];
#pragma GCC unroll 8
      for (size_t k = 0; k < 8; ++k) {
        const Ints qs = W::load(&g, next, kRest + 128 + 256 * (s / 4) + 32 * k);
        codes[k] = W::and_(W::shift_right16(qs, static_cast<int>(2 * (s % 4))), W::bytes(0x03));
      }
      // Scale bytes 2s and 2s + 1: each 16-value half's scale (low nibble) and min (high).
      const Ints word = W::load(&g, next, kRest + 32 * (s / 2));
      const Ints byte0 = word_byte_ints<W>(word, (2 * s) % 4), byte1 = word_byte_ints<W>(word, (2 * s + 1) % 4);
      fold_sixteen<W, 0, 3, K>(acc, codes, W::and_(byte0, four), W::and_(byte1, four), d, x, xb0, s);
      const Ints mn0 = W::shift_right32(byte0, 4), mn1 = W::shift_right32(byte1, 4);
#pragma GCC unroll 8
      for (size_t t = 0; t < K; ++t) {
        const size_t xb = xb0[t] + s;
        const Ints m =
            W::add32(W::mul32(mn0, W::words(x.half_sum[2 * xb])), W::mul32(mn1, W::words(x.half_sum[2 * xb + 1])));
        acc_mins[t] = W::fma(W::to_float(m), W::negate(W::mul(dmin, W::splat(x.scale[xb]))), acc_mins[t]);
      }
    }
  }
};

// The rows' results: acc + mins, one float per row.
template <class W>
inline void store_rows(float *out, typename W::Floats acc, typename W::Floats mins) {
  W::store(out, W::add(acc, mins));
}
#endif  // __AVX2__

}  // namespace mote::kernels::simd

// The NEON super-block steps (KGroupOps for NeonRows8).
#include "kernels/matmul_interleaved_k_neon.hpp"  // IWYU pragma: keep

namespace mote::kernels::simd {

#if defined(__AVX2__) || defined(__ARM_NEON)
template <class Arch, class W>
struct KGroupOps<Arch, BlockQ4_Kx8, W> : KMinGroupOps<Arch, BlockQ4_Kx8, W> {};
template <class Arch, class W>
struct KGroupOps<Arch, BlockQ5_Kx8, W> : KMinGroupOps<Arch, BlockQ5_Kx8, W> {};

// Up to how many tokens a type's steps run in sub-block pairs (Ops::super_block_paired, AVX-512
// VNNI, one group); 0 where the type has no such step on this ISA.
template <class Ops, class = void>
struct PairedTokens : std::integral_constant<size_t, 0> {};
template <class Ops>
struct PairedTokens<Ops, std::void_t<decltype(Ops::kPairedTokens)>>
    : std::integral_constant<size_t, Ops::kPairedTokens> {};
// Up to how many tokens a matmul (a speculative check) runs in paired steps, one group at a time
// (Ops::kPairedCheckTokens; PairedTokens where the type has none).
template <class Ops, class = void>
struct PairedCheckTokens : PairedTokens<Ops> {};
template <class Ops>
struct PairedCheckTokens<Ops, std::void_t<decltype(Ops::kPairedCheckTokens)>>
    : std::integral_constant<size_t, Ops::kPairedCheckTokens> {};

// W::kGroups groups of 8 rows from `group` (each n_super blocks) against K tokens from token0,
// every super-block.
template <class Arch, class Group, class W, size_t K>
inline void k_group_tile(float *out, size_t out_stride, const Group *group, size_t n_super, const Q8Activations &x,
                         size_t token0) {
  const size_t next = n_super * sizeof(Group);
  typename W::Floats acc[K], mins[K];
#pragma GCC unroll 8
  for (size_t t = 0; t < K; ++t) acc[t] = mins[t] = W::fzero();
  for (size_t sb = 0; sb < n_super; ++sb) {
    prefetch_weights<Arch, W, sizeof(Group), K>(group, next, sb * sizeof(Group));
    size_t xb0[K];
    for (size_t t = 0; t < K; ++t) xb0[t] = ((token0 + t) * n_super + sb) * kSubBlocks;
    using Ops = KGroupOps<Arch, Group, W>;
    constexpr size_t P = PairedTokens<Ops>::value;
    // A table that decodes in ymm (DecodesInYmm: Zen 4) runs no paired steps: its one-group tiles
    // are Rows8 steps for any number of tokens (q6_kx8's checks too: 1.15x the paired steps there).
    constexpr bool kPairs = !DecodesInYmm<Arch>::value;
    if constexpr (kPairs && K <= P) {
      Ops::template super_block_paired<K>(acc, mins, group[sb], x, xb0);
    } else if constexpr (kPairs && K <= 2 * P && K <= PairedCheckTokens<Ops>::value) {
      // The first P tokens, then the rest over the same super-block (in L1 by then).
      Ops::template super_block_paired<P>(acc, mins, group[sb], x, xb0);
      Ops::template super_block_paired<K - P>(acc + P, mins + P, group[sb], x, xb0 + P);
    } else {
      Ops::template super_block<K>(acc, mins, group[sb], next, x, xb0);
    }
  }
#pragma GCC unroll 8
  for (size_t t = 0; t < K; ++t) store_rows<W>(out + (token0 + t) * out_stride, acc[t], mins[t]);
}

// Tokens sharing each decoded super-block when prefilling.
#if defined(__AVX2__)
constexpr size_t kKGroupTokens = 4;
#else
constexpr size_t kKGroupTokens = 2;
#endif

// n_tokens <= kKGroupTokens tokens as one tile of exactly that many (K counts down).
template <class Arch, class Group, class W, size_t K>
inline void k_group_rest(float *out, size_t out_stride, const Group *group, size_t n_super, const Q8Activations &x,
                         size_t token0, size_t n_tokens) {
  if (n_tokens == K) {
    k_group_tile<Arch, Group, W, K>(out, out_stride, group, n_super, x, token0);
  } else if constexpr (K > 1) {
    k_group_rest<Arch, Group, W, K - 1>(out, out_stride, group, n_super, x, token0, n_tokens);
  }
}

// Groups g0 .. g_end - 1 against tokens t0 .. t0 + n - 1 (n <= kKGroupTokens), two groups at a
// time where two_groups says so (AVX-512 only).
template <class Arch, class Group>
inline void k_group_run(float *out, size_t out_stride, const Group *w, size_t n_super, const Q8Activations &x,
                        size_t g0, size_t g_end, size_t t0, size_t n, [[maybe_unused]] bool two_groups) {
  constexpr size_t T = kKGroupTokens;
  size_t g = g0;
#if defined(__AVX512BW__)
  for (; two_groups && g + 2 <= g_end; g += 2)
    k_group_rest<Arch, Group, Rows16<Arch>, T>(out + g * kInterleave, out_stride, w + g * n_super, n_super, x, t0, n);
#endif
#if defined(__AVX2__)
  using Narrow = Rows8<Arch>;
#else
  using Narrow = NeonRows8<Arch>;
#endif
  for (; g < g_end; ++g)
    k_group_rest<Arch, Group, Narrow, T>(out + g * kInterleave, out_stride, w + g * n_super, n_super, x, t0, n);
}

// Whether a tile of n of the n_tokens reads two groups side by side (AVX-512): a prompt's tiles do
// (two_groups_per_tile), a check of up to PairedCheckTokens runs paired steps one group at a time.
template <class Arch, class Group>
inline bool k_two_groups([[maybe_unused]] size_t n_tokens, [[maybe_unused]] size_t n) {
#if defined(__AVX512BW__)
  return two_groups_per_tile<Arch>(n) && n_tokens > PairedCheckTokens<KGroupOps<Arch, Group, Rows8<Arch>>>::value;
#else
  return false;
#endif
}

template <class Arch, class Group>
inline void k_interleaved_matmul(float *out, size_t out_stride, const Group *w, const Q8Activations &x, size_t rows,
                                 size_t cols, size_t n_tokens) {
  constexpr size_t T = kKGroupTokens;
  const size_t n_super = cols / kSuperBlock, n_groups = rows / kInterleave;
  // As interleaved_matmul: a run of groups stays in L2 while every token tile passes over it
  // (one tile of tokens passes once: all groups form one run); runs are even, so groups pair up.
  const size_t group_bytes = n_super * sizeof(Group);
  size_t run = n_tokens <= T ? n_groups : group_bytes < kRowBlockBytes ? kRowBlockBytes / group_bytes : 1;
  run += run % 2;
  for (size_t g0 = 0; g0 < n_groups; g0 += run) {
    const size_t g_end = g0 + run < n_groups ? g0 + run : n_groups;
    for (size_t t = 0; t < n_tokens; t += T) {
      const size_t n = n_tokens - t < T ? n_tokens - t : T;
      k_group_run<Arch>(out, out_stride, w, n_super, x, g0, g_end, t, n, k_two_groups<Arch, Group>(n_tokens, n));
    }
  }
}
#else
// No SIMD x8 K products on this ISA: the scalar twin (the same sum, so the same bits).
template <class Arch, class Group>
inline void k_interleaved_matmul(float *out, size_t out_stride, const Group *w, const Q8Activations &x, size_t rows,
                                 size_t cols, size_t n_tokens) {
  if constexpr (std::is_same_v<Group, BlockQ4_Kx8>) ref::matmul_q4_kx8(out, out_stride, w, x, rows, cols, n_tokens);
  if constexpr (std::is_same_v<Group, BlockQ5_Kx8>) ref::matmul_q5_kx8(out, out_stride, w, x, rows, cols, n_tokens);
  if constexpr (std::is_same_v<Group, BlockQ6_Kx8>) ref::matmul_q6_kx8(out, out_stride, w, x, rows, cols, n_tokens);
  if constexpr (std::is_same_v<Group, BlockQ3_Kx8>) ref::matmul_q3_kx8(out, out_stride, w, x, rows, cols, n_tokens);
  if constexpr (std::is_same_v<Group, BlockQ2_Kx8>) ref::matmul_q2_kx8(out, out_stride, w, x, rows, cols, n_tokens);
}
#endif

template <class Arch>
void matmul_q4_kx8(float *out, size_t out_stride, const BlockQ4_Kx8 *w, const Q8Activations &x, size_t rows,
                   size_t cols, size_t n_tokens) {
  k_interleaved_matmul<Arch>(out, out_stride, w, x, rows, cols, n_tokens);
}
template <class Arch>
void matmul_q5_kx8(float *out, size_t out_stride, const BlockQ5_Kx8 *w, const Q8Activations &x, size_t rows,
                   size_t cols, size_t n_tokens) {
  k_interleaved_matmul<Arch>(out, out_stride, w, x, rows, cols, n_tokens);
}
template <class Arch>
void matmul_q6_kx8(float *out, size_t out_stride, const BlockQ6_Kx8 *w, const Q8Activations &x, size_t rows,
                   size_t cols, size_t n_tokens) {
  k_interleaved_matmul<Arch>(out, out_stride, w, x, rows, cols, n_tokens);
}

template <class Arch>
void matmul_q3_kx8(float *out, size_t out_stride, const BlockQ3_Kx8 *w, const Q8Activations &x, size_t rows,
                   size_t cols, size_t n_tokens) {
  k_interleaved_matmul<Arch>(out, out_stride, w, x, rows, cols, n_tokens);
}
template <class Arch>
void matmul_q2_kx8(float *out, size_t out_stride, const BlockQ2_Kx8 *w, const Q8Activations &x, size_t rows,
                   size_t cols, size_t n_tokens) {
  k_interleaved_matmul<Arch>(out, out_stride, w, x, rows, cols, n_tokens);
}

}  // namespace mote::kernels::simd

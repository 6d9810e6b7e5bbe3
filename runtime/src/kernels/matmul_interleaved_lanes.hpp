// The registers a tile of the row-interleaved x8 layouts works in (kernels/quant.hpp), on x86:
// one vector register holds 4 quant bytes of each of 8 rows, so the integer lanes are the rows.
// Rows8 (one group block's 8 rows in a ymm), Rows16 (two groups side by side in a zmm) and
// BlockPairs (two blocks of one group in a zmm), with the activation quads they broadcast, and
// the prefetch that streams the weights (every ISA). The block decoders are in
// matmul_interleaved_blocks.hpp, the drivers (and NEON's lanes) in matmul_interleaved.hpp.
#pragma once

#include <cstddef>
#include <type_traits>

#include "kernels/matmul_quant.hpp"
#include "kernels/quant.hpp"
#include "kernels/simd.hpp"

namespace mote::kernels::simd {

// Whether a table decodes (one token) the K types one sub-block per ymm (Rows8) rather than two
// per zmm (super_block_paired), and so checks of 2 tokens (its quantized kernels' tag says so
// with `kDecodeInYmm = true`); q6_kx8's checks of 3-16 tokens keep their paired steps. For CPUs
// whose 512-bit operations run as two 256-bit halves (AMD Zen 4: the avx512_vnni_ymm table,
// kernels_avx512_vnni.cpp), where a zmm's shuffles cost two of a ymm's and the pairs decode
// slower. The 32-value types keep BlockPairs there: faster in L2 in ymm (1.26-1.44x) but
// no faster in a model's decode (SmolLM2 Q4_1 256.8, 260.3 -> 248.0, 236.2 tok/s; bench/README.md
// "a Zen 4 host").
template <class Arch, class = void>
struct DecodesInYmm : std::false_type {};
template <class Arch>
struct DecodesInYmm<Arch, std::void_t<decltype(Arch::kDecodeInYmm)>> : std::bool_constant<Arch::kDecodeInYmm> {};

// Whether a table's one-token tiles ask for their weights a second time, nearer
// (kCatchUpPrefetchBytes; `kSecondPrefetch = true` in its kernels' tag: the avx512_vnni_ymm table).
template <class Arch, class = void>
struct SecondPrefetch : std::false_type {};
template <class Arch>
struct SecondPrefetch<Arch, std::void_t<decltype(Arch::kSecondPrefetch)>> : std::bool_constant<Arch::kSecondPrefetch> {
};

// How far ahead of its reads a tile asks for weights, in each group it reads (a prefetch never
// faults, even past a matrix's end). A core streaming from DRAM needs about latency x bandwidth
// (~100 ns x 33 GB/s, 3.3 KB) in flight; 2048 left it waiting, worst where a batch of 2-8 tokens
// spends longer on each block (bench/README.md log, 2026-12-06, issue 37.1).
constexpr size_t kPrefetchBytes = 8192;

// A one-token tile on a SecondPrefetch table (AMD Zen 4's) asks for its lines a second time,
// this far ahead, where a model's decode left the far requests late (perf: a fifth of q4_kx8's
// decode samples on the far prefetch instructions, a sixth on its loads; why the avx512_vnni
// table's own instance of the same code suffers less is not known). Zen 4, new / old in pairs:
// Qwen2.5-Coder-1.5B 1 thread 1.14x (1.03-1.16), 2 threads 1.06x; SmolLM2 Q8_0 1.24x, Q4_0
// 1.06x, Q4_K_M / Q6_K / Q4_1 1.01-1.02x; 2048 ahead 1.07x, 1024 1.02x, 6144 as 4096; the
// matrix's first lines asked for up front instead 1.07x alone and less with this; on the
// avx512_vnni table no gain (bench/README.md, 2026-12-07 "a second prefetch"). In L2 the extra
// requests cost the K kernels 10-16% (bench_matvec 1536x1536): a decode from DRAM is what pays
// for them, and a check (2+ tokens) spends long enough on each block without them.
constexpr size_t kCatchUpPrefetchBytes = 4096;

// The weights stream from memory once per pass: ask for the bytes kDistance past byte `at`
// of each of the W::kGroups groups a tile reads side by side (`next` bytes apart). Past a
// group's end they are a later tile's: W::kGroups groups on per group passed, so that two
// streams read side by side do not fetch each other's bytes. The hardware prefetcher alone left
// a decoding core waiting on these loads at under half its bandwidth (perf: most samples on the
// first use of each block).
template <class W, size_t kBytes, size_t kDistance = kPrefetchBytes>
inline void prefetch_ahead(const void *groups, size_t next, size_t at) {
  size_t ahead = at + kDistance;
  const char *base = static_cast<const char *>(groups);
  if constexpr (W::kGroups > 1) {
    for (; ahead >= next; ahead -= next) base += W::kGroups * next;
  }
  base += ahead;
#pragma GCC unroll 2
  for (size_t g = 0; g < W::kGroups; ++g) {
    // Unrolled in full (GCC stops at 16 lines on its own): a K x8 block's 18-27 lines were a
    // 4-instruction loop per line, a taken branch each (q6_kx8: 104 of 832 decode instructions).
#pragma GCC unroll 32
    for (size_t line = 0; line < kBytes; line += 64)
      __builtin_prefetch(base + g * next + line, 0, kWeightPrefetchLocality);
  }
}

// A tile's prefetch of kBytes of each group it reads, at byte `at`, for K tokens: kPrefetchBytes
// ahead, and for one token on a SecondPrefetch table kCatchUpPrefetchBytes ahead too.
template <class Arch, class W, size_t kBytes, size_t K>
inline void prefetch_weights(const void *groups, size_t next, size_t at) {
  prefetch_ahead<W, kBytes>(groups, next, at);
  if constexpr (K == 1 && SecondPrefetch<Arch>::value)
    prefetch_ahead<W, kBytes, kCatchUpPrefetchBytes>(groups, next, at);
}

#if defined(__AVX2__)
// The activation block of one token: its quants, d, the sum of its quants and d * that sum.
struct TokenBlock {
  const int8_t *q;
  const float *scale;  // this block's (BlockPairs: and the next one's)
  const int32_t *sum;
  const float *scaled_sum;
};

// The shuffle control that moves byte j of each 32-bit word of a 128-bit lane to the word's
// low byte and zeroes the rest.
inline __m128i byte_picker(size_t j) {
  const char b = static_cast<char>(j), z = static_cast<char>(0x80);
  return _mm_setr_epi8(b, z, z, z, static_cast<char>(b + 4), z, z, z, static_cast<char>(b + 8), z, z, z,
                       static_cast<char>(b + 12), z, z, z);
}

// Four activation bytes as one word (to broadcast to every 32-bit lane).
inline int32_t quad_word(const int8_t *q) {
  int32_t quad;
  __builtin_memcpy(&quad, q, sizeof quad);
  return quad;
}

#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
// acc + the 4-byte dots of u with the activation quad at q in every 32-bit lane: vpdpbusd taking
// the quad by a broadcast load of its own ({1to8}, {1to16}). GCC emits _mm*_set1_epi32 feeding
// vpdpbusd as a separate vpbroadcastd, one more instruction per dot: folded, the K kernels run
// 1.10-1.14x as fast in L2 on Zen 4 (bench/README.md, 2026-12-07 "embedded broadcast").
typedef int32_t __attribute__((may_alias)) AliasedWord;
inline __m256i dot_add_broadcast(__m256i acc, __m256i u, const int8_t *q) {
  asm("vpdpbusd %2%{1to8%}, %1, %0" : "+v"(acc) : "v"(u), "m"(*reinterpret_cast<const AliasedWord *>(q)));
  return acc;
}
inline __m512i dot_add_broadcast(__m512i acc, __m512i u, const int8_t *q) {
  asm("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(u), "m"(*reinterpret_cast<const AliasedWord *>(q)));
  return acc;
}
#endif

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
  static constexpr bool kQuadsInMemory = true;  // quad() reads the block (dot_add_quad)
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
  static Ints shift_left32(Ints v, int n) { return _mm256_slli_epi32(v, n); }
  // Byte j of every 32-bit lane, sign-extended.
  static Ints signed_byte(Ints v, size_t j) {
    return _mm256_srai_epi32(_mm256_sllv_epi32(v, words(static_cast<int>(24 - 8 * j))), 24);
  }
  // Byte j of every 32-bit lane, zero-extended: one shuffle where a shift and a mask take two.
  static Ints unsigned_byte(Ints v, size_t j) {
    return _mm256_shuffle_epi8(v, _mm256_broadcastsi128_si256(byte_picker(j)));
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
  static Floats token_scaled_sums(const TokenBlock &x) { return splat(x.scaled_sum[0]); }
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
  static constexpr bool kQuadsInMemory = true;  // quad() reads the block (dot_add_quad)
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
  static Ints shift_left32(Ints v, int n) { return _mm512_slli_epi32(v, static_cast<unsigned>(n)); }
  static Ints signed_byte(Ints v, size_t j) {
    return _mm512_srai_epi32(_mm512_sllv_epi32(v, words(static_cast<int>(24 - 8 * j))), 24);
  }
  static Ints unsigned_byte(Ints v, size_t j) { return _mm512_shuffle_epi8(v, _mm512_broadcast_i32x4(byte_picker(j))); }
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
  static Floats token_scaled_sums(const TokenBlock &x) { return splat(x.scaled_sum[0]); }
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
  static constexpr bool kQuadsInMemory = false;  // quad() spreads a register (dot_add_quad)
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
    return _mm512_insertf32x8(_mm512_set1_ps(x.scaled_sum[0]), _mm256_set1_ps(x.scaled_sum[1]), 1);
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

// W::dot_add with quad k of an activation block. Where quads are read from the block as used
// (Rows8, Rows16) and AVX-512 VNNI is there, the quad's broadcast is the dot's own load.
template <class W>
inline typename W::Ints dot_add_quad(typename W::Ints acc, typename W::Ints u, typename W::Quads q, size_t k) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
  if constexpr (W::kQuadsInMemory) return dot_add_broadcast(acc, u, q + 4 * k);
#endif
  return W::dot_add(acc, u, W::quad(q, k));
}

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

#endif  // __AVX2__

}  // namespace mote::kernels::simd

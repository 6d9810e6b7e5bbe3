// Integer products over the row-interleaved x8 layouts (kernels/quant.hpp): one vector register
// holds 4 quant bytes of each of 8 rows, so the integer lanes are the rows. A group block's
// exact int32 sums for 8 rows come out in one register, and its scale step (convert, multiply by
// d_w * d_x, add) is one instruction each for all 8 rows instead of once per row.
// This file drives the tiles (which lane shape, how many tokens, prefill or decode); on x86 the
// registers are in matmul_interleaved_lanes.hpp and each layout's decoder in
// matmul_interleaved_blocks.hpp; NEON's whole path is below.
#pragma once

#include <cstddef>
#include <type_traits>

#include "kernels/matmul_interleaved_blocks.hpp"
#include "kernels/matmul_interleaved_lanes.hpp"
#include "kernels/matmul_quant.hpp"
#include "kernels/quant.hpp"
#include "kernels/simd.hpp"

namespace mote::kernels::simd {

#if defined(__AVX2__)
// Blocks b .. b + W::kBlocks - 1 of W::kGroups groups from `group` folded into sums, K tokens.
template <class Arch, class Block, class W, size_t K>
inline void interleaved_step(typename W::Sums *sums, const Block *group, size_t n_blocks, const Q8Activations &x,
                             size_t token0, size_t b) {
  using Ops = InterleavedBlock<Arch, Block, W>;
  const size_t group_bytes = n_blocks * sizeof(Block);
  prefetch_weights<Arch, W, W::kBlocks * sizeof(Block), K>(group, group_bytes, b * sizeof(Block));
  const typename Ops::Prepared w = Ops::prepare(group[b], W::kBlocks == 2 ? sizeof(Block) : group_bytes);
#pragma GCC unroll 8
  for (size_t t = 0; t < K; ++t) {
    const size_t xb = (token0 + t) * n_blocks + b;
    Ops::accumulate(sums[t], w, TokenBlock{x.q + xb * kQuantBlock, x.scale + xb, x.block_sum + xb, x.scaled_sum + xb});
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
// decoded slower than one although the kernel is faster on weights in L2 (bench/README.md, "Tuning
// decisions"). Nor for two tokens, a short verify pass as bound by the stream (Qwen2.5-1.5B
// Q4_K_M pp2 39-47 -> 57 tok/s with one group: bench/README.md log, 2026-12-06, issue 37.1);
// from 3 tokens on each block is reused enough.
template <class Arch>
inline bool two_groups_per_tile(size_t n) {
  return n > 2;
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

// Quad `lane` (0..3: bytes 4 lane .. 4 lane + 3) of x16 in every 32-bit lane.
inline int8x16_t quad_of(int8x16_t x16, int lane) {
  const int32x4_t v = vreinterpretq_s32_s8(x16);
  switch (lane) {  // the lane must be an immediate; after unrolling the switch folds away
    case 0: return vreinterpretq_s8_s32(vdupq_lane_s32(vget_low_s32(v), 0));
    case 1: return vreinterpretq_s8_s32(vdupq_lane_s32(vget_low_s32(v), 1));
    case 2: return vreinterpretq_s8_s32(vdupq_lane_s32(vget_high_s32(v), 0));
    default: return vreinterpretq_s8_s32(vdupq_lane_s32(vget_high_s32(v), 1));
  }
}

// acc[i] += sum_j w[4 i + j] * xq[4 i + j] for the 4 rows of w, xq the same quad in every lane:
// the widening multiplies and pairwise adds of CPUs without the dot-product extension.
inline int32x4_t dot_broadcast(int32x4_t acc, int8x16_t w, int8x16_t xq) {
  const int32x4_t low = vpaddlq_s16(vmull_s8(vget_low_s8(w), vget_low_s8(xq)));     // rows 0, 1: two pairs each
  const int32x4_t high = vpaddlq_s16(vmull_s8(vget_high_s8(w), vget_high_s8(xq)));  // rows 2, 3
  const int32x2_t rows01 = vpadd_s32(vget_low_s32(low), vget_high_s32(low));
  const int32x2_t rows23 = vpadd_s32(vget_low_s32(high), vget_high_s32(high));
  return vaddq_s32(acc, vcombine_s32(rows01, rows23));
}

// acc[i] += the 4-byte dot of row i of w with activation quad `lane` of x16 (16 activation bytes
// loaded once): sdot by element, so no broadcast per quad, where the CPU has the dot-product
// extension.
template <class Arch>
inline int32x4_t dot_lane(int32x4_t acc, int8x16_t w, int8x16_t x16, int lane) {
#if defined(__ARM_FEATURE_DOTPROD) && defined(__aarch64__)
  switch (lane) {
    case 0: return vdotq_laneq_s32(acc, w, x16, 0);
    case 1: return vdotq_laneq_s32(acc, w, x16, 1);
    case 2: return vdotq_laneq_s32(acc, w, x16, 2);
    default: return vdotq_laneq_s32(acc, w, x16, 3);
  }
#elif defined(__ARM_FEATURE_DOTPROD)
  return vdotq_s32(acc, w, quad_of(x16, lane));
#else
  return dot_broadcast(acc, w, quad_of(x16, lane));
#endif
}

// Per row: sum over quads k < N of w[k] dotted with activation quad First + k of xs (16 bytes a
// register, so quads 4i .. 4i + 3 in xs[i]). One chain: splitting it in two gained a little on
// the A55 model and lost on the A76 (llvm-mca, bench/mca).
template <class Arch, size_t N, size_t First = 0>
inline int32x4_t row_dots(const int8x16_t *w, const int8x16_t *xs) {
  int32x4_t sums = vdupq_n_s32(0);
#pragma GCC unroll 8
  for (size_t k = 0; k < N; ++k) sums = dot_lane<Arch>(sums, w[k], xs[(First + k) / 4], static_cast<int>((First + k) % 4));
  return sums;
}

// --- the K layouts' helpers (matmul_interleaved_k.hpp) ---
inline uint8x16_t row_bytes(const uint8_t *p, size_t half) { return vld1q_u8(p + 16 * half); }
inline uint32x4_t row_words(const uint8_t *p, size_t half) { return vreinterpretq_u32_u8(row_bytes(p, half)); }

// Byte j (0..3) of every row's 32-bit word, zero-extended (the shifts' immediates: the switch
// folds once the callers' loops are unrolled).
inline uint32x4_t word_byte_u32(uint32x4_t words, size_t j) {
#if defined(__aarch64__)
  // Bytes 1 and 2 by one table lookup (indexes past 15 give 0).
  static constexpr uint8_t kPick[2][16] = {{1, 255, 255, 255, 5, 255, 255, 255, 9, 255, 255, 255, 13, 255, 255, 255},
                                           {2, 255, 255, 255, 6, 255, 255, 255, 10, 255, 255, 255, 14, 255, 255, 255}};
#endif
  switch (j) {
    case 0: return vandq_u32(words, vdupq_n_u32(0xFF));
#if defined(__aarch64__)
    case 1:
    case 2: return vreinterpretq_u32_u8(vqtbl1q_u8(vreinterpretq_u8_u32(words), vld1q_u8(kPick[j - 1])));
#else
    case 1: return vandq_u32(vshrq_n_u32(words, 8), vdupq_n_u32(0xFF));
    case 2: return vandq_u32(vshrq_n_u32(words, 16), vdupq_n_u32(0xFF));
#endif
    default: return vshrq_n_u32(words, 24);
  }
}
inline int32x4_t word_byte_ints(uint32x4_t words, size_t j) { return vreinterpretq_s32_u32(word_byte_u32(words, j)); }
inline float32x4_t word_byte(uint32x4_t words, size_t j) { return vcvtq_f32_u32(word_byte_u32(words, j)); }
// Byte j of every row's word, sign-extended.
inline int32x4_t word_byte_signed(int32x4_t words, size_t j) {
  switch (j) {
    case 0: return vshrq_n_s32(vshlq_n_s32(words, 24), 24);
    case 1: return vshrq_n_s32(vshlq_n_s32(words, 16), 24);
    case 2: return vshrq_n_s32(vshlq_n_s32(words, 8), 24);
    default: return vshrq_n_s32(words, 24);
  }
}
// Every byte shifted left by n (right by -n), -7 <= n <= 7.
inline uint8x16_t shift_bytes(uint8x16_t v, int n) {
  switch (n) {
    case 7: return vshlq_n_u8(v, 7);
    case 6: return vshlq_n_u8(v, 6);
    case 5: return vshlq_n_u8(v, 5);
    case 4: return vshlq_n_u8(v, 4);
    case 3: return vshlq_n_u8(v, 3);
    case 2: return vshlq_n_u8(v, 2);
    case 1: return vshlq_n_u8(v, 1);
    case 0: return v;
    case -1: return vshrq_n_u8(v, 1);
    case -2: return vshrq_n_u8(v, 2);
    case -3: return vshrq_n_u8(v, 3);
    case -4: return vshrq_n_u8(v, 4);
    case -5: return vshrq_n_u8(v, 5);
    case -6: return vshrq_n_u8(v, 6);
    default: return vshrq_n_u8(v, 7);
  }
}
// Bits 2j, 2j + 1 of every byte (j = 0..3) as its low two bits.
inline uint8x16_t crumb(uint8x16_t v, size_t j) {
  return j == 3 ? vshrq_n_u8(v, 6) : vandq_u8(shift_bytes(v, -2 * static_cast<int>(j)), vdupq_n_u8(3));
}
// op(the int32x2_t holding lane `lane` of v, that lane's index in it as an integral_constant):
// the by-element multiplies need the index as an immediate.
template <class Op>
inline int32x4_t by_lane(int32x4_t v, size_t lane, Op op) {
  switch (lane) {
    case 0: return op(vget_low_s32(v), std::integral_constant<int, 0>{});
    case 1: return op(vget_low_s32(v), std::integral_constant<int, 1>{});
    case 2: return op(vget_high_s32(v), std::integral_constant<int, 0>{});
    default: return op(vget_high_s32(v), std::integral_constant<int, 1>{});
  }
}
// acc - a * lane `lane` of v (the codes' offset times each half's activation sum).
inline int32x4_t mls_lane(int32x4_t acc, int32x4_t a, int32x4_t v, size_t lane) {
  return by_lane(v, lane, [&](int32x2_t pair, auto i) { return vmlsq_lane_s32(acc, a, pair, decltype(i)::value); });
}
inline int32x4_t mla_lane(int32x4_t acc, int32x4_t a, int32x4_t v, size_t lane) {
  return by_lane(v, lane, [&](int32x2_t pair, auto i) { return vmlaq_lane_s32(acc, a, pair, decltype(i)::value); });
}
inline int32x4_t mul_lane(int32x4_t a, int32x4_t v, size_t lane) {
  return by_lane(v, lane, [&](int32x2_t pair, auto i) { return vmulq_lane_s32(a, pair, decltype(i)::value); });
}
// Sub-block xb's 32 activation bytes.
struct BlockBytes {
  int8x16_t q[2];
};
inline BlockBytes block_bytes(const Q8Activations &x, size_t xb) {
  return {{vld1q_s8(x.q + xb * kQuantBlock), vld1q_s8(x.q + xb * kQuantBlock + 16)}};
}
// The 16 half sums of a super-block's activations (sub-block s: lanes 2s % 4, 2s % 4 + 1 of
// vector s / 2), times 2^kShift.
template <int kShift>
inline void super_half_sums(int32x4_t *out, const Q8Activations &x, size_t xb0) {
  for (size_t i = 0; i < 4; ++i) out[i] = vshlq_n_s32(vld1q_s32(x.half_sum + 2 * xb0 + 4 * i), kShift);
}

// A fence between the unrolled steps of a super-block (a volatile asm with a memory clobber: no
// instruction is scheduled across it, no load reused over it): without it GCC hoists the loads
// of later steps over the current one and keeps activation scalars for later steps, and the
// super-block spills a third of its instructions to the stack.
inline void step_fence() {
#if defined(__GNUC__)
  __asm__ __volatile__("" ::: "memory");
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
  // The same exact conversion as half_to_float, four at a time (fcvtl on aarch64).
  for (size_t h = 0; h < 2; ++h) out[h] = load_halves(Arch{}, halves + 4 * h);
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
      const int8x16_t xs[2] = {vld1q_s8(x.q + xb * kQuantBlock), vld1q_s8(x.q + xb * kQuantBlock + 16)};
      for (size_t h = 0; h < 2; ++h) {
        const int8x16_t w_half[8] = {w.quads[0].half[h], w.quads[1].half[h], w.quads[2].half[h], w.quads[3].half[h],
                                     w.quads[4].half[h], w.quads[5].half[h], w.quads[6].half[h], w.quads[7].half[h]};
        const int32x4_t sums = row_dots<Arch, 8>(w_half, xs);
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

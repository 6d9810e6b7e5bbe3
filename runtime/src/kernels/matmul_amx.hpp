// Prefill products of the x8 layouts on AMX tiles (Sapphire Rapids and later; q3_kx8 and q2_kx8
// not yet): one TDPBSUD multiplies 16 tokens' activation bytes by 16 rows' codes, 16 x 16 exact
// int32 dots of a 32-value block, where the VNNI tiles take 128 vpdpbusd (q6_k: two TDPBSSD of
// signed codes, one per 16-value half). The codes come out of the same unpacking as the 16-row
// VNNI tiles (Rows16: lane n holds row n's quad k, which is exactly the B tile's row layout), and
// every float step is the VNNI tile's, in the same order, so a result is bit-identical to the
// scalar twin's. Decoding and the tokens short of a 16-token tile stay on the VNNI kernels.
#pragma once

// GCC spells the AMX macros __AMX_INT8__, clang __AMXINT8__.
#if (defined(__AMX_INT8__) || defined(__AMXINT8__)) && defined(__AVX512BW__)
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/matmul_interleaved_k.hpp"

namespace mote::kernels::simd {

constexpr size_t kAmxTokens = 16;  // a tile's rows: tokens of A, of C

// Tile registers, two of each kind so that consecutive tile products do not wait on each other:
// C, the activations of a whole sub-block (32 bytes a token) and the codes of its 8 quads, and
// (q6_k) a 16-value half's activations and 4 quads. Macros, not constants: the tile intrinsics
// paste their tile number into the instruction's text.
#define MOTE_TILE_C0 0
#define MOTE_TILE_C1 1
#define MOTE_TILE_X0 2
#define MOTE_TILE_X1 3
#define MOTE_TILE_W0 4
#define MOTE_TILE_W1 5
#define MOTE_TILE_HALF_X 6
#define MOTE_TILE_HALF_W 7

struct alignas(64) AmxConfig {
  uint8_t palette = 1, start_row = 0, reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};
};

// Tile shapes are per thread: each call sets them (one ldtilecfg; no other code uses tiles).
inline void configure_amx_tiles() {
  AmxConfig config;
  const auto shape = [&](int tile, uint8_t rows, uint16_t bytes) {
    config.rows[tile] = rows;
    config.bytes_per_row[tile] = bytes;
  };
  shape(MOTE_TILE_C0, kAmxTokens, 64);
  shape(MOTE_TILE_C1, kAmxTokens, 64);
  shape(MOTE_TILE_X0, kAmxTokens, 32);
  shape(MOTE_TILE_X1, kAmxTokens, 32);
  shape(MOTE_TILE_W0, 8, 64);
  shape(MOTE_TILE_W1, 8, 64);
  shape(MOTE_TILE_HALF_X, kAmxTokens, 16);
  shape(MOTE_TILE_HALF_W, 4, 64);
  // ldtilecfg written out with the whole 64-byte configuration as its operand: GCC 12's
  // _tile_loadconfig tells the compiler it reads 8 bytes only, so an optimized build could drop
  // the stores to the rest (seen: SIGILL at the first tileloadd of one -O3 build).
  __asm__ volatile("ldtilecfg %0" : : "m"(config));
}

// A super-block's tile products for 16 rows and 16 tokens: each sub-block's codes (8 quads of
// the 16 rows, the layout of a B tile's rows), then dots[i][t][n], token t's exact dot with row
// n over the i-th tile product's values (a sub-block, or q6_k's 16-value halves).
struct AmxSuperBlock {
  alignas(64) __m512i codes[kSubBlocks][8];
  alignas(64) int32_t dots[2 * kSubBlocks][kAmxTokens][16];
};

// Sub-blocks s and s + 1: x from `x` with `stride` bytes between tokens (signed), the codes
// unsigned, into dots[s] and dots[s + 1].
inline void amx_sub_block_pair(AmxSuperBlock &sb, const int8_t *x, size_t stride, size_t s) {
  _tile_loadd(MOTE_TILE_W0, sb.codes[s], 64);
  _tile_loadd(MOTE_TILE_X0, x + s * kQuantBlock, stride);
  _tile_zero(MOTE_TILE_C0);
  _tile_loadd(MOTE_TILE_W1, sb.codes[s + 1], 64);
  _tile_loadd(MOTE_TILE_X1, x + (s + 1) * kQuantBlock, stride);
  _tile_zero(MOTE_TILE_C1);
  _tile_dpbsud(MOTE_TILE_C0, MOTE_TILE_X0, MOTE_TILE_W0);
  _tile_dpbsud(MOTE_TILE_C1, MOTE_TILE_X1, MOTE_TILE_W1);
  _tile_stored(MOTE_TILE_C0, sb.dots[s], 64);
  _tile_stored(MOTE_TILE_C1, sb.dots[s + 1], 64);
}

// Sub-block s alone (a last odd one).
inline void amx_sub_block(AmxSuperBlock &sb, const int8_t *x, size_t stride, size_t s) {
  _tile_loadd(MOTE_TILE_W0, sb.codes[s], 64);
  _tile_loadd(MOTE_TILE_X0, x + s * kQuantBlock, stride);
  _tile_zero(MOTE_TILE_C0);
  _tile_dpbsud(MOTE_TILE_C0, MOTE_TILE_X0, MOTE_TILE_W0);
  _tile_stored(MOTE_TILE_C0, sb.dots[s], 64);
}

// q6_k: sub-block s's two 16-value halves into dots[2 s] and dots[2 s + 1], codes signed.
inline void amx_sub_block_halves(AmxSuperBlock &sb, const int8_t *x, size_t stride, size_t s) {
  _tile_loadd(MOTE_TILE_HALF_W, &sb.codes[s][0], 64);
  _tile_loadd(MOTE_TILE_HALF_X, x + s * kQuantBlock, stride);
  _tile_zero(MOTE_TILE_C0);
  _tile_dpbssd(MOTE_TILE_C0, MOTE_TILE_HALF_X, MOTE_TILE_HALF_W);
  _tile_stored(MOTE_TILE_C0, sb.dots[2 * s], 64);
  _tile_loadd(MOTE_TILE_HALF_W, &sb.codes[s][4], 64);
  _tile_loadd(MOTE_TILE_HALF_X, x + s * kQuantBlock + 16, stride);
  _tile_zero(MOTE_TILE_C1);
  _tile_dpbssd(MOTE_TILE_C1, MOTE_TILE_HALF_X, MOTE_TILE_HALF_W);
  _tile_stored(MOTE_TILE_C1, sb.dots[2 * s + 1], 64);
}

template <class Arch, class Group>
struct AmxKTile;

// q4_kx8, q5_kx8: one 32-value sub-block a tile product.
template <class Arch, class Group>
struct AmxKMinTile {
  using W = Rows16<Arch>;
  using Ops = KGroupOps<Arch, Group, W>;
  static void super_block(__m512 *acc, __m512 *mins, AmxSuperBlock &sb, const Group &g, size_t next,
                          const Q8Activations &x, size_t xb0, size_t stride) {
    for (size_t s = 0; s < kSubBlocks; ++s) Ops::sub_block_codes(sb.codes[s], g, next, s);
    for (size_t s = 0; s < kSubBlocks; s += 2) amx_sub_block_pair(sb, x.q + xb0 * kQuantBlock, stride, s);
    const typename Ops::Factors f = Ops::factors(g, next);
    __m512 d_sub[kSubBlocks], m_sub[kSubBlocks];
    for (size_t s = 0; s < kSubBlocks; ++s) {
      d_sub[s] = f.d_sub(s);
      m_sub[s] = f.m_sub(s);
    }
    // Token by token, so its two accumulators stay in registers through the 8 sub-blocks.
    for (size_t t = 0; t < kAmxTokens; ++t) {
      __m512 a = acc[t], m = mins[t];
      const size_t xb = xb0 + t * (stride / kQuantBlock);
#pragma GCC unroll 8
      for (size_t s = 0; s < kSubBlocks; ++s)
        Ops::add_sub_block(a, m, _mm512_load_si512(sb.dots[s][t]), d_sub[s], m_sub[s], x, xb + s);
      acc[t] = a;
      mins[t] = m;
    }
  }
};
template <class Arch>
struct AmxKTile<Arch, BlockQ4_Kx8> : AmxKMinTile<Arch, BlockQ4_Kx8> {};
template <class Arch>
struct AmxKTile<Arch, BlockQ5_Kx8> : AmxKMinTile<Arch, BlockQ5_Kx8> {};

// q6_kx8: each 16-value half its own tile product (the halves have their own scales).
template <class Arch>
struct AmxKTile<Arch, BlockQ6_Kx8> {
  using W = Rows16<Arch>;
  using Ops = KGroupOps<Arch, BlockQ6_Kx8, W>;
  static void super_block(__m512 *acc, __m512 *, AmxSuperBlock &sb, const BlockQ6_Kx8 &g, size_t next,
                          const Q8Activations &x, size_t xb0, size_t stride) {
    for (size_t half = 0; half < 2; ++half) {
      __m512i qh[8];
      Ops::half_qh(qh, g, next, half);
      for (size_t j = 0; j < 4; ++j) {
        // code - 32 as a signed byte (TDPBSSD): the tile's dots are then the halves' exact
        // sum (code - 32) x, which the VNNI tiles make as sum code x - 32 sum x.
        __m512i *codes = sb.codes[4 * half + j];
        Ops::sub_block_codes(codes, g, next, half, j, qh);
        for (size_t k = 0; k < 8; ++k) codes[k] = _mm512_sub_epi8(codes[k], _mm512_set1_epi8(32));
      }
    }
    for (size_t s = 0; s < kSubBlocks; ++s) amx_sub_block_halves(sb, x.q + xb0 * kQuantBlock, stride, s);
    const __m512 d = W::halves(g.fields, next);
    __m512i words[4];
    Ops::scale_words(words, g, next);
    __m512i scales[2 * kSubBlocks];
    for (size_t i = 0; i < 2 * kSubBlocks; ++i) scales[i] = Ops::sub_scale(words, i);
    for (size_t t = 0; t < kAmxTokens; ++t) {
      __m512 a = acc[t];
      const size_t xb = xb0 + t * (stride / kQuantBlock);
#pragma GCC unroll 8
      for (size_t s = 0; s < kSubBlocks; ++s) {
        a = add_halves<W>(a, _mm512_load_si512(sb.dots[2 * s][t]), _mm512_load_si512(sb.dots[2 * s + 1][t]),
                          scales[2 * s], scales[2 * s + 1], d, x, xb + s);
      }
      acc[t] = a;
    }
  }
};

// Two groups (16 rows) from `group` against the 16 tokens from token0, every super-block.
template <class Arch, class Group>
inline void amx_k_tile(float *out, size_t out_stride, const Group *group, size_t n_super, const Q8Activations &x,
                       size_t token0) {
  const size_t next = n_super * sizeof(Group), stride = n_super * kSubBlocks * kQuantBlock;
  AmxSuperBlock scratch;
  __m512 acc[kAmxTokens], mins[kAmxTokens];
  for (size_t t = 0; t < kAmxTokens; ++t) acc[t] = mins[t] = _mm512_setzero_ps();
  for (size_t sb = 0; sb < n_super; ++sb) {
    prefetch_ahead<Rows16<Arch>, sizeof(Group)>(group, next, sb * sizeof(Group));
    AmxKTile<Arch, Group>::super_block(acc, mins, scratch, group[sb], next, x, (token0 * n_super + sb) * kSubBlocks,
                                       stride);
  }
  for (size_t t = 0; t < kAmxTokens; ++t) store_rows<Rows16<Arch>>(out + (token0 + t) * out_stride, acc[t], mins[t]);
}

// The same for the 32-value x8 layouts (q4_0x8, q4_1x8, q5_0x8, q5_1x8, and q8_0x8 and iq4_nlx8
// as weights + 128): each block's codes as its 16-row VNNI tile unpacks them, eight blocks' tile
// products at a time, then each token's float steps block by block as the VNNI tile takes them.
template <class Arch, class Block>
inline void amx_block_tile(float *out, size_t out_stride, const Block *group, size_t n_blocks, const Q8Activations &x,
                           size_t token0) {
  using W = Rows16<Arch>;
  using Ops = InterleavedBlock<Arch, Block, W>;
  const size_t next = n_blocks * sizeof(Block), stride = n_blocks * kQuantBlock;
  AmxSuperBlock scratch;
  typename Ops::Prepared prepared[kSubBlocks];
  typename W::Sums sums[kAmxTokens];
  for (size_t t = 0; t < kAmxTokens; ++t) sums[t] = zero_sums<W>();
  for (size_t b0 = 0; b0 < n_blocks; b0 += kSubBlocks) {
    const size_t span = n_blocks - b0 < kSubBlocks ? n_blocks - b0 : kSubBlocks;
    for (size_t i = 0; i < span; ++i) {
      prefetch_ahead<W, sizeof(Block)>(group, next, (b0 + i) * sizeof(Block));
      prepared[i] = Ops::prepare(group[b0 + i], next);
      Ops::tile_codes(prepared[i], scratch.codes[i]);
    }
    const int8_t *xq = x.q + (token0 * n_blocks + b0) * kQuantBlock;
    size_t i = 0;
    for (; i + 2 <= span; i += 2) amx_sub_block_pair(scratch, xq, stride, i);
    if (i < span) amx_sub_block(scratch, xq, stride, i);
    for (size_t t = 0; t < kAmxTokens; ++t) {
      typename W::Sums s = sums[t];
      const size_t xb = (token0 + t) * n_blocks + b0;
      for (size_t j = 0; j < span; ++j) {
        Ops::add_dot(
            s, prepared[j], _mm512_load_si512(scratch.dots[j][t]),
            TokenBlock{x.q + (xb + j) * kQuantBlock, x.scale + xb + j, x.block_sum + xb + j, x.scaled_sum + xb + j});
      }
      sums[t] = s;
    }
  }
  for (size_t t = 0; t < kAmxTokens; ++t) store_sums<W, Block>(out + (token0 + t) * out_stride, sums[t]);
}

// How each layout meets the shared driver: its values per unit (a 32-value block or a K
// super-block), its AMX tile and the VNNI kernels that take what the tiles do not (decoding, a
// last odd group, the last tokens).
template <class Block>
constexpr bool kSuperBlocks =
    std::is_same_v<Block, BlockQ4_Kx8> || std::is_same_v<Block, BlockQ5_Kx8> || std::is_same_v<Block, BlockQ6_Kx8>;

template <class Arch, class Block>
constexpr size_t vnni_tile_tokens() {
  if constexpr (kSuperBlocks<Block>)
    return kKGroupTokens;
  else
    return InterleavedBlock<Arch, Block, Rows8<Arch>>::kTokens;
}

template <class Arch, class Block>
struct AmxLayout {
  static constexpr size_t kValues = kSuperBlocks<Block> ? kSuperBlock : kQuantBlock;
  static void tile(float *out, size_t out_stride, const Block *group, size_t n, const Q8Activations &x, size_t t0) {
    if constexpr (kSuperBlocks<Block>)
      amx_k_tile<Arch>(out, out_stride, group, n, x, t0);
    else
      amx_block_tile<Arch>(out, out_stride, group, n, x, t0);
  }
  static void vnni_matmul(float *out, size_t out_stride, const Block *w, const Q8Activations &x, size_t rows,
                          size_t cols, size_t n_tokens) {
    if constexpr (kSuperBlocks<Block>)
      k_interleaved_matmul<Arch>(out, out_stride, w, x, rows, cols, n_tokens);
    else
      interleaved_matmul<Arch>(out, out_stride, w, x, rows, cols, n_tokens);
  }
  static void vnni_groups(float *out, size_t out_stride, const Block *w, size_t n, const Q8Activations &x, size_t g0,
                          size_t g_end, size_t t0, size_t n_tokens) {
    if constexpr (kSuperBlocks<Block>)
      k_group_run<Arch>(out, out_stride, w, n, x, g0, g_end, t0, n_tokens, two_groups_per_tile<Arch>(n_tokens));
    else
      interleaved_groups<Arch>(out, out_stride, w, n, x, g0, g_end, t0, n_tokens);
  }
};

// As the VNNI kernels' drivers (runs of groups that stay in L2 while every token tile passes),
// with whole 16-token tiles of group pairs on AMX.
template <class Arch, class Block>
void amx_matmul(float *out, size_t out_stride, const Block *w, const Q8Activations &x, size_t rows, size_t cols,
                size_t n_tokens) {
  using Layout = AmxLayout<Arch, Block>;
  const size_t n_units = cols / Layout::kValues, n_groups = rows / kInterleave;
  const size_t whole = n_tokens / kAmxTokens * kAmxTokens;
  if (whole == 0 || n_groups < 2) {
    Layout::vnni_matmul(out, out_stride, w, x, rows, cols, n_tokens);
    return;
  }
  configure_amx_tiles();
  constexpr size_t T = vnni_tile_tokens<Arch, Block>();
  const size_t group_bytes = n_units * sizeof(Block);
  size_t run = group_bytes < kRowBlockBytes ? kRowBlockBytes / group_bytes : 1;
  run += run % 2;
  for (size_t g0 = 0; g0 < n_groups; g0 += run) {
    const size_t g_end = g0 + run < n_groups ? g0 + run : n_groups;
    const size_t pairs_end = g0 + (g_end - g0) / 2 * 2;
    for (size_t t = 0; t < whole; t += kAmxTokens) {
      for (size_t g = g0; g < pairs_end; g += 2)
        Layout::tile(out + g * kInterleave, out_stride, w + g * n_units, n_units, x, t);
      for (size_t u = t; u < t + kAmxTokens && pairs_end < g_end; u += T) {
        Layout::vnni_groups(out, out_stride, w, n_units, x, pairs_end, g_end, u,
                            t + kAmxTokens - u < T ? t + kAmxTokens - u : T);
      }
    }
    for (size_t t = whole; t < n_tokens; t += T)
      Layout::vnni_groups(out, out_stride, w, n_units, x, g0, g_end, t, n_tokens - t < T ? n_tokens - t : T);
  }
}

}  // namespace mote::kernels::simd

#undef MOTE_TILE_C0
#undef MOTE_TILE_C1
#undef MOTE_TILE_X0
#undef MOTE_TILE_X1
#undef MOTE_TILE_W0
#undef MOTE_TILE_W1
#undef MOTE_TILE_HALF_X
#undef MOTE_TILE_HALF_W
#endif

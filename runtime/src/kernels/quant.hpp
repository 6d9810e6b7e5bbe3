// Quantized weight blocks (GGUF's layouts, byte for byte) and the 8-bit activation format the
// integer kernels pair them with. Free of xsimd: model/, tests and converters include it.
//
// How a quantized product is summed (the contract every ISA and the scalar twin keep exactly):
// activations are quantized per token into blocks of 32 (scale d = amax / 127, q = round half
// to even of x / d). For each weight row, token and block, eight int32 "lanes" each hold the
// exact integer dot product of 4 consecutive elements (lane k: elements 4k..4k+3), which is
// what vpmaddubsw + vpmaddwd, vpdpbusd and sdot all produce. The weight integers are the
// block's own: q8_0's int8, q4_0's n - 8, q5_0's q - 16, q4_1's and q5_1's q, iq4_nl's level. Eight float accumulators
// take acc[k] = fma(float(lane k), d_w * d_x, acc[k]) block by block (q4_1 adds its min term per lane: acc[k] = fma(m,
// d_x * sum_k(q), acc[k]), as does q5_1), and the row's result is
// ((acc0 + acc4) + (acc2 + acc6)) + ((acc1 + acc5) + (acc3 + acc7)). Integer sums are exact and
// every float operation is fixed, so results do not depend on the ISA, the thread split or the
// number of tokens in a batch.
//
// The K-quant super-blocks (quant_k.hpp) are summed the same way, 32-value sub-block s of a
// super-block against the activation block it covers, with the same eight accumulators and the
// same final reduction. Per super-block (d, dmin its halves as floats): q4_k and q5_k give each
// sub-block d_w = d * float(sc_s) and m = -(dmin * float(mn_s)) and sum exactly as q4_1 (lane k
// over the codes q, unsigned); q6_k, q3_k and q2_k multiply each exact lane by the integer scale
// of its 16-value sub-block (lanes 0-3: sub-block 2s, lanes 4-7: 2s + 1; exact in int32), lane k
// = sc * sum (q - offset) x with offset 32 (q6_k), 4 (q3_k, q = code | hmask bit << 2) or 0,
// then acc[k] = fma(float(lane k), d * d_x, acc[k]); q2_k then adds its min per 16 values,
// acc[k] = fma(-(dmin * float(mn)), lane_sum_scaled[k], acc[k]).
//
// The K types' x8 layouts (q4_kx8, q5_kx8, q6_kx8, q3_kx8, q2_kx8; quant_k.hpp) sum as the other
// x8 layouts do: per row, one exact int32 per 32-value sub-block s folded in order, super-block by
// super-block (d, dmin, sc_s, mn_s that row's; d_x, x_sum the activation block's d and block_sum),
// into a float acc and, for the min terms, a second float mins (two chains, so neither waits on
// the other's latency). q4_kx8 / q5_kx8: sum = sum code * x (codes unsigned),
// acc = fma(float(sum), (d * float(sc_s)) * d_x, acc), mins = fma(-(dmin * float(mn_s)),
// d_x * float(x_sum), mins). q6_kx8, q3_kx8, q2_kx8: h0, h1 = sum (code - offset) * x over the
// sub-block's first and last 16 values (offset 32, 4, 0 as above), sum = sc_2s * h0 +
// sc_2s+1 * h1 (exact in int32), acc = fma(float(sum), d * d_x, acc); q2_kx8 also folds its
// mins per 16 values: m = mn_2s * x0 + mn_2s+1 * x1 (x0, x1 the halves' activation sums, exact),
// mins = fma(float(m), -(dmin * d_x), mins). The row's result is acc + mins (mins stays 0 for
// q6_kx8 and q3_kx8).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace mote::kernels {

constexpr size_t kQuantBlock = 32;  // elements per block, every quantized type
constexpr size_t kQuantLanes = 8;   // int32 lanes per block, 4 elements each
constexpr size_t kLaneElements = kQuantBlock / kQuantLanes;

// d: IEEE half scale; qs: 32 signed weights. value = d * qs[i].
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[kQuantBlock];
};
static_assert(sizeof(BlockQ8_0) == 34, "q8_0 blocks are 34 bytes, as in GGUF");

// value[i] = d * (nibble[i] - 8); nibble[i] is the low half of qs[i] for i < 16 and the high
// half of qs[i - 16] otherwise.
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[kQuantBlock / 2];
};
static_assert(sizeof(BlockQ4_0) == 18, "q4_0 blocks are 18 bytes, as in GGUF");

// value[i] = d * nibble[i] + m, nibbles as in q4_0.
struct BlockQ4_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qs[kQuantBlock / 2];
};
static_assert(sizeof(BlockQ4_1) == 20, "q4_1 blocks are 20 bytes, as in GGUF");

// value[i] = d * (q[i] - 16), q[i] = nibble[i] (as q4_0) | bit i of qh << 4: 5-bit values 0..31.
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];  // little-endian u32: bit i is element i's fifth bit
  uint8_t qs[kQuantBlock / 2];
};
static_assert(sizeof(BlockQ5_0) == 22, "q5_0 blocks are 22 bytes, as in GGUF");

// value[i] = d * q[i] + m, q[i] as in q5_0.
struct BlockQ5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kQuantBlock / 2];
};
static_assert(sizeof(BlockQ5_1) == 24, "q5_1 blocks are 24 bytes, as in GGUF");

// value[i] = d * kIQ4NLValues[nibble[i]], nibbles as in q4_0: 16 non-uniform signed levels.
struct BlockIQ4_NL {
  uint16_t d;
  uint8_t qs[kQuantBlock / 2];
};
static_assert(sizeof(BlockIQ4_NL) == 18, "iq4_nl blocks are 18 bytes, as in GGUF");

// IQ4_NL's levels (GGUF's kvalues_iq4nl); as int8 they are the integers the lanes multiply.
inline constexpr int8_t kIQ4NLValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

// Row-interleaved layouts ("x8"): the same blocks, eight rows at a time, so one vector
// register holds 4 bytes of each of 8 rows and the integer lanes are the rows. A matrix in an x8
// type has rows % 8 == 0; rows 8g .. 8g + 7 form group g, and group g stores its cols / 32
// group blocks one after another (group g starts at byte g * 8 * row_bytes, row_bytes as for the
// plain type). Group block b holds block b of each of the 8 rows: their d (and m), then their
// quants interleaved 4 bytes at a time: quant bytes [4k, 4k + 4) of row i sit at qs[(8k + i) * 4].
// The bytes per row are the plain type's, so the values are the same numbers, only reordered.
// q5_0x8 and q5_1x8 keep the 8 rows' qh words (u32 each, little-endian) between the scales
// and the quants: d[8], (m[8],) qh[8], qs as q4_0x8.
// Their products are summed per row as one exact int32 per block folded in block order,
// acc = fma(float(sum of the block), d_w * d_x, acc) (q4_1 then acc = fma(m, d_x * sum(q), acc)).
constexpr size_t kInterleave = 8;

struct BlockQ8_0x8 {
  using Plain = BlockQ8_0;  // the block each row holds
  uint16_t d[kInterleave];
  int8_t qs[kInterleave * kQuantBlock];  // 8 groups (k) of 4 bytes for each of the 8 rows
};
static_assert(sizeof(BlockQ8_0x8) == 8 * sizeof(BlockQ8_0), "q8_0x8 group blocks are 8 q8_0 blocks");

struct BlockQ4_0x8 {
  using Plain = BlockQ4_0;  // the block each row holds
  uint16_t d[kInterleave];
  uint8_t qs[kInterleave * kQuantBlock / 2];  // 4 groups (k) of 4 bytes for each of the 8 rows
};
static_assert(sizeof(BlockQ4_0x8) == 8 * sizeof(BlockQ4_0), "q4_0x8 group blocks are 8 q4_0 blocks");

struct BlockQ4_1x8 {
  using Plain = BlockQ4_1;  // the block each row holds
  uint16_t d[kInterleave];
  uint16_t m[kInterleave];
  uint8_t qs[kInterleave * kQuantBlock / 2];
};
static_assert(sizeof(BlockQ4_1x8) == 8 * sizeof(BlockQ4_1), "q4_1x8 group blocks are 8 q4_1 blocks");

struct BlockQ5_0x8 {
  using Plain = BlockQ5_0;  // the block each row holds
  uint16_t d[kInterleave];
  uint32_t qh[kInterleave];
  uint8_t qs[kInterleave * kQuantBlock / 2];
};
static_assert(sizeof(BlockQ5_0x8) == 8 * sizeof(BlockQ5_0), "q5_0x8 group blocks are 8 q5_0 blocks");

struct BlockQ5_1x8 {
  using Plain = BlockQ5_1;  // the block each row holds
  uint16_t d[kInterleave];
  uint16_t m[kInterleave];
  uint32_t qh[kInterleave];
  uint8_t qs[kInterleave * kQuantBlock / 2];
};
static_assert(sizeof(BlockQ5_1x8) == 8 * sizeof(BlockQ5_1), "q5_1x8 group blocks are 8 q5_1 blocks");

// iq4_nlx8: d[8], then the nibbles as q4_0x8's; a nibble indexes kIQ4NLValues as in iq4_nl.
struct BlockIQ4_NLx8 {
  using Plain = BlockIQ4_NL;  // the block each row holds
  uint16_t d[kInterleave];
  uint8_t qs[kInterleave * kQuantBlock / 2];
};
static_assert(sizeof(BlockIQ4_NLx8) == 8 * sizeof(BlockIQ4_NL), "iq4_nlx8 group blocks are 8 iq4_nl blocks");

// Whether a block type carries a minimum m (value = d * q + m) after its scale d.
template <class Block>
inline constexpr bool kHasMinimum = std::is_same_v<Block, BlockQ4_1> || std::is_same_v<Block, BlockQ5_1> ||
                                    std::is_same_v<Block, BlockQ4_1x8> || std::is_same_v<Block, BlockQ5_1x8>;

// n_tokens vectors of cols activations (cols a multiple of 32) in 8-bit blocks, token-major.
// The lane sums let q4 and q5 products use unsigned values (vpmaddubsw's operand order):
// sum (n - 8) x = sum n x - lane_offset (q5_0: sum (q - 16) x = sum q x - 2 lane_offset), and
// q4_1's and q5_1's m enters as m * lane_sum_scaled.
struct Q8Activations {
  int8_t *q;               // (n_tokens, cols)
  float *scale;            // (n_tokens, cols / 32) d of each block
  int32_t *lane_offset;    // (n_tokens, cols / 4) 8 * the sum of each 4 consecutive q
  float *lane_sum_scaled;  // (n_tokens, cols / 4) d * the sum of each 4 consecutive q
  int32_t *block_sum;      // (n_tokens, cols / 32) the sum of each block's q (x8 layouts)
  // Made once per token for the products that would otherwise redo them for every group of 8
  // rows (finish_block_sums): the K types scaled per 16 values take the offset of their codes off
  // through half_sum, the x8 layouts with a minimum add it through scaled_sum.
  int32_t *half_sum;  // (n_tokens, cols / 16) the sum of each 16 consecutive q
  float *scaled_sum;  // (n_tokens, cols / 32) d * block_sum, rounded once
};
constexpr size_t kHalfBlock = kQuantBlock / 2;

// Block b's half sums and scaled sum, from its lane sums, d and block_sum (every quantizer ends
// with this, so they are the same numbers on every ISA).
inline void finish_block_sums(const Q8Activations &out, size_t b) {
  for (size_t h = 0; h < 2; ++h) {
    const int32_t *lanes = out.lane_offset + b * kQuantLanes + h * (kQuantLanes / 2);
    out.half_sum[2 * b + h] = (lanes[0] + lanes[1] + lanes[2] + lanes[3]) / 8;
  }
  out.scaled_sum[b] = out.scale[b] * static_cast<float>(out.block_sum[b]);
}

// Bytes of one token's activations, each array rounded up to 64 bytes (for arena planning).
constexpr size_t q8_activation_bytes(size_t cols) {
  const auto round64 = [](size_t n) { return (n + 63) / 64 * 64; };
  return round64(cols) + 3 * round64(cols / kQuantBlock * 4) + 2 * round64(cols / kLaneElements * 4) +
         round64(cols / kHalfBlock * 4);
}

}  // namespace mote::kernels

#include "kernels/quant_k.hpp"  // GGUF's K-quant super-blocks

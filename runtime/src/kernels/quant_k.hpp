// GGUF's K-quant super-blocks (256 values of a row, byte for byte as ggml stores them; FORMAT.md
// gives each layout) and the integer facts every kernel and the scalar twin read from them. Free
// of xsimd, like quant.hpp (which includes this file and states how their products are summed).
//
// A super-block is eight 32-value sub-blocks, one per activation block: sub-block s holds
// elements 32s..32s+31. Each kernel turns sub-block s into 32 small integers (its weight codes,
// read from 32 consecutive bytes of each bit-plane) and, per super-block, its float scales.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace mote::kernels {

constexpr size_t kSuperBlock = 256;  // values per K-quant super-block
constexpr size_t kSubBlocks = 8;     // 32-value sub-blocks (activation blocks) per super-block

// x = (d·sc)·q − dmin·mn, q = the 4-bit code; sc, mn 6-bit per 32 values (k_scale, k_min).
struct BlockQ4_K {
  static constexpr size_t kSubBlocks = kernels::kSubBlocks;
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t qs[128];  // sub-block s: the low (s even) or high (s odd) nibbles of qs[32 (s / 2) + l]
};
static_assert(sizeof(BlockQ4_K) == 144, "q4_k super-blocks are 144 bytes, as in GGUF");

// As q4_k with a fifth bit: bit s of qh[l] for element l of sub-block s.
struct BlockQ5_K {
  static constexpr size_t kSubBlocks = kernels::kSubBlocks;
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t qh[32];
  uint8_t qs[128];
};
static_assert(sizeof(BlockQ5_K) == 176, "q5_k super-blocks are 176 bytes, as in GGUF");

// x = (d·sc)·(q − 32), q 6 bits, sc = scales[i] per 16 values.
struct BlockQ6_K {
  static constexpr size_t kSubBlocks = kernels::kSubBlocks;
  uint8_t ql[128];
  uint8_t qh[64];
  int8_t scales[16];
  uint16_t d;
};
static_assert(sizeof(BlockQ6_K) == 210, "q6_k super-blocks are 210 bytes, as in GGUF");

// x = (d·sc)·(q − 4) (q 3 bits: 2 in qs, 1 in hmask), sc 6 bits − 32 per 16 values.
struct BlockQ3_K {
  static constexpr size_t kSubBlocks = kernels::kSubBlocks;
  uint8_t hmask[32];
  uint8_t qs[64];
  uint8_t scales[12];
  uint16_t d;
};
static_assert(sizeof(BlockQ3_K) == 110, "q3_k super-blocks are 110 bytes, as in GGUF");

// x = (d·sc)·q − dmin·mn, q 2 bits, sc and mn 4 bits per 16 values.
struct BlockQ2_K {
  static constexpr size_t kSubBlocks = kernels::kSubBlocks;
  uint8_t scales[16];
  uint8_t qs[64];
  uint16_t d, dmin;
};
static_assert(sizeof(BlockQ2_K) == 84, "q2_k super-blocks are 84 bytes, as in GGUF");

// Row-interleaved K super-blocks ("x8", quant.hpp's rule for the x8 layouts): group block b holds
// super-block b of 8 rows, first each fp16 field for the 8 rows (fields[0..7] = d, then
// fields[8..15] = dmin where the type has one), then every other byte of the 8 plain blocks in
// their plain order (q4_k: scales, qs; q5_k: scales, qh, qs; q6_k: ql, qh, scales; q3_k: hmask,
// qs, scales; q2_k: scales, qs), 4 bytes at a
// time: bytes [4k, 4k + 4) of row i's at rest[(8k + i) * 4]. So 32 bytes of rest hold the same
// 4 bytes of all 8 rows: one register whose 32-bit lanes are the rows.
template <class PlainBlock, size_t kFieldCount, size_t kFieldOffset>
struct KGroupBlock {
  using Plain = PlainBlock;
  static constexpr size_t kFields = kFieldCount;        // fp16 fields per row: d (and dmin)
  static constexpr size_t kPlainOffset = kFieldOffset;  // where the plain block keeps them
  static constexpr size_t kRestBytes = sizeof(PlainBlock) - 2 * kFieldCount;
  uint16_t fields[8 * kFieldCount];
  uint8_t rest[8 * kRestBytes];
};
using BlockQ4_Kx8 = KGroupBlock<BlockQ4_K, 2, 0>;
using BlockQ5_Kx8 = KGroupBlock<BlockQ5_K, 2, 0>;
using BlockQ6_Kx8 = KGroupBlock<BlockQ6_K, 1, 208>;
static_assert(sizeof(BlockQ4_Kx8) == 8 * sizeof(BlockQ4_K), "q4_kx8 group blocks are 8 q4_k super-blocks");
static_assert(sizeof(BlockQ5_Kx8) == 8 * sizeof(BlockQ5_K), "q5_kx8 group blocks are 8 q5_k super-blocks");
static_assert(sizeof(BlockQ6_Kx8) == 8 * sizeof(BlockQ6_K), "q6_kx8 group blocks are 8 q6_k super-blocks");
static_assert(offsetof(BlockQ6_K, d) == BlockQ6_Kx8::kPlainOffset, "q6_k keeps d after its quants");
using BlockQ3_Kx8 = KGroupBlock<BlockQ3_K, 1, 108>;
using BlockQ2_Kx8 = KGroupBlock<BlockQ2_K, 2, 80>;
static_assert(sizeof(BlockQ3_Kx8) == 8 * sizeof(BlockQ3_K), "q3_kx8 group blocks are 8 q3_k super-blocks");
static_assert(sizeof(BlockQ2_Kx8) == 8 * sizeof(BlockQ2_K), "q2_kx8 group blocks are 8 q2_k super-blocks");
static_assert(offsetof(BlockQ3_K, d) == BlockQ3_Kx8::kPlainOffset, "q3_k keeps d after its quants");
static_assert(offsetof(BlockQ2_K, d) == BlockQ2_Kx8::kPlainOffset, "q2_k keeps d, dmin after its quants");

// Row i's plain super-block, put back together from a group block (the scalar twin reads the
// plain block's fields through this, so it shares every decoding rule with the plain kernels).
template <class Group>
inline typename Group::Plain plain_row(const Group &g, size_t i) {
  typename Group::Plain plain;
  uint8_t *out = reinterpret_cast<uint8_t *>(&plain);
  constexpr size_t kFieldBytes = 2 * Group::kFields;
  for (size_t f = 0; f < Group::kFields; ++f)
    __builtin_memcpy(out + Group::kPlainOffset + 2 * f, &g.fields[8 * f + i], 2);
  for (size_t k = 0; k < Group::kRestBytes / 4; ++k) {
    const size_t at = 4 * k < Group::kPlainOffset ? 4 * k : 4 * k + kFieldBytes;
    __builtin_memcpy(out + at, g.rest + (8 * k + i) * 4, 4);
  }
  return plain;
}

// Activation blocks per weight block: kSubBlocks for a super-block, 1 for a 32-value block.
template <class Block, class = void>
struct SubBlocksOf : std::integral_constant<size_t, 1> {};
template <class Block>
struct SubBlocksOf<Block, std::void_t<decltype(Block::kSubBlocks)>>
    : std::integral_constant<size_t, Block::kSubBlocks> {};
template <class Block>
constexpr size_t sub_blocks_of = SubBlocksOf<Block>::value;

// q4_k / q5_k: the 6-bit scales and mins of the 8 sub-blocks from the 12 packed bytes (FORMAT.md:
// bytes 0-3 scales 0-3 and the top bits of scales 4-7, 4-7 the same for mins, 8-11 the low
// nibbles of scales 4-7 and mins 4-7), four at a time in 32-bit words (little-endian).
inline void k_scales_mins(const uint8_t *packed, uint8_t scales[8], uint8_t mins[8]) {
  uint32_t a, b, c;
  __builtin_memcpy(&a, packed, 4);
  __builtin_memcpy(&b, packed + 4, 4);
  __builtin_memcpy(&c, packed + 8, 4);
  const uint32_t scales_low = a & 0x3F3F3F3Fu, mins_low = b & 0x3F3F3F3Fu;
  const uint32_t scales_high = (c & 0x0F0F0F0Fu) | ((a >> 2) & 0x30303030u);
  const uint32_t mins_high = ((c >> 4) & 0x0F0F0F0Fu) | ((b >> 2) & 0x30303030u);
  __builtin_memcpy(scales, &scales_low, 4);
  __builtin_memcpy(scales + 4, &scales_high, 4);
  __builtin_memcpy(mins, &mins_low, 4);
  __builtin_memcpy(mins + 4, &mins_high, 4);
}

// q3_k: the signed scale of 16-value sub-block i (0..15).
inline int q3_k_scale(const uint8_t *packed, size_t i) {
  const int low = (packed[i % 8] >> (4 * (i / 8))) & 15;
  const int high = (packed[8 + i % 4] >> (2 * (i / 4))) & 3;
  return (low | high << 4) - 32;
}

// q3_k's 16 scales plus 32 (0..63), scale i in byte i % 4 of word i / 4 (little-endian): the
// same bits as q3_k_scale, four at a time.
inline void q3_k_scale_words(const uint8_t *packed, uint32_t words[4]) {
  uint32_t a, b, c;
  __builtin_memcpy(&a, packed, 4);
  __builtin_memcpy(&b, packed + 4, 4);
  __builtin_memcpy(&c, packed + 8, 4);
  words[0] = (a & 0x0F0F0F0Fu) | (c & 0x03030303u) << 4;
  words[1] = (b & 0x0F0F0F0Fu) | ((c >> 2) & 0x03030303u) << 4;
  words[2] = ((a >> 4) & 0x0F0F0F0Fu) | ((c >> 4) & 0x03030303u) << 4;
  words[3] = ((b >> 4) & 0x0F0F0F0Fu) | ((c >> 6) & 0x03030303u) << 4;
}

// The integer scale of 16-value sub-block i in the types that have one per 16 values (1 where a
// type scales per 32 values in floats instead), and q2_k's integer min.
inline int sixteen_scale(const BlockQ6_K &b, size_t i) { return b.scales[i]; }
inline int sixteen_scale(const BlockQ3_K &b, size_t i) { return q3_k_scale(b.scales, i); }
inline int sixteen_scale(const BlockQ2_K &b, size_t i) { return b.scales[i] & 15; }
inline int q2_k_min(const BlockQ2_K &b, size_t i) { return b.scales[i] >> 4; }

// Per super-block, the float scale of each 32-value sub-block (d_sub) and its min term
// (m_sub, added as m_sub · the activations' scaled lane sums), ggml's products exactly:
// q4_k / q5_k: d_sub = d·sc, m_sub = −(dmin·mn); the 16-value types: d_sub = d (their integer
// scales multiply the lanes), m_sub unused (q2_k's mins are per 16 values: q2_k_lane_min).
template <class Block>
inline void super_block_scales(const Block &b, float d, float dmin, float d_sub[kSubBlocks], float m_sub[kSubBlocks]) {
  if constexpr (std::is_same_v<Block, BlockQ4_K> || std::is_same_v<Block, BlockQ5_K>) {
    uint8_t scales[kSubBlocks], mins[kSubBlocks];
    k_scales_mins(b.scales, scales, mins);
    for (size_t s = 0; s < kSubBlocks; ++s) {
      d_sub[s] = d * static_cast<float>(scales[s]);
      m_sub[s] = -(dmin * static_cast<float>(mins[s]));
    }
  } else {
    for (size_t s = 0; s < kSubBlocks; ++s) {
      d_sub[s] = d;
      m_sub[s] = 0.0f;
    }
  }
}
// q2_k's min term of 16-value sub-block i: −(dmin·mn).
inline float q2_k_lane_min(const BlockQ2_K &b, float dmin, size_t i) {
  return -(dmin * static_cast<float>(q2_k_min(b, i)));
}

// The unsigned code u of element l (0..31) of 32-value sub-block s; the weight is u − offset
// (kCodeOffset: q6_k 32, q3_k 4, else 0).
inline int k_code(const BlockQ4_K &b, size_t s, size_t l) { return (b.qs[32 * (s / 2) + l] >> (4 * (s % 2))) & 15; }
inline int k_code(const BlockQ5_K &b, size_t s, size_t l) {
  return ((b.qs[32 * (s / 2) + l] >> (4 * (s % 2))) & 15) | ((b.qh[l] >> s) & 1) << 4;
}
inline int k_code(const BlockQ6_K &b, size_t s, size_t l) {
  const size_t h = s / 4, j = s % 4;  // half, quarter of the half
  const int low = (b.ql[64 * h + 32 * (j % 2) + l] >> (4 * (j / 2))) & 15;
  return low | ((b.qh[32 * h + l] >> (2 * j)) & 3) << 4;
}
inline int k_code(const BlockQ3_K &b, size_t s, size_t l) {
  return ((b.qs[32 * (s / 4) + l] >> (2 * (s % 4))) & 3) | ((b.hmask[l] >> s) & 1) << 2;
}
inline int k_code(const BlockQ2_K &b, size_t s, size_t l) { return (b.qs[32 * (s / 4) + l] >> (2 * (s % 4))) & 3; }

template <class Block>
constexpr int kCodeOffset = std::is_same_v<Block, BlockQ6_K>   ? 32
                            : std::is_same_v<Block, BlockQ3_K> ? 4
                                                               : 0;
// Whether a type's integer lanes carry a per-16 scale (q6_k, q3_k, q2_k).
template <class Block>
constexpr bool kScaledBySixteen =
    std::is_same_v<Block, BlockQ6_K> || std::is_same_v<Block, BlockQ3_K> || std::is_same_v<Block, BlockQ2_K>;
// Whether a type has a min term (q4_k, q5_k per 32 values; q2_k per 16).
template <class Block>
constexpr bool kKHasMin =
    std::is_same_v<Block, BlockQ4_K> || std::is_same_v<Block, BlockQ5_K> || std::is_same_v<Block, BlockQ2_K>;

namespace ref {
// n weights (whole super-blocks) as floats, ggml's dequantize_row_* exactly (FORMAT.md).
void dequantize_q4_k(float *out, const BlockQ4_K *blocks, size_t n);
void dequantize_q5_k(float *out, const BlockQ5_K *blocks, size_t n);
void dequantize_q6_k(float *out, const BlockQ6_K *blocks, size_t n);
void dequantize_q3_k(float *out, const BlockQ3_K *blocks, size_t n);
void dequantize_q2_k(float *out, const BlockQ2_K *blocks, size_t n);
// Row `row` (0..7) of an x8 group's n weights (whole super-blocks), likewise.
void dequantize_q4_kx8(float *out, const BlockQ4_Kx8 *group, size_t row, size_t n);
void dequantize_q5_kx8(float *out, const BlockQ5_Kx8 *group, size_t row, size_t n);
void dequantize_q6_kx8(float *out, const BlockQ6_Kx8 *group, size_t row, size_t n);
void dequantize_q3_kx8(float *out, const BlockQ3_Kx8 *group, size_t row, size_t n);
void dequantize_q2_kx8(float *out, const BlockQ2_Kx8 *group, size_t row, size_t n);
}  // namespace ref

}  // namespace mote::kernels

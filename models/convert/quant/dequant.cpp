#include "quant/dequant.hpp"

#include <algorithm>
#include <cstring>

#include "core/fp16.hpp"
#include "kernels/ref.hpp"

namespace mote::convert {
namespace {

namespace ref = kernels::ref;

// IQ4_XS: a 256-value super-block of eight 32-value sub-blocks, each with a six-bit scale, on
// IQ4_NL's levels (ggml's block_iq4_xs; fp16 d as its bits, the host little-endian as GGUF is).
struct BlockIQ4_XS {
  uint16_t d;
  uint16_t scales_h;    // bits 2s, 2s+1: the top two bits of sub-block s's six-bit scale
  uint8_t scales_l[4];  // the low nibbles, two sub-blocks a byte
  uint8_t qs[128];      // 16 bytes a 32-element sub-block, packed as Q4_0's
};
static_assert(sizeof(BlockIQ4_XS) == 136, "iq4_xs super-blocks are 136 bytes, as in GGUF");

// The runtime's decoder of Block over a tensor's bytes: n values (whole blocks) copied into
// aligned blocks a chunk at a time, since data in a file need not be aligned for Block's fields.
template <class Block, void (*kDecode)(float *, const Block *, size_t)>
void runtime_to_float(const uint8_t *src, size_t n, float *dst) {
  constexpr size_t kValues = kernels::sub_blocks_of<Block> * kernels::kQuantBlock, kChunk = 64;
  Block chunk[kChunk];
  for (size_t done = 0; done + kValues <= n;) {  // whole blocks only
    const size_t blocks = std::min(kChunk, (n - done) / kValues);
    std::memcpy(chunk, src + done / kValues * sizeof(Block), blocks * sizeof(Block));
    kDecode(dst + done, chunk, blocks * kValues);
    done += blocks * kValues;
  }
}

// The table row of a type the runtime runs: its block struct's sizes and its decoder.
template <class Block, void (*kDecode)(float *, const Block *, size_t)>
constexpr GgmlTypeInfo runtime_row(const char *name) {
  return {name, static_cast<uint32_t>(kernels::sub_blocks_of<Block> * kernels::kQuantBlock), sizeof(Block),
          runtime_to_float<Block, kDecode>};
}

// A type ggml defines whose blocks mote cannot decode: its sizes only.
constexpr GgmlTypeInfo sizes_only(const char *name, uint32_t block_elements, uint32_t block_bytes) {
  return {name, block_elements, block_bytes, nullptr};
}

constexpr uint32_t kQK = kernels::kSuperBlock;
constexpr GgmlTypeInfo kUnknown = {nullptr, 0, 0, nullptr};

// ggml's GGML_QUANT_SIZES, indexed by type id (ids 4 and 5 were removed from ggml).
constexpr GgmlTypeInfo kGgmlTypes[] = {
    {"F32", 1, 4, dequantize_f32},
    {"F16", 1, 2, dequantize_f16},
    runtime_row<kernels::BlockQ4_0, ref::dequantize_q4_0>("Q4_0"),
    runtime_row<kernels::BlockQ4_1, ref::dequantize_q4_1>("Q4_1"),
    kUnknown,
    kUnknown,
    runtime_row<kernels::BlockQ5_0, ref::dequantize_q5_0>("Q5_0"),
    runtime_row<kernels::BlockQ5_1, ref::dequantize_q5_1>("Q5_1"),
    runtime_row<kernels::BlockQ8_0, ref::dequantize_q8_0>("Q8_0"),
    sizes_only("Q8_1", 32, 40),
    runtime_row<kernels::BlockQ2_K, ref::dequantize_q2_k>("Q2_K"),
    runtime_row<kernels::BlockQ3_K, ref::dequantize_q3_k>("Q3_K"),
    runtime_row<kernels::BlockQ4_K, ref::dequantize_q4_k>("Q4_K"),
    runtime_row<kernels::BlockQ5_K, ref::dequantize_q5_k>("Q5_K"),
    runtime_row<kernels::BlockQ6_K, ref::dequantize_q6_k>("Q6_K"),
    sizes_only("Q8_K", kQK, 292),
    sizes_only("IQ2_XXS", kQK, 66),
    sizes_only("IQ2_XS", kQK, 74),
    sizes_only("IQ3_XXS", kQK, 98),
    sizes_only("IQ1_S", kQK, 50),
    runtime_row<kernels::BlockIQ4_NL, ref::dequantize_iq4_nl>("IQ4_NL"),
    sizes_only("IQ3_S", kQK, 110),
    sizes_only("IQ2_S", kQK, 82),
    {"IQ4_XS", kQK, sizeof(BlockIQ4_XS), dequantize_iq4_xs},
    sizes_only("I8", 1, 1),
    sizes_only("I16", 1, 2),
    sizes_only("I32", 1, 4),
    sizes_only("I64", 1, 8),
    sizes_only("F64", 1, 8),
    sizes_only("IQ1_M", kQK, 56),
    {"BF16", 1, 2, dequantize_bf16},
    sizes_only("Q4_0_4_4", 32, 18),
    sizes_only("Q4_0_4_8", 32, 18),
    sizes_only("Q4_0_8_8", 32, 18),
};
constexpr uint32_t kGgmlTypeCount = sizeof kGgmlTypes / sizeof kGgmlTypes[0];

// The 4-bit code of element j (0..31) of a 32-element run packed in 16 bytes (Q4_0's packing).
int nibble(const uint8_t *qs, int j) { return j < 16 ? qs[j] & 0x0F : qs[j - 16] >> 4; }

}  // namespace

const GgmlTypeInfo *ggml_type_info(uint32_t type) {
  if (type >= kGgmlTypeCount || kGgmlTypes[type].name == nullptr) return nullptr;
  return &kGgmlTypes[type];
}

std::string importable_ggml_types() {
  std::string names;
  for (const GgmlTypeInfo &row : kGgmlTypes) {
    if (row.to_float == nullptr) continue;
    names += names.empty() ? "" : ", ";
    names += row.name;
  }
  return names;
}

void dequantize_f32(const uint8_t *src, size_t n, float *dst) { std::memcpy(dst, src, n * 4); }

void dequantize_f16(const uint8_t *src, size_t n, float *dst) {
  for (size_t i = 0; i < n; ++i) {
    uint16_t bits;
    std::memcpy(&bits, src + 2 * i, 2);
    dst[i] = fp16_to_f32(bits);
  }
}

// A bfloat16 is a float's upper half.
void dequantize_bf16(const uint8_t *src, size_t n, float *dst) {
  for (size_t i = 0; i < n; ++i) {
    uint16_t upper;
    std::memcpy(&upper, src + 2 * i, 2);
    const uint32_t bits = static_cast<uint32_t>(upper) << 16;
    std::memcpy(&dst[i], &bits, 4);
  }
}

// Eight sub-blocks of 32, each with a six-bit scale: x = (d * (scale - 32)) * level[q].
void dequantize_iq4_xs(const uint8_t *src, size_t n, float *dst) {
  for (size_t b = 0; b < n / kQK; ++b) {
    BlockIQ4_XS block;
    std::memcpy(&block, src + b * sizeof block, sizeof block);
    const float d = fp16_to_f32(block.d);
    float *out = dst + b * kQK;
    for (int s = 0; s < 8; ++s) {
      const int low = (block.scales_l[s / 2] >> (4 * (s % 2))) & 0x0F;
      const int high = (block.scales_h >> (2 * s)) & 0x03;
      const float dl = d * static_cast<float>((low | high << 4) - 32);
      for (int j = 0; j < 32; ++j) {
        out[32 * s + j] = dl * static_cast<float>(kernels::kIQ4NLValues[nibble(block.qs + 16 * s, j)]);
      }
    }
  }
}

bool dequantize_ggml(uint32_t type, const uint8_t *src, size_t n_elements, float *dst) {
  const GgmlTypeInfo *info = ggml_type_info(type);
  if (info == nullptr || info->to_float == nullptr || n_elements % info->block_elements != 0) return false;
  info->to_float(src, n_elements, dst);
  return true;
}

}  // namespace mote::convert

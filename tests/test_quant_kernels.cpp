// The quantized kernels: 8-bit activation quantization and the integer products of q8_0, q4_0,
// q4_1, q5_0, q5_1, iq4_nl and the interleaved x8 layouts, the scalar twins against exact sums,
// then every SIMD table against the scalar twins bit for bit (kernels/quant.hpp defines the
// sums). The q5 and iq4_nl weights are decoded by the converter's ggml-exact dequantize_ggml.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "core/fp16.hpp"
#include "kernel_support.hpp"
#include "kernels/kernels.hpp"
#include "model/weight_types.hpp"
#include "quant/dequant.hpp"
#include "quant/repack.hpp"

using namespace mote_kernel_test;

namespace {

using mote::kernels::BlockIQ4_NL;
using mote::kernels::BlockQ4_0;
using mote::kernels::BlockQ4_1;
using mote::kernels::BlockQ5_0;
using mote::kernels::BlockQ5_1;
using mote::kernels::BlockQ8_0;
using mote::kernels::kHasMinimum;
using mote::kernels::kQuantBlock;
using mote::kernels::Q8Activations;

using Activations = mote_kernel_test::OwnedQ8;

// Random blocks as a converter would write them: any nibbles or int8 values, scales of real
// models' size (and some negative), q4_1 and q5_1 mins of either sign.
template <class Block>
std::vector<Block> random_blocks(size_t n, std::mt19937 &rng) {
  std::vector<Block> blocks(n);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(-0.02f, 0.05f);
  for (Block &b : blocks) {
    uint8_t *bytes = reinterpret_cast<uint8_t *>(&b);
    for (size_t i = 0; i < sizeof b; ++i) bytes[i] = static_cast<uint8_t>(byte(rng));
    b.d = mote::f32_to_fp16(scale(rng));
    if constexpr (kHasMinimum<Block>) b.m = mote::f32_to_fp16(scale(rng) - 0.3f);
  }
  return blocks;
}

// GGUF's dequantization formulas, written out independently of the runtime.
float weight_value(const BlockQ8_0 &b, size_t i) { return mote::fp16_to_f32(b.d) * b.qs[i]; }
int weight_nibble(const uint8_t *qs, size_t i) { return i < 16 ? qs[i] & 15 : qs[i - 16] >> 4; }
float weight_value(const BlockQ4_0 &b, size_t i) { return mote::fp16_to_f32(b.d) * (weight_nibble(b.qs, i) - 8); }
float weight_value(const BlockQ4_1 &b, size_t i) {
  return mote::fp16_to_f32(b.d) * weight_nibble(b.qs, i) + mote::fp16_to_f32(b.m);
}

// q5_0, q5_1 and iq4_nl: element i of the block as ggml's dequantize_row_* gives it.
uint32_t ggml_type(const BlockQ5_0 &) { return 6; }
uint32_t ggml_type(const BlockQ5_1 &) { return 7; }
uint32_t ggml_type(const BlockIQ4_NL &) { return 20; }
template <class Block>
float weight_value(const Block &b, size_t i) {
  float values[kQuantBlock];
  REQUIRE(mote::convert::dequantize_ggml(ggml_type(b), reinterpret_cast<const uint8_t *>(&b), kQuantBlock, values));
  return values[i];
}

// Activations with the shapes real ones have: mostly small, some blocks zero, some outliers.
std::vector<float> random_activations(size_t n, std::mt19937 &rng) {
  std::vector<float> x = random_floats(n, rng, -2.0f, 2.0f);
  for (size_t i = 0; i < n; i += 97) x[i] *= 40.0f;
  if (n >= 64) std::fill(x.begin() + 32, x.begin() + 64, 0.0f);  // an all-zero block
  return x;
}

template <class Block>
using QuantMatmul = void (*)(float *, size_t, const Block *, const Q8Activations &, size_t, size_t, size_t);

// The table's product kernel for a block type, plain or interleaved.
template <class Block>
QuantMatmul<Block> quant_matmul(const KernelTable &t) {
  if constexpr (std::is_same_v<Block, BlockQ8_0>) return t.matmul_q8_0;
  if constexpr (std::is_same_v<Block, BlockQ4_0>) return t.matmul_q4_0;
  if constexpr (std::is_same_v<Block, BlockQ4_1>) return t.matmul_q4_1;
  if constexpr (std::is_same_v<Block, mote::kernels::BlockQ8_0x8>) return t.matmul_q8_0x8;
  if constexpr (std::is_same_v<Block, mote::kernels::BlockQ4_0x8>) return t.matmul_q4_0x8;
  if constexpr (std::is_same_v<Block, mote::kernels::BlockQ4_1x8>) return t.matmul_q4_1x8;
  if constexpr (std::is_same_v<Block, BlockQ5_0>) return t.matmul_q5_0;
  if constexpr (std::is_same_v<Block, BlockQ5_1>) return t.matmul_q5_1;
  if constexpr (std::is_same_v<Block, BlockIQ4_NL>) return t.matmul_iq4_nl;
  if constexpr (std::is_same_v<Block, mote::kernels::BlockQ5_0x8>) return t.matmul_q5_0x8;
  if constexpr (std::is_same_v<Block, mote::kernels::BlockQ5_1x8>) return t.matmul_q5_1x8;
  if constexpr (std::is_same_v<Block, mote::kernels::BlockIQ4_NLx8>) return t.matmul_iq4_nlx8;
}

template <class Block>
const char *quant_name() {
  if constexpr (std::is_same_v<Block, BlockQ8_0>) return "matmul_q8_0";
  if constexpr (std::is_same_v<Block, BlockQ4_0>) return "matmul_q4_0";
  if constexpr (std::is_same_v<Block, BlockQ5_0>) return "matmul_q5_0";
  if constexpr (std::is_same_v<Block, BlockQ5_1>) return "matmul_q5_1";
  if constexpr (std::is_same_v<Block, BlockIQ4_NL>) return "matmul_iq4_nl";
  return "matmul_q4_1";
}

const size_t kQuantCols[] = {32, 64, 96, 288, 576, 1536};
const size_t kQuantRows[] = {1, 2, 3, 4, 5, 7, 9};
const size_t kQuantTokens[] = {1, 2, 3, 4, 5, 7};

bool same_bits(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// The scalar twin against the exact product of the dequantized weights and activations.
template <class Block>
void check_scalar_quant_matmul() {
  const KernelTable &ref = mote::kernels::scalar_kernels();
  std::mt19937 rng(11);
  for (size_t cols : kQuantCols) {
    const size_t rows = 5, n_tokens = 3, n_blocks = cols / kQuantBlock;
    const std::vector<Block> w = random_blocks<Block>(rows * n_blocks, rng);
    const std::vector<float> x = random_activations(cols * n_tokens, rng);
    Activations xq(cols, n_tokens);
    ref.quantize_q8(xq.view(), x.data(), cols, n_tokens);
    std::vector<float> out(rows * n_tokens);
    quant_matmul<Block>(ref)(out.data(), rows, w.data(), xq.view(), rows, cols, n_tokens);
    for (size_t t = 0; t < n_tokens; ++t) {
      for (size_t r = 0; r < rows; ++r) {
        double exact = 0.0, magnitude = 0.0;
        for (size_t c = 0; c < cols; ++c) {
          const double term = static_cast<double>(weight_value(w[r * n_blocks + c / 32], c % 32)) *
                              xq.scale[t * n_blocks + c / 32] * xq.q[t * cols + c];
          exact += term;
          magnitude += std::fabs(term);
        }
        CAPTURE(cols);
        CHECK(std::fabs(out[t * rows + r] - exact) <= 1e-5 * magnitude + 1e-6);
      }
    }
  }
}

// Every SIMD table equals the scalar twin bit for bit, at every tile edge; and a row split or
// a token batch never changes a result.
template <class Block>
void check_simd_quant_matmul() {
  const KernelTable &ref = mote::kernels::scalar_kernels();
  std::mt19937 rng(12);
  for (const KernelTable *t : simd_tables()) {
    for (size_t cols : kQuantCols) {
      const size_t n_blocks = cols / kQuantBlock;
      const std::vector<Block> w = random_blocks<Block>(9 * n_blocks, rng);
      const std::vector<float> x = random_activations(cols * 7, rng);
      Activations xq(cols, 7);
      ref.quantize_q8(xq.view(), x.data(), cols, 7);
      for (size_t rows : kQuantRows) {
        for (size_t n_tokens : kQuantTokens) {
          const std::string what = label(*t, quant_name<Block>(), rows, cols) + " tokens " + std::to_string(n_tokens);
          std::vector<float> expected(rows * n_tokens), actual(rows * n_tokens, -1.0f);
          quant_matmul<Block>(ref)(expected.data(), rows, w.data(), xq.view(), rows, cols, n_tokens);
          quant_matmul<Block> (*t)(actual.data(), rows, w.data(), xq.view(), rows, cols, n_tokens);
          CHECK_MESSAGE(same_bits(actual, expected), what);
          // One token at a time and the rows in two calls give the same bits.
          std::vector<float> pieces(rows * n_tokens, -1.0f);
          const size_t split = rows / 2;
          for (size_t tok = 0; tok < n_tokens; ++tok) {
            const Q8Activations one = xq.view(tok);
            float *row_out = pieces.data() + tok * rows;
            quant_matmul<Block> (*t)(row_out, rows, w.data(), one, split, cols, 1);
            quant_matmul<Block> (*t)(row_out + split, rows, w.data() + split * n_blocks, one, rows - split, cols, 1);
          }
          CHECK_MESSAGE(same_bits(pieces, expected), what << " split");
        }
      }
    }
  }
}

}  // namespace

TEST_CASE("scalar quantize_q8 follows its definition") {
  const KernelTable &ref = mote::kernels::scalar_kernels();
  float x[64];
  for (size_t i = 0; i < 32; ++i) x[i] = static_cast<float>(i) - 10.5f;  // amax 21.5 at i = 31
  x[5] = -25.4f;                                                         // the largest magnitude
  for (size_t i = 32; i < 64; ++i) x[i] = 0.0f;
  Activations xq(32, 2);
  ref.quantize_q8(xq.view(), x, 32, 2);
  const float d = 25.4f / 127.0f;
  CHECK(xq.scale[0] == d);
  CHECK(xq.q[5] == -127);
  CHECK(xq.q[31] == static_cast<int8_t>(std::nearbyint(20.5f * (1.0f / d))));
  for (size_t i = 0; i < 32; ++i) CHECK(std::fabs(x[i] - d * xq.q[i]) <= d / 2 * 1.0001f);
  for (size_t k = 0; k < 8; ++k) {
    const int32_t sum = xq.q[4 * k] + xq.q[4 * k + 1] + xq.q[4 * k + 2] + xq.q[4 * k + 3];
    CHECK(xq.lane_offset[k] == 8 * sum);
    CHECK(xq.lane_sum_scaled[k] == d * static_cast<float>(sum));
  }
  int32_t block_sum = 0;
  for (size_t i = 0; i < 32; ++i) block_sum += xq.q[i];
  CHECK(xq.block_sum[0] == block_sum);
  CHECK(xq.scale[1] == 0.0f);  // an all-zero block
  for (size_t i = 32; i < 64; ++i) CHECK(xq.q[i] == 0);
}

TEST_CASE("scalar quantized products equal the dequantized dot product") {
  check_scalar_quant_matmul<BlockQ8_0>();
  check_scalar_quant_matmul<BlockQ4_0>();
  check_scalar_quant_matmul<BlockQ4_1>();
  check_scalar_quant_matmul<BlockQ5_0>();
  check_scalar_quant_matmul<BlockQ5_1>();
  check_scalar_quant_matmul<BlockIQ4_NL>();
}

TEST_CASE("simd quantize_q8 matches the scalar twin bit for bit") {
  const KernelTable &ref = mote::kernels::scalar_kernels();
  std::mt19937 rng(13);
  for (const KernelTable *t : simd_tables()) {
    for (size_t cols : kQuantCols) {
      const std::vector<float> x = random_activations(cols * 3, rng);
      Activations expected(cols, 3), actual(cols, 3);
      ref.quantize_q8(expected.view(), x.data(), cols, 3);
      t->quantize_q8(actual.view(), x.data(), cols, 3);
      const std::string what = label(*t, "quantize_q8", cols);
      CHECK_MESSAGE(actual.q == expected.q, what);
      CHECK_MESSAGE(actual.scale == expected.scale, what);
      CHECK_MESSAGE(actual.lane_offset == expected.lane_offset, what);
      CHECK_MESSAGE(actual.lane_sum_scaled == expected.lane_sum_scaled, what);
      CHECK_MESSAGE(actual.block_sum == expected.block_sum, what);
      CHECK_MESSAGE(actual.half_sum == expected.half_sum, what);
      CHECK_MESSAGE(same_bits(actual.scaled_sum, expected.scaled_sum), what);
    }
  }
}

TEST_CASE("simd quantized products match the scalar twin bit for bit") {
  check_simd_quant_matmul<BlockQ8_0>();
  check_simd_quant_matmul<BlockQ4_0>();
  check_simd_quant_matmul<BlockQ4_1>();
  check_simd_quant_matmul<BlockQ5_0>();
  check_simd_quant_matmul<BlockQ5_1>();
  check_simd_quant_matmul<BlockIQ4_NL>();
}

// --- the row-interleaved x8 layouts -------------------------------------------------------------

namespace {

using mote::kernels::BlockIQ4_NLx8;
using mote::kernels::BlockQ4_0x8;
using mote::kernels::BlockQ4_1x8;
using mote::kernels::BlockQ5_0x8;
using mote::kernels::BlockQ5_1x8;
using mote::kernels::BlockQ8_0x8;

// The plain block type of an x8 layout (itself for a plain one).
template <class Block, class = void>
struct PlainOf {
  using type = Block;
};
template <class Block>
struct PlainOf<Block, std::void_t<typename Block::Plain>> {
  using type = typename Block::Plain;
};

// Plain blocks of rows 8g .. 8g + 7 as x8 group blocks, written from quant.hpp's formula: quant
// byte j of row i goes to qs[(8 * (j / 4) + i) * 4 + j % 4].
template <class Interleaved, class Plain>
std::vector<Interleaved> interleave(const std::vector<Plain> &plain, size_t rows, size_t n_blocks) {
  std::vector<Interleaved> out(rows / 8 * n_blocks);
  for (size_t g = 0; g < rows / 8; ++g) {
    for (size_t b = 0; b < n_blocks; ++b) {
      Interleaved &dst = out[g * n_blocks + b];
      for (size_t i = 0; i < 8; ++i) {
        const Plain &src = plain[(8 * g + i) * n_blocks + b];
        dst.d[i] = src.d;
        if constexpr (kHasMinimum<Plain>) dst.m[i] = src.m;
        if constexpr (std::is_same_v<Plain, BlockQ5_0> || std::is_same_v<Plain, BlockQ5_1>) {
          std::memcpy(&dst.qh[i], src.qh, 4);  // d[8], (m[8],) then the rows' qh words
        }
        for (size_t j = 0; j < sizeof src.qs; ++j) {
          std::memcpy(reinterpret_cast<uint8_t *>(dst.qs) + (8 * (j / 4) + i) * 4 + j % 4,
                      reinterpret_cast<const uint8_t *>(src.qs) + j, 1);
        }
      }
    }
  }
  return out;
}

// The scalar twin against the exact dot product of the same weights in plain blocks; every
// SIMD table against the scalar twin bit for bit, whole, per token and with the rows split at
// a group boundary.
template <class Interleaved, class Plain>
void check_interleaved_matmul(const char *name) {
  const KernelTable &ref = mote::kernels::scalar_kernels();
  std::mt19937 rng(21);
  std::vector<const KernelTable *> tables = simd_tables();
  for (size_t cols : kQuantCols) {
    const size_t n_blocks = cols / kQuantBlock, max_rows = 40, max_tokens = 7;
    const std::vector<Plain> plain = random_blocks<Plain>(max_rows * n_blocks, rng);
    const std::vector<Interleaved> w = interleave<Interleaved>(plain, max_rows, n_blocks);
    const std::vector<float> x = random_activations(cols * max_tokens, rng);
    Activations xq(cols, max_tokens);
    ref.quantize_q8(xq.view(), x.data(), cols, max_tokens);
    for (size_t rows : {size_t{8}, size_t{16}, size_t{24}, size_t{40}}) {
      for (size_t n_tokens : kQuantTokens) {
        const std::string what = std::string(name) + " " + std::to_string(rows) + "x" + std::to_string(cols) +
                                 " tokens " + std::to_string(n_tokens);
        std::vector<float> expected(rows * n_tokens);
        quant_matmul<Interleaved>(ref)(expected.data(), rows, w.data(), xq.view(), rows, cols, n_tokens);
        for (size_t t = 0; t < n_tokens; ++t) {
          for (size_t r = 0; r < rows; ++r) {
            double exact = 0.0, magnitude = 0.0;
            for (size_t c = 0; c < cols; ++c) {
              const double term = static_cast<double>(weight_value(plain[r * n_blocks + c / 32], c % 32)) *
                                  xq.scale[t * n_blocks + c / 32] * xq.q[t * cols + c];
              exact += term;
              magnitude += std::fabs(term);
            }
            CHECK_MESSAGE(std::fabs(expected[t * rows + r] - exact) <= 1e-5 * magnitude + 1e-6, what);
          }
        }
        for (const KernelTable *table : tables) {
          std::vector<float> actual(rows * n_tokens, -1.0f), pieces(rows * n_tokens, -1.0f);
          quant_matmul<Interleaved> (*table)(actual.data(), rows, w.data(), xq.view(), rows, cols, n_tokens);
          CHECK_MESSAGE(same_bits(actual, expected), table->isa_name << " " << what);
          const size_t split = rows / 16 * 8;  // a group boundary (0 for one group)
          for (size_t tok = 0; tok < n_tokens; ++tok) {
            const Q8Activations one = xq.view(tok);
            float *row_out = pieces.data() + tok * rows;
            quant_matmul<Interleaved> (*table)(row_out, rows, w.data(), one, split, cols, 1);
            quant_matmul<Interleaved> (*table)(row_out + split, rows, w.data() + split / 8 * n_blocks, one,
                                               rows - split, cols, 1);
          }
          CHECK_MESSAGE(same_bits(pieces, expected), table->isa_name << " " << what << " split");
        }
      }
    }
  }
}

}  // namespace

TEST_CASE("interleaved quantized products: exact sums, every SIMD table bit-identical to the scalar twin") {
  check_interleaved_matmul<BlockQ8_0x8, BlockQ8_0>("matmul_q8_0x8");
  check_interleaved_matmul<BlockQ4_0x8, BlockQ4_0>("matmul_q4_0x8");
  check_interleaved_matmul<BlockQ4_1x8, BlockQ4_1>("matmul_q4_1x8");
  check_interleaved_matmul<BlockQ5_0x8, BlockQ5_0>("matmul_q5_0x8");
  check_interleaved_matmul<BlockQ5_1x8, BlockQ5_1>("matmul_q5_1x8");
  check_interleaved_matmul<BlockIQ4_NLx8, BlockIQ4_NL>("matmul_iq4_nlx8");
}

// The converter's repack writes the layout FORMAT.md and quant.hpp describe (the test's own
// interleave above), and the runtime's rows decode every row as ggml does from the plain blocks.
// Interleaved is void for a type without an x8 twin.
template <class Interleaved, class Plain>
void check_layout_and_rows(mote::format::DType plain_dtype) {
  std::mt19937 rng(41);
  const size_t rows = 16, cols = 96, n_blocks = cols / kQuantBlock;
  const mote::format::DTypeTraits &traits = mote::format::traits_of(plain_dtype);
  const std::vector<Plain> plain = random_blocks<Plain>(rows * n_blocks, rng);
  const std::vector<uint8_t> plain_bytes(reinterpret_cast<const uint8_t *>(plain.data()),
                                         reinterpret_cast<const uint8_t *>(plain.data() + plain.size()));
  std::vector<uint8_t> repacked;
  if constexpr (!std::is_void_v<Interleaved>) {
    const std::vector<Interleaved> groups = interleave<Interleaved>(plain, rows, n_blocks);
    repacked = mote::convert::interleave_rows(plain_bytes, plain_dtype, rows, cols);
    REQUIRE(repacked.size() == groups.size() * sizeof(Interleaved));
    CHECK(std::memcmp(repacked.data(), groups.data(), repacked.size()) == 0);
    CHECK(mote::convert::deinterleave_rows(repacked, plain_dtype, rows, cols) == plain_bytes);
  }
  for (size_t r = 0; r < rows; ++r) {
    std::vector<float> want(cols), got(cols, -1.0f);
    REQUIRE(mote::convert::dequantize_ggml(traits.ggml_type, plain_bytes.data() + r * n_blocks * sizeof(Plain), cols,
                                           want.data()));
    mote::weight_type(static_cast<uint32_t>(plain_dtype))->dequantize_row(got.data(), plain.data(), r, cols);
    CHECK_MESSAGE(same_bits(got, want), traits.name << " row " << r);
    if constexpr (!std::is_void_v<Interleaved>) {
      std::fill(got.begin(), got.end(), -1.0f);
      mote::weight_type(static_cast<uint32_t>(traits.twin))->dequantize_row(got.data(), repacked.data(), r, cols);
      CHECK_MESSAGE(same_bits(got, want), traits.name << "x8 row " << r);
    }
  }
}

TEST_CASE("q5_0, q5_1 and iq4_nl rows decode as ggml; their x8 layouts are repack's bytes") {
  using mote::format::DType;
  check_layout_and_rows<BlockQ5_0x8, BlockQ5_0>(DType::q5_0);
  check_layout_and_rows<BlockQ5_1x8, BlockQ5_1>(DType::q5_1);
  check_layout_and_rows<BlockIQ4_NLx8, BlockIQ4_NL>(DType::iq4_nl);
}

// --- SmolLM2's shapes: past the L2 row blocks --------------------------------------------------

namespace {

// Every table against the scalar twin at SmolLM2-135M's product shapes (q/k/v/o 576 or 192 rows
// of 576, gate/up 1536 of 576, down 576 of 1536) and prefill batches up to 64 tokens: the
// drivers split rows into L2-sized blocks (kRowBlockBytes: 200 to 400 rows of 576 columns, 40 to
// 80 of 1536) and tokens into tiles, and the sweeps above (at most 40 rows, 7 tokens) never
// leave the first block. A wrong row offset at a block boundary fails here and nowhere above.
template <class Block>
void check_model_shapes(const char *name) {
  const KernelTable &ref = mote::kernels::scalar_kernels();
  std::mt19937 rng(31);
  const struct { size_t rows, cols; } kShapes[] = {{192, 576}, {576, 576}, {1536, 576}, {576, 1536}};
  for (const auto &shape : kShapes) {
    const size_t n_blocks = shape.cols / kQuantBlock, max_tokens = 64;
    using Plain = typename PlainOf<Block>::type;
    const std::vector<Plain> plain = random_blocks<Plain>(shape.rows * n_blocks, rng);
    std::vector<Block> w;
    if constexpr (std::is_same_v<Block, Plain>) {
      w = plain;
    } else {
      w = interleave<Block>(plain, shape.rows, n_blocks);
    }
    const std::vector<float> x = random_activations(shape.cols * max_tokens, rng);
    Activations xq(shape.cols, max_tokens);
    ref.quantize_q8(xq.view(), x.data(), shape.cols, max_tokens);
    for (size_t n_tokens : {size_t{8}, size_t{16}, size_t{17}, size_t{64}}) {
      std::vector<float> expected(shape.rows * n_tokens);
      quant_matmul<Block>(ref)(expected.data(), shape.rows, w.data(), xq.view(), shape.rows, shape.cols, n_tokens);
      for (const KernelTable *table : simd_tables()) {
        std::vector<float> actual(shape.rows * n_tokens, -1.0f);
        quant_matmul<Block> (*table)(actual.data(), shape.rows, w.data(), xq.view(), shape.rows, shape.cols, n_tokens);
        const std::string what = label(*table, name, shape.rows, shape.cols) + " tokens " + std::to_string(n_tokens);
        CHECK_MESSAGE(same_bits(actual, expected), what);
      }
    }
  }
}

}  // namespace

TEST_CASE("quantized products at SmolLM2's shapes and batches: every SIMD table bit-identical to the scalar twin") {
  check_model_shapes<BlockQ8_0>("matmul_q8_0");
  check_model_shapes<BlockQ4_0>("matmul_q4_0");
  check_model_shapes<BlockQ4_1>("matmul_q4_1");
  check_model_shapes<BlockQ8_0x8>("matmul_q8_0x8");
  check_model_shapes<BlockQ4_0x8>("matmul_q4_0x8");
  check_model_shapes<BlockQ4_1x8>("matmul_q4_1x8");
  check_model_shapes<BlockQ5_0>("matmul_q5_0");
  check_model_shapes<BlockQ5_1>("matmul_q5_1");
  check_model_shapes<BlockIQ4_NL>("matmul_iq4_nl");
  check_model_shapes<BlockQ5_0x8>("matmul_q5_0x8");
  check_model_shapes<BlockQ5_1x8>("matmul_q5_1x8");
  check_model_shapes<BlockIQ4_NLx8>("matmul_iq4_nlx8");
}

// The K-quant super-block kernels (q4_k, q5_k, q6_k, q3_k, q2_k): the runtime's dequantization
// equals ggml's (the converter's dequantize_ggml, itself checked against gguf's numpy oracle) bit
// for bit; the scalar twin equals the exact product of the dequantized weights and the 8-bit
// activations; every SIMD table equals the scalar twin bit for bit at every tile edge, for any
// token batch and row split (kernels/quant.hpp defines the sums). Their x8 layouts (q4_kx8,
// q5_kx8, q6_kx8, q3_kx8, q2_kx8), made by the converter's repack from the plain blocks, give
// every row the plain type's values bit for bit and its products up to float rounding, on every
// table.
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

using mote::format::DType;
using mote::kernels::BlockQ2_K;
using mote::kernels::BlockQ3_K;
using mote::kernels::BlockQ4_K;
using mote::kernels::BlockQ5_K;
using mote::kernels::BlockQ6_K;
using mote::kernels::kQuantBlock;
using mote::kernels::Q8Activations;

// Each block type's dtype and kernel.
template <class Block>
struct KType {
  static constexpr DType dtype = std::is_same_v<Block, BlockQ4_K>   ? DType::q4_k
                                 : std::is_same_v<Block, BlockQ5_K> ? DType::q5_k
                                 : std::is_same_v<Block, BlockQ6_K> ? DType::q6_k
                                 : std::is_same_v<Block, BlockQ3_K> ? DType::q3_k
                                                                    : DType::q2_k;
  static constexpr auto kernel = [] {
    if constexpr (std::is_same_v<Block, BlockQ4_K>) return &KernelTable::matmul_q4_k;
    if constexpr (std::is_same_v<Block, BlockQ5_K>) return &KernelTable::matmul_q5_k;
    if constexpr (std::is_same_v<Block, BlockQ6_K>) return &KernelTable::matmul_q6_k;
    if constexpr (std::is_same_v<Block, BlockQ3_K>) return &KernelTable::matmul_q3_k;
    if constexpr (std::is_same_v<Block, BlockQ2_K>) return &KernelTable::matmul_q2_k;
  }();
};

template <class Block>
const char *name_of() {
  return mote::format::traits_of(KType<Block>::dtype).name;
}

// One buffer per Q8Activations array, for n_tokens vectors of cols values.
struct OwnedActivations : mote_kernel_test::OwnedQ8 {
  OwnedActivations(const std::vector<float> &x, size_t cols_, size_t n_tokens) : OwnedQ8(cols_, n_tokens) {
    mote::kernels::scalar_kernels().quantize_q8(view(), x.data(), cols, n_tokens);
  }
};

// Super-blocks of random bytes (every bit pattern of codes and sub-block scales is valid) with
// finite d (and dmin) of real models' size, either sign.
template <class Block>
std::vector<Block> random_super_blocks(size_t n, std::mt19937 &rng) {
  std::vector<Block> blocks(n);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(-0.004f, 0.01f);
  for (Block &b : blocks) {
    uint8_t *bytes = reinterpret_cast<uint8_t *>(&b);
    for (size_t i = 0; i < sizeof b; ++i) bytes[i] = static_cast<uint8_t>(byte(rng));
    b.d = mote::f32_to_fp16(scale(rng));
    if constexpr (std::is_same_v<Block, BlockQ4_K> || std::is_same_v<Block, BlockQ5_K> ||
                  std::is_same_v<Block, BlockQ2_K>) {
      b.dmin = mote::f32_to_fp16(scale(rng));
    }
  }
  return blocks;
}

std::vector<float> random_activations(size_t n, std::mt19937 &rng) {
  std::vector<float> x = random_floats(n, rng, -2.0f, 2.0f);
  for (size_t i = 0; i < n; i += 97) x[i] *= 40.0f;              // outliers
  if (n >= 64) std::fill(x.begin() + 32, x.begin() + 64, 0.0f);  // an all-zero block
  return x;
}

// ggml's own dequantization of these bytes (the converter's, with GGUF's type id).
template <class Block>
std::vector<float> ggml_values(const std::vector<Block> &blocks) {
  std::vector<float> out(blocks.size() * 256);
  REQUIRE(mote::convert::dequantize_ggml(mote::format::traits_of(KType<Block>::dtype).ggml_type,
                                         reinterpret_cast<const uint8_t *>(blocks.data()), out.size(), out.data()));
  return out;
}

bool same_bits(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

template <class Block>
void check_dequantize_row() {
  std::mt19937 rng(21);
  const size_t rows = 3, cols = 512;
  const std::vector<Block> w = random_super_blocks<Block>(rows * cols / 256, rng);
  const std::vector<float> want = ggml_values(w);
  const mote::WeightType *type = mote::weight_type(static_cast<uint32_t>(KType<Block>::dtype));
  REQUIRE(type != nullptr);
  for (size_t r = 0; r < rows; ++r) {
    std::vector<float> got(cols);
    type->dequantize_row(got.data(), w.data(), r, cols);
    CHECK_MESSAGE(std::memcmp(got.data(), want.data() + r * cols, cols * sizeof(float)) == 0, name_of<Block>()
                                                                                                  << " row " << r);
  }
}

// The scalar twin against the exact sum of ggml's dequantized weights times the activations.
template <class Block>
void check_scalar_against_exact() {
  const KernelTable &ref = mote::kernels::scalar_kernels();
  std::mt19937 rng(22);
  for (size_t cols : {256, 512, 1536}) {
    const size_t rows = 5, n_tokens = 3;
    const std::vector<Block> w = random_super_blocks<Block>(rows * cols / 256, rng);
    const std::vector<float> values = ggml_values(w);
    OwnedActivations xq(random_activations(cols * n_tokens, rng), cols, n_tokens);
    std::vector<float> out(rows * n_tokens);
    (ref.*KType<Block>::kernel)(out.data(), rows, w.data(), xq.view(), rows, cols, n_tokens);
    for (size_t t = 0; t < n_tokens; ++t) {
      for (size_t r = 0; r < rows; ++r) {
        double exact = 0.0, magnitude = 0.0;
        for (size_t c = 0; c < cols; ++c) {
          const double term =
              static_cast<double>(values[r * cols + c]) * xq.scale[t * cols / 32 + c / 32] * xq.q[t * cols + c];
          exact += term;
          magnitude += std::fabs(term);
        }
        CAPTURE(name_of<Block>());
        CAPTURE(cols);
        CHECK(std::fabs(out[t * rows + r] - exact) <= 1e-5 * magnitude + 1e-6);
      }
    }
  }
}

// Every SIMD table equals the scalar twin bit for bit; one token at a time and the rows in two
// calls give the same bits.
template <class Block>
void check_simd_against_scalar() {
  const KernelTable &ref = mote::kernels::scalar_kernels();
  const auto kernel = KType<Block>::kernel;
  std::mt19937 rng(23);
  for (const KernelTable *t : simd_tables()) {
    for (size_t cols : {256, 512, 1536, 2304}) {
      const size_t row_blocks = cols / 256;
      const std::vector<Block> w = random_super_blocks<Block>(9 * row_blocks, rng);
      OwnedActivations xq(random_activations(cols * 7, rng), cols, 7);
      for (size_t rows = 1; rows <= 9; ++rows) {
        for (size_t n_tokens = 1; n_tokens <= 7; ++n_tokens) {
          const std::string what = label(*t, name_of<Block>(), rows, cols) + " tokens " + std::to_string(n_tokens);
          std::vector<float> expected(rows * n_tokens), actual(rows * n_tokens, -1.0f);
          (ref.*kernel)(expected.data(), rows, w.data(), xq.view(), rows, cols, n_tokens);
          (t->*kernel)(actual.data(), rows, w.data(), xq.view(), rows, cols, n_tokens);
          CHECK_MESSAGE(same_bits(actual, expected), what);
          std::vector<float> pieces(rows * n_tokens, -1.0f);
          const size_t split = rows / 2;
          for (size_t tok = 0; tok < n_tokens; ++tok) {
            float *row_out = pieces.data() + tok * rows;
            (t->*kernel)(row_out, rows, w.data(), xq.view(tok), split, cols, 1);
            (t->*kernel)(row_out + split, rows, w.data() + split * row_blocks, xq.view(tok), rows - split, cols, 1);
          }
          CHECK_MESSAGE(same_bits(pieces, expected), what << " split");
        }
      }
    }
  }
}

// The x8 twin of a plain K type: its dtype and kernel.
template <class Block>
constexpr DType kX8Dtype = mote::format::traits_of(KType<Block>::dtype).twin;

// Rows interleaved by the converter read back as the plain rows (bit for bit) and multiply to the
// plain kernel's results up to the float folding order (quant.hpp: one accumulator per row
// instead of eight lanes), on the scalar twin and every SIMD table (whose x8 results equal the
// scalar twin's bit for bit).
template <class Block>
void check_x8_against_plain() {
  const KernelTable &ref = mote::kernels::scalar_kernels();
  std::mt19937 rng(24);
  const mote::WeightType *plain = mote::weight_type(static_cast<uint32_t>(KType<Block>::dtype));
  const mote::WeightType *x8 = mote::weight_type(static_cast<uint32_t>(kX8Dtype<Block>));
  REQUIRE(plain != nullptr);
  REQUIRE(x8 != nullptr);
  for (size_t cols : {256, 1536}) {
    const size_t rows = 16, n_tokens = 5;
    const std::vector<Block> w = random_super_blocks<Block>(rows * cols / 256, rng);
    const uint8_t *first = reinterpret_cast<const uint8_t *>(w.data());
    const std::vector<uint8_t> groups = mote::convert::interleave_rows(
        std::vector<uint8_t>(first, first + w.size() * sizeof(Block)), KType<Block>::dtype, rows, cols);
    for (size_t r = 0; r < rows; ++r) {
      std::vector<float> want(cols), got(cols);
      plain->dequantize_row(want.data(), w.data(), r, cols);
      x8->dequantize_row(got.data(), groups.data(), r, cols);
      CHECK_MESSAGE(same_bits(got, want), name_of<Block>() << " x8 row " << r);
    }
    OwnedActivations xq(random_activations(cols * n_tokens, rng), cols, n_tokens);
    const mote::MatmulInput input{nullptr, xq.view()};
    std::vector<float> want(rows * n_tokens), scalar_x8(rows * n_tokens);
    plain->matmul(ref, want.data(), rows, w.data(), input, rows, cols, n_tokens);
    x8->matmul(ref, scalar_x8.data(), rows, groups.data(), input, rows, cols, n_tokens);
    const std::vector<float> values = ggml_values(w);
    for (size_t t = 0; t < n_tokens; ++t) {
      for (size_t r = 0; r < rows; ++r) {
        double magnitude = 0.0;  // of the terms: both sums round relative to it, in different orders
        for (size_t c = 0; c < cols; ++c)
          magnitude += std::fabs(double{values[r * cols + c]} * xq.scale[(t * cols + c) / 32] * xq.q[t * cols + c]);
        CAPTURE(name_of<Block>());
        CAPTURE(r);
        CHECK(std::fabs(scalar_x8[t * rows + r] - want[t * rows + r]) <= 1e-5 * magnitude + 1e-6);
      }
    }
    for (const KernelTable *t : simd_tables()) {
      std::vector<float> got(rows * n_tokens, -1.0f);
      x8->matmul(*t, got.data(), rows, groups.data(), input, rows, cols, n_tokens);
      CHECK_MESSAGE(same_bits(got, scalar_x8), label(*t, name_of<Block>(), rows, cols) << " x8");
    }
  }
}

template <class... Blocks>
struct KTypes {
  template <class Fn>
  static void each(Fn fn) {
    (fn(Blocks{}), ...);
  }
};
using AllK = KTypes<BlockQ4_K, BlockQ6_K, BlockQ5_K, BlockQ3_K, BlockQ2_K>;

}  // namespace

TEST_CASE("K-quant rows dequantize as ggml does, bit for bit") {
  AllK::each([](auto block) { check_dequantize_row<decltype(block)>(); });
}

TEST_CASE("scalar K-quant products equal the dequantized dot product") {
  AllK::each([](auto block) { check_scalar_against_exact<decltype(block)>(); });
}

TEST_CASE("simd K-quant products match the scalar twin bit for bit") {
  AllK::each([](auto block) { check_simd_against_scalar<decltype(block)>(); });
}

TEST_CASE("K-quant x8 layouts: the plain rows' values and products, on every table") {
  AllK::each([](auto block) { check_x8_against_plain<decltype(block)>(); });
}

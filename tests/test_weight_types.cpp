// Every weight type this build runs, driven by its rows (format::kDTypeTraits for the bytes,
// model/weight_types.cpp for the kernels) rather than one hand-written case per type: a type
// added as a row is covered here without touching this file. For each type and each SIMD table
// the CPU has, the product equals the scalar twin bit for bit (one token and batches, whole
// matrices and row splits at the type's chunk size), and the scalar twin equals the exact dot
// product of the row reader's values with the 8-bit activations.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/fp16.hpp"
#include "kernel_support.hpp"
#include "kernels/kernels.hpp"
#include "model/weight_types.hpp"

using namespace mote_kernel_test;

namespace {

using mote::ActivationFormat;
using mote::MatmulInput;
using mote::WeightType;
using mote::format::DTypeTraits;

// Owns the arrays of one Q8Activations and the floats they quantize.
struct Input {
  std::vector<float> values;
  mote_kernel_test::OwnedQ8 quantized;
  size_t cols;

  Input(size_t cols_, size_t n_tokens, std::mt19937 &rng)
      : values(random_floats(cols_ * n_tokens, rng, -2.0f, 2.0f)), quantized(cols_, n_tokens), cols(cols_) {
    for (size_t i = 0; i < values.size(); i += 97) values[i] *= 40.0f;  // outliers, as real activations have
    mote::kernels::scalar_kernels().quantize_q8(quantized.view(), values.data(), cols, n_tokens);
  }
  // Token `first` onwards.
  MatmulInput input(size_t first) { return {values.data() + first * cols, quantized.view(first)}; }
};

// A matrix of the row's dtype from random bytes: every quant bit pattern is a valid value, so
// only the fp16 scale fields (the row says where) are set, to finite sizes real models have.
std::vector<uint8_t> random_matrix(const DTypeTraits &row, size_t rows, size_t cols, std::mt19937 &rng) {
  const size_t row_bytes = mote::weight_row_bytes(row.dtype, cols);
  std::vector<uint8_t> bytes(rows * row_bytes);
  std::uniform_int_distribution<int> byte(0, 255);
  for (uint8_t &b : bytes) b = static_cast<uint8_t>(byte(rng));
  std::uniform_real_distribution<float> scale(-0.02f, 0.05f);
  const auto set_half = [&](size_t at, float v) {
    const uint16_t h = mote::f32_to_fp16(v);
    std::memcpy(bytes.data() + at, &h, 2);
  };
  const size_t group = row.interleaved_rows, blocks_per_row = cols / row.block_elements;
  for (size_t g = 0; g < rows / group; ++g) {
    for (size_t b = 0; b < blocks_per_row; ++b) {
      // A plain block, or an x8 group block with each field's 8 rows side by side.
      const size_t start = (g * blocks_per_row + b) * group * row.block_bytes + row.scale_offset;
      for (size_t f = 0; f < row.scale_fields * group; ++f)
        set_half(start + 2 * f, scale(rng) - (f >= group ? 0.3f : 0.0f));
    }
  }
  return bytes;
}

bool same_bits(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Row lengths to test: a few blocks, and SmolLM2's 576 and 1536 when they are whole blocks.
std::vector<size_t> test_cols(const DTypeTraits &row) {
  std::vector<size_t> cols = {row.block_elements, 3 * row.block_elements};
  for (size_t c : {size_t{576}, size_t{1536}}) {
    if (c % row.block_elements == 0 && c > 3 * row.block_elements) cols.push_back(c);
  }
  return cols;
}

std::vector<const WeightType *> quantized_types() {
  std::vector<const WeightType *> types;
  for (uint32_t d = 0; d < mote::format::kDTypeCount; ++d) {
    const WeightType *type = mote::weight_type(d);
    if (type != nullptr && type->activation == ActivationFormat::q8) types.push_back(type);
  }
  return types;
}

}  // namespace

TEST_CASE("weight types: the scalar twin is the exact product of the row reader's values and the 8-bit activations") {
  const mote::kernels::KernelTable &scalar = mote::kernels::scalar_kernels();
  std::mt19937 rng(31);
  for (const WeightType *type : quantized_types()) {
    const DTypeTraits &row = mote::format::traits_of(type->dtype);
    CAPTURE(row.name);
    for (size_t cols : test_cols(row)) {
      const size_t rows = 2 * row.interleaved_rows + (row.interleaved_rows == 1 ? 3 : 0), n_tokens = 3;
      const std::vector<uint8_t> w = random_matrix(row, rows, cols, rng);
      Input x(cols, n_tokens, rng);
      std::vector<float> out(rows * n_tokens);
      type->matmul(scalar, out.data(), rows, w.data(), x.input(0), rows, cols, n_tokens);
      std::vector<float> weights(cols);
      for (size_t r = 0; r < rows; ++r) {
        type->dequantize_row(weights.data(), w.data(), r, cols);
        for (size_t t = 0; t < n_tokens; ++t) {
          double exact = 0.0, magnitude = 0.0;
          for (size_t c = 0; c < cols; ++c) {
            const double term = double{weights[c]} * x.quantized.scale[(t * cols + c) / 32] *
                                static_cast<double>(x.quantized.q[t * cols + c]);
            exact += term;
            magnitude += std::fabs(term);
          }
          CAPTURE(cols);
          CAPTURE(r);
          CHECK(std::fabs(out[t * rows + r] - exact) <= 2e-5 * magnitude + 1e-6);
        }
      }
    }
  }
}

TEST_CASE("weight types: every SIMD table equals the scalar twin bit for bit, batched or not, split or not") {
  const mote::kernels::KernelTable &scalar = mote::kernels::scalar_kernels();
  std::mt19937 rng(32);
  size_t checked = 0;
  for (const mote::kernels::KernelTable *table : simd_tables()) {
    for (const WeightType *type : quantized_types()) {
      const DTypeTraits &row = mote::format::traits_of(type->dtype);
      for (size_t cols : test_cols(row)) {
        const size_t max_tokens = 7;
        Input x(cols, max_tokens, rng);
        for (size_t groups : {size_t{1}, size_t{2}, size_t{3}}) {
          // Plain types also at rows that leave a partial tile.
          for (size_t extra : {size_t{0}, size_t{1}, size_t{3}}) {
            if (extra != 0 && row.interleaved_rows != 1) continue;
            const size_t rows = groups * (row.interleaved_rows == 1 ? 4 : row.interleaved_rows) + extra;
            const std::vector<uint8_t> w = random_matrix(row, rows, cols, rng);
            for (size_t n_tokens = 1; n_tokens <= max_tokens; ++n_tokens) {
              const std::string what = std::string(table->isa_name) + " " + row.name + " " + std::to_string(rows) +
                                       "x" + std::to_string(cols) + " tokens " + std::to_string(n_tokens);
              std::vector<float> expected(rows * n_tokens), actual(rows * n_tokens, -1.0f);
              type->matmul(scalar, expected.data(), rows, w.data(), x.input(0), rows, cols, n_tokens);
              type->matmul(*table, actual.data(), rows, w.data(), x.input(0), rows, cols, n_tokens);
              CHECK_MESSAGE(same_bits(actual, expected), what);
              // Token by token, the rows split where threads split them: the same bits.
              const size_t split = rows / type->chunk_rows / 2 * type->chunk_rows;
              const size_t split_bytes = split * mote::weight_row_bytes(row.dtype, cols);
              std::vector<float> pieces(rows * n_tokens, -1.0f);
              for (size_t t = 0; t < n_tokens; ++t) {
                float *out = pieces.data() + t * rows;
                if (split > 0) type->matmul(*table, out, rows, w.data(), x.input(t), split, cols, 1);
                type->matmul(*table, out + split, rows, w.data() + split_bytes, x.input(t), rows - split, cols, 1);
              }
              CHECK_MESSAGE(same_bits(pieces, expected), what << " split at " << split);
              ++checked;
            }
          }
        }
      }
    }
  }
  if (!simd_tables().empty()) CHECK(checked > 0);
}

// Prompt batches of 16 tokens and more take other paths on some tables (avx512_amx's 16-token
// tiles, with the remainder on the VNNI tiles): the same bits as the scalar twin.
TEST_CASE("weight types: long prompt batches equal the scalar twin bit for bit on every table") {
  const mote::kernels::KernelTable &scalar = mote::kernels::scalar_kernels();
  std::mt19937 rng(33);
  size_t checked = 0;
  for (const mote::kernels::KernelTable *table : simd_tables()) {
    for (const WeightType *type : quantized_types()) {
      const DTypeTraits &row = mote::format::traits_of(type->dtype);
      if (row.interleaved_rows == 1) continue;  // the plain layouts tile tokens in fours
      // Two super-blocks, or 11 blocks: a whole span of 8 and a partial one (a pair and one).
      const size_t cols = row.block_elements == 32 ? 11 * 32 : 2 * row.block_elements;
      const size_t max_tokens = 35;
      Input x(cols, max_tokens, rng);
      for (size_t groups : {size_t{2}, size_t{3}, size_t{5}}) {
        const size_t rows = groups * row.interleaved_rows;
        const std::vector<uint8_t> w = random_matrix(row, rows, cols, rng);
        for (size_t n_tokens : {size_t{16}, size_t{19}, size_t{32}, size_t{35}}) {
          std::vector<float> expected(rows * n_tokens), actual(rows * n_tokens, -1.0f);
          type->matmul(scalar, expected.data(), rows, w.data(), x.input(0), rows, cols, n_tokens);
          type->matmul(*table, actual.data(), rows, w.data(), x.input(0), rows, cols, n_tokens);
          const std::string what = std::string(table->isa_name) + " " + row.name + " " + std::to_string(rows) + "x" +
                                   std::to_string(cols) + " tokens " + std::to_string(n_tokens);
          CHECK_MESSAGE(same_bits(actual, expected), what);
          ++checked;
        }
      }
    }
  }
  if (!simd_tables().empty()) CHECK(checked > 0);
}

TEST_CASE("weight types: the format rows this build runs") {
  // Listed, so a row without kernels is visible in the test log (check_supported refuses its files).
  std::string run, stored_only;
  for (uint32_t d = 0; d < mote::format::kDTypeCount; ++d) {
    std::string &list = mote::weight_type(d) != nullptr ? run : stored_only;
    list += std::string(list.empty() ? "" : ", ") + mote::format::kDTypeTraits[d].name;
  }
  MESSAGE("runs: " << run);
  MESSAGE("no kernels: " << stored_only);
  CHECK(mote::weight_type(static_cast<uint32_t>(mote::format::DType::q4_0x8)) != nullptr);
}

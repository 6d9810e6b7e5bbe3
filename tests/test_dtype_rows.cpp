// The dtype rows: format::DTypeTraits (the on-disk layout), the runtime's WeightType rows, the
// converter's GGUF type table and its host rows agree with each other and with independent facts
// (GGUF's type ids and block sizes, the kernels' block structs), and every consumer reads them:
// - each runtime row's dequantize_row reads row r of a matrix at the row's own byte offset, equal
//   to the GGUF table's to_float (dequantize_ggml; test_dequant holds it to gguf's own
//   dequantize) of that row's plain blocks, made of random valid bytes (x8 rows interleaved from
//   them), so a runtime row needs no host row;
// - the GGUF table imports every type the runtime runs, and messages list its types;
// - every host row's quantize_ref round-trips through the GGUF table's to_float;
// - the converter's type list in messages is generated from the host rows.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/fp16.hpp"
#include "dtype_policy.hpp"
#include "kernels/quant.hpp"
#include "model/weight_types.hpp"
#include "quant/dequant.hpp"
#include "quant/host_types.hpp"
#include "quant/quantize.hpp"
#include "quant/repack.hpp"
#include "test_support.hpp"

namespace {

using mote::format::DType;
using mote::format::DTypeTraits;
using mote::format::traits_of;

std::vector<float> random_values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> value(-2.0f, 2.0f);
  std::vector<float> values(n);
  for (float &v : values) v = value(rng);
  return values;
}

}  // namespace

TEST_CASE("dtype rows: GGUF's type ids and block sizes, the kernels' block structs, twins") {
  // GGMLQuantizationType (the GGUF spec / gguf Python package's constants.py).
  struct Expected {
    DType dtype;
    const char *name;
    uint32_t ggml_type, block_elements, block_bytes, interleaved_rows, scale_fields;
    DType twin;
    uint32_t scale_offset = 0;
  };
  const uint32_t none = mote::format::kNoGgmlType;
  const Expected expected[] = {
      {DType::f32, "f32", 0, 1, 4, 1, 0, DType::f32},
      {DType::f16, "f16", 1, 1, 2, 1, 0, DType::f16},
      {DType::bf16, "bf16", 30, 1, 2, 1, 0, DType::bf16},
      {DType::q8_0, "q8_0", 8, 32, sizeof(mote::kernels::BlockQ8_0), 1, 1, DType::q8_0x8},
      {DType::q4_0, "q4_0", 2, 32, sizeof(mote::kernels::BlockQ4_0), 1, 1, DType::q4_0x8},
      {DType::q4_1, "q4_1", 3, 32, sizeof(mote::kernels::BlockQ4_1), 1, 2, DType::q4_1x8},
      {DType::q8_0x8, "q8_0x8", none, 32, sizeof(mote::kernels::BlockQ8_0x8) / 8, 8, 1, DType::q8_0},
      {DType::q4_0x8, "q4_0x8", none, 32, sizeof(mote::kernels::BlockQ4_0x8) / 8, 8, 1, DType::q4_0},
      {DType::q4_1x8, "q4_1x8", none, 32, sizeof(mote::kernels::BlockQ4_1x8) / 8, 8, 2, DType::q4_1},
      // ggml's block_q5_0 .. block_iq4_nl (ggml-common.h's static_asserts give the same sizes).
      {DType::q5_0, "q5_0", 6, 32, 22, 1, 1, DType::q5_0x8},
      {DType::q5_1, "q5_1", 7, 32, 24, 1, 2, DType::q5_1x8},
      {DType::q5_0x8, "q5_0x8", none, 32, 22, 8, 1, DType::q5_0},
      {DType::q5_1x8, "q5_1x8", none, 32, 24, 8, 2, DType::q5_1},
      {DType::q4_k, "q4_k", 12, 256, 144, 1, 2, DType::q4_kx8},
      {DType::q5_k, "q5_k", 13, 256, 176, 1, 2, DType::q5_kx8},
      {DType::q6_k, "q6_k", 14, 256, 210, 1, 1, DType::q6_kx8, 208},
      {DType::q3_k, "q3_k", 11, 256, 110, 1, 1, DType::q3_kx8, 108},
      {DType::q2_k, "q2_k", 10, 256, 84, 1, 2, DType::q2_kx8, 80},
      {DType::iq4_nl, "iq4_nl", 20, 32, 18, 1, 1, DType::iq4_nlx8},
      // The K types' x8 layouts: fields first in the group block (scale_offset 0) even for q6_k.
      {DType::q4_kx8, "q4_kx8", none, 256, 144, 8, 2, DType::q4_k},
      {DType::q5_kx8, "q5_kx8", none, 256, 176, 8, 2, DType::q5_k},
      {DType::q6_kx8, "q6_kx8", none, 256, 210, 8, 1, DType::q6_k},
      {DType::q3_kx8, "q3_kx8", none, 256, 110, 8, 1, DType::q3_k},
      {DType::q2_kx8, "q2_kx8", none, 256, 84, 8, 2, DType::q2_k},
      {DType::iq4_nlx8, "iq4_nlx8", none, 32, sizeof(mote::kernels::BlockIQ4_NLx8) / 8, 8, 1, DType::iq4_nl},
  };
  REQUIRE(mote::format::kDTypeCount == sizeof expected / sizeof expected[0]);
  CHECK(mote::format::dtype_traits(mote::format::kDTypeCount) == nullptr);
  for (const Expected &want : expected) {
    const DTypeTraits &row = traits_of(want.dtype);
    CAPTURE(want.name);
    CHECK(mote::format::dtype_traits(static_cast<uint32_t>(want.dtype)) == &row);
    CHECK(std::string(row.name) == want.name);
    CHECK(row.ggml_type == want.ggml_type);
    CHECK(row.block_elements == want.block_elements);
    CHECK(row.block_bytes == want.block_bytes);
    CHECK(row.interleaved_rows == want.interleaved_rows);
    CHECK(row.scale_fields == want.scale_fields);
    CHECK(row.scale_offset == want.scale_offset);
    CHECK(row.twin == want.twin);
    if (row.ggml_type != none) {
      // The converter's own table of ggml's types agrees on the bytes the ids name.
      const mote::convert::GgmlTypeInfo *info = mote::convert::ggml_type_info(row.ggml_type);
      REQUIRE(info != nullptr);
      CHECK(info->block_elements == row.block_elements);
      CHECK(info->block_bytes == row.block_bytes);
    }
  }
}

TEST_CASE("dtype rows: every runtime row reads row r at its own offset, as ggml decodes its bytes") {
  size_t tested = 0;
  for (uint32_t d = 0; d < mote::format::kDTypeCount; ++d) {
    const mote::WeightType *type = mote::weight_type(d);
    if (type == nullptr) continue;  // bf16: stored, not run
    const DType dtype = static_cast<DType>(d);
    const DType plain = mote::convert::plain_dtype(dtype);
    const DTypeTraits &traits = traits_of(plain);
    CAPTURE(traits_of(dtype).name);
    const size_t rows = 16, cols = 3 * std::max<size_t>(traits.block_elements, 32);
    const size_t row_bytes = mote::weight_row_bytes(plain, cols);
    REQUIRE(row_bytes * traits.block_elements == cols * traits.block_bytes);
    // Random bytes are valid blocks of every type once their halves (d, m, dmin; every value of
    // a float type) are finite.
    std::vector<uint8_t> blocks(rows * row_bytes);
    std::mt19937 rng(7 + d);
    for (uint8_t &byte : blocks) byte = static_cast<uint8_t>(rng());
    const std::vector<float> scales = random_values(blocks.size(), 70 + d);
    for (size_t b = 0; b < blocks.size() / traits.block_bytes; ++b) {
      uint8_t *block = blocks.data() + b * traits.block_bytes;
      if (plain == DType::f32) {
        std::memcpy(block, &scales[b], 4);
        continue;
      }
      for (uint32_t f = 0; f < std::max<uint32_t>(traits.scale_fields, 1); ++f) {
        const uint16_t half = mote::f32_to_fp16(scales[b * 2 + f] * (traits.block_elements == 1 ? 1.0f : 0.01f));
        std::memcpy(block + traits.scale_offset + 2 * f, &half, 2);
      }
    }
    const std::vector<uint8_t> stored =
        dtype == plain ? blocks : mote::convert::interleave_rows(blocks, plain, rows, cols);
    for (size_t r = 0; r < rows; ++r) {
      std::vector<float> got(cols), want(cols);
      type->dequantize_row(got.data(), stored.data(), r, cols);
      REQUIRE(mote::convert::dequantize_ggml(traits.ggml_type, blocks.data() + r * row_bytes, cols, want.data()));
      CHECK_MESSAGE(std::memcmp(got.data(), want.data(), cols * sizeof(float)) == 0, "row " << r);
    }
    ++tested;
  }
  // f32, f16, q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, the five K-quants and the eleven x8 layouts.
  CHECK(tested == 24);
}

TEST_CASE("dtype rows: a K type's x8 group block puts each plain byte where FORMAT.md says") {
  // Group block layout (FORMAT.md): each fp16 field of the 8 rows (d[0..7], then dmin[0..7]),
  // then every other byte of the 8 plain blocks in plain order, bytes [4k, 4k + 4) of row i's at
  // fields + (8k + i) * 4. Plain bytes are tagged with (row, position) so any misplacement shows.
  for (DType plain : {DType::q4_k, DType::q5_k, DType::q6_k, DType::q3_k, DType::q2_k}) {
    const DTypeTraits &traits = traits_of(plain);
    CAPTURE(traits.name);
    const size_t rows = 16, cols = 512, blocks_per_row = 2, block = traits.block_bytes;
    std::vector<uint8_t> bytes(rows * blocks_per_row * block);
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 7 + i / 251);
    const std::vector<uint8_t> groups = mote::convert::interleave_rows(bytes, plain, rows, cols);
    const size_t field_bytes = 2 * size_t{traits.scale_fields};
    // q6_k, q3_k and q2_k keep d (and dmin) after their quants and scales.
    const size_t field_at = plain == DType::q6_k ? 208 : plain == DType::q3_k ? 108 : plain == DType::q2_k ? 80 : 0;
    for (size_t r = 0; r < rows; ++r) {
      for (size_t b = 0; b < blocks_per_row; ++b) {
        const uint8_t *src = bytes.data() + (r * blocks_per_row + b) * block;
        const uint8_t *group = groups.data() + ((r / 8) * blocks_per_row + b) * 8 * block;
        const size_t i = r % 8;
        for (size_t f = 0; f < traits.scale_fields; ++f) {
          CHECK(group[16 * f + 2 * i] == src[field_at + 2 * f]);
          CHECK(group[16 * f + 2 * i + 1] == src[field_at + 2 * f + 1]);
        }
        size_t other = 0;  // index among the plain block's non-field bytes
        for (size_t p = 0; p < block; ++p) {
          if (p >= field_at && p < field_at + field_bytes) continue;
          CHECK(group[8 * field_bytes + (8 * (other / 4) + i) * 4 + other % 4] == src[p]);
          ++other;
        }
      }
    }
    CHECK(mote::convert::deinterleave_rows(groups, plain, rows, cols) == bytes);  // lossless both ways
    CHECK(mote::convert::interleaved_dtype(plain) == traits.twin);
  }
}

TEST_CASE("dtype rows: the GGUF table imports every type the runtime runs, and its messages list them") {
  for (uint32_t d = 0; d < mote::format::kDTypeCount; ++d) {
    const DTypeTraits &traits = traits_of(static_cast<DType>(d));
    if (traits.ggml_type == mote::format::kNoGgmlType || mote::weight_type(d) == nullptr) continue;
    CAPTURE(traits.name);
    const mote::convert::GgmlTypeInfo *info = mote::convert::ggml_type_info(traits.ggml_type);
    REQUIRE(info != nullptr);
    const bool importable = info->to_float != nullptr;
    CHECK(importable);
  }
  CHECK(mote::convert::importable_ggml_types() ==
        "F32, F16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, BF16");
  const bool q8_1_importable = mote::convert::ggml_type_info(9)->to_float != nullptr;  // Q8_1: sizes only
  CHECK(!q8_1_importable);
}

TEST_CASE("dtype rows: each host row's quantize_ref round-trips through the GGUF table's to_float") {
  size_t n = 0;
  const mote::convert::HostType *rows = mote::convert::host_types(&n);
  for (size_t i = 0; i < n; ++i) {
    const DTypeTraits &traits = traits_of(rows[i].dtype);
    CAPTURE(traits.name);
    CHECK(traits.interleaved_rows == 1);
    const size_t n_values = 2 * 256;  // whole blocks of every row (32 or 256 values)
    const std::vector<float> values = random_values(n_values, 100 + static_cast<uint32_t>(i));
    const std::vector<uint8_t> bytes = mote::convert::quantize(values.data(), n_values, rows[i].dtype);
    REQUIRE(bytes.size() == n_values / traits.block_elements * traits.block_bytes);
    std::vector<float> decoded(n_values);
    REQUIRE(mote::convert::dequantize_ggml(traits.ggml_type, bytes.data(), n_values, decoded.data()));
    // Within a step of the values (q4_0 clips its top one): b-bit steps over [-2, 2] are at most
    // 4 / (2^b - 1) (0.27 for 4 bits, 1.33 for q2_k's 2); b = the whole bits a value takes.
    const size_t bits = std::min<size_t>(16, traits.block_bytes * 8 / traits.block_elements);
    const float step = 4.0f / static_cast<float>((1u << bits) - 1) + 0.03f;
    for (size_t v = 0; v < n_values; ++v) CHECK(std::fabs(decoded[v] - values[v]) <= step);
  }
}

TEST_CASE("dtype rows: the converter writes exactly its host rows, and its messages list them") {
  CHECK(mote::convert::host_type_list() ==
        "f32, f16, q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, q6_k, q5_k, q4_k, q3_k or q2_k");
  CHECK(mote::convert::host_type(DType::bf16) == nullptr);
  CHECK(mote::convert::host_type(DType::q4_1x8) == nullptr);
  std::string error;
  CHECK(!mote::convert::check_matrix_dtype(DType::bf16, &error));
  CHECK(error ==
        "matrices are stored as f32, f16, q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, q6_k, q5_k, q4_k, q3_k or q2_k, not "
        "bf16");
  CHECK(mote::convert::check_matrix_dtype(DType::q4_0, &error));
  CHECK(mote::convert::is_quantized(DType::q8_0));
  CHECK(!mote::convert::is_quantized(DType::f16));
  CHECK(!mote::convert::is_quantized(DType::q8_0x8));
  CHECK(!mote::convert::interleaved_dtype(DType::bf16));
  CHECK(mote::convert::interleaved_dtype(DType::q4_0) == DType::q4_0x8);
  CHECK(mote::convert::interleaved_dtype(DType::iq4_nl) == DType::iq4_nlx8);
}

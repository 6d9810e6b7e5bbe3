// Block quantization on the converter side (models/convert/quant/quantize, dtype_policy's add_tensor):
// - mote's q8_0/q4_0/q4_1/q5_0/q5_1 quantizers against the gguf Python package, bit for bit
//   (tests/golden/quant_rows.*, written by gen_quant_goldens.py), and mote's dequantizer
//   against gguf.quants.dequantize on those bytes;
// - GGUF import with --layout gguf keeps Q8_0/Q4_0/Q4_1 (and F32/F16) tensors byte for byte
//   (tests/golden/tiny_llama.gguf holds every imported type); --dtype q8_0/q4_0/q4_1 re-quantizes
//   the other tensors from their float values and copies those already in that type;
// - by default (interleaved layout) every quantized matrix of 8k rows is stored in its x8 type:
//   its bytes are the GGUF's (or the quantizer's) reordered exactly as quant.hpp specifies (the
//   expected bytes are built here from that spec, not by the converter's repack), and they
//   dequantize to the same values; other row counts stay plain; repacking round-trips;
// - the llama2.c and Hugging Face importers quantize exactly their float values;
// - a matrix whose rows are not whole 32-element blocks falls back to f16 under a quantized request;
// - the real SmolLM2-135M-Instruct Q4_1 GGUF converts to q8_0x8 / q4_1x8 by default and byte
//   for byte with --layout gguf (skipped when absent).
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "dtype_policy.hpp"
#include "format/format.hpp"
#include "gguf/gguf.hpp"
#include "hf/hf.hpp"
#include "kernels/quant.hpp"
#include "llama2c/llama2c.hpp"
#include "mote/mote.h"
#include "mote_writer.hpp"
#include "quant/dequant.hpp"
#include "quant/host_types.hpp"
#include "quant/quantize.hpp"
#include "quant/repack.hpp"
#include "test_support.hpp"

namespace {

using mote::convert::BlockLayout;
using mote::convert::GgmlType;
using mote::convert::ModelData;
using mote::convert::TensorData;
using mote::format::DType;
using Bytes = std::vector<uint8_t>;

struct QuantType {
  const char *name;  // as in the goldens' manifest and `--dtype`
  DType dtype;
  GgmlType ggml;
  DType interleaved;  // its x8 twin
};
const QuantType kQuantTypes[] = {
    {"q8_0", DType::q8_0, GgmlType::q8_0, DType::q8_0x8},
    {"q4_0", DType::q4_0, GgmlType::q4_0, DType::q4_0x8},
    {"q4_1", DType::q4_1, GgmlType::q4_1, DType::q4_1x8},
};

// What --dtype q stores a matrix as: q4_0 and q4_1 keep the token embedding and the classifier
// in q8_0, as llama-quantize does; everything else is q.
const QuantType &requested_type(const TensorData &t, const QuantType &q) {
  const bool embedding_or_classifier =
      t.role == mote::format::Role::token_embedding || t.role == mote::format::Role::output;
  return embedding_or_classifier && q.dtype != DType::q8_0 ? kQuantTypes[0] : q;
}

const QuantType *quant_type_of_ggml(uint32_t ggml_type) {
  for (const QuantType &q : kQuantTypes) {
    if (static_cast<uint32_t>(q.ggml) == ggml_type) return &q;
  }
  return nullptr;
}

// The x8 layout built from its definition in kernels/quant.hpp, with its block structs: group g
// of rows 8g..8g+7, group block b holds block b of each row i: d[i] (and m[i]) and quant bytes
// [4k, 4k + 4) at qs[(8k + i) * 4].
template <typename Plain, typename Group>
Bytes interleaved_by_spec(const Bytes &plain_bytes, size_t rows, size_t cols) {
  const size_t blocks_per_row = cols / mote::kernels::kQuantBlock;
  REQUIRE(rows % 8 == 0);
  REQUIRE(plain_bytes.size() == rows * blocks_per_row * sizeof(Plain));
  std::vector<Plain> plain(rows * blocks_per_row);
  std::memcpy(plain.data(), plain_bytes.data(), plain_bytes.size());
  std::vector<Group> groups(rows / 8 * blocks_per_row);
  for (size_t g = 0; g < rows / 8; ++g) {
    for (size_t b = 0; b < blocks_per_row; ++b) {
      Group &group = groups[g * blocks_per_row + b];
      for (size_t i = 0; i < 8; ++i) {
        const Plain &block = plain[(8 * g + i) * blocks_per_row + b];
        group.d[i] = block.d;
        if constexpr (std::is_same_v<Plain, mote::kernels::BlockQ4_1>) group.m[i] = block.m;
        for (size_t k = 0; k < sizeof block.qs / 4; ++k) std::memcpy(&group.qs[(8 * k + i) * 4], &block.qs[4 * k], 4);
      }
    }
  }
  Bytes out(plain_bytes.size());
  std::memcpy(out.data(), groups.data(), out.size());
  return out;
}

Bytes interleaved_by_spec(const Bytes &plain_bytes, DType plain, size_t rows, size_t cols) {
  using namespace mote::kernels;
  switch (plain) {
    case DType::q8_0:
      return interleaved_by_spec<BlockQ8_0, BlockQ8_0x8>(plain_bytes, rows, cols);
    case DType::q4_0:
      return interleaved_by_spec<BlockQ4_0, BlockQ4_0x8>(plain_bytes, rows, cols);
    case DType::q4_1:
      return interleaved_by_spec<BlockQ4_1, BlockQ4_1x8>(plain_bytes, rows, cols);
    default:
      FAIL("not a plain quantized dtype");
      return {};
  }
}

// What a matrix of plain quantized blocks is stored as by default: its x8 type when its rows
// are a multiple of 8, else itself.
void check_default_layout(const TensorData &t, const QuantType &q, const Bytes &plain_bytes) {
  if (t.rows % 8 == 0) {
    CHECK(t.dtype == q.interleaved);
    CHECK(t.bytes == interleaved_by_spec(plain_bytes, q.dtype, t.rows, t.cols));
  } else {
    CHECK(t.dtype == q.dtype);
    CHECK(t.bytes == plain_bytes);
  }
}

std::string name_of(const TensorData &t) {
  mote::format::TensorEntry e{};
  e.role = static_cast<uint32_t>(t.role);
  e.layer = t.layer;
  char name[64];
  mote::format::tensor_name(e, name, sizeof name);
  return name;
}

std::vector<float> floats_at(const Bytes &bytes, size_t at, size_t count) {
  std::vector<float> values(count);
  REQUIRE(at + count * 4 <= bytes.size());
  std::memcpy(values.data(), bytes.data() + at, count * 4);
  return values;
}

// Dequantized values of a tensor of ggml type stored at bytes.
std::vector<float> dequantized(uint32_t ggml_type, const uint8_t *bytes, size_t count) {
  std::vector<float> values(count);
  REQUIRE(mote::convert::dequantize_ggml(ggml_type, bytes, count, values.data()));
  return values;
}

// True when the runtime's loader accepts the serialized model (it validates every dtype,
// shape and size; running quantized weights is the runtime's business, not tested here).
std::string open_error(const ModelData &model) {
  const auto file = mote_test::AlignedBuffer::copy_of(mote::convert::serialize(model));
  mote_model m{};
  char message[256] = "";
  return mote_model_open(file.data.get(), file.size, &m, message, sizeof message) == MOTE_OK ? "" : message;
}

// A GGUF file held in memory, parsed, with its tensors by their .mote name ("blk.0.attn_q").
struct LoadedGguf {
  std::vector<unsigned char> bytes;
  mote::convert::GgufFile file;
  std::map<std::string, const mote::convert::GgufTensorInfo *> by_name;

  explicit LoadedGguf(const std::string &path) : bytes(mote_test::read_file(path)) {
    std::string error;
    REQUIRE_MESSAGE(mote::convert::parse_gguf(bytes.data(), bytes.size(), &file, &error), error);
    for (const auto &t : file.tensors) by_name[t.name.substr(0, t.name.size() - 7)] = &t;  // drop ".weight"
  }
  ModelData convert(std::optional<DType> dtype, BlockLayout layout) const {
    mote::convert::GgufOptions options;
    options.dtype = dtype;
    options.layout = layout;
    ModelData m;
    std::string error;
    REQUIRE_MESSAGE(mote::convert::gguf_to_model(file, options, &m, &error), error);
    return m;
  }
  const mote::convert::GgufTensorInfo &source_of(const TensorData &t) const {
    const auto found = by_name.find(name_of(t));
    REQUIRE_MESSAGE(found != by_name.end(), name_of(t));
    return *found->second;
  }
  Bytes stored_bytes(const mote::convert::GgufTensorInfo &t) const {
    return Bytes(file.bytes + t.offset, file.bytes + t.offset + t.n_bytes);
  }
};

}  // namespace

// The types gguf.quants can also quantize: kQuantTypes and GGUF's 5-bit pair.
const QuantType kGgufQuantizable[] = {
    kQuantTypes[0],
    kQuantTypes[1],
    kQuantTypes[2],
    {"q5_0", DType::q5_0, GgmlType::q5_0, DType::q5_0x8},
    {"q5_1", DType::q5_1, GgmlType::q5_1, DType::q5_1x8},
};

TEST_CASE("quantize: q8_0, q4_0, q4_1, q5_0 and q5_1 match gguf.quants bit for bit, and dequantize as gguf does") {
  const Bytes data = mote_test::read_file(mote_test::golden_path("quant_rows.bin"));
  const std::vector<std::string> rows = mote_test::read_lines(mote_test::golden_path("quant_rows.txt"));
  REQUIRE(!data.empty());
  REQUIRE(rows.size() >= 21);
  for (const std::string &row : rows) {
    const std::string name = mote_test::manifest_value(row, "name");
    const size_t count = std::stoul(mote_test::manifest_value(row, "count"));
    const std::vector<float> values = floats_at(data, std::stoul(mote_test::manifest_value(row, "values")), count);
    for (const QuantType &q : kGgufQuantizable) {
      INFO("row " << name << ", " << std::string(q.name));
      const size_t at = std::stoul(mote_test::manifest_value(row, q.name));
      const Bytes quantized = mote::convert::quantize(values.data(), count, q.dtype);
      REQUIRE(at + quantized.size() <= data.size());
      CHECK(quantized == Bytes(data.begin() + at, data.begin() + at + quantized.size()));

      const std::vector<float> want =
          floats_at(data, std::stoul(mote_test::manifest_value(row, std::string(q.name) + "_values")), count);
      const std::vector<float> got = dequantized(static_cast<uint32_t>(q.ggml), data.data() + at, count);
      CHECK(std::memcmp(got.data(), want.data(), count * 4) == 0);
    }
  }
}

TEST_CASE("gguf import --layout gguf: every type with a host row is kept byte for byte") {
  const LoadedGguf gguf(mote_test::golden_path("tiny_llama.gguf"));
  const ModelData m = gguf.convert(std::nullopt, BlockLayout::gguf);
  std::map<std::string, size_t> kept;  // ggml type name -> tensors copied byte for byte
  for (const TensorData &t : m.tensors) {
    const auto &source = gguf.source_of(t);
    const char *type = mote::convert::ggml_type_info(source.type)->name;
    INFO("tensor " << name_of(t) << " of GGUF type " << std::string(type));
    if (t.n_dims == 1) {
      CHECK(t.dtype == DType::f32);  // norms are f32 in the format (F32 in this file too)
      CHECK(t.bytes == gguf.stored_bytes(source));
      continue;
    }
    const std::map<uint32_t, DType> same_layout = {
        {0, DType::f32},   {1, DType::f16},   {8, DType::q8_0},   {2, DType::q4_0},  {3, DType::q4_1},
        {6, DType::q5_0},  {7, DType::q5_1},  {10, DType::q2_k},  {11, DType::q3_k}, {12, DType::q4_k},
        {13, DType::q5_k}, {14, DType::q6_k}, {20, DType::iq4_nl}};
    const auto same = same_layout.find(source.type);
    if (same != same_layout.end()) {
      CHECK(t.dtype == same->second);
      CHECK(t.bytes == gguf.stored_bytes(source));
      ++kept[type];
    } else {  // BF16 and IQ4_XS have no .mote twin: f16 of their values
      CHECK(t.dtype == DType::f16);
      const std::vector<float> values =
          dequantized(source.type, gguf.file.bytes + source.offset, static_cast<size_t>(source.n_elements));
      CHECK(t.bytes == mote::convert::encode_floats(values.data(), values.size(), DType::f16));
    }
  }
  for (const char *type : {"Q8_0", "Q4_0", "Q4_1", "F16"}) CHECK_MESSAGE(kept[type] > 0, "no matrix of type " << type);
  CHECK(open_error(m) == "");
}

TEST_CASE("gguf import --layout gguf: --dtype q8_0/q4_0/q4_1 re-quantizes, copying tensors already of that type") {
  const LoadedGguf gguf(mote_test::golden_path("tiny_llama.gguf"));
  for (const QuantType &q : kQuantTypes) {
    const ModelData m = gguf.convert(q.dtype, BlockLayout::gguf);
    size_t copied = 0;
    for (const TensorData &t : m.tensors) {
      if (t.n_dims == 1) continue;
      const auto &source = gguf.source_of(t);
      INFO("--dtype " << std::string(q.name) << ", tensor " << name_of(t));
      const QuantType &want = requested_type(t, q);
      CHECK(t.dtype == want.dtype);
      if (source.type == static_cast<uint32_t>(want.ggml)) {
        CHECK(t.bytes == gguf.stored_bytes(source));
        ++copied;
      } else {
        const std::vector<float> values =
            dequantized(source.type, gguf.file.bytes + source.offset, static_cast<size_t>(source.n_elements));
        CHECK(t.bytes == mote::convert::quantize(values.data(), values.size(), want.dtype));
      }
    }
    CHECK(copied > 0);
    CHECK(open_error(m) == "");
  }
}

TEST_CASE("gguf import by default: quantized matrices of 8k rows are the GGUF's blocks, 8 rows interleaved") {
  const LoadedGguf gguf(mote_test::golden_path("tiny_llama.gguf"));
  const ModelData m = gguf.convert(std::nullopt, BlockLayout::interleaved);
  std::map<DType, size_t> interleaved;  // x8 dtype -> tensors
  for (const TensorData &t : m.tensors) {
    const auto &source = gguf.source_of(t);
    INFO("tensor " << name_of(t) << " (" << t.rows << " x " << t.cols << ")");
    const QuantType *q = quant_type_of_ggml(source.type);
    if (q == nullptr) {  // f32, f16 and the rest as with --layout gguf, K types then interleaved
      const DType plain = mote::convert::plain_dtype(t.dtype);
      const DType twin = mote::format::traits_of(plain).twin;
      CHECK(t.dtype == (twin != plain && t.rows % 8 == 0 ? twin : plain));
      if (t.dtype != plain) {  // a lossless reorder of the GGUF's blocks (test_dtype_rows checks the layout)
        CHECK(mote::convert::deinterleave_rows(t.bytes, plain, t.rows, t.cols) == gguf.stored_bytes(source));
      }
      continue;
    }
    const Bytes stored = gguf.stored_bytes(source);
    check_default_layout(t, *q, stored);
    if (t.dtype != q->interleaved) continue;
    ++interleaved[t.dtype];
    // Undone, the blocks dequantize to exactly the GGUF's values.
    const Bytes plain = mote::convert::deinterleave_rows(t.bytes, q->dtype, t.rows, t.cols);
    const size_t n = static_cast<size_t>(source.n_elements);
    const std::vector<float> got = dequantized(source.type, plain.data(), n);
    const std::vector<float> want = dequantized(source.type, stored.data(), n);
    CHECK(std::memcmp(got.data(), want.data(), n * 4) == 0);
  }
  for (const QuantType &q : kQuantTypes) CHECK_MESSAGE(interleaved[q.interleaved] > 0, "no " << q.name << " matrix");
  CHECK(open_error(m) == "");

  // --dtype quantizes first, then interleaves the same way.
  for (const QuantType &q : kQuantTypes) {
    const ModelData requantized = gguf.convert(q.dtype, BlockLayout::interleaved);
    const ModelData plain = gguf.convert(q.dtype, BlockLayout::gguf);
    REQUIRE(requantized.tensors.size() == plain.tensors.size());
    for (size_t i = 0; i < plain.tensors.size(); ++i) {
      if (plain.tensors[i].n_dims == 1) continue;
      INFO("--dtype " << std::string(q.name) << ", tensor " << name_of(plain.tensors[i]));
      check_default_layout(requantized.tensors[i], requested_type(plain.tensors[i], q), plain.tensors[i].bytes);
    }
    CHECK(open_error(requantized) == "");
  }
}

TEST_CASE("interleaved layout: only matrices whose rows are a multiple of 8 are repacked") {
  std::mt19937 rng(7);
  for (const QuantType &q : kQuantTypes) {
    for (const uint64_t rows : {8u, 12u, 16u, 20u}) {
      const uint64_t cols = 64;
      const size_t block_bytes = mote::format::dtype_traits(static_cast<uint32_t>(q.dtype))->block_bytes;
      Bytes stored(rows * cols / 32 * block_bytes);
      for (uint8_t &byte : stored) byte = static_cast<uint8_t>(rng());
      // Finite f16 scales (and q4_1 minimums): an exponent of all ones would be inf or NaN,
      // which the converter refuses.
      for (size_t b = 0; b < stored.size(); b += block_bytes) {
        stored[b + 1] &= 0xBF;
        stored[b + 3] &= 0xBF;
      }
      const mote::convert::TensorSlot slot{mote::format::Role::attn_q, 0, rows, cols};
      INFO(std::string(q.name) << ", " << rows << " rows");
      CHECK(mote::convert::output_dtype(slot, static_cast<uint32_t>(q.ggml), std::nullopt, BlockLayout::interleaved) ==
            (rows % 8 == 0 ? q.interleaved : q.dtype));
      CHECK(mote::convert::output_dtype(slot, static_cast<uint32_t>(q.ggml), std::nullopt, BlockLayout::gguf) ==
            q.dtype);
      ModelData m;
      std::string error;
      REQUIRE_MESSAGE(mote::convert::add_tensor(slot, {stored.data(), static_cast<uint32_t>(q.ggml)}, std::nullopt,
                                                BlockLayout::interleaved, &m, &error),
                      error);
      check_default_layout(m.tensors.at(0), q, stored);
    }
  }
  // Vectors stay f32 whatever the layout.
  const mote::convert::TensorSlot norm{mote::format::Role::attn_norm, 0, 64, 0};
  CHECK(mote::convert::output_dtype(norm, static_cast<uint32_t>(GgmlType::q8_0), DType::q8_0,
                                    BlockLayout::interleaved) == DType::f32);
}

TEST_CASE("repack: interleave then deinterleave is the identity on random blocks") {
  std::mt19937 rng(1);
  for (const QuantType &q : kQuantTypes) {
    for (const size_t rows : {8u, 16u, 40u}) {
      for (const size_t cols : {32u, 96u, 576u}) {
        const size_t block_bytes = mote::format::dtype_traits(static_cast<uint32_t>(q.dtype))->block_bytes;
        Bytes plain(rows * cols / 32 * block_bytes);
        for (uint8_t &byte : plain) byte = static_cast<uint8_t>(rng());
        INFO(std::string(q.name) << ", " << rows << " x " << cols);
        const Bytes groups = mote::convert::interleave_rows(plain, q.dtype, rows, cols);
        CHECK(groups == interleaved_by_spec(plain, q.dtype, rows, cols));
        CHECK(groups != plain);  // 8 rows really are interleaved
        CHECK(mote::convert::deinterleave_rows(groups, q.dtype, rows, cols) == plain);
      }
    }
    CHECK(mote::convert::interleaved_dtype(q.dtype) == q.interleaved);
    CHECK(mote::convert::plain_dtype(q.interleaved) == q.dtype);
    CHECK(mote::convert::plain_dtype(q.dtype) == q.dtype);
  }
  CHECK(!mote::convert::interleaved_dtype(DType::f16));
}

TEST_CASE("llama2.c and Hugging Face import: --dtype q8_0/q4_0/q4_1 quantizes the float values") {
  // Each importer converted as f32 (its float values) and as the quantized dtype in both layouts.
  struct Importer {
    const char *name;
    bool (*convert)(DType dtype, BlockLayout layout, ModelData *out, std::string *error);
  };
  const Importer importers[] = {
      {"llama2.c tiny_mha",
       [](DType dtype, BlockLayout layout, ModelData *out, std::string *error) {
         mote::convert::Llama2cOptions options;
         options.dtype = dtype;
         options.layout = layout;
         return mote::convert::load_llama2c(mote_test::golden_path("tiny_mha.bin"),
                                            mote_test::golden_path("tiny_tok64.bin"), options, out, error);
       }},
      {"Hugging Face tiny_hf",
       [](DType dtype, BlockLayout layout, ModelData *out, std::string *error) {
         mote::convert::SafetensorsOptions options;
         options.dtype = dtype;
         options.layout = layout;
         return mote::convert::load_hf_checkpoint(mote_test::golden_path("tiny_hf"), options, out, error);
       }},
  };
  for (const Importer &importer : importers) {
    ModelData floats;
    std::string error;
    REQUIRE_MESSAGE(importer.convert(DType::f32, BlockLayout::interleaved, &floats, &error), error);
    for (const QuantType &q : kQuantTypes) {
      for (const BlockLayout layout : {BlockLayout::gguf, BlockLayout::interleaved}) {
        ModelData m;
        REQUIRE_MESSAGE(importer.convert(q.dtype, layout, &m, &error), error);
        REQUIRE(m.tensors.size() == floats.tensors.size());
        for (size_t i = 0; i < m.tensors.size(); ++i) {
          const TensorData &t = m.tensors[i], &f = floats.tensors[i];
          INFO(std::string(importer.name) << ", --dtype " << std::string(q.name) << ", tensor " << name_of(t)
                                          << (layout == BlockLayout::gguf ? ", --layout gguf" : ""));
          REQUIRE(f.dtype == DType::f32);
          if (t.n_dims == 1) {
            CHECK(t.dtype == DType::f32);
            CHECK(t.bytes == f.bytes);
            continue;
          }
          const std::vector<float> values = dequantized(0, f.bytes.data(), f.bytes.size() / 4);
          const QuantType &want = requested_type(t, q);
          const Bytes quantized = mote::convert::quantize(values.data(), values.size(), want.dtype);
          if (layout == BlockLayout::gguf) {
            CHECK(t.dtype == want.dtype);
            CHECK(t.bytes == quantized);
          } else {
            check_default_layout(t, want, quantized);
          }
        }
        CHECK(open_error(m) == "");
      }
    }
  }
}

// Every matrix whose rows are not whole 32-element blocks is f16, every other one quantized;
// returns how many of each kind (fallbacks, quantized) there are.
static std::pair<size_t, size_t> check_block_fallback(const ModelData &m) {
  size_t fallbacks = 0, quantized = 0;
  for (const TensorData &t : m.tensors) {
    if (t.n_dims == 1) continue;
    INFO("tensor " << name_of(t) << " with rows of " << t.cols);
    if (t.cols % 32 != 0) {
      CHECK(t.dtype == DType::f16);
      ++fallbacks;
    } else {
      CHECK(mote::convert::is_quantized(mote::convert::plain_dtype(t.dtype)));
      ++quantized;
    }
  }
  CHECK(open_error(m) == "");
  return {fallbacks, quantized};
}

TEST_CASE("a quantized request stores matrices whose rows are not whole 32-element blocks in f16") {
  // As llama-quantize falls back. tiny_odd has dim 40: none of its matrices has whole blocks.
  for (const QuantType &q : kQuantTypes) {
    INFO("--dtype " << q.name);
    mote::convert::Llama2cOptions options;
    options.dtype = q.dtype;
    ModelData m;
    std::string error;
    REQUIRE(mote::convert::load_llama2c(mote_test::golden_path("tiny_odd.bin"),
                                        mote_test::golden_path("tiny_tok67.bin"), options, &m, &error));
    CHECK(check_block_fallback(m) == std::make_pair(size_t{15}, size_t{0}));
  }
  // aidreams260K (dim 64, FFN 172): the four FFN down projections fall back, the rest quantize.
  const std::string checkpoint = mote_test::shared_model("aidreams260K.bin");
  if (checkpoint.empty()) return;
  mote::convert::Llama2cOptions options;
  options.dtype = DType::q8_0;
  ModelData m;
  std::string error;
  REQUIRE(mote::convert::load_llama2c(checkpoint, mote_test::shared_model("aidreams_tok512.bin"), options, &m, &error));
  CHECK(check_block_fallback(m) == std::make_pair(size_t{4}, size_t{25}));
}

TEST_CASE("gguf real: SmolLM2-135M-Instruct Q4_1 converts to x8 types by default, byte for byte with --layout gguf") {
  const std::string path = mote_test::smollm2_gguf();
  if (path.empty()) return;
  const LoadedGguf gguf(path);
  {
    const ModelData m = gguf.convert(std::nullopt, BlockLayout::gguf);
    REQUIRE(m.tensors.size() == 272);
    std::map<DType, size_t> counts;
    size_t weight_bytes = 0;
    for (const TensorData &t : m.tensors) {
      INFO("--layout gguf, tensor " << name_of(t));
      ++counts[t.dtype];
      weight_bytes += t.bytes.size();
      CHECK(t.bytes == gguf.stored_bytes(gguf.source_of(t)));  // every tensor, byte for byte
    }
    // The file's own mix: Q8_0 embedding, Q4_1 matrices, F32 norms.
    CHECK(counts[DType::q8_0] == 1);
    CHECK(counts[DType::q4_1] == 210);
    CHECK(counts[DType::f32] == 61);
    CHECK(m.tensors[0].dtype == DType::q8_0);  // token_embd
    CHECK(weight_bytes == 96576768);
    CHECK(open_error(m) == "");
  }
  const ModelData m = gguf.convert(std::nullopt, BlockLayout::interleaved);
  REQUIRE(m.tensors.size() == 272);
  std::map<DType, size_t> counts;
  size_t weight_bytes = 0;
  for (const TensorData &t : m.tensors) {
    INFO("default layout, tensor " << name_of(t));
    ++counts[t.dtype];
    weight_bytes += t.bytes.size();
    const auto &source = gguf.source_of(t);
    const QuantType *q = quant_type_of_ggml(source.type);
    if (q != nullptr) {
      check_default_layout(t, *q, gguf.stored_bytes(source));
    } else {
      CHECK(t.bytes == gguf.stored_bytes(source));
    }
  }
  CHECK(counts[DType::q8_0x8] == 1);
  CHECK(counts[DType::q4_1x8] == 210);
  CHECK(counts[DType::f32] == 61);
  CHECK(m.tensors[0].dtype == DType::q8_0x8);  // token_embd: 49152 rows
  CHECK(weight_bytes == 96576768);             // a reorder: not a byte more
  CHECK(open_error(m) == "");
}

// Block quantization on the converter side (models/convert/quantize, mote_writer's add_tensor):
// - mote's q8_0/q4_0/q4_1 quantizers against the gguf Python package, bit for bit
//   (tests/golden/quant_rows.*, written by gen_quant_goldens.py), and mote's dequantizer
//   against gguf.quants.dequantize on those bytes;
// - GGUF import keeps Q8_0/Q4_0/Q4_1 (and F32/F16) tensors byte for byte by default
//   (tests/golden/tiny_llama.gguf holds every imported type); --dtype q8_0/q4_0/q4_1 re-quantizes
//   the other tensors from their float values and copies those already in that type;
// - the llama2.c and Hugging Face importers quantize exactly their float values;
// - a row that is not whole 32-element blocks is a one-line error naming the tensor;
// - the real SmolLM2-135M-Instruct Q4_1 GGUF converts as stored (skipped when absent).
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "dequant.hpp"
#include "format/format.hpp"
#include "gguf.hpp"
#include "llama2c.hpp"
#include "mote/mote.h"
#include "mote_writer.hpp"
#include "quantize.hpp"
#include "safetensors.hpp"
#include "test_support.hpp"

namespace {

using mote::convert::GgmlType;
using mote::convert::ModelData;
using mote::convert::TensorData;
using mote::format::DType;
using Bytes = std::vector<uint8_t>;

struct QuantType {
  const char *name;  // as in the goldens' manifest and `--dtype`
  DType dtype;
  GgmlType ggml;
};
const QuantType kQuantTypes[] = {
    {"q8_0", DType::q8_0, GgmlType::q8_0},
    {"q4_0", DType::q4_0, GgmlType::q4_0},
    {"q4_1", DType::q4_1, GgmlType::q4_1},
};

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
  ModelData convert(std::optional<DType> dtype) const {
    mote::convert::GgufOptions options;
    options.dtype = dtype;
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

TEST_CASE("quantize: q8_0, q4_0 and q4_1 match gguf.quants bit for bit, and dequantize as gguf does") {
  const Bytes data = mote_test::read_file(mote_test::golden_path("quant_rows.bin"));
  const std::vector<std::string> rows = mote_test::read_lines(mote_test::golden_path("quant_rows.txt"));
  REQUIRE(!data.empty());
  REQUIRE(rows.size() >= 21);
  for (const std::string &row : rows) {
    const std::string name = mote_test::manifest_value(row, "name");
    const size_t count = std::stoul(mote_test::manifest_value(row, "count"));
    const std::vector<float> values = floats_at(data, std::stoul(mote_test::manifest_value(row, "values")), count);
    for (const QuantType &q : kQuantTypes) {
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

TEST_CASE("gguf import: Q8_0, Q4_0 and Q4_1 tensors are kept as stored by default") {
  const LoadedGguf gguf(mote_test::golden_path("tiny_llama.gguf"));
  const ModelData m = gguf.convert(std::nullopt);
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
        {0, DType::f32}, {1, DType::f16}, {8, DType::q8_0}, {2, DType::q4_0}, {3, DType::q4_1}};
    const auto same = same_layout.find(source.type);
    if (same != same_layout.end()) {
      CHECK(t.dtype == same->second);
      CHECK(t.bytes == gguf.stored_bytes(source));
      ++kept[type];
    } else {  // BF16 and the K-quants have no .mote twin: f16 of their values
      CHECK(t.dtype == DType::f16);
      const std::vector<float> values =
          dequantized(source.type, gguf.file.bytes + source.offset, static_cast<size_t>(source.n_elements));
      CHECK(t.bytes == mote::convert::encode_floats(values.data(), values.size(), DType::f16));
    }
  }
  for (const char *type : {"Q8_0", "Q4_0", "Q4_1", "F16"}) CHECK_MESSAGE(kept[type] > 0, "no matrix of type " << type);
  CHECK(open_error(m) == "");
}

TEST_CASE("gguf import: --dtype q8_0/q4_0/q4_1 re-quantizes, copying tensors already of that type") {
  const LoadedGguf gguf(mote_test::golden_path("tiny_llama.gguf"));
  for (const QuantType &q : kQuantTypes) {
    const ModelData m = gguf.convert(q.dtype);
    size_t copied = 0;
    for (const TensorData &t : m.tensors) {
      if (t.n_dims == 1) continue;
      const auto &source = gguf.source_of(t);
      INFO("--dtype " << std::string(q.name) << ", tensor " << name_of(t));
      CHECK(t.dtype == q.dtype);
      if (source.type == static_cast<uint32_t>(q.ggml)) {
        CHECK(t.bytes == gguf.stored_bytes(source));
        ++copied;
      } else {
        const std::vector<float> values =
            dequantized(source.type, gguf.file.bytes + source.offset, static_cast<size_t>(source.n_elements));
        CHECK(t.bytes == mote::convert::quantize(values.data(), values.size(), q.dtype));
      }
    }
    CHECK(copied > 0);
    CHECK(open_error(m) == "");
  }
}

TEST_CASE("llama2.c and Hugging Face import: --dtype q8_0/q4_0/q4_1 quantizes the float values") {
  // Each importer converted twice: as f32 (its float values) and as the quantized dtype.
  struct Importer {
    const char *name;
    bool (*convert)(DType dtype, ModelData *out, std::string *error);
  };
  const Importer importers[] = {
      {"llama2.c tiny_mha",
       [](DType dtype, ModelData *out, std::string *error) {
         mote::convert::Llama2cOptions options;
         options.dtype = dtype;
         return mote::convert::load_llama2c(mote_test::golden_path("tiny_mha.bin"),
                                            mote_test::golden_path("tiny_tok64.bin"), options, out, error);
       }},
      {"Hugging Face tiny_hf",
       [](DType dtype, ModelData *out, std::string *error) {
         mote::convert::SafetensorsOptions options;
         options.dtype = dtype;
         return mote::convert::load_hf_llama(mote_test::golden_path("tiny_hf"), options, out, error);
       }},
  };
  for (const Importer &importer : importers) {
    ModelData floats;
    std::string error;
    REQUIRE_MESSAGE(importer.convert(DType::f32, &floats, &error), error);
    for (const QuantType &q : kQuantTypes) {
      ModelData m;
      REQUIRE_MESSAGE(importer.convert(q.dtype, &m, &error), error);
      REQUIRE(m.tensors.size() == floats.tensors.size());
      for (size_t i = 0; i < m.tensors.size(); ++i) {
        const TensorData &t = m.tensors[i], &f = floats.tensors[i];
        INFO(std::string(importer.name) << ", --dtype " << std::string(q.name) << ", tensor " << name_of(t));
        REQUIRE(f.dtype == DType::f32);
        if (t.n_dims == 1) {
          CHECK(t.dtype == DType::f32);
          CHECK(t.bytes == f.bytes);
        } else {
          CHECK(t.dtype == q.dtype);
          const std::vector<float> values = dequantized(0, f.bytes.data(), f.bytes.size() / 4);
          CHECK(t.bytes == mote::convert::quantize(values.data(), values.size(), q.dtype));
        }
      }
      CHECK(open_error(m) == "");
    }
  }
}

TEST_CASE("quantized rows must hold whole 32-element blocks: a one-line error naming the tensor") {
  // tiny_odd has dim 40: the embedding's rows hold 40 values.
  for (const QuantType &q : kQuantTypes) {
    mote::convert::Llama2cOptions options;
    options.dtype = q.dtype;
    ModelData m;
    std::string error;
    CHECK_FALSE(mote::convert::load_llama2c(mote_test::golden_path("tiny_odd.bin"),
                                            mote_test::golden_path("tiny_tok67.bin"), options, &m, &error));
    INFO("error: " << error);
    CHECK(error.find("tensor 'token_embd' cannot be stored as " + std::string(q.name) +
                     ": its rows hold 40 values, not whole 32-value blocks") != std::string::npos);
    CHECK(error.find("tiny_odd.bin") != std::string::npos);
    CHECK(error.find('\n') == std::string::npos);
  }
  // Unquantized dtypes have no block constraint.
  mote::convert::Llama2cOptions options;
  options.dtype = DType::f16;
  ModelData m;
  std::string error;
  CHECK(mote::convert::load_llama2c(mote_test::golden_path("tiny_odd.bin"), mote_test::golden_path("tiny_tok67.bin"),
                                    options, &m, &error));
}

TEST_CASE("gguf real: SmolLM2-135M-Instruct Q4_1 converts as stored") {
  const std::string path = mote_test::smollm2_gguf();
  if (path.empty()) return;
  const LoadedGguf gguf(path);
  const ModelData m = gguf.convert(std::nullopt);
  REQUIRE(m.tensors.size() == 272);
  std::map<DType, size_t> counts;
  size_t weight_bytes = 0;
  for (const TensorData &t : m.tensors) {
    INFO("tensor " << name_of(t));
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

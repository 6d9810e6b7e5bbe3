// `mote convert --dtype` for llama-quantize's types and mixes (quantize_recipe.hpp), checked
// against llama-quantize itself without needing it: tests/golden/kquant_mixes.txt holds, per
// mix and matrix of two small F32 llama models, the type llama-quantize chose and the FNV-1a
// hash of its bytes (gen_kquant_goldens.py, which also says how the weights are made). Here the same
// weights go through the converter's add_tensor with the mix, matrix by matrix, and each
// tensor's dtype and bytes must be llama-quantize's: the recipe (layer rules, the classifier's
// q6_k, also as a tied embedding), the fallbacks for 320-value rows, and every quantizer's bytes
// (q2_k..q6_k, q5_0, q5_1, iq4_nl, q8_0, q4_0).
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "convert_support.hpp"
#include "dtype_policy.hpp"
#include "families.hpp"
#include "format/format.hpp"
#include "quant/quantize_recipe.hpp"
#include "test_support.hpp"

namespace {

using mote::convert::ModelData;
using mote::format::DType;

constexpr uint32_t kDim = 256, kHeads = 4, kVocab = 64;

uint64_t fnv1a64(const uint8_t *data, size_t n) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ data[i]) * 0x100000001B3ull;
  return h;
}

uint32_t mix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x85EBCA6Bu;
  x ^= x >> 13;
  x *= 0xC2B2AE35u;
  x ^= x >> 16;
  return x;
}

// gen_kquant_goldens.py's weights(), step for step in float32.
std::vector<float> golden_weights(const std::string &name, size_t rows, size_t cols) {
  const uint32_t seed = static_cast<uint32_t>(fnv1a64(reinterpret_cast<const uint8_t *>(name.data()), name.size()));
  const uint32_t salt = mix32(seed);
  const auto uniform = [&](uint32_t i, uint32_t stream) {
    const uint32_t h = mix32(i * 2u + stream + salt);
    return static_cast<float>(static_cast<int32_t>(h >> 8) - (1 << 23)) * 0x1p-23f;
  };
  std::vector<float> v(rows * cols);
  for (size_t i = 0; i < v.size(); ++i) {
    const uint32_t at = static_cast<uint32_t>(i);
    float x = (uniform(at, 0) + uniform(at, 1)) * 0.03f;
    if (i % 1009 == 7) x *= 50.0f;
    const size_t row = i / cols, col = i % cols;
    if (row == 1 && col < 256) x = 0;
    if (row == 2 && col < 32) x *= 1e-7f;
    v[i] = x;
  }
  return v;
}

struct Golden {
  std::string type;  // ggml's name, lower case
  uint64_t hash;
};

// model -> mix -> tensor name -> what llama-quantize wrote.
using Goldens = std::map<std::string, std::map<std::string, std::map<std::string, Golden>>>;
Goldens read_goldens() {
  std::ifstream in(mote_test::golden_path("kquant_mixes.txt"));
  Goldens out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string model, mix, tensor, type, hash;
    fields >> model >> mix >> tensor >> type >> hash;
    out[model][mix][tensor] = {type, std::stoull(hash, nullptr, 16)};
  }
  return out;
}

// gen_kquant_goldens.py's MODELS.
mote::format::ModelConfig golden_config(const std::string &model) {
  const bool tied = model == "tied";
  const uint32_t layers = tied ? 2 : 8, kv_heads = tied ? 2 : 1, ffn = tied ? 512 : 320;
  mote::format::ModelConfig c =
      mote::convert::llama_config({kDim, layers, kHeads, kv_heads, kDim / kHeads, ffn, kVocab, 64});
  c.flags &= ~static_cast<uint32_t>(mote::format::kFlagTiedEmbeddings);
  if (tied) c.flags |= mote::format::kFlagTiedEmbeddings;
  return c;
}

}  // namespace

TEST_CASE("--dtype recipes: every matrix's type and bytes are llama-quantize's (no importance matrix)") {
  const Goldens goldens = read_goldens();
  REQUIRE(goldens.size() == 2);
  std::set<std::string> types_seen;
  for (const auto &model_entry : goldens) {  // not structured bindings: INFO's lambda captures (C++17)
    const std::string &model_name = model_entry.first;
    const auto &mixes = model_entry.second;
    REQUIRE(mixes.size() == 14);
    const mote::format::ModelConfig config = golden_config(model_name);
    for (const auto &mix_entry : mixes) {
      const std::string &mix_name = mix_entry.first;
      const auto &want = mix_entry.second;
      const mote::convert::DTypeChoice *choice = mote::convert::find_dtype_choice(mix_name);
      REQUIRE_MESSAGE(choice != nullptr, "no --dtype " << mix_name);
      ModelData model;
      model.config = config;
      size_t matrices = 0;
      for (const mote::convert::TensorSlot &slot : mote::convert::tensor_slots(config)) {
        if (slot.cols == 0) continue;  // norms: f32, not quantized
        mote::convert::TensorData named{};
        named.role = slot.role;
        named.layer = slot.layer;
        const std::string tensor = mote_convert_test::gguf_name(named);
        const std::vector<float> values = golden_weights(tensor, slot.rows, slot.cols);
        std::string error;
        REQUIRE(mote::convert::add_tensor(slot, {reinterpret_cast<const uint8_t *>(values.data()), 0}, choice->base,
                                          mote::convert::BlockLayout::gguf, &model, &error, choice->mix));
        const mote::convert::TensorData &t = model.tensors.back();
        INFO(model_name << " --dtype " << mix_name << ", tensor " << tensor);
        const auto golden = want.find(tensor);
        REQUIRE(golden != want.end());
        CHECK(std::string(mote::format::traits_of(t.dtype).name) == golden->second.type);
        CHECK(fnv1a64(t.bytes.data(), t.bytes.size()) == golden->second.hash);
        types_seen.insert(golden->second.type);
        ++matrices;
      }
      CHECK(matrices == want.size());
    }
  }
  // The goldens reach every quantizer and fallback they are meant to.
  for (const char *type : {"q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "q5_0", "q5_1", "iq4_nl", "q8_0", "q4_0"}) {
    CHECK_MESSAGE(types_seen.count(type) == 1, "no golden tensor of type " << type);
  }
}

TEST_CASE("--dtype recipes: llama-quantize's fallbacks for rows that are not whole blocks") {
  using mote::convert::fallback_dtype;
  CHECK(fallback_dtype(DType::q4_k, 512) == DType::q4_k);
  CHECK(fallback_dtype(DType::q4_k, 576) == DType::q5_0);
  CHECK(fallback_dtype(DType::q5_k, 576) == DType::q5_1);
  CHECK(fallback_dtype(DType::q6_k, 576) == DType::q8_0);
  CHECK(fallback_dtype(DType::q3_k, 576) == DType::q4_0);
  CHECK(fallback_dtype(DType::q2_k, 576) == DType::q4_0);
  CHECK(fallback_dtype(DType::q4_k, 172) == DType::f16);  // not even whole 32-value blocks
  CHECK(fallback_dtype(DType::iq4_nl, 172) == DType::f16);
  CHECK(fallback_dtype(DType::q5_0, 576) == DType::q5_0);
}

TEST_CASE("--dtype names: every choice has a host row for its base type, and the list names them all") {
  size_t n = 0;
  const mote::convert::DTypeChoice *choices = mote::convert::dtype_choices(&n);
  const std::string list = mote::convert::dtype_choice_list();
  for (size_t i = 0; i < n; ++i) {
    INFO(choices[i].name);
    std::string error;
    CHECK(mote::convert::check_matrix_dtype(choices[i].base, &error));
    CHECK(list.find(choices[i].name) != std::string::npos);
    CHECK(mote::convert::find_dtype_choice(choices[i].name) == &choices[i]);
  }
  CHECK(mote::convert::find_dtype_choice("q4_k_l") == nullptr);
}

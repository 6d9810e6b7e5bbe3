// The GGUF importer against oracles: ggml block dequantization by hand, tests/golden/tiny_llama.gguf
// (every imported type) against the gguf Python package, and the real SmolLM2-135M-Instruct GGUF.
//
// The real file is $MOTE_SMOLLM2_GGUF or ~/.cache/mote/SmolLM2-135M-Instruct.Q4_1.gguf; its case
// skips, saying so, when it was never fetched.
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "convert_support.hpp"
#include "dtype_policy.hpp"
#include "format/format.hpp"
#include "gguf/gguf.hpp"
#include "quant/dequant.hpp"
#include "test_support.hpp"
#include "text/tokenizer.hpp"

using namespace mote_convert_test;

// ---- dequantization ---------------------------------------------------------------------------------

TEST_CASE("dequant: hand-made blocks") {
  using namespace mote::convert;
  // Q4_0: d = 0.5; byte j = (j % 16) | (15 - j % 16) << 4.
  Bytes q40(18);
  const uint16_t half = mote::f32_to_fp16(0.5f);
  std::memcpy(q40.data(), &half, 2);
  for (int j = 0; j < 16; ++j) q40[2 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  float out[256];
  REQUIRE(dequantize_ggml(kGgmlQ4_0, q40.data(), 32, out));
  for (int j = 0; j < 16; ++j) {
    CHECK(out[j] == 0.5f * static_cast<float>(j - 8));
    CHECK(out[j + 16] == 0.5f * static_cast<float>(7 - j));
  }
  // Q4_1: d = 0.5, m = -1.
  Bytes q41(20);
  const uint16_t minus_one = mote::f32_to_fp16(-1.0f);
  std::memcpy(q41.data(), &half, 2);
  std::memcpy(q41.data() + 2, &minus_one, 2);
  for (int j = 0; j < 16; ++j) q41[4 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  REQUIRE(dequantize_ggml(kGgmlQ4_1, q41.data(), 32, out));
  CHECK(out[3] == 0.5f);
  CHECK(out[16] == 6.5f);
  // Q8_0: d = 0.5, q = j - 16.
  Bytes q80(34);
  std::memcpy(q80.data(), &half, 2);
  for (int j = 0; j < 32; ++j) q80[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(j - 16));
  REQUIRE(dequantize_ggml(kGgmlQ8_0, q80.data(), 32, out));
  CHECK(out[0] == -8.0f);
  CHECK(out[31] == 7.5f);
  // BF16 is the upper half of an f32.
  const uint8_t bf16[2] = {0x80, 0x3F};
  REQUIRE(dequantize_ggml(30, bf16, 1, out));
  CHECK(out[0] == 1.0f);
  // Wrong counts and unsupported types are refused.
  CHECK(!dequantize_ggml(kGgmlQ8_0, q80.data(), 31, out));
  CHECK(!dequantize_ggml(kGgmlQ8_1, q80.data(), 32, out));
  CHECK(!dequantize_ggml(99, q80.data(), 32, out));
  CHECK(ggml_type_info(4) == nullptr);
  CHECK(std::string(ggml_type_info(12)->name) == "Q4_K");
  CHECK(ggml_type_info(14)->block_bytes == 210);
}

// ---- GGUF oracle: the gguf Python package --------------------------------------------------------

TEST_CASE("gguf golden: tiny_llama.gguf against gguf.quants.dequantize") {
  const std::string path = mote_test::golden_path("tiny_llama.gguf");
  const std::vector<std::string> lines = mote_test::read_lines(mote_test::golden_path("gguf_tiny_llama.txt"));
  const std::vector<float> goldens = mote_test::read_floats(mote_test::golden_path("gguf_tiny_llama.bin"));
  REQUIRE(!lines.empty());
  REQUIRE(!goldens.empty());
  mote::convert::GgufOptions options;
  options.dtype = DType::f32;
  std::vector<size_t> progress;
  options.progress = [&](size_t done, size_t total) { progress.push_back(done * 1000 + total); };
  ModelData m;
  std::string error;
  REQUIRE_MESSAGE(mote::convert::load_gguf(path, options, &m, &error), error);

  const std::string config = lines[0];
  REQUIRE(config.rfind("config ", 0) == 0);
  auto value = [&](const char *key) { return std::stoll(mote_test::manifest_value(config, key)); };
  const mote::format::ModelConfig &c = m.config;
  CHECK(c.dim == value("dim"));
  CHECK(c.n_layers == value("layers"));
  CHECK(c.n_heads == value("heads"));
  CHECK(c.n_kv_heads == value("kv_heads"));
  CHECK(c.head_dim == value("head_dim"));
  CHECK(c.ffn_dim == value("ffn"));
  CHECK(c.vocab_size == value("vocab"));
  CHECK(c.max_seq_len == value("ctx"));
  CHECK(c.rope_theta == 50000.0f);
  CHECK(c.norm_eps == 1e-6f);
  CHECK(c.rope_layout == mote::format::RopeLayout::interleaved);
  CHECK(((c.flags & mote::format::kFlagTiedEmbeddings) != 0) == (value("tied") != 0));
  CHECK(c.bos_id == value("bos"));
  CHECK(c.eos_id == value("eos"));
  CHECK(m.tokenizer.unk_id == value("unk"));
  CHECK(static_cast<int>(m.tokenizer.chat_template) == value("chat"));
  CHECK(m.tokenizer.kind == mote::format::TokenizerKind::byte_level_bpe);
  CHECK(m.tokenizer.flags == 0);
  CHECK(m.tensors.size() == static_cast<size_t>(value("tensors")));
  REQUIRE(progress.size() == m.tensors.size());
  CHECK(progress.back() == m.tensors.size() * 1001);

  std::map<std::string, const TensorData *> by_name;
  for (const TensorData &t : m.tensors) by_name[gguf_name(t)] = &t;
  std::map<std::string, std::string> types;
  size_t tensors = 0, pieces = 0;
  std::vector<mote::format::BpeMerge> merges;
  for (const std::string &line : lines) {
    if (line.rfind("tensor ", 0) == 0) {
      const std::string name = mote_test::manifest_value(line, "name");
      const size_t count = std::stoul(mote_test::manifest_value(line, "count"));
      const size_t at = std::stoul(mote_test::manifest_value(line, "at"));
      types[mote_test::manifest_value(line, "type")] = name;
      REQUIRE_MESSAGE(by_name.count(name) == 1, name);
      REQUIRE(at + count <= goldens.size());
      compare_values(name, floats_of(*by_name[name]), goldens.data() + at, count);
      ++tensors;
    } else if (line.rfind("piece ", 0) == 0) {
      const size_t id = std::stoul(mote_test::manifest_value(line, "id"));
      REQUIRE(id < m.tokenizer.pieces.size());
      CHECK_MESSAGE(hex_of(m.tokenizer.pieces[id]) == mote_test::manifest_value(line, "hex"), "token " << id);
      ++pieces;
    } else if (line.rfind("merge ", 0) == 0) {
      merges.push_back({static_cast<uint32_t>(std::stoul(mote_test::manifest_value(line, "left"))),
                        static_cast<uint32_t>(std::stoul(mote_test::manifest_value(line, "right"))),
                        static_cast<uint32_t>(std::stoul(mote_test::manifest_value(line, "result"))), 0});
    }
  }
  CHECK(tensors == m.tensors.size());
  CHECK(pieces == c.vocab_size);
  // Every imported type is covered by the golden file.
  for (const char *type : {"F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q4_K", "Q5_K", "Q6_K"}) {
    CHECK_MESSAGE(types.count(type) == 1, "no tensor of type " << type);
  }
  REQUIRE(merges.size() == static_cast<size_t>(value("merges")));
  REQUIRE(m.tokenizer.merges.size() == merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    CHECK(m.tokenizer.merges[i].left == merges[i].left);
    CHECK(m.tokenizer.merges[i].right == merges[i].right);
    CHECK(m.tokenizer.merges[i].result == merges[i].result);
  }
  // "Ġthe" became " the".
  bool found = false;
  for (const std::string &p : m.tokenizer.pieces) found = found || p == " the";
  CHECK(found);
  CHECK(open_error(m) == "");

  // Stored as f16, the matrices are the goldens rounded to half.
  ModelData h;
  options.dtype = DType::f16;
  options.progress = nullptr;
  REQUIRE(mote::convert::load_gguf(path, options, &h, &error));
  for (const std::string &line : lines) {
    if (line.rfind("tensor ", 0) != 0) continue;
    const std::string name = mote_test::manifest_value(line, "name");
    const size_t count = std::stoul(mote_test::manifest_value(line, "count"));
    const size_t at = std::stoul(mote_test::manifest_value(line, "at"));
    for (const TensorData &t : h.tensors) {
      if (gguf_name(t) != name) continue;
      const DType want = t.n_dims == 1 ? DType::f32 : DType::f16;
      CHECK(t.dtype == want);
      CHECK_MESSAGE(t.bytes == mote::convert::encode_floats(goldens.data() + at, count, want), name);
    }
  }
  CHECK(open_error(h) == "");
}

// ---- the real model ----------------------------------------------------------------------------------

TEST_CASE("gguf real: SmolLM2-135M-Instruct Q4_1") {
  const std::string path = mote_test::smollm2_gguf();
  if (path.empty()) return;
  mote::convert::GgufOptions options;
  options.dtype = DType::f16;
  ModelData m;
  std::string error;
  REQUIRE_MESSAGE(mote::convert::load_gguf(path, options, &m, &error), error);
  const mote::format::ModelConfig &c = m.config;
  CHECK(c.n_layers == 30);
  CHECK(c.dim == 576);
  CHECK(c.ffn_dim == 1536);
  CHECK(c.n_heads == 9);
  CHECK(c.n_kv_heads == 3);
  CHECK(c.head_dim == 64);
  CHECK(c.vocab_size == 49152);
  CHECK(c.rope_theta == 100000.0f);
  CHECK((c.flags & mote::format::kFlagTiedEmbeddings) != 0);
  CHECK(c.bos_id == 1);
  CHECK(c.eos_id == 2);
  CHECK(m.tensors.size() == 272);
  CHECK(m.tokenizer.kind == mote::format::TokenizerKind::byte_level_bpe);
  CHECK(m.tokenizer.merges.size() == 48900);
  CHECK(m.tokenizer.chat_template == mote::format::ChatTemplate::chatml);
  CHECK(m.tokenizer.pieces[1] == "<|im_start|>");
  CHECK(m.tokenizer.types[1] == mote::kTokenControl);
  size_t the = 0;
  for (const std::string &p : m.tokenizer.pieces) the += p == " the";
  CHECK(the == 1);
  CHECK(open_error(m) == "");
}

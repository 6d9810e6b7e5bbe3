// The GGUF importer on files built in memory (convert_support.hpp): a valid tiny llama converts and
// opens; malformed variants are refused in one line each; random corruption never crashes.
//
// Each malformed variant is asserted by a distinctive substring of its message. The randomized
// loops hold inputs in buffers of exactly their size: run them under the asan preset too.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "convert_support.hpp"
#include "families.hpp"
#include "format/format.hpp"
#include "gguf/gguf.hpp"
#include "model_data.hpp"
#include "mote/mote.h"
#include "test_support.hpp"

using namespace mote_convert_test;

namespace {

void expect_gguf_error(const Bytes &bytes, const std::string &needle) {
  const std::string error = convert_gguf(bytes);
  INFO("expected an error containing: " << needle);
  INFO("got: " << (error.empty() ? std::string("success") : error));
  CHECK(!error.empty());
  CHECK(error.find(needle) != std::string::npos);
  CHECK(error.find('\n') == std::string::npos);
}
void expect_gguf_error(const Gguf &g, const std::string &needle) { expect_gguf_error(g.build(), needle); }

}  // namespace

// ---- GGUF: the valid file and the parser ---------------------------------------------------------

TEST_CASE("gguf: a valid tiny llama converts and opens") {
  ModelData m;
  REQUIRE(convert_gguf(valid_gguf().build(), &m) == "");
  CHECK(m.config.dim == kDim);
  CHECK(m.config.n_layers == kLayers);
  CHECK(m.config.n_heads == kHeads);
  CHECK(m.config.n_kv_heads == kKvHeads);
  CHECK(m.config.head_dim == kDim / kHeads);
  CHECK(m.config.ffn_dim == kFfn);
  CHECK(m.config.vocab_size == 262);
  CHECK(m.config.max_seq_len == 64);
  CHECK(m.config.rope_layout == mote::format::RopeLayout::interleaved);
  CHECK((m.config.flags & mote::format::kFlagTiedEmbeddings) != 0);
  CHECK(m.tensors.size() == 11);
  CHECK(m.tokenizer.kind == mote::format::TokenizerKind::byte_level_bpe);
  CHECK(m.tokenizer.flags == 0);
  CHECK(m.tokenizer.chat_template == mote::format::ChatTemplate::chatml);
  CHECK(m.tokenizer.pieces[3 + 0x20] == " ");
  CHECK(m.tokenizer.pieces[3 + 0x0A] == "\n");
  CHECK(m.tokenizer.pieces[3 + 0xFF] == "\xFF");
  CHECK(m.tokenizer.pieces[261] == " the");
  CHECK(m.tokenizer.pieces[1] == "<|im_start|>");
  REQUIRE(m.tokenizer.merges.size() == 3);
  CHECK(m.tokenizer.merges[2].left == 259);
  CHECK(m.tokenizer.merges[2].right == 260);
  CHECK(m.tokenizer.merges[2].result == 261);
  CHECK(m.config.bos_id == 1);
  CHECK(m.config.eos_id == 2);
  CHECK(open_error(m) == "");
  // llama.cpp's "gpt2" pre-tokenizer keeps number runs whole (no digit split).
  Gguf pre = valid_gguf();
  pre.set_string("tokenizer.ggml.pre", "gpt2");
  REQUIRE(convert_gguf(pre.build(), &m) == "");
  CHECK(m.tokenizer.flags == mote::format::kTokNoDigitSplit);
  // With a separate classifier and f16 storage.
  Gguf g = valid_gguf();
  g.tensors.push_back({"output.weight", {kDim, 262}, kGgmlQ4_0, Bytes(262 * 18, 0x11)});
  REQUIRE(convert_gguf(g.build(), &m, DType::f16) == "");
  CHECK((m.config.flags & mote::format::kFlagTiedEmbeddings) == 0);
  CHECK(m.tensors.back().role == Role::output);
  CHECK(m.tensors.back().dtype == DType::f16);
  CHECK(m.tensors[1].dtype == DType::f32);  // norms stay f32
  CHECK(open_error(m) == "");
}

TEST_CASE("gguf: a SentencePiece (llama) vocabulary") {
  Gguf g = valid_gguf();
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<int32_t> types = {2, 3, 3};
  std::vector<float> scores = {0, 0, 0};
  for (int b = 0; b < 256; ++b) {
    char piece[8];
    std::snprintf(piece, sizeof piece, "<0x%02X>", b);
    tokens.push_back(piece);
    types.push_back(6);
    scores.push_back(0);
  }
  tokens.insert(tokens.end(), {"\xE2\x96\x81the", "he", "\xE2\x96\x81"});
  types.insert(types.end(), {1, 1, 1});
  scores.insert(scores.end(), {-1, -2, -3});
  g.set_string("tokenizer.ggml.model", "llama");
  g.set_strings("tokenizer.ggml.tokens", tokens);
  g.set_i32s("tokenizer.ggml.token_type", types);
  g.set_f32s("tokenizer.ggml.scores", scores);
  g.erase("tokenizer.ggml.merges");
  g.set_u32("tokenizer.ggml.unknown_token_id", 0);
  g.set_string("tokenizer.chat_template", "[INST] {{ m }} [/INST]");
  ModelData m;
  REQUIRE(convert_gguf(g.build(), &m) == "");
  CHECK(m.tokenizer.kind == mote::format::TokenizerKind::sentencepiece_bpe);
  CHECK(m.tokenizer.flags == (mote::format::kTokAddSpacePrefix | mote::format::kTokAddBos));
  CHECK(m.tokenizer.pieces[259] == " the");
  CHECK(m.tokenizer.pieces[261] == " ");
  CHECK(m.tokenizer.pieces[3 + 10] == "<0x0A>");
  CHECK(m.tokenizer.scores[260] == -2.0f);
  CHECK(m.tokenizer.unk_id == 0);
  CHECK(m.tokenizer.merges.empty());
  CHECK(m.tokenizer.chat_template == mote::format::ChatTemplate::llama2);
  CHECK(open_error(m) == "");
  g.set_bool("tokenizer.ggml.add_space_prefix", false);
  g.set_bool("tokenizer.ggml.add_bos_token", false);
  g.erase("tokenizer.chat_template");
  REQUIRE(convert_gguf(g.build(), &m) == "");
  CHECK(m.tokenizer.flags == 0);
  CHECK(m.tokenizer.chat_template == mote::format::ChatTemplate::none);
}

TEST_CASE("gguf: metadata of every value type, version 2, a custom alignment") {
  Gguf g = valid_gguf();
  g.version = 2;
  g.set("t.u8", kU8, {200});
  g.set("t.i8", kI8, {0x9C});
  g.set("t.u16", kU16, {1, 2});
  g.set("t.i16", kI16, {1, 0x80});
  g.set("t.i32", kI32, {1, 2, 3, 0x80});
  Bytes b;
  put<uint64_t>(b, 1ull << 40);
  g.set("t.u64", kU64, b);
  g.set("t.i64", kI64, b);
  b.clear();
  put<double>(b, 2.5);
  g.set("t.f64", kF64, b);
  // [[1, 2], []] as an array of arrays of u16.
  b.clear();
  put<uint32_t>(b, kArray);
  put<uint64_t>(b, 2);
  put<uint32_t>(b, kU16);
  put<uint64_t>(b, 2);
  put<uint16_t>(b, 1);
  put<uint16_t>(b, 2);
  put<uint32_t>(b, kU16);
  put<uint64_t>(b, 0);
  g.set("t.nested", kArray, b);
  g.set_u32("general.alignment", 64);
  g.alignment = 64;
  const Bytes bytes = g.build();
  GgufFile file;
  std::string error;
  REQUIRE(mote::convert::parse_gguf(bytes.data(), bytes.size(), &file, &error));
  CHECK(file.version == 2);
  CHECK(file.alignment == 64);
  CHECK(file.data_offset % 64 == 0);
  CHECK(file.find("t.u8")->u == 200);
  CHECK(file.find("t.i8")->i == -100);
  CHECK(file.find("t.u16")->u == 0x0201);
  CHECK(file.find("t.i16")->i == -32767);
  CHECK(file.find("t.u64")->u == (1ull << 40));
  CHECK(file.find("t.i64")->i == (1ll << 40));
  CHECK(file.find("t.f64")->f == 2.5);
  CHECK(file.find("t.nested")->array_count == 2);
  CHECK(file.keys.front() == "general.architecture");
  std::vector<int64_t> types;
  REQUIRE(file.integers("tokenizer.ggml.token_type", &types, &error));
  CHECK(types[0] == 3);
  ModelData m;
  CHECK(convert_gguf(bytes, &m) == "");
}

TEST_CASE("gguf: malformed containers are rejected with their own message") {
  const Gguf valid = valid_gguf();
  REQUIRE(convert_gguf(valid.build()) == "");
  {
    Bytes b = valid.build();
    b[0] = 'X';
    expect_gguf_error(b, "bad magic");
    expect_gguf_error(Bytes{'G', 'G'}, "bad magic");
  }
  for (uint32_t version : {0u, 1u, 4u, 0xFFFFFFFFu}) {
    Gguf g = valid;
    g.version = version;
    expect_gguf_error(g, "GGUF version " + std::to_string(version) + " is not supported");
  }
  {
    Gguf g = valid;
    g.tensor_count = int64_t{1} << 40;
    expect_gguf_error(g, "tensors, more than the file");
    g = valid;
    g.kv_count = int64_t{1} << 40;
    expect_gguf_error(g, "metadata keys, more than the file");
    g = valid;
    g.kv_count = static_cast<int64_t>(valid.kvs.size()) + 1;  // one more key than there is
    expect_gguf_error(g, "GGUF file is truncated in ");       // where depends on what the tensor infos read as
  }
  {
    Gguf g = valid;
    Bytes payload;
    put<uint64_t>(payload, 1ull << 50);  // a string longer than the file
    g.set("general.name", kString, payload);
    expect_gguf_error(g, "truncated in metadata 'general.name'");
  }
  {
    Gguf g = valid;
    g.set("t.bad", 13, {0});
    expect_gguf_error(g, "'t.bad' has unknown value type 13");
  }
  {
    Gguf g = valid;
    Bytes b;
    put<uint32_t>(b, 99);
    put<uint64_t>(b, 1);
    g.set("t.array", kArray, b);
    expect_gguf_error(g, "'t.array' is an array of unknown value type 99");
  }
  {
    // An array of arrays whose inner length is larger than the rest of the file.
    Gguf g = valid;
    Bytes b;
    put<uint32_t>(b, kArray);
    put<uint64_t>(b, 1);
    put<uint32_t>(b, kU32);
    put<uint64_t>(b, 1ull << 61);
    g.set("t.nested", kArray, b);
    expect_gguf_error(g, "'t.nested' is an array of 2305843009213693952 elements, more than the rest");
    // Outer count too large for the file.
    b.clear();
    put<uint32_t>(b, kString);
    put<uint64_t>(b, ~0ull);
    g.set("t.nested", kArray, b);
    expect_gguf_error(g, "is an array of 18446744073709551615 elements");
    // Nested too deep.
    b.clear();
    for (int d = 0; d < 20; ++d) {
      put<uint32_t>(b, kArray);
      put<uint64_t>(b, 1);
    }
    put<uint32_t>(b, kU8);
    put<uint64_t>(b, 0);
    g.set("t.nested", kArray, b);
    expect_gguf_error(g, "nests arrays deeper than 8 levels");
  }
  {
    Gguf g = valid;
    g.set("t.bool", kBool, {2});
    expect_gguf_error(g, "'t.bool' is a bool with value 2");
  }
  {
    Gguf g = valid;
    g.kvs.push_back(g.kvs[1]);
    expect_gguf_error(g, "metadata key 'general.name' appears twice");
  }
  for (uint32_t alignment : {0u, 3u, 48u, 1u << 30}) {
    Gguf g = valid;
    g.set_u32("general.alignment", alignment);
    expect_gguf_error(g, "general.alignment " + std::to_string(alignment) + " is not a power of two");
  }
  {
    Gguf g = valid;
    g.set_string("general.alignment", "32");
    expect_gguf_error(g, "general.alignment has type string, expected an integer");
  }
  {
    Gguf g = valid;
    g.tensors[2].dims = {32, 32, 1, 1, 1};
    expect_gguf_error(g, "'blk.0.attn_q.weight' has 5 dimensions (1 to 4 allowed)");
    g.tensors[2].dims = {};
    expect_gguf_error(g, "'blk.0.attn_q.weight' has 0 dimensions");
  }
  {
    Gguf g = valid;
    g.tensors[2].dims = {1ull << 32, 1ull << 32, 1ull << 32};
    expect_gguf_error(g, "'blk.0.attn_q.weight' has too many elements (the product of its dimensions overflows)");
    g.tensors[2].dims = {32, 0};
    expect_gguf_error(g, "'blk.0.attn_q.weight' has a dimension of size 0");
  }
  for (uint32_t type : {4u, 5u, 34u, 99u, 0xFFFFFFFFu}) {
    Gguf g = valid;
    g.tensors[3].type = type;
    expect_gguf_error(g, "'blk.0.attn_k.weight' has unknown ggml type " + std::to_string(type));
  }
  {
    Gguf g = valid;
    g.tensors[2].dims = {48, 16};  // 48 is not a whole number of Q8_0 blocks
    g.tensors[2].type = kGgmlQ8_0;
    expect_gguf_error(g, "rows of 48 elements are not a whole number of Q8_0 blocks (32 elements)");
  }
  {
    Gguf g = valid;
    g.tensors[4].offset = 16;
    expect_gguf_error(g, "'blk.0.attn_v.weight' offset 16 is not a multiple of the alignment (32)");
  }
  {
    Gguf g = valid;
    g.tensors[4].offset = int64_t{1} << 40;
    expect_gguf_error(g, "GGUF tensor 'blk.0.attn_v.weight' data [");
    expect_gguf_error(g, "runs past the end of the file (");
    Bytes b = valid.build();
    b.resize(b.size() - 1);  // the last tensor loses its last byte
    expect_gguf_error(b, "GGUF tensor 'output_norm.weight' data [");
  }
  {
    Gguf g = valid;
    g.tensors[5].name = g.tensors[4].name;
    expect_gguf_error(g, "GGUF tensor 'blk.0.attn_v.weight' appears twice");
  }
  {
    // Cut inside each section: every cut fails, and the message names the section.
    const Bytes full = valid.build();
    GgufFile file;
    std::string error;
    REQUIRE(mote::convert::parse_gguf(full.data(), full.size(), &file, &error));
    for (size_t cut = 0; cut < full.size(); cut += (cut < 4096 ? 1 : 97)) {
      const std::string e = convert_gguf(Bytes(full.begin(), full.begin() + static_cast<long>(cut)));
      INFO("cut at " << cut << ": " << e);
      REQUIRE(!e.empty());
      if (cut >= 4 && cut < 24) CHECK(e.find("truncated in the header") != std::string::npos);
      // (Below ~400 bytes the key and tensor counts are already more than the rest can hold.)
      if (cut >= 400 && cut < 1000) {
        CHECK((e.find("truncated in metadata") != std::string::npos ||
               e.find("elements, more than the rest of the file") != std::string::npos));
      }
    }
    // Inside the tensor infos: find where the first one starts (after the last key).
    const size_t infos = file.data_offset - 200;
    CHECK(convert_gguf(Bytes(full.begin(), full.begin() + static_cast<long>(infos))).find("truncated in tensor info") !=
          std::string::npos);
  }
}

TEST_CASE("gguf: llama files that do not fit the architecture") {
  const Gguf valid = valid_gguf();
  for (const char *key : {"llama.block_count", "llama.embedding_length", "llama.feed_forward_length",
                          "llama.attention.head_count", "llama.context_length", "general.architecture"}) {
    Gguf g = valid;
    g.erase(key);
    expect_gguf_error(g, std::string("GGUF is missing the required key '") + key + "'");
  }
  {
    Gguf g = valid;
    g.set_string("general.architecture", "mamba");
    expect_gguf_error(g,
                      "GGUF architecture 'mamba' is not supported (mote knows llama, gpt2, qwen2, qwen3, gemma3, phi3, "
                      "bert, nomic-bert)");
    g = valid;
    g.set_string("llama.block_count", "one");
    expect_gguf_error(g, "'llama.block_count' has type string, expected an integer");
    g = valid;
    g.set_u32("llama.block_count", 0);
    expect_gguf_error(g, "'llama.block_count' is 0, outside [1, 1024]");
  }
  {
    Gguf g = valid;
    g.set_u32("llama.attention.head_count", 3);
    expect_gguf_error(g, "llama.embedding_length 32 is not divisible by llama.attention.head_count 3");
    g = valid;
    g.set_u32("llama.attention.head_count", 4);
    g.set_u32("llama.attention.head_count_kv", 3);
    expect_gguf_error(g, "llama.attention.head_count 4 is not a multiple of head_count_kv 3");
    g = valid;
    g.set_u32("llama.rope.dimension_count", 8);
    expect_gguf_error(g, "llama.rope.dimension_count 8 must be the (even) head dimension 16");
    g = valid;  // llama.cpp takes a factor without a type as linear scaling, which mote has not got
    g.set_f32("llama.rope.scaling.factor", 8.0f);
    expect_gguf_error(g, "GGUF llama.rope.scaling.factor 8: RoPE scaling is not supported");
    g = valid;
    g.set_f32("llama.rope.scale_linear", 1.0f);  // a factor of 1 is no scaling
    CHECK(convert_gguf(g.build()).empty());
    g = valid;
    g.set_f32("llama.attention.layer_norm_rms_epsilon", 0.0f);
    expect_gguf_error(g, "layer_norm_rms_epsilon");
  }
  {
    Gguf g = valid;
    g.tensors[2].dims = {32, 16};
    g.tensors[2].data.resize(32 * 16 * 2);
    expect_gguf_error(g,
                      "GGUF tensor 'blk.0.attn_q.weight' has shape [32, 16] (innermost first); the "
                      "hyperparameters need [32, 32]");
    g = valid;
    g.tensors[1].dims = {16, 2};
    expect_gguf_error(g, "'blk.0.attn_norm.weight' has shape [16, 2]");
  }
  {
    Gguf g = valid;
    g.tensors.pop_back();
    expect_gguf_error(g, "GGUF is missing tensor 'output_norm.weight'");
    g = valid;
    g.tensors[9].name = "blk.0.ffn_upp.weight";
    expect_gguf_error(g, "GGUF tensor 'blk.0.ffn_upp.weight' is not part of the llama architecture");
    g = valid;
    g.tensors[9].name = "rope_factors_long.weight";  // Phi-3 128k's LongRoPE: not supported
    expect_gguf_error(g, "'rope_factors_long.weight' is not part of the llama architecture");
    g = valid;
    g.tensors[9].name = "blk.1.ffn_up.weight";
    expect_gguf_error(g, "'blk.1.ffn_up.weight' is for layer 1 but llama.block_count is 1");
    g = valid;
    g.tensors[9].name = "blk.00.ffn_up.weight";
    expect_gguf_error(g, "'blk.00.ffn_up.weight' is not part of the llama architecture");
  }
  {
    Gguf g = valid;
    g.tensors[3].type = kGgmlQ8_1;  // ggml's activation type: no model file stores it
    g.tensors[3].data.assign(16 * 40, 0);
    expect_gguf_error(g, "'blk.0.attn_k.weight' has type Q8_1, which mote convert cannot import");
  }
  {
    Gguf g = valid;
    g.set_strings("tokenizer.ggml.merges", {"\xC4\xA0 t", "h x\xC4\xA0"});
    expect_gguf_error(g, "GGUF merge 1 'h x\xC4\xA0': token 'x\xC4\xA0' is not in the vocabulary");
    g.set_strings("tokenizer.ggml.merges", {"t h"});
    expect_gguf_error(g, "GGUF merge 0 't h': token 'th' is not in the vocabulary");
    g.set_strings("tokenizer.ggml.merges", {"the"});
    expect_gguf_error(g, "GGUF merge 0 'the' is not two tokens split by one space");
  }
  {
    Gguf g = valid;
    std::vector<std::string> tokens;
    // U+20AC is not in GPT-2's byte map.
    for (int i = 0; i < 262; ++i) tokens.push_back(i == 100 ? "\xE2\x82\xAC" : "<" + std::to_string(i) + ">");
    g.set_strings("tokenizer.ggml.tokens", tokens);
    g.erase("tokenizer.ggml.merges");
    expect_gguf_error(g, "GGUF token 100 '\xE2\x82\xAC' is a normal token but not in GPT-2's byte-to-unicode form");
  }
  {
    Gguf g = valid;
    g.set_strings("tokenizer.ggml.tokens", {"a", "b"});
    g.set_u32("llama.vocab_size", 262);
    expect_gguf_error(g, "tokenizer.ggml.tokens has 2 tokens but the model's vocabulary is 262");
    g = valid;
    g.set_u32("llama.vocab_size", 300);
    expect_gguf_error(g, "tokenizer.ggml.tokens has 262 tokens but the model's vocabulary is 300");
    g = valid;
    g.set_u32("tokenizer.ggml.bos_token_id", 262);
    expect_gguf_error(g, "'tokenizer.ggml.bos_token_id' is 262, outside [-1, 261]");
    g = valid;
    g.set_string("tokenizer.ggml.model", "t5");
    expect_gguf_error(g, "GGUF tokenizer model 't5' is not supported (only llama, gpt2 and bert)");
    g = valid;
    g.set_string("tokenizer.ggml.model", "bert");  // WordPiece needs [UNK]: this vocabulary has none
    expect_gguf_error(g, "GGUF WordPiece vocabulary has no unknown token ([UNK])");
    g = valid;
    g.erase("tokenizer.ggml.tokens");
    expect_gguf_error(g, "GGUF has no tokenizer");
    g = valid;
    std::vector<int32_t> types(262, 1);
    types[7] = 9;
    g.set_i32s("tokenizer.ggml.token_type", types);
    expect_gguf_error(g, "tokenizer.ggml.token_type[7] is 9");
  }
}

TEST_CASE("gguf: randomized corruption never crashes") {
  const char *iterations_env = std::getenv("MOTE_FUZZ_ITERATIONS");
  const char *seed_env = std::getenv("MOTE_FUZZ_SEED");
  const int iterations = iterations_env != nullptr ? std::atoi(iterations_env) : 500;
  const uint32_t seed = seed_env != nullptr ? static_cast<uint32_t>(std::strtoul(seed_env, nullptr, 10)) : 12345u;
  std::mt19937 rng(seed);
  const Bytes valid = valid_gguf().build();
  GgufFile file;
  std::string error;
  REQUIRE(mote::convert::parse_gguf(valid.data(), valid.size(), &file, &error));
  const size_t metadata_end = file.data_offset;  // most mutations aim at the structure
  size_t converted = 0, opened = 0;
  const uint64_t kBig[] = {0, 1, 2, 31, 32, 33, 255, 0x7FFFFFFF, 0xFFFFFFFF, 1ull << 32, 1ull << 62, ~0ull};
  for (int it = 0; it < iterations; ++it) {
    Bytes b = valid;
    const int mutations = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < mutations; ++k) {
      const size_t at = rng() % 4 != 0 ? rng() % metadata_end : rng() % b.size();
      switch (rng() % 4) {
        case 0:
          b[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
          break;
        case 1:
          b[at] = static_cast<uint8_t>(rng());
          break;
        case 2: {
          const uint64_t v = kBig[rng() % (sizeof kBig / sizeof kBig[0])];
          std::memcpy(b.data() + at, &v, std::min<size_t>(8, b.size() - at));
          break;
        }
        default:
          b.resize(at);
          break;
      }
      if (b.empty()) break;
    }
    ModelData m;
    const std::string e = convert_gguf(b, &m);
    if (e.empty()) {
      ++converted;
      if (open_error(m).empty()) ++opened;
    } else {
      CHECK(e.find('\n') == std::string::npos);
    }
  }
  MESSAGE(iterations << " corrupted GGUF files: " << converted << " still converted, " << opened << " opened");
}

TEST_CASE("gguf: a gpt2 file's heads and epsilon are checked one at a time, each naming its key") {
  // valid_gguf's tokenizer under the gpt2 architecture's keys: the hyperparameters are checked
  // before any tensor is looked for.
  Gguf g = valid_gguf();
  g.set_string("general.architecture", "gpt2");
  g.tensors.clear();
  g.set_u32("gpt2.block_count", 1);
  g.set_u32("gpt2.embedding_length", 64);
  g.set_u32("gpt2.feed_forward_length", 128);
  g.set_u32("gpt2.attention.head_count", 3);
  g.set_u32("gpt2.context_length", 16);
  g.set_f32("gpt2.attention.layer_norm_epsilon", 1e-5f);
  expect_gguf_error(g, "GGUF gpt2.embedding_length 64 is not divisible by gpt2.attention.head_count 3");
  CHECK(convert_gguf(g.build()).find("epsilon") == std::string::npos);
  g.set_u32("gpt2.attention.head_count", 4);
  g.set_f32("gpt2.attention.layer_norm_epsilon", 2.0f);
  expect_gguf_error(g, "GGUF gpt2.attention.layer_norm_epsilon 2 must be in (0, 1)");
  g.set_f32("gpt2.attention.layer_norm_epsilon", 1e-5f);
  expect_gguf_error(g, "GGUF is missing tensor 'token_embd.weight'");  // past both checks
  g = valid_gguf();
  g.set_f32("llama.attention.layer_norm_rms_epsilon", 0.0f);
  expect_gguf_error(g, "GGUF llama.attention.layer_norm_rms_epsilon 0 must be in (0, 1)");
  g.set_f32("llama.rope.freq_base", 1e-30f);
  g.set_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  expect_gguf_error(g, "GGUF llama.rope.freq_base 1e-30 must be finite and > 1");  // not "0.000000"
}

// ---- convert ok => open ok (issue: hardening) -------------------------------------------------

TEST_CASE(
    "property: a randomized extreme GGUF either converts to a file that opens and runs, or is refused in one line") {
  std::mt19937 rng(20261201);
  const double eps_values[] = {1e-50, 1e-46, 1e-30, 1e-12, 1e-5, 0.5, 0.999, 1.0, 2.0, 1e300};
  const double theta_values[] = {0.5, 1.0, 1.0001, 100.0, 1e6, 3e38, 1e39};
  const uint64_t context_values[] = {1, 2, 64, 1u << 20, (1u << 20) + 1, 1ull << 40};
  const uint32_t head_values[] = {1, 2, 4, 8, 16, 32};  // head_dim 32 .. 1 (odd at 1)
  ExtremeValueTally tally;
  for (int round = 0; round < 60; ++round) {
    Gguf g = valid_gguf();
    const double eps = eps_values[rng() % std::size(eps_values)];
    const double theta = theta_values[rng() % std::size(theta_values)];
    const uint64_t context = context_values[rng() % std::size(context_values)];
    const uint32_t heads = head_values[rng() % std::size(head_values)];
    Bytes b;
    put(b, eps);
    g.set("llama.attention.layer_norm_rms_epsilon", kF64, b);
    b.clear();
    put(b, theta);
    g.set("llama.rope.freq_base", kF64, b);
    b.clear();
    put(b, context);
    g.set("llama.context_length", kU64, b);
    // Multi-head attention with `heads` heads: k and v become (dim, dim).
    g.set_u32("llama.attention.head_count", heads);
    g.set_u32("llama.attention.head_count_kv", heads);
    for (const char *name : {"blk.0.attn_k.weight", "blk.0.attn_v.weight"}) {
      Tensor *t = g.tensor(name);
      t->dims = {kDim, kDim};
      t->type = kGgmlF32;
      t->data = f32_bytes(std::vector<float>(kDim * kDim, 0.01f));
    }
    ModelData model;
    const std::string error = convert_gguf(g.build(), &model);
    std::ostringstream the_case;
    the_case << "eps " << eps << ", theta " << theta << ", context " << context << ", heads " << heads;
    tally.record(error, model, the_case.str());
  }
  tally.check();
}

TEST_CASE("families: every family's GGUF architecture row carries its own family, named as the file names it") {
  for (uint32_t f = 1; f < mote::format::kFamilyCount; ++f) {
    const auto family = static_cast<mote::format::Family>(f);
    const char *name = mote::format::family_name(family);
    INFO("family " << f);
    REQUIRE(name != nullptr);
    const mote::convert::FamilyRow *row = mote::convert::family_by_gguf_arch(name);
    REQUIRE(row != nullptr);
    CHECK(row->family == family);
    CHECK(mote::convert::family_row(family) == row);  // the GGUF writer's lookup
  }
  CHECK(mote::convert::family_row(static_cast<mote::format::Family>(0)) == nullptr);
  CHECK(mote::format::family_name(static_cast<mote::format::Family>(0)) == nullptr);
  CHECK(mote::format::family_name(static_cast<mote::format::Family>(mote::format::kFamilyCount)) == nullptr);
}

// ---- attention.sliding_window: read where llama.cpp reads it -----------------------------------

namespace {

// The tiny llama GGUF as another architecture's: its keys under that prefix, and for qwen2 the
// q/k/v biases its blocks have.
Gguf tiny_gguf_as(const std::string &arch) {
  Gguf g = valid_gguf();
  for (Kv &kv : g.kvs) {
    if (kv.key.rfind("llama.", 0) == 0) kv.key = arch + kv.key.substr(5);
  }
  g.set_string("general.architecture", arch);
  if (arch == "qwen2") {
    const uint64_t kv_rows = kKvHeads * (kDim / kHeads);
    for (const auto &[stem, rows] : {std::pair{"attn_q", uint64_t{kDim}}, {"attn_k", kv_rows}, {"attn_v", kv_rows}})
      g.tensors.push_back(
          {std::string("blk.0.") + stem + ".bias", {rows}, kGgmlF32, f32_bytes(std::vector<float>(rows))});
  }
  return g;
}

}  // namespace

TEST_CASE("gguf: llama's and qwen2's attention.sliding_window is ignored with a note, as llama.cpp ignores it") {
  const std::string note_end = ".attention.sliding_window is ignored, as llama.cpp ignores it for ";
  for (const std::string arch : {"llama", "qwen2"}) {
    INFO(arch);
    Gguf g = tiny_gguf_as(arch);
    ModelData plain;
    REQUIRE(convert_gguf(g.build(), &plain) == "");
    CHECK(plain.notes.empty());
    g.set_u32(arch + ".attention.sliding_window", 16);  // under the context of 64: a window if read
    ModelData m;
    REQUIRE(convert_gguf(g.build(), &m) == "");
    CHECK(m.config.sliding_window == 0);
    CHECK((m.config.flags & mote::format::kFlagSlidingWindow) == 0);
    CHECK(m.config.flags == plain.config.flags);
    REQUIRE(m.notes.size() == 1);
    CHECK(m.notes[0] == "GGUF " + arch + note_end + arch + ": every layer attends to the whole context");
  }
  // Llama 3's RoPE factors with the key: imported with the factors (before: "the converted model
  // would not open: RoPE factors and sliding windows are both set").
  Gguf g = valid_gguf();
  g.set_u32("llama.attention.sliding_window", 16);
  const uint64_t pairs = kDim / kHeads / 2;
  g.tensors.push_back({"rope_freqs.weight", {pairs}, kGgmlF32, f32_bytes(std::vector<float>(pairs, 2.0f))});
  ModelData m;
  REQUIRE(convert_gguf(g.build(), &m) == "");
  CHECK((m.config.flags & mote::format::kFlagRopeFactors) != 0);
  CHECK(m.config.sliding_window == 0);
  CHECK(m.notes.size() == 1);
  CHECK(open_error(m) == "");
}

// ---- embedders: bert and nomic-bert files that do not fit ------------------------------------

namespace {

// A valid tiny bert (or nomic-bert) GGUF as llama.cpp writes one: dim 8, one layer, 2 heads, FFN 16,
// a WordPiece vocabulary in llama.cpp's phantom-space form, token_types [8, 2].
Gguf valid_bert_gguf(bool nomic) {
  constexpr uint64_t d = 8, ff = 16, ctx = 16;
  const std::string arch = nomic ? "nomic-bert" : "bert", p = arch + ".";
  Gguf g;
  g.set_string("general.architecture", arch);
  g.set_u32(p + "block_count", 1);
  g.set_u32(p + "embedding_length", d);
  g.set_u32(p + "feed_forward_length", ff);
  g.set_u32(p + "attention.head_count", 2);
  g.set_u32(p + "context_length", ctx);
  g.set_f32(p + "attention.layer_norm_epsilon", 1e-12f);
  g.set_bool(p + "attention.causal", false);
  g.set_u32(p + "pooling_type", 1);
  if (nomic) g.set_f32(p + "rope.freq_base", 1000.0f);
  const std::vector<std::string> tokens = {"[PAD]",
                                           "[UNK]",
                                           "[CLS]",
                                           "[SEP]",
                                           "[MASK]",
                                           "\xE2\x96\x81"
                                           "a",
                                           "\xE2\x96\x81"
                                           "b",
                                           "a",
                                           "b"};
  g.set_string("tokenizer.ggml.model", "bert");
  g.set_strings("tokenizer.ggml.tokens", tokens);
  g.set_i32s("tokenizer.ggml.token_type", {3, 2, 3, 3, 3, 1, 1, 1, 1});
  g.set_u32("tokenizer.ggml.unknown_token_id", 1);
  g.set_u32("tokenizer.ggml.cls_token_id", 2);
  g.set_u32("tokenizer.ggml.seperator_token_id", 3);
  const uint64_t vocab = tokens.size();
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-0.5f, 0.5f);
  auto add = [&](const std::string &name, std::vector<uint64_t> dims) {
    size_t n = 1;
    for (uint64_t x : dims) n *= x;
    std::vector<float> v(n);
    for (float &x : v) x = dist(rng);
    g.tensors.push_back({name, dims, kGgmlF32, f32_bytes(v)});
  };
  add("token_embd.weight", {d, vocab});
  if (!nomic) add("position_embd.weight", {d, ctx});
  add("token_types.weight", {d, 2});
  add("token_embd_norm.weight", {d});
  add("token_embd_norm.bias", {d});
  if (nomic) {
    add("blk.0.attn_qkv.weight", {d, 3 * d});
    add("blk.0.attn_output.weight", {d, d});
  } else {
    for (const char *stem : {"attn_q", "attn_k", "attn_v", "attn_output"}) {
      add(std::string("blk.0.") + stem + ".weight", {d, d});
      add(std::string("blk.0.") + stem + ".bias", {d});
    }
  }
  add("blk.0.attn_output_norm.weight", {d});
  add("blk.0.attn_output_norm.bias", {d});
  add("blk.0.ffn_up.weight", {d, ff});
  if (nomic) add("blk.0.ffn_gate.weight", {d, ff});
  if (!nomic) add("blk.0.ffn_up.bias", {ff});
  add("blk.0.ffn_down.weight", {ff, d});
  if (!nomic) add("blk.0.ffn_down.bias", {d});
  add("blk.0.layer_output_norm.weight", {d});
  add("blk.0.layer_output_norm.bias", {d});
  return g;
}

void drop_tensor(Gguf &g, const std::string &name) {
  const size_t before = g.tensors.size();
  g.tensors.erase(std::remove_if(g.tensors.begin(), g.tensors.end(), [&](const Tensor &t) { return t.name == name; }),
                  g.tensors.end());
  REQUIRE(g.tensors.size() + 1 == before);
}

}  // namespace

TEST_CASE("gguf: bert and nomic-bert files that do not fit are refused in one line") {
  for (const bool nomic : {false, true}) {
    const std::string arch = nomic ? "nomic-bert" : "bert", p = arch + ".";
    INFO(arch);
    const Gguf valid = valid_bert_gguf(nomic);
    ModelData m;
    REQUIRE(convert_gguf(valid.build(), &m) == "");
    CHECK((m.config.flags & mote::format::kFlagEncoder) != 0);
    CHECK(m.config.pooling == mote::format::Pooling::mean);
    CHECK(open_error(m) == "");
    Gguf g = valid;
    g.set_u32(p + "pooling_type", 4);  // llama.cpp's rank (a reranker's head): not an embedding
    expect_gguf_error(g, "GGUF " + p + "pooling_type 4 is not supported (mean 1, cls 2, last 3)");
    g = valid;
    g.set_u32(p + "pooling_type", 2);
    REQUIRE(convert_gguf(g.build(), &m) == "");
    CHECK(m.config.pooling == mote::format::Pooling::cls);
    g = valid;
    g.tensor("token_types.weight")->dims = {9, 2};
    g.tensor("token_types.weight")->data.resize(9 * 2 * 4);
    expect_gguf_error(g,
                      "GGUF tensor 'token_types.weight' has shape [9, 2] (innermost first); the hyperparameters "
                      "need [8]");
    g = valid;
    drop_tensor(g, "token_embd_norm.weight");
    expect_gguf_error(g, "GGUF is missing tensor 'token_embd_norm.weight'");
    g = valid;
    drop_tensor(g, "token_embd_norm.bias");
    expect_gguf_error(g, "GGUF is missing tensor 'token_embd_norm.bias'");
    g = valid;
    g.tensor("blk.0.attn_output_norm.weight")->dims = {7};
    expect_gguf_error(g,
                      "GGUF tensor 'blk.0.attn_output_norm.weight' has shape [7] (innermost first); the "
                      "hyperparameters need [8]");
    g = valid;
    g.tensor("blk.0.layer_output_norm.bias")->dims = {8, 2};
    g.tensor("blk.0.layer_output_norm.bias")->data.resize(8 * 2 * 4);
    expect_gguf_error(g, "'blk.0.layer_output_norm.bias' has shape [8, 2]");
    // An encoder has no classifier and no final norm; its block norms have GGUF's post-norm names only.
    for (const char *extra : {"output.weight", "output_norm.weight", "blk.0.attn_norm.weight"}) {
      const bool pre_norm = std::string(extra) == "blk.0.attn_norm.weight";
      g = valid;
      const bool matrix = std::string(extra) == "output.weight";
      g.tensors.push_back({extra, matrix ? std::vector<uint64_t>{8, 9} : std::vector<uint64_t>{8}, kGgmlF32,
                           f32_bytes(std::vector<float>(matrix ? 72 : 8, 0.1f))});
      expect_gguf_error(g, "GGUF tensor '" + std::string(extra) +
                               (pre_norm ? "' is not part of the " : "' has no place in the ") + arch +
                               " architecture");
    }
  }
  Gguf g = valid_bert_gguf(false);
  drop_tensor(g, "position_embd.weight");
  expect_gguf_error(g, "GGUF is missing tensor 'position_embd.weight'");
  g = valid_bert_gguf(true);
  g.tensors.push_back({"blk.0.attn_qkv.bias", {24}, kGgmlF32, f32_bytes(std::vector<float>(24, 0.0f))});
  expect_gguf_error(g, "GGUF tensor 'blk.0.attn_qkv.bias' has no place in the nomic-bert architecture");
  for (const bool nomic : {false, true}) {  // llama.cpp would run these with a causal mask: refused
    g = valid_bert_gguf(nomic);
    const std::string arch = nomic ? "nomic-bert" : "bert";
    g.set_bool(arch + ".attention.causal", true);
    expect_gguf_error(g, "GGUF " + arch + ".attention.causal is true: mote's encoders attend both ways");
  }
}

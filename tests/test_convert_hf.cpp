// The Hugging Face importer (models/convert/safetensors, json): tests/golden/tiny_hf against
// transformers and tokenizers, malformed checkpoints and safetensors headers, the JSON parser,
// and the extreme-value property (convert ok means open ok).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "convert_support.hpp"
#include "format/format.hpp"
#include "json.hpp"
#include "mote_writer.hpp"
#include "safetensors.hpp"
#include "test_support.hpp"
#include "text/tokenizer.hpp"

using namespace mote_convert_test;

namespace {

namespace fs = std::filesystem;

// The HF name of a converted tensor.
std::string hf_name(const TensorData &t) {
  static const std::map<Role, std::string> kNames = {
      {Role::token_embedding, "model.embed_tokens.weight"},
      {Role::output_norm, "model.norm.weight"},
      {Role::output, "lm_head.weight"},
      {Role::attn_norm, "input_layernorm.weight"},
      {Role::attn_q, "self_attn.q_proj.weight"},
      {Role::attn_k, "self_attn.k_proj.weight"},
      {Role::attn_v, "self_attn.v_proj.weight"},
      {Role::attn_output, "self_attn.o_proj.weight"},
      {Role::ffn_norm, "post_attention_layernorm.weight"},
      {Role::ffn_gate, "mlp.gate_proj.weight"},
      {Role::ffn_up, "mlp.up_proj.weight"},
      {Role::ffn_down, "mlp.down_proj.weight"},
  };
  const std::string &base = kNames.at(t.role);
  return t.layer == mote::format::kNoLayer ? base : "model.layers." + std::to_string(t.layer) + "." + base;
}

void write_text(const std::string &path, const std::string &text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
}

// A scratch copy of tests/golden/tiny_hf that a test may break.
struct HfCopy {
  std::string dir;
  // A copy of golden folder tiny_hf (Llama), or of a tiny_gpt2 variant with the shared tokenizer.
  explicit HfCopy(const std::string &folder = "tiny_hf") {
    char pattern[] = "/tmp/mote_test_convert_XXXXXX";
    REQUIRE(mkdtemp(pattern) != nullptr);
    dir = pattern;
    const bool gpt2 = folder != "tiny_hf";
    for (const char *f : {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"}) {
      const std::string from = gpt2 && std::string(f).rfind("tokenizer", 0) == 0 ? "tiny_gpt2/" : folder + "/";
      fs::copy_file(mote_test::golden_path(from + f), dir + "/" + f);
    }
  }
  ~HfCopy() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string path(const char *f) const { return dir + "/" + f; }
  // Replaces the first occurrence of from with to in file f.
  void edit(const char *f, const std::string &from, const std::string &to) const {
    std::string text = slurp(path(f));
    const size_t at = text.find(from);
    REQUIRE_MESSAGE(at != std::string::npos, from);
    text.replace(at, from.size(), to);
    write_text(path(f), text);
  }
  std::string convert(ModelData *out = nullptr) const {
    ModelData scratch;
    std::string error;
    mote::convert::SafetensorsOptions options;
    options.dtype = DType::f32;
    return mote::convert::load_hf_checkpoint(dir, options, out != nullptr ? out : &scratch, &error) ? "" : error;
  }
};

void expect_hf_error(const HfCopy &copy, const std::string &needle) {
  const std::string error = copy.convert();
  INFO("expected an error containing: " << needle);
  INFO("got: " << (error.empty() ? std::string("success") : error));
  CHECK(error.find(needle) != std::string::npos);
  CHECK(error.find('\n') == std::string::npos);
}

// One text edit of one file of a golden folder, and the message it must be refused with.
struct Edit {
  const char *file, *from, *to, *error;
};

// Each edit, alone on a fresh copy of folder (which converts unedited), is refused in one line
// containing its error.
template <size_t N>
void expect_edit_errors(const std::string &folder, const Edit (&edits)[N]) {
  CHECK(HfCopy(folder).convert() == "");
  for (const Edit &edit : edits) {
    INFO("edit of " << folder << "/" << edit.file << ": " << edit.to);
    HfCopy copy(folder);
    copy.edit(edit.file, edit.from, edit.to);
    expect_hf_error(copy, edit.error);
  }
}

Bytes safetensors_file(const std::string &header, size_t data_bytes) {
  Bytes b;
  b.reserve(sizeof(uint64_t) + header.size() + data_bytes);  // also spares GCC 12 a false -Warray-bounds
  put<uint64_t>(b, header.size());
  b.insert(b.end(), header.begin(), header.end());
  b.resize(b.size() + data_bytes, 0);
  return b;
}
std::string safetensors_error(const Bytes &b) {
  std::unique_ptr<uint8_t[]> exact(new uint8_t[b.size() + 1]);
  if (!b.empty()) std::memcpy(exact.get(), b.data(), b.size());
  std::vector<mote::convert::SafetensorsTensor> tensors;
  std::string error;
  return mote::convert::parse_safetensors(exact.get(), b.size(), &tensors, &error) ? "" : error;
}

}  // namespace

TEST_CASE("safetensors golden: tiny_hf against transformers and tokenizers") {
  const std::string dir = mote_test::golden_path("tiny_hf");
  const std::vector<std::string> lines = mote_test::read_lines(dir + "/golden.txt");
  const std::vector<float> goldens = mote_test::read_floats(dir + "/golden.bin");
  REQUIRE(!lines.empty());
  mote::convert::SafetensorsOptions options;
  options.dtype = DType::f32;
  size_t calls = 0;
  options.progress = [&](size_t, size_t) { ++calls; };
  ModelData m;
  std::string error;
  REQUIRE_MESSAGE(mote::convert::load_hf_checkpoint(dir, options, &m, &error), error);
  const mote::format::ModelConfig &c = m.config;
  CHECK(c.dim == 32);
  CHECK(c.n_layers == 2);
  CHECK(c.n_heads == 4);
  CHECK(c.n_kv_heads == 2);
  CHECK(c.head_dim == 8);
  CHECK(c.ffn_dim == 64);
  CHECK(c.vocab_size == 304);
  CHECK(c.max_seq_len == 128);
  CHECK(c.norm_eps == 1e-5f);
  CHECK(c.rope_theta == 20000.0f);
  CHECK(c.rope_layout == mote::format::RopeLayout::split_half);
  CHECK((c.flags & mote::format::kFlagTiedEmbeddings) == 0);
  CHECK(c.bos_id == 1);
  CHECK(c.eos_id == 2);
  CHECK(calls == m.tensors.size());
  const mote::convert::TokenizerData &tok = m.tokenizer;
  CHECK(tok.kind == mote::format::TokenizerKind::byte_level_bpe);
  CHECK(tok.flags == mote::format::kTokNoDigitSplit);  // a plain ByteLevel pre-tokenizer: GPT-2's
  CHECK(tok.chat_template == mote::format::ChatTemplate::chatml);
  CHECK(tok.pieces.size() == 304);
  CHECK(tok.types[0] == mote::kTokenControl);
  CHECK(tok.types[1] == mote::kTokenControl);
  CHECK(tok.types[299] == mote::kTokenUserDefined);
  CHECK(tok.pieces[299] == "<tool>");
  for (uint32_t id = 300; id < 304; ++id) {  // padding rows of the embedding
    CHECK(tok.types[id] == mote::kTokenUnused);
    CHECK(tok.pieces[id].empty());
  }

  std::map<std::string, const TensorData *> by_name;
  for (const TensorData &t : m.tensors) by_name[hf_name(t)] = &t;
  size_t tensors = 0;
  std::vector<mote::format::BpeMerge> merges;
  for (const std::string &line : lines) {
    if (line.rfind("tensor ", 0) == 0) {
      const std::string name = mote_test::manifest_value(line, "name");
      const size_t count = std::stoul(mote_test::manifest_value(line, "count"));
      const size_t at = std::stoul(mote_test::manifest_value(line, "at"));
      REQUIRE_MESSAGE(by_name.count(name) == 1, name);
      REQUIRE(at + count <= goldens.size());
      compare_values(name, floats_of(*by_name[name]), goldens.data() + at, count);
      ++tensors;
    } else if (line.rfind("piece ", 0) == 0) {
      const size_t id = std::stoul(mote_test::manifest_value(line, "id"));
      REQUIRE(id < tok.pieces.size());
      CHECK_MESSAGE(hex_of(tok.pieces[id]) == mote_test::manifest_value(line, "hex"), "token " << id);
    } else if (line.rfind("merge ", 0) == 0) {
      merges.push_back({static_cast<uint32_t>(std::stoul(mote_test::manifest_value(line, "left"))),
                        static_cast<uint32_t>(std::stoul(mote_test::manifest_value(line, "right"))),
                        static_cast<uint32_t>(std::stoul(mote_test::manifest_value(line, "result"))), 0});
    }
  }
  CHECK(tensors == m.tensors.size());
  REQUIRE(tok.merges.size() == merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    CHECK(tok.merges[i].left == merges[i].left);
    CHECK(tok.merges[i].right == merges[i].right);
    CHECK(tok.merges[i].result == merges[i].result);
  }
  CHECK(open_error(m) == "");

  // The same checkpoint named by its config.json or its weights file, stored as f16.
  options.dtype = DType::f16;
  options.progress = nullptr;
  ModelData h;
  REQUIRE_MESSAGE(mote::convert::load_hf_checkpoint(dir + "/config.json", options, &h, &error), error);
  CHECK(h.tensors.size() == m.tensors.size());
  CHECK(h.tensors[1].dtype == DType::f32);  // attn_norm
  CHECK(h.tensors[2].dtype == DType::f16);  // attn_q
  REQUIRE_MESSAGE(mote::convert::load_hf_checkpoint(dir + "/model.safetensors", options, &h, &error), error);
  CHECK(open_error(h) == "");
}

TEST_CASE("safetensors: tied embeddings and malformed checkpoints") {
  {
    HfCopy copy;
    copy.edit("config.json", "\"tie_word_embeddings\": false", "\"tie_word_embeddings\": true");
    ModelData m;
    REQUIRE(copy.convert(&m) == "");
    CHECK((m.config.flags & mote::format::kFlagTiedEmbeddings) != 0);
    CHECK(m.tensors.back().role == Role::output_norm);  // lm_head, a copy, is dropped
    CHECK(open_error(m) == "");
  }
  // One text edit of one file each, refused with a one-line message that names the cause.
  const Edit edits[] = {
      {"config.json", "\"rope_scaling\": null", "\"rope_scaling\": {\"type\": \"linear\", \"factor\": 2.0}",
       "config.json rope_scaling rope_type 'linear' is not supported (only llama3)"},
      {"config.json", "\"attention_bias\": false", "\"attention_bias\": true", "config.json attention_bias is true"},
      {"config.json", "\"silu\"", "\"gelu\"", "config.json hidden_act 'gelu' is not supported (only silu)"},
      {"config.json", "\"hidden_size\"", "\"hidden_sizes\"", "config.json is missing 'hidden_size'"},
      {"config.json", "\"num_attention_heads\": 4", "\"num_attention_heads\": 3", "do not divide evenly"},
      {"config.json", "\"intermediate_size\": 64", "\"intermediate_size\": 65",
       "tensor 'model.layers.0.mlp.gate_proj.weight' has shape [64, 32]; config.json needs [65, 32]"},
      {"config.json", "\"vocab_size\": 304", "\"vocab_size\": 299",
       "has id 299, outside the model's vocabulary of 299"},
      {"tokenizer.json", "\"ByteLevel\"", "\"Metaspace\"", "no ByteLevel pre-tokenizer"},
      {"tokenizer.json", "\"type\": \"BPE\"", "\"type\": \"Unigram\"", "model type 'Unigram' is not supported"},
      {"model.safetensors", "model.norm.weight", "model.norm.weigh_",
       "tensor 'model.norm.weigh_' is not part of a Llama model"},
  };
  expect_edit_errors("tiny_hf", edits);
  // GPT-2's config: each failing check is named alone, with its key and value.
  const Edit gpt2_edits[] = {
      {"config.json", "\"n_head\": 4", "\"n_head\": 3", "config.json n_embd 32 is not divisible by n_head 3"},
      {"config.json", "\"n_embd\": 32", "\"n_embd\": 33", "config.json n_embd 33 is not divisible by n_head 4"},
      {"config.json", "\"layer_norm_epsilon\": 1e-05", "\"layer_norm_epsilon\": 2.0",
       "config.json layer_norm_epsilon 2 must be in (0, 1)"},
      {"config.json", "\"layer_norm_epsilon\": 1e-05", "\"layer_norm_epsilon\": 0",
       "config.json layer_norm_epsilon 0 must be in (0, 1)"},
      {"config.json", "\"bos_token_id\": 0", "\"bos_token_id\": 304",
       "config.json bos_token_id 304 and eos_token_id 0 must be inside the vocabulary of 304"},
  };
  expect_edit_errors("tiny_gpt2/postnorm_sinusoidal", gpt2_edits);
  {
    // An odd width that the heads divide: only sinusoidal positions refuse it.
    HfCopy copy("tiny_gpt2/postnorm_sinusoidal");
    copy.edit("config.json", "\"n_embd\": 32", "\"n_embd\": 33");
    copy.edit("config.json", "\"n_head\": 4", "\"n_head\": 3");
    expect_hf_error(copy, "config.json n_embd 33 is odd: sinusoidal positions pair its dimensions");
  }
  {
    HfCopy copy;
    write_text(copy.path("config.json"), slurp(copy.path("config.json")).substr(0, 100));
    expect_hf_error(copy, "config.json': JSON error at byte");
  }
  {
    HfCopy copy;
    fs::remove(copy.path("tokenizer.json"));
    expect_hf_error(copy, "has no tokenizer.json");
  }
  {
    HfCopy copy;
    fs::remove(copy.path("model.safetensors"));
    expect_hf_error(copy, "has neither model.safetensors nor model.safetensors.index.json");
  }
  {
    HfCopy copy;
    std::string weights = slurp(copy.path("model.safetensors"));
    write_text(copy.path("model.safetensors"), weights.substr(0, weights.size() - 10));
    expect_hf_error(copy, "runs past the end of the file");
  }
  {
    HfCopy copy;
    std::string weights = slurp(copy.path("model.safetensors"));
    const uint64_t huge = 1ull << 40;
    std::memcpy(&weights[0], &huge, 8);
    write_text(copy.path("model.safetensors"), weights);
    expect_hf_error(copy, "safetensors header length 1099511627776 runs past the end of the file");
  }
  // Sharded: the same weights as one shard named by an index.
  {
    HfCopy copy;
    fs::rename(copy.path("model.safetensors"), copy.path("model-00001-of-00001.safetensors"));
    write_text(copy.path("model.safetensors.index.json"),
               "{\"metadata\": {}, \"weight_map\": {\"model.norm.weight\": \"model-00001-of-00001.safetensors\"}}");
    CHECK(copy.convert() == "");
    write_text(copy.path("model.safetensors.index.json"), "{\"weight_map\": {\"a\": \"../x.safetensors\"}}");
    expect_hf_error(copy, "maps 'a' to an invalid file name");
  }
}

TEST_CASE("safetensors: header validation") {
  CHECK(safetensors_error(Bytes{1, 2, 3}).find("shorter than its 8-byte header length") != std::string::npos);
  CHECK(safetensors_error(
            safetensors_file("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}}", 8)) == "");
  CHECK(
      safetensors_error(safetensors_file("{\"a\": {\"dtype\": \"I64\", \"shape\": [1], \"data_offsets\": [0, 8]}}", 8))
          .find("dtype 'I64' (only F32, F16 and BF16 are supported)") != std::string::npos);
  CHECK(
      safetensors_error(safetensors_file("{\"a\": {\"dtype\": \"F32\", \"shape\": [3], \"data_offsets\": [0, 8]}}", 8))
          .find("hold 8 bytes but its shape and dtype need 12") != std::string::npos);
  CHECK(
      safetensors_error(safetensors_file("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [8, 16]}}", 8))
          .find("runs past the end of the file") != std::string::npos);
  CHECK(
      safetensors_error(safetensors_file("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [8, 0]}}", 8))
          .find("0 <= begin <= end") != std::string::npos);
  CHECK(safetensors_error(safetensors_file("{\"a\": {\"dtype\": \"F16\", \"shape\": [4294967296, 4294967296, 65536], "
                                           "\"data_offsets\": [0, 8]}}",
                                           8))
            .find("product of its shape overflows") != std::string::npos);
  CHECK(safetensors_error(safetensors_file("{\"a\": {\"dtype\": \"F32\"}}", 0)).find("lacks") != std::string::npos);
  CHECK(safetensors_error(safetensors_file("[1, 2]", 0)).find("not a JSON object") != std::string::npos);
  CHECK(safetensors_error(safetensors_file("{\"a\": 1,}", 0)).find("JSON error at byte") != std::string::npos);
}

TEST_CASE("json: the parser") {
  using mote::convert::JsonValue;
  JsonValue v;
  std::string error;
  const std::string text =
      " {\"a\": [1, -2.5e3, true, false, null], \"s\": \"x\\n\\u00e9\\ud83d\\ude00\\\"\\\\\\/\", \"o\": {}} ";
  REQUIRE(mote::convert::parse_json(text.data(), text.size(), &v, &error));
  CHECK(v.get("a")->items.size() == 5);
  CHECK(v.get("a")->items[0].integral);
  CHECK(v.get("a")->items[0].integer == 1);
  CHECK(v.get("a")->items[1].number == -2500.0);
  CHECK(!v.get("a")->items[1].integral);
  CHECK(v.get("a")->items[2].boolean);
  CHECK(v.get("a")->items[4].is_null());
  CHECK(v.get("s")->text == "x\n\xC3\xA9\xF0\x9F\x98\x80\"\\/");
  CHECK(v.get("o")->members.empty());
  CHECK(v.get("missing") == nullptr);
  const struct {
    const char *text;
    const char *needle;
  } bad[] = {
      {"", "unexpected end of input"},
      {"{\"a\": 1, \"a\": 2}", "duplicate key 'a'"},
      {"\"\\ud800\"", "lone high surrogate"},
      {"\"\\udc00\"", "lone low surrogate"},
      {"\"a\nb\"", "raw control character"},
      {"[1, 2", "unterminated array"},
      {"{\"a\" 1}", "expected ':'"},
      {"01", "leading zero"},
      {"1.", "bad number"},
      {"[1] x", "trailing characters"},
      {"\"\\q\"", "bad escape"},
      {"tru", "unexpected character"},
      {"\"abc", "unterminated string"},
  };
  for (const auto &b : bad) {
    INFO(b.text);
    CHECK(!mote::convert::parse_json(b.text, std::strlen(b.text), &v, &error));
    CHECK(error.find(b.needle) != std::string::npos);
  }
  const std::string deep(100, '[');
  CHECK(!mote::convert::parse_json(deep.data(), deep.size(), &v, &error));
  CHECK(error.find("nesting deeper than 64") != std::string::npos);
  // Random corruption of a real header never crashes.
  std::mt19937 rng(99);
  const std::string tokenizer = slurp(mote_test::golden_path("tiny_hf/tokenizer.json"));
  for (int it = 0; it < 200; ++it) {
    std::string t = tokenizer;
    for (int k = 0; k < 3; ++k) t[rng() % t.size()] = static_cast<char>(rng());
    if (rng() % 4 == 0) t.resize(rng() % t.size());
    std::unique_ptr<char[]> exact(new char[t.size() + 1]);
    if (!t.empty()) std::memcpy(exact.get(), t.data(), t.size());
    mote::convert::parse_json(exact.get(), t.size(), &v, &error);
  }
}

TEST_CASE(
    "property: a randomized extreme Hugging Face checkpoint either converts to a file that opens and runs, or is "
    "refused in one line") {
  std::mt19937 rng(20261202);
  const char *eps_values[] = {"1e-50", "1e-46", "1e-30", "1e-12", "1e-05", "0.5", "0.999", "1.0", "2.0", "1e300"};
  const char *theta_values[] = {"0.5", "1.0", "1.0001", "100.0", "1e6", "3e38", "1e39"};
  const char *context_values[] = {"1", "2", "64", "1048576", "1048577", "1099511627776"};
  // (heads, kv heads): hidden 32 and kv dim 16 kept, so head_dim 16 .. 1 converts; (4, 4) does not fit.
  const char *head_values[][2] = {{"2", "1"}, {"4", "2"}, {"8", "4"}, {"16", "8"}, {"32", "16"}, {"4", "4"}};
  ExtremeValueTally tally;
  for (int round = 0; round < 40; ++round) {
    const HfCopy copy;
    const char *eps = eps_values[rng() % std::size(eps_values)];
    const char *theta = theta_values[rng() % std::size(theta_values)];
    const char *context = context_values[rng() % std::size(context_values)];
    const auto &heads = head_values[rng() % std::size(head_values)];
    copy.edit("config.json", "\"rms_norm_eps\": 1e-05", std::string("\"rms_norm_eps\": ") + eps);
    copy.edit("config.json", "\"rope_theta\": 20000.0", std::string("\"rope_theta\": ") + theta);
    copy.edit("config.json", "\"max_position_embeddings\": 128",
              std::string("\"max_position_embeddings\": ") + context);
    copy.edit("config.json", "\"num_attention_heads\": 4", std::string("\"num_attention_heads\": ") + heads[0]);
    copy.edit("config.json", "\"num_key_value_heads\": 2", std::string("\"num_key_value_heads\": ") + heads[1]);
    ModelData model;
    const std::string error = copy.convert(&model);
    std::ostringstream the_case;
    the_case << "eps " << eps << ", theta " << theta << ", context " << context << ", heads " << heads[0] << "/"
             << heads[1];
    tally.record(error, model, the_case.str());
  }
  tally.check();
}

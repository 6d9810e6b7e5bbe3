// The Hugging Face importer (models/convert/hf/: safetensors, json): tests/golden/tiny_hf against
// transformers and tokenizers, malformed checkpoints and safetensors headers, the JSON parser,
// and the extreme-value property (convert ok means open ok).
#include <cmath>
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
#include "hf/hf.hpp"
#include "hf/hf_families.hpp"
#include "hf/json.hpp"
#include "hf/safetensors.hpp"
#include "model_data.hpp"
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
  // Integer buffers parse (BERT keeps position_ids); an unknown dtype does not.
  CHECK(safetensors_error(
            safetensors_file("{\"a\": {\"dtype\": \"I64\", \"shape\": [1], \"data_offsets\": [0, 8]}}", 8)) == "");
  CHECK(
      safetensors_error(safetensors_file("{\"a\": {\"dtype\": \"Q4\", \"shape\": [1], \"data_offsets\": [0, 8]}}", 8))
          .find("dtype 'Q4', which safetensors does not define") != std::string::npos);
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

// ---- the families (hf_families.cpp) ------------------------------------------------------------

namespace {

using mote::convert::HfConfig;
namespace fmt = mote::format;

// A config.json of model_type type: the shared sizes plus extra members ("\"k\": v, ...").
std::string family_json(const std::string &type, const std::string &extra = "") {
  return "{\"model_type\": \"" + type +
         "\", \"hidden_size\": 32, \"num_hidden_layers\": 6, \"num_attention_heads\": 4, "
         "\"num_key_value_heads\": 2, \"intermediate_size\": 64, \"vocab_size\": 304, "
         "\"max_position_embeddings\": 128, \"rms_norm_eps\": 1e-06, \"rope_theta\": 20000.0" +
         (extra.empty() ? "" : ", " + extra) + "}";
}

// hf_config on text: "" and *out filled, or the one-line error.
std::string read_config(const std::string &text, HfConfig *out) {
  mote::convert::JsonValue json;
  std::string error;
  REQUIRE(mote::convert::parse_json(text.data(), text.size(), &json, &error));
  return mote::convert::hf_config(json, out, &error) ? "" : error;
}

HfConfig config_of(const std::string &text) {
  HfConfig c;
  const std::string error = read_config(text, &c);
  INFO(text);
  REQUIRE(error == "");
  return c;
}

// Llama 3's published formula in float64 (Meta's apply_scaling; transformers' _compute_llama3_parameters),
// as the divisor of each pair's frequency.
double llama3_factor(uint32_t i, uint32_t head_dim, double theta, double factor, double low, double high,
                     double context) {
  const double inv_freq = 1.0 / std::pow(theta, 2.0 * i / head_dim);
  const double wavelen = 2 * M_PI / inv_freq;
  if (wavelen < context / high) return 1.0;
  if (wavelen > context / low) return factor;
  const double smooth = (context / wavelen - low) / (high - low);
  const double scaled = (1 - smooth) * inv_freq / factor + smooth * inv_freq;
  return inv_freq / scaled;
}

}  // namespace

TEST_CASE("hf families: each model_type's keys become its row's flags and the file's fields") {
  const uint32_t llama_flags = config_of(family_json("llama")).config.flags;
  CHECK(llama_flags == 0);
  const HfConfig llama = config_of(family_json("llama"));
  CHECK(llama.config.family == fmt::Family::llama);
  CHECK(llama.config.rope_layout == fmt::RopeLayout::split_half);
  CHECK(llama.config.rope_theta == 20000.0f);
  CHECK(llama.config.norm_eps == 1e-6f);
  CHECK(llama.config.head_dim == 8);
  CHECK(!llama.tied);
  CHECK(llama.rope_factors.empty());

  // Qwen2: q/k/v biases always; its sliding_window only counts with use_sliding_window.
  const HfConfig qwen2 = config_of(family_json("qwen2", "\"sliding_window\": 16, \"use_sliding_window\": false"));
  CHECK(qwen2.config.family == fmt::Family::qwen2);
  CHECK(qwen2.config.flags == fmt::kFlagQkvBias);
  CHECK(qwen2.config.rope_layout == fmt::RopeLayout::split_half);

  // Qwen3: q/k norms, and a head size of its own (4 x 12 != 32).
  const HfConfig qwen3 = config_of(family_json("qwen3", "\"head_dim\": 12"));
  CHECK(qwen3.config.flags == fmt::kFlagQkNorm);
  CHECK(qwen3.config.head_dim == 12);

  // Gemma 3: sandwich norms, q/k norms, embedding scale, GeGLU, tied by default, 5 local : 1 global
  // windows with their own base; query_pre_attn_scalar equal to head_dim is no override.
  const std::string gemma_keys =
      "\"head_dim\": 24, \"hidden_activation\": \"gelu_pytorch_tanh\", \"sliding_window\": 8, "
      "\"rope_local_base_freq\": 12345.0, \"sliding_window_pattern\": 6, \"layer_types\": [\"sliding_attention\", "
      "\"sliding_attention\", \"sliding_attention\", \"sliding_attention\", \"sliding_attention\", \"full_attention\"]";
  const HfConfig gemma = config_of(family_json("gemma3_text", gemma_keys + ", \"query_pre_attn_scalar\": 24"));
  CHECK(gemma.config.family == fmt::Family::gemma3);
  CHECK(gemma.config.activation == fmt::Activation::geglu);
  CHECK(gemma.config.flags == (fmt::kFlagQkNorm | fmt::kFlagSandwichNorm | fmt::kFlagEmbedScale |
                               fmt::kFlagSlidingWindow | fmt::kFlagTiedEmbeddings));
  CHECK(gemma.tied);
  CHECK(gemma.config.head_dim == 24);
  CHECK(gemma.config.sliding_window == 8);
  CHECK(gemma.config.swa_global_every == 6);
  CHECK(gemma.config.rope_theta_local == 12345.0f);
  CHECK(gemma.config.rope_theta == 20000.0f);
  // Gemma 3 27B's query_pre_attn_scalar (dim / heads, not head_dim): scores scaled by 1/sqrt(256).
  const HfConfig scaled = config_of(family_json("gemma3_text", gemma_keys + ", \"query_pre_attn_scalar\": 256"));
  CHECK((scaled.config.flags & fmt::kFlagAttentionScale) != 0);
  CHECK(scaled.config.attention_scale == 1.0f / 16.0f);
  CHECK(config_of(family_json("gemma3_text", gemma_keys + ", \"tie_word_embeddings\": false")).tied == false);

  // Phi-3: fused q/k/v and gate/up; its window covers every layer.
  const HfConfig phi3 = config_of(family_json("phi3", "\"sliding_window\": 12"));
  CHECK(phi3.config.flags == (fmt::kFlagFusedQkv | fmt::kFlagFusedGateUp | fmt::kFlagSlidingWindow));
  CHECK(phi3.config.sliding_window == 12);
  CHECK(phi3.config.swa_global_every == 0);
  CHECK(config_of(family_json("phi3", "\"sliding_window\": null")).config.flags ==
        (fmt::kFlagFusedQkv | fmt::kFlagFusedGateUp));
  // A window as wide as the context is no window.
  CHECK(config_of(family_json("phi3", "\"sliding_window\": 128")).config.sliding_window == 0);
}

TEST_CASE("hf families: what a family's block cannot do is refused in one line") {
  const std::string gemma_base =
      "\"head_dim\": 24, \"hidden_activation\": \"gelu_pytorch_tanh\", \"sliding_window\": 8";
  const struct {
    std::string text, error;
  } cases[] = {
      {family_json("mistral"),
       "config.json model_type 'mistral' is not supported (mote knows llama, gpt2, qwen2, qwen3, gemma3_text, phi3, bert)"},
      {family_json("llama", "\"rope_scaling\": {\"rope_type\": \"linear\", \"factor\": 2.0}"),
       "config.json rope_scaling rope_type 'linear' is not supported (only llama3)"},
      {family_json("phi3", "\"rope_scaling\": {\"type\": \"longrope\", \"short_factor\": [1]}"),
       "config.json rope_scaling rope_type 'longrope' is not supported (only llama3)"},
      {family_json("llama",
                   "\"rope_scaling\": {\"rope_type\": \"llama3\", \"low_freq_factor\": 1.0, "
                   "\"high_freq_factor\": 4.0, \"original_max_position_embeddings\": 64}"),
       "config.json rope_scaling (llama3) is missing 'factor'"},
      {family_json("llama",
                   "\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0, \"low_freq_factor\": 4.0, "
                   "\"high_freq_factor\": 1.0, \"original_max_position_embeddings\": 64}"),
       "0 < low_freq_factor < high_freq_factor"},
      {family_json("llama", "\"rope_scaling\": 2"), "config.json rope_scaling is a number, expected an object or null"},
      // Llama 3's factors and windows: refused by the importer, naming both keys (before: "the
      // converted model would not open: RoPE factors and sliding windows are both set").
      {family_json("phi3",
                   "\"sliding_window\": 12, \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0, "
                   "\"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0, \"original_max_position_embeddings\": 64}"),
       "config.json rope_scaling (llama3) with sliding_window 12: scaled RoPE on windowed layers is not supported"},
      {family_json("qwen2", "\"use_sliding_window\": true"), "config.json use_sliding_window is true"},
      {family_json("qwen3", "\"attention_bias\": true"),
       "config.json attention_bias is true: biases are not supported for qwen3"},
      {family_json("llama", "\"mlp_bias\": true"), "config.json mlp_bias is true: biases are not supported for llama"},
      {family_json("phi3", "\"partial_rotary_factor\": 0.5"), "config.json partial_rotary_factor 0.5 is not supported"},
      {family_json("gemma3_text", gemma_base + ", \"final_logit_softcapping\": 30.0"),
       "config.json final_logit_softcapping is set: logit soft-capping is not supported"},
      {family_json("gemma3_text", gemma_base + ", \"sliding_window_pattern\": 4"),
       "config.json sliding_window_pattern 4 is not gemma3's (every 6th layer full_attention"},
      {family_json("gemma3_text", gemma_base + ", \"layer_types\": [\"sliding_attention\", \"full_attention\", "
                                               "\"sliding_attention\", \"sliding_attention\", \"sliding_attention\", "
                                               "\"full_attention\"]"),
       "config.json layer_types is not gemma3's pattern"},
      {family_json("gemma3_text", gemma_base + ", \"layer_types\": [\"sliding_attention\"]"),
       "config.json layer_types is not gemma3's pattern"},
      {family_json("gemma3_text", "\"head_dim\": 24"),
       "config.json hidden_act 'silu' is not supported (only gelu_pytorch_tanh)"},
      {family_json("gemma3_text", gemma_base + ", \"query_pre_attn_scalar\": 0"),
       "config.json query_pre_attn_scalar 0 must be positive"},
      {family_json("qwen3", "\"head_dim\": 7"), "config.json head_dim 7 is odd"},
  };
  for (const auto &c : cases) {
    HfConfig out;
    // gemma3_text's missing hidden_activation falls back to hidden_act: give one to be refused.
    std::string text = c.text;
    if (c.error.find("hidden_act 'silu'") != std::string::npos)
      text.insert(text.size() - 1, ", \"hidden_act\": \"silu\"");
    const std::string error = read_config(text, &out);
    INFO(text);
    INFO("got: " << error);
    CHECK(error.find(c.error) != std::string::npos);
    CHECK(error.find('\n') == std::string::npos);
  }
}

// Each model_type reads its own family's names; a family without Hugging Face keys (nomic-bert, or
// a row added to families.cpp alone) is a one-line error naming it (hf_names gave llama's names).
TEST_CASE("hf families: each family's own names, and a family without any is a one-line error naming it") {
  std::string types = mote::convert::known_hf_types() + ", ", error;
  std::vector<std::string> whats;
  for (size_t at = 0, comma; (comma = types.find(", ", at)) != std::string::npos; at = comma + 2) {
    const std::string type = types.substr(at, comma - at);
    INFO(type);
    const mote::convert::FamilyRow *row = mote::convert::family_by_hf_type(type);
    const mote::convert::HfNames *names = row != nullptr ? mote::convert::hf_names(*row, &error) : nullptr;
    REQUIRE(names != nullptr);
    CHECK(std::count(whats.begin(), whats.end(), names->what) == 0);
    whats.push_back(names->what);
    if (row->family != fmt::Family::gpt2 && row->family != fmt::Family::bert)  // (their own keys)
      CHECK(config_of(family_json(type)).names == names);
  }
  CHECK(whats.size() == 7);
  mote::convert::FamilyRow stray = *mote::convert::family_by_gguf_arch("llama");
  stray.gguf_arch = stray.hf_type = "mamba";
  for (const mote::convert::FamilyRow &row : {*mote::convert::family_by_gguf_arch("nomic-bert"), stray}) {
    CHECK(mote::convert::hf_names(row, &error) == nullptr);
    CHECK(error == "mote has no Hugging Face keys for the " + std::string(row.gguf_arch) +
                       " family (it imports llama, gpt2, qwen2, qwen3, gemma3_text, phi3, bert)");
  }
}

// A config.json without model_type: its architectures class picks the family (was: llama, always).
TEST_CASE("hf families: without model_type, the architectures class names the family") {
  std::string sized = family_json("x");
  sized = sized.substr(sized.find(", ") + 2);  // the sizes, without model_type
  CHECK(config_of("{" + sized).row->family == fmt::Family::llama);
  CHECK(config_of("{\"architectures\": [], " + sized).row->family == fmt::Family::llama);
  CHECK(config_of("{\"architectures\": [\"Qwen3ForCausalLM\"], " + sized).row->family == fmt::Family::qwen3);
  HfConfig c;
  CHECK(read_config("{\"architectures\": [\"MistralForCausalLM\"], " + sized, &c) ==
        "config.json has no model_type and its architectures class 'MistralForCausalLM' is not supported (mote knows "
        "LlamaForCausalLM, GPT2LMHeadModel, Qwen2ForCausalLM, Qwen3ForCausalLM, Gemma3ForCausalLM, Phi3ForCausalLM, "
        "BertModel)");
  CHECK(read_config("{\"architectures\": \"LlamaForCausalLM\", " + sized, &c) ==
        "config.json 'architectures' is a string, expected a list of class names");
}

TEST_CASE("hf families: Llama 3's rope_scaling gives the published formula's divisors") {
  // Llama 3.2 1B's numbers: head 64, base 500000, factor 32, low 1, high 4, original context 8192.
  struct Scaling {
    uint32_t head_dim;
    double theta, factor, low, high, context;
  };
  for (const Scaling s :
       {Scaling{64, 500000, 32, 1, 4, 8192}, Scaling{128, 500000, 8, 1, 4, 8192}, Scaling{8, 10000, 8, 1, 4, 64}}) {
    const std::vector<float> got =
        mote::convert::llama3_rope_factors(s.head_dim, s.theta, s.factor, s.low, s.high, s.context);
    REQUIRE(got.size() == s.head_dim / 2);
    size_t ones = 0, full = 0, smooth = 0;
    for (uint32_t i = 0; i < s.head_dim / 2; ++i) {
      const double want = llama3_factor(i, s.head_dim, s.theta, s.factor, s.low, s.high, s.context);
      INFO("pair " << i << " of head " << s.head_dim);
      CHECK(std::fabs(got[i] - want) <= 2e-6 * want);
      ones += got[i] == 1.0f;
      full += got[i] == static_cast<float>(s.factor);
      smooth += got[i] != 1.0f && got[i] != static_cast<float>(s.factor);
    }
    CHECK(ones > 0);  // each regime is exercised
    CHECK(full > 0);
    CHECK(smooth > 0);
  }
  // Through config.json: the flag and the factors, for the head size the file states.
  const HfConfig c =
      config_of(family_json("llama",
                            "\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0, \"low_freq_factor\": 1.0, "
                            "\"high_freq_factor\": 4.0, \"original_max_position_embeddings\": 64}"));
  CHECK((c.config.flags & fmt::kFlagRopeFactors) != 0);
  REQUIRE(c.rope_factors.size() == 4);
  for (uint32_t i = 0; i < 4; ++i) CHECK(std::fabs(c.rope_factors[i] - llama3_factor(i, 8, 20000, 8, 1, 4, 64)) < 1e-5);
  CHECK(config_of(family_json("llama", "\"rope_scaling\": {\"rope_type\": \"default\"}")).rope_factors.empty());
}

TEST_CASE("hf families: the tiny Llama checkpoint read as each family, its tensors named by that family") {
  // model_type alone changes: each family names the first tensor its block needs and tiny_hf lacks.
  const Edit edits[] = {
      {"config.json", "\"llama\"", "\"qwen2\"", "is missing tensor 'model.layers.0.self_attn.q_proj.bias'"},
      {"config.json", "\"llama\"", "\"qwen3\"", "is missing tensor 'model.layers.0.self_attn.q_norm.weight'"},
      // Phi-3 fuses gate and up: a separate gate_proj has no place in its block.
      {"config.json", "\"llama\"", "\"phi3\"",
       "tensor 'model.layers.0.mlp.gate_proj.weight' has no place in the architecture config.json describes"},
  };
  expect_edit_errors("tiny_hf", edits);
  {
    HfCopy copy;
    copy.edit("config.json", "\"llama\"", "\"gemma3_text\"");
    copy.edit("config.json", "\"silu\"", "\"gelu_pytorch_tanh\"");
    // Gemma's post_attention_layernorm is the sandwich's; its FFN input norm has its own name.
    expect_hf_error(copy, "is missing tensor 'model.layers.0.pre_feedforward_layernorm.weight'");
  }
  {
    // Llama 3 scaling adds the computed rope_freqs tensor; the weights are untouched.
    HfCopy copy;
    copy.edit("config.json", "\"rope_scaling\": null",
              "\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0, \"low_freq_factor\": 1.0, "
              "\"high_freq_factor\": 4.0, \"original_max_position_embeddings\": 64}");
    ModelData m;
    REQUIRE(copy.convert(&m) == "");
    CHECK(open_error(m) == "");
    const TensorData *freqs = nullptr;
    for (const TensorData &t : m.tensors) freqs = t.role == Role::rope_freqs ? &t : freqs;
    REQUIRE(freqs != nullptr);
    const std::vector<float> values = floats_of(*freqs);
    REQUIRE(values.size() == 4);
    for (uint32_t i = 0; i < 4; ++i) CHECK(std::fabs(values[i] - llama3_factor(i, 8, 20000, 8, 1, 4, 64)) < 1e-5);
  }
}

TEST_CASE("hf families: a tiny model of each family imports from safetensors as its GGUF twin does") {
  // tests/golden/tiny_families (gen_tiny_families.py): the same random weights as a GGUF (llama.cpp's
  // conventions: Gemma's 1 + w norms, llama's permuted q/k rows, Llama 3's rope_freqs) and as a
  // Hugging Face folder. The two imports must agree value for value.
  for (const char *family : {"qwen2", "qwen3", "gemma3", "phi3", "llama3"}) {
    const std::string dir = mote_test::golden_path(std::string("tiny_families/") + family);
    if (!mote_test::file_exists(dir + "/model.gguf")) {
      MOTE_SKIP("no tests/golden/tiny_families/" << family);
      continue;
    }
    INFO("family " << family);
    ModelData hf, gguf;
    std::string error;
    mote::convert::SafetensorsOptions hf_options;
    hf_options.dtype = DType::f32;
    REQUIRE_MESSAGE(mote::convert::load_hf_checkpoint(dir + "/hf", hf_options, &hf, &error), error);
    mote::convert::GgufOptions gguf_options;
    gguf_options.dtype = DType::f32;
    REQUIRE_MESSAGE(mote::convert::load_gguf(dir + "/model.gguf", gguf_options, &gguf, &error), error);
    const fmt::ModelConfig &a = hf.config, &b = gguf.config;
    const bool llama = std::string(family) == "llama3";
    CHECK(a.family == b.family);
    CHECK(a.flags == b.flags);
    CHECK(a.activation == b.activation);
    CHECK(a.dim == b.dim);
    CHECK(a.n_layers == b.n_layers);
    CHECK(a.n_heads == b.n_heads);
    CHECK(a.n_kv_heads == b.n_kv_heads);
    CHECK(a.head_dim == b.head_dim);
    CHECK(a.ffn_dim == b.ffn_dim);
    CHECK(a.vocab_size == b.vocab_size);
    CHECK(a.max_seq_len == b.max_seq_len);
    CHECK(a.norm_eps == b.norm_eps);
    CHECK(a.rope_theta == b.rope_theta);
    CHECK(a.sliding_window == b.sliding_window);
    CHECK(a.swa_global_every == b.swa_global_every);
    CHECK(a.rope_theta_local == b.rope_theta_local);
    CHECK(a.attention_scale == b.attention_scale);
    CHECK(a.rope_layout == fmt::RopeLayout::split_half);
    CHECK(b.rope_layout == (llama ? fmt::RopeLayout::interleaved : fmt::RopeLayout::split_half));
    REQUIRE(hf.tensors.size() == gguf.tensors.size());
    for (size_t i = 0; i < hf.tensors.size(); ++i) {
      const TensorData &h = hf.tensors[i], &g = gguf.tensors[i];
      INFO("tensor " << gguf_name(g));
      REQUIRE(h.role == g.role);
      REQUIRE(h.layer == g.layer);
      const std::vector<float> x = floats_of(h), y = floats_of(g);
      REQUIRE(x.size() == y.size());
      if (h.role == Role::rope_freqs) {
        // llama.cpp's float32 steps against the generator's float64 formula rounded once.
        for (size_t k = 0; k < x.size(); ++k) CHECK(std::fabs(x[k] - y[k]) <= 2e-7f * y[k]);
        continue;
      }
      if (llama && (h.role == Role::attn_q || h.role == Role::attn_k)) {
        // llama.cpp's permutation: GGUF row 2j + k of a head is Hugging Face row k * half + j.
        const size_t hd = a.head_dim, half = hd / 2, cols = a.dim, rows = x.size() / cols;
        size_t differ = 0;
        for (size_t head = 0; head < rows / hd; ++head)
          for (size_t j = 0; j < half; ++j)
            for (size_t k = 0; k < 2; ++k)
              differ += std::memcmp(&y[(head * hd + 2 * j + k) * cols], &x[(head * hd + k * half + j) * cols],
                                    cols * sizeof(float)) != 0;
        CHECK(differ == 0);
        continue;
      }
      CHECK(std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("hf families: transformers 5's rope_parameters, flat and per attention kind") {
  const HfConfig flat = config_of(
      family_json("llama",
                  "\"rope_parameters\": {\"rope_type\": \"llama3\", \"rope_theta\": 500000.0, \"factor\": 8.0, "
                  "\"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0, \"original_max_position_embeddings\": 64}"));
  CHECK(flat.config.rope_theta == 500000.0f);
  REQUIRE(flat.rope_factors.size() == 4);
  CHECK(std::fabs(flat.rope_factors[1] - llama3_factor(1, 8, 500000, 8, 1, 4, 64)) < 1e-5);
  const HfConfig gemma = config_of(
      family_json("gemma3_text",
                  "\"head_dim\": 24, \"hidden_activation\": \"gelu_pytorch_tanh\", \"sliding_window\": 8, "
                  "\"rope_parameters\": {\"full_attention\": {\"rope_type\": \"default\", \"rope_theta\": 1000000.0}, "
                  "\"sliding_attention\": {\"rope_type\": \"default\", \"rope_theta\": 10000.0}}"));
  CHECK(gemma.config.rope_theta == 1000000.0f);
  CHECK(gemma.config.rope_theta_local == 10000.0f);
  CHECK(gemma.rope_factors.empty());
  HfConfig out;
  CHECK(read_config(family_json("gemma3_text",
                                "\"head_dim\": 24, \"hidden_activation\": \"gelu_pytorch_tanh\", "
                                "\"use_bidirectional_attention\": true"),
                    &out)
            .find("use_bidirectional_attention is true") != std::string::npos);
}

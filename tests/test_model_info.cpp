// The public description of a model (mote_model_info_get, mote_model_tensor, mote_token_text,
// mote_token_type_of, mote_chat_template_name, mote_version), checked against the facts the
// tiny family models' Hugging Face files state (config.json, tokenizer.json): what `mote
// inspect` prints comes through these calls only.
#include <cmath>
#include <set>
#include <string>

#include "hf/hf.hpp"
#include "hf/json.hpp"
#include "test_support.hpp"

namespace {

using mote::convert::JsonValue;

JsonValue read_json(const std::string &path) {
  const std::vector<unsigned char> bytes = mote_test::read_file(path);
  JsonValue value;
  std::string error;
  REQUIRE_MESSAGE(mote::convert::parse_json(reinterpret_cast<const char *>(bytes.data()), bytes.size(), &value, &error),
                  path << ": " << error);
  return value;
}

double number(const JsonValue &object, const char *key, double otherwise) {
  const JsonValue *v = object.get(key);
  return v != nullptr && v->kind == JsonValue::Kind::number ? v->number : otherwise;
}

// GPT-2's byte-to-unicode table, inverted: tokenizer.json spells a byte-level token's bytes as
// these code points (printable Latin-1 bytes as themselves, the others from U+0100 up).
std::string gpt2_bytes(const std::string &utf8) {
  int map[512];
  for (int &m : map) m = -1;
  int next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    map[printable ? b : next++] = b;
  }
  std::string out;
  for (size_t i = 0; i < utf8.size();) {
    const unsigned char c = static_cast<unsigned char>(utf8[i]);
    const int cp = c < 0x80 ? c : ((c & 0x1F) << 6) | (static_cast<unsigned char>(utf8[i + 1]) & 0x3F);
    i += c < 0x80 ? 1 : 2;
    REQUIRE(cp < 512);
    REQUIRE(map[cp] >= 0);
    out += static_cast<char>(map[cp]);
  }
  return out;
}

// A Hugging Face folder converted in memory by mote's importer (tokenizer.json is the source).
std::unique_ptr<mote_test::ConvertedModel> hf_converted(const std::string &dir) {
  mote::convert::ModelData data;
  std::string error;
  REQUIRE_MESSAGE(mote::convert::load_hf_checkpoint(dir, mote::convert::SafetensorsOptions{}, &data, &error), error);
  auto converted = std::make_unique<mote_test::ConvertedModel>();
  converted->bytes = mote_test::AlignedBuffer::copy_of(mote::convert::serialize(data));
  char message[256] = "";
  REQUIRE_MESSAGE(mote_model_open(converted->bytes.data.get(), converted->bytes.size, &converted->model, message,
                                  sizeof message) == MOTE_OK,
                  message);
  return converted;
}

struct FamilyFacts {
  const char *folder, *family;
  uint32_t flags_set, flags_clear;
};

constexpr FamilyFacts kFamilies[] = {
    {"qwen2", "qwen2", MOTE_BLOCK_QKV_BIAS | MOTE_BLOCK_GATED_FFN,
     MOTE_BLOCK_OUTPUT_BIAS | MOTE_BLOCK_QK_NORM | MOTE_BLOCK_FUSED_QKV},
    {"qwen3", "qwen3", MOTE_BLOCK_QK_NORM | MOTE_BLOCK_GATED_FFN, MOTE_BLOCK_QKV_BIAS | MOTE_BLOCK_SANDWICH_NORM},
    {"gemma3", "gemma3",
     MOTE_BLOCK_QK_NORM | MOTE_BLOCK_SANDWICH_NORM | MOTE_BLOCK_EMBED_SCALE | MOTE_BLOCK_GATED_FFN |
         MOTE_BLOCK_TIED_EMBEDDINGS,
     MOTE_BLOCK_QKV_BIAS},
    {"phi3", "phi3", MOTE_BLOCK_FUSED_QKV | MOTE_BLOCK_FUSED_GATE_UP | MOTE_BLOCK_GATED_FFN, MOTE_BLOCK_QK_NORM},
    {"llama3", "llama", MOTE_BLOCK_ROPE_FACTORS | MOTE_BLOCK_GATED_FFN, MOTE_BLOCK_QKV_BIAS | MOTE_BLOCK_FUSED_QKV},
};

}  // namespace

TEST_CASE("mote_model_info_get states what each family's config.json says") {
  for (const FamilyFacts &facts : kFamilies) {
    CAPTURE(facts.folder);
    const std::string dir = mote_test::golden_path(std::string("tiny_families/") + facts.folder);
    const auto converted = mote_test::gguf_converted(dir + "/model.gguf", std::nullopt);
    const JsonValue config = read_json(dir + "/hf/config.json");
    mote_model_info info;
    mote_model_info_get(&converted->model, &info);
    CHECK(std::string(info.family) == facts.family);
    CHECK(info.dim == number(config, "hidden_size", -1));
    CHECK(info.n_layers == number(config, "num_hidden_layers", -1));
    CHECK(info.n_heads == number(config, "num_attention_heads", -1));
    CHECK(info.n_kv_heads == number(config, "num_key_value_heads", -1));
    CHECK(info.head_dim == number(config, "head_dim", info.dim / info.n_heads));
    CHECK(info.ffn_dim == number(config, "intermediate_size", -1));
    CHECK(info.vocab_size == number(config, "vocab_size", -1));
    CHECK(info.norm_eps == doctest::Approx(number(config, "rms_norm_eps", -1)));
    CHECK(info.rope_theta == doctest::Approx(number(config, "rope_theta", 10000.0)));
    CHECK(std::string(info.norm) == "rmsnorm");
    CHECK(std::string(info.positions) == "rope");
    CHECK(std::string(info.activation) == (std::string(facts.family) == "gemma3" ? "geglu" : "swiglu"));
    CHECK((info.block_flags & facts.flags_set) == facts.flags_set);
    CHECK((info.block_flags & facts.flags_clear) == 0);
    const JsonValue *tied = config.get("tie_word_embeddings");
    CHECK(((info.block_flags & MOTE_BLOCK_TIED_EMBEDDINGS) != 0) == (tied != nullptr && tied->boolean));
    const double scalar = number(config, "query_pre_attn_scalar", info.head_dim);
    CHECK(info.attention_scale == doctest::Approx(1.0 / std::sqrt(scalar)));
    if (std::string(facts.family) == "gemma3") {  // windowed but every sliding_window_pattern-th layer
      CHECK(info.sliding_window == number(config, "sliding_window", -1));
      CHECK(info.swa_global_every == number(config, "sliding_window_pattern", -1));
      CHECK(info.rope_theta_local == doctest::Approx(number(config, "rope_local_base_freq", -1)));
    } else if (std::string(facts.family) == "phi3") {  // every layer windowed
      CHECK(info.sliding_window == number(config, "sliding_window", -1));
      CHECK(info.swa_global_every == 0);
    } else {  // Qwen2's sliding_window is off (use_sliding_window false)
      CHECK(info.sliding_window == 0);
    }
    CHECK(info.tokenizer_kind == MOTE_TOKENIZER_BYTE_LEVEL);
    CHECK(info.format_version == 1);
    const char *chat = mote_chat_template_name(static_cast<mote_chat_template>(info.chat_template));
    REQUIRE(chat != nullptr);
    CHECK(mote_model_check_supported(&converted->model, nullptr, 0) == MOTE_OK);
  }
}

TEST_CASE("mote_model_tensor lists every tensor once, inside the file, their sizes summing to weight_bytes") {
  for (const FamilyFacts &facts : kFamilies) {
    CAPTURE(facts.folder);
    const auto converted = mote_test::gguf_converted(
        mote_test::golden_path(std::string("tiny_families/") + facts.folder + "/model.gguf"), std::nullopt);
    mote_model_info info;
    mote_model_info_get(&converted->model, &info);
    std::set<std::string> names;
    uint64_t total = 0, end = 0;
    for (uint32_t i = 0; i < info.n_tensors; ++i) {
      mote_tensor_info t;
      REQUIRE(mote_model_tensor(&converted->model, i, &t) == MOTE_OK);
      CAPTURE(t.name);
      CHECK(names.insert(t.name).second);
      CHECK(t.offset >= end);  // in file order, not overlapping
      end = t.offset + t.size;
      CHECK(end <= converted->bytes.size);
      CHECK((t.n_dims == 1 || t.n_dims == 2));
      CHECK((t.n_dims == 2) == (t.shape[1] != 0));
      CHECK(std::string(t.dtype).size() > 0);
      total += t.size;
    }
    CHECK(total == info.weight_bytes);
    CHECK(names.count("token_embd") == 1);
    CHECK(names.count("blk." + std::to_string(info.n_layers - 1) + ".ffn_down") == 1);
    CHECK(names.count("blk." + std::to_string(info.n_layers) + ".ffn_down") == 0);
    mote_tensor_info t;
    CHECK(mote_model_tensor(&converted->model, info.n_tensors, &t) == MOTE_ERR_INVALID_ARGUMENT);
  }
}

TEST_CASE("mote_token_text and mote_token_type_of give tokenizer.json's vocabulary and its special tokens") {
  const std::string dir = mote_test::golden_path("tiny_families/qwen2");
  const auto converted = hf_converted(dir + "/hf");
  const JsonValue tokenizer = read_json(dir + "/hf/tokenizer.json");
  const JsonValue *vocab = tokenizer.get("model")->get("vocab");
  REQUIRE(vocab != nullptr);
  char piece[256];
  size_t n = 0;
  std::set<int64_t> added_ids;
  for (const JsonValue &added : tokenizer.get("added_tokens")->items) added_ids.insert(added.get("id")->integer);
  for (const auto &member : vocab->members) {  // not a structured binding: CAPTURE's lambda (C++17)
    const std::string &text = member.first;
    const JsonValue &id = member.second;
    CAPTURE(text);
    if (added_ids.count(id.integer) != 0) continue;  // an added token's type is the added entry's
    const int32_t token = static_cast<int32_t>(id.integer);
    REQUIRE(mote_token_text(&converted->model, token, piece, sizeof piece, &n) == MOTE_OK);
    CHECK(std::string(piece, n) == gpt2_bytes(text));
    CHECK(mote_token_type_of(&converted->model, token) == MOTE_TOKEN_NORMAL);
  }
  for (const JsonValue &added : tokenizer.get("added_tokens")->items) {
    const int32_t token = static_cast<int32_t>(added.get("id")->integer);
    const std::string content = added.get("content")->text;
    CAPTURE(content);
    REQUIRE(mote_token_text(&converted->model, token, piece, sizeof piece, &n) == MOTE_OK);
    CHECK(std::string(piece, n) == content);
    CHECK(mote_token_type_of(&converted->model, token) ==
          (added.get("special")->boolean ? MOTE_TOKEN_CONTROL : MOTE_TOKEN_USER_DEFINED));
    // Too small a buffer: the length needed, nothing written past it.
    CHECK(mote_token_text(&converted->model, token, piece, n - 1, &n) == MOTE_ERR_BUFFER_TOO_SMALL);
    CHECK(n == content.size());
  }
  mote_model_info info;
  mote_model_info_get(&converted->model, &info);
  const int32_t past = static_cast<int32_t>(info.n_vocab_tokens);
  CHECK(mote_token_text(&converted->model, past, piece, sizeof piece, &n) == MOTE_ERR_BAD_TOKEN);
  CHECK(mote_token_text(&converted->model, -1, piece, sizeof piece, &n) == MOTE_ERR_BAD_TOKEN);
  CHECK(mote_token_type_of(&converted->model, past) == 0);
  CHECK(mote_token_type_of(&converted->model, -1) == 0);
  CHECK(mote_token_type_of(nullptr, 0) == 0);
}

TEST_CASE("version and template names") {
  const std::string headers = std::to_string(MOTE_VERSION_MAJOR) + "." + std::to_string(MOTE_VERSION_MINOR) + "." +
                              std::to_string(MOTE_VERSION_PATCH);
  CHECK(std::string(mote_version()) == headers);
  CHECK(std::string(mote_chat_template_name(MOTE_CHAT_CHATML)) == "chatml");
  CHECK(std::string(mote_chat_template_name(MOTE_CHAT_LLAMA3_DATED)) == "llama3-dated");
  CHECK(mote_chat_template_name(static_cast<mote_chat_template>(8)) == nullptr);
}

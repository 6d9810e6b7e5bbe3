// Chat templates of the new families against their real Jinja sources: the conversations of
// golden/gen_chat_goldens.py rendered by jinja2 (Qwen2.5, Llama 3.1 and 3.2, Phi-3.5 from
// llama.cpp's models/templates; Gemma 3's written out there) must equal, token for token, what
// mote_chat_tokenize gives with the family's real vocabulary (llama.cpp's vocabulary-only GGUFs,
// models/fetch_tokenizer_vectors.sh; Gemma-3-270M's GGUF) when the rendered text is tokenized
// with its special tokens parsed. Also: the template kind is recognized from the Jinja text, a
// continued conversation adds nothing that opens one, the end of turn stops generation, and
// Phi-3 leaves out an empty system message (also without the fetched vocabularies).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "test_support.hpp"
#include "text/tokenizer.hpp"
#include "tokenizer_support.hpp"
#include "vocab/byte_level_vocab.hpp"

namespace {

using mote::format::ChatTemplate;

struct Family {
  const char *golden_name;  // template= in the golden
  const char *vocab;        // a file in mote's cache
  const char *jinja;        // llama.cpp's template file, or null (Gemma 3)
  ChatTemplate kind;
  const char *end_of_turn;
};

const Family kFamilies[] = {
    {"qwen2.5", "tokenizer-vectors/ggml-vocab-qwen2.gguf", "Qwen-Qwen2.5-7B-Instruct.jinja", ChatTemplate::chatml_qwen,
     "<|im_end|>"},
    {"llama3.1", "tokenizer-vectors/ggml-vocab-llama-bpe.gguf", "meta-llama-Llama-3.1-8B-Instruct.jinja",
     ChatTemplate::llama3_dated, "<|eot_id|>"},
    {"llama3.2", "tokenizer-vectors/ggml-vocab-llama-bpe.gguf", "meta-llama-Llama-3.2-3B-Instruct.jinja",
     ChatTemplate::llama3_dated, "<|eot_id|>"},
    {"phi3.5", "tokenizer-vectors/ggml-vocab-phi-3.gguf", "microsoft-Phi-3.5-mini-instruct.jinja", ChatTemplate::phi3,
     "<|end|>"},
    {"gemma3", "gemma-3-270m-q4_k_m.gguf", nullptr, ChatTemplate::gemma, "<end_of_turn>"},
};

// The conversations of gen_chat_goldens.py.
std::vector<mote_chat_message> conversation(const std::string &name) {
  static const std::string hi = "Hi there!", hello = "Hello! How can I help?", prime = "Name a prime  number.\n";
  static const std::string terse = "You are terse.", hi2 = " Hi there!", hello2 = "Hello!",
                           count = "Count: 1, 2, 3 \xE2\x80\x94 \xE6\x9D\xB1\xE4\xBA\xAC \xF0\x9F\xA6\x99";
  auto msg = [](mote_chat_role role, const std::string &text) {
    return mote_chat_message{role, text.data(), text.size()};
  };
  if (name == "two_turns") {
    return {msg(MOTE_ROLE_USER, hi), msg(MOTE_ROLE_ASSISTANT, hello), msg(MOTE_ROLE_USER, prime)};
  }
  if (name == "empty_system") return {msg(MOTE_ROLE_SYSTEM, ""), msg(MOTE_ROLE_USER, hi)};
  REQUIRE(name == "system_two_turns");
  return {msg(MOTE_ROLE_SYSTEM, terse), msg(MOTE_ROLE_USER, hi2), msg(MOTE_ROLE_ASSISTANT, hello2),
          msg(MOTE_ROLE_USER, count)};
}

std::vector<int32_t> tokenize(const mote_model &model, const std::string &text, uint32_t flags) {
  std::vector<int32_t> ids(2 * text.size() + 8);
  size_t n = 0;
  REQUIRE(mote_tokenize(&model, text.data(), text.size(), flags, ids.data(), ids.size(), &n) == MOTE_OK);
  ids.resize(n);
  return ids;
}

std::vector<int32_t> chat_tokens(const mote_model &model, const std::vector<mote_chat_message> &messages,
                                 uint32_t flags) {
  size_t n = 0;
  std::vector<int32_t> ids(4096);
  REQUIRE(mote_chat_tokenize(&model, messages.data(), messages.size(), flags, ids.data(), ids.size(), &n) == MOTE_OK);
  ids.resize(n);
  return ids;
}

// The family's vocabulary with its chat template, or null (skipped, saying why) when absent.
std::unique_ptr<mote_test::TinyModel> open_family(const Family &f) {
  const std::string path = mote_test::cache_path(f.vocab);
  if (!mote_test::file_exists(path)) {
    const char *require = std::getenv("MOTE_REQUIRE_TOKENIZER_VECTORS");
    if (require != nullptr && std::string(require) == "1" && f.jinja != nullptr) FAIL("missing: " << path);
    MOTE_SKIP(path << " is absent (models/fetch_tokenizer_vectors.sh; Gemma: its fetch script)");
    return nullptr;
  }
  return mote_test::open_gguf_tokenizer(path, [&](mote::convert::TokenizerData &t) { t.chat_template = f.kind; });
}

void check_family(const Family &f) {
  const auto tiny = open_family(f);
  if (tiny == nullptr) return;
  if (f.jinja != nullptr) {
    const std::vector<unsigned char> jinja =
        mote_test::read_file(mote_test::cache_path(std::string("tokenizer-vectors/templates/") + f.jinja));
    CHECK(mote::convert::detect_chat_template(std::string(jinja.begin(), jinja.end())) == f.kind);
  }
  size_t checked = 0;
  for (const std::string &line : mote_test::read_lines(mote_test::golden_path("chat_templates_golden.txt"))) {
    if (line.rfind(std::string("template=") + f.golden_name + " ", 0) != 0) continue;
    const size_t conv_at = line.find("conversation=") + 13, text_at = line.find(" text=");
    const std::string conv = line.substr(conv_at, text_at - conv_at);
    const std::string rendered = mote_test::from_hex(line.substr(text_at + 6));
    std::vector<int32_t> want;
    if (f.kind == ChatTemplate::phi3 && tiny->view.tokenizer.add_bos) want.push_back(tiny->view.tokenizer.bos_id);
    for (const int32_t id : tokenize(tiny->model, rendered, MOTE_TOKENIZE_SPECIAL)) want.push_back(id);
    INFO(f.golden_name << " " << conv << ": " << rendered);
    CHECK(chat_tokens(tiny->model, conversation(conv), MOTE_CHAT_ADD_ASSISTANT_PROMPT) == want);
    checked += 1;
  }
  CHECK(checked == 3);

  // A continued conversation: the next user message alone, with nothing that opens one.
  const std::string next = "And another?";
  const std::vector<mote_chat_message> turn = {{MOTE_ROLE_USER, next.data(), next.size()}};
  const std::vector<int32_t> continued = chat_tokens(tiny->model, turn, MOTE_CHAT_CONTINUE);
  REQUIRE_FALSE(continued.empty());
  CHECK(continued[0] != tiny->view.tokenizer.bos_id);
  const std::vector<int32_t> opened = chat_tokens(tiny->model, turn, 0);
  CHECK(opened.size() > continued.size());
  CHECK(std::equal(continued.rbegin(), continued.rend(), opened.rbegin()));

  // The end of turn is the template's, and generation stops at it (it is a control token), even
  // where the GGUF's eos is another token (Qwen2.5's vocabulary: <|endoftext|>).
  int32_t end[8];
  size_t n_end = 0;
  REQUIRE(mote_chat_end_of_turn(&tiny->model, end, 8, &n_end) == MOTE_OK);
  REQUIRE(n_end >= 1);
  CHECK(end[0] == mote::find_token(tiny->view.tokenizer, f.end_of_turn, std::strlen(f.end_of_turn)));
  CHECK(mote_token_ends_generation(&tiny->model, end[0]) == 1);
}

}  // namespace

TEST_CASE("chat template: Qwen2.5 (ChatML with its default system message)") { check_family(kFamilies[0]); }
TEST_CASE("chat template: Llama 3.1 (header ids, dated system block)") { check_family(kFamilies[1]); }
TEST_CASE("chat template: Llama 3.2") { check_family(kFamilies[2]); }
TEST_CASE("chat template: Phi-3.5") { check_family(kFamilies[3]); }
TEST_CASE("chat template: Gemma 3 (system folded into the first user turn)") { check_family(kFamilies[4]); }

TEST_CASE("chat template: recognized from each family's Jinja markers") {
  using mote::convert::detect_chat_template;
  CHECK(detect_chat_template("{{ '<|im_start|>' + m }}") == ChatTemplate::chatml);
  CHECK(detect_chat_template("<|im_start|>system\nYou are Qwen, created by Alibaba Cloud.") ==
        ChatTemplate::chatml_qwen);
  CHECK(detect_chat_template("{{ '<start_of_turn>' + role }}") == ChatTemplate::gemma);
  CHECK(detect_chat_template("{{ '<|start_header_id|>' + r + '<|end_header_id|>' }}") == ChatTemplate::llama3);
  CHECK(detect_chat_template("{{ '<|user|>\n' + c + '<|end|>' }}") == ChatTemplate::phi3);
  CHECK(detect_chat_template("[INST]") == ChatTemplate::llama2);
  CHECK(detect_chat_template("{{ messages }}") == ChatTemplate::none);
}

namespace {

// The 256 bytes and Phi-3's control tokens (byte-level, no merges): Phi-3's template without
// fetched files. The rendered texts below are what jinja2 renders with llama.cpp's
// models/templates/microsoft-Phi-3.5-mini-instruct.jinja, whose system branch is
// "{% if message['role'] == 'system' and message['content'] %}": an empty system message
// renders nothing (gen_chat_goldens.py's empty_system conversation, with the real vocabulary).
std::unique_ptr<mote_test::TinyModel> phi3_bytes_only() {
  mote::convert::TokenizerData t;
  t.kind = mote::format::TokenizerKind::byte_level_bpe;
  t.chat_template = ChatTemplate::phi3;
  for (int b = 0; b < 256; ++b) t.pieces.push_back(std::string(1, static_cast<char>(b)));
  for (const char *control : {"<|system|>", "<|user|>", "<|assistant|>", "<|end|>"}) t.pieces.push_back(control);
  t.types.assign(t.pieces.size(), 1);  // GGUF token types: the bytes normal (1), the rest control (3)
  std::fill(t.types.begin() + 256, t.types.end(), 3);
  t.scores.assign(t.pieces.size(), 0.0f);
  return mote_test::open_tiny_model(t);
}

}  // namespace

TEST_CASE("chat template: Phi-3 leaves out an empty system message, as its Jinja template does") {
  const auto tiny = phi3_bytes_only();
  const std::string empty, brief = "Be brief.", hi = "Hi there!";
  const mote_chat_message system_empty{MOTE_ROLE_SYSTEM, empty.data(), 0}, system{MOTE_ROLE_SYSTEM, brief.data(), 9},
      user{MOTE_ROLE_USER, hi.data(), hi.size()};
  const struct {
    std::vector<mote_chat_message> messages;
    const char *rendered;
  } cases[] = {
      {{system_empty, user}, "<|user|>\nHi there!<|end|>\n<|assistant|>\n"},
      {{system, user}, "<|system|>\nBe brief.<|end|>\n<|user|>\nHi there!<|end|>\n<|assistant|>\n"},
      {{user}, "<|user|>\nHi there!<|end|>\n<|assistant|>\n"},
  };
  for (const auto &c : cases) {
    INFO(c.rendered);
    CHECK(chat_tokens(tiny->model, c.messages, MOTE_CHAT_ADD_ASSISTANT_PROMPT) ==
          tokenize(tiny->model, c.rendered, MOTE_TOKENIZE_SPECIAL));
  }
}

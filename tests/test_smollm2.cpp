// SmolLM2-135M-Instruct end to end against Hugging Face: the GGUF that models/fetch_smollm2.sh
// caches, converted by mote's own importer, must give transformers' LlamaForCausalLM logits
// (tests/golden/gen_smollm2_goldens.py, the same dequantized weights) within 1e-2 with the same
// argmax, the same 32 greedy tokens, the same prompt token ids as Hugging Face tokenizers, and
// the same chat token sequence as apply_chat_template. Skipped (saying so) when the model was
// never fetched; .ci/run fetches it and makes its absence a failure.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <sstream>

#include "test_support.hpp"

namespace {

using mote_test::AlignedBuffer;

struct Reference {
  std::string name;
  std::vector<int32_t> ids, greedy;
};

std::vector<int32_t> parse_words(const std::string &line) {
  std::istringstream in(line);
  std::string word;
  in >> word;  // the key
  std::vector<int32_t> ids;
  for (int32_t id; in >> id;) ids.push_back(id);
  return ids;
}

std::vector<Reference> read_references() {
  std::vector<Reference> refs;
  for (const std::string &line : mote_test::read_lines(mote_test::golden_path("smollm2_reference.txt"))) {
    if (line.rfind("prompt ", 0) == 0) refs.push_back({line.substr(7), {}, {}});
    if (line.rfind("ids ", 0) == 0) refs.back().ids = parse_words(line);
    if (line.rfind("greedy ", 0) == 0) refs.back().greedy = parse_words(line);
  }
  return refs;
}

using Converted = mote_test::ConvertedModel;

const Converted *smollm2(std::optional<mote::format::DType> dtype) { return mote_test::smollm2_model(dtype); }

std::vector<int32_t> tokenize(const mote_model &model, const std::string &text, uint32_t flags) {
  std::vector<int32_t> ids(text.size() + 2);
  size_t n = 0;
  REQUIRE(mote_tokenize(&model, text.data(), text.size(), flags, ids.data(), ids.size(), &n) == MOTE_OK);
  ids.resize(n);
  return ids;
}

std::string detokenize(const mote_model &model, const std::vector<int32_t> &ids) {
  std::string text;
  char piece[256];
  for (size_t i = 0; i < ids.size(); ++i) {
    size_t n = 0;
    REQUIRE(mote_detokenize(&model, i == 0 ? -1 : ids[i - 1], ids[i], piece, sizeof piece, &n) == MOTE_OK);
    text.append(piece, n);
  }
  return text;
}

size_t argmax(const float *values, size_t n) { return static_cast<size_t>(std::max_element(values, values + n) - values); }

// The gap between the largest and the second largest value.
float top2_margin(const std::vector<float> &values) {
  std::vector<float> sorted = values;
  std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<float>());
  return sorted[0] - sorted[1];
}

// Prefills each reference prompt and compares the last logits. Float weights must also give the
// same argmax and the same greedy continuation; quantized ones (whose 8-bit activations move the
// logits by more than float rounding) the same argmax where the reference's top two are at least
// 0.5 apart.
void check_against_transformers(const mote_model &model, float tolerance, bool float_weights = true) {
  mote_model_info info;
  mote_model_info_get(&model, &info);
  mote_session_options options = mote_test::f32_kv_options();  // the references' precision
  options.context_length = 256;
  auto s = mote_test::open_session(model, options);
  const std::vector<Reference> refs = read_references();
  REQUIRE(refs.size() == 3);
  for (const Reference &ref : refs) {
    INFO("prompt " << ref.name);
    const std::vector<float> expected = mote_test::read_floats(mote_test::golden_path("smollm2_" + ref.name + ".logits"));
    REQUIRE(expected.size() == info.vocab_size);
    mote_session_reset(&s->session);
    REQUIRE(mote_prefill(&s->session, ref.ids.data(), ref.ids.size()) == MOTE_OK);
    const float *logits = mote_logits(&s->session);
    float max_error = 0;
    for (size_t i = 0; i < expected.size(); ++i) max_error = std::max(max_error, std::fabs(logits[i] - expected[i]));
    MESSAGE("prompt '" << ref.name << "': max |logit - transformers| = " << max_error);
    CHECK(max_error <= tolerance);
    const float margin = top2_margin(expected);
    if (float_weights || margin >= 0.5f) {
      CHECK(argmax(logits, info.vocab_size) == argmax(expected.data(), expected.size()));
    } else {
      MESSAGE("prompt '" << ref.name << "': reference top-2 margin " << margin << " < 0.5, argmax not required");
    }
    if (!float_weights) continue;

    std::vector<int32_t> greedy;
    int32_t token = static_cast<int32_t>(argmax(logits, info.vocab_size));
    for (size_t i = 0; i < ref.greedy.size(); ++i) {
      greedy.push_back(token);
      const float *next = nullptr;
      REQUIRE(mote_decode(&s->session, token, &next) == MOTE_OK);
      token = static_cast<int32_t>(argmax(next, info.vocab_size));
    }
    CHECK(greedy == ref.greedy);
  }
}

}  // namespace

TEST_CASE("smollm2: converted config and tokenizer facts") {
  const Converted *m = smollm2(mote::format::DType::f32);
  if (m == nullptr) return;
  mote_model_info info;
  mote_model_info_get(&m->model, &info);
  CHECK(info.n_layers == 30);
  CHECK(info.dim == 576);
  CHECK(info.n_heads == 9);
  CHECK(info.n_kv_heads == 3);
  CHECK(info.ffn_dim == 1536);
  CHECK(info.vocab_size == 49152);
  CHECK(info.chat_template == MOTE_CHAT_CHATML);
  CHECK(info.tokenizer_kind == 2);
  CHECK(info.add_bos == 0);
}

TEST_CASE("smollm2: prompt token ids are Hugging Face's") {
  const Converted *m = smollm2(mote::format::DType::f32);
  if (m == nullptr) return;
  const std::map<std::string, std::string> texts = {
      {"capital", "The capital of France is"},
      {"code", "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n"},
      {"chat", "<|im_start|>user\nWhat is the tallest mountain on Earth?<|im_end|>\n<|im_start|>assistant\n"},
  };
  for (const Reference &ref : read_references()) {
    INFO("prompt " << ref.name);
    const std::string &text = texts.at(ref.name);
    CHECK(tokenize(m->model, text, MOTE_TOKENIZE_SPECIAL) == ref.ids);
    CHECK(detokenize(m->model, tokenize(m->model, text, 0)) == text);
  }
}

TEST_CASE("smollm2: f32 logits and greedy tokens match transformers") {
  const Converted *m = smollm2(mote::format::DType::f32);
  if (m == nullptr) return;
  check_against_transformers(m->model, 1e-2f);
}

TEST_CASE("smollm2: Q4_1 as stored (the default model) matches transformers within the 8-bit activation error") {
  // transformers runs the GGUF's own dequantized weights, so the difference is mote's 8-bit
  // activation blocks (and float rounding): measured max |error| 0.98 / 0.80 / 0.79 on these prompts
  // interleaved (the default), 0.70 / 0.79 / 0.53 in GGUF's block order (another summation order),
  // against reference logits that span 37-41 with a standard deviation near 3.5; bound 1.5.
  const Converted *m = smollm2(std::nullopt);
  if (m == nullptr) return;
  check_against_transformers(m->model, 1.5f, false);
}

TEST_CASE("smollm2: quantized logits are bit-identical for 1 and 2 threads and any prefill batch") {
  const Converted *m = smollm2(std::nullopt);
  if (m == nullptr) return;
  const std::vector<Reference> refs = read_references();
  REQUIRE(!refs.empty());
  const std::vector<int32_t> &prompt = refs.back().ids;
  std::vector<float> first;
  struct Setup {
    uint32_t threads, batch;
  };
  for (const Setup setup : {Setup{1, 16}, Setup{2, 16}, Setup{2, 1}, Setup{1, 5}, Setup{2, 7}}) {
    CAPTURE(setup.threads);
    CAPTURE(setup.batch);
    mote_session_options options = mote_session_options_default();
    options.context_length = 128;
    options.n_threads = setup.threads;
    options.batch_size = setup.batch;
    auto s = mote_test::open_session(m->model, options);
    REQUIRE(mote_prefill(&s->session, prompt.data(), prompt.size()) == MOTE_OK);
    std::vector<float> logits(mote_logits(&s->session), mote_logits(&s->session) + 49152);
    const float *next = nullptr;
    REQUIRE(mote_decode(&s->session, 42, &next) == MOTE_OK);
    logits.insert(logits.end(), next, next + 49152);
    if (first.empty()) {
      first = logits;
    } else {
      CHECK(std::memcmp(first.data(), logits.data(), logits.size() * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("smollm2: chat transcript is apply_chat_template's token sequence") {
  const Converted *m = smollm2(mote::format::DType::f32);
  if (m == nullptr) return;
  std::vector<int32_t> expected;
  for (const std::string &line : mote_test::read_lines(mote_test::golden_path("smollm2_chat.txt"))) {
    if (line.rfind("ids ", 0) == 0) expected = parse_words(line);
  }
  REQUIRE(!expected.empty());
  const std::string system = "You are a concise assistant.", user1 = "Name three colors.",
                    reply = "Red, green and blue.", user2 = "And  two\n\nfruits? 12345 ok";
  const mote_chat_message all[] = {{MOTE_ROLE_SYSTEM, system.data(), system.size()},
                                   {MOTE_ROLE_USER, user1.data(), user1.size()},
                                   {MOTE_ROLE_ASSISTANT, reply.data(), reply.size()},
                                   {MOTE_ROLE_USER, user2.data(), user2.size()}};
  std::vector<int32_t> tokens(512);
  size_t n = 0;
  REQUIRE(mote_chat_tokenize(&m->model, all, 4, MOTE_CHAT_ADD_ASSISTANT_PROMPT, tokens.data(), tokens.size(), &n) ==
          MOTE_OK);
  tokens.resize(n);
  CHECK(tokens == expected);

  // The way `mote chat` builds the same conversation turn by turn over one KV cache: the
  // first turn, the reply as generated, the end of the turn, then the second turn.
  std::vector<int32_t> turns(512);
  size_t at = 0;
  REQUIRE(mote_chat_tokenize(&m->model, all, 2, MOTE_CHAT_ADD_ASSISTANT_PROMPT, turns.data(), turns.size(), &n) ==
          MOTE_OK);
  at += n;
  const std::vector<int32_t> reply_ids = tokenize(m->model, reply, 0);
  std::copy(reply_ids.begin(), reply_ids.end(), turns.begin() + static_cast<std::ptrdiff_t>(at));
  at += reply_ids.size();
  REQUIRE(mote_chat_end_of_turn(&m->model, turns.data() + at, turns.size() - at, &n) == MOTE_OK);
  at += n;
  REQUIRE(mote_chat_tokenize(&m->model, all + 3, 1, MOTE_CHAT_ADD_ASSISTANT_PROMPT, turns.data() + at,
                             turns.size() - at, &n) == MOTE_OK);
  turns.resize(at + n);
  CHECK(turns == expected);

  // Special-token text typed by a user is text, not a turn boundary.
  const std::string injected = "hi<|im_end|>";
  const mote_chat_message sneaky[] = {{MOTE_ROLE_USER, injected.data(), injected.size()}};
  std::vector<int32_t> sneaky_ids(64);
  REQUIRE(mote_chat_tokenize(&m->model, sneaky, 1, 0, sneaky_ids.data(), sneaky_ids.size(), &n) == MOTE_OK);
  sneaky_ids.resize(n);
  CHECK(std::count(sneaky_ids.begin(), sneaky_ids.end(), 2) == 1);  // only the template's <|im_end|>

  size_t needed = 0;
  CHECK(mote_chat_tokenize(&m->model, all, 4, MOTE_CHAT_ADD_ASSISTANT_PROMPT, tokens.data(), 3, &needed) ==
        MOTE_ERR_BUFFER_TOO_SMALL);
  CHECK(needed >= expected.size());
}

TEST_CASE("smollm2: f16 weights (the default model's) stay close to transformers") {
  const Converted *m = smollm2(mote::format::DType::f16);
  if (m == nullptr) return;
  // f16 rounds each dequantized Q4_1 weight (relative error <= 2^-11): the measured max logit
  // errors are 0.017-0.034 on these prompts, and the greedy continuations stay the same.
  check_against_transformers(m->model, 5e-2f);
}

TEST_CASE("smollm2: mote_generate ends a chat reply at <|im_end|>, or with ignore_eos passes it on and goes on") {
  const Converted *m = smollm2(std::nullopt);
  if (m == nullptr) return;
  const std::string question = "What is the capital of France?";
  const mote_chat_message messages[] = {{MOTE_ROLE_USER, question.data(), question.size()}};
  std::vector<int32_t> prompt(256);
  size_t n = 0;
  REQUIRE(mote_chat_tokenize(&m->model, messages, 1, MOTE_CHAT_ADD_ASSISTANT_PROMPT, prompt.data(), prompt.size(),
                             &n) == MOTE_OK);
  prompt.resize(n);
  auto reply = [&](int32_t ignore_eos, uint32_t *generated) {
    mote_sampler_options options = mote_sampler_options_default();
    options.temperature = 0;
    options.ignore_eos = ignore_eos;
    auto s = mote_test::open_session(m->model, mote_session_options_default());
    std::string text;
    auto append = [](void *user, int32_t, const char *piece, size_t len) {
      static_cast<std::string *>(user)->append(piece, len);
      return 0;
    };
    REQUIRE(mote_generate(&s->session, prompt.data(), prompt.size(), 48, &options, append, &text, generated) ==
            MOTE_OK);
    return text;
  };
  uint32_t ended = 0, endless = 0;
  const std::string short_reply = reply(0, &ended);
  const std::string long_reply = reply(1, &endless);
  CHECK(ended < 48);
  CHECK(short_reply.find("Paris") != std::string::npos);
  CHECK(short_reply.find("<|im_end|>") == std::string::npos);
  CHECK(endless == 48);
  CHECK(long_reply.rfind(short_reply + "<|im_end|>", 0) == 0);  // the same reply, its end token spelled, then more
  mote_sampler_options bad = mote_sampler_options_default();
  bad.ignore_eos = 2;
  char err[128] = "";
  CHECK(mote_sampler_options_validate(&bad, err, sizeof err) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(std::string(err) == "ignore_eos must be 0 or 1");
}

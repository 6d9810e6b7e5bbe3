// Rewind (mote_session_truncate) and session state save / restore: round trips against an
// uninterrupted run, bit for bit, on real tiny models (stories260K; the tiny Gemma 3 for sliding
// windows) with every KV type and 1 and 2 threads; the layout against models/FORMAT.md; and a
// malformation table, each refused with its own line and the target session unchanged.
#include <random>

#include "test_support.hpp"

using namespace mote_test;

namespace {

struct NamedModel {
  std::string name;
  std::unique_ptr<ConvertedModel> model;
};

std::unique_ptr<ConvertedModel> stories260k() {
  const std::string checkpoint = shared_model("stories260K.bin");
  const std::string tokenizer = checkpoint.empty() ? "" : shared_model("aidreams_tok512.bin");
  if (checkpoint.empty() || tokenizer.empty()) return nullptr;
  return convert_and_open(checkpoint, tokenizer);
}

// tests/golden/tiny_families/gemma3 (window 8, every 6th layer global), converted in memory.
std::unique_ptr<ConvertedModel> tiny_gemma3() {
  return gguf_converted(golden_path("tiny_families/gemma3/model.gguf"), mote::format::DType::f32);
}

std::vector<NamedModel> tiny_models() {
  std::vector<NamedModel> models;
  models.push_back({"gemma3", tiny_gemma3()});
  if (auto stories = stories260k()) models.push_back({"stories260K", std::move(stories)});
  return models;
}

mote_session_options options_for(uint32_t context, mote_kv_dtype kv, uint32_t threads) {
  mote_session_options o = mote_session_options_default();
  o.context_length = context;
  o.kv_dtype = kv;
  o.n_threads = threads;
  return o;
}

mote_model_info info_of(const mote_model &model) {
  mote_model_info info;
  mote_model_info_get(&model, &info);
  return info;
}

std::vector<int32_t> random_tokens(std::mt19937 &rng, size_t n, uint32_t vocab) {
  std::uniform_int_distribution<int32_t> pick(0, static_cast<int32_t>(vocab) - 1);
  std::vector<int32_t> tokens(n);
  for (int32_t &t : tokens) t = pick(rng);
  return tokens;
}

std::vector<float> logits_of(const mote_session &session, uint32_t vocab) {
  const float *logits = mote_logits(&session);
  REQUIRE(logits != nullptr);
  return std::vector<float>(logits, logits + vocab);
}

// Decodes tokens one at a time, returning the logits after each.
std::vector<std::vector<float>> decode_all(mote_session &session, const std::vector<int32_t> &tokens, uint32_t vocab) {
  std::vector<std::vector<float>> out;
  for (int32_t t : tokens) {
    REQUIRE(mote_decode(&session, t, nullptr) == MOTE_OK);
    out.push_back(logits_of(session, vocab));
  }
  return out;
}

const mote_kv_dtype kKvTypes[] = {MOTE_KV_F32, MOTE_KV_F16, MOTE_KV_Q8_0};
constexpr uint32_t kContext = 64;
constexpr size_t kTokens = 40;  // crosses the tiny Gemma 3's window of 8 several times

// FNV-1a 64 over little-endian u64 words, written here from the definition (FORMAT.md).
uint64_t fnv1a_words(const unsigned char *bytes, size_t n) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (size_t i = 0; i + 8 <= n; i += 8) {
    uint64_t word = 0;
    for (int b = 7; b >= 0; --b) word = (word << 8) | bytes[i + b];
    hash = (hash ^ word) * 0x100000001b3ull;
  }
  return hash;
}

uint64_t read_u64(const std::vector<unsigned char> &b, size_t at) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | b[at + i];
  return v;
}
void write_u32(std::vector<unsigned char> &b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = static_cast<unsigned char>(v >> (8 * i));
}
void write_u64(std::vector<unsigned char> &b, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i) b[at + i] = static_cast<unsigned char>(v >> (8 * i));
}
// Re-signs an edited state: the checksum at 16 covers [24, total size at 32).
void reseal(std::vector<unsigned char> &b) {
  write_u64(b, 16, fnv1a_words(b.data() + 24, static_cast<size_t>(read_u64(b, 32)) - 24));
}

std::vector<unsigned char> save(const mote_session &session) {
  const size_t n = mote_session_state_size(&session);
  REQUIRE(n > 0);
  std::vector<unsigned char> buffer(n);
  size_t written = 0;
  REQUIRE_MESSAGE(mote_session_state_save(&session, buffer.data(), n, &written) == MOTE_OK,
                  mote_session_error(&session));
  CHECK(written == n);
  return buffer;
}

uint64_t pad8(uint64_t n) { return (n + 7) / 8 * 8; }

}  // namespace

TEST_CASE("truncate then re-decode gives the uninterrupted run's logits bit for bit") {
  std::mt19937 rng(2212);
  for (const NamedModel &m : tiny_models()) {
    const uint32_t vocab = info_of(m.model->model).vocab_size;
    const std::vector<int32_t> tokens = random_tokens(rng, kTokens, vocab);
    for (mote_kv_dtype kv : kKvTypes) {
      for (uint32_t threads : {1u, 2u}) {
        INFO(m.name << " kv " << static_cast<int>(kv) << " threads " << threads);
        auto reference = open_session(m.model->model, options_for(kContext, kv, threads));
        const auto expected = decode_all(reference->session, tokens, vocab);
        auto s = open_session(m.model->model, options_for(kContext, kv, threads));
        decode_all(s->session, tokens, vocab);
        for (int round = 0; round < 4; ++round) {
          const uint32_t cut = std::uniform_int_distribution<uint32_t>(0, kTokens - 1)(rng);
          INFO("cut at " << cut);
          REQUIRE(mote_session_truncate(&s->session, cut) == MOTE_OK);
          CHECK(mote_session_position(&s->session) == cut);
          CHECK(mote_logits(&s->session) == nullptr);
          // Other tokens past the cut, then the cut again: the stale rows must not leak.
          decode_all(s->session, random_tokens(rng, 5, vocab), vocab);
          REQUIRE(mote_session_truncate(&s->session, cut) == MOTE_OK);
          const auto again = decode_all(s->session, std::vector<int32_t>(tokens.begin() + cut, tokens.end()), vocab);
          for (size_t i = 0; i < again.size(); ++i) {
            INFO("position " << cut + i);
            CHECK(again[i] == expected[cut + i]);
          }
        }
        CHECK(mote_session_truncate(&s->session, kTokens + 1) == MOTE_ERR_INVALID_ARGUMENT);
        CHECK(std::string(mote_session_error(&s->session)) == "cannot truncate to 41 tokens: the session holds 40");
        CHECK(mote_session_position(&s->session) == kTokens);
        CHECK(mote_logits(&s->session) != nullptr);  // a refused truncate keeps everything
      }
    }
  }
}

TEST_CASE("a saved state restored into a fresh session continues exactly as the saved one") {
  std::mt19937 rng(2213);
  mote_sampler_options sampled = mote_sampler_options_default();
  sampled.repetition_penalty = 1.3f;
  mote_sampler_options greedy = sampled;
  greedy.temperature = 0;
  for (const NamedModel &m : tiny_models()) {
    const mote_model_info info = info_of(m.model->model);
    const std::vector<int32_t> tokens = random_tokens(rng, kTokens, info.vocab_size);
    for (mote_kv_dtype kv : kKvTypes) {
      for (uint32_t threads : {1u, 2u}) {
        const uint32_t cut = std::uniform_int_distribution<uint32_t>(1, kTokens - 8)(rng);
        INFO(m.name << " kv " << static_cast<int>(kv) << " threads " << threads << " saved at " << cut);
        auto a = open_session(m.model->model, options_for(kContext, kv, threads));
        REQUIRE(mote_sampler_seed(&a->session, 99) == MOTE_OK);
        decode_all(a->session, std::vector<int32_t>(tokens.begin(), tokens.begin() + cut), info.vocab_size);
        const std::vector<unsigned char> state = save(a->session);
        // The layout of FORMAT.md: the size from the shape, the history at 88.
        const uint64_t element = kv == MOTE_KV_F32 ? 4 : kv == MOTE_KV_F16 ? 2 : 1;
        const uint64_t kv_dim = uint64_t{info.n_kv_heads} * info.head_dim;
        const uint64_t scales = kv == MOTE_KV_Q8_0 ? uint64_t{info.n_kv_heads} * ((info.head_dim + 31) / 32) : 0;
        const uint64_t per_layer = 2 * pad8(cut * kv_dim * element) + 2 * pad8(cut * scales * 4);
        CHECK(state.size() == 88 + pad8(4 * cut) + pad8(4 * info.vocab_size) + info.n_layers * per_layer);
        CHECK(std::memcmp(state.data() + 88, tokens.data(), 4 * cut) == 0);  // little-endian host
        // A fresh session (the other thread count: it never changes a bit) takes the state.
        auto b = open_session(m.model->model, options_for(kContext, kv, 3 - threads));
        char message[256] = "";
        REQUIRE_MESSAGE(
            mote_session_state_load(&b->session, state.data(), state.size(), message, sizeof message) == MOTE_OK,
            message);
        CHECK(mote_session_position(&b->session) == cut);
        CHECK(logits_of(b->session, info.vocab_size) == logits_of(a->session, info.vocab_size));
        // Sampling (the RNG and the repetition history came along), then greedy, step by step.
        for (int step = 0; step < 8; ++step) {
          const mote_sampler_options &o = step < 4 ? sampled : greedy;
          int32_t ta = -1, tb = -2;
          REQUIRE(mote_sample(&a->session, &o, &ta) == MOTE_OK);
          REQUIRE(mote_sample(&b->session, &o, &tb) == MOTE_OK);
          CHECK(ta == tb);
          REQUIRE(mote_decode(&a->session, ta, nullptr) == MOTE_OK);
          REQUIRE(mote_decode(&b->session, ta, nullptr) == MOTE_OK);
          CHECK(logits_of(b->session, info.vocab_size) == logits_of(a->session, info.vocab_size));
        }
      }
    }
  }
}

TEST_CASE("a state without logits restores without logits") {
  std::unique_ptr<ConvertedModel> m = tiny_gemma3();
  auto a = open_session(m->model, options_for(kContext, MOTE_KV_F32, 1));
  REQUIRE(mote_decode(&a->session, 5, nullptr) == MOTE_OK);
  REQUIRE(mote_session_truncate(&a->session, 1) == MOTE_OK);
  const std::vector<unsigned char> state = save(a->session);
  auto b = open_session(m->model, options_for(kContext, MOTE_KV_F32, 1));
  REQUIRE(mote_decode(&b->session, 7, nullptr) == MOTE_OK);
  REQUIRE(mote_session_state_load(&b->session, state.data(), state.size(), nullptr, 0) == MOTE_OK);
  CHECK(mote_logits(&b->session) == nullptr);
  CHECK(mote_session_position(&b->session) == 1);
}

TEST_CASE("a malformed or foreign state is refused with one line and the session is untouched") {
  std::unique_ptr<ConvertedModel> m = tiny_gemma3();
  const uint32_t vocab = info_of(m->model).vocab_size;
  const std::vector<int32_t> tokens = {1, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50};
  const std::vector<int32_t> other = {1, 60, 61, 62, 63};
  auto source = open_session(m->model, options_for(kContext, MOTE_KV_F32, 1));
  decode_all(source->session, tokens, vocab);
  const std::vector<unsigned char> good = save(source->session);

  // States of another shape or model, saved for real.
  const auto state_with = [&](const mote_model &model, mote_session_options o) {
    auto s = open_session(model, o);
    decode_all(s->session, tokens, vocab);
    return save(s->session);
  };
  std::unique_ptr<ConvertedModel> stories = stories260k();
  std::vector<unsigned char> foreign;
  if (stories) foreign = state_with(stories->model, options_for(kContext, MOTE_KV_F32, 1));

  const auto edited = [&](size_t at, uint32_t value) {
    std::vector<unsigned char> b = good;
    write_u32(b, at, value);
    reseal(b);
    return b;
  };
  std::vector<unsigned char> flipped = good, bad_magic = good, bad_version = good, other_checksum = good;
  flipped[good.size() - 3] ^= 0x10;  // a value row of the last layer
  bad_magic[0] = 'X';
  write_u32(bad_version, 4, 1);  // version 1 did not record the attention mode
  write_u64(other_checksum, 24, read_u64(good, 24) ^ 1);
  reseal(other_checksum);
  // The size field alone disagreeing with the position (the checksum made right again): 8 bytes
  // more, with 8 more bytes there, and 8 bytes fewer.
  std::vector<unsigned char> size_above = good, size_below = good, size_garbled = good;
  size_above.resize(good.size() + 8);
  write_u64(size_above, 32, good.size() + 8);
  reseal(size_above);
  write_u64(size_below, 32, good.size() - 8);
  reseal(size_below);
  write_u64(size_garbled, 32, 10);  // below the header: no checksum can cover it
  const std::string text = "This is a text file, not a session state.\n";
  const std::vector<unsigned char> text_file(text.begin(), text.end());  // under the header's 88 bytes
  const struct {
    const char *what;
    std::vector<unsigned char> bytes;
    size_t size;  // 0: the whole vector
    mote_status status;
    std::string message;
  } cases[] = {
      {"header cut", good, 40, MOTE_ERR_INVALID_ARGUMENT,
       "session state is truncated: 40 bytes, its header alone is 88"},
      {"rows cut", good, good.size() - 8, MOTE_ERR_INVALID_ARGUMENT,
       "session state is truncated: " + std::to_string(good.size() - 8) + " bytes of the " +
           std::to_string(good.size()) + " its header says"},
      {"magic", bad_magic, 0, MOTE_ERR_INVALID_ARGUMENT, "not a mote session state (bad magic)"},
      {"text", text_file, 0, MOTE_ERR_INVALID_ARGUMENT, "not a mote session state (bad magic)"},
      {"version", bad_version, 0, MOTE_ERR_UNSUPPORTED, "session state version 1; this build reads version 3"},
      {"header size", edited(8, 96), 0, MOTE_ERR_INVALID_ARGUMENT, "session state header size 96 is not 88"},
      {"reserved word", edited(12, 1), 0, MOTE_ERR_INVALID_ARGUMENT, "session state's reserved word is not 0"},
      {"flipped byte", flipped, 0, MOTE_ERR_INVALID_ARGUMENT, "session state checksum mismatch"},
      {"model checksum", other_checksum, 0, MOTE_ERR_INVALID_ARGUMENT, "session state is from another model"},
      {"context", state_with(m->model, options_for(32, MOTE_KV_F32, 1)), 0, MOTE_ERR_INVALID_ARGUMENT,
       "session state's context length 32 is not this session's 64"},
      {"kv type", state_with(m->model, options_for(kContext, MOTE_KV_F16, 1)), 0, MOTE_ERR_INVALID_ARGUMENT,
       "session state's KV cache is f16; this session's is f32"},
      {"position", edited(60, kContext + 1), 0, MOTE_ERR_INVALID_ARGUMENT,
       "session state's position 65 is beyond the context of 64"},
      {"token", edited(88 + 4 * 3, vocab), 0, MOTE_ERR_BAD_TOKEN,
       "session state's token " + std::to_string(vocab) + " at position 3 is outside the vocabulary"},
      {"flags", edited(68, 8), 0, MOTE_ERR_INVALID_ARGUMENT, "session state has unknown flags 0x8"},
      {"attention", edited(68, 3), 0, MOTE_ERR_INVALID_ARGUMENT,
       "session state is from a bidirectional session; this one is causal"},
      {"size field above", size_above, 0, MOTE_ERR_INVALID_ARGUMENT,
       "session state's size field says " + std::to_string(good.size() + 8) + " bytes; its position 12 needs " +
           std::to_string(good.size())},
      {"size field below", size_below, 0, MOTE_ERR_INVALID_ARGUMENT,
       "session state's size field says " + std::to_string(good.size() - 8) + " bytes; its position 12 needs " +
           std::to_string(good.size())},
      {"size field garbled", size_garbled, 0, MOTE_ERR_INVALID_ARGUMENT,
       "session state's size field says 10 bytes, less than its header: it is corrupt"},
      {"another model", foreign, 0, MOTE_ERR_INVALID_ARGUMENT, "session state is from another model"},
  };

  auto target = open_session(m->model, options_for(kContext, MOTE_KV_F32, 1));
  decode_all(target->session, other, vocab);
  const std::vector<float> before = logits_of(target->session, vocab);
  for (const auto &c : cases) {
    if (c.bytes.empty()) continue;  // stories260K absent: skipped above, saying so
    INFO(c.what);
    char message[256] = "";
    const size_t size = c.size == 0 ? c.bytes.size() : c.size;
    CHECK(mote_session_state_load(&target->session, c.bytes.data(), size, message, sizeof message) == c.status);
    CHECK(std::string(message).rfind(c.message, 0) == 0);
    CHECK(std::string(message).find('\n') == std::string::npos);
    CHECK(std::string(mote_session_error(&target->session)) == message);
    CHECK(mote_session_position(&target->session) == other.size());
    CHECK(logits_of(target->session, vocab) == before);
  }
  // An empty buffer (an empty file) says so, with or without a pointer.
  for (const unsigned char *empty : {static_cast<const unsigned char *>(nullptr), good.data()}) {
    char message[256] = "";
    CHECK(mote_session_state_load(&target->session, empty, 0, message, sizeof message) == MOTE_ERR_INVALID_ARGUMENT);
    CHECK(std::string(message) == "session state is empty (0 bytes)");
    CHECK(mote_session_position(&target->session) == other.size());
  }
  // The next decode is the one an untouched session makes.
  auto control = open_session(m->model, options_for(kContext, MOTE_KV_F32, 1));
  decode_all(control->session, other, vocab);
  CHECK(decode_all(target->session, {70}, vocab) == decode_all(control->session, {70}, vocab));
  // The good state still loads.
  CHECK(mote_session_state_load(&target->session, good.data(), good.size(), nullptr, 0) == MOTE_OK);
  CHECK(logits_of(target->session, vocab) == logits_of(source->session, vocab));
}

TEST_CASE("saving into a buffer that is too small says the size it needs") {
  std::unique_ptr<ConvertedModel> m = tiny_gemma3();
  auto s = open_session(m->model, options_for(kContext, MOTE_KV_Q8_0, 1));
  decode_all(s->session, {1, 2, 3}, info_of(m->model).vocab_size);
  const size_t needed = mote_session_state_size(&s->session);
  std::vector<unsigned char> buffer(needed - 1);
  size_t written = 0;
  CHECK(mote_session_state_save(&s->session, buffer.data(), buffer.size(), &written) == MOTE_ERR_BUFFER_TOO_SMALL);
  CHECK(written == needed);
  CHECK(std::string(mote_session_error(&s->session)) ==
        "session state needs " + std::to_string(needed) + " bytes; the buffer has " + std::to_string(needed - 1));
  CHECK(mote_session_state_save(&s->session, nullptr, 0, &written) == MOTE_ERR_BUFFER_TOO_SMALL);
  CHECK(written == needed);
  CHECK(mote_session_state_size(nullptr) == 0);
  CHECK(mote_session_state_save(nullptr, buffer.data(), buffer.size(), &written) == MOTE_ERR_INVALID_ARGUMENT);
}

TEST_CASE("mote_session_tokens: the cache's tokens, and after a load the saved state's") {
  const auto gemma = tiny_gemma3();
  const uint32_t vocab = info_of(gemma->model).vocab_size;
  std::mt19937 rng(5);
  const std::vector<int32_t> tokens = random_tokens(rng, 9, vocab);
  auto s = open_session(gemma->model, options_for(kContext, MOTE_KV_F32, 1));
  std::vector<int32_t> got(16, -1);
  size_t n = 99;
  CHECK(mote_session_tokens(&s->session, got.data(), got.size(), &n) == MOTE_OK);
  CHECK(n == 0);
  REQUIRE(mote_prefill(&s->session, tokens.data(), tokens.size()) == MOTE_OK);
  CHECK(mote_session_tokens(&s->session, got.data(), got.size(), &n) == MOTE_OK);
  CHECK(std::vector<int32_t>(got.begin(), got.begin() + n) == tokens);
  CHECK(mote_session_tokens(&s->session, got.data(), 8, &n) == MOTE_ERR_BUFFER_TOO_SMALL);
  CHECK(n == 9);
  CHECK(mote_session_tokens(&s->session, nullptr, 0, &n) == MOTE_ERR_BUFFER_TOO_SMALL);
  CHECK(mote_session_tokens(&s->session, nullptr, 4, &n) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_session_tokens(&s->session, got.data(), got.size(), nullptr) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_session_tokens(nullptr, got.data(), got.size(), &n) == MOTE_ERR_INVALID_ARGUMENT);

  std::vector<uint8_t> state(mote_session_state_size(&s->session));
  REQUIRE(mote_session_state_save(&s->session, state.data(), state.size(), nullptr) == MOTE_OK);
  auto restored = open_session(gemma->model, options_for(kContext, MOTE_KV_F32, 1));
  REQUIRE(mote_session_state_load(&restored->session, state.data(), state.size(), nullptr, 0) == MOTE_OK);
  std::fill(got.begin(), got.end(), -1);
  CHECK(mote_session_tokens(&restored->session, got.data(), got.size(), &n) == MOTE_OK);
  CHECK(std::vector<int32_t>(got.begin(), got.begin() + n) == tokens);
}

TEST_CASE("a state records the attention mode: a bidirectional session's state is refused by a causal one") {
  // The tiny Llama 3 (no sliding window, so it may attend both ways).
  std::unique_ptr<ConvertedModel> m =
      gguf_converted(golden_path("tiny_families/llama3/model.gguf"), mote::format::DType::f32);
  const std::vector<int32_t> tokens = {1, 4, 9, 16, 25, 36};
  mote_session_options both_ways = options_for(kContext, MOTE_KV_F32, 1), causal = both_ways;
  both_ways.bidirectional = 1;
  const auto saved_from = [&](const mote_session_options &o) {
    auto s = open_session(m->model, o);
    REQUIRE(mote_prefill(&s->session, tokens.data(), tokens.size()) == MOTE_OK);
    return save(s->session);
  };
  const std::vector<unsigned char> bidirectional_state = saved_from(both_ways), causal_state = saved_from(causal);
  const struct {
    const mote_session_options &target;
    const std::vector<unsigned char> &state;
    std::string refusal;  // empty: loads
  } cases[] = {
      {causal, bidirectional_state, "session state is from a bidirectional session; this one is causal"},
      {both_ways, causal_state, "session state is from a causal session; this one is bidirectional"},
      {both_ways, bidirectional_state, ""},
      {causal, causal_state, ""},
  };
  for (const auto &c : cases) {
    INFO(c.refusal);
    auto target = open_session(m->model, c.target);
    REQUIRE(mote_decode(&target->session, 3, nullptr) == MOTE_OK);
    char message[256] = "";
    const mote_status status =
        mote_session_state_load(&target->session, c.state.data(), c.state.size(), message, sizeof message);
    CHECK(status == (c.refusal.empty() ? MOTE_OK : MOTE_ERR_INVALID_ARGUMENT));
    CHECK(std::string(message) == c.refusal);
    CHECK(mote_session_position(&target->session) == (c.refusal.empty() ? tokens.size() : 1));
  }
}

TEST_CASE("mote_session_state_check_header judges a state by its header alone") {
  std::unique_ptr<ConvertedModel> m = tiny_gemma3();
  const uint32_t vocab = info_of(m->model).vocab_size;
  auto source = open_session(m->model, options_for(kContext, MOTE_KV_F32, 1));
  decode_all(source->session, {1, 40, 41, 42, 43}, vocab);
  const std::vector<unsigned char> good = save(source->session);
  const std::vector<unsigned char> header(good.begin(), good.begin() + MOTE_SESSION_STATE_HEADER_SIZE);
  auto target = open_session(m->model, options_for(kContext, MOTE_KV_F32, 1));
  uint64_t total = 0;
  char message[256] = "";
  // The header alone is enough, and so is the whole state; the body is not read (the checksum and
  // the tokens are mote_session_state_load's).
  CHECK(mote_session_state_check_header(&target->session, header.data(), header.size(), &total, message,
                                        sizeof message) == MOTE_OK);
  CHECK(total == good.size());
  total = 0;
  CHECK(mote_session_state_check_header(&target->session, good.data(), good.size(), &total, nullptr, 0) == MOTE_OK);
  CHECK(total == good.size());

  // The largest state this session holds: position at the context; beyond it, refused unread.
  std::vector<unsigned char> full = header, beyond = header, other_size = header, other_context = header;
  write_u32(full, 60, kContext);
  auto filled = open_session(m->model, options_for(kContext, MOTE_KV_F32, 1));
  std::vector<int32_t> many(kContext, 7);
  REQUIRE(mote_prefill(&filled->session, many.data(), many.size()) == MOTE_OK);
  write_u64(full, 32, mote_session_state_size(&filled->session));
  CHECK(mote_session_state_check_header(&target->session, full.data(), full.size(), &total, nullptr, 0) == MOTE_OK);
  CHECK(total == mote_session_state_size(&filled->session));
  write_u32(beyond, 60, kContext + 1);
  write_u64(beyond, 32, uint64_t{1} << 33);
  write_u64(other_size, 32, good.size() + 8);
  write_u32(other_context, 48, 32);
  const std::string text = "This is a text file, not a session state.\n";
  const std::vector<unsigned char> text_file(text.begin(), text.end());
  const struct {
    const char *what;
    const std::vector<unsigned char> &bytes;
    size_t size;
    std::string message;
  } cases[] = {
      {"empty", header, 0, "session state is empty (0 bytes)"},
      {"text", text_file, text_file.size(), "not a mote session state (bad magic)"},
      {"cut", header, 40, "session state is truncated: 40 bytes, its header alone is 88"},
      {"beyond the context", beyond, beyond.size(), "session state's position 65 is beyond the context of 64"},
      {"size field", other_size, other_size.size(),
       "session state's size field says " + std::to_string(good.size() + 8) + " bytes; its position 5 needs " +
           std::to_string(good.size())},
      {"context", other_context, other_context.size(), "session state's context length 32 is not this session's 64"},
  };
  for (const auto &c : cases) {
    INFO(c.what);
    total = 99;
    CHECK(mote_session_state_check_header(&target->session, c.bytes.data(), c.size, &total, message, sizeof message) !=
          MOTE_OK);
    CHECK(std::string(message) == c.message);
    CHECK(total == 0);
  }
  CHECK(mote_session_state_check_header(nullptr, header.data(), header.size(), &total, nullptr, 0) ==
        MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_session_state_check_header(&target->session, header.data(), header.size(), nullptr, nullptr, 0) ==
        MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_session_position(&target->session) == 0);
}

// One session, overlapping calls: the call in progress keeps the session, every other call on it
// (from another thread, or from mote_generate's own callback) returns MOTE_ERR_BUSY and changes
// nothing. mote.h's "Threads" paragraph states the rule; this checks it deterministically (the
// callback waits for the other thread, no sleeps).
#include <cstring>
#include <functional>
#include <future>
#include <set>
#include <thread>

#include "api_header_support.hpp"
#include "test_support.hpp"

namespace {

const mote_test::ConvertedModel &tiny() {
  static std::unique_ptr<mote_test::ConvertedModel> model =
      mote_test::convert_and_open(mote_test::golden_path("tiny_mha.bin"), mote_test::golden_path("tiny_tok64.bin"));
  return *model;
}

mote_sampler_options greedy() {
  mote_sampler_options options = mote_sampler_options_default();
  options.temperature = 0.0f;
  return options;
}

struct SessionCall {
  const char *function;
  std::function<mote_status(mote_session *)> call;
};

// A grammar that takes any text, compiled for tiny()'s vocabulary.
mote_grammar *any_text_grammar() {
  static const char text[] = "root ::= .*";
  static std::vector<unsigned char> arena;
  static mote_grammar grammar{};
  if (arena.empty()) {
    size_t bytes = 0;
    char err[256] = "";
    REQUIRE(mote_grammar_arena_size(text, sizeof text - 1, &bytes, err, sizeof err) == MOTE_OK);
    arena.resize(bytes + 64);
    void *aligned = arena.data() + (64 - reinterpret_cast<uintptr_t>(arena.data()) % 64) % 64;
    REQUIRE(mote_grammar_init(&grammar, &tiny().model, text, sizeof text - 1, aligned, bytes, err, sizeof err) ==
            MOTE_OK);
  }
  return &grammar;
}

// One valid call of each function that changes a session (mote_session_init aside: it makes one).
std::vector<SessionCall> session_calls() {
  static const int32_t tokens[] = {1, 5, 9};
  return {
      {"mote_prefill", [](mote_session *s) { return mote_prefill(s, tokens, 3); }},
      {"mote_prefill_logits",
       [](mote_session *s) {
         std::vector<float> out(3 * 1024);
         return mote_prefill_logits(s, tokens, 3, 0, out.data(), out.size());
       }},
      {"mote_decode",
       [](mote_session *s) {
         const float *logits = nullptr;
         return mote_decode(s, 5, &logits);
       }},
      {"mote_sample",
       [](mote_session *s) {
         const mote_sampler_options options = greedy();
         int32_t token = 0;
         return mote_sample(s, &options, &token);
       }},
      {"mote_generate",
       [](mote_session *s) {
         const mote_sampler_options options = greedy();
         return mote_generate(s, tokens, 3, 2, &options, nullptr, nullptr, nullptr);
       }},
      {"mote_sample_grammar",
       [](mote_session *s) {
         const mote_sampler_options options = greedy();
         int32_t token = 0;
         return mote_sample_grammar(s, &options, any_text_grammar(), &token);
       }},
      {"mote_generate_constrained",
       [](mote_session *s) {
         const mote_sampler_options options = greedy();
         return mote_generate_constrained(s, tokens, 3, 2, &options, any_text_grammar(), nullptr, nullptr, nullptr);
       }},
      {"mote_embed_batch",
       [](mote_session *s) {
         static const uint32_t lengths[] = {2, 1};
         std::vector<float> out(64);
         return mote_embed_batch(s, tokens, lengths, 2, MOTE_POOL_MEAN, 1, out.data(), out.size());
       }},
      {"mote_embed",
       [](mote_session *s) {
         std::vector<float> out(1024);
         return mote_embed(s, tokens, 3, MOTE_POOL_MEAN, 1, out.data(), out.size());
       }},
      {"mote_session_reset", [](mote_session *s) { return mote_session_reset(s); }},
      {"mote_session_truncate", [](mote_session *s) { return mote_session_truncate(s, 0); }},
      {"mote_session_state_load",
       [](mote_session *s) {
         std::vector<uint8_t> state(128);  // whatever it holds: the busy check comes first
         char message[256] = "";
         return mote_session_state_load(s, state.data(), state.size(), message, sizeof message);
       }},
      {"mote_session_state_check_header",
       [](mote_session *s) {
         std::vector<uint8_t> header(MOTE_SESSION_STATE_HEADER_SIZE);
         uint64_t total = 0;
         return mote_session_state_check_header(s, header.data(), header.size(), &total, nullptr, 0);
       }},
      {"mote_sampler_seed", [](mote_session *s) { return mote_sampler_seed(s, 42); }},
      {"mote_session_release", [](mote_session *s) { return mote_session_release(s); }},
  };
}

// Runs every session call on session: "function: status; " for each.
std::string run_all(mote_session *session) {
  std::string results;
  for (const SessionCall &c : session_calls())
    results += std::string(c.function) + ": " + mote_status_name(c.call(session)) + "; ";
  return results;
}

std::string all_busy() {
  std::string expected;
  for (const SessionCall &c : session_calls()) expected += std::string(c.function) + ": session busy; ";
  return expected;
}

// What the generating thread's callback and the other thread share.
struct Overlap {
  mote_session *session = nullptr;
  std::promise<void> generating;  // the callback runs: mote_generate holds the session
  std::promise<void> other_done;  // the other thread made its calls
  std::string from_callback, from_thread;
  int tokens_seen = 0;
};

int on_token(void *user, int32_t, const char *, size_t) {
  Overlap &o = *static_cast<Overlap *>(user);
  if (o.tokens_seen++ == 0) {
    o.from_callback = run_all(o.session);
    o.generating.set_value();
    o.other_done.get_future().wait();
  }
  return 1;  // stop after this token
}

}  // namespace

TEST_CASE("every mote.h function that takes a session to change is among the calls checked here") {
  const mote_test::ApiHeader header = mote_test::read_api_header();
  std::set<std::string> declared, checked;
  for (const auto &[function, parameters] : header.functions) {
    for (const mote_test::Parameter &p : parameters) {
      const bool changes_session =
          mote_test::base_type(p.type) == "mote_session" && p.type.find("const") == std::string::npos;
      if (changes_session && function != "mote_session_init") declared.insert(function);
    }
  }
  for (const SessionCall &c : session_calls()) checked.insert(c.function);
  CHECK(declared.size() >= 8);
  CHECK(declared == checked);
}

TEST_CASE("a call that overlaps mote_generate, from another thread or from its callback, gets MOTE_ERR_BUSY") {
  const int32_t prompt[] = {1, 7, 3};
  const mote_sampler_options options = greedy();

  // The reference: the same generation, nobody interfering.
  auto alone = mote_test::open_session(tiny().model, mote_session_options_default());
  uint32_t generated_alone = 0;
  Overlap quiet;
  quiet.tokens_seen = 1;  // the callback only stops
  quiet.session = &alone->session;
  REQUIRE(mote_generate(&alone->session, prompt, 3, 8, &options, on_token, &quiet, &generated_alone) == MOTE_OK);
  REQUIRE(generated_alone == 1);

  auto s = mote_test::open_session(tiny().model, mote_session_options_default());
  Overlap overlap;
  overlap.session = &s->session;
  std::future<void> generating = overlap.generating.get_future();
  std::thread other([&] {
    generating.wait();
    overlap.from_thread = run_all(&s->session);
    overlap.other_done.set_value();
  });
  uint32_t generated = 0;
  const mote_status status = mote_generate(&s->session, prompt, 3, 8, &options, on_token, &overlap, &generated);
  other.join();

  CHECK(status == MOTE_OK);
  CHECK(generated == 1);
  CHECK(overlap.from_thread == all_busy());
  CHECK(overlap.from_callback == all_busy());
  // Nothing the refused calls did reached the session: it is where the lone generation left it.
  CHECK(std::string(mote_session_error(&s->session)) == "");
  REQUIRE(mote_session_position(&s->session) == mote_session_position(&alone->session));
  mote_model_info info;
  mote_model_info_get(&tiny().model, &info);
  REQUIRE(mote_logits(&s->session) != nullptr);
  CHECK(std::memcmp(mote_logits(&s->session), mote_logits(&alone->session), info.vocab_size * sizeof(float)) == 0);

  // Once mote_generate returned, the session is free again.
  const float *logits = nullptr;
  CHECK(mote_decode(&s->session, 5, &logits) == MOTE_OK);
  CHECK(logits != nullptr);
  CHECK(mote_session_release(&s->session) == MOTE_OK);
  CHECK(mote_session_release(&s->session) == MOTE_ERR_INVALID_ARGUMENT);  // released: no session left
}

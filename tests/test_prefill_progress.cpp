// Progress and abort (mote_session_options.on_progress, MOTE_ERR_ABORTED) and every position's
// logits (mote_prefill_logits), on real tiny models (the tiny Gemma 3 with its sliding windows,
// stories260K when ../shared/models has it) and SmolLM2 when fetched. The oracles are
// independent runs: an uninterrupted prefill for an aborted one, one-token-at-a-time decoding
// for the per-position logits, compared bit for bit (the kernels give a row the same bits in a
// batch of any size, and the thread count never changes a result).
#include <cstring>
#include <random>

#include "test_support.hpp"

using namespace mote_test;

namespace {

struct NamedModel {
  std::string name;
  std::unique_ptr<ConvertedModel> model;
};

std::vector<NamedModel> tiny_models() {
  std::vector<NamedModel> models;
  models.push_back(
      {"gemma3", gguf_converted(golden_path("tiny_families/gemma3/model.gguf"), mote::format::DType::f32)});
  const std::string checkpoint = shared_model("stories260K.bin");
  const std::string tokenizer = checkpoint.empty() ? "" : shared_model("aidreams_tok512.bin");
  if (!checkpoint.empty() && !tokenizer.empty())
    models.push_back({"stories260K", convert_and_open(checkpoint, tokenizer)});
  return models;
}

uint32_t vocab_of(const mote_model &model) {
  mote_model_info info;
  mote_model_info_get(&model, &info);
  return info.vocab_size;
}

std::vector<int32_t> random_tokens(uint32_t seed, size_t n, uint32_t vocab) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> pick(0, static_cast<int32_t>(vocab) - 1);
  std::vector<int32_t> tokens(n);
  for (int32_t &t : tokens) t = pick(rng);
  return tokens;
}

// What the progress callback saw, and when it stops the call.
struct Progress {
  std::vector<std::pair<uint32_t, uint32_t>> calls;  // (done, total)
  size_t stop_at_call = SIZE_MAX;                    // 1-based: the call that returns non-zero
  uint32_t stop_total = 0;                           // only calls with this total count (0: any)
  mote_session *session = nullptr;                   // when set, a call on it from the callback
  mote_status from_callback = MOTE_OK;
};

int record_progress(void *user, uint32_t done, uint32_t total) {
  Progress &p = *static_cast<Progress *>(user);
  if (p.session != nullptr) {
    const int32_t token = 1;
    p.from_callback = mote_prefill(p.session, &token, 1);
  }
  if (p.stop_total != 0 && total != p.stop_total) return 0;
  p.calls.emplace_back(done, total);
  return p.calls.size() == p.stop_at_call ? 1 : 0;
}

mote_session_options options_for(uint32_t batch, uint32_t threads, Progress *progress) {
  mote_session_options o = mote_session_options_default();
  o.context_length = 64;
  o.batch_size = batch;
  o.n_threads = threads;
  if (progress != nullptr) {
    o.on_progress = record_progress;
    o.progress_user = progress;
  }
  return o;
}

std::vector<float> logits_of(const mote_session &session, uint32_t vocab) {
  const float *logits = mote_logits(&session);
  REQUIRE(logits != nullptr);
  return std::vector<float>(logits, logits + vocab);
}

bool same_bits(const float *a, const float *b, size_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }

}  // namespace

TEST_CASE("on_progress is null by default and is called after each prefill batch with the call's done and total") {
  const mote_session_options defaults = mote_session_options_default();
  CHECK(!defaults.on_progress);
  CHECK(defaults.progress_user == nullptr);
  CHECK(std::string(mote_status_name(MOTE_ERR_ABORTED)) == "aborted");

  const auto models = tiny_models();
  const mote_model &model = models[0].model->model;
  Progress progress;
  auto s = open_session(model, options_for(4, 1, &progress));
  const std::vector<int32_t> tokens = random_tokens(1, 10, vocab_of(model));
  REQUIRE(mote_prefill(&s->session, tokens.data(), tokens.size()) == MOTE_OK);
  const std::vector<std::pair<uint32_t, uint32_t>> expected = {{4, 10}, {8, 10}, {10, 10}};
  CHECK(progress.calls == expected);
  progress.calls.clear();
  REQUIRE(mote_decode(&s->session, tokens[0], nullptr) == MOTE_OK);
  CHECK(progress.calls.empty());  // mote_decode is one step the caller drives: no progress

  // A call on the session from inside the callback is refused, and the prefill goes on.
  progress.session = &s->session;
  REQUIRE(mote_prefill(&s->session, tokens.data(), 3) == MOTE_OK);
  CHECK(progress.from_callback == MOTE_ERR_BUSY);
  CHECK(mote_session_position(&s->session) == 14);
}

TEST_CASE(
    "an abort at every batch boundary keeps the batches run; prefilling the rest gives the uninterrupted logits") {
  for (const NamedModel &named : tiny_models()) {
    const mote_model &model = named.model->model;
    const uint32_t vocab = vocab_of(model);
    const std::vector<int32_t> tokens = random_tokens(7, 23, vocab);
    auto reference = open_session(model, options_for(64, 1, nullptr));
    REQUIRE(mote_prefill(&reference->session, tokens.data(), tokens.size()) == MOTE_OK);
    const std::vector<float> expected = logits_of(reference->session, vocab);
    for (const uint32_t batch : {1u, 4u, 8u}) {
      for (const uint32_t threads : {1u, 2u}) {
        const size_t n_batches = (tokens.size() + batch - 1) / batch;
        for (size_t k = 1; k < n_batches; ++k) {
          CAPTURE(named.name);
          CAPTURE(batch);
          CAPTURE(threads);
          CAPTURE(k);
          Progress progress;
          progress.stop_at_call = k;
          auto s = open_session(model, options_for(batch, threads, &progress));
          CHECK(mote_prefill(&s->session, tokens.data(), tokens.size()) == MOTE_ERR_ABORTED);
          CHECK(std::string(mote_session_error(&s->session)).find("stopped by the progress callback") == 0);
          REQUIRE(mote_session_position(&s->session) == k * batch);
          CHECK(progress.calls.size() == k);
          progress.stop_at_call = SIZE_MAX;
          REQUIRE(mote_prefill(&s->session, tokens.data() + k * batch, tokens.size() - k * batch) == MOTE_OK);
          CHECK(same_bits(logits_of(s->session, vocab).data(), expected.data(), vocab));
        }
      }
    }
  }
}

TEST_CASE("mote_generate: on_progress after each decoded token; an abort keeps the tokens generated so far") {
  const auto models = tiny_models();
  const mote_model &model = models.back().model->model;
  const std::vector<int32_t> prompt = random_tokens(3, 5, vocab_of(model));
  mote_sampler_options sampler = mote_sampler_options_default();
  sampler.seed = 11;
  struct Tokens {
    std::vector<int32_t> seen;
  };
  const auto on_token = [](void *user, int32_t token, const char *, size_t) {
    static_cast<Tokens *>(user)->seen.push_back(token);
    return 0;
  };

  auto reference = open_session(model, options_for(64, 1, nullptr));
  Tokens all;
  uint32_t n_all = 0;
  REQUIRE(mote_generate(&reference->session, prompt.data(), prompt.size(), 10, &sampler, on_token, &all, &n_all) ==
          MOTE_OK);
  REQUIRE(n_all >= 4);  // the model did not end at once (else the abort below cannot be reached)

  Progress progress;
  progress.stop_total = 10;  // the generation steps (the prompt's call has total 5)
  progress.stop_at_call = 3;
  auto s = open_session(model, options_for(64, 1, &progress));
  Tokens some;
  uint32_t n_some = 0;
  CHECK(mote_generate(&s->session, prompt.data(), prompt.size(), 10, &sampler, on_token, &some, &n_some) ==
        MOTE_ERR_ABORTED);
  CHECK(n_some == 3);
  const std::vector<std::pair<uint32_t, uint32_t>> steps = {{1, 10}, {2, 10}, {3, 10}};
  CHECK(progress.calls == steps);
  CHECK(some.seen == std::vector<int32_t>(all.seen.begin(), all.seen.begin() + 3));
  CHECK(mote_session_position(&s->session) == prompt.size() + 3);  // every token reported is in the cache

  // The prompt's own progress comes first, and an abort there generates nothing.
  Progress prompt_progress;
  prompt_progress.stop_at_call = 1;
  auto t = open_session(model, options_for(2, 1, &prompt_progress));
  n_some = 7;
  CHECK(mote_generate(&t->session, prompt.data(), prompt.size(), 10, &sampler, nullptr, nullptr, &n_some) ==
        MOTE_ERR_ABORTED);
  CHECK(n_some == 0);
  CHECK(prompt_progress.calls == std::vector<std::pair<uint32_t, uint32_t>>{{2, 5}});
  CHECK(mote_session_position(&t->session) == 2);
}

namespace {

// Logits after each token, decoding one at a time after prefix (the oracle).
std::vector<float> decoded_logits(const mote_model &model, const std::vector<int32_t> &prefix,
                                  const std::vector<int32_t> &tokens, uint32_t vocab) {
  auto s = open_session(model, options_for(64, 1, nullptr));
  if (!prefix.empty()) REQUIRE(mote_prefill(&s->session, prefix.data(), prefix.size()) == MOTE_OK);
  std::vector<float> out;
  for (const int32_t t : tokens) {
    const float *logits = nullptr;
    REQUIRE(mote_decode(&s->session, t, &logits) == MOTE_OK);
    out.insert(out.end(), logits, logits + vocab);
  }
  return out;
}

// mote_prefill_logits of tokens from first on (after prefix) equals the decoded rows, bit for bit.
void check_prefill_logits(const mote_model &model, uint32_t batch, uint32_t threads, size_t n_prefix, size_t n,
                          size_t first) {
  const uint32_t vocab = vocab_of(model);
  const std::vector<int32_t> prefix = random_tokens(5, n_prefix, vocab), tokens = random_tokens(9, n, vocab);
  const std::vector<float> expected = decoded_logits(model, prefix, tokens, vocab);
  auto s = open_session(model, options_for(batch, threads, nullptr));
  if (!prefix.empty()) REQUIRE(mote_prefill(&s->session, prefix.data(), prefix.size()) == MOTE_OK);
  std::vector<float> out((n - first) * vocab, -1.0f);
  REQUIRE(mote_prefill_logits(&s->session, tokens.data(), n, first, out.data(), out.size()) == MOTE_OK);
  CHECK(mote_session_position(&s->session) == n_prefix + n);
  for (size_t row = 0; row < n - first; ++row) {
    CAPTURE(row);
    CHECK(same_bits(out.data() + row * vocab, expected.data() + (first + row) * vocab, vocab));
  }
  CHECK(same_bits(logits_of(s->session, vocab).data(), expected.data() + (n - 1) * vocab, vocab));
}

}  // namespace

TEST_CASE("mote_prefill_logits equals one-token-at-a-time decoding at every position, any batch and thread count") {
  for (const NamedModel &named : tiny_models()) {
    for (const uint32_t batch : {1u, 2u, 3u, 4u, 8u, 16u, 64u}) {
      for (const uint32_t threads : {1u, 2u}) {
        CAPTURE(named.name);
        CAPTURE(batch);
        CAPTURE(threads);
        check_prefill_logits(named.model->model, batch, threads, 0, 20, 0);
        check_prefill_logits(named.model->model, batch, threads, 6, 17, 9);   // a prefix, then a later range
        check_prefill_logits(named.model->model, batch, threads, 2, 12, 11);  // the last position alone
      }
    }
  }
}

TEST_CASE("mote_prefill_logits: an abort leaves the rows of the batches that ran") {
  const auto models = tiny_models();
  const mote_model &model = models[0].model->model;
  const uint32_t vocab = vocab_of(model);
  const std::vector<int32_t> tokens = random_tokens(4, 12, vocab);
  const std::vector<float> expected = decoded_logits(model, {}, tokens, vocab);
  Progress progress;
  progress.stop_at_call = 2;
  auto s = open_session(model, options_for(4, 1, &progress));
  std::vector<float> out(12 * vocab, -1.0f);
  CHECK(mote_prefill_logits(&s->session, tokens.data(), 12, 0, out.data(), out.size()) == MOTE_ERR_ABORTED);
  REQUIRE(mote_session_position(&s->session) == 8);
  CHECK(same_bits(out.data(), expected.data(), 8 * vocab));
  CHECK(out[8 * vocab] == -1.0f);  // nothing written past the batches that ran
}

TEST_CASE("mote_prefill_logits: hostile arguments are refused before anything runs") {
  const auto models = tiny_models();
  const mote_model &model = models[0].model->model;
  const uint32_t vocab = vocab_of(model);
  std::vector<float> out(4 * vocab);
  const int32_t tokens[4] = {1, 2, 3, 4};
  mote_session empty{nullptr};
  CHECK(mote_prefill_logits(nullptr, tokens, 4, 0, out.data(), out.size()) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_prefill_logits(&empty, tokens, 4, 0, out.data(), out.size()) == MOTE_ERR_INVALID_ARGUMENT);
  auto s = open_session(model, options_for(64, 1, nullptr));
  mote_session *session = &s->session;
  CHECK(mote_prefill_logits(session, tokens, 4, 5, out.data(), out.size()) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(std::string(mote_session_error(session)) == "first position 5 is past the 4 tokens");
  CHECK(mote_prefill_logits(session, tokens, 4, 0, nullptr, out.size()) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_prefill_logits(session, nullptr, 4, 0, out.data(), out.size()) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_prefill_logits(session, tokens, 4, 0, out.data(), 4 * vocab - 1) == MOTE_ERR_BUFFER_TOO_SMALL);
  CHECK(mote_prefill_logits(session, tokens, 4, 1, out.data(), 3 * vocab - 1) == MOTE_ERR_BUFFER_TOO_SMALL);
  CHECK(mote_prefill_logits(session, tokens, SIZE_MAX, 0, out.data(), out.size()) == MOTE_ERR_BUFFER_TOO_SMALL);
  CHECK(std::string(mote_session_error(session)).find("need more than") != std::string::npos);
  const int32_t bad[2] = {1, static_cast<int32_t>(vocab)};
  CHECK(mote_prefill_logits(session, bad, 2, 0, out.data(), out.size()) == MOTE_ERR_BAD_TOKEN);
  std::vector<int32_t> too_many(65, 1);
  std::vector<float> big(65 * vocab);
  CHECK(mote_prefill_logits(session, too_many.data(), 65, 0, big.data(), big.size()) == MOTE_ERR_CONTEXT_FULL);
  CHECK(mote_session_position(session) == 0);  // every refusal changed nothing
  CHECK(mote_logits(session) == nullptr);
  // Nothing asked for: a plain prefill (out may be null), the last logits as usual.
  CHECK(mote_prefill_logits(session, tokens, 4, 4, nullptr, 0) == MOTE_OK);
  CHECK(mote_session_position(session) == 4);
  CHECK(mote_logits(session) != nullptr);
  CHECK(mote_prefill_logits(session, nullptr, 0, 0, nullptr, 0) == MOTE_OK);
}

TEST_CASE("SmolLM2: mote_prefill_logits equals decoding at every position, 1 and 2 threads") {
  const ConvertedModel *smollm2 = smollm2_model(std::nullopt);
  if (smollm2 == nullptr) return;
  for (const uint32_t threads : {1u, 2u}) {
    CAPTURE(threads);
    check_prefill_logits(smollm2->model, 16, threads, 3, 40, 0);
  }
}

// A speculative verify pass is a batch of 2-16 tokens, which the kernels tile apart from decoding
// (one group of 8 rows at a time up to 2 tokens, two side by side from 3): every position's
// logits still equal one-token-at-a-time decoding, in the GGUF's own q4_1x8 and converted to q4_k
// (q4_kx8 where the rows allow, q5_0x8 elsewhere).
TEST_CASE("SmolLM2: a verify pass of 2, 4, 8 or 16 tokens equals decoding at every position, 1 and 2 threads") {
  for (const std::optional<mote::format::DType> dtype :
       {std::optional<mote::format::DType>{}, std::optional<mote::format::DType>{mote::format::DType::q4_k}}) {
    const ConvertedModel *smollm2 = smollm2_model(dtype);
    if (smollm2 == nullptr) return;
    for (const uint32_t batch : {2u, 4u, 8u, 16u}) {
      for (const uint32_t threads : {1u, 2u}) {
        CAPTURE(dtype.has_value());
        CAPTURE(batch);
        CAPTURE(threads);
        check_prefill_logits(smollm2->model, batch, threads, 3, batch + 1, 0);
      }
    }
  }
}

// Speculative decoding (mote_generate's drafters): drafting changes how many tokens a forward
// pass yields, never the text. Every case compares against plain decoding (MOTE_DRAFT_NONE, one
// pass per token) and, for the sampling rule, against the model's own softmax (chi-square).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>

#include "model/model.hpp"
#include "sample/draft.hpp"
#include "test_support.hpp"

using namespace mote_test;
using mote::format::DType;
using mote::format::RopeLayout;

namespace {

// What one mote_generate returned and left behind.
struct Generation {
  mote_status status = MOTE_OK;
  std::vector<int32_t> tokens;  // passed to on_token
  std::vector<int32_t> cache;   // the session's tokens afterwards
  std::vector<float> logits;    // the session's logits afterwards (empty: none)
  mote_generation_stats stats{};
  std::string error;
};

size_t vocab_of(const mote_model &model) {
  mote_model_info info;
  mote_model_info_get(&model, &info);
  return info.vocab_size;
}

int collect(void *user, int32_t token, const char *, size_t) {
  static_cast<std::vector<int32_t> *>(user)->push_back(token);
  return 0;
}

Generation generate_on(mote_session *session, const mote_model &model, const std::vector<int32_t> &prompt,
                       uint32_t n_new, const mote_sampler_options &options) {
  Generation g;
  g.status = mote_generate(session, prompt.data(), prompt.size(), n_new, &options, collect, &g.tokens, nullptr);
  g.error = mote_session_error(session);
  size_t n = 0;
  mote_session_tokens(session, nullptr, 0, &n);
  g.cache.resize(n);
  REQUIRE(mote_session_tokens(session, g.cache.data(), n, &n) == MOTE_OK);
  if (const float *logits = mote_logits(session)) {
    g.logits.assign(logits, logits + vocab_of(model));
  }
  REQUIRE(mote_generate_stats(session, &g.stats) == MOTE_OK);
  return g;
}

Generation generate(const mote_model &model, const std::vector<int32_t> &prompt, uint32_t n_new,
                    const mote_sampler_options &options, mote_session_options session_options = f32_kv_options()) {
  auto s = open_session(model, session_options);
  return generate_on(&s->session, model, prompt, n_new, options);
}

mote_sampler_options with_draft(mote_sampler_options o, mote_draft_kind kind) {
  o.draft = kind;
  return o;
}

mote_sampler_options greedy_options() {
  mote_sampler_options o = mote_sampler_options_default();
  o.temperature = 0.0f;
  return o;
}

// Drafting on gives plain decoding's tokens, cache and logits, bit for bit.
void check_same(const Generation &plain, const Generation &drafted) {
  CHECK(drafted.status == plain.status);
  CHECK(drafted.tokens == plain.tokens);
  CHECK(drafted.cache == plain.cache);
  CHECK(drafted.logits.size() == plain.logits.size());
  CHECK(std::memcmp(drafted.logits.data(), plain.logits.data(), plain.logits.size() * sizeof(float)) == 0);
  CHECK(drafted.stats.generated == plain.tokens.size());
  CHECK(plain.stats.passes == plain.stats.generated);  // plain: one pass per token
  CHECK(plain.stats.drafted == 0);
}

struct Stories {
  std::unique_ptr<ConvertedModel> stories, aidreams;
};

// stories260K and aidreams260K (one vocabulary, aidreams_tok512), or nulls (skipped, saying so).
Stories open_stories() {
  const std::string stories = shared_model("stories260K.bin"), aidreams = shared_model("aidreams260K.bin");
  const std::string tokenizer = shared_model("aidreams_tok512.bin");
  if (stories.empty() || aidreams.empty() || tokenizer.empty()) return {};
  return Stories{convert_and_open(stories, tokenizer), convert_and_open(aidreams, tokenizer)};
}

const std::vector<int32_t> kStoriesPrompt = {1, 84, 405, 395, 332, 175, 59, 272, 346, 391, 156, 82, 188, 206, 62, 250};

}  // namespace

TEST_CASE("drafting gives plain decoding's greedy text on the tiny golden models") {
  const std::vector<std::string> lines = read_lines(golden_path("tiny_models.txt"));
  REQUIRE(lines.size() >= 12);
  for (const std::string &line : lines) {
    CAPTURE(line);
    auto m = convert_and_open(
        golden_path(manifest_value(line, "case") + ".bin"), golden_path(manifest_value(line, "tokenizer")),
        manifest_value(line, "dtype") == "f16" ? DType::f16 : DType::f32,
        manifest_value(line, "rope") == "split" ? RopeLayout::split_half : RopeLayout::interleaved);
    const std::vector<int32_t> prompt = parse_ids(manifest_value(line, "tokens"));
    mote_sampler_options options = greedy_options();
    options.ignore_eos = 1;  // random weights end early otherwise
    const Generation plain = generate(m->model, prompt, 40, with_draft(options, MOTE_DRAFT_NONE));
    check_same(plain, generate(m->model, prompt, 40, with_draft(options, MOTE_DRAFT_LOOKUP)));
    check_same(plain, generate(m->model, prompt, 40, with_draft(options, MOTE_DRAFT_AUTO)));
    options.repetition_penalty = 1.3f;  // the penalty's window moves with the drafted positions
    check_same(generate(m->model, prompt, 40, with_draft(options, MOTE_DRAFT_NONE)),
               generate(m->model, prompt, 40, with_draft(options, MOTE_DRAFT_AUTO)));
  }
}

TEST_CASE("stories: drafting keeps greedy and sampled text, and drafts are kept") {
  const Stories m = open_stories();
  if (!m.stories) return;
  const mote_model &model = m.stories->model;
  uint64_t accepted = 0, passes = 0, generated = 0;
  for (const mote_kv_dtype kv : {MOTE_KV_F32, MOTE_KV_F16, MOTE_KV_Q8_0}) {
    mote_session_options session_options = mote_session_options_default();
    session_options.kv_dtype = kv;
    for (const uint32_t batch : {3u, 64u}) {  // a batch below the draft splits the checking pass
      session_options.batch_size = batch;
      mote_sampler_options options = greedy_options();
      options.ignore_eos = 1;
      const Generation plain =
          generate(model, kStoriesPrompt, 64, with_draft(options, MOTE_DRAFT_NONE), session_options);
      const Generation drafted = generate(model, kStoriesPrompt, 64, options, session_options);
      check_same(plain, drafted);
      accepted += drafted.stats.accepted;
      passes += drafted.stats.passes;
      generated += drafted.stats.generated;
    }
  }
  MESSAGE("stories260K greedy: " << generated << " tokens in " << passes << " passes, " << accepted
                                 << " drafted tokens kept");
  CHECK(accepted > 0);  // its greedy text repeats: prompt lookup must find it
  CHECK(passes < generated);

  // Sampling: the same random numbers in the same order, so the same text for every seed.
  uint64_t sampled_accepted = 0;
  mote_sampler_options sampled = mote_sampler_options_default();
  sampled.repetition_penalty = 1.1f;
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    CAPTURE(seed);
    sampled.seed = seed;
    const Generation plain = generate(model, kStoriesPrompt, 24, with_draft(sampled, MOTE_DRAFT_NONE));
    const Generation drafted = generate(model, kStoriesPrompt, 24, sampled);
    check_same(plain, drafted);
    sampled_accepted += drafted.stats.accepted;
  }
  MESSAGE("stories260K sampled, 200 seeds: " << sampled_accepted << " drafted tokens kept");
  CHECK(sampled_accepted > 0);
}

TEST_CASE("stories: a draft model with the same vocabulary drafts, and the text stays the same") {
  const Stories m = open_stories();
  if (!m.stories) return;
  // aidreams260K drafting for stories260K, and stories260K for itself: every draft is kept.
  for (const ConvertedModel *draft_model : {m.aidreams.get(), m.stories.get()}) {
    auto draft = open_session(draft_model->model, f32_kv_options());
    mote_sampler_options options = greedy_options();
    options.draft = MOTE_DRAFT_MODEL;  // a draft model as large as the target never pays: AUTO would not use it
    options.draft_session = &draft->session;
    options.draft_p_min = 0.0f;
    options.ignore_eos = 1;
    const Generation plain = generate(m.stories->model, kStoriesPrompt, 48, with_draft(options, MOTE_DRAFT_NONE));
    auto target = open_session(m.stories->model, f32_kv_options());
    const Generation drafted = generate_on(&target->session, m.stories->model, kStoriesPrompt, 48, options);
    check_same(plain, drafted);
    MESSAGE("draft model: " << drafted.stats.generated << " tokens in " << drafted.stats.passes << " passes");
    CHECK(drafted.stats.drafted > 0);
    if (draft_model == m.stories.get()) {  // drafting for itself, every draft holds
      CHECK(drafted.stats.accepted == drafted.stats.drafted);
      CHECK(drafted.stats.passes * 4 <= drafted.stats.generated);
    }
    // The draft session followed the target's tokens.
    CHECK(mote_session_position(&draft->session) > kStoriesPrompt.size());
    // Sampled, with the draft model: the same text for each seed.
    options.temperature = 0.8f;
    mote_session_reset(&target->session);
    for (uint64_t seed = 1; seed <= 20; ++seed) {
      options.seed = seed;
      check_same(generate(m.stories->model, kStoriesPrompt, 24, with_draft(options, MOTE_DRAFT_NONE)),
                 generate_on(&target->session, m.stories->model, kStoriesPrompt, 24, options));
      mote_session_reset(&target->session);
    }
  }
}

TEST_CASE("stories: a sampled token at a drafted position follows the model's distribution (chi-square)") {
  const Stories m = open_stories();
  if (!m.stories) return;
  const mote_model &model = m.stories->model;
  // The prompt and greedy text into its repeating run: prompt lookup drafts the token after the
  // sampled one whenever that one continues the run.
  std::vector<int32_t> prompt = kStoriesPrompt;
  mote_sampler_options greedy = greedy_options();
  greedy.ignore_eos = 1;
  const Generation run = generate(model, kStoriesPrompt, 28, greedy);
  prompt.insert(prompt.end(), run.tokens.begin(), run.tokens.end());
  mote_sampler_options pure = mote_sampler_options_default();  // plain softmax: nothing cut
  pure.temperature = 1.0f;
  pure.top_k = 0;
  pure.top_p = 1.0f;
  pure.min_p = 0.0f;
  pure.ignore_eos = 1;
  pure.draft = MOTE_DRAFT_LOOKUP;  // whenever it has a proposal
  const size_t vocab = vocab_of(model);
  auto softmax = [&](const float *logits) {
    std::vector<double> p(vocab);
    const double max = *std::max_element(logits, logits + vocab);
    double sum = 0;
    for (size_t i = 0; i < vocab; ++i) sum += p[i] = std::exp(logits[i] - max);
    for (double &x : p) x /= sum;
    return p;
  };
  auto s = open_session(model, f32_kv_options());
  REQUIRE(mote_prefill(&s->session, prompt.data(), prompt.size()) == MOTE_OK);
  const std::vector<double> first = softmax(mote_logits(&s->session));

  // 10^4 seeds, two tokens each, drafting on.
  constexpr int kDraws = 10000;
  std::map<std::pair<int32_t, int32_t>, int> counts;
  uint64_t drafted = 0;
  for (int seed = 0; seed < kDraws; ++seed) {
    pure.seed = static_cast<uint64_t>(seed) + 1;
    REQUIRE(mote_session_truncate(&s->session, static_cast<uint32_t>(prompt.size() - 1)) == MOTE_OK);
    std::vector<int32_t> out;
    REQUIRE(mote_generate(&s->session, &prompt.back(), 1, 2, &pure, collect, &out, nullptr) == MOTE_OK);
    REQUIRE(out.size() == 2);
    ++counts[{out[0], out[1]}];
    mote_generation_stats stats{};
    REQUIRE(mote_generate_stats(&s->session, &stats) == MOTE_OK);
    drafted += stats.drafted;
  }
  CHECK(drafted >= kDraws / 10);
  // Expected: p(a) p(b | a); p(b | a) from the logits after a (plain decoding, a session of its own).
  double chi2 = 0, lumped_expected = 0;
  int lumped_observed = 0, bins = 0;
  std::map<int32_t, std::vector<double>> second;
  for (size_t a = 0; a < vocab; ++a) {
    if (first[a] * kDraws < 5) continue;
    auto t = open_session(model, f32_kv_options());
    REQUIRE(mote_prefill(&t->session, prompt.data(), prompt.size()) == MOTE_OK);
    const float *logits = nullptr;
    REQUIRE(mote_decode(&t->session, static_cast<int32_t>(a), &logits) == MOTE_OK);
    second[static_cast<int32_t>(a)] = softmax(logits);
  }
  int observed_total = 0;
  for (const auto &[a, p_b] : second) {
    for (size_t b = 0; b < vocab; ++b) {
      const double expected = first[static_cast<size_t>(a)] * p_b[b] * kDraws;
      const auto found = counts.find({a, static_cast<int32_t>(b)});
      const int observed = found == counts.end() ? 0 : found->second;
      observed_total += observed;
      if (expected >= 5) {
        chi2 += (observed - expected) * (observed - expected) / expected;
        ++bins;
      } else {
        lumped_expected += expected;
        lumped_observed += observed;
      }
    }
  }
  lumped_expected += kDraws - std::accumulate(second.begin(), second.end(), 0.0, [&](double sum, const auto &entry) {
                       return sum + first[static_cast<size_t>(entry.first)] * kDraws;
                     });
  lumped_observed += kDraws - observed_total;
  chi2 += (lumped_observed - lumped_expected) * (lumped_observed - lumped_expected) / lumped_expected;
  ++bins;
  // The 0.999 quantile of chi-square with k degrees of freedom, Wilson-Hilferty's approximation.
  const double k = bins - 1, z = 3.090;
  const double critical = k * std::pow(1 - 2 / (9 * k) + z * std::sqrt(2 / (9 * k)), 3);
  MESSAGE("chi-square " << chi2 << " over " << bins << " bins (0.999 critical " << critical << "), " << drafted
                        << " drafted tokens checked");
  CHECK(bins >= 10);
  CHECK(chi2 < critical);
}

TEST_CASE("drafting options: refused in one line, arena sized exactly") {
  auto m = convert_and_open(golden_path("tiny_mha.bin"), golden_path("tiny_tok64.bin"));
  const size_t vocab = vocab_of(m->model);
  mote_session_options options = f32_kv_options();
  options.draft_capacity = 0;
  const size_t without = mote_arena_size(&m->model, &options);
  options.draft_capacity = 8;
  const size_t with = mote_arena_size(&m->model, &options);
  CHECK(with - without == (9 * vocab * sizeof(float) + 63) / 64 * 64);  // the rows, 64-byte aligned
  options.draft_capacity = MOTE_MAX_DRAFT + 1;
  CHECK(mote_arena_size(&m->model, &options) == 0);

  auto s = open_session(m->model, f32_kv_options());
  const std::vector<int32_t> prompt = {1, 37, 2, 49};
  mote_sampler_options o = greedy_options();
  auto refused = [&](const mote_sampler_options &bad, const char *words) {
    const Generation g = generate_on(&s->session, m->model, prompt, 4, bad);
    CHECK(g.status == MOTE_ERR_INVALID_ARGUMENT);
    CHECK(g.error.find(words) != std::string::npos);
    CHECK(g.error.find('\n') == std::string::npos);
    CHECK(g.tokens.empty());
  };
  o.draft_max = MOTE_MAX_DRAFT + 1;
  refused(o, "draft-max");
  o = greedy_options();
  o.draft_min = 9;
  refused(o, "draft-min");
  o = greedy_options();
  o.draft_p_min = 1.5f;
  refused(o, "draft-p-min");
  o = greedy_options();
  o.draft = static_cast<mote_draft_kind>(7);
  refused(o, "draft kind");
  o = greedy_options();
  o.draft_session = &s->session;
  refused(o, "itself");

  // A draft model with another vocabulary (tiny_tok64 against aidreams_tok512's 512 tokens).
  const Stories stories = open_stories();
  if (stories.stories) {
    auto draft = open_session(m->model, f32_kv_options());
    auto target = open_session(stories.stories->model, f32_kv_options());
    o = greedy_options();
    o.draft_session = &draft->session;
    const Generation g = generate_on(&target->session, stories.stories->model, kStoriesPrompt, 4, o);
    CHECK(g.status == MOTE_ERR_INVALID_ARGUMENT);
    CHECK(g.error.find("vocabulary") != std::string::npos);
    CHECK(g.cache.empty());  // refused before the prompt ran
  }

  // Drafts never run past the context: it fills exactly as plain decoding fills it.
  mote_session_options small = f32_kv_options();
  small.context_length = 12;
  mote_sampler_options loop = greedy_options();
  loop.ignore_eos = 1;
  const Generation plain = generate(m->model, prompt, 32, with_draft(loop, MOTE_DRAFT_NONE), small);
  CHECK(plain.status == MOTE_ERR_CONTEXT_FULL);
  check_same(plain, generate(m->model, prompt, 32, loop, small));
}

namespace {

// A chat turn asking the model to repeat a text (the shape of an edit: the reply copies most of
// the prompt), tokenized with the model's template.
std::vector<int32_t> repeat_prompt(const mote_model &model) {
  return chat_tokens(model,
                     "Copy this list exactly, one item per line:\n1. apples and pears\n2. a loaf of brown bread\n"
                     "3. two litres of milk\n4. a dozen eggs\n5. olive oil\n6. black pepper\n7. green tea");
}

// Greedy and sampled replies with drafting off and on (the default options): the same tokens,
// and the drafts of a reply that copies its prompt are kept.
void check_real_reply(const mote_model &model, const char *name) {
  const std::vector<int32_t> prompt = repeat_prompt(model);
  mote_session_options session_options = mote_session_options_default();
  session_options.context_length = 1024;
  const mote_sampler_options greedy = greedy_options();
  const Generation plain = generate(model, prompt, 64, with_draft(greedy, MOTE_DRAFT_NONE), session_options);
  const Generation drafted = generate(model, prompt, 64, greedy, session_options);
  check_same(plain, drafted);
  MESSAGE(std::string(name) << " greedy: " << drafted.stats.generated << " tokens in " << drafted.stats.passes
                            << " passes (" << drafted.stats.accepted << " of " << drafted.stats.drafted
                            << " drafted tokens kept)");
  CHECK(drafted.stats.accepted * 4 >= drafted.stats.generated);  // most of the list is copied
  mote_sampler_options sampled = mote_sampler_options_default();
  sampled.seed = 7;
  check_same(generate(model, prompt, 48, with_draft(sampled, MOTE_DRAFT_NONE), session_options),
             generate(model, prompt, 48, sampled, session_options));
}

}  // namespace

TEST_CASE("SmolLM2: drafting keeps the greedy and sampled reply, and a copied list is drafted") {
  const ConvertedModel *m = smollm2_model(std::nullopt);
  if (m == nullptr) return;
  check_real_reply(m->model, "SmolLM2-135M-Instruct");
}

TEST_CASE("real: Qwen2.5-Coder-0.5B drafting for itself, and prompt lookup, keep the reply") {
  const std::string path = real_gguf("qwen2.5-coder-0.5b-instruct-q4_k_m.gguf");
  if (path.empty()) return;
  auto m = gguf_converted(path, std::nullopt);
  check_real_reply(m->model, "Qwen2.5-Coder-0.5B");
  // The draft model path on a real vocabulary (the model drafting for itself keeps every draft).
  mote_session_options session_options = mote_session_options_default();
  session_options.context_length = 1024;
  auto draft = open_session(m->model, session_options);
  mote_sampler_options options = greedy_options();
  options.draft = MOTE_DRAFT_MODEL;
  options.draft_session = &draft->session;
  const std::vector<int32_t> prompt = repeat_prompt(m->model);
  const Generation plain = generate(m->model, prompt, 32, with_draft(options, MOTE_DRAFT_NONE), session_options);
  const Generation drafted = generate(m->model, prompt, 32, options, session_options);
  check_same(plain, drafted);
  CHECK(drafted.stats.drafted > 0);
  CHECK(drafted.stats.accepted == drafted.stats.drafted);
}

TEST_CASE("SmolLM2: a draft model classifies its draft vocabulary only, with the whole classifier's bits there") {
  const ConvertedModel *m = smollm2_model(std::nullopt);
  if (m == nullptr) return;
  const size_t vocab = vocab_of(m->model);
  REQUIRE(vocab > mote::kDraftVocabulary);  // SmolLM2's 49152 tokens: the draft vocabulary is a third
  mote_session_options session_options = mote_session_options_default();
  session_options.context_length = 512;
  auto full = open_session(m->model, session_options);
  auto draft = open_session(m->model, session_options);
  mote::Session &d = *static_cast<mote::Session *>(draft->session.impl_);
  const std::vector<int32_t> prompt = chat_tokens(m->model, "Copy this word: Okonkwo-Lindqvist.");
  REQUIRE(mote_prefill(&full->session, prompt.data(), prompt.size()) == MOTE_OK);
  d.draft_vocabulary = mote::kDraftVocabulary;
  REQUIRE(mote_prefill(&draft->session, prompt.data(), prompt.size()) == MOTE_OK);
  CHECK(d.partial_logits);
  const float *expected = mote_logits(&full->session);
  REQUIRE(expected != nullptr);
  std::vector<bool> in_cache(vocab, false);
  size_t rare = 0;  // the prompt's tokens past the common ones: classified because they are in the cache
  for (int32_t t : prompt) {
    in_cache[static_cast<size_t>(t)] = true;
    if (t >= static_cast<int32_t>(mote::kDraftVocabulary)) ++rare;
  }
  MESSAGE("prompt tokens past the first " << mote::kDraftVocabulary << ": " << rare);
  REQUIRE(rare > 0);
  size_t left_out = 0, wrong = 0;
  int32_t best = -1;  // the whole classifier's argmax over the draft vocabulary
  for (size_t i = 0; i < vocab; ++i) {
    const float got = d.state.logits[i];
    const bool drafted = i < mote::kDraftVocabulary || in_cache[i];
    if (drafted && (best < 0 || expected[i] > expected[best])) best = static_cast<int32_t>(i);
    if (std::memcmp(&got, &expected[i], sizeof got) == 0) continue;
    if (!drafted && got == -1e30f) {
      ++left_out;
    } else {
      ++wrong;
    }
  }
  CHECK(wrong == 0);
  CHECK(left_out + mote::kDraftVocabulary + 8 * prompt.size() >= vocab);  // whole groups of 8 rows at most
  const float *partial = d.state.logits;
  CHECK(std::max_element(partial, partial + vocab) - partial == best);
  // Drafting with it keeps the text; afterwards it classifies in full and leaves no partial logits.
  mote_sampler_options options = greedy_options();
  options.draft = MOTE_DRAFT_MODEL;
  options.draft_session = &draft->session;
  const Generation plain = generate(m->model, prompt, 24, with_draft(options, MOTE_DRAFT_NONE), session_options);
  const Generation drafted = generate(m->model, prompt, 24, options, session_options);
  check_same(plain, drafted);
  CHECK(drafted.stats.drafted > 0);
  CHECK(d.draft_vocabulary == 0);
  CHECK(mote_logits(&draft->session) == nullptr);
  REQUIRE(mote_session_reset(&draft->session) == MOTE_OK);
  REQUIRE(mote_prefill(&draft->session, prompt.data(), prompt.size()) == MOTE_OK);
  CHECK(std::memcmp(mote_logits(&draft->session), expected, vocab * sizeof(float)) == 0);
}

TEST_CASE("SmolLM2: grammar fast-forward drafts a JSON schema's keys, and the reply stays the same") {
  const ConvertedModel *m = smollm2_model(std::nullopt);
  if (m == nullptr) return;
  const std::string schema =
      R"({"type":"object","properties":{"customer_name":{"type":"string"},"delivery_address":{"type":"string"},)"
      R"("number_of_items":{"type":"integer"}},"required":["customer_name","delivery_address","number_of_items"]})";
  auto compiled = compile_schema(m->model, schema);
  mote_grammar &grammar = compiled->grammar;
  const std::vector<int32_t> prompt =
      chat_tokens(m->model, "Reply with JSON only: Ann Lee orders 3 lamps for 5 Elm Street, Leeds.");
  auto run = [&](mote_draft_kind kind) {
    mote_sampler_options options = greedy_options();
    options.draft = kind;
    auto s = open_session(m->model, mote_session_options_default());
    REQUIRE(mote_grammar_reset(&grammar) == MOTE_OK);
    Generation g;
    g.status = mote_generate_constrained(&s->session, prompt.data(), prompt.size(), 96, &options, &grammar, collect,
                                         &g.tokens, nullptr);
    REQUIRE(mote_generate_stats(&s->session, &g.stats) == MOTE_OK);
    return g;
  };
  const Generation plain = run(MOTE_DRAFT_NONE), drafted = run(MOTE_DRAFT_AUTO);
  CHECK(plain.status == MOTE_OK);
  CHECK(drafted.status == MOTE_OK);
  CHECK(drafted.tokens == plain.tokens);
  MESSAGE("SmolLM2 JSON: " << drafted.stats.generated << " tokens in " << drafted.stats.passes << " passes ("
                           << drafted.stats.accepted << " of " << drafted.stats.drafted << " drafted tokens kept)");
  CHECK(drafted.stats.accepted >= 6);  // at least the keys' tokens after the first
}

TEST_CASE("SmolLM2: grammar fast-forward, lookup and a draft model in one pass keep the reply, greedy and sampled") {
  const ConvertedModel *m = smollm2_model(std::nullopt);
  if (m == nullptr) return;
  // A reply that quotes its prompt in other tokens than the prompt's (values in quotes), under a
  // schema whose structure repeats (an array of objects): every drafter has something to draft.
  const std::string schema =
      R"({"type":"object","properties":{"customer":{"type":"string"},"items":{"type":"array","items":)"
      R"({"type":"object","properties":{"product":{"type":"string"},"quantity":{"type":"integer"}},)"
      R"("required":["product","quantity"]}}},"required":["customer","items"]})";
  auto compiled = compile_schema(m->model, schema);
  mote_grammar &grammar = compiled->grammar;
  const std::vector<int32_t> prompt = chat_tokens(
      m->model,
      "Reply with JSON only. Ann Lee-Marsh orders 3 recycled paper boxes, 2 blue gel pens and 4 whiteboard erasers.");
  mote_session_options session_options = mote_session_options_default();
  session_options.context_length = 512;
  auto run = [&](mote_sampler_options options, mote_session *draft) {
    options.draft_session = draft;
    auto s = open_session(m->model, session_options);
    REQUIRE(mote_grammar_reset(&grammar) == MOTE_OK);
    Generation g;
    g.status = mote_generate_constrained(&s->session, prompt.data(), prompt.size(), 96, &options, &grammar, collect,
                                         &g.tokens, nullptr);
    g.error = mote_session_error(&s->session);
    REQUIRE(mote_generate_stats(&s->session, &g.stats) == MOTE_OK);
    return g;
  };
  // The model drafting for itself: every draft holds. AUTO weighs it at its full cost (as large
  // as the model) and drafts with the grammar and lookup; MODEL drafts with it alone, one token
  // at a time between the grammar's checks; LOOKUP with lookup alone.
  auto draft = open_session(m->model, session_options);
  mote_sampler_options greedy = greedy_options();
  const Generation plain = run(with_draft(greedy, MOTE_DRAFT_NONE), nullptr);
  REQUIRE(plain.status == MOTE_OK);
  for (const mote_draft_kind kind : {MOTE_DRAFT_AUTO, MOTE_DRAFT_LOOKUP, MOTE_DRAFT_MODEL}) {
    CAPTURE(static_cast<int>(kind));
    const Generation drafted = run(with_draft(greedy, kind), &draft->session);
    CHECK(drafted.status == MOTE_OK);
    CHECK(drafted.tokens == plain.tokens);
    CHECK(drafted.stats.generated == plain.tokens.size());
    MESSAGE("SmolLM2 JSON, drafter " << static_cast<int>(kind) << ": " << drafted.stats.generated << " tokens in "
                                     << drafted.stats.passes << " passes (" << drafted.stats.accepted << " of "
                                     << drafted.stats.drafted << " drafted tokens kept)");
    CHECK(drafted.stats.accepted > 0);
    CHECK(drafted.stats.passes < plain.stats.passes);
  }
  // Sampled: the same random numbers in the same order, so the same text per seed.
  mote_sampler_options sampled = mote_sampler_options_default();
  sampled.temperature = 0.7f;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    CAPTURE(seed);
    sampled.seed = seed;
    const Generation a = run(with_draft(sampled, MOTE_DRAFT_NONE), nullptr);
    const Generation b = run(sampled, &draft->session);
    CHECK(a.status == b.status);
    CHECK(a.tokens == b.tokens);
  }
}

// The seeded PCG32 generator and the sampling chain (penalty, temperature, top-k, top-p, min-p).
#include <cmath>
#include <vector>

#include "sample/sampler.hpp"
#include "test_support.hpp"

namespace {

mote_sampler_options plain_options(float temperature) {
  mote_sampler_options options{};
  options.temperature = temperature;
  options.top_k = 0;
  options.top_p = 1.0f;
  options.min_p = 0.0f;
  options.repetition_penalty = 1.0f;
  options.repetition_last_n = 64;
  options.seed = 0;
  return options;
}

// Draws many tokens from the same logits; returns how often each id came up, as fractions.
std::vector<double> histogram(const mote_sampler_options &options, const std::vector<float> &logits, int draws,
                              uint64_t seed = 7) {
  mote::Rng rng;
  mote::rng_seed(rng, seed);
  std::vector<mote::Candidate> scratch(logits.size());
  std::vector<double> frequency(logits.size(), 0.0);
  int out_of_range = 0;
  for (int i = 0; i < draws; ++i) {
    std::vector<float> copy = logits;  // sample() may modify its logits
    const int32_t id = mote::sample(options, rng, copy.data(), copy.size(), nullptr, 0, scratch.data());
    if (id < 0 || static_cast<size_t>(id) >= logits.size()) {
      ++out_of_range;
      continue;
    }
    frequency[static_cast<size_t>(id)] += 1.0 / draws;
  }
  CHECK(out_of_range == 0);
  return frequency;
}

std::vector<double> softmax(const std::vector<float> &logits, double temperature) {
  std::vector<double> p(logits.size());
  double sum = 0.0;
  for (size_t i = 0; i < logits.size(); ++i) sum += p[i] = std::exp(logits[i] / temperature);
  for (double &x : p) x /= sum;
  return p;
}

// Logits whose softmax at temperature 1 is exactly these probabilities.
std::vector<float> logits_for(const std::vector<double> &probabilities) {
  std::vector<float> logits;
  for (double p : probabilities) logits.push_back(static_cast<float>(std::log(p)));
  return logits;
}

void check_close(const std::vector<double> &actual, const std::vector<double> &expected, double tolerance) {
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    CAPTURE(i);
    CHECK(std::fabs(actual[i] - expected[i]) < tolerance);
  }
}

int32_t sample_once(const mote_sampler_options &options, std::vector<float> logits,
                    const std::vector<int32_t> &recent = {}) {
  mote::Rng rng;
  mote::rng_seed(rng, options.seed);
  std::vector<mote::Candidate> scratch(logits.size());
  return mote::sample(options, rng, logits.data(), logits.size(), recent.data(), recent.size(), scratch.data());
}

}  // namespace

TEST_CASE("PCG32 reproduces the reference generator's first outputs") {
  // pcg32-demo (O'Neill's pcg-c-basic) with pcg32_srandom_r(42, 54) prints these; recomputed
  // independently with the reference formulas in Python:
  //   state = state * 6364136223846793005 + inc;  xorshifted = ((old >> 18) ^ old) >> 27;
  //   output = rotr32(xorshifted, old >> 59);  seeding: state = 0, inc = 2 * 54 + 1, step,
  //   state += seed, step.
  mote::Rng rng;
  mote::rng_seed(rng, 42);
  const uint32_t expected[] = {0xa15c02b7u, 0x7b47f409u, 0xba1d3330u, 0x83d2f293u, 0xbfa4784bu, 0xcbed606eu};
  for (uint32_t value : expected) CHECK(mote::rng_next_u32(rng) == value);

  mote::rng_seed(rng, 0);
  CHECK(mote::rng_next_u32(rng) == 0x47c28b93u);
  CHECK(mote::rng_next_u32(rng) == 0xb98f6a27u);
  CHECK(mote::rng_next_u32(rng) == 0x7d3dcb1eu);
}

TEST_CASE("rng_next_float is uniform in [0, 1)") {
  mote::Rng rng;
  mote::rng_seed(rng, 5);
  double sum = 0.0;
  int outside = 0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    const float x = mote::rng_next_float(rng);
    if (!(x >= 0.0f && x < 1.0f)) ++outside;
    sum += x;
  }
  CHECK(outside == 0);
  CHECK(sum / n == doctest::Approx(0.5).epsilon(0.01));
}

TEST_CASE("argmax takes the lowest index on ties and refuses a NaN") {
  const float tie[] = {1.0f, 3.0f, 2.0f, 3.0f};
  CHECK(mote::argmax(tie, 4) == 1);
  const float one[] = {-5.0f};
  CHECK(mote::argmax(one, 1) == 0);
  const float with_nan[] = {-2.0f, -1.0f, NAN, 0.5f};
  size_t bad = 99;
  CHECK(mote::argmax(with_nan, 4, &bad) == -1);
  CHECK(bad == 2);
  CHECK(mote::argmax(tie, 0) == -1);
}

TEST_CASE("temperature 0 is greedy and consumes no random numbers") {
  const std::vector<float> logits = {0.1f, 2.5f, -3.0f, 2.4f};
  mote_sampler_options options = plain_options(0.0f);
  options.top_k = 2;  // filters do not matter when greedy
  mote::Rng rng, untouched;
  mote::rng_seed(rng, 9);
  mote::rng_seed(untouched, 9);
  std::vector<float> copy = logits;
  std::vector<mote::Candidate> scratch(logits.size());
  CHECK(mote::sample(options, rng, copy.data(), copy.size(), nullptr, 0, scratch.data()) == 1);
  CHECK(mote::rng_next_u32(rng) == mote::rng_next_u32(untouched));
  options.temperature = -1.0f;
  CHECK(sample_once(options, logits) == 1);
}

TEST_CASE("temperature sampling follows softmax(logits / temperature)") {
  const std::vector<float> logits = {1.0f, 2.0f, 0.5f, 3.0f, -1.0f};
  for (float temperature : {1.0f, 0.7f, 2.0f}) {
    CAPTURE(temperature);
    check_close(histogram(plain_options(temperature), logits, 200000), softmax(logits, temperature), 0.006);
  }
}

TEST_CASE("top-k keeps the k most probable tokens") {
  const std::vector<float> logits = {1.0f, 2.0f, 0.5f, 3.0f, -1.0f};
  mote_sampler_options options = plain_options(1.0f);
  options.top_k = 1;
  const std::vector<double> greedy = histogram(options, logits, 2000);
  CHECK(greedy[3] == doctest::Approx(1.0));

  options.top_k = 2;  // ids 3 and 1, renormalized
  const double p3 = 1.0 / (1.0 + std::exp(-1.0));
  check_close(histogram(options, logits, 100000), {0.0, 1.0 - p3, 0.0, p3, 0.0}, 0.006);
  options.top_k = 5;  // k == n: off
  check_close(histogram(options, logits, 100000), softmax(logits, 1.0), 0.006);
}

TEST_CASE("top-p keeps the smallest prefix holding p of the mass") {
  const std::vector<float> logits = logits_for({0.15, 0.5, 0.05, 0.3});
  mote_sampler_options options = plain_options(1.0f);
  options.top_p = 0.01f;  // only the top token
  CHECK(histogram(options, logits, 2000)[1] == doctest::Approx(1.0));
  options.top_p = 0.0f;
  CHECK(histogram(options, logits, 2000)[1] == doctest::Approx(1.0));
  options.top_p = 0.7f;  // 0.5 < 0.7 <= 0.5 + 0.3: ids 1 and 3, renormalized
  check_close(histogram(options, logits, 100000), {0.0, 0.625, 0.0, 0.375}, 0.006);
  options.top_p = 0.9f;  // 0.95 needed: three tokens
  check_close(histogram(options, logits, 100000), {0.15 / 0.95, 0.5 / 0.95, 0.0, 0.3 / 0.95}, 0.006);
  options.top_k = 3;     // top-k first (ids 1, 3, 0 renormalized), then p of that mass
  options.top_p = 0.5f;  // 0.5 / 0.95 = 0.53 >= 0.5: only id 1
  CHECK(histogram(options, logits, 2000)[1] == doctest::Approx(1.0));
}

TEST_CASE("top-p stops at the first token whose cumulative mass reaches p exactly") {
  // Two equal logits: probabilities exactly 0.5 and 0.5 (powers of two, no rounding). The first
  // token alone holds p = 0.5, so it is the whole nucleus: the cutoff is >=, not >.
  mote_sampler_options options = plain_options(1.0f);
  options.top_p = 0.5f;
  const std::vector<double> frequency = histogram(options, {0.0f, 0.0f}, 2000);
  CHECK(frequency[0] == doctest::Approx(1.0));
  CHECK(frequency[1] == 0.0);
}

TEST_CASE("top-p measures p against the whole mass when a long tail is dropped first") {
  // Two likely tokens and a tail of twenty: the nucleus for p = 0.5 is {0, 1} (0.42 < 0.5).
  std::vector<double> p = {0.42, 0.38};
  p.resize(22, 0.01);
  const std::vector<float> logits = logits_for(p);
  mote_sampler_options options = plain_options(1.0f);
  options.top_p = 0.5f;
  std::vector<double> expected(22, 0.0);
  expected[0] = 0.42 / 0.80;
  expected[1] = 0.38 / 0.80;
  check_close(histogram(options, logits, 100000), expected, 0.006);
}

TEST_CASE("min-p drops tokens below min_p times the top probability") {
  const std::vector<float> logits = logits_for({0.15, 0.5, 0.05, 0.3});
  mote_sampler_options options = plain_options(1.0f);
  options.min_p = 0.2f;  // threshold 0.1: id 2 (0.05) goes
  check_close(histogram(options, logits, 100000), {0.15 / 0.95, 0.5 / 0.95, 0.0, 0.3 / 0.95}, 0.006);
  options.min_p = 0.5f;  // threshold 0.25: ids 1 and 3
  check_close(histogram(options, logits, 100000), {0.0, 0.625, 0.0, 0.375}, 0.006);
  options.min_p = 5.0f;  // above 1: the top token always stays
  CHECK(histogram(options, logits, 2000)[1] == doctest::Approx(1.0));
}

TEST_CASE("repetition penalty divides positive and multiplies negative logits, once per token") {
  mote_sampler_options options = plain_options(0.0f);
  options.repetition_penalty = 1.5f;
  const std::vector<float> logits = {2.0f, 1.9f, -1.0f, -1.1f};
  CHECK(sample_once(options, logits) == 0);
  CHECK(sample_once(options, logits, {0}) == 1);  // 2.0 / 1.5 = 1.33 < 1.9

  std::vector<float> penalized = logits;
  const std::vector<int32_t> recent = {0, 2, 0, 0, 2, -4, 99};  // repeats count once
  std::vector<mote::Candidate> scratch(logits.size());
  mote::Rng rng;
  mote::rng_seed(rng, 1);
  mote::sample(options, rng, penalized.data(), penalized.size(), recent.data(), recent.size(), scratch.data());
  CHECK(penalized[0] == 2.0f / 1.5f);
  CHECK(penalized[1] == 1.9f);
  CHECK(penalized[2] == -1.0f * 1.5f);
  CHECK(penalized[3] == -1.1f);

  options.repetition_last_n = 1;  // only the last entry (1) counts
  CHECK(sample_once(options, logits, {0, 1}) == 0);
  // Only the last entry (0) is penalized: 2.0 / 1.5 = 1.33 < 1.9 gives 1. Were the window
  // ignored, 1 would be penalized too (1.9 / 1.5 = 1.27 < 1.33) and 0 would win.
  CHECK(sample_once(options, logits, {1, 0}) == 1);
  options.repetition_last_n = 0;  // off
  CHECK(sample_once(options, logits, {0}) == 0);
  options.repetition_last_n = -1;  // all of recent
  CHECK(sample_once(options, logits, {0, 3, 3, 3}) == 1);
  options.repetition_penalty = 1.0f;  // off
  CHECK(sample_once(options, logits, {0}) == 0);
}

TEST_CASE("the same seed gives the same tokens; another seed, others") {
  std::vector<float> logits(50);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = 0.1f * static_cast<float>(i % 7);
  mote_sampler_options options = plain_options(1.0f);
  options.top_k = 40;
  options.top_p = 0.95f;
  options.min_p = 0.01f;
  auto sequence = [&](uint64_t seed) {
    mote::Rng rng;
    mote::rng_seed(rng, seed);
    std::vector<mote::Candidate> scratch(logits.size());
    std::vector<int32_t> tokens;
    for (int i = 0; i < 64; ++i) {
      std::vector<float> copy = logits;
      tokens.push_back(
          mote::sample(options, rng, copy.data(), copy.size(), tokens.data(), tokens.size(), scratch.data()));
    }
    return tokens;
  };
  options.repetition_penalty = 1.3f;
  CHECK(sequence(123) == sequence(123));
  CHECK(sequence(123) != sequence(124));
}

TEST_CASE("a NaN or infinite logit is an error in every mode, wherever it is") {
  struct Mode {
    const char *name;
    mote_sampler_options options;
  };
  std::vector<Mode> modes = {{"greedy", plain_options(0.0f)}, {"temperature", plain_options(0.7f)}};
  modes.push_back({"top-k", plain_options(1.0f)});
  modes.back().options.top_k = 3;
  modes.push_back({"top-p", plain_options(1.0f)});
  modes.back().options.top_p = 0.5f;
  modes.push_back({"min-p", plain_options(1.0f)});
  modes.back().options.min_p = 0.1f;
  modes.push_back({"repetition penalty", plain_options(0.0f)});
  modes.back().options.repetition_penalty = 1.5f;
  modes.push_back({"everything", mote_sampler_options_default()});
  modes.back().options.repetition_penalty = 1.1f;
  const size_t n = 101;
  for (const Mode &mode : modes) {
    for (const float bad : {NAN, INFINITY, -INFINITY}) {
      for (const size_t at : {size_t{0}, n / 2, n - 1}) {
        std::vector<float> logits(n);
        for (size_t i = 0; i < n; ++i) logits[i] = std::sin(static_cast<float>(i));
        logits[at] = bad;
        const std::vector<int32_t> recent = {static_cast<int32_t>(at), 3, 4};  // the penalty touches the bad one
        mote::Rng rng;
        mote::rng_seed(rng, 1);
        std::vector<mote::Candidate> scratch(n);
        size_t reported = 12345;
        CAPTURE(mode.name);
        CAPTURE(bad);
        CAPTURE(at);
        CHECK(mote::sample(mode.options, rng, logits.data(), n, recent.data(), recent.size(), scratch.data(),
                           &reported) == -1);
        CHECK(reported == at);
      }
    }
  }
}

TEST_CASE("a large repetition penalty never turns a finite logit into an error") {
  mote_sampler_options options = plain_options(0.0f);
  options.repetition_penalty = 1e30f;
  const std::vector<int32_t> recent = {0};
  CHECK(sample_once(options, {-1e30f, -2.0f, -3.0f}, recent) == 1);  // -1e60 saturates at -FLT_MAX
}

// `mote perplexity --kl-divergence-base FILE [--kl-divergence]`: llama.cpp's base-logits file
// and the statistics against it. The row encoding against log-softmax computed here in double;
// the statistics against the formulas on hand-made distributions; the CLI's KL divergence of a
// q4_0 model against its f32 source against one computed here from both models' logits (the C
// API, decoding token by token), with the file's bytes parsed here; hostile base files.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cli_support.hpp"
#include "kld_file.hpp"

using namespace mote_cli_test;
using mote::cli::decoded_log_prob;
using mote::cli::Divergence;
using mote::cli::encode_log_probs;
using mote::cli::row_words;

namespace {

std::vector<double> log_softmax(const float *logits, size_t n) {
  const double top = *std::max_element(logits, logits + n);
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += std::exp(logits[i] - top);
  std::vector<double> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = logits[i] - top - std::log(sum);
  return out;
}

// KL(p || q) over every entry, from the logits.
double kl_divergence(const std::vector<float> &p_logits, const std::vector<float> &q_logits) {
  const std::vector<double> log_p = log_softmax(p_logits.data(), p_logits.size());
  const std::vector<double> log_q = log_softmax(q_logits.data(), q_logits.size());
  double sum = 0;
  for (size_t i = 0; i < log_p.size(); ++i) sum += std::exp(log_p[i]) * (log_p[i] - log_q[i]);
  return sum;
}

size_t argmax(const std::vector<float> &v) { return std::max_element(v.begin(), v.end()) - v.begin(); }

std::vector<uint16_t> encoded(const std::vector<float> &logits) {
  std::vector<uint16_t> row(row_words(static_cast<uint32_t>(logits.size())), 0xBEEF);
  encode_log_probs(logits.data(), static_cast<uint32_t>(logits.size()), row.data());
  return row;
}

float row_float(const uint16_t *row, int which) {
  float f;
  std::memcpy(&f, row + 2 * which, sizeof f);
  return f;
}

// Every entry of a row against log-softmax: within half a step where the row resolves it (16
// nats below the top), the row's floor elsewhere.
void check_row(const uint16_t *row, const std::vector<double> &reference) {
  const float scale = row_float(row, 0), floor_log_prob = row_float(row, 1);
  const double top = *std::max_element(reference.begin(), reference.end());
  for (size_t i = 0; i < reference.size(); ++i) {
    const double got = decoded_log_prob(row, static_cast<uint32_t>(i));
    INFO("entry " << i << ": log p " << reference[i] << ", decoded " << got << ", step " << scale);
    if (reference[i] > top - 16 + 1e-3)
      CHECK(std::fabs(got - reference[i]) <= scale / 2 + 1e-5 * (1 + std::fabs(reference[i])));
    else if (reference[i] < top - 16 - 1e-3)
      CHECK(got == floor_log_prob);
  }
}

// The summary `--kl-divergence` prints on stdout.
struct Comparison {
  double ppl = 0, base_ppl = 0, ratio = 0, kld = 0, kld_error = 0, median = 0, p99 = 0, p999 = 0, max = 0, same_top = 0;
};

// The line of out that starts with label.
std::string line_of(const std::string &out, const std::string &label) {
  const size_t at = out.find("\n" + label);
  INFO("stdout: " << out);
  REQUIRE(at != std::string::npos);
  return out.substr(at + 1, out.find('\n', at + 1) - at - 1);
}

Comparison parse_comparison(const std::string &out) {
  Comparison c;
  INFO("stdout: " << out);
  REQUIRE(std::sscanf(out.c_str(), "perplexity: %lf", &c.ppl) == 1);
  REQUIRE(std::sscanf(line_of(out, "base perplexity:").c_str(), "base perplexity: %lf", &c.base_ppl) == 1);
  REQUIRE(std::sscanf(line_of(out, "perplexity ratio:").c_str(), "perplexity ratio: %lf", &c.ratio) == 1);
  REQUIRE(std::sscanf(line_of(out, "KL divergence:").c_str(),
                      "KL divergence: %lf +/- %lf (median %lf, 99%% %lf, 99.9%% %lf, max %lf)", &c.kld, &c.kld_error,
                      &c.median, &c.p99, &c.p999, &c.max) == 6);
  REQUIRE(std::sscanf(line_of(out, "same top token:").c_str(), "same top token: %lf", &c.same_top) == 1);
  return c;
}

// A base file as its bytes say (parsed here, independently of LogitsReader).
struct BaseBytes {
  std::vector<unsigned char> bytes;
  uint32_t n_ctx = 0;
  int32_t n_vocab = 0, n_chunk = 0;
  std::vector<int32_t> tokens;

  explicit BaseBytes(const std::string &path) : bytes(mote_test::read_file(path)) {
    REQUIRE(bytes.size() >= 20);
    CHECK(std::memcmp(bytes.data(), "_logits_", 8) == 0);
    std::memcpy(&n_ctx, &bytes[8], 4);
    std::memcpy(&n_vocab, &bytes[12], 4);
    std::memcpy(&n_chunk, &bytes[16], 4);
    tokens.resize(size_t{n_ctx} * n_chunk);
    REQUIRE(bytes.size() >= 20 + tokens.size() * 4);
    std::memcpy(tokens.data(), &bytes[20], tokens.size() * 4);
  }
  size_t words_per_row() const { return 2 * ((n_vocab + 1) / 2) + 4; }
  const uint16_t *row(size_t k) const {
    return reinterpret_cast<const uint16_t *>(&bytes[20 + tokens.size() * 4 + k * words_per_row() * 2]);
  }
};

// A .mote file opened through the C API.
struct OpenedModel {
  mote_test::AlignedBuffer bytes{0};
  mote_model model{};
  explicit OpenedModel(const std::string &path) : bytes(mote_test::AlignedBuffer::copy_of(mote_test::read_file(path))) {
    char message[256] = "";
    REQUIRE_MESSAGE(mote_model_open(bytes.data.get(), bytes.size, &model, message, sizeof message) == MOTE_OK, message);
  }
};

// The logits at the scored positions of each window (first = n/2 .. n-2), decoding one token at
// a time from BOS, as llama-perplexity defines the windows.
std::vector<std::vector<float>> scored_logits(const mote_model &model, const std::vector<int32_t> &tokens,
                                              uint32_t window) {
  mote_model_info info;
  mote_model_info_get(&model, &info);
  mote_session_options options = mote_session_options_default();
  options.context_length = window;
  options.n_threads = 1;
  auto session = mote_test::open_session(model, options);
  std::vector<std::vector<float>> out;
  for (size_t start = 0; start + window <= tokens.size(); start += window) {
    mote_session_reset(&session->session);
    const int32_t bos = info.bos_id;
    REQUIRE(mote_prefill(&session->session, &bos, 1) == MOTE_OK);
    const float *logits = mote_logits(&session->session);
    for (uint32_t j = 1; j + 1 < window; ++j) {
      REQUIRE(mote_decode(&session->session, tokens[start + j], &logits) == MOTE_OK);
      if (j >= window / 2) out.emplace_back(logits, logits + info.vocab_size);
    }
  }
  return out;
}

// The tiny model converted by the CLI (once per dtype).
std::string convert_tiny(const std::string &dtype) {
  const std::string model = workspace().path("tiny_" + dtype + ".mote");
  if (mote_test::file_exists(model)) return model;
  const Result r =
      run_cli("convert " + quote(mote_test::golden_path("tiny_mha.bin")) + " --tokenizer " +
              quote(mote_test::golden_path("tiny_tok64.bin")) + " --dtype " + dtype + " -o " + quote(model));
  INFO("stderr: " << r.err);
  REQUIRE(r.code == 0);
  return model;
}

}  // namespace

TEST_CASE("kld file: a row is log-softmax within half its quantization step") {
  std::mt19937 rng(7);
  for (uint32_t n_vocab : {1u, 2u, 7u, 64u, 1001u}) {
    for (float spread : {0.5f, 4.0f, 30.0f}) {  // 30: much of the row below the 16-nat floor
      INFO("n_vocab " << n_vocab << ", spread " << spread);
      std::normal_distribution<float> logit(3.0f, spread);
      std::vector<float> logits(n_vocab);
      for (float &l : logits) l = logit(rng);
      const std::vector<uint16_t> row = encoded(logits);
      REQUIRE(row.size() == 2 * ((n_vocab + 1) / 2) + 4);
      const float top = *std::max_element(logits.begin(), logits.end());
      const float bottom = std::max(*std::min_element(logits.begin(), logits.end()), top - 16);
      CHECK(row_float(row.data(), 0) == (top - bottom) / 65535.f);
      if (n_vocab % 2 == 1) CHECK(row.back() == 0);  // the padding word
      check_row(row.data(), log_softmax(logits.data(), n_vocab));
    }
  }
  // Equal logits: no resolution needed, every entry log(1/n).
  const std::vector<float> flat(10, 2.5f);
  const std::vector<uint16_t> row = encoded(flat);
  CHECK(row_float(row.data(), 0) == 0.0f);
  for (uint32_t i = 0; i < 10; ++i) CHECK(decoded_log_prob(row.data(), i) == doctest::Approx(-std::log(10.0)));
}

TEST_CASE("kld statistics: the formulas on hand-made distributions") {
  // 12 positions over 5 tokens: base logits b, current logits c (the current one's top token
  // differs from the base's at positions 3 and 7), the next token t.
  std::vector<double> klds;
  double nll = 0, nll_base = 0, kld_sum = 0, kld_sum2 = 0;
  size_t same = 0;
  Divergence divergence, self;
  for (int k = 0; k < 12; ++k) {
    const std::vector<float> base = {1.0f + 0.1f * k, 0.5f, -1.0f, 2.0f - 0.05f * k, -3.0f};
    std::vector<float> current = base;
    current[1] += 0.3f * std::sin(float(k));
    current[4] -= 0.2f * k;
    if (k == 3 || k == 7) current[2] = 5.0f;
    const int32_t token = k % 5;
    divergence.add(current.data(), encoded(base).data(), 5, token);
    self.add(base.data(), encoded(base).data(), 5, token);
    const double kld = kl_divergence(base, current);
    klds.push_back(kld);
    kld_sum += kld;
    kld_sum2 += kld * kld;
    nll -= log_softmax(current.data(), 5)[token];
    nll_base -= log_softmax(base.data(), 5)[token];
    same += argmax(base) == argmax(current);
  }
  CHECK(same == 10);
  const double n = 12, mean = kld_sum / n;
  CHECK(divergence.count() == 12);
  CHECK(divergence.kl_divergence().value == doctest::Approx(mean).epsilon(1e-4));
  CHECK(divergence.kl_divergence().error ==
        doctest::Approx(std::sqrt((kld_sum2 / n - mean * mean) / (n - 1))).epsilon(1e-3));
  CHECK(divergence.same_top().value == doctest::Approx(10.0 / 12));
  CHECK(divergence.log_perplexity().value == doctest::Approx(nll / n).epsilon(1e-6));
  CHECK(divergence.log_perplexity_base().value == doctest::Approx(nll_base / n).epsilon(1e-4));
  CHECK(divergence.log_perplexity_ratio().value == doctest::Approx((nll - nll_base) / n).epsilon(1e-3));
  std::sort(klds.begin(), klds.end());
  CHECK(divergence.kl_percentile(0.5) == doctest::Approx((klds[5] + klds[6]) / 2).epsilon(1e-3));
  CHECK(divergence.kl_percentile(1.0) == doctest::Approx(klds.back()).epsilon(1e-3));
  CHECK(divergence.kl_percentile(0.0) == doctest::Approx(klds.front()).epsilon(1e-3));
  CHECK(divergence.kl_percentile(0.25) == doctest::Approx(klds[2] + 0.75 * (klds[3] - klds[2])).epsilon(1e-3));
  // A model against its own rows: nothing apart but the rows' rounding.
  CHECK(std::fabs(self.kl_divergence().value) < 5e-5);  // the rows' step: 5 nats / 65535
  CHECK(self.same_top().value == 1.0);
  CHECK(std::fabs(self.log_perplexity_ratio().value) < 1e-5);
}

TEST_CASE("kld: q4_0 against its f32 source, as computed from both models' logits") {
  if (!have_cli()) return;
  const std::string f32 = convert_tiny("f32"), q4_0 = convert_tiny("q4_0");
  const std::string text = quote(mote_test::golden_path("perplexity_text.txt"));
  const std::string base_path = workspace().path("tiny_base.bin"), base = quote(base_path);
  const Result saved = run_cli("perplexity -m " + quote(f32) + " -f " + text + " -t 1 --kl-divergence-base " + base);
  INFO("stderr: " << saved.err);
  REQUIRE(saved.code == 0);
  CHECK(saved.err.find("saved the base log-probabilities of 945 positions") != std::string::npos);

  // The file as llama.cpp lays it out: its header, the text's tokens (BOS first, as tokenized),
  // and one row per scored position holding the f32 model's log-softmax.
  const BaseBytes file(base_path);
  CHECK(file.n_ctx == 32);  // the tiny model's context
  CHECK(file.n_vocab == 64);
  CHECK(file.n_chunk == 63);
  const size_t rows = size_t{63} * (32 - 1 - 16);
  CHECK(file.bytes.size() == 20 + file.tokens.size() * 4 + rows * (64 + 4) * 2);
  OpenedModel reference(f32), quantized(q4_0);
  const std::string words = slurp(mote_test::golden_path("perplexity_text.txt"));
  std::vector<int32_t> tokens(4096);
  size_t n_tokens = 0;
  REQUIRE(mote_tokenize(&reference.model, words.data(), words.size(), MOTE_TOKENIZE_ADD_BOS, tokens.data(),
                        tokens.size(), &n_tokens) == MOTE_OK);
  tokens.resize(n_tokens);
  REQUIRE(tokens.size() >= file.tokens.size());
  CHECK(std::equal(file.tokens.begin(), file.tokens.end(), tokens.begin()));
  tokens.resize(file.tokens.size());
  const auto base_logits = scored_logits(reference.model, tokens, 32);
  const auto current_logits = scored_logits(quantized.model, tokens, 32);
  REQUIRE(base_logits.size() == rows);
  for (size_t k = 0; k < rows; k += 37) check_row(file.row(k), log_softmax(base_logits[k].data(), 64));

  // The statistics from the models' logits, in double over the whole vocabulary.
  double kld = 0, nll = 0, nll_base = 0, kld_max = 0;
  size_t same = 0;
  for (size_t k = 0; k < rows; ++k) {
    const double one = kl_divergence(base_logits[k], current_logits[k]);
    kld += one;
    kld_max = std::max(kld_max, one);
    const int32_t next = tokens[(k / 15) * 32 + 16 + k % 15 + 1];
    nll -= log_softmax(current_logits[k].data(), 64)[next];
    nll_base -= log_softmax(base_logits[k].data(), 64)[next];
    same += argmax(base_logits[k]) == argmax(current_logits[k]);
  }
  kld /= rows;
  const Result compared = run_cli("perplexity -m " + quote(q4_0) + " -f " + text + " -t 1 --kl-divergence-base " +
                                  base + " --kl-divergence");
  INFO("stderr: " << compared.err);
  REQUIRE(compared.code == 0);
  const Comparison c = parse_comparison(compared.out);
  MESSAGE("q4_0 vs f32: KLD " << c.kld << " (here " << kld << "), same top " << c.same_top << "% (here "
                              << 100.0 * same / rows << "%)");
  CHECK(kld > 1e-3);  // the two differ measurably
  CHECK(c.kld == doctest::Approx(kld).epsilon(2e-3));
  CHECK(c.kld_error > 0);
  CHECK(c.max == doctest::Approx(kld_max).epsilon(2e-3));
  CHECK(c.median <= c.p99);
  CHECK(c.p99 <= c.p999);
  CHECK(c.p999 <= c.max);
  CHECK(c.same_top == doctest::Approx(100.0 * same / rows).epsilon(1e-4));
  CHECK(c.ppl == doctest::Approx(std::exp(nll / rows)).epsilon(1e-4));
  CHECK(c.base_ppl == doctest::Approx(std::exp(nll_base / rows)).epsilon(1e-4));
  CHECK(c.ratio == doctest::Approx(std::exp((nll - nll_base) / rows)).epsilon(1e-4));

  // Without -f the file's own tokens are scored: the same result.
  const Result from_file =
      run_cli("perplexity -m " + quote(q4_0) + " -t 2 --kl-divergence-base " + base + " --kl-divergence");
  CHECK(from_file.code == 0);
  CHECK(from_file.out == compared.out);
  // The first K windows only.
  const Result two =
      run_cli("perplexity -m " + quote(q4_0) + " --chunks 2 --kl-divergence-base " + base + " --kl-divergence");
  CHECK(two.code == 0);
  CHECK(two.out.find("(2 windows of 32 tokens, 30 scored tokens)") != std::string::npos);

  // The f32 model against its own base: nothing apart but the rows' rounding.
  const Result self =
      run_cli("perplexity -m " + quote(f32) + " -f " + text + " --kl-divergence-base " + base + " --kl-divergence");
  REQUIRE(self.code == 0);
  const Comparison s = parse_comparison(self.out);
  CHECK(std::fabs(s.kld) < 1e-5);
  CHECK(s.max < 1e-4);
  CHECK(s.same_top == 100.0);
  CHECK(s.ratio == doctest::Approx(1.0).epsilon(1e-5));
  CHECK(s.base_ppl == doctest::Approx(s.ppl).epsilon(1e-5));
}

TEST_CASE("kld: hostile base files are one-line errors") {
  if (!have_cli()) return;
  Workspace &w = workspace();
  const std::string model = quote(convert_tiny("f32"));
  const std::string text = quote(mote_test::golden_path("perplexity_text.txt"));
  const std::string good_path = w.path("hostile_base.bin");
  REQUIRE(
      run_cli("perplexity -m " + model + " -f " + text + " --chunks 3 --kl-divergence-base " + quote(good_path)).code ==
      0);
  const std::vector<unsigned char> good = mote_test::read_file(good_path);
  REQUIRE(good.size() == 20 + 3 * 32 * 4 + 3 * 15 * 68 * 2);
  const auto compare = [&](const std::vector<unsigned char> &bytes, const std::string &options = "") {
    const std::string path = w.path("bad_base.bin");
    write_text(path, std::string(bytes.begin(), bytes.end()));
    return "perplexity -m " + model + options + " --kl-divergence-base " + quote(path) + " --kl-divergence";
  };
  const auto with_u32 = [&](std::vector<unsigned char> bytes, size_t at, uint32_t value) {
    std::memcpy(&bytes[at], &value, 4);
    return bytes;
  };
  // A header for n_ctx, n_vocab, n_chunk with the size it implies (zero rows, tokens 1).
  const auto forged = [&](uint32_t n_ctx, uint32_t n_vocab, uint32_t n_chunk) {
    std::vector<unsigned char> bytes(20 + size_t{n_ctx} * n_chunk * 4 +
                                         size_t{n_chunk} * (n_ctx - 1 - n_ctx / 2) * (2 * ((n_vocab + 1) / 2) + 4) * 2,
                                     0);
    std::memcpy(bytes.data(), "_logits_", 8);
    for (size_t i = 0; i < size_t{n_ctx} * n_chunk; ++i) bytes[20 + 4 * i] = 1;
    return with_u32(with_u32(with_u32(bytes, 8, n_ctx), 12, n_vocab), 16, n_chunk);
  };
  CHECK(run_cli(compare(good)).code == 0);  // the file itself is fine

  expect_error(compare(std::vector<unsigned char>(good.begin(), good.end() - 1000)), 1, "(truncated?)");
  expect_error(compare(std::vector<unsigned char>(good.begin(), good.begin() + 10)), 1,
               "is 10 bytes, too short for a llama.cpp logits file");
  expect_error(compare({}), 1, "is 0 bytes, too short");
  std::vector<unsigned char> magic = good;
  magic[6] = 'z';
  expect_error(compare(magic), 1, "is not a llama.cpp logits file (it does not start with \"_logits_\")");
  std::vector<unsigned char> longer = good;
  longer.push_back(0);
  expect_error(compare(longer), 1, "(extra bytes at the end)");
  expect_error(compare(with_u32(good, 16, 0x7fffffff)), 1, "but its header (2147483647 windows of 32 tokens");
  expect_error(compare(with_u32(with_u32(with_u32(good, 8, 0x7fffffff), 12, 0x7fffffff), 16, 0x7fffffff)), 1,
               "has an impossible header");
  expect_error(compare(with_u32(good, 8, 0x80000000u)), 1, "has an impossible header");
  expect_error(compare(with_u32(good, 12, 0xffffffffu)), 1,
               "has an impossible header (3 windows of 32 tokens, vocabulary -1)");
  expect_error(compare(with_u32(good, 8, 2)), 1, "has an impossible header");
  expect_error(compare(with_u32(good, 20 + 4 * 5, 64)), 1,
               "holds token 64 at position 5, outside its vocabulary of 64");
  expect_error(compare(with_u32(good, 20 + 4 * 7, 0xffffffffu)), 1, "holds token -1 at position 7");
  const size_t rows_at = 20 + 3 * 32 * 4, row_bytes = 68 * 2;
  expect_error(compare(with_u32(good, rows_at + 17 * row_bytes, 0x7fc00000u)), 1,
               "row 2 of window 2 has an invalid scale or minimum (nan, ");
  expect_error(compare(with_u32(good, rows_at + 4, 0x7f800000u)), 1, "row 0 of window 1 has an invalid scale");
  float huge = 1e30f, low = -100.0f;  // finite, but far outside what a row can hold
  uint32_t huge_bits, low_bits;
  std::memcpy(&huge_bits, &huge, 4);
  std::memcpy(&low_bits, &low, 4);
  expect_error(compare(with_u32(good, rows_at + 44 * row_bytes, huge_bits)), 1, "row 14 of window 3 has an invalid");
  expect_error(compare(with_u32(good, rows_at + 4, low_bits)), 1, "row 0 of window 1 has an invalid scale");

  // Files of the right shape for another model, window or text.
  expect_error(compare(forged(32, 65, 1)), 1, "was computed with a vocabulary of 65 tokens; this model has 64");
  expect_error(compare(forged(64, 64, 1)), 1, "holds windows of 64 tokens; this model takes 4 to 32");
  expect_error(compare(forged(3, 64, 1)), 1, "holds windows of 3 tokens; this model takes 4 to 32");
  expect_error(compare(good, " --ctx 16"), 1, "was computed with --ctx 32, not 16");
  write_text(w.path("other.txt"), "the river sings under a pale moon and the quiet river moves on and on and on");
  expect_error(compare(good, " -f " + quote(w.path("other.txt"))), 1,
               " tokens; '" + w.path("bad_base.bin") + "' holds 96");
  std::string shifted = slurp(mote_test::golden_path("perplexity_text.txt"));
  shifted[20] = shifted[20] == 'a' ? 'b' : 'a';
  write_text(w.path("shifted.txt"), shifted);
  expect_error(compare(good, " -f " + quote(w.path("shifted.txt"))), 1,
               ": not the text (or the tokenizer) the base logits were computed on");

  // The options.
  expect_error("perplexity -m " + model + " -f " + text + " --kl-divergence", 2,
               "--kl-divergence needs --kl-divergence-base FILE");
  expect_error("perplexity -m " + model + " --kl-divergence-base " + quote(good_path), 2,
               "no text file given (-f TEXT)");
  expect_error("perplexity -m " + model + " --kl-divergence --kl-divergence-base " + quote(w.path("none.bin")), 1,
               "cannot open");
  expect_error("perplexity -m " + model + " --kl-divergence --kl-divergence-base " + quote(w.dir), 1,
               "is not a regular file");
  expect_error("perplexity -m " + model + " -f " + text + " --kl-divergence-base " + quote(w.path("no/dir/base.bin")),
               1, "cannot create a temporary file next to");
  CHECK(mote_test::read_file(good_path) == good);  // none of it touched the good file
}

TEST_CASE("kld: SmolLM2 against llama.cpp's own base file") {
  // tests/golden/smollm2_llama_base.logits was written by llama-perplexity (gen_kld_goldens.sh)
  // for the same GGUF: its tokens are mote's, and the two runtimes' distributions agree closely.
  if (!have_cli()) return;
  const std::string gguf = mote_test::smollm2_gguf();
  if (gguf.empty()) return;
  const std::string model = workspace().path("smollm2.mote");
  REQUIRE(run_cli("convert " + quote(gguf) + " -o " + quote(model)).code == 0);
  const std::string base = quote(mote_test::golden_path("smollm2_llama_base.logits"));
  const std::string args = "perplexity -m " + quote(model) + " --kl-divergence-base " + base + " --kl-divergence";
  const Result r = run_cli(args + " -f " + quote(mote_test::golden_path("perplexity_text.txt")) + " -c 6");
  INFO("stderr: " << r.err);
  REQUIRE(r.code == 0);
  const Comparison c = parse_comparison(r.out);
  MESSAGE("mote vs llama.cpp on SmolLM2 Q4_1: KLD " << c.kld << ", same top " << c.same_top << "%, ppl ratio "
                                                    << c.ratio);
  CHECK(r.out.find("(1 windows of 6 tokens, 2 scored tokens)") != std::string::npos);
  CHECK(c.kld > 0);  // two runtimes, rounded differently
  CHECK(c.kld < 0.01);
  CHECK(c.same_top == 100.0);
  CHECK(c.ratio == doctest::Approx(1.0).epsilon(0.025));
  CHECK(run_cli(args).out == r.out);  // the file's own window and tokens
}

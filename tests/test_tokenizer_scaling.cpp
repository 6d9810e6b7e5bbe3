// No input makes tokenizing super-linear: one line of random letters with no space (a single
// word for both tokenizers) takes time proportional to its length. 4 MB must take at most 6x
// the time of 1 MB (linear is 4x; quadratic merging, as before the per-word bound, is 16x).
// MOTE_SCALING_MB=1,2,4,8 prints the times for those sizes as well.
#include <random>
#include <sstream>

#include "test_support.hpp"

namespace {

std::string random_letters(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string text(n, 'a');
  for (char &c : text) c = static_cast<char>('a' + rng() % 26);
  return text;
}

// Seconds to tokenize text (the best of two runs).
double tokenize_seconds(const mote_model &model, const std::string &text, std::vector<int32_t> *tokens) {
  size_t n = 0;
  const double seconds = mote_test::best_seconds(2, [&] {
    tokens->assign(text.size() + 2, 0);
    REQUIRE(mote_tokenize(&model, text.data(), text.size(), 0, tokens->data(), tokens->size(), &n) == MOTE_OK);
  });
  tokens->resize(n);
  return seconds;
}

std::string detokenized(const mote_model &model, const std::vector<int32_t> &tokens) {
  std::string out;
  char piece[256];
  for (size_t i = 0; i < tokens.size(); ++i) {
    size_t n = 0;
    if (mote_detokenize(&model, i == 0 ? -1 : tokens[i - 1], tokens[i], piece, sizeof piece, &n) != MOTE_OK) break;
    out.append(piece, n);
  }
  return out;
}

void check_linear(const std::string &name, const mote_model &model, bool space_prefix) {
  std::vector<int32_t> tokens;
  const std::string one = random_letters(1 << 20, 1), four = random_letters(4 << 20, 4);
  const double t1 = tokenize_seconds(model, one, &tokens);
  CHECK(detokenized(model, tokens) == (space_prefix ? " " : "") + one);  // nothing lost at the cuts
  const double t4 = tokenize_seconds(model, four, &tokens);
  MESSAGE(name << ": 1 MB " << t1 << " s, 4 MB " << t4 << " s (ratio " << t4 / t1 << ")");
  CHECK(t4 <= 6.0 * t1 + 0.05);  // + 50 ms: timer noise when both are tiny
  if (const char *sizes = std::getenv("MOTE_SCALING_MB")) {
    std::stringstream list(sizes);
    std::string mb;
    while (std::getline(list, mb, ',')) {
      const double t = tokenize_seconds(model, random_letters(std::stoul(mb) << 20, 9), &tokens);
      MESSAGE(name << ": " << mb << " MB single word: " << t << " s");
    }
  }
}

}  // namespace

TEST_CASE("SentencePiece BPE: a 4 MB word takes at most 6x a 1 MB one") {
  const std::string checkpoint = mote_test::shared_model("aidreams260K.bin");
  if (checkpoint.empty()) return;
  auto model = mote_test::convert_and_open(checkpoint, mote_test::shared_model("aidreams_tok512.bin"));
  check_linear("sentencepiece (aidreams 512)", model->model, true);
}

TEST_CASE("byte-level BPE: a 4 MB word takes at most 6x a 1 MB one") {
  const mote_test::ConvertedModel *model = mote_test::smollm2_model(std::nullopt);
  if (model == nullptr) return;
  check_linear("byte-level (SmolLM2 49152)", model->model, false);
}

// Gemma 3's SentencePiece vocabulary (262,144 tokens, byte fallback, no dummy prefix, user-defined
// "\n" and whitespace-run tokens, control tokens like <start_of_turn>) imported from the real
// Gemma-3-270M GGUF and checked token for token against llama.cpp's ids for the same texts
// (golden/gemma3_tokenizer_golden.txt, from gen_gemma_tokenizer_golden.py), then timed on a long
// text. Skips when the GGUF was never fetched (~/.cache/mote/gemma-3-270m-q4_k_m.gguf or
// $MOTE_GEMMA3_GGUF).
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "test_support.hpp"
#include "tokenizer_support.hpp"

namespace {

std::string gemma_gguf() {
  if (const char *env = std::getenv("MOTE_GEMMA3_GGUF")) return env;
  return mote_test::cache_path("gemma-3-270m-q4_k_m.gguf");
}

const mote_test::TinyModel *gemma_tokenizer() {
  static std::unique_ptr<mote_test::TinyModel> model;
  static bool tried = false;
  if (tried) return model.get();
  tried = true;
  const std::string path = gemma_gguf();
  if (!mote_test::file_exists(path)) return nullptr;
  model = mote_test::open_gguf_tokenizer(path);
  return model.get();
}

std::vector<int32_t> tokenize(const mote_model &model, const std::string &text, uint32_t flags) {
  std::vector<int32_t> ids(2 * text.size() + 2);
  size_t n = 0;
  REQUIRE(mote_tokenize(&model, text.data(), text.size(), flags, ids.data(), ids.size(), &n) == MOTE_OK);
  ids.resize(n);
  return ids;
}

}  // namespace

TEST_CASE("gemma 3 tokenizer: llama.cpp's ids for multilingual text, whitespace runs, emoji, special tokens") {
  const mote_test::TinyModel *gemma = gemma_tokenizer();
  if (gemma == nullptr) {
    MOTE_SKIP(gemma_gguf() << " is absent (the Gemma-3-270M fetch script caches it)");
    return;
  }
  CHECK(gemma->view.tokenizer.n_tokens == 262144);
  CHECK_FALSE(gemma->view.tokenizer.add_space_prefix);
  CHECK(gemma->view.tokenizer.add_bos);
  size_t n_cases = 0;
  for (const std::string &line : mote_test::read_lines(mote_test::golden_path("gemma3_tokenizer_golden.txt"))) {
    if (line.empty() || line[0] == '#') continue;
    const bool special = line.compare(0, 10, "special=1 ") == 0;
    const size_t text_at = line.find("text=") + 5, ids_at = line.find(" ids=");
    const std::string text = mote_test::from_hex(line.substr(text_at, ids_at - text_at));
    const std::vector<int32_t> want = mote_test::parse_ids(line.substr(ids_at + 5));
    const uint32_t flags = MOTE_TOKENIZE_ADD_BOS | (special ? MOTE_TOKENIZE_SPECIAL : 0u);
    INFO("special=" << special << " text: " << text);
    CHECK(tokenize(gemma->model, text, flags) == want);
    n_cases += 1;
  }
  CHECK(n_cases == 22);
}

TEST_CASE("gemma 3 tokenizer: a long text encodes in time linear in its length") {
  const mote_test::TinyModel *gemma = gemma_tokenizer();
  if (gemma == nullptr) {
    MOTE_SKIP(gemma_gguf() << " is absent");
    return;
  }
  const auto text_of = [](size_t bytes) {
    std::string text;
    while (text.size() < bytes) text += "The quick brown fox — 東京は晴れ 🦙 jumps over 1,234 lazy dogs.\n  ";
    return text;
  };
  const std::string quarter = text_of(64 * 1024), whole = text_of(256 * 1024);
  std::vector<int32_t> ids;
  const double t1 = mote_test::best_seconds(2, [&] { ids = tokenize(gemma->model, quarter, MOTE_TOKENIZE_ADD_BOS); });
  const size_t quarter_tokens = ids.size();
  const double t4 = mote_test::best_seconds(2, [&] { ids = tokenize(gemma->model, whole, MOTE_TOKENIZE_ADD_BOS); });
  MESSAGE("gemma 3: " << quarter.size() << " bytes in " << t1 * 1e3 << " ms, " << whole.size() << " bytes -> "
                      << ids.size() << " tokens in " << t4 * 1e3 << " ms (ratio " << t4 / t1 << ")");
  CHECK(ids.size() > 3 * quarter_tokens);
  // Linear is 4x; an O(vocab) or O(n^2) step per token would be 16x or worse. + 20 ms: timer noise.
  CHECK(t4 <= 6.0 * t1 + 0.02);
}

// llama.cpp's own tokenizer test vectors: each vocabulary-only GGUF (models/ggml-vocab-*.gguf of
// the llama-cpp-python 0.3.36 sdist, fetched by models/fetch_tokenizer_vectors.sh, never
// committed) is imported with mote's GGUF tokenizer importer, and every case of its .inp file
// must encode to the ids of its .out file (llama.cpp's test-tokenizer-0: no BOS, special text
// not parsed) and decode back to the input. Skips when the vectors were never fetched; with
// MOTE_REQUIRE_TOKENIZER_VECTORS=1 (.ci/run) absence is a failure.
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "test_support.hpp"
#include "tokenizer_support.hpp"

namespace {

std::string vectors_dir() {
  if (const char *env = std::getenv("MOTE_TOKENIZER_VECTORS_DIR")) return env;
  return mote_test::cache_path("tokenizer-vectors");
}

std::string slurp(const std::string &path) {
  const std::vector<unsigned char> bytes = mote_test::read_file(path);
  return std::string(bytes.begin(), bytes.end());
}

struct Case {
  std::string text;
  std::vector<int32_t> ids;
};

// .inp: cases separated by "\n__ggml_vocab_test__\n"; .out: one line of space-separated ids each.
std::vector<Case> read_cases(const std::string &inp, const std::string &out) {
  std::vector<Case> cases;
  const std::string sep = "\n__ggml_vocab_test__\n";
  const std::string raw = slurp(inp);
  for (size_t pos = 0; pos < raw.size();) {
    const size_t next = raw.find(sep, pos);
    cases.push_back({raw.substr(pos, next == std::string::npos ? std::string::npos : next - pos), {}});
    if (next == std::string::npos) break;
    pos = next + sep.size();
  }
  std::istringstream lines(slurp(out));
  size_t i = 0;
  for (std::string line; std::getline(lines, line); ++i) {
    REQUIRE(i < cases.size());
    std::istringstream ids(line);
    for (int32_t id = 0; ids >> id;) cases[i].ids.push_back(id);
  }
  REQUIRE_MESSAGE(i == cases.size(), inp << ": " << cases.size() << " inputs, " << i << " outputs");
  return cases;
}

// Runs every case of one vocabulary, counting the passes (all must pass).
// flags: MOTE_TOKENIZE_SPECIAL for MPT, whose whitespace runs are user-defined tokens: llama.cpp
// (like Hugging Face) always matches those, mote only under that flag (which also matches
// control tokens, whose text no input here holds).
// round_trip: decoding gives the input back (BPE); WordPiece normalizes, so it is not checked.
void check_vocabulary(const std::string &name, bool space_prefix, uint32_t flags = 0, bool round_trip = true) {
  const std::string dir = vectors_dir();
  const std::string gguf = dir + "/ggml-vocab-" + name + ".gguf";
  if (!mote_test::file_exists(gguf + ".out")) {
    const char *require = std::getenv("MOTE_REQUIRE_TOKENIZER_VECTORS");
    if (require != nullptr && std::string(require) == "1") FAIL("tokenizer vectors missing: " << gguf);
    MOTE_SKIP(gguf << " is absent: run models/fetch_tokenizer_vectors.sh");
    return;
  }
  const auto tiny = mote_test::open_gguf_tokenizer(gguf);
  const std::vector<Case> cases = read_cases(gguf + ".inp", gguf + ".out");
  size_t passed = 0;
  for (const Case &c : cases) {
    std::vector<int32_t> ids(c.text.size() + 2);
    size_t n = 0;
    REQUIRE(mote_tokenize(&tiny->model, c.text.data(), c.text.size(), flags, ids.data(), ids.size(), &n) == MOTE_OK);
    ids.resize(n);
    const std::string decoded = mote_test::detokenize(tiny->model, ids);
    const std::string expected = (space_prefix && !c.text.empty() ? " " : "") + c.text;
    const bool ok = ids == c.ids && (decoded == expected || !round_trip);
    if (!ok) {
      std::ostringstream got, want;
      for (const int32_t id : ids) got << id << ' ';
      for (const int32_t id : c.ids) want << id << ' ';
      FAIL_CHECK(name << " case '" << c.text << "': mote " << got.str() << "llama.cpp " << want.str()
                      << (decoded == expected || !round_trip ? "" : "(decode differs)"));
    }
    passed += ok ? 1 : 0;
  }
  MESSAGE(name << ": " << passed << "/" << cases.size() << " vectors pass");
}

}  // namespace

TEST_CASE("llama.cpp vectors: gpt-2 (GPT-2 regex)") { check_vocabulary("gpt-2", false); }
TEST_CASE("llama.cpp vectors: mpt (GPT-2 regex)") { check_vocabulary("mpt", false, MOTE_TOKENIZE_SPECIAL); }
TEST_CASE("llama.cpp vectors: starcoder (digits, then GPT-2 regex)") { check_vocabulary("starcoder", false); }
TEST_CASE("llama.cpp vectors: refact (digits, then GPT-2 regex)") { check_vocabulary("refact", false); }
TEST_CASE("llama.cpp vectors: llama-bpe (Llama 3 regex)") { check_vocabulary("llama-bpe", false); }
TEST_CASE("llama.cpp vectors: qwen2 (Qwen2 regex)") { check_vocabulary("qwen2", false); }
TEST_CASE("llama.cpp vectors: llama-spm (SentencePiece)") { check_vocabulary("llama-spm", true); }
TEST_CASE("llama.cpp vectors: phi-3 (SentencePiece)") { check_vocabulary("phi-3", true); }
// llama.cpp's .out files hold the ids without [CLS] and [SEP] (test-tokenizer-0 adds no special
// tokens), as mote_tokenize gives them without MOTE_TOKENIZE_ADD_BOS.
TEST_CASE("llama.cpp vectors: bert-bge (WordPiece)") { check_vocabulary("bert-bge", false, 0, false); }

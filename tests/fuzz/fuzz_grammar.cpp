// GBNF grammars and JSON schemas from arbitrary bytes: compile (refused with MOTE_ERR_GRAMMAR or
// accepted, never a crash, a hang or an allocation outside the arena's exact size), then match
// arbitrary text fed in arbitrary pieces. Invariants: a refused schema gets one line that starts
// "JSON schema: " and never speaks of a grammar line; a schema that translates compiles (the
// translator writes only grammars mote accepts: only a bound may refuse one, and the translator
// itself reports the compiler's size bound); a refused feed changes nothing.
#include "fuzz_support.hpp"

namespace {

constexpr size_t kMaxArena = 64u << 20;

struct Arena {
  void *bytes = nullptr;
  explicit Arena(size_t n) : bytes(std::aligned_alloc(MOTE_ARENA_ALIGNMENT, (n + 63) / 64 * 64)) {}
  ~Arena() { std::free(bytes); }
};

void match(mote_grammar &grammar, const std::string &text) {
  // Feed the text in pieces of 1, 2, 3... bytes, as tokens would.
  size_t at = 0;
  for (size_t piece = 1; at < text.size(); ++piece) {
    const size_t n = std::min(piece, text.size() - at);
    const uint32_t before = mote_grammar_state(&grammar);
    const mote_status status = mote_grammar_accept_bytes(&grammar, text.data() + at, n, nullptr, 0);
    FUZZ_CHECK(status == MOTE_OK || status == MOTE_ERR_GRAMMAR);
    if (status != MOTE_OK) {
      FUZZ_CHECK(mote_grammar_state(&grammar) == before);
      break;
    }
    at += n;
  }
}

// Compiles text; returns the status (MOTE_ERR_GRAMMAR for the refused, with the message in
// error; MOTE_ERR_ARENA_TOO_SMALL past this harness's arena bound).
mote_status compile_and_match(const std::string &text, const std::string &input, char (&error)[256]) {
  size_t bytes = 0;
  mote_status status = mote_grammar_arena_size(text.data(), text.size(), &bytes, error, sizeof error);
  if (status != MOTE_OK) {
    FUZZ_CHECK(status == MOTE_ERR_GRAMMAR && std::strchr(error, '\n') == nullptr);
    return status;
  }
  FUZZ_CHECK(bytes > 0);
  if (bytes > kMaxArena) return MOTE_ERR_ARENA_TOO_SMALL;
  Arena arena(bytes);
  mote_grammar grammar{};
  status = mote_grammar_init(&grammar, nullptr, text.data(), text.size(), arena.bytes, bytes, error, sizeof error);
  FUZZ_CHECK(status == MOTE_OK || status == MOTE_ERR_GRAMMAR);
  if (status != MOTE_OK) return status;
  match(grammar, input);
  FUZZ_CHECK(mote_grammar_reset(&grammar) == MOTE_OK);
  match(grammar, input);
  return MOTE_OK;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > (1u << 16)) return 0;
  const std::vector<std::string> parts = mote_fuzz::split_parts(data + 1, size - 1, 2);
  char error[256] = "";
  if ((data[0] & 1) == 0) {  // a GBNF grammar, then text
    compile_and_match(parts[0], parts[1], error);
    return 0;
  }
  // A JSON schema, then a document.
  std::vector<char> grammar(1 << 20);
  size_t written = 0;
  const mote_status status = mote_grammar_from_json_schema(parts[0].data(), parts[0].size(), grammar.data(),
                                                           grammar.size(), &written, error, sizeof error);
  FUZZ_CHECK(status == MOTE_OK || status == MOTE_ERR_GRAMMAR || status == MOTE_ERR_BUFFER_TOO_SMALL);
  if (status == MOTE_ERR_GRAMMAR) {
    // Prefixes, not substrings: the message may quote the schema's own names.
    FUZZ_CHECK(std::strncmp(error, "JSON schema: ", 13) == 0 && std::strchr(error, '\n') == nullptr);
    // The compiler's refusal of a translated grammar is the translator's bug unless it is a bound,
    // and a bound speaks of the schema, not of a line of the grammar.
    const char kBug[] = "JSON schema: its grammar does not compile";
    const char kTooLarge[] = "JSON schema: its grammar is too large to compile (";
    FUZZ_CHECK(std::strncmp(error, kBug, sizeof kBug - 1) != 0);
    if (std::strncmp(error, kTooLarge, sizeof kTooLarge - 1) == 0) {
      FUZZ_CHECK(std::strncmp(error + sizeof kTooLarge - 1, "grammar line", 12) != 0);
    }
  }
  if (status != MOTE_OK) return 0;
  FUZZ_CHECK(written < grammar.size() && grammar[written] == '\0');
  const mote_status compiled = compile_and_match(std::string(grammar.data(), written), parts[1], error);
  // Only a bound of the matcher or the analysis may refuse a translated schema now.
  if (compiled == MOTE_ERR_GRAMMAR) {
    std::fprintf(stderr, "translated schema refused: %s\n", error);
    FUZZ_CHECK(std::strstr(error, "more than") != nullptr || std::strstr(error, "too complex") != nullptr);
  }
  return 0;
}

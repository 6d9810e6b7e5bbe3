// GBNF grammars through the C API without a model: parse errors, matching, repetition bounds,
// UTF-8 classes, and hostile grammars (each refused with one line, quickly).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>

#include "cli_support.hpp"
#include "grammar/grammar.hpp"
#include "mote/mote.h"
#include "sample/grammar_sample.hpp"
#include "grammar_support.hpp"
#include "test_support.hpp"
#include "text/tokenizer.hpp"
#include "tokenizer_support.hpp"

namespace {

using mote_test::Compiled;

std::string error_of(const std::string &text) {
  Compiled c(text);
  CHECK(c.status == MOTE_ERR_GRAMMAR);
  return c.error;
}

}  // namespace

TEST_CASE("a grammar matches exactly its sentences") {
  Compiled c("root ::= \"yes\" | \"no\" | \"maybe\" suffix\nsuffix ::= [!?]*\n");
  REQUIRE(c.status == MOTE_OK);
  CHECK(c.accepts("yes"));
  CHECK(c.accepts("no"));
  CHECK(c.accepts("maybe"));
  CHECK(c.accepts("maybe!?!"));
  CHECK_FALSE(c.accepts("ye"));
  CHECK(c.continues("ye"));
  CHECK_FALSE(c.continues("yes!"));
  CHECK_FALSE(c.accepts("nope"));
  CHECK_FALSE(c.accepts(""));
}

TEST_CASE("groups, classes, negation, escapes, comments and any character") {
  Compiled c(
      "# a comment line\n"
      "root ::= ( [a-c] | [0-9]+ ) \":\" [^\\n\"]* \"\\\"\" end  # trailing comment\n"
      "end ::= . \"\\x41\"\n");
  REQUIRE(c.status == MOTE_OK);
  CHECK(c.accepts("a:hello\"zA"));
  CHECK(c.accepts("123:\"\nA"));
  CHECK_FALSE(c.accepts("d:x\"zA"));
  CHECK_FALSE(c.accepts("a:x\ny\"zA"));
  CHECK_FALSE(c.accepts("a:\"zB"));
}

TEST_CASE("repetition bounds {m} {m,} {m,n} and ? + *") {
  Compiled exact("root ::= \"a\"{3}\n");
  REQUIRE(exact.status == MOTE_OK);
  CHECK_FALSE(exact.accepts("aa"));
  CHECK(exact.accepts("aaa"));
  CHECK_FALSE(exact.continues("aaaa"));
  Compiled range("root ::= [0-9]{2,4} \"x\"?\n");
  REQUIRE(range.status == MOTE_OK);
  CHECK_FALSE(range.accepts("1"));
  CHECK(range.accepts("12"));
  CHECK(range.accepts("1234x"));
  CHECK_FALSE(range.continues("12345"));
  Compiled at_least("root ::= (\"ab\"){2,}\n");
  REQUIRE(at_least.status == MOTE_OK);
  CHECK_FALSE(at_least.accepts("ab"));
  CHECK(at_least.accepts("abab"));
  CHECK(at_least.accepts("abababab"));
  Compiled zero("root ::= \"x\" \"y\"{0} \"z\"+\n");
  REQUIRE(zero.status == MOTE_OK);
  CHECK(zero.accepts("xz"));
  CHECK(zero.accepts("xzzz"));
  CHECK_FALSE(zero.accepts("xyz"));
}

TEST_CASE("UTF-8: multi-byte literals and classes, characters split across feeds") {
  Compiled c("root ::= \"é\" [α-ω]+ [^a-z]\n");
  REQUIRE(c.status == MOTE_OK);
  CHECK(c.accepts("éαβ€"));
  CHECK_FALSE(c.accepts("eαβ€"));
  CHECK_FALSE(c.accepts("éαβa"));
  // A token may end inside a character: the rest completes it.
  mote_grammar_reset(&c.grammar);
  const std::string text = "éα";
  CHECK(mote_grammar_accept_bytes(&c.grammar, text.data(), 1, nullptr, 0) == MOTE_OK);
  CHECK(mote_grammar_state(&c.grammar) == MOTE_GRAMMAR_CAN_CONTINUE);
  CHECK(mote_grammar_accept_bytes(&c.grammar, text.data() + 1, 2, nullptr, 0) == MOTE_OK);
  CHECK(mote_grammar_accept_bytes(&c.grammar, text.data() + 3, 1, nullptr, 0) == MOTE_OK);
  // A partial character that no class can complete is refused at once: "ö" is not in [α-ω].
  mote_grammar_reset(&c.grammar);
  CHECK(mote_grammar_accept_bytes(&c.grammar, "\xC3\xA9\xC3", 3, nullptr, 0) == MOTE_ERR_GRAMMAR);
  CHECK(mote_grammar_accept_bytes(&c.grammar, "\xC3\xA9\xCE", 3, nullptr, 0) == MOTE_OK);
  CHECK(mote_grammar_accept_bytes(&c.grammar, "\x80", 1, nullptr, 0) == MOTE_ERR_GRAMMAR);  // U+0380: no
  CHECK(mote_grammar_accept_bytes(&c.grammar, "\xB1", 1, nullptr, 0) == MOTE_OK);           // U+03B1: α
  CHECK(mote_grammar_accept_bytes(&c.grammar, "\xFF", 1, nullptr, 0) == MOTE_ERR_GRAMMAR);  // never UTF-8
}

TEST_CASE("invalid UTF-8 is no code point: overlong forms, surrogates, above U+10FFFF, stray bytes") {
  Compiled any("root ::= .*\n");
  Compiled json_string("root ::= \"\\\"\" [^\"\\\\]* \"\\\"\"\n");  // a quote ends it
  REQUIRE(any.status == MOTE_OK);
  REQUIRE(json_string.status == MOTE_OK);
  const std::string invalid[] = {
      "\xC0\xA2",          // overlong 2-byte '"'
      "\xC1\xBF",          // overlong 2-byte U+007F
      "\xE0\x80\xA2",      // overlong 3-byte '"'
      "\xE0\x9F\xBF",      // overlong 3-byte U+07FF
      "\xF0\x80\x80\xA2",  // overlong 4-byte '"'
      "\xF0\x8F\xBF\xBF",  // overlong 4-byte U+FFFF
      "\xED\xA0\x80",      // surrogate U+D800
      "\xED\xBF\xBF",      // surrogate U+DFFF
      "\xF4\x90\x80\x80",  // U+110000
      "\xF5\x80\x80\x80",  // lead F5
      "\xF7\xBF\xBF\xBF",  // lead F7
      "\x80",              // stray continuation byte
      "\xBF",              // stray continuation byte
      "\xF8\x88\x80\x80\x80",
      "\xFF",
  };
  for (const std::string &bytes : invalid) {
    CAPTURE(bytes);
    CHECK_FALSE(any.continues(bytes));
    CHECK_FALSE(json_string.continues("\"" + bytes));
    // Split across two feeds: whichever feed makes it invalid is refused, and the second part
    // never completes it.
    for (size_t cut = 1; cut < bytes.size(); ++cut) {
      CAPTURE(cut);
      mote_grammar_reset(&any.grammar);
      const mote_status head = mote_grammar_accept_bytes(&any.grammar, bytes.data(), cut, nullptr, 0);
      const mote_status tail =
          mote_grammar_accept_bytes(&any.grammar, bytes.data() + cut, bytes.size() - cut, nullptr, 0);
      CHECK((head == MOTE_ERR_GRAMMAR || tail == MOTE_ERR_GRAMMAR));
    }
  }
  // Refused at the first byte that no valid character can follow.
  for (const char *prefix : {"\xC0", "\xC1", "\xF5", "\xE0\x80", "\xE0\x9F", "\xED\xA0", "\xF0\x8F", "\xF4\x90"}) {
    CAPTURE(prefix);
    CHECK_FALSE(any.continues(prefix));
  }
  // The boundaries of valid UTF-8 are characters.
  for (const char *valid : {"\xC2\x80", "\xDF\xBF", "\xE0\xA0\x80", "\xED\x9F\xBF", "\xEE\x80\x80", "\xEF\xBF\xBF",
                            "\xF0\x90\x80\x80", "\xF4\x8F\xBF\xBF"}) {
    CAPTURE(valid);
    CHECK(any.accepts(valid));
    CHECK(json_string.accepts("\"" + std::string(valid) + "\""));
  }
}

TEST_CASE("the first bytes offered are those of valid UTF-8") {
  Compiled any("root ::= .*\n");
  REQUIRE(any.status == MOTE_OK);
  mote::grammar::Grammar &g = *mote::grammar::grammar_of(&any.grammar);
  bool allowed[256];
  const auto offered = [&](const char *fed) {
    mote_grammar_reset(&any.grammar);
    REQUIRE(mote_grammar_accept_bytes(&any.grammar, fed, std::strlen(fed), nullptr, 0) == MOTE_OK);
    mote::grammar::first_bytes(g, allowed);
    std::string bytes;
    for (int b = 0; b < 256; ++b) {
      if (allowed[b]) bytes += static_cast<char>(b);
    }
    return bytes;
  };
  const auto range = [](int low, int high) {
    std::string bytes;
    for (int b = low; b <= high; ++b) bytes += static_cast<char>(b);
    return bytes;
  };
  CHECK(offered("") == range(0x00, 0x7F) + range(0xC2, 0xF4));
  CHECK(offered("\xE0") == range(0xA0, 0xBF));
  CHECK(offered("\xED") == range(0x80, 0x9F));
  CHECK(offered("\xF0") == range(0x90, 0xBF));
  CHECK(offered("\xF4") == range(0x80, 0x8F));
  CHECK(offered("\xC3") == range(0x80, 0xBF));
  // An ASCII class offers no lead byte at all; a Greek one only the leads of its letters.
  Compiled ascii("root ::= [a-z]+\n");
  REQUIRE(ascii.status == MOTE_OK);
  mote::grammar::first_bytes(*mote::grammar::grammar_of(&ascii.grammar), allowed);
  for (int b = 0x80; b < 256; ++b) CHECK_FALSE(allowed[b]);
  Compiled greek("root ::= [α-ω]+\n");
  REQUIRE(greek.status == MOTE_OK);
  mote::grammar::first_bytes(*mote::grammar::grammar_of(&greek.grammar), allowed);
  for (int b = 0x80; b < 256; ++b) CHECK(allowed[b] == (b == 0xCE || b == 0xCF));
}

TEST_CASE("the matcher's hash of stacks survives its stamps wrapping") {
  Compiled c("root ::= item (\",\" item)*\nitem ::= [a-z]+ | \"[\" root \"]\"\n");
  REQUIRE(c.status == MOTE_OK);
  mote::grammar::grammar_of(&c.grammar)->seen_stamp = UINT32_MAX - 3;
  for (int i = 0; i < 3; ++i) {
    CHECK(c.accepts("a,[b,[c,d]],e"));
    CHECK_FALSE(c.accepts("a,[b,[c,d],e"));
  }
  CHECK(mote::grammar::grammar_of(&c.grammar)->seen_stamp < 100);
}

TEST_CASE("thousands of stacks on one long class: the first bytes look at it once") {
  std::string text = "root ::= b \"0\"";
  for (int i = 1; i < 2000; ++i) text += " | b \"" + std::to_string(i) + "\"";
  text += "\nb ::= [";
  char range[32];
  for (uint32_t cp = 0x10000; cp < 0x10000 + 3 * 50000; cp += 3) {  // 50,000 ranges of two characters
    std::snprintf(range, sizeof range, "\\U%08X-\\U%08X", cp, cp + 1);
    text += range;
  }
  Compiled c(text + "]\n");
  REQUIRE(c.status == MOTE_OK);
  const auto start = std::chrono::steady_clock::now();
  bool allowed[256];
  mote::grammar::first_bytes(*mote::grammar::grammar_of(&c.grammar), allowed);
  for (int b = 0; b < 256; ++b) CHECK(allowed[b] == (b == 0xF0));  // U+10000..U+349EE
  CHECK(c.continues("\U00010000"));
  CHECK_FALSE(c.continues("\U00010002"));
  CHECK(c.accepts("\U000100011999"));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));  // 256 x 2,000 x 100,000 took minutes
}

TEST_CASE("a refused feed leaves the grammar as it was") {
  Compiled c("root ::= \"abc\"\n");
  REQUIRE(c.status == MOTE_OK);
  mote_grammar_reset(&c.grammar);
  CHECK(mote_grammar_accept_bytes(&c.grammar, "a", 1, nullptr, 0) == MOTE_OK);
  char error[128] = "";
  CHECK(mote_grammar_accept_bytes(&c.grammar, "bx", 2, error, sizeof error) == MOTE_ERR_GRAMMAR);
  CHECK(std::string(error).find("cannot continue") != std::string::npos);
  CHECK(mote_grammar_accept_bytes(&c.grammar, "bc", 2, nullptr, 0) == MOTE_OK);
  CHECK(mote_grammar_state(&c.grammar) == MOTE_GRAMMAR_COMPLETE);
}

TEST_CASE("parse and compile errors are one line naming the problem") {
  CHECK(error_of("root ::= \"abc\n").find("unterminated string") != std::string::npos);
  CHECK(error_of("root ::= [a-").find("grammar line 1: unterminated character class") != std::string::npos);
  CHECK(error_of("root ::= foo\n").find("undefined rule 'foo'") != std::string::npos);
  CHECK(error_of("start ::= \"x\"\n").find("no 'root' rule") != std::string::npos);
  CHECK(error_of("").find("no rules") != std::string::npos);
  CHECK(error_of("root ::= \"a\"\nroot ::= \"b\"\n").find("defined twice") != std::string::npos);
  CHECK(error_of("root ::= \"a\" (\"b\"\n").find("expected )") != std::string::npos);
  CHECK(error_of("root ::= * \"a\"\n").find("nothing before it") != std::string::npos);
  CHECK(error_of("root ::= \"a\"{3,2}\n").find("below m") != std::string::npos);
  CHECK(error_of("root ::= \"\\q\"\n").find("unknown escape") != std::string::npos);
  CHECK(error_of("root = \"a\"\n").find("::=") != std::string::npos);
  CHECK(error_of("x ::= \"a\"\nroot ::= x\n\ny ::= \"b\" ]\n").find("line 4") != std::string::npos);
  for (const char *text : {"root ::= \"abc\n", "root ::= foo\n", ""}) {
    CHECK(error_of(text).find('\n') == std::string::npos);
  }
}

TEST_CASE("a grammar that allows nothing is refused") {
  CHECK(error_of("root ::= [^\\x00-\\U0010FFFF]\n").find("allows nothing") != std::string::npos);
  CHECK(error_of("root ::= \"x\" root\n").find("allows nothing") != std::string::npos);
  CHECK(error_of("root ::= a\na ::= \"(\" a \")\"\n").find("allows nothing") != std::string::npos);
}

TEST_CASE("left recursion is refused clearly, directly or through rules that match nothing") {
  CHECK(error_of("root ::= a\na ::= a \"x\" | \"y\"\n").find("rule 'a' is left-recursive") != std::string::npos);
  CHECK(error_of("root ::= b \"x\"\nb ::= c\nc ::= e root | \"z\"\ne ::= \"q\"?\n").find("left-recursive") !=
        std::string::npos);
  CHECK(error_of("root ::= (\"\")* \"x\"\n").find("left-recursive") != std::string::npos);
  Compiled right("root ::= \"x\" root | \"y\"\n");  // right recursion is fine
  REQUIRE(right.status == MOTE_OK);
  CHECK(right.accepts("xxxy"));
}

TEST_CASE("hostile grammars get one line, quickly, never a crash") {
  const auto start = std::chrono::steady_clock::now();
  CHECK(error_of("root ::= \"a\"{0,1000000}\n").find("more than 262144 elements") != std::string::npos);
  CHECK(error_of("root ::= \"a\"{99999999999}\n").find("above 1048576") != std::string::npos);
  Compiled nested_counts("root ::= ((\"a\"{100}){100}){100}\n");  // groups are rules: no blow-up
  CHECK(nested_counts.status == MOTE_OK);
  CHECK(error_of("root ::= " + std::string(200, '(') + "\"a\"" + std::string(200, ')') + "\n").find("nested") !=
        std::string::npos);
  // A megabyte of grammar: a million-element alternation is over the element bound.
  std::string huge = "root ::= \"a\"";
  while (huge.size() < (1u << 20)) huge += " | \"b\"";
  CHECK(error_of(huge + "\n").find("elements") != std::string::npos);
  // A megabyte of rules in a long chain compiles and matches (the checks are iterative).
  std::string chain;
  for (int i = 0; i < 40000; ++i) chain += "r" + std::to_string(i) + " ::= r" + std::to_string(i + 1) + "\n";
  chain += "r40000 ::= \"z\"\nroot ::= r0\n";
  Compiled chained(chain);
  CHECK(chained.status == MOTE_ERR_GRAMMAR);  // each character expands 40,000 references
  CHECK(std::string(chained.error).find("stack words") != std::string::npos);
  // Deep nesting of matched text runs out of stack words: an error, not a crash.
  Compiled nested("root ::= \"(\" root \")\" | \"x\"\n");
  REQUIRE(nested.status == MOTE_OK);
  mote_grammar_reset(&nested.grammar);
  const std::string opens(20000, '(');
  char error[256] = "";
  CHECK(mote_grammar_accept_bytes(&nested.grammar, opens.data(), opens.size(), error, sizeof error) ==
        MOTE_ERR_GRAMMAR);
  CHECK(std::string(error).find("stack words") != std::string::npos);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
}

TEST_CASE("the arena size is exact") {
  const std::string text = "root ::= item (\",\" item)*\nitem ::= [a-z]+ | \"[\" root \"]\"\n";
  size_t bytes = 0;
  REQUIRE(mote_grammar_arena_size(text.data(), text.size(), &bytes, nullptr, 0) == MOTE_OK);
  void *arena = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  mote_grammar grammar{};
  char error[256] = "";
  CHECK(mote_grammar_init(&grammar, nullptr, text.data(), text.size(), arena, bytes - 1, error, sizeof error) ==
        MOTE_ERR_ARENA_TOO_SMALL);
  CHECK(std::string(error).find(std::to_string(bytes)) != std::string::npos);
  CHECK(mote_grammar_init(&grammar, nullptr, text.data(), text.size(), arena, bytes, error, sizeof error) == MOTE_OK);
  CHECK(mote_grammar_accept_bytes(&grammar, "a,[b,c],d", 9, nullptr, 0) == MOTE_OK);
  CHECK((mote_grammar_state(&grammar) & MOTE_GRAMMAR_COMPLETE) != 0);
  std::free(arena);
}

namespace {

// root ::= ([a-z]{1} | [a-z]{2} | ... | [a-z]{299})+ : legal and 3.8 KB, but every letter adds
// about 299 stacks (each alternative at each offset), so a token's check is expensive.
std::string overlapping_lengths_grammar() {
  std::string text = "root ::= (";
  for (int n = 1; n <= 299; ++n) text += (n > 1 ? " | [a-z]{" : "[a-z]{") + std::to_string(n) + "}";
  return text + ")+\n";
}

int append_piece(void *user, int32_t, const char *piece, size_t n) {
  static_cast<std::string *>(user)->append(piece, n);
  return 0;
}

// A tiny Llama (every logit equal: draws are uniform) over a byte-level vocabulary the size of a
// real one: the 256 bytes, BOS and EOS, and 40,000 pieces of 2-7 letters (a third after a
// space) and 1,352 sharing the prefix "qwerty", in no particular order.
struct LargeVocabulary {
  std::unique_ptr<mote_test::TinyModel> model;
  std::unique_ptr<mote_test::TestSession> session;

  LargeVocabulary() {
    mote::convert::TokenizerData t;
    t.kind = mote::format::TokenizerKind::byte_level_bpe;
    t.flags = 0;
    const auto add = [&](const std::string &piece, uint8_t type) {
      t.pieces.push_back(piece);
      t.types.push_back(type);
      t.scores.push_back(0.0f);
    };
    for (int b = 0; b < 256; ++b) add(std::string(1, static_cast<char>(b)), mote::format::kTokenNormal);
    t.bos_id = 256;
    t.eos_id = 257;
    add("<s>", mote::format::kTokenControl);
    add("</s>", mote::format::kTokenControl);
    std::set<std::string> pieces;
    uint64_t state = 12345;
    while (pieces.size() < 40000) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      std::string piece = (state >> 60) < 5 ? " " : "";
      for (uint64_t length = 2 + (state >> 33) % 6, bits = state >> 8; length > 0; --length, bits /= 26) {
        piece += static_cast<char>('a' + bits % 26);
      }
      pieces.insert(piece);
    }
    for (char a = 'a'; a <= 'z'; ++a) {  // pieces sharing long prefixes
      for (char b = 'a'; b <= 'z'; ++b) {
        pieces.insert(std::string("qwerty") + a + b);
        pieces.insert(std::string("qwerty") + a + b + "#");
      }
    }
    std::vector<std::string> shuffled(pieces.begin(), pieces.end());  // ids not in byte order
    for (size_t i = shuffled.size() - 1; i > 0; --i) std::swap(shuffled[i], shuffled[(i * 7919) % (i + 1)]);
    for (const std::string &piece : shuffled) add(piece, mote::format::kTokenNormal);
    mote::convert::ModelData data = mote_test::tiny_model_data(t);
    data.config.max_seq_len = 64;
    model = std::make_unique<mote_test::TinyModel>();
    model->bytes = mote_test::AlignedBuffer::copy_of(mote::convert::serialize(data));
    char message[256] = "";
    REQUIRE_MESSAGE(
        mote_model_open(model->bytes.data.get(), model->bytes.size, &model->model, message, sizeof message) == MOTE_OK,
        message);
    session = mote_test::open_session(model->model, mote_session_options_default());
  }
};

// One per process: converting 40,000 pieces takes a while.
LargeVocabulary &large_vocabulary() {
  static LargeVocabulary v;
  return v;
}

// A grammar compiled for a model, in its own arena.
struct ModelGrammar {
  mote_test::AlignedBuffer arena{0};
  mote_grammar grammar{};

  ModelGrammar(const mote_model &model, const std::string &text) {
    size_t bytes = 0;
    char error[256] = "";
    REQUIRE(mote_grammar_arena_size(text.data(), text.size(), &bytes, error, sizeof error) == MOTE_OK);
    arena = mote_test::AlignedBuffer(bytes);
    REQUIRE_MESSAGE(mote_grammar_init(&grammar, &model, text.data(), text.size(), arena.data.get(), bytes, error,
                                      sizeof error) == MOTE_OK,
                    error);
  }
};

// Generates up to 24 tokens from BOS under the grammar of overlapping lengths, each sampler
// setting in turn: each produces letters the grammar allows, or stops with one line naming a
// matcher bound, in seconds (a refused draw checked the whole vocabulary at O(stacks^2) a
// character, token by token: no third token after minutes).
struct SamplerSetting {
  float temperature;
  int top_k;
};

void generate_overlapping_lengths(mote_session &session, const mote_model &model, int32_t bos,
                                  std::initializer_list<SamplerSetting> settings) {
  ModelGrammar g(model, overlapping_lengths_grammar());
  for (const SamplerSetting setting : settings) {
    const float temperature = setting.temperature;  // not a structured binding: CAPTURE names it (C++17)
    const int top_k = setting.top_k;
    {
      CAPTURE(temperature);
      CAPTURE(top_k);
      const auto start = std::chrono::steady_clock::now();
      mote_sampler_options sampler = mote_sampler_options_default();
      sampler.temperature = temperature;
      sampler.top_k = top_k;
      REQUIRE(mote_session_reset(&session) == MOTE_OK);
      REQUIRE(mote_grammar_reset(&g.grammar) == MOTE_OK);
      std::string output;
      uint32_t n = 0;
      const mote_status status =
          mote_generate_constrained(&session, &bos, 1, 24, &sampler, &g.grammar, append_piece, &output, &n);
      const std::string message = status == MOTE_OK ? "" : mote_session_error(&session);
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      MESSAGE("T=" << temperature << " top-k " << top_k << ": " << n << " tokens '" << output << "' " << message
                   << " in " << seconds << " s");
      CHECK((status == MOTE_OK || status == MOTE_ERR_GRAMMAR));
      for (const char c : output) CHECK((c >= 'a' && c <= 'z'));
      if (status == MOTE_OK) CHECK((mote_grammar_state(&g.grammar) & MOTE_GRAMMAR_COMPLETE) != 0);
      if (status != MOTE_OK) {
        CHECK(message.find('\n') == std::string::npos);
        CHECK((message.find("matcher steps") != std::string::npos || message.find("stack words") != std::string::npos));
      }
      CHECK(seconds < 60);  // a budget of matcher steps takes about a second; minutes are a hang
    }
  }
}

}  // namespace

TEST_CASE("constrained sampling bounds its work per token: a 40,000-token vocabulary") {
  LargeVocabulary &v = large_vocabulary();
  generate_overlapping_lengths(v.session->session, v.model->model, 256, {{1.0f, 0}, {0.0f, 40}});
}

TEST_CASE("mote run: past the budget of matcher steps, one line and a non-zero exit") {
  if (!mote_cli_test::have_cli()) return;
  LargeVocabulary &v = large_vocabulary();
  const std::string model = mote_cli_test::workspace().path("large_vocabulary.mote");
  const std::string grammar = mote_cli_test::workspace().path("overlapping.gbnf");
  std::ofstream(model, std::ios::binary)
      .write(reinterpret_cast<const char *>(v.model->bytes.data.get()),
             static_cast<std::streamsize>(v.model->bytes.size));
  mote_cli_test::write_text(grammar, overlapping_lengths_grammar());
  // Seed 2's first draw is refused: the whole vocabulary is checked, past the budget.
  mote_cli_test::expect_error("run -m " + mote_cli_test::quote(model) + " -p x --temp 1 --top-k 0 --seed 2 -n 8 " +
                                  "--grammar-file " + mote_cli_test::quote(grammar),
                              1, "grammar: the grammar needs more than 134217728 matcher steps for one token");
}

TEST_CASE("constrained sampling bounds its work per token: aidreams260K") {
  const std::string checkpoint = mote_test::shared_model("aidreams260K.bin");
  const std::string tokenizer = mote_test::shared_model("aidreams_tok512.bin");
  if (checkpoint.empty() || tokenizer.empty()) return;
  auto m = mote_test::convert_and_open(checkpoint, tokenizer);
  auto s = mote_test::open_session(m->model, mote_session_options_default());
  generate_overlapping_lengths(s->session, m->model, 1, {{1.0f, 0}, {1.0f, 40}, {0.0f, 40}});
}

// Checks every token of the grammar's vocabulary from its current state, in byte order or in id
// order: (allowed tokens, matcher steps).
std::pair<size_t, uint64_t> check_vocabulary(mote::grammar::Grammar &g, bool byte_order) {
  const mote::format::TokenizerView &tok = g.tokenizer;
  mote::grammar::TokenChecker checker(g, UINT64_MAX);
  size_t allowed = 0;
  for (uint32_t i = 0; i < tok.n_tokens; ++i) {
    const uint32_t id = byte_order ? tok.sorted_ids[i] : i;
    const uint32_t length = tok.piece_offsets[id + 1] - tok.piece_offsets[id];
    const char *piece = tok.piece_bytes + tok.piece_offsets[id];
    if (length > 0 && checker.check(piece, length) == mote::grammar::Check::kAllowed) ++allowed;
  }
  return {allowed, checker.steps()};
}

// Every token's answer from a TokenChecker (prefixes shared, in byte order and in id order)
// against the matcher's own check of each token alone, from the state after each feed; only the
// tokens that start with `only` when given.
void check_tokens_as_alone(const mote_model &model, const std::string &text, std::initializer_list<std::string> feeds,
                           const std::string &only = "") {
  ModelGrammar compiled(model, text);
  mote::grammar::Grammar &g = *mote::grammar::grammar_of(&compiled.grammar);
  for (const std::string &fed : feeds) {
    CAPTURE(fed);
    mote_grammar_reset(&compiled.grammar);
    REQUIRE(mote_grammar_accept_bytes(&compiled.grammar, fed.data(), fed.size(), nullptr, 0) == MOTE_OK);
    for (const bool byte_order : {true, false}) {
      mote::grammar::TokenChecker checker(g, UINT64_MAX);
      size_t allowed = 0, differ = 0;
      for (uint32_t i = 0; i < g.tokenizer.n_tokens; ++i) {
        const int32_t id = static_cast<int32_t>(byte_order ? g.tokenizer.sorted_ids[i] : i);
        char byte = 0;
        const char *bytes = nullptr;
        size_t n = 0;
        mote::piece_for(g.tokenizer, -1, id, &byte, &bytes, &n);
        if (n == 0 || std::string(bytes, n).compare(0, only.size(), only) != 0) continue;
        const bool shared = checker.check(bytes, n) == mote::grammar::Check::kAllowed;
        allowed += shared;
        differ += shared != mote::grammar::bytes_allowed(g, bytes, n);
      }
      CAPTURE(byte_order);
      CHECK(differ == 0);
      if (byte_order) MESSAGE("after '" << fed << "': " << allowed << " tokens allowed");
    }
  }
}

TEST_CASE("a TokenChecker answers for every token as the token checked alone does") {
  LargeVocabulary &v = large_vocabulary();
  std::vector<char> json(1 << 16);
  size_t n = 0;
  REQUIRE(mote_grammar_from_json_schema("{}", 2, json.data(), json.size(), &n, nullptr, 0) == MOTE_OK);
  check_tokens_as_alone(v.model->model, std::string(json.data(), n), {"", "{\"", "[1,", "{\"a\":\"x\xC3", "[tr"});
  check_tokens_as_alone(v.model->model, "root ::= [a-z]{3} \" \" [^a-c]* | \"ab\" [é]\n", {"", "a", "abc ", "ab\xC3"});
  // Sets of 1,500 stacks: the prefix buffer fills within "qwerty" and deeper prefixes go unkept
  // (their sets are overwritten: resuming from one is wrong).
  std::string wide = "root ::= \"qwertyzq#\"";
  for (int i = 0; i < 1500; ++i) wide += " | [a-z]+ \"" + std::to_string(i) + "\"";
  check_tokens_as_alone(v.model->model, wide + "\n", {"", "qw"}, "qw");
  const std::string checkpoint = mote_test::shared_model("aidreams260K.bin");
  const std::string tokenizer = mote_test::shared_model("aidreams_tok512.bin");
  if (checkpoint.empty() || tokenizer.empty()) return;
  auto m = mote_test::convert_and_open(checkpoint, tokenizer);
  check_tokens_as_alone(m->model, overlapping_lengths_grammar(), {"", "ab", "abcdef"});
}

TEST_CASE("checking the vocabulary in byte order shares prefixes; a JSON value takes a small part of the budget") {
  LargeVocabulary &v = large_vocabulary();
  std::vector<char> text(1 << 16);
  size_t n = 0;
  REQUIRE(mote_grammar_from_json_schema("{}", 2, text.data(), text.size(), &n, nullptr, 0) == MOTE_OK);
  ModelGrammar json(v.model->model, std::string(text.data(), n));
  mote::grammar::Grammar &g = *mote::grammar::grammar_of(&json.grammar);
  for (const std::string fed : {"", "{\"", "[1,", "{\"a\":\"xyz"}) {
    CAPTURE(fed);
    mote_grammar_reset(&json.grammar);
    REQUIRE(mote_grammar_accept_bytes(&json.grammar, fed.data(), fed.size(), nullptr, 0) == MOTE_OK);
    const auto [allowed, steps] = check_vocabulary(g, true);
    const auto [allowed_by_id, steps_by_id] = check_vocabulary(g, false);
    MESSAGE("after '" << fed << "': " << allowed << " allowed, " << steps << " steps in byte order, " << steps_by_id
                      << " in id order");
    CHECK(allowed == allowed_by_id);
    CHECK(steps <= steps_by_id);
    CHECK(steps < mote::kMaxGrammarSampleSteps / 16);
  }
}

TEST_CASE("past its budget of matcher steps, constrained sampling stops with one line") {
  LargeVocabulary &v = large_vocabulary();
  ModelGrammar g(v.model->model, overlapping_lengths_grammar());
  mote::grammar::Grammar &grammar = *mote::grammar::grammar_of(&g.grammar);
  const size_t n = grammar.vocab_size;
  std::vector<mote::Candidate> scratch(n);
  mote::Rng rng;
  mote::rng_seed(rng, 1);
  char error[256] = "";
  for (const int top_k : {0, 40}) {  // a refused draw: then the walk in byte order, or 40 in logit order
    CAPTURE(top_k);
    std::vector<float> logits(n, 0.0f);
    logits[' '] = 30.0f;  // the draw and the best token: refused, so the search goes on
    mote_sampler_options options = mote_sampler_options_default();
    options.temperature = 1.0f;
    options.top_k = top_k;
    int32_t token = -1;
    size_t bad = 0;
    CHECK(mote::sample_with_grammar(options, rng, logits.data(), n, nullptr, 0, scratch.data(), grammar, 256, 100000,
                                    &token, &bad, mote::ErrorSink{error, sizeof error}) == MOTE_ERR_GRAMMAR);
    CHECK(std::string(error) == "grammar: the grammar needs more than 100000 matcher steps for one token");
  }
}

namespace {

// Whether bytes are valid UTF-8 (RFC 3629's table, written out: the oracle for the matcher's).
bool valid_utf8(const std::string &bytes) {
  for (size_t i = 0; i < bytes.size();) {
    const auto at = [&](size_t k) { return i + k < bytes.size() ? static_cast<uint8_t>(bytes[i + k]) : 0x100; };
    const unsigned b = at(0);
    const auto in = [](unsigned v, unsigned low, unsigned high) { return v >= low && v <= high; };
    size_t n = 0;
    if (b <= 0x7F) {
      n = 1;
    } else if (in(b, 0xC2, 0xDF) && in(at(1), 0x80, 0xBF)) {
      n = 2;
    } else if (((b == 0xE0 && in(at(1), 0xA0, 0xBF)) || (in(b, 0xE1, 0xEC) && in(at(1), 0x80, 0xBF)) ||
                (b == 0xED && in(at(1), 0x80, 0x9F)) || (in(b, 0xEE, 0xEF) && in(at(1), 0x80, 0xBF))) &&
               in(at(2), 0x80, 0xBF)) {
      n = 3;
    } else if (((b == 0xF0 && in(at(1), 0x90, 0xBF)) || (in(b, 0xF1, 0xF3) && in(at(1), 0x80, 0xBF)) ||
                (b == 0xF4 && in(at(1), 0x80, 0x8F))) &&
               in(at(2), 0x80, 0xBF) && in(at(3), 0x80, 0xBF)) {
      n = 4;
    } else {
      return false;
    }
    i += n;
  }
  return true;
}

}  // namespace

TEST_CASE("a byte-level vocabulary under a JSON grammar samples only valid UTF-8, however the logits lean") {
  LargeVocabulary &v = large_vocabulary();
  std::vector<char> json(1 << 16);
  size_t n_json = 0;
  REQUIRE(mote_grammar_from_json_schema(R"({"type":"string"})", 17, json.data(), json.size(), &n_json, nullptr, 0) ==
          MOTE_OK);
  ModelGrammar g(v.model->model, std::string(json.data(), n_json));
  mote::grammar::Grammar &grammar = *mote::grammar::grammar_of(&g.grammar);
  const size_t n = grammar.vocab_size;
  std::vector<mote::Candidate> scratch(n);
  for (const float temperature : {0.0f, 1.0f}) {
    CAPTURE(temperature);
    mote_sampler_options options = mote_sampler_options_default();
    options.temperature = temperature;
    options.top_k = 0;  // a refused draw checks the whole vocabulary
    mote::Rng rng;
    mote::rng_seed(rng, 7);
    REQUIRE(mote_grammar_reset(&g.grammar) == MOTE_OK);
    std::string output;
    int32_t prev = -1;
    for (int step = 0; step < 200 && (mote_grammar_state(&g.grammar) & MOTE_GRAMMAR_COMPLETE) == 0; ++step) {
      // The byte tokens from 0x80 up lead by far: invalid leads (C0, C1, F5-FF) and the second
      // bytes of overlong forms, surrogates and code points above U+10FFFF most of all, then the
      // leads those follow (E0, ED, F0, F4); after 60 steps the closing quote leads.
      std::vector<float> logits(n, 0.0f);
      for (int b = 0x80; b < 0x100; ++b) logits[b] = 20.0f;
      for (const int b : {0xE0, 0xED, 0xF0, 0xF4}) logits[b] = 25.0f;
      for (const int b : {0xC0, 0xC1, 0xF5, 0xF8, 0xFF, 0x80, 0xA0, 0x90, 0x8F}) logits[b] = 30.0f;
      logits['"'] = step == 0 || step >= 60 ? 40.0f : 0.0f;
      int32_t token = -1;
      size_t bad = 0;
      char error[256] = "";
      REQUIRE_MESSAGE(mote::sample_with_grammar(options, rng, logits.data(), n, nullptr, 0, scratch.data(), grammar,
                                                prev, mote::kMaxGrammarSampleSteps, &token, &bad,
                                                mote::ErrorSink{error, sizeof error}) == MOTE_OK,
                      error);
      REQUIRE(mote_grammar_accept_token(&g.grammar, prev, token, nullptr, 0) == MOTE_OK);
      char byte = 0;
      const char *bytes = nullptr;
      size_t length = 0;
      mote::piece_for(grammar.tokenizer, prev, token, &byte, &bytes, &length);
      output.append(bytes, length);
      prev = token;
    }
    CAPTURE(output);
    CHECK((mote_grammar_state(&g.grammar) & MOTE_GRAMMAR_COMPLETE) != 0);
    CHECK(valid_utf8(output));
    CHECK(std::count_if(output.begin(), output.end(), [](char c) { return (c & 0x80) != 0; }) > 40);
  }
}

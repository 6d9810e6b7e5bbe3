// GBNF grammars against an independent recognizer written here: a small parser of the GBNF text
// into a tree and a matcher that computes, for each node and start, every position where a match
// can end (memoized per rule and position: exact for the grammars mote accepts, which have no
// left recursion). mote compiles each grammar into an arena of exactly the size it promised,
// followed by a guard that must stay untouched, and must agree with the recognizer on generated
// sentences and their mutations; a grammar with an unreferenced rule appended must accept the
// same strings. Then llama.cpp's own grammars (grammars/*.gbnf) and the accept/reject cases of
// its tests/test-grammar-integration.cpp, from the pinned llama-cpp-python sdist
// (models/fetch_tokenizer_vectors.sh fetches them; never committed): skipped when absent, a
// failure with MOTE_REQUIRE_TOKENIZER_VECTORS=1 (.ci/run).
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "mote/mote.h"
#include "grammar_support.hpp"
#include "test_support.hpp"
#include "tokenizer_support.hpp"

namespace {

using mote_test::Compiled;

// ---- UTF-8 ----

std::string encode(const std::vector<uint32_t> &cps) {
  std::string out;
  for (uint32_t cp : cps) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  return out;
}

// Strict decoding (no overlong forms, surrogates or code points past U+10FFFF); false when invalid.
bool decode(const std::string &text, std::vector<uint32_t> *cps) {
  cps->clear();
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    const size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > text.size()) return false;
    uint32_t cp = n == 1 ? c : c & (0x7Fu >> n);
    for (size_t k = 1; k < n; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (next & 0x3F);
    }
    const uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < least[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    cps->push_back(cp);
    i += n;
  }
  return true;
}

// ---- the reference: GBNF text -> tree ----

struct Node {
  enum Kind { kSequence, kChoice, kClass, kRule, kRepeat } kind = kSequence;
  std::vector<Node> children;                        // sequence, choice; repeat: one
  std::vector<std::pair<uint32_t, uint32_t>> ranges;  // class
  bool negated = false, any = false;                  // class
  std::string name;                                   // rule reference
  uint32_t min = 0, max = 0;                          // repeat (max UINT32_MAX: unbounded)
};

struct Reference {
  std::map<std::string, Node> rules;
  std::string error;  // empty when the text parsed
};

class ReferenceParser {
 public:
  explicit ReferenceParser(const std::string &text) : s_(text) {}

  Reference parse() {
    Reference out;
    space(true);
    while (ok() && i_ < s_.size()) {
      const std::string name = word();
      space(false);
      if (name.empty() || s_.compare(i_, 3, "::=") != 0) return failed("expected 'name ::='");
      i_ += 3;
      space(true);
      out.rules[name] = choice(false);
      space(true);
    }
    if (!ok()) out.error = error_;
    return out;
  }

 private:
  bool ok() const { return error_.empty(); }
  Reference failed(const char *what) {
    Reference r;
    r.error = what;
    return r;
  }
  void fail(const char *what) {
    if (ok()) error_ = what;
  }
  char at(size_t ahead = 0) const { return i_ + ahead < s_.size() ? s_[i_ + ahead] : '\0'; }
  static bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'; }
  std::string word() {
    const size_t start = i_;
    while (word_char(at())) ++i_;
    return s_.substr(start, i_ - start);
  }
  void space(bool newlines) {
    while (i_ < s_.size()) {
      if (at() == '#') {
        while (i_ < s_.size() && at() != '\n') ++i_;
      } else if (at() == ' ' || at() == '\t' || (newlines && (at() == '\n' || at() == '\r'))) {
        ++i_;
      } else {
        return;
      }
    }
  }

  Node choice(bool nested) {
    Node n;
    n.kind = Node::kChoice;
    n.children.push_back(sequence(nested));
    while (ok() && at() == '|') {
      ++i_;
      space(true);
      n.children.push_back(sequence(nested));
    }
    return n;
  }

  Node sequence(bool nested) {
    Node seq;
    while (ok()) {
      const char c = at();
      if (c == '"') {
        ++i_;
        Node literal;
        while (ok() && at() != '"') {
          if (i_ >= s_.size()) fail("unterminated literal");
          Node one;
          one.kind = Node::kClass;
          const uint32_t cp = character();
          one.ranges.push_back({cp, cp});
          literal.children.push_back(one);
        }
        ++i_;
        seq.children.push_back(literal);
      } else if (c == '[') {
        seq.children.push_back(char_class());
      } else if (c == '.') {
        ++i_;
        Node any;
        any.kind = Node::kClass;
        any.any = true;
        seq.children.push_back(any);
      } else if (c == '(') {
        ++i_;
        space(true);
        seq.children.push_back(choice(true));
        if (at() != ')') fail("expected )");
        ++i_;
      } else if (word_char(c)) {
        Node ref;
        ref.kind = Node::kRule;
        ref.name = word();
        seq.children.push_back(ref);
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (seq.children.empty()) fail("repetition of nothing");
        if (!ok()) break;
        Node repeat;
        repeat.kind = Node::kRepeat;
        repeat.min = c == '+' ? 1 : 0;
        repeat.max = c == '?' ? 1 : UINT32_MAX;
        ++i_;
        if (c == '{') braces(&repeat);
        repeat.children.push_back(seq.children.back());
        seq.children.back() = repeat;
      } else {
        break;
      }
      space(nested);
    }
    return seq;
  }

  void braces(Node *repeat) {
    space(false);
    repeat->min = number();
    space(false);
    repeat->max = repeat->min;
    if (at() == ',') {
      ++i_;
      space(false);
      repeat->max = std::isdigit(static_cast<unsigned char>(at())) ? number() : UINT32_MAX;
      space(false);
    }
    if (at() != '}') fail("expected }");
    ++i_;
  }

  uint32_t number() {
    uint32_t v = 0;
    while (std::isdigit(static_cast<unsigned char>(at()))) v = v * 10 + static_cast<uint32_t>(s_[i_++] - '0');
    return v;
  }

  Node char_class() {
    ++i_;
    Node n;
    n.kind = Node::kClass;
    if (at() == '^') {
      n.negated = true;
      ++i_;
    }
    while (ok() && at() != ']') {
      if (i_ >= s_.size()) fail("unterminated class");
      const uint32_t low = character();
      uint32_t high = low;
      if (at() == '-' && at(1) != ']') {
        ++i_;
        high = character();
      }
      n.ranges.push_back({low, high});
    }
    ++i_;
    return n;
  }

  uint32_t character() {
    if (at() != '\\') {
      std::vector<uint32_t> cp;
      const auto c = static_cast<unsigned char>(at());
      const size_t n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
      if (!decode(s_.substr(i_, n), &cp) || cp.size() != 1) {
        fail("bad UTF-8");
        ++i_;
        return 0;
      }
      i_ += n;
      return cp[0];
    }
    const char e = at(1);
    i_ += 2;
    const int hex_digits = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
    if (hex_digits > 0) {
      const uint32_t v = static_cast<uint32_t>(std::stoul(s_.substr(i_, hex_digits), nullptr, 16));
      i_ += hex_digits;
      return v;
    }
    switch (e) {
      case 'n': return '\n';
      case 't': return '\t';
      case 'r': return '\r';
      default: return static_cast<unsigned char>(e);
    }
  }

  const std::string &s_;
  size_t i_ = 0;
  std::string error_;
};

// ---- the reference: matching ----

class Recognizer {
 public:
  Recognizer(const Reference &g, const std::vector<uint32_t> &text) : g_(g), text_(text) {}

  bool accepts() {
    const std::set<size_t> ends = rule("root", 0);
    return ends.count(text_.size()) > 0;
  }

 private:
  std::set<size_t> rule(const std::string &name, size_t pos) {
    const auto key = std::make_pair(name, pos);
    const auto found = memo_.find(key);
    if (found != memo_.end()) return found->second;
    memo_[key] = {};  // a reference back to (name, pos) before it finishes: left recursion, matches nothing
    std::set<size_t> result = ends(g_.rules.at(name), pos);
    memo_[key] = result;
    return result;
  }

  bool class_has(const Node &n, uint32_t cp) const {
    if (n.any) return true;
    bool in = false;
    for (const auto &r : n.ranges) in = in || (cp >= r.first && cp <= r.second);
    return in != n.negated;
  }

  std::set<size_t> ends(const Node &n, size_t pos) {
    switch (n.kind) {
      case Node::kClass:
        if (pos < text_.size() && class_has(n, text_[pos])) return {pos + 1};
        return {};
      case Node::kRule: return rule(n.name, pos);
      case Node::kChoice: {
        std::set<size_t> out;
        for (const Node &c : n.children) {
          const std::set<size_t> e = ends(c, pos);
          out.insert(e.begin(), e.end());
        }
        return out;
      }
      case Node::kSequence: {
        std::set<size_t> current{pos};
        for (const Node &c : n.children) current = step(c, current);
        return current;
      }
      case Node::kRepeat: {
        std::set<size_t> out, current{pos}, seen;
        if (n.min == 0) out.insert(pos);
        // Past min, a position reached again explores nothing new (the count no longer matters).
        for (uint64_t count = 1; count <= n.max && !current.empty() && count <= n.min + text_.size() + 1; ++count) {
          current = step(n.children[0], current);
          if (count >= n.min) {
            std::set<size_t> fresh;
            for (size_t p : current) {
              if (seen.insert(p).second) fresh.insert(p);
            }
            out.insert(current.begin(), current.end());
            current = fresh;
          }
        }
        return out;
      }
    }
    return {};
  }

  std::set<size_t> step(const Node &n, const std::set<size_t> &from) {
    std::set<size_t> out;
    for (size_t p : from) {
      const std::set<size_t> e = ends(n, p);
      out.insert(e.begin(), e.end());
    }
    return out;
  }

  const Reference &g_;
  const std::vector<uint32_t> &text_;
  std::map<std::pair<std::string, size_t>, std::set<size_t>> memo_;
};

bool reference_accepts(const Reference &g, const std::string &text) {
  std::vector<uint32_t> cps;
  if (!decode(text, &cps)) return false;
  return Recognizer(g, cps).accepts();
}

// ---- the reference: sentences, generated ----

// Code points to draw for negated classes, '.' and insertions: ASCII, the JSON specials, controls,
// two- three- and four-byte characters.
const uint32_t kPool[] = {'a', 'z', 'Q', '0', '7', ' ', '\n', '\t', '"', '\\', '{', '}', '[', ']', ',', ':', '-', '+',
                          '.', '*', '/', '!', '(', ')', '=', ';', 0x01, 0x7F, 0xE9, 0x3B1, 0x3042, 0x4E2D, 0x1F535};

class Generator {
 public:
  Generator(const Reference &g, uint32_t seed) : g_(g), rng_(seed) {}

  // A sentence of the grammar, or false when a draw ran too deep or too long (the caller retries).
  bool sentence(std::vector<uint32_t> *out) {
    out->clear();
    budget_ = 400;
    return emit(g_.rules.at("root"), 0, out);
  }

  uint32_t pick(uint32_t n) { return std::uniform_int_distribution<uint32_t>(0, n - 1)(rng_); }
  uint32_t pool_char() { return kPool[pick(sizeof kPool / sizeof kPool[0])]; }

 private:
  bool emit(const Node &n, int depth, std::vector<uint32_t> *out) {
    if (depth > 60 || --budget_ < 0) return false;
    switch (n.kind) {
      case Node::kClass: return emit_class(n, out);
      case Node::kRule: return emit(g_.rules.at(n.name), depth + 1, out);
      case Node::kChoice: return emit(n.children[pick(static_cast<uint32_t>(n.children.size()))], depth + 1, out);
      case Node::kSequence:
        for (const Node &c : n.children) {
          if (!emit(c, depth + 1, out)) return false;
        }
        return true;
      case Node::kRepeat: {
        const uint32_t extra = n.max == UINT32_MAX ? pick(4) : pick(std::min<uint32_t>(n.max - n.min, 3) + 1);
        for (uint32_t i = 0; i < n.min + extra; ++i) {
          if (!emit(n.children[0], depth + 1, out)) return false;
        }
        return true;
      }
    }
    return false;
  }

  bool emit_class(const Node &n, std::vector<uint32_t> *out) {
    if (n.any || n.negated) {
      for (int tries = 0; tries < 50; ++tries) {
        const uint32_t cp = pool_char();
        bool in = false;
        for (const auto &r : n.ranges) in = in || (cp >= r.first && cp <= r.second);
        if (n.any || !in) {
          out->push_back(cp);
          return true;
        }
      }
      return false;
    }
    const auto &r = n.ranges[pick(static_cast<uint32_t>(n.ranges.size()))];
    const uint32_t cp = r.first + pick(std::min<uint32_t>(r.second - r.first, 1000) + 1);
    if (cp >= 0xD800 && cp <= 0xDFFF) return false;
    out->push_back(cp);
    return true;
  }

  const Reference &g_;
  std::mt19937 rng_;
  int budget_ = 0;
};

// Sentences of the grammar and mutations of them (which may or may not be sentences).
std::vector<std::string> sample_strings(const Reference &ref, uint32_t seed, int n_sentences) {
  Generator gen(ref, seed);
  std::vector<std::string> out;
  std::vector<uint32_t> s;
  for (int i = 0, tries = 0; i < n_sentences && tries < 20 * n_sentences; ++tries) {
    if (!gen.sentence(&s)) continue;
    ++i;
    out.push_back(encode(s));
    std::vector<uint32_t> m = s;
    switch (gen.pick(4)) {
      case 0:
        if (!m.empty()) m.erase(m.begin() + gen.pick(static_cast<uint32_t>(m.size())));
        break;
      case 1: m.insert(m.begin() + gen.pick(static_cast<uint32_t>(m.size()) + 1), gen.pool_char()); break;
      case 2:
        if (!m.empty()) m[gen.pick(static_cast<uint32_t>(m.size()))] = gen.pool_char();
        break;
      default: m.resize(gen.pick(static_cast<uint32_t>(m.size()) + 1)); break;
    }
    out.push_back(encode(m));
  }
  return out;
}

// mote and the reference agree on every sampled string; the grammar with an unreferenced rule
// appended accepts the same ones; every prefix of a sentence can continue. Returns the sentences.
size_t check_against_reference(const std::string &name, const std::string &text, uint32_t seed, int n_sentences) {
  const Reference ref = ReferenceParser(text).parse();
  REQUIRE_MESSAGE(ref.error.empty(), name << ": the reference cannot parse it: " << ref.error);
  REQUIRE_MESSAGE(ref.rules.count("root") == 1, name);
  Compiled mote(text);
  REQUIRE_MESSAGE(mote.status == MOTE_OK, name << ": " << mote.error);
  CHECK_MESSAGE(mote.guard_intact(), name << ": compiling wrote past the promised arena");
  // Repetitions of three or more elements, each kind, in a rule nothing references.
  const std::string with_unused = text + "\nzz-unused ::= (\"abc\" | [x-z] \"de\")? \"fgh\"* [0-9]{0,3} \"ij\"{1,2} \"klm\"+\n";
  Compiled mote_unused(with_unused);
  REQUIRE_MESSAGE(mote_unused.status == MOTE_OK, name << " (with an unused rule): " << mote_unused.error);
  CHECK(mote_unused.guard_intact());
  size_t sentences = 0;
  for (const std::string &s : sample_strings(ref, seed, n_sentences)) {
    const bool expected = reference_accepts(ref, s);
    sentences += expected;
    CHECK_MESSAGE(mote.accepts(s) == expected, name << ": \"" << s << "\" (reference: " << expected << ")");
    CHECK_MESSAGE(mote_unused.accepts(s) == expected, name << " with an unused rule: \"" << s << "\"");
    if (expected && !s.empty()) CHECK_MESSAGE(mote.continues(s.substr(0, s.size() / 2)), name << ": \"" << s << "\"");
  }
  CHECK(mote.guard_intact());
  return sentences;
}

// Grammars of mote's own tests (each repetition kind over items of one and of several elements).
const char *const kGrammars[][2] = {
    {"yes-no", "root ::= (\"Yes\" | \"No\") \"!\"?\n"},
    {"optional literal", "root ::= \"a\" \"bcd\"? \"e\"\n"},
    {"numbers", "root ::= number (\",\" \" \"? number)*\nnumber ::= \"-\"? [0-9]+ (\".\" [0-9]{1,3})? ([eE] [0-9]{0,2})?\n"},
    {"bounded groups", "root ::= (\"ab\" | \"cd\"){0,3} \"!\" \"xyz\"{2,4} \"uvw\"{0,2}\n"},
    {"nested", "root ::= \"(\" inner? \")\"\ninner ::= \"x\" | \"(\" inner? \")\" | [a-c]+ \"--\"?\n"},
    {"json-like",
     "root ::= value\nvalue ::= \"{\" ws ( str \":\" ws value (\",\" ws str \":\" ws value)* )? \"}\" | str | [0-9]+\n"
     "str ::= \"\\\"\" ( [^\"\\\\] | \"\\\\\" [\"\\\\nt] )* \"\\\"\"\nws ::= [ \\n]*\n"},
    {"utf-8", "root ::= [α-ω]+ [^a-z] \"é\"? \"中文\"{0,2}\n"},
    {"any", "root ::= ... \"abc\" .?\n"},
};

// The repository's grammar regressions (tests/fuzz/regressions/grammar/gbnf_*: a 1-byte mode, a
// 4-byte length, the grammar, then an input).
std::string regression_grammar(const std::string &path) {
  const std::vector<unsigned char> bytes = mote_test::read_file(path);
  REQUIRE(bytes.size() >= 5);
  const uint32_t n = bytes[1] | bytes[2] << 8 | bytes[3] << 16 | static_cast<uint32_t>(bytes[4]) << 24;
  REQUIRE(5 + n <= bytes.size());
  return std::string(bytes.begin() + 5, bytes.begin() + 5 + n);
}

std::string vectors_dir() {
  if (const char *env = std::getenv("MOTE_TOKENIZER_VECTORS_DIR")) return env;
  return mote_test::cache_path("tokenizer-vectors");
}

// False (skipping, or failing in CI) when llama.cpp's grammar files were never fetched.
bool have_vectors(const std::string &path) {
  if (mote_test::file_exists(path)) return true;
  const char *require = std::getenv("MOTE_REQUIRE_TOKENIZER_VECTORS");
  if (require != nullptr && std::string(require) == "1") FAIL("llama.cpp's grammar files missing: " << path);
  MOTE_SKIP(path << " is absent: run models/fetch_tokenizer_vectors.sh");
  return false;
}

struct IntegrationCase {
  std::string kind, name, text;
  std::vector<std::string> passing, failing;
};

// grammar-integration.txt (written by models/fetch_tokenizer_vectors.sh from llama.cpp's test):
// fields "@tag length\n" + length bytes + "\n"; @grammar/@schema start a case, then @text, @pass, @fail.
std::vector<IntegrationCase> read_integration_cases(const std::string &path) {
  const std::vector<unsigned char> raw = mote_test::read_file(path);
  const std::string s(raw.begin(), raw.end());
  std::vector<IntegrationCase> cases;
  for (size_t i = 0; i < s.size();) {
    const size_t space = s.find(' ', i), newline = s.find('\n', i);
    REQUIRE((s[i] == '@' && space < newline && newline != std::string::npos));
    const std::string tag = s.substr(i + 1, space - i - 1);
    const size_t n = std::stoul(s.substr(space + 1, newline - space - 1));
    REQUIRE(newline + 1 + n < s.size());
    const std::string payload = s.substr(newline + 1, n);
    i = newline + 1 + n + 1;
    if (tag == "grammar" || tag == "schema") {
      cases.push_back({tag, payload, "", {}, {}});
    } else {
      REQUIRE(!cases.empty());
      if (tag == "text") cases.back().text = payload;
      if (tag == "pass") cases.back().passing.push_back(payload);
      if (tag == "fail") cases.back().failing.push_back(payload);
    }
  }
  return cases;
}

std::string grammar_of_schema(const std::string &schema, std::string *error) {
  std::vector<char> out(1 << 20);
  char err[256] = "";
  size_t n = 0;
  const mote_status status =
      mote_grammar_from_json_schema(schema.data(), schema.size(), out.data(), out.size(), &n, err, sizeof err);
  if (status != MOTE_OK) {
    *error = err;
    return "";
  }
  return std::string(out.data(), n);
}

}  // namespace

TEST_CASE("the reference recognizer knows the formulas it stands for") {
  const Reference ref = ReferenceParser("root ::= \"a\"{2,3} [^b] (\"c\" | x)*\nx ::= \"d\" \"e\"?\n").parse();
  REQUIRE(ref.error.empty());
  CHECK(reference_accepts(ref, "aaz"));
  CHECK(reference_accepts(ref, "aaazcddec"));
  CHECK_FALSE(reference_accepts(ref, "az"));
  CHECK_FALSE(reference_accepts(ref, "aaaaz"));
  CHECK_FALSE(reference_accepts(ref, "aab"));
  CHECK_FALSE(reference_accepts(ref, "aazee"));
  CHECK_FALSE(reference_accepts(ref, "aa\xC0\xA2"));  // an overlong '"' is no character
}

TEST_CASE("optional and repeated multi-element items keep the language (issue 34)") {
  // The GBNF compiler's in-place copy of a repeated item overwrote finished rules when the item
  // had three or more elements: these compiled to MOTE_OK with the root or a rule emptied.
  Compiled yes_no("root ::= (\"Yes\" | \"No\") \"!\"?\n");
  REQUIRE(yes_no.status == MOTE_OK);
  CHECK(yes_no.accepts("Yes"));
  CHECK(yes_no.accepts("No!"));
  CHECK_FALSE(yes_no.accepts(""));
  CHECK_FALSE(yes_no.accepts("Maybe"));
  Compiled number("root ::= number\nnumber ::= \"-\"? [0-9]+ (\".\" [0-9]+)? \"e10\"? \"xyz\"*\n");
  REQUIRE(number.status == MOTE_OK);
  CHECK(number.accepts("-12.5e10"));
  CHECK(number.accepts("7xyzxyz"));
  CHECK_FALSE(number.accepts("-"));
  CHECK(number.guard_intact());
}

TEST_CASE("a large repeated item compiles inside the arena it was promised") {
  // 30,004 elements (under the 262,144 bound): the item's copy used to land 30,000 elements past
  // the end of the exact-size arena.
  const std::string a(30000, 'a');
  Compiled big("root ::= \"" + a + "\"?\n");
  REQUIRE_MESSAGE(big.status == MOTE_OK, big.error);
  CHECK(big.guard_intact());
  CHECK(big.accepts(""));
  CHECK(big.accepts(a));
  CHECK_FALSE(big.accepts(a.substr(1)));
  Compiled repeated("root ::= \"x\" (\"" + a.substr(0, 5000) + "\"){0,5} \"y\"\n");
  REQUIRE_MESSAGE(repeated.status == MOTE_OK, repeated.error);
  CHECK(repeated.guard_intact());
  CHECK(repeated.accepts("x" + a.substr(0, 10000) + "y"));
  CHECK_FALSE(repeated.accepts("x" + a.substr(0, 10001) + "y"));
}

TEST_CASE("mote's grammars agree with the reference recognizer") {
  uint32_t seed = 20261206;
  for (const auto &g : kGrammars) {
    CAPTURE(g[0]);
    CHECK(check_against_reference(g[0], g[1], seed++, 150) > 50);
  }
  for (const char *file : {"gbnf_json", "gbnf_nested_text", "gbnf_utf8"}) {
    const std::string path = std::string(MOTE_TEST_DATA_DIR) + "/../fuzz/regressions/grammar/" + file;
    CHECK(check_against_reference(file, regression_grammar(path), seed++, 150) > 50);
  }
}

TEST_CASE("llama.cpp's grammars agree with the reference recognizer") {
  const std::string dir = vectors_dir() + "/grammars";
  if (!have_vectors(dir + "/json.gbnf")) return;
  int checked = 0;
  uint32_t seed = 7;
  DIR *d = opendir(dir.c_str());
  REQUIRE(d != nullptr);
  std::vector<std::string> names;
  while (const dirent *entry = readdir(d)) {
    const std::string name = entry->d_name;
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".gbnf") == 0) names.push_back(name);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  for (const std::string &name : names) {
    const std::vector<unsigned char> bytes = mote_test::read_file(dir + "/" + name);
    check_against_reference(name, std::string(bytes.begin(), bytes.end()), seed++, 100);
    ++checked;
  }
  CHECK(checked >= 8);
}

TEST_CASE("llama.cpp's grammar integration cases") {
  const std::string path = vectors_dir() + "/grammar-integration.txt";
  if (!have_vectors(path)) return;
  const std::vector<IntegrationCase> cases = read_integration_cases(path);
  size_t grammars = 0, schemas = 0, refused_schemas = 0;
  for (const IntegrationCase &c : cases) {
    CAPTURE(c.name);
    std::string text = c.text;
    if (c.kind == "schema") {
      std::string error;
      text = grammar_of_schema(c.text, &error);
      if (text.empty()) {  // refused: the message names JSON schema, never a grammar line
        CHECK_MESSAGE(error.find("grammar line") == std::string::npos, error);
        ++refused_schemas;
        continue;
      }
      ++schemas;
    } else {
      ++grammars;
    }
    Compiled mote(text);
    if (c.name == "segfault") {
      // root ::= ( [x]* )*: a repetition of an item that can match nothing, which llama.cpp
      // accepts; mote's matcher would expand it forever, so it refuses it when compiling.
      CHECK_MESSAGE(std::string(mote.error).find("left-recursive") != std::string::npos, mote.error);
      continue;
    }
    REQUIRE_MESSAGE(mote.status == MOTE_OK, c.name << ": " << mote.error);
    // additionalProperties: mote's grammar writes the named properties only (docs/USING.md), a
    // subset of the documents the schema allows: every output is valid, not every valid
    // document is an output. Such a schema's passing documents with other keys are not checked.
    const bool names_only = c.kind == "schema" && c.text.find("\"additionalProperties\"") != std::string::npos;
    size_t accepted = 0;
    for (const std::string &s : c.passing) {
      accepted += mote.accepts(s);
      if (!names_only) CHECK_MESSAGE(mote.accepts(s), c.name << ": should accept \"" << s << "\"");
    }
    CHECK_MESSAGE(accepted > 0, c.name << ": accepts none of the documents it should");
    for (const std::string &s : c.failing) CHECK_MESSAGE(!mote.accepts(s), c.name << ": should refuse \"" << s << "\"");
    CHECK(mote.guard_intact());
    if (c.kind == "grammar") {  // the reference agrees with llama.cpp's verdicts too
      const Reference ref = ReferenceParser(text).parse();
      REQUIRE_MESSAGE(ref.error.empty(), ref.error);
      for (const std::string &s : c.passing) CHECK(reference_accepts(ref, s));
      for (const std::string &s : c.failing) CHECK_FALSE(reference_accepts(ref, s));
    }
  }
  MESSAGE(grammars << " grammar cases, " << schemas << " schema cases, " << refused_schemas << " schemas refused");
  CHECK(grammars >= 10);
}

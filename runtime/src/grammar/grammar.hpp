// GBNF grammars compiled into an arena, and the matcher that follows them byte by byte.
//
// The compiled form is llama.cpp's: a flat array of elements, each rule a run of alternatives
// separated by kAlt and closed by kEnd; groups and repetitions become auxiliary rules. The
// matcher keeps a set of stacks of element positions (llama.cpp's grammar stacks), each stack's
// top a character class, and advances them one code point at a time. Everything lives in the
// caller's arena and every loop is bounded, so hostile grammars get an error, not a crash.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/arena.hpp"
#include "core/status.hpp"
#include "format/tokenizer_view.hpp"

namespace mote::grammar {

enum class Op : uint32_t {
  kEnd,         // closes a rule
  kAlt,         // separates a rule's alternatives
  kRuleRef,     // value: a rule id
  kNameRef,     // while parsing only: value is the text offset of a rule name not yet resolved
  kChar,        // starts a class: value is a code point (or the low end of a range)
  kCharNot,     // starts a negated class
  kRangeUpper,  // value: the high end of the range begun by the element before
  kCharAlt,     // another code point (or range start) of the class
  kCharAny,     // '.': any code point
};

struct Element {
  Op op;
  uint32_t value;
};

// Limits that keep hostile grammars bounded in memory and time (each exceeded one is an error).
constexpr uint32_t kMaxElements = 1u << 18;     // compiled elements (2 MiB)
constexpr uint32_t kMaxNesting = 128;           // parentheses inside parentheses
constexpr uint32_t kMaxRepeatCount = 1u << 20;  // the numbers of {m,n}
constexpr uint32_t kStackWords = 8192;          // words of one stack set (the matcher's bound)
constexpr uint32_t kMaxExpansions = 8192;       // rule expansions for one code point
constexpr uint64_t kMaxAnalysisSteps = 50000000;  // element visits of the compile-time checks
// The slots of the hash of a set's stacks (a set holds at most half as many stacks), and the
// words of the sets a TokenChecker keeps of its prefixes.
constexpr uint32_t kSeenSlots = kStackWords;
constexpr uint32_t kPrefixWords = 4 * kStackWords;

// A set of stacks packed as [depth, position 0 .. position depth-1] (the top last).
struct StackSet {
  uint32_t *words = nullptr;
  uint32_t n_words = 0;
};

// A code point still missing continuation bytes (after a token that ended inside it).
struct PartialUtf8 {
  uint32_t value = 0;
  uint32_t missing = 0;  // continuation bytes still to come
  uint32_t length = 0;   // bytes of the whole character (its shortest form's range: no overlong)
};

// The matcher's arena arrays beyond the compiled grammar (plan_matcher lays them out).
struct MatcherBuffers {
  uint32_t *seen = nullptr;          // kSeenSlots pairs (stamp, offset): the stacks of the set being written
  uint32_t *prefix_words = nullptr;  // kPrefixWords: a TokenChecker's sets after each prefix
};

// Sizes the first (counting) parse found; the writing parse fills arrays of exactly these.
// The element array holds peak_elements: a repetition copies its item into new rules before the
// item itself is dropped, so the elements in flight can outnumber those of the finished grammar.
struct Counts {
  uint32_t n_elements = 0;     // of the compiled grammar
  uint32_t peak_elements = 0;  // finished plus in-progress elements at their most, while parsing
  uint32_t n_rules = 0;
  uint32_t n_named = 0;
};

struct Symbol {
  uint32_t name_offset;  // in the grammar text
  uint32_t name_length;
  uint32_t rule;
};

constexpr uint32_t kGrammarTag = 0x47524D52u;

struct Grammar {
  uint32_t tag = 0;  // kGrammarTag once compiled, so a zeroed or stale mote_grammar is caught
  const Element *elements = nullptr;
  const uint32_t *rule_start = nullptr;  // rule id -> index of its first element
  uint32_t n_elements = 0, n_rules = 0;
  uint32_t root = 0;
  StackSet current;           // the state after the bytes accepted so far
  uint32_t *scratch[2] = {};  // two more stack sets: a step reads one, writes the other
  uint32_t *work = nullptr;   // the expansion work list (a stack set's size)
  PartialUtf8 partial;
  MatcherBuffers buffers;   // set before compile_grammar (its reset matches)
  uint32_t seen_stamp = 0;  // marks buffers.seen's slots of the set being written (0: clear them first)
  // The vocabulary the grammar masks (absent when compiled without a model).
  bool has_tokenizer = false;
  format::TokenizerView tokenizer;
  uint32_t vocab_size = 0;  // the logits' length
  int32_t bos_id = -1, eos_id = -1;
};

// The Grammar inside a caller's mote_grammar, or null when it is null or was never compiled.
inline Grammar *grammar_of(const mote_grammar *grammar) {
  if (grammar == nullptr || grammar->impl_ == nullptr) return nullptr;
  Grammar *g = static_cast<Grammar *>(grammar->impl_);
  return g->tag == kGrammarTag ? g : nullptr;
}

// Whether token ends generation (BOS, EOS or a control token), as mote_generate decides.
bool ends_generation(const Grammar &g, int32_t token);

// The arrays a grammar takes, laid out by planner (base null: counts only).
struct Arrays {
  Element *elements;
  uint32_t *rule_start, *rule_owner;  // owner: the named rule an auxiliary rule belongs to
  Symbol *symbols;
  uint32_t n_named;
  uint8_t *flags;                     // per rule: the analysis' scratch
  uint32_t *dfs;                      // per rule x 2: the left-recursion search's stack
  uint32_t *stack_sets[4];            // current, two scratch sets, the work list
};
void plan_arrays(ArenaPlanner &planner, const Counts &counts, Arrays *arrays);

// The first pass: syntax errors and the sizes (text is the GBNF grammar).
Status count_grammar(const char *text, size_t n, Counts *counts, ErrorSink err);

// The second pass: writes the elements, rules and symbols into arrays sized by counts, resolves
// rule names and checks the grammar (a root rule, no undefined or twice-defined rule, no left
// recursion, a root that can complete). Fills g's compiled part and resets its matcher.
Status compile_grammar(const char *text, size_t n, const Counts &counts, const Arrays &arrays, Grammar *g,
                       ErrorSink err);

// The checks compile_grammar runs once the names are resolved (analysis.cpp).
Status check_grammar(const char *text, const Arrays &arrays, const Grammar &g, ErrorSink err);

// The rule's name for messages ("root", or the named rule an auxiliary one belongs to).
void rule_name(const char *text, const Arrays &arrays, uint32_t rule, const char **name, uint32_t *length);

// ---- matching (matcher.cpp) ----

// Lays out the matcher's buffers (after the grammar's arrays: one layout for counting and placing).
void plan_matcher(ArenaPlanner &planner, MatcherBuffers *buffers);

// Forgets what was accepted: the stacks of the root rule's start.
Status reset(Grammar &g, ErrorSink err);

// Accepts bytes (all or nothing): MOTE_ERR_GRAMMAR when they cannot continue the grammar.
Status accept_bytes(Grammar &g, const char *bytes, size_t n, ErrorSink err);

// Whether bytes could continue the grammar from its current state (nothing changes).
bool bytes_allowed(Grammar &g, const char *bytes, size_t n);

// True when the text accepted so far is a whole sentence of the grammar.
bool is_complete(const Grammar &g);
// True when some byte could still follow.
bool can_continue(const Grammar &g);

// Checks byte strings (a vocabulary's tokens) against g's state without changing it. A string
// shares the matcher work of its common prefix with the string checked before (so a vocabulary
// in byte order costs about its trie, not its bytes), and every check counts its matcher steps
// (stack words moved) against one budget. g must not change while a checker is in use, and one
// checker at a time uses g's prefix buffer.
enum class Check { kAllowed, kRefused, kTooDeep, kOverBudget };  // kTooDeep: past kStackWords or kMaxExpansions
class TokenChecker {
 public:
  TokenChecker(Grammar &g, uint64_t max_steps);
  Check check(const char *bytes, size_t n);
  uint64_t steps() const { return steps_; }

 private:
  static constexpr uint32_t kMaxPrefix = 48;  // bytes of the string before whose states are kept
  struct Prefix {
    uint32_t *words;  // the stack set after the prefix (g.current, prefix_words or the set before)
    uint32_t n_words;
    PartialUtf8 partial;
    uint32_t words_end;  // prefix_words in use up to this prefix
  };
  Check refuse(uint32_t length, Check why);

  Grammar &g_;
  uint64_t steps_ = 0, max_steps_;
  char last_[kMaxPrefix] = {};       // the first bytes of the string checked before
  Prefix prefixes_[kMaxPrefix + 1];  // the states after last_'s first i bytes, i < n_prefixes_
  uint32_t n_prefixes_ = 1, n_last_ = 0;
  uint32_t refused_length_ = 0;  // last_'s first refused_length_ bytes cannot continue g (0: none)
  Check refused_why_ = Check::kRefused;
};

// Marks in allowed[0..256) the bytes that may start the next token: bytes of valid UTF-8 only (a
// superset: a lead or continuation byte is allowed when some class holds a code point it can
// become). Uses g's work list as scratch.
void first_bytes(const Grammar &g, bool allowed[256]);

}  // namespace mote::grammar

// The matcher: a set of stacks of element positions (llama.cpp's grammar stacks), each top a
// character class, advanced one code point at a time. Bytes arrive in UTF-8 (invalid UTF-8 is
// refused at its first byte); a token may end inside a character, which is kept as a partial
// code point until the next token completes it. Every set lives in a fixed buffer of
// kStackWords words, found again through a hash of its stacks, and every expansion is counted:
// a grammar that needs more is refused (a candidate token) or reported (accepting bytes).
// TokenChecker checks many tokens, sharing the sets of common prefixes, within a budget.
#include <cstring>

#include "grammar/grammar.hpp"

namespace mote::grammar {
namespace {

bool ends_alternative(Op op) { return op == Op::kAlt || op == Op::kEnd; }

// The element after the class that starts at position.
uint32_t class_end(const Element *e, uint32_t position) {
  ++position;
  while (e[position].op == Op::kCharAlt || e[position].op == Op::kRangeUpper) ++position;
  return position;
}

// Whether the class at position holds some code point of [low, high]. Negated classes answer
// "yes" unless one of their ranges covers all of [low, high] (a superset, as llama.cpp's).
bool class_meets(const Element *e, uint32_t position, uint32_t low, uint32_t high) {
  const Op start = e[position].op;
  if (start == Op::kCharAny) return true;
  const uint32_t end = class_end(e, position);
  for (uint32_t i = position; i < end; ++i) {
    if (e[i].op == Op::kRangeUpper) continue;
    const uint32_t first = e[i].value;
    const uint32_t last = e[i + 1].op == Op::kRangeUpper ? e[i + 1].value : first;
    if (start == Op::kCharNot) {
      if (first <= low && last >= high) return false;
    } else if (first <= high && last >= low) {
      return true;
    }
  }
  return start == Op::kCharNot;
}

// Advances stack sets; counts its work (stack words moved) against max_steps and stops, as
// overflowed, past it or past the bounds of a set.
class Stepper {
 public:
  explicit Stepper(Grammar &g, uint64_t max_steps = UINT64_MAX) : g_(g), e_(g.elements), max_steps_(max_steps) {}

  bool overflowed() const { return overflow_; }
  bool over_budget() const { return steps_ > max_steps_; }
  uint64_t steps() const { return steps_; }

  // Empties out and forgets the stacks of the set written before.
  void begin(StackSet &out) {
    out.n_words = 0;
    if (g_.seen_stamp == 0 || g_.seen_stamp == UINT32_MAX) {  // the first set, or the stamps wrap
      for (uint32_t i = 0; i < 2 * kSeenSlots; ++i) g_.buffers.seen[i] = 0;
      g_.seen_stamp = 0;
    }
    ++g_.seen_stamp;  // no slot holds it: each looks empty
  }

  // Adds to out the stacks base[0..depth) + extra (when not kNone), with every rule reference
  // on top expanded into its alternatives until each top is a class (or the stack is empty).
  void expand(const uint32_t *base, uint32_t depth, uint32_t extra, StackSet &out) {
    uint32_t *work = g_.work;
    uint32_t n = 0;  // the work list: entries [positions..., depth], the last one on top
    if (!push(work, n, base, depth, extra, kNone)) return;
    while (n > 0 && !overflow_) {
      const uint32_t entry_depth = work[n - 1];
      const uint32_t entry = n - 1 - entry_depth;
      const uint32_t *stack = work + entry;
      if (entry_depth == 0 || e_[stack[entry_depth - 1]].op != Op::kRuleRef) {
        add(out, stack, entry_depth);
        n = entry;
        continue;
      }
      if (++expansions_ > kMaxExpansions) {
        overflow_ = true;
        return;
      }
      // Replace the reference with each alternative of its rule (after its continuation).
      const uint32_t top = stack[entry_depth - 1];
      const uint32_t continuation = ends_alternative(e_[top + 1].op) ? kNone : top + 1;
      const uint32_t entries_end = n;
      for (uint32_t a = g_.rule_start[e_[top].value];; ++a) {
        const uint32_t first = ends_alternative(e_[a].op) ? kNone : a;
        if (!push(work, n, work + entry, entry_depth - 1, continuation, first)) return;
        while (!ends_alternative(e_[a].op)) ++a;
        if (e_[a].op == Op::kEnd) break;
      }
      std::memmove(work + entry, work + entries_end, (n - entries_end) * sizeof(uint32_t));
      n -= entries_end - entry;
    }
  }

  // out = the stacks of in that accept code point cp, advanced past it.
  void advance(const StackSet &in, uint32_t cp, StackSet &out) {
    begin(out);
    expansions_ = 0;  // the bound is per code point
    for (uint32_t i = 0; i < in.n_words && !overflow_; i += in.words[i] + 1) {
      const uint32_t depth = in.words[i];
      if (depth == 0) continue;
      const uint32_t top = in.words[i + depth];
      const uint32_t next = class_end(e_, top);
      if (!spend(next - top) || !class_meets(e_, top, cp, cp)) continue;  // a class may be long
      expand(in.words + i + 1, depth - 1, ends_alternative(e_[next].op) ? kNone : next, out);
    }
  }

  static constexpr uint32_t kNone = UINT32_MAX;

 private:
  bool spend(uint32_t words) {
    steps_ += words;
    if (steps_ > max_steps_) overflow_ = true;
    return !overflow_;
  }

  bool push(uint32_t *work, uint32_t &n, const uint32_t *base, uint32_t depth, uint32_t extra1, uint32_t extra2) {
    const uint32_t size = depth + (extra1 != kNone) + (extra2 != kNone) + 1;
    if (!spend(size)) return false;
    if (n + size > kStackWords) {
      overflow_ = true;
      return false;
    }
    if (depth > 0) std::memmove(work + n, base, depth * sizeof(uint32_t));  // base may be null when empty
    uint32_t d = depth;
    if (extra1 != kNone) work[n + d++] = extra1;
    if (extra2 != kNone) work[n + d++] = extra2;
    work[n + d] = d;
    n += size;
    return true;
  }

  // Appends stack to out unless out holds it already: a hash of out's stacks finds a copy in
  // constant time (a linear search made a set of s stacks cost s^2).
  void add(StackSet &out, const uint32_t *stack, uint32_t depth) {
    if (!spend(depth + 1)) return;
    uint32_t hash = 2166136261u ^ depth;  // FNV-1a over the positions
    for (uint32_t i = 0; i < depth; ++i) hash = (hash ^ stack[i]) * 16777619u;
    uint32_t *slot = nullptr;
    for (uint32_t probe = hash;; ++probe) {
      slot = g_.buffers.seen + 2 * (probe & (kSeenSlots - 1));
      if (slot[0] != g_.seen_stamp) break;
      const uint32_t *held = out.words + slot[1];
      if (held[0] == depth && std::memcmp(held + 1, stack, depth * sizeof(uint32_t)) == 0) return;
    }
    if (out.n_words + depth + 1 > kStackWords) {  // also keeps the slots at most half in use
      overflow_ = true;
      return;
    }
    slot[0] = g_.seen_stamp;
    slot[1] = out.n_words;
    out.words[out.n_words] = depth;
    std::memmove(out.words + out.n_words + 1, stack, depth * sizeof(uint32_t));
    out.n_words += depth + 1;
  }

  Grammar &g_;
  const Element *e_;
  uint64_t max_steps_;
  uint64_t steps_ = 0;
  uint32_t expansions_ = 0;
  bool overflow_ = false;
};

// The code points a character begun as p can still become, as [*low, *high] within the scalar
// values of its length: false when there are none (an overlong form, a surrogate, a code point
// above U+10FFFF). Invalid UTF-8 is no code point, so it never meets a class.
bool reachable(const PartialUtf8 &p, uint32_t *low, uint32_t *high) {
  static constexpr uint32_t kLeast[] = {0, 0, 0x80, 0x800, 0x10000};  // by length: shorter is overlong
  const uint32_t shift = 6 * p.missing;
  uint32_t first = p.value << shift, last = first | ((1u << shift) - 1);
  if (first < kLeast[p.length]) first = kLeast[p.length];
  if (last > 0x10FFFF) last = 0x10FFFF;
  if (first >= 0xD800 && first <= 0xDFFF) first = 0xE000;  // past the surrogates
  if (last >= 0xD800 && last <= 0xDFFF) last = 0xD7FF;
  *low = first;
  *high = last;
  return first <= last;
}

enum class Utf8 { kPending, kComplete, kInvalid };

// Adds byte b to the character p holds (starts one when p misses nothing): kComplete when p.value
// is now a whole code point, kInvalid when no valid character can come of it.
Utf8 add_byte(PartialUtf8 &p, uint8_t b) {
  if (p.missing > 0) {
    if ((b & 0xC0) != 0x80) return Utf8::kInvalid;
    p.value = (p.value << 6) | (b & 0x3F);
    --p.missing;
  } else if (b < 0x80) {
    p = PartialUtf8{b, 0, 1};
  } else {
    const uint32_t missing = (b >> 5) == 6 ? 1 : (b >> 4) == 14 ? 2 : (b >> 3) == 30 ? 3 : 0;
    if (missing == 0) return Utf8::kInvalid;  // a continuation byte or an invalid lead
    p = PartialUtf8{b & (0x3Fu >> missing), missing, missing + 1};
  }
  uint32_t low = 0, high = 0;
  if (!reachable(p, &low, &high)) return Utf8::kInvalid;
  return p.missing > 0 ? Utf8::kPending : Utf8::kComplete;
}

// Whether some stack of set could take a code point the partial character p can become.
bool some_class_meets(const Grammar &g, const StackSet &set, const PartialUtf8 &p) {
  uint32_t low = 0, high = 0;
  if (!reachable(p, &low, &high)) return false;
  for (uint32_t i = 0; i < set.n_words; i += set.words[i] + 1) {
    const uint32_t depth = set.words[i];
    if (depth > 0 && class_meets(g.elements, set.words[i + depth], low, high)) return true;
  }
  return false;
}

enum class Run { kAccepted, kRejected, kOverflow };

// Feeds bytes from g's state; on kAccepted *result is the new set (g.current itself when no
// character completed, else one of g's scratch sets) and *partial the new partial character.
Run run_bytes(Grammar &g, const char *bytes, size_t n, StackSet *result, PartialUtf8 *partial) {
  Stepper stepper(g);
  StackSet from = g.current;
  StackSet sets[2] = {{g.scratch[0], 0}, {g.scratch[1], 0}};
  uint32_t next = 0;
  PartialUtf8 p = g.partial;
  for (size_t i = 0; i < n; ++i) {
    const Utf8 added = add_byte(p, static_cast<uint8_t>(bytes[i]));
    if (added == Utf8::kInvalid) return Run::kRejected;
    if (added == Utf8::kPending) continue;
    stepper.advance(from, p.value, sets[next]);
    if (stepper.overflowed()) return Run::kOverflow;
    if (sets[next].n_words == 0) return Run::kRejected;
    from = sets[next];
    next ^= 1;
  }
  // A character cut by the token's end: some class must hold a code point it can become.
  if (p.missing > 0 && !some_class_meets(g, from, p)) return Run::kRejected;
  *result = from;
  *partial = p;
  return Run::kAccepted;
}

}  // namespace

void plan_matcher(ArenaPlanner &planner, MatcherBuffers *buffers) {
  buffers->seen = planner.take<uint32_t>(2 * kSeenSlots);
  buffers->prefix_words = planner.take<uint32_t>(kPrefixWords);
}

Status reset(Grammar &g, ErrorSink err) {
  Stepper stepper(g);
  stepper.begin(g.current);
  g.partial = PartialUtf8{};
  for (uint32_t a = g.rule_start[g.root];; ++a) {
    stepper.expand(nullptr, 0, ends_alternative(g.elements[a].op) ? Stepper::kNone : a, g.current);
    while (!ends_alternative(g.elements[a].op)) ++a;
    if (g.elements[a].op == Op::kEnd) break;
  }
  if (stepper.overflowed()) {
    g.current.n_words = 0;
    return fail(err, MOTE_ERR_GRAMMAR, "grammar: the root rule expands into more than %u stack words",
                static_cast<unsigned>(kStackWords));
  }
  return MOTE_OK;
}

Status accept_bytes(Grammar &g, const char *bytes, size_t n, ErrorSink err) {
  StackSet result;
  PartialUtf8 partial;
  switch (run_bytes(g, bytes, n, &result, &partial)) {
    case Run::kRejected:
      return fail(err, MOTE_ERR_GRAMMAR, "grammar: the text cannot continue the grammar");
    case Run::kOverflow:
      return fail(err, MOTE_ERR_GRAMMAR,
                  "grammar: matching needs more than %u stack words or %u expansions a character (nesting too "
                  "deep or the grammar too ambiguous)",
                  static_cast<unsigned>(kStackWords), static_cast<unsigned>(kMaxExpansions));
    case Run::kAccepted:
      break;
  }
  if (result.words != g.current.words) std::memcpy(g.current.words, result.words, result.n_words * sizeof(uint32_t));
  g.current.n_words = result.n_words;
  g.partial = partial;
  return MOTE_OK;
}

bool bytes_allowed(Grammar &g, const char *bytes, size_t n) {
  StackSet result;
  PartialUtf8 partial;
  return run_bytes(g, bytes, n, &result, &partial) == Run::kAccepted;
}

bool is_complete(const Grammar &g) {
  if (g.partial.missing > 0) return false;
  for (uint32_t i = 0; i < g.current.n_words; i += g.current.words[i] + 1) {
    if (g.current.words[i] == 0) return true;
  }
  return false;
}

bool can_continue(const Grammar &g) {
  for (uint32_t i = 0; i < g.current.n_words; i += g.current.words[i] + 1) {
    if (g.current.words[i] > 0) return true;
  }
  return false;
}

TokenChecker::TokenChecker(Grammar &g, uint64_t max_steps) : g_(g), max_steps_(max_steps) {
  prefixes_[0] = Prefix{g.current.words, g.current.n_words, g.partial, 0};
}

Check TokenChecker::refuse(uint32_t length, Check why) {
  if (length <= n_last_) {  // every string that starts with these bytes is refused alike
    refused_length_ = length;
    refused_why_ = why;
  }
  return why;
}

Check TokenChecker::check(const char *bytes, size_t n) {
  if (steps_ > max_steps_) return Check::kOverBudget;
  uint32_t common = 0;
  while (common < n && common < n_last_ && bytes[common] == last_[common]) ++common;
  if (refused_length_ > 0 && common >= refused_length_) return refused_why_;
  // Continue from the longest prefix whose state is kept; forget the states past it.
  uint32_t at = common < n_prefixes_ - 1 ? common : n_prefixes_ - 1;
  n_prefixes_ = at + 1;
  n_last_ = n < kMaxPrefix ? static_cast<uint32_t>(n) : kMaxPrefix;
  std::memcpy(last_ + at, bytes + at, n_last_ > at ? n_last_ - at : 0);
  refused_length_ = 0;
  Prefix state = prefixes_[at];
  for (size_t i = at; i < n; ++i) {
    PartialUtf8 p = state.partial;
    const Utf8 added = add_byte(p, static_cast<uint8_t>(bytes[i]));
    if (added == Utf8::kInvalid) return refuse(i + 1, Check::kRefused);
    bool kept = n_prefixes_ == i + 1 && i < kMaxPrefix;
    Prefix next{state.words, state.n_words, p, state.words_end};
    if (added == Utf8::kComplete) {
      // Into the prefix buffer while a whole set still fits there, else a scratch set (not kept:
      // the next set overwrites it).
      kept = kept && state.words_end + kStackWords <= kPrefixWords;
      StackSet out{kept ? g_.buffers.prefix_words + state.words_end : g_.scratch[state.words == g_.scratch[0] ? 1 : 0],
                   0};
      Stepper stepper(g_, max_steps_ - steps_);
      stepper.advance(StackSet{state.words, state.n_words}, p.value, out);
      steps_ += stepper.steps();
      if (stepper.over_budget()) return Check::kOverBudget;
      if (stepper.overflowed()) return refuse(i + 1, Check::kTooDeep);
      if (out.n_words == 0) return refuse(i + 1, Check::kRefused);
      next = Prefix{out.words, out.n_words, p, kept ? state.words_end + out.n_words : state.words_end};
    }
    if (kept) prefixes_[n_prefixes_++] = next;
    state = next;
  }
  if (state.partial.missing > 0 && !some_class_meets(g_, StackSet{state.words, state.n_words}, state.partial)) {
    return Check::kRefused;  // a longer string may complete the character: not a refused prefix
  }
  return Check::kAllowed;
}

void first_bytes(const Grammar &g, bool allowed[256]) {
  // The code points each byte can begin (or continue), then each distinct class on top of a
  // stack once (thousands of stacks may share one long class): g.work is free between steps and
  // has a bit for every element.
  static_assert(kMaxElements <= 32ull * kStackWords, "a bit per element in the work list");
  bool valid[256];
  uint32_t low[256], high[256];
  for (int b = 0; b < 256; ++b) {
    PartialUtf8 p = g.partial;
    valid[b] = add_byte(p, static_cast<uint8_t>(b)) != Utf8::kInvalid && reachable(p, &low[b], &high[b]);
    allowed[b] = false;
  }
  uint32_t *looked_at = g.work;
  std::memset(looked_at, 0, kStackWords * sizeof(uint32_t));
  for (uint32_t i = 0; i < g.current.n_words; i += g.current.words[i] + 1) {
    const uint32_t depth = g.current.words[i];
    if (depth == 0) continue;
    const uint32_t top = g.current.words[i + depth];
    if ((looked_at[top / 32] >> (top % 32) & 1) != 0) continue;
    looked_at[top / 32] |= 1u << (top % 32);
    for (int b = 0; b < 256; ++b) {
      allowed[b] = allowed[b] || (valid[b] && class_meets(g.elements, top, low[b], high[b]));
    }
  }
}

}  // namespace mote::grammar

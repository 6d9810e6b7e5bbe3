// Compile-time checks of a resolved grammar: which rules can match the empty string (nullable)
// and which can complete at all (productive), left recursion (which the matcher's expansion
// could never finish), and a root that can complete. All loops are iterative and budgeted.
#include "grammar/grammar.hpp"

namespace mote::grammar {
namespace {

constexpr uint8_t kNullable = 1, kProductive = 2, kGray = 4, kBlack = 8;

bool starts_class(Op op) { return op == Op::kChar || op == Op::kCharNot || op == Op::kCharAny; }

// The position of the kAlt or kEnd that closes the alternative holding position.
uint32_t alternative_end(const Element *elements, uint32_t position) {
  while (elements[position].op != Op::kAlt && elements[position].op != Op::kEnd) ++position;
  return position;
}

// A negated class is empty when its ranges cover every code point.
bool class_is_empty(const Element *elements, uint32_t position) {
  if (elements[position].op != Op::kCharNot) return false;
  uint32_t covered = 0;  // [0, covered) is excluded so far
  for (bool extended = true; extended && covered <= 0x10FFFF;) {
    extended = false;
    for (uint32_t i = position; i == position || elements[i].op == Op::kCharAlt || elements[i].op == Op::kRangeUpper;
         ++i) {
      if (elements[i].op == Op::kRangeUpper) continue;
      const uint32_t low = elements[i].value;
      const uint32_t high = elements[i + 1].op == Op::kRangeUpper ? elements[i + 1].value : low;
      if (low <= covered && high >= covered) {
        covered = high + 1;
        extended = true;
      }
    }
  }
  return covered > 0x10FFFF;
}

class Analysis {
 public:
  Analysis(const char *text, const Arrays &arrays, const Grammar &g, ErrorSink err)
      : text_(text), arrays_(arrays), g_(g), flags_(arrays.flags), err_(err) {}

  Status run() {
    for (uint32_t r = 0; r < g_.n_rules; ++r) flags_[r] = 0;
    Status status = find_fixed_point();
    if (status == MOTE_OK) status = find_left_recursion();
    if (status != MOTE_OK) return status;
    if ((flags_[g_.root] & kProductive) == 0) {
      return fail(err_, MOTE_ERR_GRAMMAR, "grammar: allows nothing: rule 'root' can never complete");
    }
    return MOTE_OK;
  }

 private:
  bool spend(uint64_t steps) {
    steps_ += steps;
    return steps_ <= kMaxAnalysisSteps;
  }

  Status too_complex() {
    return fail(err_, MOTE_ERR_GRAMMAR, "grammar: too complex to check (over %llu steps)",
                static_cast<unsigned long long>(kMaxAnalysisSteps));
  }

  // The flags one pass over rule r's alternatives gives it.
  uint8_t rule_flags(uint32_t r) {
    const Element *e = g_.elements;
    uint8_t result = 0;
    uint32_t i = g_.rule_start[r];
    while (true) {
      bool nullable = true, productive = true;
      for (; e[i].op != Op::kAlt && e[i].op != Op::kEnd; ++i) {
        if (e[i].op == Op::kRuleRef) {
          nullable = nullable && (flags_[e[i].value] & kNullable) != 0;
          productive = productive && (flags_[e[i].value] & kProductive) != 0;
        } else if (starts_class(e[i].op)) {
          nullable = false;
          productive = productive && !class_is_empty(e, i);
        }
      }
      if (nullable) result |= kNullable | kProductive;
      if (productive) result |= kProductive;
      if (e[i].op == Op::kEnd) return result;
      ++i;
    }
  }

  // Passes alternate between rule order and its reverse, so a chain of rules written in either
  // order settles in one pass.
  Status find_fixed_point() {
    bool forward = true;
    for (bool changed = true; changed; forward = !forward) {
      changed = false;
      if (!spend(g_.n_elements + g_.n_rules)) return too_complex();
      for (uint32_t i = 0; i < g_.n_rules; ++i) {
        const uint32_t r = forward ? i : g_.n_rules - 1 - i;
        const uint8_t updated = flags_[r] | rule_flags(r);
        changed = changed || updated != flags_[r];
        flags_[r] = updated;
      }
    }
    return MOTE_OK;
  }

  Status left_recursive(uint32_t rule) {
    const char *name = nullptr;
    uint32_t length = 0;
    rule_name(text_, arrays_, rule, &name, &length);
    return fail(err_, MOTE_ERR_GRAMMAR, "grammar: rule '%.*s' is left-recursive (it can start with itself)",
                static_cast<int>(length), name);
  }

  // Depth-first search over "rule A can start with rule B" edges (B first in an alternative of
  // A, or after rules that can match nothing), from the root, with an explicit stack.
  Status find_left_recursion() {
    const Element *e = g_.elements;
    uint32_t *stack = arrays_.dfs;  // pairs (rule, position to resume at)
    uint32_t depth = 1;
    stack[0] = g_.root;
    stack[1] = g_.rule_start[g_.root];
    flags_[g_.root] |= kGray;
    while (depth > 0) {
      if (!spend(1)) return too_complex();
      uint32_t &position = stack[2 * depth - 1];
      const Element element = e[position];
      if (element.op == Op::kEnd) {
        flags_[stack[2 * depth - 2]] = (flags_[stack[2 * depth - 2]] & ~kGray) | kBlack;
        --depth;
        continue;
      }
      if (element.op == Op::kAlt) {
        ++position;
        continue;
      }
      if (element.op != Op::kRuleRef) {
        position = alternative_end(e, position);
        continue;
      }
      const uint32_t target = element.value;
      position = (flags_[target] & kNullable) != 0 ? position + 1 : alternative_end(e, position);
      if ((flags_[target] & kGray) != 0) return left_recursive(target);
      if ((flags_[target] & kBlack) != 0) continue;
      flags_[target] |= kGray;
      stack[2 * depth] = target;
      stack[2 * depth + 1] = g_.rule_start[target];
      ++depth;
    }
    return MOTE_OK;
  }

  const char *text_;
  const Arrays &arrays_;
  const Grammar &g_;
  uint8_t *flags_;
  ErrorSink err_;
  uint64_t steps_ = 0;
};

}  // namespace

Status check_grammar(const char *text, const Arrays &arrays, const Grammar &g, ErrorSink err) {
  return Analysis(text, arrays, g, err).run();
}

}  // namespace mote::grammar

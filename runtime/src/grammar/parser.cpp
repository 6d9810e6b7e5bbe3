// The GBNF parser (llama.cpp's grammar format), run twice: once counting, once writing.
//
// Rules are written without a heap: a rule in progress grows at the front of the element array
// while finished rules are moved to its back, so nested groups (parsed in the middle of their
// parent) never interleave with it. The counting pass records the peak of finished plus
// in-progress elements where it places them (a repetition's copies are finished before its item
// is dropped, so the peak can exceed the final count); the writing pass gets an array of that
// peak, refuses to place past it, and moves the finished rules to the front at the end.
#include <cstring>

#include "grammar/grammar.hpp"

namespace mote::grammar {
namespace {

bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

class Parser {
 public:
  // arrays null: the counting pass.
  Parser(const char *text, size_t n, const Arrays *arrays, uint32_t capacity, ErrorSink err)
      : text_(text), n_(n), arrays_(arrays), capacity_(capacity), err_(err) {}

  Status parse() {
    skip_space(true);
    while (status_ == MOTE_OK && pos_ < n_) {
      parse_rule();
      skip_space(true);
    }
    return status_;
  }

  Counts counts() const { return Counts{finished_, peak_, n_rules_, n_named_}; }

 private:
  bool writing() const { return arrays_ != nullptr; }

  unsigned line() const {
    unsigned line = 1;
    for (size_t i = 0; i < pos_ && i < n_; ++i) line += text_[i] == '\n';
    return line;
  }

  Status error(const char *what) {
    if (status_ == MOTE_OK) status_ = fail(err_, MOTE_ERR_GRAMMAR, "grammar line %u: %s", line(), what);
    return status_;
  }

  char peek(size_t ahead = 0) const { return pos_ + ahead < n_ ? text_[pos_ + ahead] : '\0'; }
  bool at_end() const { return pos_ >= n_; }

  void skip_space(bool newline_ok) {
    while (pos_ < n_) {
      const char c = text_[pos_];
      if (c == '#') {
        while (pos_ < n_ && text_[pos_] != '\n') ++pos_;
      } else if (c == ' ' || c == '\t' || (newline_ok && (c == '\r' || c == '\n'))) {
        ++pos_;
      } else {
        break;
      }
    }
  }

  // Whether more elements stay within kMaxElements (checked before a repetition's copies too).
  bool within_bound(uint64_t more) {
    if (static_cast<uint64_t>(front_) + finished_ + more <= kMaxElements) return true;
    if (status_ == MOTE_OK) {
      status_ = fail(err_, MOTE_ERR_GRAMMAR, "grammar line %u: the grammar expands to more than %u elements", line(),
                     static_cast<unsigned>(kMaxElements));
    }
    return false;
  }

  // Whether more elements may be placed now: within the bound and, writing, within the array.
  bool room(uint64_t more) {
    if (!within_bound(more)) return false;
    if (!writing() || static_cast<uint64_t>(front_) + finished_ + more <= capacity_) return true;
    // The two passes disagree (a parser bug): refused, never written past the array.
    if (status_ == MOTE_OK) status_ = fail(err_, MOTE_ERR_GRAMMAR, "grammar line %u: the grammar outgrew its counted size", line());
    return false;
  }

  // Called wherever elements are placed: the peak sizes the writing pass's array.
  void placed(uint32_t n) {
    front_ += n;
    if (front_ + finished_ > peak_) peak_ = front_ + finished_;
  }

  void push(Op op, uint32_t value) {
    if (!room(1)) return;
    if (writing()) arrays_->elements[front_] = Element{op, value};
    placed(1);
  }

  uint32_t new_rule() {
    const uint32_t id = n_rules_++;
    if (writing()) arrays_->rule_owner[id] = current_named_;
    return id;
  }

  // Moves the rule being written ([start, front)) to the back of the array.
  void finish_rule(uint32_t rule, uint32_t start) {
    const uint32_t length = front_ - start;
    finished_ += length;
    if (writing()) {
      const uint32_t to = capacity_ - finished_;
      std::memmove(arrays_->elements + to, arrays_->elements + start, length * sizeof(Element));
      arrays_->rule_start[rule] = to;
    }
    front_ = start;
  }

  void parse_rule() {
    const size_t name_start = pos_;
    while (pos_ < n_ && is_word_char(text_[pos_])) ++pos_;
    if (pos_ == name_start) {
      error("expected a rule name");
      return;
    }
    const uint32_t rule = new_rule();
    current_named_ = rule;
    if (writing()) {
      arrays_->rule_owner[rule] = rule;
      arrays_->symbols[n_named_] = {static_cast<uint32_t>(name_start), static_cast<uint32_t>(pos_ - name_start), rule};
    }
    ++n_named_;
    skip_space(false);
    if (!(peek() == ':' && peek(1) == ':' && peek(2) == '=')) {
      error("expected ::= after the rule name");
      return;
    }
    pos_ += 3;
    skip_space(true);
    parse_alternatives(rule, 0);
    if (status_ != MOTE_OK) return;
    if (peek() == '\r') ++pos_;
    if (peek() == '\n') {
      ++pos_;
    } else if (!at_end()) {
      error("expected a newline or the end after the rule");
    }
  }

  void parse_alternatives(uint32_t rule, uint32_t depth) {
    const uint32_t start = front_;
    parse_sequence(depth);
    while (status_ == MOTE_OK && peek() == '|') {
      push(Op::kAlt, 0);
      ++pos_;
      skip_space(true);
      parse_sequence(depth);
    }
    push(Op::kEnd, 0);
    if (status_ == MOTE_OK) finish_rule(rule, start);
  }

  // One code point of a literal or class, escapes decoded; false (with an error) on bad input.
  bool parse_char(uint32_t *out) {
    if (at_end()) return error("unexpected end of the grammar") == MOTE_OK;
    const auto c = static_cast<unsigned char>(text_[pos_]);
    if (c == '\\') return parse_escape(out);
    uint32_t length = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (length == 0 || pos_ + length > n_) return error("invalid UTF-8 in the grammar") == MOTE_OK;
    uint32_t value = length == 1 ? c : c & (0x7Fu >> length);
    for (uint32_t i = 1; i < length; ++i) {
      const auto next = static_cast<unsigned char>(text_[pos_ + i]);
      if ((next & 0xC0) != 0x80) return error("invalid UTF-8 in the grammar") == MOTE_OK;
      value = (value << 6) | (next & 0x3F);
    }
    pos_ += length;
    *out = value;
    return true;
  }

  bool parse_hex(uint32_t digits, uint32_t *out) {
    uint32_t value = 0;
    for (uint32_t i = 0; i < digits; ++i, ++pos_) {
      const char c = peek();
      const int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (digit < 0) return error("expected a hexadecimal digit in an escape") == MOTE_OK;
      value = value * 16 + static_cast<uint32_t>(digit);
    }
    if (value > 0x10FFFF) return error("an escape beyond U+10FFFF") == MOTE_OK;
    *out = value;
    return true;
  }

  bool parse_escape(uint32_t *out) {
    ++pos_;  // the backslash
    const char c = peek();
    ++pos_;
    switch (c) {
      case 'x': return parse_hex(2, out);
      case 'u': return parse_hex(4, out);
      case 'U': return parse_hex(8, out);
      case 't': *out = '\t'; return true;
      case 'r': *out = '\r'; return true;
      case 'n': *out = '\n'; return true;
      case '\\': case '"': case '[': case ']': case '-': case '^': case '.':
        *out = static_cast<unsigned char>(c);
        return true;
      default:
        return error("unknown escape") == MOTE_OK;
    }
  }

  void parse_literal() {
    ++pos_;  // the opening quote
    while (status_ == MOTE_OK && peek() != '"') {
      uint32_t cp = 0;
      if (at_end() || peek() == '\n') {
        error("unterminated string literal");
        return;
      }
      if (parse_char(&cp)) push(Op::kChar, cp);
    }
    ++pos_;
  }

  void parse_class() {
    ++pos_;  // [
    Op start = Op::kChar;
    if (peek() == '^') {
      start = Op::kCharNot;
      ++pos_;
    }
    const uint32_t class_start = front_;
    while (status_ == MOTE_OK && peek() != ']') {
      uint32_t low = 0, high = 0;
      if (at_end()) {
        error("unterminated character class");
        return;
      }
      if (!parse_char(&low)) return;
      push(front_ == class_start ? start : Op::kCharAlt, low);
      if (peek() == '-' && peek(1) != ']' && pos_ + 1 < n_) {
        ++pos_;
        if (!parse_char(&high)) return;
        if (high < low) {
          error("a character range whose end is below its start");
          return;
        }
        push(Op::kRangeUpper, high);
      }
    }
    if (front_ == class_start) error("an empty character class []");
    ++pos_;
  }

  // {m}, {m,}, {m,n}: false with an error when malformed.
  bool parse_count(uint32_t *out) {
    uint64_t value = 0;
    const size_t start = pos_;
    while (peek() >= '0' && peek() <= '9') {
      value = value * 10 + static_cast<uint64_t>(peek() - '0');
      if (value > kMaxRepeatCount) return error("a repetition count above 1048576") == MOTE_OK;
      ++pos_;
    }
    if (pos_ == start) return error("expected a number in {m,n}") == MOTE_OK;
    *out = static_cast<uint32_t>(value);
    return true;
  }

  // x{min,max} (max UINT32_MAX: unbounded) as llama.cpp expands it: min copies of x, then
  // nested optional rules (x (x (x)?)?)?, or one rule R ::= x R | "" when unbounded.
  void repeat(uint32_t item_start, uint32_t min, uint32_t max) {
    const uint32_t length = front_ - item_start;
    if (length == 0) {
      error("a repetition operator with nothing before it");
      return;
    }
    const bool unbounded = max == UINT32_MAX;
    const uint64_t optional = unbounded ? 1 : max - min;
    const uint64_t copies = min > 0 ? min - 1 : 0;
    if (!within_bound(copies * length + optional * (length + 3) + 1)) return;
    uint32_t previous_rule = 0;
    for (uint64_t i = 0; i < optional && status_ == MOTE_OK; ++i) {
      const uint32_t rule = new_rule();
      const uint32_t body = front_;
      copy_item(item_start, length);
      if (unbounded) push(Op::kRuleRef, rule);
      if (!unbounded && i > 0) push(Op::kRuleRef, previous_rule);
      push(Op::kAlt, 0);
      push(Op::kEnd, 0);
      finish_rule(rule, body);
      previous_rule = rule;
    }
    if (min == 0) front_ = item_start;
    for (uint64_t i = 0; i < copies; ++i) copy_item(item_start, length);
    if (optional > 0) push(Op::kRuleRef, previous_rule);
  }

  void copy_item(uint32_t item_start, uint32_t length) {
    if (!room(length)) return;
    if (writing()) std::memmove(arrays_->elements + front_, arrays_->elements + item_start, length * sizeof(Element));
    placed(length);
  }

  void parse_braces(uint32_t item_start) {
    ++pos_;  // {
    skip_space(false);
    uint32_t min = 0, max = 0;
    if (!parse_count(&min)) return;
    skip_space(false);
    max = min;
    if (peek() == ',') {
      ++pos_;
      skip_space(false);
      max = UINT32_MAX;
      if (peek() != '}' && !parse_count(&max)) return;
      skip_space(false);
    }
    if (peek() != '}') {
      error("expected } after a repetition count");
      return;
    }
    ++pos_;
    if (max < min) {
      error("a repetition {m,n} with n below m");
      return;
    }
    repeat(item_start, min, max);
  }

  void parse_group(uint32_t depth) {
    if (depth + 1 >= kMaxNesting) {
      error("groups nested more than 128 deep");
      return;
    }
    ++pos_;  // (
    const uint32_t rule = new_rule();
    push(Op::kRuleRef, rule);
    skip_space(true);
    parse_alternatives(rule, depth + 1);
    if (status_ != MOTE_OK) return;
    if (peek() != ')') {
      error("expected ) to close a group");
      return;
    }
    ++pos_;
  }

  void parse_sequence(uint32_t depth) {
    const bool nested = depth > 0;
    uint32_t item_start = front_;
    while (status_ == MOTE_OK && !at_end()) {
      const char c = peek();
      if (c == '"') {
        item_start = front_;
        parse_literal();
      } else if (c == '[') {
        item_start = front_;
        parse_class();
      } else if (c == '(') {
        item_start = front_;
        parse_group(depth);
      } else if (c == '.') {
        item_start = front_;
        ++pos_;
        push(Op::kCharAny, 0);
      } else if (is_word_char(c)) {
        item_start = front_;
        push(Op::kNameRef, static_cast<uint32_t>(pos_));
        while (pos_ < n_ && is_word_char(text_[pos_])) ++pos_;
      } else if (c == '*' || c == '+' || c == '?') {
        ++pos_;
        repeat(item_start, c == '+' ? 1 : 0, c == '?' ? 1 : UINT32_MAX);
      } else if (c == '{') {
        parse_braces(item_start);
      } else {
        break;
      }
      skip_space(nested);
    }
  }

  const char *text_;
  size_t n_;
  size_t pos_ = 0;
  const Arrays *arrays_;
  uint32_t capacity_;
  ErrorSink err_;
  Status status_ = MOTE_OK;
  uint32_t front_ = 0;     // elements of rules in progress
  uint32_t finished_ = 0;  // elements of finished rules (at the back)
  uint32_t peak_ = 0;      // front_ + finished_ at their most
  uint32_t n_rules_ = 0, n_named_ = 0;
  uint32_t current_named_ = 0;
};

int compare_names(const char *text, const Symbol &a, const char *name, uint32_t length) {
  const uint32_t common = a.name_length < length ? a.name_length : length;
  const int order = std::memcmp(text + a.name_offset, name, common);
  if (order != 0) return order;
  return a.name_length < length ? -1 : a.name_length > length ? 1 : 0;
}

// Index of the symbol named name in the sorted table, or -1.
int64_t find_symbol(const char *text, const Symbol *symbols, uint32_t n, const char *name, uint32_t length) {
  uint32_t low = 0, high = n;
  while (low < high) {
    const uint32_t mid = low + (high - low) / 2;
    const int order = compare_names(text, symbols[mid], name, length);
    if (order == 0) return mid;
    if (order < 0) low = mid + 1;
    else high = mid;
  }
  return -1;
}

void sort_symbols(const char *text, Symbol *symbols, uint32_t n) {
  // Heap sort: no recursion and no allocation, O(n log n) for a hostile number of rules.
  auto less = [text](const Symbol &a, const Symbol &b) {
    return compare_names(text, a, text + b.name_offset, b.name_length) < 0;
  };
  auto sift_down = [&](uint32_t root, uint32_t end) {
    while (2 * root + 1 < end) {
      uint32_t child = 2 * root + 1;
      if (child + 1 < end && less(symbols[child], symbols[child + 1])) ++child;
      if (!less(symbols[root], symbols[child])) return;
      const Symbol t = symbols[root];
      symbols[root] = symbols[child];
      symbols[child] = t;
      root = child;
    }
  };
  for (uint32_t i = n / 2; i-- > 0;) sift_down(i, n);
  for (uint32_t end = n; end-- > 1;) {
    const Symbol t = symbols[0];
    symbols[0] = symbols[end];
    symbols[end] = t;
    sift_down(0, end);
  }
}

Status resolve_names(const char *text, size_t n, const Counts &counts, const Arrays &arrays, uint32_t *root,
                     ErrorSink err) {
  sort_symbols(text, arrays.symbols, counts.n_named);
  for (uint32_t i = 1; i < counts.n_named; ++i) {
    const Symbol &s = arrays.symbols[i];
    if (compare_names(text, arrays.symbols[i - 1], text + s.name_offset, s.name_length) == 0) {
      return fail(err, MOTE_ERR_GRAMMAR, "grammar: rule '%.*s' is defined twice", static_cast<int>(s.name_length),
                  text + s.name_offset);
    }
  }
  for (uint32_t i = 0; i < counts.n_elements; ++i) {
    Element &e = arrays.elements[i];
    if (e.op != Op::kNameRef) continue;
    uint32_t length = 0;
    while (e.value + length < n && is_word_char(text[e.value + length])) ++length;
    const int64_t found = find_symbol(text, arrays.symbols, counts.n_named, text + e.value, length);
    if (found < 0) {
      return fail(err, MOTE_ERR_GRAMMAR, "grammar: undefined rule '%.*s'", static_cast<int>(length), text + e.value);
    }
    e = Element{Op::kRuleRef, arrays.symbols[found].rule};
  }
  const int64_t found = find_symbol(text, arrays.symbols, counts.n_named, "root", 4);
  if (found < 0) return fail(err, MOTE_ERR_GRAMMAR, "grammar: no 'root' rule");
  *root = arrays.symbols[found].rule;
  return MOTE_OK;
}

}  // namespace

void plan_arrays(ArenaPlanner &planner, const Counts &counts, Arrays *arrays) {
  arrays->n_named = counts.n_named;
  arrays->elements = planner.take<Element>(counts.peak_elements);
  arrays->rule_start = planner.take<uint32_t>(counts.n_rules);
  arrays->rule_owner = planner.take<uint32_t>(counts.n_rules);
  arrays->symbols = planner.take<Symbol>(counts.n_named);
  arrays->flags = planner.take<uint8_t>(counts.n_rules);
  arrays->dfs = planner.take<uint32_t>(2ull * counts.n_rules);
  for (uint32_t *&set : arrays->stack_sets) set = planner.take<uint32_t>(kStackWords);
}

Status count_grammar(const char *text, size_t n, Counts *counts, ErrorSink err) {
  if (n > UINT32_MAX) return fail(err, MOTE_ERR_GRAMMAR, "grammar: the text is over 4 GiB");
  Parser parser(text, n, nullptr, 0, err);
  const Status status = parser.parse();
  if (status != MOTE_OK) return status;
  *counts = parser.counts();
  if (counts->n_named == 0) return fail(err, MOTE_ERR_GRAMMAR, "grammar: no rules (and so no 'root' rule)");
  return MOTE_OK;
}

Status compile_grammar(const char *text, size_t n, const Counts &counts, const Arrays &arrays, Grammar *g,
                       ErrorSink err) {
  Parser parser(text, n, &arrays, counts.peak_elements, err);
  Status status = parser.parse();
  if (status != MOTE_OK) return status;
  if (parser.counts().n_elements != counts.n_elements || parser.counts().n_rules != counts.n_rules) {
    return fail(err, MOTE_ERR_GRAMMAR, "grammar: the writing pass disagrees with the counting pass");
  }
  // The finished rules sit at the back of the array: move them to its front.
  const uint32_t offset = counts.peak_elements - counts.n_elements;
  if (offset > 0) {
    std::memmove(arrays.elements, arrays.elements + offset, counts.n_elements * sizeof(Element));
    for (uint32_t rule = 0; rule < counts.n_rules; ++rule) arrays.rule_start[rule] -= offset;
  }
  g->elements = arrays.elements;
  g->rule_start = arrays.rule_start;
  g->n_elements = counts.n_elements;
  g->n_rules = counts.n_rules;
  status = resolve_names(text, n, counts, arrays, &g->root, err);
  if (status != MOTE_OK) return status;
  status = check_grammar(text, arrays, *g, err);
  if (status != MOTE_OK) return status;
  g->current = StackSet{arrays.stack_sets[0], 0};
  g->scratch[0] = arrays.stack_sets[1];
  g->scratch[1] = arrays.stack_sets[2];
  g->work = arrays.stack_sets[3];
  return reset(*g, err);
}

void rule_name(const char *text, const Arrays &arrays, uint32_t rule, const char **name, uint32_t *length) {
  const uint32_t owner = arrays.rule_owner[rule];
  *name = "?";
  *length = 1;
  // The symbols are sorted by name by now: look the owner up by its rule id.
  for (uint32_t i = 0; i < arrays.n_named; ++i) {
    const Symbol &s = arrays.symbols[i];
    if (s.rule == owner) {
      *name = text + s.name_offset;
      *length = s.name_length;
      return;
    }
  }
}

}  // namespace mote::grammar

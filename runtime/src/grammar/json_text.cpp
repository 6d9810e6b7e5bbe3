// The bounded JSON reader behind the JSON-schema translator (see json_text.hpp).
#include "grammar/json_text.hpp"

#include <cstring>
#include <initializer_list>

namespace mote::grammar {

size_t JsonText::skip_space(size_t pos) const {
  while (pos < n_ && (s_[pos] == ' ' || s_[pos] == '\t' || s_[pos] == '\n' || s_[pos] == '\r')) ++pos;
  return pos;
}

// The end of the UTF-8 character at pos; kNoValue when invalid (a stray continuation byte, an
// overlong form, a surrogate, above U+10FFFF or cut short): JSON text is UTF-8, and the grammar
// would not take such bytes as a literal.
size_t JsonText::utf8_end(size_t pos) const {
  const auto lead = static_cast<uint8_t>(at(pos));
  const uint32_t length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 0;
  if (length == 0 || lead > 0xF4 || lead == 0xC0 || lead == 0xC1) return kNoValue;
  uint32_t value = lead & (0x7Fu >> length);
  for (uint32_t i = 1; i < length; ++i) {
    const auto c = static_cast<uint8_t>(at(pos + i));
    if ((c & 0xC0) != 0x80) return kNoValue;
    value = value << 6 | (c & 0x3Fu);
  }
  const uint32_t minimum = length == 2 ? 0x80 : length == 3 ? 0x800 : 0x10000;
  if (value < minimum || value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) return kNoValue;
  return pos + length;
}

size_t JsonText::string_end(size_t pos) const {
  if (at(pos) != '"') return kNoValue;
  for (++pos; pos < n_; ++pos) {
    const auto c = static_cast<unsigned char>(s_[pos]);
    if (c == '"') return pos + 1;
    if (c < 0x20) return kNoValue;
    if (c >= 0x80) {
      pos = utf8_end(pos);
      if (pos == kNoValue) return kNoValue;
      --pos;
      continue;
    }
    if (c == '\\') {
      ++pos;
      if (pos >= n_ || std::strchr("\"\\/bfnrtu", s_[pos]) == nullptr) return kNoValue;
    }
  }
  return kNoValue;
}

size_t JsonText::scalar_end(size_t pos) const {
  for (const char *word : {"true", "false", "null"}) {
    const size_t length = std::strlen(word);
    if (pos + length <= n_ && std::memcmp(s_ + pos, word, length) == 0) return pos + length;
  }
  const size_t start = pos;
  if (at(pos) == '-') ++pos;
  if (!(at(pos) >= '0' && at(pos) <= '9')) return kNoValue;
  while (pos < n_ && std::strchr("0123456789.eE+-", s_[pos]) != nullptr && s_[pos] != '\0') ++pos;
  return pos > start ? pos : kNoValue;
}

// An iterative parser: a bit per open container (1: object) instead of recursion.
size_t JsonText::validate(size_t pos) const {
  uint64_t objects = 0;
  uint32_t depth = 0;
  bool want_value = true;
  while (true) {
    pos = skip_space(pos);
    if (want_value) {
      const char c = at(pos);
      if (c == '{' || c == '[') {
        if (depth == kMaxJsonDepth) return kNoValue;
        objects = (objects & ~(1ull << depth)) | (c == '{' ? 1ull << depth : 0);
        ++depth;
        pos = skip_space(pos + 1);
        if (at(pos) == (c == '{' ? '}' : ']')) {
          --depth;
          ++pos;
          want_value = false;
          if (depth == 0) return pos;
          continue;
        }
        if (c == '{') {
          pos = string_end(pos);
          if (pos == kNoValue) return kNoValue;
          pos = skip_space(pos);
          if (at(pos++) != ':') return kNoValue;
        }
        continue;
      }
      pos = c == '"' ? string_end(pos) : scalar_end(pos);
      if (pos == kNoValue) return kNoValue;
      if (depth == 0) return pos;
      want_value = false;
      continue;
    }
    const bool object = (objects >> (depth - 1)) & 1;
    const char c = at(pos);
    if (c == (object ? '}' : ']')) {
      ++pos;
      if (--depth == 0) return pos;
      continue;
    }
    if (c != ',') return kNoValue;
    pos = skip_space(pos + 1);
    if (object) {
      pos = string_end(pos);
      if (pos == kNoValue) return kNoValue;
      pos = skip_space(pos);
      if (at(pos++) != ':') return kNoValue;
    }
    want_value = true;
  }
}

size_t JsonText::value_end(size_t pos) const {
  const char c = at(pos);
  if (c == '"') return string_end(pos);
  if (c != '{' && c != '[') return scalar_end(pos);
  uint32_t depth = 0;
  for (; pos < n_; ++pos) {
    const char d = s_[pos];
    if (d == '"') {
      pos = string_end(pos) - 1;
    } else if (d == '{' || d == '[') {
      ++depth;
    } else if ((d == '}' || d == ']') && --depth == 0) {
      return pos + 1;
    }
  }
  return n_;
}

JsonItem JsonText::item_at(size_t pos, bool object) const {
  JsonItem item;
  if (object) {
    item.key = pos;
    pos = skip_space(string_end(pos));
    pos = skip_space(pos + 1);  // the colon
  }
  item.value = pos;
  return item;
}

JsonItem JsonText::first(size_t pos) const {
  const char open = at(pos);
  if (open != '{' && open != '[') return {};
  pos = skip_space(pos + 1);
  if (at(pos) == (open == '{' ? '}' : ']')) return {};
  return item_at(pos, open == '{');
}

JsonItem JsonText::next(JsonItem item) const {
  const size_t pos = skip_space(value_end(item.value));
  if (at(pos) != ',') return {};
  return item_at(skip_space(pos + 1), item.key != kNoValue);
}

size_t JsonText::member(size_t pos, const char *key) const {
  if (at(pos) != '{') return kNoValue;
  for (JsonItem item = first(pos); item.value != kNoValue; item = next(item)) {
    if (string_is(item.key, key)) return item.value;
  }
  return kNoValue;
}

size_t JsonText::count(size_t pos) const {
  size_t n = 0;
  for (JsonItem item = first(pos); item.value != kNoValue; item = next(item)) ++n;
  return n;
}

bool JsonText::same_string(size_t a, size_t b) const {
  if (at(a) != '"' || at(b) != '"') return false;
  for (size_t i = 1;; ++i) {
    const char c = at(a + i);
    if (c != at(b + i) || c == '\0') return false;
    if (c == '"') return true;
    if (c == '\\') {  // the escaped character is compared as it is, never taken for the end
      ++i;
      if (at(a + i) != at(b + i)) return false;
    }
  }
}

bool JsonText::string_is(size_t pos, const char *text, size_t length) const {
  return at(pos) == '"' && pos + length + 2 <= n_ && std::memcmp(s_ + pos + 1, text, length) == 0 &&
         s_[pos + 1 + length] == '"';
}

bool JsonText::string_is(size_t pos, const char *text) const { return string_is(pos, text, std::strlen(text)); }

bool JsonText::read_count(size_t pos, uint64_t limit, uint64_t *out) const {
  uint64_t value = 0;
  size_t i = pos;
  for (; at(i) >= '0' && at(i) <= '9'; ++i) {
    value = value * 10 + static_cast<uint64_t>(at(i) - '0');
    if (value > limit) return false;
  }
  if (i == pos || (at(i) == '.' || at(i) == 'e' || at(i) == 'E')) return false;
  *out = value;
  return true;
}

}  // namespace mote::grammar

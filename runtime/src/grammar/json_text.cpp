// The bounded JSON reader behind the JSON-schema translator (see json_text.hpp).
#include "grammar/json_text.hpp"

#include <cstring>
#include <initializer_list>

namespace mote::grammar {

size_t JsonText::skip_space(size_t pos) const {
  while (pos < n_ && (s_[pos] == ' ' || s_[pos] == '\t' || s_[pos] == '\n' || s_[pos] == '\r')) ++pos;
  return pos;
}

size_t JsonText::string_end(size_t pos) const {
  if (at(pos) != '"') return kNoValue;
  for (++pos; pos < n_; ++pos) {
    const auto c = static_cast<unsigned char>(s_[pos]);
    if (c == '"') return pos + 1;
    if (c < 0x20) return kNoValue;
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

// The i-th item of the container at pos (kNoValue past the end); *key gets an object member's key.
size_t JsonText::next_item(size_t pos, size_t i, bool object, size_t *key) const {
  if (at(pos) != (object ? '{' : '[')) return kNoValue;
  pos = skip_space(pos + 1);
  if (at(pos) == (object ? '}' : ']')) return kNoValue;
  for (size_t index = 0;; ++index) {
    if (object) {
      *key = pos;
      pos = skip_space(string_end(pos));
      pos = skip_space(pos + 1);  // the colon
    }
    if (index == i) return pos;
    pos = skip_space(value_end(pos));
    if (at(pos) != ',') return kNoValue;
    pos = skip_space(pos + 1);
  }
}

size_t JsonText::member(size_t pos, const char *key) const {
  size_t key_pos = 0, value = 0;
  for (size_t i = 0; nth_member(pos, i, &key_pos, &value); ++i) {
    if (string_is(key_pos, key)) return value;
  }
  return kNoValue;
}

bool JsonText::nth_member(size_t pos, size_t i, size_t *key, size_t *value) const {
  *value = next_item(pos, i, true, key);
  return *value != kNoValue;
}

size_t JsonText::nth_element(size_t pos, size_t i) const {
  size_t unused = 0;
  return next_item(pos, i, false, &unused);
}

size_t JsonText::count(size_t pos) const {
  const bool object = at(pos) == '{';
  size_t unused = 0, n = 0;
  while (next_item(pos, n, object, &unused) != kNoValue) ++n;
  return n;
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

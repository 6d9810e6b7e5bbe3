// A bounded, allocation-free reader of JSON text: one validating pass (nesting at most
// kMaxJsonDepth, no recursion), then cursors over the validated text that walk an object's
// members or an array's elements once each. Offsets index the text; kNoValue means absent.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mote::grammar {

constexpr size_t kNoValue = SIZE_MAX;
constexpr uint32_t kMaxJsonDepth = 64;

// One member of an object (key: its opening quote) or element of an array (key: kNoValue).
struct JsonItem {
  size_t key = kNoValue;
  size_t value = kNoValue;  // kNoValue past the last item
};

class JsonText {
 public:
  JsonText(const char *text, size_t n) : s_(text), n_(n) {}

  // The end of the value that starts at pos (after white space), or kNoValue when the text there
  // is not one JSON value (or nests deeper than kMaxJsonDepth).
  size_t validate(size_t pos) const;

  // On validated text:
  size_t skip_space(size_t pos) const;
  size_t value_end(size_t pos) const;  // pos at the value's first byte
  char at(size_t pos) const { return pos < n_ ? s_[pos] : '\0'; }
  const char *data() const { return s_; }
  // The value of member key (raw, unescaped name) of the object at pos; kNoValue when absent
  // or when pos is not an object.
  size_t member(size_t pos, const char *key) const;
  // The first item of the object or array at pos (value kNoValue when empty or not a container),
  // and the one after item: `for (JsonItem i = first(pos); i.value != kNoValue; i = next(i))`.
  JsonItem first(size_t pos) const;
  JsonItem next(JsonItem item) const;
  size_t count(size_t pos) const;  // members or elements
  // Whether the string at pos is "text" exactly (raw bytes between the quotes).
  bool string_is(size_t pos, const char *text, size_t length) const;
  bool string_is(size_t pos, const char *text) const;
  // Whether the strings at a and b (both at their opening quotes) are the same bytes; stops at
  // the first difference.
  bool same_string(size_t a, size_t b) const;
  // A non-negative integer value, at most limit: false otherwise.
  bool read_count(size_t pos, uint64_t limit, uint64_t *out) const;

 private:
  size_t string_end(size_t pos) const;  // pos at the opening quote; kNoValue when malformed
  size_t utf8_end(size_t pos) const;
  size_t scalar_end(size_t pos) const;
  JsonItem item_at(size_t pos, bool object) const;  // pos at a key (object) or value (array)

  const char *s_;
  size_t n_;
};

}  // namespace mote::grammar

// A bounded, allocation-free reader of JSON text: one validating pass (nesting at most
// kMaxJsonDepth, no recursion), then cursors over the validated text that find an object's
// member or an array's element by walking it. Offsets index the text; kNoValue means absent.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mote::grammar {

constexpr size_t kNoValue = SIZE_MAX;
constexpr uint32_t kMaxJsonDepth = 64;

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
  // The i-th member of the object at pos: its key's position (the opening quote) and value's.
  bool nth_member(size_t pos, size_t i, size_t *key, size_t *value) const;
  size_t nth_element(size_t pos, size_t i) const;  // of the array at pos
  size_t count(size_t pos) const;                   // members or elements
  // Whether the string at pos is "text" exactly (raw bytes between the quotes).
  bool string_is(size_t pos, const char *text, size_t length) const;
  bool string_is(size_t pos, const char *text) const;
  // A non-negative integer value, at most limit: false otherwise.
  bool read_count(size_t pos, uint64_t limit, uint64_t *out) const;

 private:
  size_t string_end(size_t pos) const;  // pos at the opening quote; kNoValue when malformed
  size_t scalar_end(size_t pos) const;
  size_t next_item(size_t pos, size_t i, bool object, size_t *key) const;

  const char *s_;
  size_t n_;
};

}  // namespace mote::grammar

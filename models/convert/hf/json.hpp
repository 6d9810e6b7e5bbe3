// A small, strict JSON parser for the converters' inputs (config.json, tokenizer.json, the
// safetensors header): objects, arrays, strings with escapes (\uXXXX and surrogate pairs to
// UTF-8), numbers, true/false/null. Nesting depth and input size are bounded; duplicate object
// keys, lone surrogates, raw control characters and trailing data are errors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace mote::convert {

struct JsonValue {
  enum class Kind { null, boolean, number, string, array, object };
  Kind kind = Kind::null;
  bool boolean = false;
  double number = 0;
  bool integral = false;         // the number was written without fraction or exponent and fits int64
  int64_t integer = 0;           // its value when integral
  std::string text;              // string value
  std::vector<JsonValue> items;  // array
  std::vector<std::pair<std::string, JsonValue>> members;  // object, in file order

  // The member named key of an object, or null (also for non-objects).
  const JsonValue *get(const std::string &key) const;
  bool is_string() const { return kind == Kind::string; }
  bool is_null() const { return kind == Kind::null; }
};

const char *json_kind_name(JsonValue::Kind kind);

struct JsonLimits {
  size_t max_depth = 64;
  size_t max_bytes = size_t{1} << 30;
};

// Parses text[0, n) into *out; on failure false with "<what> at byte N" in *error.
bool parse_json(const char *text, size_t n, JsonValue *out, std::string *error, const JsonLimits &limits = {});

}  // namespace mote::convert

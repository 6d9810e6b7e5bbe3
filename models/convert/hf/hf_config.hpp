// Typed access to a Hugging Face config.json (host side): the importers' shared helper.
#pragma once

#include <cstdint>
#include <string>

#include "hf/json.hpp"
#include "message_text.hpp"

namespace mote::convert {

// Reads config.json keys with their types and ranges; false with a one-line *error.
struct Config {
  const JsonValue &json;
  std::string *error;

  bool wrong(const std::string &key, const JsonValue &v, const char *expected) {
    *error = "config.json '" + key + "' is " + json_kind_name(v.kind) + ", expected " + expected;
    return false;
  }
  bool integer(const std::string &key, bool required, int64_t fallback, int64_t lo, int64_t hi, int64_t *out) {
    const JsonValue *v = json.get(key);
    if (v == nullptr || v->is_null()) {
      if (required) {
        *error = "config.json is missing '" + key + "'";
        return false;
      }
      *out = fallback;
      return true;
    }
    if (v->kind != JsonValue::Kind::number || !v->integral) return wrong(key, *v, "an integer");
    if (v->integer < lo || v->integer > hi) {
      *error = "config.json '" + key + "' is " + std::to_string(v->integer) + ", outside [" + std::to_string(lo) +
               ", " + std::to_string(hi) + "]";
      return false;
    }
    *out = v->integer;
    return true;
  }
  bool real(const std::string &key, double fallback, double *out) {
    const JsonValue *v = json.get(key);
    if (v == nullptr || v->is_null()) {
      *out = fallback;
      return true;
    }
    if (v->kind != JsonValue::Kind::number) return wrong(key, *v, "a number");
    *out = v->number;
    return true;
  }
  bool boolean(const std::string &key, bool fallback, bool *out) {
    const JsonValue *v = json.get(key);
    if (v == nullptr || v->is_null()) {
      *out = fallback;
      return true;
    }
    if (v->kind != JsonValue::Kind::boolean) return wrong(key, *v, "true or false");
    *out = v->boolean;
    return true;
  }
  // A token id, or the first of a list of them (Llama 3 lists several EOS ids); -1 when absent.
  bool token_id(const std::string &key, int64_t *out) {
    const JsonValue *v = json.get(key);
    if (v != nullptr && v->kind == JsonValue::Kind::array) {
      if (v->items.empty()) {
        *out = -1;
        return true;
      }
      v = &v->items[0];
    }
    if (v == nullptr || v->is_null()) {
      *out = -1;
      return true;
    }
    if (v->kind != JsonValue::Kind::number || !v->integral || v->integer < 0 || v->integer >= (1 << 24)) {
      *error = "config.json '" + key + "' is not a token id";
      return false;
    }
    *out = v->integer;
    return true;
  }
};

}  // namespace mote::convert

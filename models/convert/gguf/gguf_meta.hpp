// Typed, range-checked access to a parsed GGUF file's metadata for the importers (host side):
// every failure sets a one-line *error naming the key.
#pragma once

#include <cstdint>
#include <string>

#include "gguf/gguf.hpp"
#include "message_text.hpp"

namespace mote::convert {

// Typed access to metadata, with messages naming the key.
struct Meta {
  const GgufFile &file;
  std::string *error;

  bool missing(const std::string &key) {
    *error = "GGUF is missing the required key '" + key + "'";
    return false;
  }
  bool wrong_type(const std::string &key, const GgufValue &v, const char *expected) {
    *error = "GGUF key '" + key + "' has type " + gguf_type_name(v.type) + ", expected " + expected;
    return false;
  }
  // An integer in [lo, hi]; when absent, fallback (or an error if required).
  bool integer(const std::string &key, bool required, int64_t fallback, int64_t lo, int64_t hi, int64_t *out) {
    const GgufValue *v = file.find(key);
    if (v == nullptr) {
      if (required) return missing(key);
      *out = fallback;
      return true;
    }
    if (!v->is_integer()) return wrong_type(key, *v, "an integer");
    const bool is_unsigned =
        v->type == GgufType::u8 || v->type == GgufType::u16 || v->type == GgufType::u32 || v->type == GgufType::u64;
    if ((is_unsigned && v->u > static_cast<uint64_t>(hi)) || (!is_unsigned && (v->i < lo || v->i > hi)) ||
        (is_unsigned && static_cast<int64_t>(v->u) < lo)) {
      *error = "GGUF key '" + key + "' is " + (is_unsigned ? num(v->u) : std::to_string(v->i)) + ", outside [" +
               std::to_string(lo) + ", " + std::to_string(hi) + "]";
      return false;
    }
    *out = is_unsigned ? static_cast<int64_t>(v->u) : v->i;
    return true;
  }
  bool real(const std::string &key, double fallback, bool required, double *out) {
    const GgufValue *v = file.find(key);
    if (v == nullptr) {
      if (required) return missing(key);
      *out = fallback;
      return true;
    }
    if (v->type == GgufType::f32 || v->type == GgufType::f64)
      *out = v->f;
    else if (v->is_integer())
      *out = v->type == GgufType::u8 || v->type == GgufType::u16 || v->type == GgufType::u32 || v->type == GgufType::u64
                 ? static_cast<double>(v->u)
                 : static_cast<double>(v->i);
    else
      return wrong_type(key, *v, "a number");
    return true;
  }
  bool boolean(const std::string &key, bool fallback, bool *out) {
    const GgufValue *v = file.find(key);
    if (v == nullptr) {
      *out = fallback;
      return true;
    }
    if (v->type != GgufType::boolean) return wrong_type(key, *v, "a bool");
    *out = v->u != 0;
    return true;
  }
  bool string(const std::string &key, bool required, std::string *out) {
    const GgufValue *v = file.find(key);
    if (v == nullptr) {
      if (required) return missing(key);
      out->clear();
      return true;
    }
    if (v->type != GgufType::string) return wrong_type(key, *v, "a string");
    *out = v->s;
    return true;
  }
};

// The file's tokenizer (tokenizer.ggml.*) into m->tokenizer and the special ids into m->config.
bool map_tokenizer(const GgufFile &file, Meta &meta, uint32_t vocab, ModelData *m, std::string *error);

}  // namespace mote::convert

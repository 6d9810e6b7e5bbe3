#include "hf/json.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <unordered_set>

namespace mote::convert {
namespace {

struct Parser {
  const char *s;
  size_t n;
  size_t pos = 0;
  size_t max_depth;
  std::string *error;

  // Control bytes of the input shown as \xNN, so a message stays one line.
  bool fail(const std::string &what) {
    std::string shown;
    for (const char c : what) {
      const auto byte = static_cast<unsigned char>(c);
      if (byte < 0x20 || byte == 0x7F) {
        static const char kHex[] = "0123456789abcdef";
        shown += std::string("\\x") + kHex[byte >> 4] + kHex[byte & 15];
      } else {
        shown += c;
      }
    }
    *error = "JSON error at byte " + std::to_string(pos) + ": " + shown;
    return false;
  }
  void skip_space() {
    while (pos < n && (s[pos] == ' ' || s[pos] == '\t' || s[pos] == '\n' || s[pos] == '\r')) ++pos;
  }
  bool literal(const char *word, size_t len) {
    if (n - pos < len || std::string(s + pos, len) != word) return fail("unexpected character");
    pos += len;
    return true;
  }

  bool hex4(uint32_t *out) {
    if (n - pos < 4) return fail("truncated \\u escape");
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = s[pos + k];
      v <<= 4;
      if (c >= '0' && c <= '9')
        v |= static_cast<uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f')
        v |= static_cast<uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        v |= static_cast<uint32_t>(c - 'A' + 10);
      else
        return fail("bad \\u escape");
    }
    pos += 4;
    *out = v;
    return true;
  }

  static void append_utf8(uint32_t cp, std::string *out) {
    if (cp < 0x80) {
      out->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  bool string(std::string *out) {
    ++pos;  // the opening quote
    out->clear();
    while (true) {
      if (pos >= n) return fail("unterminated string");
      const unsigned char c = static_cast<unsigned char>(s[pos]);
      if (c == '"') {
        ++pos;
        return true;
      }
      if (c < 0x20) return fail("raw control character in a string");
      if (c != '\\') {
        // Copy a run of plain bytes at once (UTF-8 is passed through as is).
        size_t end = pos + 1;
        while (end < n && s[end] != '"' && s[end] != '\\' && static_cast<unsigned char>(s[end]) >= 0x20) ++end;
        out->append(s + pos, end - pos);
        pos = end;
        continue;
      }
      if (++pos >= n) return fail("unterminated escape");
      const char e = s[pos++];
      switch (e) {
        case '"':
          out->push_back('"');
          break;
        case '\\':
          out->push_back('\\');
          break;
        case '/':
          out->push_back('/');
          break;
        case 'b':
          out->push_back('\b');
          break;
        case 'f':
          out->push_back('\f');
          break;
        case 'n':
          out->push_back('\n');
          break;
        case 'r':
          out->push_back('\r');
          break;
        case 't':
          out->push_back('\t');
          break;
        case 'u': {
          uint32_t cp = 0;
          if (!hex4(&cp)) return false;
          if (cp >= 0xDC00 && cp <= 0xDFFF) return fail("lone low surrogate in \\u escape");
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            uint32_t low = 0;
            if (n - pos < 2 || s[pos] != '\\' || s[pos + 1] != 'u') return fail("lone high surrogate in \\u escape");
            pos += 2;
            if (!hex4(&low)) return false;
            if (low < 0xDC00 || low > 0xDFFF) return fail("bad surrogate pair in \\u escape");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          append_utf8(cp, out);
          break;
        }
        default:
          return fail(std::string("bad escape '\\") + e + "'");
      }
    }
  }

  bool number(JsonValue *v) {
    const size_t start = pos;
    if (s[pos] == '-') ++pos;
    auto digits = [&] {
      const size_t at = pos;
      while (pos < n && s[pos] >= '0' && s[pos] <= '9') ++pos;
      return pos - at;
    };
    const size_t int_start = pos;
    const size_t int_digits = digits();
    if (int_digits == 0) return fail("bad number");
    if (int_digits > 1 && s[int_start] == '0') return fail("number with a leading zero");
    bool integral = true;
    if (pos < n && s[pos] == '.') {
      ++pos;
      integral = false;
      if (digits() == 0) return fail("bad number");
    }
    if (pos < n && (s[pos] == 'e' || s[pos] == 'E')) {
      ++pos;
      integral = false;
      if (pos < n && (s[pos] == '+' || s[pos] == '-')) ++pos;
      if (digits() == 0) return fail("bad number");
    }
    const std::string token(s + start, pos - start);
    v->kind = JsonValue::Kind::number;
    v->number = std::strtod(token.c_str(), nullptr);
    if (integral) {
      errno = 0;
      const long long i = std::strtoll(token.c_str(), nullptr, 10);
      v->integral = errno == 0;
      v->integer = v->integral ? static_cast<int64_t>(i) : 0;
    }
    return true;
  }

  bool value(JsonValue *v, size_t depth) {
    skip_space();
    if (pos >= n) return fail("unexpected end of input");
    const char c = s[pos];
    if (c == '{' || c == '[') {
      if (depth >= max_depth) return fail("nesting deeper than " + std::to_string(max_depth));
      ++pos;
      const bool object = c == '{';
      v->kind = object ? JsonValue::Kind::object : JsonValue::Kind::array;
      std::unordered_set<std::string> keys;
      skip_space();
      if (pos < n && s[pos] == (object ? '}' : ']')) {
        ++pos;
        return true;
      }
      while (true) {
        skip_space();
        if (object) {
          if (pos >= n || s[pos] != '"') return fail("expected a string key");
          std::string key;
          if (!string(&key)) return false;
          if (!keys.insert(key).second) return fail("duplicate key '" + key.substr(0, 60) + "'");
          skip_space();
          if (pos >= n || s[pos] != ':') return fail("expected ':'");
          ++pos;
          v->members.emplace_back(std::move(key), JsonValue());
          if (!value(&v->members.back().second, depth + 1)) return false;
        } else {
          v->items.emplace_back();
          if (!value(&v->items.back(), depth + 1)) return false;
        }
        skip_space();
        if (pos >= n) return fail(object ? "unterminated object" : "unterminated array");
        if (s[pos] == ',') {
          ++pos;
          continue;
        }
        if (s[pos] == (object ? '}' : ']')) {
          ++pos;
          return true;
        }
        return fail(object ? "expected ',' or '}'" : "expected ',' or ']'");
      }
    }
    if (c == '"') {
      v->kind = JsonValue::Kind::string;
      return string(&v->text);
    }
    if (c == 't') {
      v->kind = JsonValue::Kind::boolean;
      v->boolean = true;
      return literal("true", 4);
    }
    if (c == 'f') {
      v->kind = JsonValue::Kind::boolean;
      return literal("false", 5);
    }
    if (c == 'n') return literal("null", 4);
    if (c == '-' || (c >= '0' && c <= '9')) return number(v);
    return fail("unexpected character");
  }
};

}  // namespace

const JsonValue *JsonValue::get(const std::string &key) const {
  if (kind != Kind::object) return nullptr;
  for (const auto &member : members) {
    if (member.first == key) return &member.second;
  }
  return nullptr;
}

const char *json_kind_name(JsonValue::Kind kind) {
  switch (kind) {
    case JsonValue::Kind::null:
      return "null";
    case JsonValue::Kind::boolean:
      return "a bool";
    case JsonValue::Kind::number:
      return "a number";
    case JsonValue::Kind::string:
      return "a string";
    case JsonValue::Kind::array:
      return "an array";
    case JsonValue::Kind::object:
      return "an object";
  }
  return "?";
}

bool parse_json(const char *text, size_t n, JsonValue *out, std::string *error, const JsonLimits &limits) {
  *out = JsonValue{};
  if (n > limits.max_bytes) {
    *error =
        "JSON text of " + std::to_string(n) + " bytes is larger than the limit of " + std::to_string(limits.max_bytes);
    return false;
  }
  Parser p{text, n, 0, limits.max_depth, error};
  if (!p.value(out, 0)) return false;
  p.skip_space();
  if (p.pos != n) return p.fail("trailing characters after the JSON value");
  return true;
}

}  // namespace mote::convert

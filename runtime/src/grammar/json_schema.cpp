// JSON schema -> GBNF, written straight into the caller's buffer (no heap). Each schema node
// becomes a rule s<N>; the node's sub-schemas get consecutive ids when its own rule is written,
// and their rules follow (so nothing is stored but the recursion, which the schema's validated
// nesting bounds). $ref targets under "definitions"/"$defs" become rules d<index>, each written
// once. Properties keep the schema's order; optional ones may be left out (llama.cpp's
// json-schema-to-grammar does the same). A fixed library of JSON primitives ends the grammar.
#include <cstring>
#include <initializer_list>

#include "core/status.hpp"
#include "grammar/json_text.hpp"
#include "mote/mote.h"

namespace mote::grammar {
namespace {

// The primitives every translated grammar may use; `value` is any JSON value.
constexpr const char kJsonLibrary[] =
    "value ::= object | array | string | number | boolean | null\n"
    "object ::= \"{\" ws ( string ws \":\" ws value ( ws \",\" ws string ws \":\" ws value )* )? ws \"}\"\n"
    "array ::= \"[\" ws ( value ( ws \",\" ws value )* )? ws \"]\"\n"
    "string ::= \"\\\"\" char* \"\\\"\"\n"
    "char ::= [^\"\\\\\\x00-\\x1F] | \"\\\\\" ( [\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4} )\n"
    "number ::= integer ( \".\" [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,3} )?\n"
    "integer ::= \"-\"? ( \"0\" | [1-9] [0-9]{0,15} )\n"
    "boolean ::= \"true\" | \"false\"\n"
    "null ::= \"null\"\n"
    "ws ::= ( \" \" | \"\\n\" [ \\t]{0,16} )?\n";

constexpr uint64_t kMaxCount = 100000;  // minItems, maxItems, minLength, maxLength

// The grammar text; counts on past the capacity so the caller learns the size needed.
struct Output {
  char *buffer;
  size_t capacity;
  size_t n = 0;

  void put(const char *text, size_t length) {
    for (size_t i = 0; i < length; ++i, ++n) {
      if (n < capacity) buffer[n] = text[i];
    }
  }
  void put(const char *text) { put(text, std::strlen(text)); }
  void put_number(uint64_t value) {
    char digits[24];
    size_t length = 0;
    do {
      digits[sizeof digits - 1 - length++] = static_cast<char>('0' + value % 10);
      value /= 10;
    } while (value > 0);
    put(digits + sizeof digits - length, length);
  }
  void put_rule(char prefix, uint64_t id) {
    put(&prefix, 1);
    put_number(id);
  }
  // JSON text as a GBNF string literal matching exactly those bytes.
  void put_literal(const char *text, size_t length) {
    put("\"");
    for (size_t i = 0; i < length; ++i) {
      const char c = text[i];
      if (c == '"' || c == '\\') put("\\", 1);
      if (c == '\n' || c == '\r' || c == '\t') {
        put(c == '\n' ? "\\n" : c == '\r' ? "\\r" : "\\t");
      } else {
        put(&c, 1);
      }
    }
    put("\"");
  }
};

enum class Kind { kAny, kRef, kConst, kEnum, kAlternatives, kObject, kArray, kString, kTypes, kPrimitive };

class Translator {
 public:
  Translator(const JsonText &json, Output &out, ErrorSink err) : json_(json), out_(out), err_(err) {}

  Status run(size_t root) {
    definitions_ = json_.member(root, "$defs");
    if (definitions_ == kNoValue) definitions_ = json_.member(root, "definitions");
    emit_rule("root", 0, root, 0);
    size_t key = 0, value = 0;
    for (size_t i = 0; status_ == MOTE_OK && definitions_ != kNoValue && json_.nth_member(definitions_, i, &key, &value);
         ++i) {
      out_.put_rule('d', i);
      emit_rule(nullptr, 0, value, 1);
    }
    out_.put(kJsonLibrary);
    return status_;
  }

 private:
  Status error(const char *what, size_t pos) {
    if (status_ == MOTE_OK) {
      status_ = fail(err_, MOTE_ERR_GRAMMAR, "JSON schema at byte %llu: %s", static_cast<unsigned long long>(pos), what);
    }
    return status_;
  }

  Kind kind_of(size_t pos) const {
    if (json_.at(pos) != '{') return Kind::kAny;  // `true` and anything else: no constraint
    if (json_.member(pos, "$ref") != kNoValue) return Kind::kRef;
    if (json_.member(pos, "const") != kNoValue) return Kind::kConst;
    if (json_.member(pos, "enum") != kNoValue) return Kind::kEnum;
    if (alternatives(pos) != kNoValue) return Kind::kAlternatives;
    const size_t type = json_.member(pos, "type");
    if (type == kNoValue) {
      if (json_.member(pos, "properties") != kNoValue) return Kind::kObject;
      if (json_.member(pos, "items") != kNoValue) return Kind::kArray;
      return Kind::kAny;
    }
    if (json_.at(type) == '[') return Kind::kTypes;
    if (json_.string_is(type, "object")) return Kind::kObject;
    if (json_.string_is(type, "array")) return Kind::kArray;
    if (json_.string_is(type, "string")) return Kind::kString;
    return Kind::kPrimitive;
  }

  size_t alternatives(size_t pos) const {
    const size_t any_of = json_.member(pos, "anyOf");
    return any_of != kNoValue ? any_of : json_.member(pos, "oneOf");
  }

  // The sub-schemas with rules of their own, in the order their ids are given.
  size_t child(size_t pos, size_t i) const {
    switch (kind_of(pos)) {
      case Kind::kAlternatives: return json_.nth_element(alternatives(pos), i);
      case Kind::kObject: {
        size_t key = 0, value = kNoValue;
        const size_t properties = json_.member(pos, "properties");
        return properties != kNoValue && json_.nth_member(properties, i, &key, &value) ? value : kNoValue;
      }
      case Kind::kArray: return i == 0 ? json_.member(pos, "items") : kNoValue;
      default: return kNoValue;
    }
  }

  // Writes "name ::= body\n" (name null: already written), then the sub-schemas' rules.
  void emit_rule(const char *name, uint64_t id, size_t pos, uint32_t depth) {
    if (depth > kMaxJsonDepth) {
      error("schemas nested too deep", pos);
      return;
    }
    if (name != nullptr) out_.put(name);
    if (name != nullptr && id > 0) out_.put_number(id);
    out_.put(" ::= ");
    const uint64_t first_child = next_id_;
    uint64_t n_children = 0;
    while (child(pos, n_children) != kNoValue) ++n_children;
    next_id_ += n_children;
    emit_body(pos, first_child);
    out_.put("\n");
    for (uint64_t i = 0; i < n_children && status_ == MOTE_OK; ++i) {
      out_.put_rule('s', first_child + i);
      emit_rule(nullptr, 0, child(pos, i), depth + 1);
    }
  }

  void emit_body(size_t pos, uint64_t first_child) {
    switch (kind_of(pos)) {
      case Kind::kAny: out_.put("value"); return;
      case Kind::kRef: emit_ref(json_.member(pos, "$ref")); return;
      case Kind::kConst: emit_literal(json_.member(pos, "const")); return;
      case Kind::kEnum: emit_enum(json_.member(pos, "enum")); return;
      case Kind::kAlternatives:
        for (uint64_t i = 0; child(pos, i) != kNoValue; ++i) {
          if (i > 0) out_.put(" | ");
          out_.put_rule('s', first_child + i);
        }
        return;
      case Kind::kObject: emit_object(pos, first_child); return;
      case Kind::kArray: emit_array(pos, first_child); return;
      case Kind::kString: emit_string(pos); return;
      case Kind::kTypes:
      case Kind::kPrimitive: emit_types(json_.member(pos, "type")); return;
    }
  }

  void emit_literal(size_t value) { out_.put_literal(json_.data() + value, json_.value_end(value) - value); }

  void emit_enum(size_t values) {
    if (json_.at(values) != '[' || json_.count(values) == 0) {
      error("enum must be a non-empty array", values);
      return;
    }
    for (size_t i = 0, value = 0; (value = json_.nth_element(values, i)) != kNoValue; ++i) {
      if (i > 0) out_.put(" | ");
      emit_literal(value);
    }
  }

  void emit_ref(size_t ref) {
    static const char *const kPrefixes[] = {"#/$defs/", "#/definitions/"};
    const char *text = json_.data() + ref + 1;
    const size_t length = json_.value_end(ref) - ref - 2;
    size_t key = 0, value = 0;
    for (const char *prefix : kPrefixes) {
      const size_t prefix_length = std::strlen(prefix);
      if (length < prefix_length || std::memcmp(text, prefix, prefix_length) != 0) continue;
      for (size_t i = 0; definitions_ != kNoValue && json_.nth_member(definitions_, i, &key, &value); ++i) {
        if (json_.string_is(key, text + prefix_length, length - prefix_length)) {
          out_.put_rule('d', i);
          return;
        }
      }
    }
    error("$ref must name an entry of #/definitions or #/$defs", ref);
  }

  // The name of the library rule for a type name; null for an unknown one.
  static const char *primitive(const JsonText &json, size_t type) {
    for (const char *name : {"object", "array", "string", "number", "integer", "boolean", "null"}) {
      if (json.string_is(type, name)) return name;
    }
    return nullptr;
  }

  void emit_types(size_t type) {
    const bool list = json_.at(type) == '[';
    for (size_t i = 0;; ++i) {
      const size_t one = list ? json_.nth_element(type, i) : i == 0 ? type : kNoValue;
      if (one == kNoValue) break;
      const char *name = primitive(json_, one);
      if (name == nullptr) {
        error("unknown type", one);
        return;
      }
      if (i > 0) out_.put(" | ");
      out_.put(name);
    }
  }

  // Reads an optional count keyword; false (with an error) when present and not a count.
  bool read_count(size_t pos, const char *keyword, uint64_t fallback, uint64_t *out) {
    const size_t value = json_.member(pos, keyword);
    *out = fallback;
    if (value == kNoValue || json_.read_count(value, kMaxCount, out)) return true;
    error("minItems, maxItems, minLength and maxLength must be integers from 0 to 100000", value);
    return false;
  }

  // x{min,max} in GBNF (max UINT64_MAX: unbounded).
  void put_repeat(uint64_t min, uint64_t max) {
    out_.put("{");
    out_.put_number(min);
    out_.put(",");
    if (max != UINT64_MAX) out_.put_number(max);
    out_.put("}");
  }

  void emit_string(size_t pos) {
    uint64_t min = 0, max = 0;
    if (!read_count(pos, "minLength", 0, &min) || !read_count(pos, "maxLength", UINT64_MAX, &max)) return;
    if (min == 0 && max == UINT64_MAX) {
      out_.put("string");
      return;
    }
    if (max < min) {
      error("maxLength is below minLength", pos);
      return;
    }
    out_.put("\"\\\"\" char");
    put_repeat(min, max);
    out_.put(" \"\\\"\"");
  }

  void emit_array(size_t pos, uint64_t first_child) {
    uint64_t min = 0, max = 0;
    if (!read_count(pos, "minItems", 0, &min) || !read_count(pos, "maxItems", UINT64_MAX, &max)) return;
    if (max < min) {
      error("maxItems is below minItems", pos);
      return;
    }
    const bool typed = json_.member(pos, "items") != kNoValue;
    char item[24] = "value";
    if (typed) {
      Output name{item, sizeof item - 1};
      name.put_rule('s', first_child);
      item[name.n] = '\0';
    }
    out_.put("\"[\" ws ");
    if (max > 0) {
      if (min == 0) out_.put("( ");
      out_.put(item);
      out_.put(" ( ws \",\" ws ");
      out_.put(item);
      out_.put(" )");
      put_repeat(min > 0 ? min - 1 : 0, max == UINT64_MAX ? max : max - 1);
      if (min == 0) out_.put(" )?");
    }
    out_.put(" ws \"]\"");
  }

  bool is_required(size_t pos, size_t key) const {
    const size_t required = json_.member(pos, "required");
    const size_t key_end = json_.value_end(key);
    for (size_t i = 0, name = 0; required != kNoValue && (name = json_.nth_element(required, i)) != kNoValue; ++i) {
      const size_t name_end = json_.value_end(name);
      if (name_end - name == key_end - key && std::memcmp(json_.data() + name, json_.data() + key, key_end - key) == 0) {
        return true;
      }
    }
    return false;
  }

  void emit_member(size_t key, uint64_t value_rule) {
    emit_literal(key);
    out_.put(" ws \":\" ws ");
    out_.put_rule('s', value_rule);
  }

  // The members after `from` (one already written): required ones always, optional ones maybe.
  void emit_rest(size_t pos, size_t properties, size_t from, uint64_t first_child) {
    size_t key = 0, value = 0;
    for (size_t j = from; json_.nth_member(properties, j, &key, &value); ++j) {
      const bool required = is_required(pos, key);
      out_.put(required ? " ws \",\" ws " : " ( ws \",\" ws ");
      emit_member(key, first_child + j);
      if (!required) out_.put(" )?");
    }
  }

  // "{" then one alternative per property that can come first (every optional one up to and
  // including the first required one; or nothing, when none is required), then "}".
  void emit_object(size_t pos, uint64_t first_child) {
    const size_t properties = json_.member(pos, "properties");
    if (properties == kNoValue || json_.count(properties) == 0) {
      out_.put(properties == kNoValue ? "object" : "\"{\" ws \"}\"");
      return;
    }
    out_.put("\"{\" ws ( ");
    size_t key = 0, value = 0;
    bool any_required = false;
    for (size_t j = 0; !any_required && json_.nth_member(properties, j, &key, &value); ++j) {
      any_required = is_required(pos, key);
      if (j > 0) out_.put(" | ");
      emit_member(key, first_child + j);
      emit_rest(pos, properties, j + 1, first_child);
    }
    out_.put(any_required ? " ) ws \"}\"" : " | ) ws \"}\"");
  }

  const JsonText &json_;
  Output &out_;
  ErrorSink err_;
  Status status_ = MOTE_OK;
  uint64_t next_id_ = 1;
  size_t definitions_ = kNoValue;
};

}  // namespace
}  // namespace mote::grammar

using namespace mote;

extern "C" mote_status mote_grammar_from_json_schema(const char *schema, size_t schema_n, char *out, size_t capacity,
                                                     size_t *written, char *err, size_t err_n) {
  const ErrorSink sink{err, err_n};
  if (written != nullptr) *written = 0;
  if (schema == nullptr && schema_n > 0) return fail(sink, MOTE_ERR_INVALID_ARGUMENT, "schema is null");
  if (out == nullptr && capacity > 0) return fail(sink, MOTE_ERR_INVALID_ARGUMENT, "out is null");
  const grammar::JsonText json(schema, schema_n);
  const size_t root = json.skip_space(0);
  const size_t end = json.validate(root);
  if (end == grammar::kNoValue || json.skip_space(end) != schema_n) {
    return fail(sink, MOTE_ERR_GRAMMAR, "JSON schema: not one JSON value (or nested deeper than %u)",
                static_cast<unsigned>(grammar::kMaxJsonDepth));
  }
  if (json.at(root) != '{' && !(schema_n - root >= 4 && std::memcmp(schema + root, "true", 4) == 0)) {
    return fail(sink, MOTE_ERR_GRAMMAR, "JSON schema: the schema must be an object (or true)");
  }
  grammar::Output output{out, capacity};
  const Status status = grammar::Translator(json, output, sink).run(root);
  if (status != MOTE_OK) return status;
  if (written != nullptr) *written = output.n;
  if (output.n >= capacity) {
    return fail(sink, MOTE_ERR_BUFFER_TOO_SMALL, "the grammar needs %llu bytes and its NUL",
                static_cast<unsigned long long>(output.n));
  }
  out[output.n] = '\0';
  return MOTE_OK;
}

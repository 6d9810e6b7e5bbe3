// JSON schema -> GBNF, written straight into the caller's buffer (no heap). Each schema node
// becomes a rule s<N>; the node's sub-schemas get consecutive ids when its own rule is written,
// and their rules follow (so nothing is stored but the recursion, which the schema's validated
// nesting bounds). $ref targets under "$defs"/"definitions" become rules d<index>, each written
// once. Properties keep the schema's order; optional ones may be left out (llama.cpp's
// json-schema-to-grammar does the same) through a chain of two rules a property, so the grammar
// grows linearly with the properties. A fixed library of JSON primitives ends the grammar, and
// the finished grammar is checked against the compiler's bounds, so a schema is refused here,
// with a JSON-schema message, or its grammar compiles.
//
// Keywords, decided one by one. Refused keywords are those whose meaning the output could
// violate; keywords outside this table are annotations to JSON Schema (validators ignore them).
//   title description $comment examples default $schema $id $anchor $dynamicAnchor
//   $recursiveAnchor $vocabulary deprecated readOnly writeOnly contentEncoding contentMediaType
//   contentSchema ............ annotations: accepted, no effect on the output
//   $defs definitions ........ the targets of $ref (read at the root; elsewhere unused)
//   $ref ..................... honoured for "#/$defs/NAME" and "#/definitions/NAME" only
//   type ..................... honoured: a name or a non-empty list of names
//   properties required ...... honoured: in the schema's order, the required ones always
//   additionalProperties ..... honoured: no property beyond "properties" is ever written (so any
//                              value holds beside "properties"; without it, false is {} and
//                              true any object; a schema there is refused)
//   items minItems maxItems .. honoured (items a schema; an array of schemas, tuples, refused)
//   minLength maxLength ...... honoured (characters; an escape counts as one)
//   enum const ............... honoured; beside type, only the values of that type are kept
//   anyOf .................... honoured
//   oneOf .................... as anyOf: a document two branches allow violates oneOf (llama.cpp
//                              does the same; branches that differ in type or const never do)
//   pattern format minimum maximum exclusiveMinimum exclusiveMaximum multipleOf allOf not if
//   then else patternProperties propertyNames minProperties maxProperties dependentRequired
//   dependentSchemas dependencies uniqueItems contains minContains maxContains prefixItems
//   additionalItems unevaluatedProperties unevaluatedItems $dynamicRef $recursiveRef
//                              refused: "keyword "pattern" is not supported (at /properties/x)"
// A honoured keyword in a schema of a kind that does not honour it (maxLength beside a type
// list, properties beside anyOf) is refused as well.
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <initializer_list>

#include "core/status.hpp"
#include "grammar/json_text.hpp"
#include "grammar/schema_view.hpp"
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

constexpr uint32_t kMaxProperties = 1024;  // an object's properties (each checked against the others)
constexpr uint32_t kNone = UINT32_MAX;

using Kind = SchemaKind;

constexpr uint16_t bit(Kind kind) { return static_cast<uint16_t>(1u << static_cast<unsigned>(kind)); }
constexpr uint16_t kAnnotation = 0xFFFF;  // honoured_in: every kind (it changes nothing)
constexpr uint16_t kRefused = 0;

// What mote does with each keyword it knows (the table above, as data).
struct Keyword {
  const char *name;
  uint16_t honoured_in;  // the kinds of schema that honour it
};
constexpr uint16_t kTyped = bit(Kind::kConst) | bit(Kind::kEnum) | bit(Kind::kObject) | bit(Kind::kArray) |
                            bit(Kind::kString) | bit(Kind::kTypes);
// One line a decision, as in the table above.
// clang-format off
constexpr Keyword kKeywords[] = {
    {"title", kAnnotation}, {"description", kAnnotation}, {"$comment", kAnnotation}, {"examples", kAnnotation},
    {"default", kAnnotation}, {"$schema", kAnnotation}, {"$id", kAnnotation}, {"$anchor", kAnnotation},
    {"$dynamicAnchor", kAnnotation}, {"$recursiveAnchor", kAnnotation}, {"$vocabulary", kAnnotation},
    {"deprecated", kAnnotation}, {"readOnly", kAnnotation}, {"writeOnly", kAnnotation},
    {"contentEncoding", kAnnotation}, {"contentMediaType", kAnnotation}, {"contentSchema", kAnnotation},
    {"$defs", kAnnotation}, {"definitions", kAnnotation},
    {"$ref", bit(Kind::kRef)},
    {"type", kTyped},
    {"const", bit(Kind::kConst)},
    {"enum", bit(Kind::kEnum)},
    {"anyOf", bit(Kind::kAlternatives)}, {"oneOf", bit(Kind::kAlternatives)},
    {"properties", bit(Kind::kObject)}, {"required", bit(Kind::kObject)},
    {"additionalProperties", bit(Kind::kObject)},
    {"items", bit(Kind::kArray)}, {"minItems", bit(Kind::kArray)}, {"maxItems", bit(Kind::kArray)},
    {"minLength", bit(Kind::kString)}, {"maxLength", bit(Kind::kString)},
    {"pattern", kRefused}, {"format", kRefused}, {"minimum", kRefused}, {"maximum", kRefused},
    {"exclusiveMinimum", kRefused}, {"exclusiveMaximum", kRefused}, {"multipleOf", kRefused}, {"allOf", kRefused},
    {"not", kRefused}, {"if", kRefused}, {"then", kRefused}, {"else", kRefused}, {"patternProperties", kRefused},
    {"propertyNames", kRefused}, {"minProperties", kRefused}, {"maxProperties", kRefused},
    {"dependentRequired", kRefused}, {"dependentSchemas", kRefused}, {"dependencies", kRefused},
    {"uniqueItems", kRefused}, {"contains", kRefused}, {"minContains", kRefused}, {"maxContains", kRefused},
    {"prefixItems", kRefused}, {"additionalItems", kRefused}, {"unevaluatedProperties", kRefused},
    {"unevaluatedItems", kRefused}, {"$dynamicRef", kRefused}, {"$recursiveRef", kRefused},
};
// clang-format on

// For "keyword X is not supported in ...".
const char *kind_description(Kind kind) {
  switch (kind) {
    case Kind::kAny:
      return "a schema with no type";
    case Kind::kRef:
      return "a $ref schema";
    case Kind::kConst:
      return "a const schema";
    case Kind::kEnum:
      return "an enum schema";
    case Kind::kAlternatives:
      return "an anyOf/oneOf schema";
    case Kind::kObject:
      return "an object schema";
    case Kind::kArray:
      return "an array schema";
    case Kind::kString:
      return "a string schema";
    case Kind::kTypes:
      return "a schema of this type";
  }
  return "this schema";
}

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

// A rule's name: "root", s<id> (a sub-schema) or d<id> (a definition); an object's chain rules
// add -n<k> / -r<k>.
struct RuleName {
  char prefix;  // 0 for root
  uint64_t id;
};

// One step of the JSON pointer to the schema being translated, for messages.
struct PathStep {
  const char *keyword;
  size_t key = kNoValue;   // a member name (properties, $defs)
  uint32_t index = kNone;  // an element (anyOf, oneOf)
};

class Translator {
 public:
  Translator(const JsonText &json, Output &out, ErrorSink err)
      : json_(json), schema_(json, definitions_), out_(out), err_(err) {}

  Status run(size_t root) {
    read_definitions(root);
    emit_rule(RuleName{0, 0}, root, 0);
    for (uint32_t i = 0; i < definitions_.n && status_ == MOTE_OK; ++i) {
      push(PathStep{definitions_.container(i), definitions_.entries[i].key});
      emit_rule(RuleName{'d', i}, definitions_.entries[i].value, 1);
      pop();
    }
    if (status_ == MOTE_OK && definitions_.n > 0) check_references(root);
    out_.put(kJsonLibrary);
    return status_;
  }

 private:
  // ---- messages ----

  void push(const PathStep &step) {
    if (path_depth_ < kMaxJsonDepth + 2) path_[path_depth_] = step;
    ++path_depth_;
  }
  void pop() { --path_depth_; }

  // The JSON pointer of the current schema ("/properties/name"), names cut at 40 bytes.
  void render_path(char *out, size_t n) const {
    size_t at = 0;
    auto append = [&](const char *text, size_t length) {
      for (size_t i = 0; i < length && at + 4 < n; ++i) out[at++] = text[i];
    };
    for (uint32_t i = 0; i < path_depth_ && i < kMaxJsonDepth + 2; ++i) {
      append("/", 1);
      append(path_[i].keyword, std::strlen(path_[i].keyword));
      if (path_[i].key != kNoValue) {
        const size_t length = json_.value_end(path_[i].key) - path_[i].key - 2;
        append("/", 1);
        append(json_.data() + path_[i].key + 1, length < 40 ? length : 40);
        if (length > 40) append("...", 3);
      } else if (path_[i].index != kNone) {
        char digits[16];
        std::snprintf(digits, sizeof digits, "/%u", static_cast<unsigned>(path_[i].index));
        append(digits, std::strlen(digits));
      }
    }
    if (at == 0) out[at++] = '/';
    out[at] = '\0';
  }

  void error(const char *format, ...)
#if defined(__GNUC__)
      __attribute__((format(printf, 2, 3)))
#endif
  {
    if (status_ != MOTE_OK) return;
    char what[192];
    va_list args;
    va_start(args, format);
    std::vsnprintf(what, sizeof what, format, args);
    va_end(args);
    char path[160];
    render_path(path, sizeof path);
    status_ = fail(err_, MOTE_ERR_GRAMMAR, "JSON schema: %s (at %s)", what, path);
  }

  // A string's text for messages: its bytes between the quotes, at most 40 of them.
  int name_length(size_t string) const {
    const size_t length = json_.value_end(string) - string - 2;
    return static_cast<int>(length < 40 ? length : 40);
  }
  const char *name_text(size_t string) const { return json_.data() + string + 1; }

  // ---- what a schema is ----

  // The schema's kind, once its value and keywords are checked; false (with an error) otherwise.
  bool classify(size_t pos, Kind *kind) {
    *kind = Kind::kAny;
    const char c = json_.at(pos);
    if (c != '{') {
      if (c == 'f') error("the schema false allows no value");
      if (c != 't' && c != 'f') error("a schema must be an object or a boolean");
      return c == 't';
    }
    *kind = schema_.kind_of(pos);
    for (JsonItem item = json_.first(pos); item.value != kNoValue; item = json_.next(item)) {
      const Keyword *keyword = find_keyword(item.key);
      if (keyword == nullptr || (keyword->honoured_in & bit(*kind)) != 0) continue;
      if (keyword->honoured_in == kRefused) {
        error("keyword \"%s\" is not supported", keyword->name);
      } else {
        error("keyword \"%s\" is not supported in %s", keyword->name, kind_description(*kind));
      }
      return false;
    }
    if (*kind == Kind::kAlternatives && json_.member(pos, "anyOf") != kNoValue &&
        json_.member(pos, "oneOf") != kNoValue) {
      error("keyword \"oneOf\" is not supported beside \"anyOf\"");
    }
    return status_ == MOTE_OK && check_shape(pos, *kind);
  }

  const Keyword *find_keyword(size_t key) const {
    for (const Keyword &keyword : kKeywords) {
      if (json_.string_is(key, keyword.name)) return &keyword;
    }
    return nullptr;
  }

  // The containers a kind reads must have the right JSON type.
  bool check_shape(size_t pos, Kind kind) {
    if (kind == Kind::kAlternatives) {
      const size_t list = schema_.alternatives(pos);
      if (json_.at(list) != '[' || json_.count(list) == 0) {
        error("%s must be a non-empty array", json_.member(pos, "anyOf") != kNoValue ? "anyOf" : "oneOf");
      }
    } else if (kind == Kind::kObject) {
      const size_t properties = json_.member(pos, "properties");
      if (properties != kNoValue && json_.at(properties) != '{') error("properties must be an object");
    } else if (kind == Kind::kArray) {
      if (json_.at(json_.member(pos, "items")) == '[') {
        error("keyword \"items\" is not supported as an array of schemas (tuples)");
      }
    } else if (kind == Kind::kRef) {
      if (json_.at(json_.member(pos, "$ref")) != '"') error("$ref must be a string");
    }
    return status_ == MOTE_OK;
  }

  // Calls visit(child, step) for each sub-schema with a rule of its own, in id order.
  template <typename Visit>
  void for_each_child(size_t pos, Kind kind, Visit &&visit) const {
    if (kind == Kind::kAlternatives) {
      const size_t list = schema_.alternatives(pos);
      const char *keyword = json_.member(pos, "anyOf") != kNoValue ? "anyOf" : "oneOf";
      uint32_t index = 0;
      for (JsonItem item = json_.first(list); item.value != kNoValue; item = json_.next(item)) {
        visit(item.value, PathStep{keyword, kNoValue, index++});
      }
    } else if (kind == Kind::kObject) {
      const size_t properties = json_.member(pos, "properties");
      for (JsonItem item = json_.first(properties); item.value != kNoValue; item = json_.next(item)) {
        visit(item.value, PathStep{"properties", item.key});
      }
    } else if (kind == Kind::kArray) {
      const size_t items = json_.member(pos, "items");
      if (items != kNoValue) visit(items, PathStep{"items"});
    }
  }

  // ---- rules ----

  void put_name(RuleName name) {
    if (name.prefix == 0) {
      out_.put("root");
      return;
    }
    out_.put(&name.prefix, 1);
    out_.put_number(name.id);
  }
  void put_chain_name(RuleName object, char link, uint64_t k) {
    put_name(object);
    out_.put(link == 'n' ? "-n" : "-r");
    out_.put_number(k);
  }
  void put_sub_rule(uint64_t id) { put_name(RuleName{'s', id}); }

  // Writes "name ::= body\n" (and an object's chain rules), then the sub-schemas' rules.
  void emit_rule(RuleName name, size_t pos, uint32_t depth) {
    if (depth > kMaxJsonDepth) {
      error("schemas nested too deep");
      return;
    }
    Kind kind = Kind::kAny;
    if (!classify(pos, &kind)) return;
    const uint64_t first_child = next_id_;
    for_each_child(pos, kind, [&](size_t, const PathStep &) { ++next_id_; });
    put_name(name);
    out_.put(" ::= ");
    emit_body(pos, kind, name, first_child);
    uint64_t id = first_child;
    for_each_child(pos, kind, [&](size_t child, const PathStep &step) {
      if (status_ != MOTE_OK) return;
      push(step);
      emit_rule(RuleName{'s', id++}, child, depth + 1);
      pop();
    });
  }

  void emit_body(size_t pos, Kind kind, RuleName name, uint64_t first_child) {
    switch (kind) {
      case Kind::kAny:
        out_.put("value\n");
        return;
      case Kind::kRef:
        emit_ref(json_.member(pos, "$ref"));
        break;
      case Kind::kConst:
        emit_values(pos, "const");
        break;
      case Kind::kEnum:
        emit_values(pos, "enum");
        break;
      case Kind::kAlternatives:
        for (uint64_t i = 0, n = json_.count(schema_.alternatives(pos)); i < n; ++i) {
          if (i > 0) out_.put(" | ");
          put_sub_rule(first_child + i);
        }
        break;
      case Kind::kObject:
        emit_object(pos, name, first_child);
        return;  // writes its own lines
      case Kind::kArray:
        emit_array(pos, first_child);
        break;
      case Kind::kString:
        emit_string(pos);
        break;
      case Kind::kTypes:
        emit_types(json_.member(pos, "type"));
        break;
    }
    out_.put("\n");
  }

  // The library rule for a type name; null for an unknown one.
  const char *primitive(size_t type) const {
    for (const char *name : {"object", "array", "string", "number", "integer", "boolean", "null"}) {
      if (json_.string_is(type, name)) return name;
    }
    return nullptr;
  }

  // Calls visit(library rule) for each name of type (a name or a non-empty list of names).
  template <typename Visit>
  void for_each_type(size_t type, Visit &&visit) {
    if (json_.at(type) == '"') {
      const char *name = primitive(type);
      if (name == nullptr) error("unknown type \"%.*s\"", name_length(type), name_text(type));
      if (name != nullptr) visit(name);
      return;
    }
    if (json_.at(type) != '[' || json_.count(type) == 0) {
      error("type must be a type name or a non-empty list of them");
      return;
    }
    for (JsonItem item = json_.first(type); item.value != kNoValue && status_ == MOTE_OK; item = json_.next(item)) {
      const char *name = json_.at(item.value) == '"' ? primitive(item.value) : nullptr;
      if (name == nullptr) {
        error("unknown type in the list of types");
        return;
      }
      visit(name);
    }
  }

  void emit_types(size_t type) {
    bool first = true;
    for_each_type(type, [&](const char *name) {
      if (!first) out_.put(" | ");
      first = false;
      out_.put(name);
    });
  }

  // Whether the JSON value at pos is an instance of the library type name.
  bool has_type(size_t pos, const char *name) const {
    const char c = json_.at(pos);
    if (std::strcmp(name, "string") == 0) return c == '"';
    if (std::strcmp(name, "object") == 0) return c == '{';
    if (std::strcmp(name, "array") == 0) return c == '[';
    if (std::strcmp(name, "boolean") == 0) return c == 't' || c == 'f';
    if (std::strcmp(name, "null") == 0) return c == 'n';
    const bool number = c == '-' || (c >= '0' && c <= '9');
    if (!number || std::strcmp(name, "number") == 0) return number;
    for (size_t i = pos, end = json_.value_end(pos); i < end; ++i) {  // integer: no fraction or exponent
      if (json_.at(i) == '.' || json_.at(i) == 'e' || json_.at(i) == 'E') return false;
    }
    return true;
  }

  // const or enum: the values as literals, beside type only those of that type.
  void emit_values(size_t pos, const char *keyword) {
    const size_t values = json_.member(pos, keyword);
    const bool is_enum = std::strcmp(keyword, "enum") == 0;
    if (is_enum && (json_.at(values) != '[' || json_.count(values) == 0)) {
      error("enum must be a non-empty array");
      return;
    }
    const size_t type = json_.member(pos, "type");
    bool any = false;
    auto emit_value = [&](size_t value) {
      bool typed = type == kNoValue;
      if (!typed) for_each_type(type, [&](const char *name) { typed = typed || has_type(value, name); });
      if (!typed || status_ != MOTE_OK) return;
      if (any) out_.put(" | ");
      any = true;
      out_.put_literal(json_.data() + value, json_.value_end(value) - value);
    };
    if (!is_enum) emit_value(values);
    for (JsonItem item = json_.first(is_enum ? values : kNoValue); item.value != kNoValue; item = json_.next(item)) {
      emit_value(item.value);
    }
    if (!any) error("no value of %s has the schema's type", keyword);
  }

  // ---- $ref ----

  void read_definitions(size_t root) {
    for (const char *container : {"$defs", "definitions"}) {
      const size_t definitions = json_.member(root, container);
      if (definitions != kNoValue && json_.at(definitions) != '{') {
        error("%s must be an object", container);
        return;
      }
      for (JsonItem item = json_.first(definitions); item.value != kNoValue; item = json_.next(item)) {
        if (definitions_.n == kMaxDefinitions) {
          error("more than %u definitions", static_cast<unsigned>(kMaxDefinitions));
          return;
        }
        definitions_.entries[definitions_.n++] = Definitions::Entry{item.key, item.value};
      }
      if (container[0] == '$') definitions_.n_dollar = definitions_.n;
    }
  }

  void emit_ref(size_t ref) {
    const uint32_t target = schema_.resolve(ref);
    if (target == kNoDefinition) {
      error("$ref must name an entry of #/definitions or #/$defs");
      return;
    }
    put_name(RuleName{'d', target});
  }

  // The grammar would be left-recursive (a $ref loop no byte breaks) or allow nothing (a loop
  // through required properties): both are the schema's, so refused here.
  void check_references(size_t root) {
    const uint32_t loop = find_reference_loop(schema_);
    if (loop != kNoDefinition) {
      push(PathStep{definitions_.container(loop), definitions_.entries[loop].key});
      error("$ref refers to itself before any value starts (a loop of $ref, anyOf and oneOf)");
      return;
    }
    if (!has_finite_document(schema_, root)) {
      error("no finite document satisfies it (a $ref loop through required properties or items)");
    }
  }

  // ---- arrays and strings ----

  // Reads an optional count keyword; false (with an error) when present and not a count.
  bool read_count_or_fail(size_t pos, const char *keyword, uint64_t fallback, uint64_t *out) {
    if (schema_.read_count(pos, keyword, fallback, out)) return true;
    error("minItems, maxItems, minLength and maxLength must be integers from 0 to 100000");
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
    if (!read_count_or_fail(pos, "minLength", 0, &min) || !read_count_or_fail(pos, "maxLength", UINT64_MAX, &max)) {
      return;
    }
    if (min == 0 && max == UINT64_MAX) {
      out_.put("string");
      return;
    }
    if (max < min) {
      error("maxLength is below minLength");
      return;
    }
    out_.put("\"\\\"\" char");
    put_repeat(min, max);
    out_.put(" \"\\\"\"");
  }

  void emit_array(size_t pos, uint64_t first_child) {
    uint64_t min = 0, max = 0;
    if (!read_count_or_fail(pos, "minItems", 0, &min) || !read_count_or_fail(pos, "maxItems", UINT64_MAX, &max)) {
      return;
    }
    if (max < min) {
      error("maxItems is below minItems");
      return;
    }
    const bool typed = json_.member(pos, "items") != kNoValue;
    auto put_item = [&] { typed ? put_sub_rule(first_child) : out_.put("value"); };
    out_.put("\"[\" ws ");
    if (max > 0) {
      if (min == 0) out_.put("( ");
      put_item();
      out_.put(" ( ws \",\" ws ");
      put_item();
      out_.put(" )");
      put_repeat(min > 0 ? min - 1 : 0, max == UINT64_MAX ? max : max - 1);
      if (min == 0) out_.put(" )?");
    }
    out_.put(" ws \"]\"");
  }

  // ---- objects ----

  // FNV-1a of a string's raw bytes.
  uint32_t key_hash(size_t key) const {
    uint32_t hash = 2166136261u;
    for (size_t i = key + 1, end = json_.value_end(key) - 1; i < end; ++i) {
      hash = (hash ^ static_cast<uint8_t>(json_.at(i))) * 16777619u;
    }
    return hash;
  }

  // "required" lists strings that name properties; "properties" names each once. Walking the
  // properties costs their schemas' text, so each walk over them is an outer loop.
  bool check_object(size_t pos, size_t properties) {
    const size_t required = json_.member(pos, "required");
    if (required != kNoValue && json_.at(required) != '[') error("required must be an array of property names");
    if (json_.count(properties) > kMaxProperties) {
      error("an object with more than %u properties", static_cast<unsigned>(kMaxProperties));
    }
    size_t n_names = 0, n_listed = 0;
    for (JsonItem name = json_.first(required); name.value != kNoValue && status_ == MOTE_OK; name = json_.next(name)) {
      if (json_.at(name.value) != '"') error("required must be an array of property names");
      ++n_names;
    }
    // A key whose hash was seen is compared with the keys before it (rarely: the filter has 8
    // bits a property), so the walk stays linear in the schema's text.
    uint8_t seen[kMaxProperties] = {};
    for (JsonItem p = json_.first(properties); p.value != kNoValue && status_ == MOTE_OK; p = json_.next(p)) {
      const uint32_t hash = key_hash(p.key) % (8 * kMaxProperties);
      const bool maybe_seen = (seen[hash / 8] >> (hash % 8) & 1) != 0;
      seen[hash / 8] = static_cast<uint8_t>(seen[hash / 8] | 1u << (hash % 8));
      for (JsonItem q = json_.first(properties); maybe_seen && q.key != p.key; q = json_.next(q)) {
        if (!json_.same_string(p.key, q.key)) continue;
        error("\"properties\" names \"%.*s\" twice", name_length(p.key), name_text(p.key));
        break;
      }
      for (JsonItem name = json_.first(required); name.value != kNoValue; name = json_.next(name)) {
        n_listed += json_.same_string(name.value, p.key);
      }
    }
    for (JsonItem name = json_.first(required); n_listed < n_names && status_ == MOTE_OK; name = json_.next(name)) {
      bool listed = false;  // some name is missing: find it for the message
      for (JsonItem p = json_.first(properties); p.value != kNoValue && !listed; p = json_.next(p)) {
        listed = json_.same_string(p.key, name.value);
      }
      if (!listed) {
        error("\"required\" names \"%.*s\", which is not in \"properties\"", name_length(name.value),
              name_text(name.value));
      }
    }
    return status_ == MOTE_OK;
  }

  // Properties p0..p(n-1) in order, each optional one maybe absent, through two rules each:
  //   name-nk ::= pk name-r(k+1) | name-n(k+1)   (pk or a later one first; no skip if pk is required)
  //   name-rk ::= ( ws "," ws name-nk )?         (the rest; no "?" if a required one is left)
  // so the grammar grows linearly with the properties (one alternative per first property,
  // each followed by all the rest, grew quadratically; the matcher's stacks, not the text, hold
  // the choices).
  void emit_object(size_t pos, RuleName name, uint64_t first_child) {
    const size_t properties = json_.member(pos, "properties");
    if (!check_object(pos, properties)) return;
    if (properties == kNoValue) {
      const size_t additional = json_.member(pos, "additionalProperties");
      const char c = json_.at(additional);
      if (c != 'f' && c != 't' && additional != kNoValue && !(c == '{' && json_.count(additional) == 0)) {
        error("keyword \"additionalProperties\" is not supported as a schema without \"properties\"");
        return;
      }
      out_.put(c == 'f' ? "\"{\" ws \"}\"\n" : "object\n");
      return;
    }
    const size_t required = json_.member(pos, "required");
    uint64_t n = 0, last_required = UINT64_MAX;
    for (JsonItem p = json_.first(properties); p.value != kNoValue; p = json_.next(p), ++n) {
      if (schema_.is_required(required, p.key)) last_required = n;
    }
    if (n == 0) {
      out_.put("\"{\" ws \"}\"\n");
      return;
    }
    const bool any_required = last_required != UINT64_MAX;
    out_.put(any_required ? "\"{\" ws " : "\"{\" ws ( ");
    put_chain_name(name, 'n', 0);
    out_.put(any_required ? " ws \"}\"\n" : " )? ws \"}\"\n");
    uint64_t k = 0;
    for (JsonItem p = json_.first(properties); p.value != kNoValue; p = json_.next(p), ++k) {
      put_chain_name(name, 'n', k);
      out_.put(" ::= ");
      out_.put_literal(json_.data() + p.key, json_.value_end(p.key) - p.key);
      out_.put(" ws \":\" ws ");
      put_sub_rule(first_child + k);
      if (k + 1 == n) {
        out_.put("\n");
        break;
      }
      out_.put(" ");
      put_chain_name(name, 'r', k + 1);
      if (!schema_.is_required(required, p.key)) {
        out_.put(" | ");
        put_chain_name(name, 'n', k + 1);
      }
      out_.put("\n");
      put_chain_name(name, 'r', k + 1);
      out_.put(any_required && k + 1 <= last_required ? " ::= ws \",\" ws " : " ::= ( ws \",\" ws ");
      put_chain_name(name, 'n', k + 1);
      out_.put(any_required && k + 1 <= last_required ? "\n" : " )?\n");
    }
  }

  const JsonText &json_;
  Definitions definitions_;
  SchemaView schema_;
  Output &out_;
  ErrorSink err_;
  Status status_ = MOTE_OK;
  uint64_t next_id_ = 1;
  PathStep path_[kMaxJsonDepth + 2] = {};
  uint32_t path_depth_ = 0;
};

// The translated grammar must pass the compiler's first pass (syntax and size): a refusal there
// is a bound (reported as the schema's, without the line of a text the user never wrote) or a
// bug of this translator (which fuzz_grammar looks for).
Status check_compiles(const char *grammar, size_t n, ErrorSink err) {
  char message[200] = "";
  size_t bytes = 0;
  if (mote_grammar_arena_size(grammar, n, &bytes, message, sizeof message) == MOTE_OK) return MOTE_OK;
  const char *reason = message;
  if (std::strncmp(reason, "grammar line ", 13) == 0 && std::strstr(reason, ": ") != nullptr) {
    reason = std::strstr(reason, ": ") + 2;
  }
  if (std::strstr(reason, "more than") != nullptr) {
    return fail(err, MOTE_ERR_GRAMMAR, "JSON schema: its grammar is too large to compile (%s)", reason);
  }
  return fail(err, MOTE_ERR_GRAMMAR, "JSON schema: its grammar does not compile, a bug of the translator (%s)", reason);
}

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
    return fail(sink, MOTE_ERR_GRAMMAR, "JSON schema: not one JSON value in UTF-8 (or nested deeper than %u)",
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
  return grammar::check_compiles(out, output.n, sink);
}

// JSON schema -> GBNF: each schema's grammar accepts documents the schema allows and rejects
// the ones it does not; malformed schemas get one line.
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "mote/mote.h"
#include "test_support.hpp"

namespace {

std::string translate(const std::string &schema, mote_status *status = nullptr, std::string *error = nullptr) {
  size_t needed = 0;
  char message[256] = "";
  mote_status s =
      mote_grammar_from_json_schema(schema.data(), schema.size(), nullptr, 0, &needed, message, sizeof message);
  if (s == MOTE_ERR_BUFFER_TOO_SMALL) {
    std::vector<char> text(needed + 1);
    s = mote_grammar_from_json_schema(schema.data(), schema.size(), text.data(), text.size(), &needed, message,
                                      sizeof message);
    if (status != nullptr) *status = s;
    if (error != nullptr) *error = message;
    return s == MOTE_OK ? std::string(text.data(), needed) : "";
  }
  if (status != nullptr) *status = s;
  if (error != nullptr) *error = message;
  return "";
}

// The schema's grammar, compiled without a model.
struct SchemaGrammar {
  mote_grammar grammar{};
  void *arena = nullptr;
  std::string text;

  explicit SchemaGrammar(const std::string &schema) : text(translate(schema)) {
    REQUIRE(!text.empty());
    size_t bytes = 0;
    char error[256] = "";
    REQUIRE_MESSAGE(mote_grammar_arena_size(text.data(), text.size(), &bytes, error, sizeof error) == MOTE_OK, error);
    arena = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    REQUIRE_MESSAGE(
        mote_grammar_init(&grammar, nullptr, text.data(), text.size(), arena, bytes, error, sizeof error) == MOTE_OK,
        error << "\n"
              << text);
  }
  ~SchemaGrammar() { std::free(arena); }

  bool accepts(const std::string &document) {
    mote_grammar_reset(&grammar);
    return mote_grammar_accept_bytes(&grammar, document.data(), document.size(), nullptr, 0) == MOTE_OK &&
           (mote_grammar_state(&grammar) & MOTE_GRAMMAR_COMPLETE) != 0;
  }
};

// {"p0":0,"p3":3} for the properties in mask (of the first 32), in order.
std::string document_of(uint32_t mask, int n) {
  std::string document = "{";
  for (int k = 0; k < n; ++k) {
    if (k >= 32 || (mask >> k & 1) == 0) continue;
    if (document.size() > 1) document += ",";
    document += "\"p" + std::to_string(k) + "\":" + std::to_string(k);
  }
  return document + "}";
}

// An object schema of n integer properties p0..p(n-1), those in required_mask required.
std::string object_schema(int n, uint64_t required_mask) {
  std::string properties, required;
  for (int k = 0; k < n; ++k) {
    const std::string name = "\"p" + std::to_string(k) + "\"";
    properties += (k > 0 ? "," : "") + name + ":{\"type\":\"integer\"}";
    if (k < 64 && (required_mask >> k & 1) != 0) required += (required.empty() ? "" : ",") + name;
  }
  return R"({"type":"object","properties":{)" + properties + R"(},"required":[)" + required + "]}";
}

// The error a refused schema gets (and checks it is one line that names JSON schema).
std::string refusal(const std::string &schema) {
  mote_status status = MOTE_OK;
  std::string error;
  translate(schema, &status, &error);
  CHECK_MESSAGE(status == MOTE_ERR_GRAMMAR, schema);
  CHECK_MESSAGE(error.rfind("JSON schema: ", 0) == 0, schema << " -> " << error);
  CHECK(error.find('\n') == std::string::npos);
  CHECK(error.find("grammar line") == std::string::npos);
  return error;
}

void check_documents(const std::string &schema, const std::vector<std::string> &valid,
                     const std::vector<std::string> &invalid) {
  SchemaGrammar g(schema);
  for (const std::string &document : valid) CHECK_MESSAGE(g.accepts(document), document << "\n" << g.text);
  for (const std::string &document : invalid) CHECK_MESSAGE(!g.accepts(document), document << "\n" << g.text);
}

}  // namespace

TEST_CASE("an object with required and optional properties, in schema order") {
  check_documents(
      R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},
          "tags":{"type":"array","items":{"type":"string"}}},"required":["name"]})",
      {R"({"name":"Ada"})", R"({"name":"Ada","age":36})", R"({"name": "Ada", "tags": ["x", "y"]})",
       R"({ "name":"A\"b","age":-3,"tags":[] })", "{\n  \"name\": \"x\",\n  \"age\": 0\n}"},
      {R"({})", R"({"age":36})", R"({"age":36,"name":"Ada"})", R"({"name":"Ada","age":3.5})",
       R"({"name":"Ada","extra":1})", R"({"name":Ada})", R"({"name":"Ada",})", R"({"name":"Ada","age":012})"});
}

TEST_CASE("all-optional objects, nesting, enums, const, null and booleans") {
  check_documents(
      R"({"type":"object","properties":{"a":{"type":"boolean"},"b":{"enum":["red","green",3]},
          "c":{"const":"fixed"},"d":{"type":"null"},
          "e":{"type":"object","properties":{"x":{"type":"number"}},"required":["x"]}}})",
      {R"({})", R"({"a":true})", R"({"b":"green","d":null})", R"({"b":3})", R"({"c":"fixed"})", R"({"e":{"x":1.5e3}})",
       R"({"a":false,"b":"red","c":"fixed","d":null,"e":{"x":-0.25}})"},
      {R"({"a":1})", R"({"b":"blue"})", R"({"c":"other"})", R"({"e":{}})", R"({"d":null,"a":true})"});
}

TEST_CASE("arrays: minItems and maxItems") {
  check_documents(R"({"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":3})",
                  {"[1]", "[1,2]", "[1, 2, 3]"}, {"[]", "[1,2,3,4]", "[1,]", "[\"a\"]"});
  check_documents(R"({"type":"array","maxItems":0})", {"[]", "[ ]"}, {"[1]"});
  check_documents(R"({"type":"array","items":{"type":"boolean"}})", {"[]", "[true,false,true,true]"}, {"[1]"});
}

TEST_CASE("strings with lengths, type lists, anyOf and $ref") {
  check_documents(R"({"type":"string","minLength":2,"maxLength":3})", {R"("ab")", R"("abc")", R"("\n\u00e9")"},
                  {R"("a")", R"("abcd")", "ab"});
  check_documents(R"({"type":["integer","null"]})", {"12", "null"}, {"\"12\"", "true"});
  check_documents(R"({"anyOf":[{"type":"string"},{"type":"object","properties":{"k":{"type":"integer"}}}]})",
                  {R"("s")", R"({"k":1})", R"({})"}, {"1", R"({"k":"1"})"});
  check_documents(R"({"$defs":{"point":{"type":"object","properties":{"x":{"type":"integer"},"y":{"type":"integer"}},
                   "required":["x","y"]}},"type":"array","items":{"$ref":"#/$defs/point"}})",
                  {R"([{"x":1,"y":2}])", "[]"}, {R"([{"x":1}])"});
  check_documents(R"({"definitions":{"node":{"type":"object","properties":{"next":{"$ref":"#/definitions/node"}}}},
                   "$ref":"#/definitions/node"})",
                  {R"({})", R"({"next":{"next":{}}})"}, {R"({"next":1})"});
}

TEST_CASE("the empty schema is any JSON value") {
  check_documents("{}",
                  {"1", "-0.5e-7", "\"x\"", "true", "null", "[1,[2,{}]]", R"({"a": [1, {"b": null}], "c": "\u1234"})"},
                  {"", "tru", "[1,", "{\"a\"}", "01", "'x'", "{\"a\":1,}"});
}

TEST_CASE("malformed or unsupported schemas get one line") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{", "not one JSON value"},
      {"[]", "must be an object"},
      {R"({"type":"object"} x)", "not one JSON value"},
      {R"({"type":"tuple"})", "unknown type"},
      {R"({"enum":[]})", "enum must be a non-empty array"},
      {R"({"$ref":"#/elsewhere/x"})", "$ref must name"},
      {R"({"type":"array","minItems":-1})", "must be integers"},
      {R"({"type":"array","minItems":3,"maxItems":2})", "below minItems"},
      {std::string(100, '[') + std::string(100, ']'), "nested deeper"},
  };
  for (const auto &entry : cases) {  // not a structured binding: CHECK_MESSAGE's lambda captures (C++17)
    const auto &schema = entry.first;
    const auto &expected = entry.second;
    mote_status status = MOTE_OK;
    std::string error;
    translate(schema, &status, &error);
    CHECK_MESSAGE(status == MOTE_ERR_GRAMMAR, schema);
    CHECK_MESSAGE(error.find(expected) != std::string::npos, schema << " -> " << error);
    CHECK(error.find('\n') == std::string::npos);
  }
}

TEST_CASE("the translator writes exactly the bytes it reports") {
  const std::string schema = R"({"type":"object","properties":{"k":{"type":"string"}}})";
  size_t needed = 0;
  CHECK(mote_grammar_from_json_schema(schema.data(), schema.size(), nullptr, 0, &needed, nullptr, 0) ==
        MOTE_ERR_BUFFER_TOO_SMALL);
  std::vector<char> exact(needed + 1, '#');
  size_t written = 0;
  CHECK(mote_grammar_from_json_schema(schema.data(), schema.size(), exact.data(), needed, &written, nullptr, 0) ==
        MOTE_ERR_BUFFER_TOO_SMALL);
  CHECK(mote_grammar_from_json_schema(schema.data(), schema.size(), exact.data(), exact.size(), &written, nullptr, 0) ==
        MOTE_OK);
  CHECK(written == needed);
  CHECK(exact[needed] == '\0');
}

TEST_CASE("optional properties translate in linear size and time") {
  // Issue 34: 300 optional properties took 2 s and 1.8 MB of GBNF (one alternative per property
  // that can come first, each followed by all the rest), then the compiler refused it.
  const auto start = std::chrono::steady_clock::now();
  const std::string g300 = translate(object_schema(300, 0));
  const std::string g600 = translate(object_schema(600, 0));
  REQUIRE(!g300.empty());
  const std::string g1 = translate(object_schema(1, 0));
  const double per_property = static_cast<double>(g600.size() - g300.size()) / 300;
  CHECK_MESSAGE(per_property < 120, per_property << " bytes a property");
  CHECK_MESSAGE(static_cast<double>(g300.size() - g1.size()) / 299 < 120, g300.size());
  SchemaGrammar g(object_schema(300, 0));
  CHECK(g.accepts("{}"));
  CHECK(g.accepts(document_of(1u << 5, 300)));
  CHECK(g.accepts(R"({"p0":0,"p150":1, "p299" : 2})"));
  CHECK(g.accepts(R"({"p299":1})"));
  std::string all = "{";
  for (int k = 0; k < 300; ++k) all += (k > 0 ? ",\"p" : "\"p") + std::to_string(k) + "\":" + std::to_string(k);
  CHECK(g.accepts(all + "}"));
  CHECK(!g.accepts(R"({"p1":1,"p0":0})"));
  CHECK(!g.accepts(R"({"p1":1,"p1":1})"));
  CHECK(!g.accepts(R"({"p1":1,})"));
  CHECK(!g.accepts(R"({,"p1":1})"));
  CHECK(!g.accepts(R"({"p1":1 "p2":2})"));
  CHECK(!g.accepts(R"({"p300":1})"));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK_MESSAGE(seconds < 0.5, seconds << " s");
}

TEST_CASE("every subset of the properties, in order, is accepted exactly when it holds the required ones") {
  // The oracle: a document with the properties of mask is valid iff mask covers required.
  const int n = 7;
  for (const uint32_t required : {0u, 1u, 0x40u, 0x12u, 0x7Fu, 0x2Cu}) {
    SchemaGrammar g(object_schema(n, required));
    for (uint32_t mask = 0; mask < (1u << n); ++mask) {
      const std::string document = document_of(mask, n);
      CHECK_MESSAGE(g.accepts(document) == ((mask & required) == required), document << " required " << required);
    }
    CHECK(!g.accepts(R"({"p1":1,"p0":0})"));
    CHECK(!g.accepts(R"({"p6":1,"p6":1})"));
    CHECK(!g.accepts(R"({"p0":0,})"));
  }
}

TEST_CASE("keywords mote cannot honour are refused, naming the keyword and where it is") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"type":"object","properties":{"name":{"type":"string","pattern":"^a"}}})",
       R"(keyword "pattern" is not supported (at /properties/name))"},
      {R"({"type":"string","format":"date-time"})", R"(keyword "format" is not supported (at /))"},
      {R"({"type":"integer","minimum":0})", R"(keyword "minimum" is not supported (at /))"},
      {R"({"type":"array","items":{"type":"number","multipleOf":2}})", R"("multipleOf" is not supported (at /items))"},
      {R"({"type":"object","patternProperties":{"^x":{}}})", R"("patternProperties" is not supported (at /))"},
      {R"({"anyOf":[{"type":"string"},{"allOf":[{"type":"string"}]}]})", R"("allOf" is not supported (at /anyOf/1))"},
      {R"({"$defs":{"a":{"type":"array","uniqueItems":true}},"$ref":"#/$defs/a"})",
       R"("uniqueItems" is not supported (at /$defs/a))"},
      {R"({"type":"object","properties":{"a":{"not":{}}}})", R"("not" is not supported (at /properties/a))"},
      // Honoured keywords where the schema's kind does not honour them.
      {R"({"anyOf":[{"type":"string"}],"properties":{"a":{}}})", R"("properties" is not supported in)"},
      {R"({"type":["string","null"],"maxLength":3})", R"("maxLength" is not supported in)"},
      {R"({"minLength":3})", R"("minLength" is not supported in)"},
      {R"({"type":"object","required":["a"]})", R"("required" names "a", which is not in "properties")"},
      {R"({"type":"object","properties":{"a":{}},"required":["a","b"]})", R"(names "b", which is not in)"},
      {R"({"type":"object","properties":{"a":{},"a":{}}})", R"("properties" names "a" twice)"},
      {R"({"type":"object","additionalProperties":{"type":"string"}})", R"("additionalProperties" is not supported)"},
      {R"({"type":"array","items":[{"type":"string"}]})", R"("items" is not supported)"},
      {R"({"type":"object","properties":{"a":false}})", "the schema false allows no value (at /properties/a)"},
      {R"({"type":"object","properties":{"a":3}})", "a schema must be an object or a boolean (at /properties/a)"},
      {R"({"type":[]})", "type must be"},
      {R"({"type":"object","properties":[]})", "properties must be an object"},
      {R"({"anyOf":[]})", "anyOf must be a non-empty array"},
      {R"({"type":"string","enum":[1,2]})", "no value of enum has the schema's type"},
  };
  for (const auto &entry : cases) {
    const std::string error = refusal(entry.first);
    CHECK_MESSAGE(error.find(entry.second) != std::string::npos, entry.first << " -> " << error);
  }
}

TEST_CASE("annotations are accepted and change nothing") {
  check_documents(
      R"({"$schema":"https://json-schema.org/draft/2020-12/schema","$id":"urn:x","title":"T","description":"d",
          "$comment":"c","type":"object","examples":[{"a":1}],"default":{},
          "properties":{"a":{"type":"integer","title":"A","default":3,"deprecated":true,"readOnly":true}},
          "additionalProperties":false})",
      {"{}", R"({"a":1})"}, {R"({"a":"x"})", R"({"b":1})"});
  check_documents(R"({"type":"object","additionalProperties":false})", {"{}", "{ }"}, {R"({"a":1})"});
  check_documents(R"({"type":"object","additionalProperties":true})", {"{}", R"({"a":[1]})"}, {"[]"});
}

TEST_CASE("enum and const beside type keep only the values of that type") {
  check_documents(R"({"type":"string","enum":["a",1,"b",null]})", {R"("a")", R"("b")"}, {"1", "null"});
  check_documents(R"({"type":["integer","null"],"enum":[1,2.5,"x",null]})", {"1", "null"}, {"2.5", R"("x")"});
  check_documents(R"({"type":"number","const":2.5})", {"2.5"}, {"2"});
}

TEST_CASE("$ref loops and schemas no finite document satisfies are refused as JSON schema") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"$defs":{"a":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"})", "(at /$defs/a)"},
      {R"({"$defs":{"a":{"anyOf":[{"type":"null"},{"$ref":"#/$defs/b"}]},"b":{"oneOf":[{"$ref":"#/$defs/a"}]}},
          "type":"array","items":{"$ref":"#/$defs/a"}})",
       "refers to itself"},
      {R"({"$defs":{"n":{"type":"object","properties":{"next":{"$ref":"#/$defs/n"}},"required":["next"]}},
          "$ref":"#/$defs/n"})",
       "no finite document"},
  };
  for (const auto &entry : cases) {
    const std::string error = refusal(entry.first);
    CHECK_MESSAGE(error.find(entry.second) != std::string::npos, entry.first << " -> " << error);
  }
  // Recursion through an optional property or an array that may be empty is fine.
  check_documents(R"({"$defs":{"n":{"type":"object","properties":{"next":{"$ref":"#/$defs/n"},"v":{"type":"integer"}},
                   "required":["v"]}},"$ref":"#/$defs/n"})",
                  {R"({"v":1})", R"({"next":{"v":2},"v":1})"}, {"{}", R"({"next":{},"v":1})"});
}

TEST_CASE("a schema whose grammar exceeds the compiler's bounds gets a JSON-schema message") {
  const std::string error = refusal(R"({"type":"string","maxLength":100000})");
  CHECK_MESSAGE(error.find("too large") != std::string::npos, error);
}

TEST_CASE("fuzz_grammar findings: schemas whose grammar the compiler refused") {
  // A property name with a byte that is no UTF-8 became a GBNF literal the compiler refuses
  // ("grammar line 2: ..."): JSON text is UTF-8, so such a schema is not JSON.
  for (const std::string bad : {"\xDE", "\xC0\xA2", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\x80", "\xE2\x82"}) {
    const std::string error = refusal(R"({"type":"object","properties":{")" + bad + R"(":{"enum":[1,"x"]}}})");
    CHECK_MESSAGE(error.find("not one JSON value in UTF-8") != std::string::npos, error);
  }
  check_documents(R"({"type":"object","properties":{"é€😀":{"const":"ü"}}})", {R"({"é€😀":"ü"})", "{}"},
                  {R"({"e":"ü"})"});
}

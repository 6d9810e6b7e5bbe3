// JSON schema -> GBNF: each schema's grammar accepts documents the schema allows and rejects
// the ones it does not; malformed schemas get one line.
#include <cstdlib>
#include <string>
#include <vector>

#include "mote/mote.h"
#include "test_support.hpp"

namespace {

std::string translate(const std::string &schema, mote_status *status = nullptr, std::string *error = nullptr) {
  size_t needed = 0;
  char message[256] = "";
  mote_status s = mote_grammar_from_json_schema(schema.data(), schema.size(), nullptr, 0, &needed, message,
                                                sizeof message);
  if (s == MOTE_ERR_BUFFER_TOO_SMALL) {
    std::vector<char> text(needed + 1);
    s = mote_grammar_from_json_schema(schema.data(), schema.size(), text.data(), text.size(), &needed, message,
                                      sizeof message);
    if (status != nullptr) *status = s;
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
    REQUIRE_MESSAGE(mote_grammar_init(&grammar, nullptr, text.data(), text.size(), arena, bytes, error,
                                      sizeof error) == MOTE_OK,
                    error << "\n" << text);
  }
  ~SchemaGrammar() { std::free(arena); }

  bool accepts(const std::string &document) {
    mote_grammar_reset(&grammar);
    return mote_grammar_accept_bytes(&grammar, document.data(), document.size(), nullptr, 0) == MOTE_OK &&
           (mote_grammar_state(&grammar) & MOTE_GRAMMAR_COMPLETE) != 0;
  }
};

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
      {R"({})", R"({"a":true})", R"({"b":"green","d":null})", R"({"b":3})", R"({"c":"fixed"})",
       R"({"e":{"x":1.5e3}})", R"({"a":false,"b":"red","c":"fixed","d":null,"e":{"x":-0.25}})"},
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
                  {"1", "-0.5e-7", "\"x\"", "true", "null", "[1,[2,{}]]",
                   R"({"a": [1, {"b": null}], "c": "\u1234"})"},
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
  CHECK(mote_grammar_from_json_schema(schema.data(), schema.size(), exact.data(), exact.size(), &written, nullptr,
                                      0) == MOTE_OK);
  CHECK(written == needed);
  CHECK(exact[needed] == '\0');
}

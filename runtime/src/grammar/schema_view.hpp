// What a JSON schema node is, as the translator (json_schema.cpp) and its $ref checks
// (schema_view.cpp) both ask it: the node's kind, its alternatives, its required names, its
// counts, and the $defs / definitions a $ref names. Read straight from the validated JSON text.
#pragma once

#include <cstddef>
#include <cstdint>

#include "grammar/json_text.hpp"

namespace mote::grammar {

// The first of a node's defining keywords decides its kind ($ref, const, enum, anyOf/oneOf,
// then type; properties or items without type: object or array).
enum class SchemaKind : uint8_t { kAny, kRef, kConst, kEnum, kAlternatives, kObject, kArray, kString, kTypes };

constexpr uint32_t kMaxDefinitions = 128;  // entries of $defs and definitions together
constexpr uint32_t kNoDefinition = UINT32_MAX;
constexpr uint64_t kMaxCount = 100000;  // minItems, maxItems, minLength, maxLength

// The root's $defs entries, then its definitions entries (a fixed table: no heap).
struct Definitions {
  struct Entry {
    size_t key;  // the name's opening quote
    size_t value;
  };
  Entry entries[kMaxDefinitions] = {};
  uint32_t n = 0;
  uint32_t n_dollar = 0;  // entries [0, n_dollar) come from $defs
  const char *container(uint32_t i) const { return i < n_dollar ? "$defs" : "definitions"; }
};

class SchemaView {
 public:
  SchemaView(const JsonText &json, const Definitions &definitions) : json_(json), definitions_(definitions) {}

  const JsonText &json() const { return json_; }
  const Definitions &definitions() const { return definitions_; }
  SchemaKind kind_of(size_t pos) const;
  // The anyOf array of the node at pos, else its oneOf array (kNoValue: neither).
  size_t alternatives(size_t pos) const;
  // Whether the array required (kNoValue: none) lists the property named by the string key.
  bool is_required(size_t required, size_t key) const;
  // An optional count keyword (at most kMaxCount): false when present and not a count.
  bool read_count(size_t pos, const char *keyword, uint64_t fallback, uint64_t *out) const;
  // The definition the $ref string at ref names ("#/$defs/NAME", "#/definitions/NAME").
  uint32_t resolve(size_t ref) const;

 private:
  const JsonText &json_;
  const Definitions &definitions_;
};

// A definition that can start with itself through $ref, anyOf and oneOf before any byte of a
// value (its grammar would be left-recursive); kNoDefinition when none can.
uint32_t find_reference_loop(const SchemaView &schema);

// Whether some finite document satisfies the schema at root (a $ref loop through required
// properties or non-empty arrays leaves none: its grammar could never complete).
bool has_finite_document(const SchemaView &schema, size_t root);

}  // namespace mote::grammar

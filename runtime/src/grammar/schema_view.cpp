// SchemaView's questions, and the two checks of $ref graphs that would otherwise reach the GBNF
// compiler as a left-recursive rule or a root that can never complete (see schema_view.hpp).
// Both settle a set of definitions by repeated passes, so they need no storage but a bit each.
#include "grammar/schema_view.hpp"

#include <cstring>

namespace mote::grammar {
namespace {

// A fixed-size set of definition indices.
struct DefinitionSet {
  uint8_t bits[kMaxDefinitions / 8] = {};
  bool has(uint32_t i) const { return i != kNoDefinition && (bits[i / 8] >> (i % 8) & 1) != 0; }
  void add(uint32_t i) { bits[i / 8] = static_cast<uint8_t>(bits[i / 8] | 1u << (i % 8)); }
};

// Adds to set every definition holds(value, set) is true of, until none changes (passes
// alternate direction, so a chain written in either order settles in one).
template <typename Holds>
void settle(const Definitions &definitions, DefinitionSet &set, Holds &&holds) {
  bool forward = true;
  for (bool changed = true; changed; forward = !forward) {
    changed = false;
    for (uint32_t j = 0; j < definitions.n; ++j) {
      const uint32_t i = forward ? j : definitions.n - 1 - j;
      if (!set.has(i) && holds(definitions.entries[i].value, set)) {
        set.add(i);
        changed = true;
      }
    }
  }
}

// Whether every $ref the schema at pos can start with (through $ref, anyOf and oneOf) names a
// definition in grounded.
bool starts_grounded(const SchemaView &schema, size_t pos, const DefinitionSet &grounded) {
  const JsonText &json = schema.json();
  const SchemaKind kind = schema.kind_of(pos);
  if (kind == SchemaKind::kRef) return grounded.has(schema.resolve(json.member(pos, "$ref")));
  if (kind != SchemaKind::kAlternatives) return true;  // every other kind starts with a byte
  for (JsonItem item = json.first(schema.alternatives(pos)); item.value != kNoValue; item = json.next(item)) {
    if (!starts_grounded(schema, item.value, grounded)) return false;
  }
  return true;
}

// Whether the schema at pos has a finite document when the definitions in finite do.
bool finite(const SchemaView &schema, size_t pos, const DefinitionSet &finite_set) {
  const JsonText &json = schema.json();
  switch (schema.kind_of(pos)) {
    case SchemaKind::kRef:
      return finite_set.has(schema.resolve(json.member(pos, "$ref")));
    case SchemaKind::kAlternatives:
      for (JsonItem item = json.first(schema.alternatives(pos)); item.value != kNoValue; item = json.next(item)) {
        if (finite(schema, item.value, finite_set)) return true;
      }
      return false;
    case SchemaKind::kObject: {
      const size_t required = json.member(pos, "required");
      for (JsonItem item = json.first(json.member(pos, "properties")); item.value != kNoValue; item = json.next(item)) {
        if (schema.is_required(required, item.key) && !finite(schema, item.value, finite_set)) return false;
      }
      return true;
    }
    case SchemaKind::kArray: {
      uint64_t min = 0;
      const size_t items = json.member(pos, "items");
      return items == kNoValue || !schema.read_count(pos, "minItems", 0, &min) || min == 0 ||
             finite(schema, items, finite_set);
    }
    default:
      return true;
  }
}

}  // namespace

SchemaKind SchemaView::kind_of(size_t pos) const {
  if (json_.at(pos) != '{') return SchemaKind::kAny;
  if (json_.member(pos, "$ref") != kNoValue) return SchemaKind::kRef;
  if (json_.member(pos, "const") != kNoValue) return SchemaKind::kConst;
  if (json_.member(pos, "enum") != kNoValue) return SchemaKind::kEnum;
  if (alternatives(pos) != kNoValue) return SchemaKind::kAlternatives;
  const size_t type = json_.member(pos, "type");
  if (type == kNoValue) {
    if (json_.member(pos, "properties") != kNoValue) return SchemaKind::kObject;
    if (json_.member(pos, "items") != kNoValue) return SchemaKind::kArray;
    return SchemaKind::kAny;
  }
  if (json_.string_is(type, "object")) return SchemaKind::kObject;
  if (json_.string_is(type, "array")) return SchemaKind::kArray;
  if (json_.string_is(type, "string")) return SchemaKind::kString;
  return SchemaKind::kTypes;
}

size_t SchemaView::alternatives(size_t pos) const {
  const size_t any_of = json_.member(pos, "anyOf");
  return any_of != kNoValue ? any_of : json_.member(pos, "oneOf");
}

bool SchemaView::is_required(size_t required, size_t key) const {
  for (JsonItem name = json_.first(required); name.value != kNoValue; name = json_.next(name)) {
    if (json_.same_string(name.value, key)) return true;
  }
  return false;
}

bool SchemaView::read_count(size_t pos, const char *keyword, uint64_t fallback, uint64_t *out) const {
  const size_t value = json_.member(pos, keyword);
  *out = fallback;
  return value == kNoValue || json_.read_count(value, kMaxCount, out);
}

uint32_t SchemaView::resolve(size_t ref) const {
  if (json_.at(ref) != '"') return kNoDefinition;
  const char *text = json_.data() + ref + 1;
  const size_t length = json_.value_end(ref) - ref - 2;
  for (uint32_t i = 0; i < definitions_.n; ++i) {
    const char *prefix = i < definitions_.n_dollar ? "#/$defs/" : "#/definitions/";
    const size_t prefix_length = std::strlen(prefix);
    if (length >= prefix_length && std::memcmp(text, prefix, prefix_length) == 0 &&
        json_.string_is(definitions_.entries[i].key, text + prefix_length, length - prefix_length)) {
      return i;
    }
  }
  return kNoDefinition;
}

uint32_t find_reference_loop(const SchemaView &schema) {
  DefinitionSet grounded;
  settle(schema.definitions(), grounded,
         [&](size_t pos, const DefinitionSet &set) { return starts_grounded(schema, pos, set); });
  for (uint32_t i = 0; i < schema.definitions().n; ++i) {
    if (!grounded.has(i)) return i;
  }
  return kNoDefinition;
}

bool has_finite_document(const SchemaView &schema, size_t root) {
  DefinitionSet finite_set;
  settle(schema.definitions(), finite_set,
         [&](size_t pos, const DefinitionSet &set) { return finite(schema, pos, set); });
  return finite(schema, root, finite_set);
}

}  // namespace mote::grammar

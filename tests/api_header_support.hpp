// mote.h read as text: its enums, its structs' fields and its functions' parameters, so a test can
// check that a list kept by hand (mote_enum_args.inc, the guarded session calls) misses nothing
// the header declares. The header's own style is assumed: `typedef enum/struct name {...} name;`
// without nested braces, one prototype per declaration, comments anywhere.
#pragma once

#include <algorithm>
#include <cctype>
#include <map>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace mote_test {

struct Parameter {
  std::string type;  // as written, e.g. "const mote_session_options *"
  std::string name;
};

struct ApiHeader {
  std::map<std::string, uint32_t> enums;  // enum type -> 1 + its largest value
  std::map<std::string, std::vector<Parameter>> struct_fields;
  std::map<std::string, std::vector<Parameter>> functions;
};

// mote.h's path: next to the tests' golden directory in the source tree.
inline std::string mote_h_path() { return std::string(MOTE_TEST_DATA_DIR) + "/../../runtime/include/mote/mote.h"; }

// The header without comments and preprocessor lines (plain string work: std::regex trips GCC's
// -Wmaybe-uninitialized under the sanitizers, and is slow there).
inline std::string declarations_only(const std::string &text) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    if (text.compare(i, 2, "/*") == 0) {
      const size_t close = text.find("*/", i + 2);
      i = close == std::string::npos ? text.size() : close + 2;
      out += ' ';
    } else if (text.compare(i, 2, "//") == 0 || (text[i] == '#' && (i == 0 || text[i - 1] == '\n'))) {
      i = text.find('\n', i);  // a directive's continuation lines never hold declarations here
      if (i == std::string::npos) i = text.size();
    } else {
      out += text[i++];
    }
  }
  return out;
}

inline std::string trimmed(const std::string &s) {
  const size_t first = s.find_first_not_of(" \t\n");
  return first == std::string::npos ? "" : s.substr(first, s.find_last_not_of(" \t\n") - first + 1);
}

inline bool is_word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

// Pieces of text between separators, trimmed, empty ones dropped.
inline std::vector<std::string> split(const std::string &text, char separator) {
  std::vector<std::string> out;
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t end = text.find(separator, begin);
    if (end == std::string::npos) end = text.size();
    const std::string piece = trimmed(text.substr(begin, end - begin));
    if (!piece.empty()) out.push_back(piece);
    begin = end + 1;
  }
  return out;
}

// "const char *text" -> {"const char *", "text"}; "uint32_t dim, n_layers" -> one per name.
// Arrays and anything else with brackets or parentheses give nothing (no enum hides there).
inline std::vector<Parameter> declarations(const std::string &text) {
  std::vector<Parameter> out;
  if (text.find_first_of("[](){}") != std::string::npos) return out;
  std::vector<std::string> names = split(text, ',');
  if (names.empty()) return out;
  const std::string &first = names[0];
  size_t name_begin = first.size();
  while (name_begin > 0 && is_word_char(first[name_begin - 1])) --name_begin;
  const std::string type = trimmed(first.substr(0, name_begin));
  if (type.empty() || name_begin == first.size()) return out;  // "void", or no name
  names[0] = first.substr(name_begin);
  for (const std::string &name : names) out.push_back({type, name});
  return out;
}

// The `{...}` bodies of every `typedef <keyword> name {...}` in text, by name.
inline std::map<std::string, std::string> typedef_bodies(const std::string &text, const std::string &keyword) {
  std::map<std::string, std::string> out;
  const std::string intro = "typedef " + keyword + " ";
  for (size_t at = text.find(intro); at != std::string::npos; at = text.find(intro, at + 1)) {
    const size_t open = text.find('{', at), close = text.find('}', at);
    if (open == std::string::npos || close == std::string::npos || close < open) continue;
    out[trimmed(text.substr(at + intro.size(), open - at - intro.size()))] = text.substr(open + 1, close - open - 1);
  }
  return out;
}

inline ApiHeader read_api_header() {
  const std::vector<unsigned char> bytes = read_file(mote_h_path());
  const std::string text = declarations_only(std::string(bytes.begin(), bytes.end()));
  ApiHeader h;
  for (const auto &[name, body] : typedef_bodies(text, "enum")) {
    uint32_t first_invalid = 0;
    for (const std::string &enumerator : split(body, ',')) {
      const size_t equals = enumerator.find('=');
      const uint32_t value = equals == std::string::npos ? first_invalid : std::stoul(enumerator.substr(equals + 1));
      first_invalid = std::max(first_invalid, value + 1);
    }
    h.enums[name] = first_invalid;
  }
  for (const auto &[name, body] : typedef_bodies(text, "struct")) {
    std::vector<Parameter> &fields = h.struct_fields[name];
    for (const std::string &field : split(body, ';')) {
      for (const Parameter &p : declarations(field)) fields.push_back(p);
    }
  }
  // A prototype: a mote_ name right before '(', a list without parentheses, then ';'.
  for (size_t open = text.find('('); open != std::string::npos; open = text.find('(', open + 1)) {
    size_t name_end = open;
    while (name_end > 0 && text[name_end - 1] == ' ') --name_end;
    size_t name_begin = name_end;
    while (name_begin > 0 && is_word_char(text[name_begin - 1])) --name_begin;
    const std::string name = text.substr(name_begin, name_end - name_begin);
    const size_t close = text.find_first_of("()", open + 1);
    if (name.compare(0, 5, "mote_") != 0 || close == std::string::npos || text[close] != ')') continue;
    const size_t after = text.find_first_not_of(" \t\n", close + 1);
    if (after == std::string::npos || text[after] != ';') continue;
    std::vector<Parameter> &parameters = h.functions[name];
    for (const std::string &parameter : split(text.substr(open + 1, close - open - 1), ',')) {
      for (const Parameter &p : declarations(parameter)) parameters.push_back(p);
    }
  }
  return h;
}

// The bare type name: "const mote_session_options *" -> "mote_session_options".
inline std::string base_type(const std::string &type) {
  std::string out;
  for (const std::string &word : split(type, ' ')) {
    std::string bare;
    for (const char c : word) {
      if (c != '*') bare += c;
    }
    if (!bare.empty() && bare != "const") out = bare;
  }
  return out;
}

}  // namespace mote_test

// mote.h read as text: its enums, its structs' fields and its functions' parameters, so a test can
// check that a list kept by hand (mote_enum_args.inc, the guarded session calls) misses nothing
// the header declares. The header's own style is assumed: `typedef enum/struct name {...} name;`
// and one prototype per declaration, comments anywhere.
#pragma once

#include <map>
#include <regex>
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

inline std::string without_comments(const std::string &text) {
  return std::regex_replace(std::regex_replace(text, std::regex(R"(/\*[\s\S]*?\*/)"), " "), std::regex("//[^\n]*"),
                            " ");
}

inline std::string trimmed(const std::string &s) {
  const size_t first = s.find_first_not_of(" \t\n");
  return first == std::string::npos ? "" : s.substr(first, s.find_last_not_of(" \t\n") - first + 1);
}

// Group `group` of every match of pattern in text.
inline std::vector<std::string> matches(const std::string &text, const std::string &pattern, int group = 0) {
  const std::regex re(pattern);
  std::vector<std::string> out;
  for (std::sregex_iterator i(text.begin(), text.end(), re), end; i != end; ++i) out.push_back((*i)[group]);
  return out;
}

// "const char *text" -> {"const char *", "text"}; "uint32_t dim, n_layers" -> one per name.
inline std::vector<Parameter> declarations(const std::string &text) {
  std::vector<Parameter> out;
  std::smatch m;
  const std::string d = trimmed(text);
  if (!std::regex_match(d, m, std::regex(R"(([\w\s]*?[\w*]+[\s*]+)(\w+(\s*,\s*\w+)*))"))) return out;
  for (const std::string &name : matches(m[2], R"(\w+)")) out.push_back({trimmed(m[1]), name});
  return out;
}

inline ApiHeader read_api_header() {
  const std::vector<unsigned char> bytes = read_file(mote_h_path());
  const std::string text = without_comments(std::string(bytes.begin(), bytes.end()));
  ApiHeader h;
  const std::regex enum_re(R"(typedef\s+enum\s+(\w+)\s*\{([^}]*)\}\s*\w+\s*;)");
  for (std::sregex_iterator i(text.begin(), text.end(), enum_re), end; i != end; ++i) {
    uint32_t first_invalid = 0;
    for (const std::string &value : matches((*i)[2], R"(=\s*(\d+))", 1)) {
      first_invalid = std::max<uint32_t>(first_invalid, static_cast<uint32_t>(std::stoul(value)) + 1);
    }
    h.enums[(*i)[1]] = first_invalid;
  }
  const std::regex struct_re(R"(typedef\s+struct\s+(\w+)\s*\{([^}]*)\}\s*\w+\s*;)");
  for (std::sregex_iterator i(text.begin(), text.end(), struct_re), end; i != end; ++i) {
    std::vector<Parameter> &fields = h.struct_fields[(*i)[1]];
    for (const std::string &field : matches((*i)[2], "[^;]+")) {
      for (const Parameter &p : declarations(field)) fields.push_back(p);
    }
  }
  // A prototype: a return type, a mote_ name, a parenthesized list without nested parentheses.
  const std::regex function_re(R"(\b(mote_\w+)\s*\(([^()]*)\)\s*;)");
  for (std::sregex_iterator i(text.begin(), text.end(), function_re), end; i != end; ++i) {
    std::vector<Parameter> &parameters = h.functions[(*i)[1]];
    for (const std::string &parameter : matches((*i)[2], "[^,]+")) {
      for (const Parameter &p : declarations(parameter)) parameters.push_back(p);
    }
  }
  return h;
}

// The bare type name: "const mote_session_options *" -> "mote_session_options".
inline std::string base_type(const std::string &type) {
  return trimmed(std::regex_replace(std::regex_replace(type, std::regex(R"(\bconst\b)"), ""), std::regex(R"(\*)"), ""));
}

}  // namespace mote_test

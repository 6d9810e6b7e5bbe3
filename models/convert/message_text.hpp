// Pieces of the importers' one-line error messages (host side): numbers and untrusted text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

namespace mote::convert {

inline std::string num(uint64_t v) { return std::to_string(v); }

// "1e-50", "2", "1e+300": std::to_string's fixed six decimals would print 1e-50 as 0.000000.
inline std::string real_text(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

// Text for a one-line message: control bytes and backslashes as \xNN, cut after max bytes.
std::string printable(const std::string &text, size_t max = 60);

}  // namespace mote::convert

// Untrusted text made fit for a one-line error message.
#include "message_text.hpp"

#include <cstdio>

namespace mote::convert {

std::string printable(const std::string &text, size_t max) {
  std::string out;
  for (size_t i = 0; i < text.size() && i < max; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7F || c == '\\') {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (text.size() > max) out += "...";
  return out;
}

}  // namespace mote::convert

// Pieces of the importers' one-line error messages (host side): numbers and untrusted text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace mote::convert {

inline std::string num(uint64_t v) { return std::to_string(v); }

// Text for a one-line message: control bytes and backslashes as \xNN, cut after max bytes.
std::string printable(const std::string &text, size_t max = 60);

}  // namespace mote::convert

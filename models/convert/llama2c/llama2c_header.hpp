// Whether a file's first bytes could be a llama2.c checkpoint's header (seven int32 fields, all
// positive but vocab, which is negative for an unshared classifier). A cheap guess to pick a
// message by, not a validation: load_llama2c checks the header against the file's size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace mote::convert {

inline bool looks_like_llama2c_header(const void *head, size_t n) {
  int32_t fields[7];
  if (n < sizeof fields) return false;
  std::memcpy(fields, head, sizeof fields);
  for (int i = 0; i < 7; ++i) {
    if (i == 5 ? fields[i] == 0 : fields[i] <= 0 || fields[i] >= (1 << 20)) return false;
  }
  return true;
}

}  // namespace mote::convert

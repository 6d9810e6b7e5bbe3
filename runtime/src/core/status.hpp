// Status codes and the caller's error buffer: every failing call writes one line into it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "mote/mote.h"

namespace mote {

using Status = mote_status;

// The caller's message buffer; either pointer may be null (the message is then dropped).
struct ErrorSink {
  char *buffer = nullptr;
  size_t capacity = 0;
};

// Writes a printf-style message into sink and returns code (so `return fail(...)` reads well).
Status fail(ErrorSink sink, Status code, const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

// The integer a caller stored in an enum field or argument. A C caller may pass any int where a
// mote enum is expected; loading a value outside the enum's range as the C++ enum is undefined
// behaviour (UBSan's -fsanitize=enum), so the C API reads every such value through this first.
template <typename Enum>
uint32_t enum_value(const Enum &value) {
  static_assert(sizeof(Enum) == sizeof(uint32_t), "mote's C enums are 32-bit");
  uint32_t raw;
  std::memcpy(&raw, &value, sizeof raw);
  return raw;
}

// Writes value as a plain decimal ("0.00001", "100000", "nan", "-inf") into out and returns
// out, for error messages: printf's %g would pull in newlib's dtoa, which allocates.
const char *float_text(float value, char *out, size_t n);

}  // namespace mote

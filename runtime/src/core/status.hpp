// Status codes and the caller's error buffer: every failing call writes one line into it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

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
// Enums are 32-bit on hosted ABIs and as small as their values on arm-none-eabi (short enums),
// so the value is read at the enum's own size.
template <typename Enum>
uint32_t enum_value(const Enum &value) {
  using Raw = std::make_unsigned_t<std::underlying_type_t<Enum>>;
  static_assert(sizeof(Raw) == sizeof(Enum) && sizeof(Raw) <= sizeof(uint32_t), "enum wider than 32 bits");
  Raw raw;
  std::memcpy(&raw, &value, sizeof raw);
  return raw;
}

// Writes value as a plain decimal ("0.00001", "100000", "nan", "-inf") into out and returns
// out, for error messages: printf's %g would pull in newlib's dtoa, which allocates.
const char *float_text(float value, char *out, size_t n);

}  // namespace mote

#include "core/status.hpp"

#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>

namespace mote {

Status fail(ErrorSink sink, Status code, const char *format, ...) {
  if (sink.buffer != nullptr && sink.capacity > 0) {
    va_list args;
    va_start(args, format);
    std::vsnprintf(sink.buffer, sink.capacity, format, args);
    va_end(args);
  }
  return code;
}

const char *float_text(float value, char *out, size_t n) {
  if (std::isnan(value)) {
    std::snprintf(out, n, "nan");
    return out;
  }
  const char *sign = std::signbit(value) ? "-" : "";
  const double magnitude = std::fabs(static_cast<double>(value));
  if (std::isinf(value) || magnitude >= 1e18) {
    std::snprintf(out, n, "%s%s", sign, std::isinf(value) ? "inf" : "huge");
    return out;
  }
  // Integer part and nine fractional digits, trailing zeros trimmed.
  uint64_t whole = static_cast<uint64_t>(magnitude);
  uint64_t fraction = static_cast<uint64_t>((magnitude - static_cast<double>(whole)) * 1e9 + 0.5);
  if (fraction >= 1000000000u) {
    ++whole;
    fraction -= 1000000000u;
  }
  char digits[24];  // nine digits; room for the widest unsigned long keeps -Wformat-truncation quiet
  std::snprintf(digits, sizeof digits, "%09lu", static_cast<unsigned long>(fraction));
  int last = 8;
  while (last >= 0 && digits[last] == '0') digits[last--] = '\0';
  std::snprintf(out, n, "%s%lu%s%s", sign, static_cast<unsigned long>(whole), last >= 0 ? "." : "", digits);
  return out;
}

}  // namespace mote

extern "C" const char *mote_status_name(mote_status status) {
  switch (mote::enum_value(status)) {
    case MOTE_OK:
      return "ok";
    case MOTE_ERR_INVALID_ARGUMENT:
      return "invalid argument";
    case MOTE_ERR_BAD_MODEL:
      return "bad model";
    case MOTE_ERR_UNSUPPORTED:
      return "unsupported";
    case MOTE_ERR_ARENA_TOO_SMALL:
      return "arena too small";
    case MOTE_ERR_CONTEXT_FULL:
      return "context full";
    case MOTE_ERR_BUFFER_TOO_SMALL:
      return "buffer too small";
    case MOTE_ERR_BAD_TOKEN:
      return "bad token";
    case MOTE_ERR_DEVICE:
      return "device error";
    case MOTE_ERR_NUMERIC:
      return "non-finite number";
    case MOTE_ERR_BUSY:
      return "session busy";
    case MOTE_ERR_ABORTED:
      return "aborted";
    case MOTE_ERR_GRAMMAR:
      return "grammar error";
  }
  return "unknown status";
}

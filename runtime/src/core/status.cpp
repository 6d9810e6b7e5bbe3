#include "core/status.hpp"

#include <cstdarg>
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

}  // namespace mote

extern "C" const char *mote_status_name(mote_status status) {
  switch (status) {
    case MOTE_OK: return "ok";
    case MOTE_ERR_INVALID_ARGUMENT: return "invalid argument";
    case MOTE_ERR_BAD_MODEL: return "bad model";
    case MOTE_ERR_UNSUPPORTED: return "unsupported";
    case MOTE_ERR_ARENA_TOO_SMALL: return "arena too small";
    case MOTE_ERR_CONTEXT_FULL: return "context full";
    case MOTE_ERR_BUFFER_TOO_SMALL: return "buffer too small";
    case MOTE_ERR_BAD_TOKEN: return "bad token";
  }
  return "unknown status";
}

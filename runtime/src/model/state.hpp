// Rewind and session state save / restore (state.cpp; layout in models/FORMAT.md).
#pragma once

#include <cstddef>
#include <cstdint>

#include "model/model.hpp"

namespace mote {

// Keeps the first n_tokens positions (n_tokens <= s.position); the logits are gone until the
// next decode.
Status truncate_session(Session &s, uint32_t n_tokens, ErrorSink err);

// Bytes save_state writes for the session now; 0 off the CPU backend.
size_t state_size(const Session &s);

// Writes the state into buffer[0, size); *written gets the bytes written, or those needed when
// the buffer is too small.
Status save_state(const Session &s, void *buffer, size_t size, size_t *written, ErrorSink err);

// Checks a state's header (buffer[0, size): the header is enough) against the session as
// load_state does, without the checksum and tokens; *total_size gets the state's size (0 when
// refused). For readers of files: a foreign or oversized one is refused before it is read.
Status check_state_header(const Session &s, const void *buffer, size_t size, uint64_t *total_size, ErrorSink err);

// Validates the whole state first: a refused one leaves the session untouched.
Status load_state(Session &s, const void *buffer, size_t size, ErrorSink err);

}  // namespace mote

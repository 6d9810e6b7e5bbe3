// The seam between the C API and a forward pass: a small table per backend. The CPU's forward
// (forward.cpp) is one row; the optional CUDA backend (ports/cuda/, its own static library)
// another. The runtime never includes a backend's headers: a CUDA build compiles this library
// with MOTE_HAVE_CUDA and finds the CUDA row through one extern "C" function.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/status.hpp"
#include "mote/mote.h"

namespace mote {

struct Model;
struct Session;

struct Backend {
  const char *name;
  // sizeof(Session) where the backend was compiled: a backend built with other definitions
  // (e.g. without MOTE_OPENMP) reads another layout, so find_backend refuses it.
  size_t session_bytes;
  // Host arena bytes the backend keeps inside the session (its own state), planned by
  // plan_session into Session::backend_state; 0 for the CPU.
  size_t (*host_bytes)(const Model &model, const mote_session_options &options);
  // Device memory beside the host arena (mote_backend_memory): weights, then one session's.
  Status (*device_memory)(const Model &model, const mote_session_options &options, uint64_t *weight_bytes,
                          uint64_t *session_bytes, ErrorSink err);
  // After bind_session: takes the backend's resources (checks the model runs here first).
  Status (*init)(Session &s, const mote_session_options &options, ErrorSink err);
  // Runs n_tokens (1..batch_size) tokens at s.position, appends them to the KV cache and the
  // history, advances the position; the last token's logits land in s.state.logits when
  // want_logits. The caller checked the tokens and the remaining capacity.
  Status (*prefill)(Session &s, const int32_t *tokens, size_t n_tokens, bool want_logits);
  // One token with its logits: prefill of one, which a backend may run differently (CUDA: a graph).
  Status (*decode)(Session &s, int32_t token);
  // Frees what init took outside the arena.
  void (*release)(Session &s);
  // prefill that also writes the logits of rows [first, n_tokens) of this step into out
  // ((n_tokens - first) x vocab floats, row after row) and the last row's into s.state.logits
  // (first < n_tokens). Null: the backend has no per-position logits (MOTE_ERR_UNSUPPORTED).
  Status (*prefill_logits)(Session &s, const int32_t *tokens, size_t n_tokens, size_t first, float *out);
};

// The table for a backend kind, or null when this build lacks it.
const Backend *find_backend(uint32_t kind);  // a raw mote_backend value: a caller may pass any int

}  // namespace mote

#if MOTE_HAVE_CUDA
// Defined by ports/cuda (mote::mote_cuda), which a MOTE_CUDA build links into every user of mote.
extern "C" const mote::Backend *mote_cuda_backend(void);
#endif

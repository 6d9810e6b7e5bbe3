// The backend table: the CPU row wraps forward.cpp; the CUDA row comes from ports/cuda when
// this library is built with MOTE_HAVE_CUDA (nothing CUDA is referenced otherwise).
#include "model/backend.hpp"

#include "model/model.hpp"

namespace mote {
namespace {

Status cpu_prefill(Session &s, const int32_t *tokens, size_t n_tokens, bool want_logits) {
  forward(s, tokens, n_tokens, want_logits ? LogitRows::last(n_tokens) : LogitRows::none(n_tokens));
  return MOTE_OK;
}

Status cpu_decode(Session &s, int32_t token) {
  forward(s, &token, 1, LogitRows::last(1));
  return MOTE_OK;
}

Status cpu_prefill_logits(Session &s, const int32_t *tokens, size_t n_tokens, size_t first, float *out) {
  forward(s, tokens, n_tokens, LogitRows{first, out});
  return MOTE_OK;
}

Status cpu_device_memory(const Model &, const mote_session_options &, uint64_t *weight_bytes, uint64_t *session_bytes,
                         ErrorSink) {
  *weight_bytes = 0;
  *session_bytes = 0;
  return MOTE_OK;
}

const Backend kCpuBackend = {"cpu",      sizeof(Session), nullptr,           cpu_device_memory, nullptr, cpu_prefill,
                             cpu_decode, nullptr,         cpu_prefill_logits};

}  // namespace

const Backend *find_backend(uint32_t kind) {
  if (kind == MOTE_BACKEND_CPU) return &kCpuBackend;
#if MOTE_HAVE_CUDA
  if (kind == MOTE_BACKEND_CUDA) {
    const Backend *cuda = mote_cuda_backend();
    return cuda->session_bytes == sizeof(Session) ? cuda : nullptr;
  }
#endif
  return nullptr;
}

}  // namespace mote

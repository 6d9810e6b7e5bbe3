// mote_embed: a text's pooled hidden states, for retrieval and similarity.
#include <cmath>

#include "model/model.hpp"
#include "mote/mote.h"

using namespace mote;

extern "C" mote_status mote_embed(mote_session *session, const int32_t *tokens, size_t n_tokens, mote_pool pool,
                                  int normalize, float *out, size_t out_n) {
  const SessionGuard guard(session);
  Session *s = guard.session();
  if (s == nullptr) return guard.refusal();
  const ErrorSink err{s->error, sizeof s->error};
  s->error[0] = '\0';
  if (s->backend != find_backend(MOTE_BACKEND_CPU)) {
    return fail(err, MOTE_ERR_UNSUPPORTED, "embeddings run on the CPU backend only (this session uses %s)",
                s->backend->name);
  }
  const format::ModelConfig &c = s->model.view.config;
  if (tokens == nullptr || n_tokens == 0 || (out == nullptr && out_n > 0)) {
    return fail(err, MOTE_ERR_INVALID_ARGUMENT, "embed needs at least one token and an output buffer");
  }
  const uint32_t pool_value = enum_value(pool);  // any integer: read before comparing (status.hpp)
  if (pool_value != MOTE_POOL_MEAN && pool_value != MOTE_POOL_LAST && pool_value != MOTE_POOL_CLS) {
    return fail(err, MOTE_ERR_INVALID_ARGUMENT, "unknown pooling %u", static_cast<unsigned>(pool_value));
  }
  if (n_tokens > s->batch_size || n_tokens > s->context_length) {
    return fail(err, MOTE_ERR_INVALID_ARGUMENT,
                "%zu tokens do not fit in one step of this session (batch size %u, context %u)", n_tokens,
                static_cast<unsigned>(s->batch_size), static_cast<unsigned>(s->context_length));
  }
  if (out_n < c.dim) {
    return fail(err, MOTE_ERR_BUFFER_TOO_SMALL, "the embedding has %u floats; the buffer holds %zu",
                static_cast<unsigned>(c.dim), out_n);
  }
  for (size_t i = 0; i < n_tokens; ++i) {
    if (tokens[i] < 0 || static_cast<uint32_t>(tokens[i]) >= c.vocab_size) {
      return fail(err, MOTE_ERR_BAD_TOKEN, "token %d at %zu is outside the vocabulary of %u",
                  static_cast<int>(tokens[i]), i, static_cast<unsigned>(c.vocab_size));
    }
  }
  s->position = 0;
  forward(*s, tokens, n_tokens, LogitRows::none(n_tokens));
  pool_hidden(*s, n_tokens, pool, out);
  if (normalize != 0) {
    double squares = 0.0;
    for (uint32_t i = 0; i < c.dim; ++i) squares += static_cast<double>(out[i]) * out[i];
    const float scale = squares > 0.0 ? static_cast<float>(1.0 / std::sqrt(squares)) : 0.0f;
    for (uint32_t i = 0; i < c.dim; ++i) out[i] *= scale;
  }
  return MOTE_OK;
}

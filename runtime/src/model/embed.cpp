// mote_embed and mote_embed_batch: texts' pooled hidden states, for retrieval and similarity.
#include <cmath>

#include "model/model.hpp"
#include "mote/mote.h"

using namespace mote;

namespace {

// Checks the arguments (nothing runs before every one is), then runs the texts as one step and
// pools each.
// pool_value: the caller's mote_pool as an integer (enum_value at the API's edge: a C caller's
// out-of-range value must not be copied as the enum, status.hpp).
Status embed_texts(Session &s, const int32_t *tokens, const uint32_t *lengths, size_t n_texts, uint32_t pool_value,
                   int normalize, float *out, size_t out_n) {
  const ErrorSink err{s.error, sizeof s.error};
  s.error[0] = '\0';
  if (s.backend != find_backend(MOTE_BACKEND_CPU)) {
    return fail(err, MOTE_ERR_UNSUPPORTED, "embeddings run on the CPU backend only (this session uses %s)",
                s.backend->name);
  }
  const format::ModelConfig &c = s.model.view.config;
  if (tokens == nullptr || lengths == nullptr || n_texts == 0 || (out == nullptr && out_n > 0)) {
    return fail(err, MOTE_ERR_INVALID_ARGUMENT, "embed needs at least one token and an output buffer");
  }
  if (pool_value != MOTE_POOL_MEAN && pool_value != MOTE_POOL_LAST && pool_value != MOTE_POOL_CLS) {
    return fail(err, MOTE_ERR_INVALID_ARGUMENT, "unknown pooling %u", static_cast<unsigned>(pool_value));
  }
  if (n_texts > 1 && s.spec.sliding_window != 0) {
    return fail(err, MOTE_ERR_UNSUPPORTED, "this model attends over sliding windows: embed one text at a time");
  }
  size_t n_tokens = 0;
  for (size_t i = 0; i < n_texts; ++i) {
    if (lengths[i] == 0) return fail(err, MOTE_ERR_INVALID_ARGUMENT, "text %zu has no tokens", i);
    n_tokens += lengths[i];  // at most n_texts * 2^32: no wrap in 64 bits
  }
  if (n_tokens > s.batch_size || n_tokens > s.context_length) {
    return fail(err, MOTE_ERR_INVALID_ARGUMENT,
                "%zu tokens do not fit in one step of this session (batch size %u, context %u)", n_tokens,
                static_cast<unsigned>(s.batch_size), static_cast<unsigned>(s.context_length));
  }
  if (out_n / c.dim < n_texts) {
    return fail(err, MOTE_ERR_BUFFER_TOO_SMALL, "%zu embeddings of %u floats do not fit in a buffer of %zu", n_texts,
                static_cast<unsigned>(c.dim), out_n);
  }
  for (size_t i = 0; i < n_tokens; ++i) {
    if (tokens[i] < 0 || static_cast<uint32_t>(tokens[i]) >= c.vocab_size) {
      return fail(err, MOTE_ERR_BAD_TOKEN, "token %d at %zu is outside the vocabulary of %u",
                  static_cast<int>(tokens[i]), i, static_cast<unsigned>(c.vocab_size));
    }
  }
  s.position = 0;
  s.text_lengths = n_texts > 1 ? lengths : nullptr;  // one text: the plain pass
  s.n_texts = n_texts;
  forward(s, tokens, n_tokens, LogitRows::none(n_tokens));
  pool_hidden(s, n_tokens, static_cast<mote_pool>(pool_value), out);  // checked above
  s.text_lengths = nullptr;
  // Before normalizing, which would turn an inf into NaN: the first non-finite value names itself.
  for (size_t i = 0; i < n_texts * c.dim; ++i) {
    if (std::isfinite(out[i])) continue;
    char number[32];
    return fail(err, MOTE_ERR_NUMERIC, "embedding %u of %u is %s at index %u: the model computed a non-finite number",
                static_cast<unsigned>(i / c.dim), static_cast<unsigned>(n_texts), float_text(out[i], number, sizeof number),
                static_cast<unsigned>(i % c.dim));
  }
  for (size_t i = 0; normalize != 0 && i < n_texts; ++i) {
    float *v = out + i * c.dim;
    double squares = 0.0;
    for (uint32_t d = 0; d < c.dim; ++d) squares += static_cast<double>(v[d]) * v[d];
    const float scale = squares > 0.0 ? static_cast<float>(1.0 / std::sqrt(squares)) : 0.0f;
    for (uint32_t d = 0; d < c.dim; ++d) v[d] *= scale;
  }
  return MOTE_OK;
}

}  // namespace

extern "C" mote_status mote_embed(mote_session *session, const int32_t *tokens, size_t n_tokens, mote_pool pool,
                                  int normalize, float *out, size_t out_n) {
  const SessionGuard guard(session);
  Session *s = guard.session();
  if (s == nullptr) return guard.refusal();
  if (n_tokens > UINT32_MAX) n_tokens = UINT32_MAX;  // far past any batch: refused as too long
  const uint32_t length = static_cast<uint32_t>(n_tokens);
  return embed_texts(*s, tokens, &length, n_tokens == 0 ? 0 : 1, enum_value(pool), normalize, out, out_n);
}

extern "C" mote_status mote_embed_batch(mote_session *session, const int32_t *tokens, const uint32_t *lengths,
                                        size_t n_texts, mote_pool pool, int normalize, float *out, size_t out_n) {
  const SessionGuard guard(session);
  Session *s = guard.session();
  return s == nullptr ? guard.refusal()
                      : embed_texts(*s, tokens, lengths, n_texts, enum_value(pool), normalize, out, out_n);
}

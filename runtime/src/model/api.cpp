// The C API: argument checks and status codes around the model, session and sampler code.
#include <cmath>
#include <cstring>
#include <new>

#include "format/reader.hpp"
#include "format/values.hpp"
#include "grammar/grammar.hpp"
#include "model/generate.hpp"
#include "model/model.hpp"
#include "model/state.hpp"
#include "mote/mote.h"
#include "sample/grammar_sample.hpp"
#include "sample/sampler.hpp"
#include "text/byte_level_bpe.hpp"
#include "text/chat.hpp"
#include "text/tokenizer.hpp"
#include "text/wordpiece.hpp"

using namespace mote;

static_assert(sizeof(Model) <= sizeof(mote_model::opaque_), "Model must fit in mote_model");
static_assert(alignof(Model) <= alignof(mote_model), "mote_model must be aligned for Model");

namespace {

// Prompt tokens per pass over the weights by default. Float prefill streams every weight from
// memory once per batch: small batches are bound by that read, 64 makes the products
// compute-bound for a modest arena, and its activations still fit a 512 KB L2 (figures:
// bench/README.md, "Tuning decisions").
constexpr uint32_t kDefaultBatchSize = 64;

// Drafted tokens a generation step checks at most by default: a copied reply keeps most of 8 (the
// edit task's replies: 82 of 83), a pass over 9 tokens costs 1.8-2.6 one-token steps
// (bench/README.md, "verify-pass batches"), and MOTE_DRAFT_AUTO drafts fewer where fewer hold.
constexpr uint32_t kDefaultDraftCapacity = 8;

// Every flag bit mote_tokenize and mote_chat_tokenize define; any other is refused.
constexpr uint32_t kTokenizeFlags = MOTE_TOKENIZE_ADD_BOS | MOTE_TOKENIZE_SPECIAL;
constexpr uint32_t kChatFlags = MOTE_CHAT_ADD_ASSISTANT_PROMPT | MOTE_CHAT_CONTINUE;

Session *session_of(const mote_session *s) { return s == nullptr ? nullptr : static_cast<Session *>(s->impl_); }

bool has_sentencepiece_tokenizer(const Model &m) {
  return m.view.tokenizer_kind == static_cast<uint32_t>(format::TokenizerKind::sentencepiece_bpe);
}

bool has_wordpiece_tokenizer(const Model &m) {
  return m.view.tokenizer_kind == static_cast<uint32_t>(format::TokenizerKind::wordpiece);
}

// mote_tokenize for byte-level BPE: BOS (asked for and present) first, then the text.
Status tokenize_byte_level(const TokenizerView &tok, const char *text, size_t text_n, uint32_t flags, int32_t *tokens,
                           size_t capacity, size_t *n_tokens) {
  if (n_tokens == nullptr || (text == nullptr && text_n > 0) || (tokens == nullptr && capacity > 0)) {
    return MOTE_ERR_INVALID_ARGUMENT;
  }
  *n_tokens = 0;
  const size_t n_bos = ((flags & MOTE_TOKENIZE_ADD_BOS) != 0 && tok.bos_id >= 0) ? 1 : 0;
  if (capacity < n_bos) {
    *n_tokens = text_n + n_bos;
    return MOTE_ERR_BUFFER_TOO_SMALL;
  }
  const TextSpan span{text, text_n};
  size_t n = 0;
  const Status status =
      encode_byte_level(tok, &span, 1, (flags & MOTE_TOKENIZE_SPECIAL) != 0, tokens + n_bos, capacity - n_bos, &n);
  if (status == MOTE_OK && n_bos == 1) tokens[0] = tok.bos_id;
  if (status == MOTE_OK || status == MOTE_ERR_BUFFER_TOO_SMALL) *n_tokens = n + n_bos;
  return status;
}

Status resolve_options(const Model &model, const mote_session_options *in, mote_session_options *out, ErrorSink err) {
  *out = in != nullptr ? *in : mote_session_options_default();
  const uint32_t max_seq_len = model.view.config.max_seq_len;
  if (out->context_length == 0) out->context_length = max_seq_len;
  if (out->context_length > max_seq_len) {
    return fail(err, MOTE_ERR_INVALID_ARGUMENT, "context length %u exceeds the model's maximum of %u",
                static_cast<unsigned>(out->context_length), static_cast<unsigned>(max_seq_len));
  }
  const uint32_t kv_dtype = enum_value(out->kv_dtype);
  if (kv_type(kv_dtype) == nullptr) {
    return fail(err, MOTE_ERR_INVALID_ARGUMENT, "unknown KV cache dtype %u", static_cast<unsigned>(kv_dtype));
  }
  if (out->bidirectional > 1) {
    return fail(err, MOTE_ERR_INVALID_ARGUMENT, "bidirectional must be 0 or 1, not %u",
                static_cast<unsigned>(out->bidirectional));
  }
  // A window is causal by nature: an encoder-mode batch longer than it would depend on the split.
  if (out->bidirectional == 1 && (model.view.config.flags & format::kFlagSlidingWindow) != 0) {
    return fail(err, MOTE_ERR_UNSUPPORTED, "this model attends over sliding windows: it has no encoder mode");
  }
  if (out->batch_size == 0) out->batch_size = kDefaultBatchSize;
  if (out->batch_size > MOTE_MAX_BATCH) {
    return fail(err, MOTE_ERR_INVALID_ARGUMENT, "batch size %u is above %d", static_cast<unsigned>(out->batch_size),
                MOTE_MAX_BATCH);
  }
  const uint32_t backend = enum_value(out->backend);
  if (find_backend(backend) == nullptr) {
    if (backend == MOTE_BACKEND_CUDA) {
#if MOTE_HAVE_CUDA
      return fail(err, MOTE_ERR_UNSUPPORTED,
                  "the CUDA backend was compiled with other definitions than the runtime (its Session differs)");
#else
      return fail(err, MOTE_ERR_UNSUPPORTED, "this build has no CUDA backend (configure with -DMOTE_CUDA=ON)");
#endif
    }
    return fail(err, MOTE_ERR_INVALID_ARGUMENT, "unknown backend %u", static_cast<unsigned>(backend));
  }
  if (out->draft_capacity > MOTE_MAX_DRAFT) {
    return fail(err, MOTE_ERR_INVALID_ARGUMENT, "draft capacity %u is above %d",
                static_cast<unsigned>(out->draft_capacity), MOTE_MAX_DRAFT);
  }
  if (out->n_threads > MOTE_MAX_THREADS) {
    return fail(err, MOTE_ERR_INVALID_ARGUMENT, "thread count %u is above %d", static_cast<unsigned>(out->n_threads),
                MOTE_MAX_THREADS);
  }
  return MOTE_OK;
}

// The bytes plan_session lays out for already-resolved options; 0 past the address space.
size_t planned_arena_size(const Model &model, const mote_session_options &resolved) {
  ArenaPlanner planner(nullptr, 0);
  plan_session(planner, model, resolved);
  return planner.overflowed() ? 0 : planner.used();
}

}  // namespace

extern "C" {

const char *mote_isa_name(void) { return kernels::best_kernels().isa_name; }

int mote_openmp_enabled(void) {
#ifdef MOTE_OPENMP
  return 1;
#else
  return 0;
#endif
}

int mote_token_ends_generation(const mote_model *model, int32_t token) {
  const Model *m = model_of(model);
  return m != nullptr && ends_generation(*m, token) ? 1 : 0;
}

mote_status mote_model_open(const void *bytes, size_t n_bytes, mote_model *model, char *err, size_t err_n) {
  const ErrorSink sink{err, err_n};
  if (model == nullptr) return fail(sink, MOTE_ERR_INVALID_ARGUMENT, "model is null");
  std::memset(model, 0, sizeof *model);
  Model *m = new (model->opaque_) Model{};  // placement: constructs in the caller's storage
  const Status status = format::open_model(static_cast<const uint8_t *>(bytes), n_bytes, &m->view, sink);
  if (status != MOTE_OK) return status;
  m->tag = kModelTag;
  return MOTE_OK;
}

mote_status mote_model_check_values(const mote_model *model, char *err, size_t err_n) {
  const ErrorSink sink{err, err_n};
  const Model *m = model_of(model);
  if (m == nullptr) return fail(sink, MOTE_ERR_INVALID_ARGUMENT, "model is null or was not opened");
  for (uint32_t i = 0; i < m->view.n_tensors; ++i) {
    const format::TensorEntry &t = m->view.tensors[i];
    uint64_t index = 0;
    float value = 0.0f;
    if (format::find_non_finite(t, m->view.bytes + t.offset, &index, &value)) {
      char name[48], number[32];
      format::tensor_name(t, name, sizeof name);
      const bool scale = format::dtype_traits(t.dtype)->block_elements > 1;
      return fail(sink, MOTE_ERR_NUMERIC, "tensor '%s' %s %s at index %llu", name,
                  scale ? "has a block scale or minimum of" : "holds", float_text(value, number, sizeof number),
                  static_cast<unsigned long long>(index));
    }
  }
  return MOTE_OK;
}

mote_session_options mote_session_options_default(void) {
  mote_session_options o;
  o.context_length = 0;
  o.kv_dtype = MOTE_KV_F16;  // no perplexity loss beyond the error against f32, at half the memory (README)
  o.n_threads = 1;
  o.batch_size = kDefaultBatchSize;
  o.bidirectional = 0;
  o.backend = MOTE_BACKEND_CPU;
  o.device_model = nullptr;
  o.on_progress = nullptr;
  o.progress_user = nullptr;
  o.draft_capacity = kDefaultDraftCapacity;
  return o;
}

size_t mote_arena_size(const mote_model *model, const mote_session_options *options) {
  const Model *m = model_of(model);
  mote_session_options resolved;
  if (m == nullptr || resolve_options(*m, options, &resolved, ErrorSink{}) != MOTE_OK) return 0;
  return planned_arena_size(*m, resolved);
}

mote_status mote_backend_memory(const mote_model *model, const mote_session_options *options, uint64_t *weight_bytes,
                                uint64_t *session_bytes, char *err, size_t err_n) {
  const ErrorSink sink{err, err_n};
  const Model *m = model_of(model);
  if (m == nullptr || weight_bytes == nullptr || session_bytes == nullptr) {
    return fail(sink, MOTE_ERR_INVALID_ARGUMENT, "model or an output is null");
  }
  *weight_bytes = *session_bytes = 0;
  mote_session_options resolved;
  const Status status = resolve_options(*m, options, &resolved, sink);
  if (status != MOTE_OK) return status;
  return find_backend(enum_value(resolved.backend))->device_memory(*m, resolved, weight_bytes, session_bytes, sink);
}

const char *mote_backend_name(mote_backend backend) {
  const Backend *b = find_backend(enum_value(backend));
  return b == nullptr ? nullptr : b->name;
}

mote_status mote_session_init(mote_session *session, const mote_model *model, const mote_session_options *options,
                              void *arena, size_t arena_n, char *err, size_t err_n) {
  const ErrorSink sink{err, err_n};
  const Model *m = model_of(model);
  if (session == nullptr) return fail(sink, MOTE_ERR_INVALID_ARGUMENT, "session is null");
  session->impl_ = nullptr;
  if (m == nullptr) return fail(sink, MOTE_ERR_INVALID_ARGUMENT, "model is null or was not opened");
  Status status = check_supported(m->view, sink);
  if (status != MOTE_OK) return status;
  mote_session_options resolved;
  status = resolve_options(*m, options, &resolved, sink);
  if (status != MOTE_OK) return status;
  const size_t needed = planned_arena_size(*m, resolved);
  if (needed == 0) {
    return fail(sink, MOTE_ERR_INVALID_ARGUMENT,
                "the session for this context length does not fit in the address space");
  }
  if (arena == nullptr || arena_n < needed) {
    return fail(sink, MOTE_ERR_ARENA_TOO_SMALL, "arena is %llu bytes; this model and these options need %llu",
                static_cast<unsigned long long>(arena == nullptr ? 0 : arena_n),
                static_cast<unsigned long long>(needed));
  }
  if (reinterpret_cast<uintptr_t>(arena) % MOTE_ARENA_ALIGNMENT != 0) {
    return fail(sink, MOTE_ERR_INVALID_ARGUMENT, "arena must be %d-byte aligned", MOTE_ARENA_ALIGNMENT);
  }
  ArenaPlanner planner(arena, arena_n);
  Session *s = plan_session(planner, *m, resolved);
  bind_session(*s, *m, resolved);
  if (s->backend->init != nullptr) {
    status = s->backend->init(*s, resolved, sink);
    if (status != MOTE_OK) return status;
  }
  session->impl_ = s;
  return MOTE_OK;
}

mote_status mote_session_release(mote_session *session) {
  const SessionGuard guard(session);
  Session *s = guard.session();
  if (s == nullptr) return guard.refusal();
  if (s->backend->release != nullptr) s->backend->release(*s);
  session->impl_ = nullptr;
  return MOTE_OK;
}

mote_status mote_session_reset(mote_session *session) {
  const SessionGuard guard(session);
  Session *s = guard.session();
  if (s == nullptr) return guard.refusal();
  s->position = 0;
  s->has_logits = false;
  return MOTE_OK;
}

mote_status mote_session_truncate(mote_session *session, uint32_t n_tokens) {
  const SessionGuard guard(session);
  Session *s = guard.session();
  return s == nullptr ? guard.refusal() : truncate_session(*s, n_tokens, session_sink(*s));
}

size_t mote_session_state_size(const mote_session *session) {
  const SessionGuard guard(session);
  return guard.session() == nullptr ? 0 : state_size(*guard.session());
}

mote_status mote_session_state_save(const mote_session *session, void *buffer, size_t size, size_t *written) {
  const SessionGuard guard(session);
  Session *s = guard.session();
  return s == nullptr ? guard.refusal() : save_state(*s, buffer, size, written, session_sink(*s));
}

mote_status mote_session_state_load(mote_session *session, const void *buffer, size_t size, char *err, size_t err_n) {
  const SessionGuard guard(session);
  Session *s = guard.session();
  if (s == nullptr) return fail(ErrorSink{err, err_n}, guard.refusal(), "session is null, released or busy");
  const Status status = load_state(*s, buffer, size, session_sink(*s));
  if (status != MOTE_OK) fail(ErrorSink{err, err_n}, status, "%s", s->error);
  return status;
}

mote_status mote_session_state_check_header(mote_session *session, const void *buffer, size_t size,
                                            uint64_t *total_size, char *err, size_t err_n) {
  if (total_size == nullptr) return fail(ErrorSink{err, err_n}, MOTE_ERR_INVALID_ARGUMENT, "total_size is null");
  *total_size = 0;
  const SessionGuard guard(session);
  Session *s = guard.session();
  if (s == nullptr) return fail(ErrorSink{err, err_n}, guard.refusal(), "session is null, released or busy");
  const Status status = check_state_header(*s, buffer, size, total_size, session_sink(*s));
  if (status != MOTE_OK) fail(ErrorSink{err, err_n}, status, "%s", s->error);
  return status;
}

uint32_t mote_session_position(const mote_session *session) {
  const Session *s = session_of(session);
  return s == nullptr ? 0 : s->position;
}

uint32_t mote_session_context_length(const mote_session *session) {
  const Session *s = session_of(session);
  return s == nullptr ? 0 : s->context_length;
}

mote_status mote_session_tokens(const mote_session *session, int32_t *tokens, size_t capacity, size_t *n_tokens) {
  if (n_tokens == nullptr || (tokens == nullptr && capacity > 0)) return MOTE_ERR_INVALID_ARGUMENT;
  *n_tokens = 0;
  const SessionGuard guard(session);
  const Session *s = guard.session();
  if (s == nullptr) return guard.refusal();
  *n_tokens = s->position;
  if (capacity < s->position) return MOTE_ERR_BUFFER_TOO_SMALL;
  if (s->position > 0) std::memcpy(tokens, s->history, s->position * sizeof(int32_t));
  return MOTE_OK;
}

const char *mote_session_error(const mote_session *session) {
  const Session *s = session_of(session);
  return s == nullptr ? "session is null or not initialized" : s->error;
}

mote_status mote_tokenize(const mote_model *model, const char *text, size_t text_n, uint32_t flags, int32_t *tokens,
                          size_t capacity, size_t *n_tokens) {
  const Model *m = model_of(model);
  // The encoders check the other arguments.
  if (m == nullptr || (flags & ~kTokenizeFlags) != 0) return MOTE_ERR_INVALID_ARGUMENT;
  if (has_byte_level_tokenizer(*m)) {
    return tokenize_byte_level(m->view.tokenizer, text, text_n, flags, tokens, capacity, n_tokens);
  }
  if (has_wordpiece_tokenizer(*m)) {
    if (text == nullptr && text_n > 0) return MOTE_ERR_INVALID_ARGUMENT;
    const TextSpan span{text, text_n};
    return encode_wordpiece(m->view.tokenizer, &span, 1, (flags & MOTE_TOKENIZE_ADD_BOS) != 0,
                            (flags & MOTE_TOKENIZE_SPECIAL) != 0, tokens, capacity, n_tokens);
  }
  if (!has_sentencepiece_tokenizer(*m)) return MOTE_ERR_UNSUPPORTED;
  return encode(m->view.tokenizer, text, text_n, (flags & MOTE_TOKENIZE_ADD_BOS) != 0, tokens, capacity, n_tokens,
                (flags & MOTE_TOKENIZE_SPECIAL) != 0);
}

mote_status mote_detokenize(const mote_model *model, int32_t prev_token, int32_t token, char *out, size_t capacity,
                            size_t *n_bytes) {
  const Model *m = model_of(model);
  if (m == nullptr || n_bytes == nullptr || (out == nullptr && capacity > 0)) return MOTE_ERR_INVALID_ARGUMENT;
  *n_bytes = 0;
  const bool wordpiece = has_wordpiece_tokenizer(*m);
  if (!has_byte_level_tokenizer(*m) && !wordpiece && !has_sentencepiece_tokenizer(*m)) return MOTE_ERR_UNSUPPORTED;
  const int64_t vocab = m->view.config.vocab_size;
  if (token < 0 || token >= vocab || prev_token < -1 || prev_token >= vocab) return MOTE_ERR_BAD_TOKEN;
  char byte = 0;
  const char *piece = nullptr;
  size_t n = 0;
  bool space = false;  // WordPiece: a word's first piece after another word
  if (wordpiece) {
    wordpiece_piece(m->view.tokenizer, prev_token, token, &space, &piece, &n);
  } else {
    token_piece(*m, prev_token, token, &byte, &piece, &n);
  }
  *n_bytes = n + (space ? 1 : 0);
  if (*n_bytes > capacity) return MOTE_ERR_BUFFER_TOO_SMALL;
  if (space) out[0] = ' ';
  if (n > 0) std::memcpy(out + (space ? 1 : 0), piece, n);
  return MOTE_OK;
}

mote_status mote_prefill(mote_session *session, const int32_t *tokens, size_t n_tokens) {
  const SessionGuard guard(session);
  return guard.session() == nullptr ? guard.refusal() : prefill(*guard.session(), tokens, n_tokens);
}

mote_status mote_decode(mote_session *session, int32_t token, const float **logits) {
  if (logits != nullptr) *logits = nullptr;
  const SessionGuard guard(session);
  Session *s = guard.session();
  if (s == nullptr) return guard.refusal();
  if (s->spec.encoder) return refuse_encoder(*s, "decode");
  const Status status = prefill(*s, &token, 1, PrefillRequest{false, 0, nullptr});
  if (logits != nullptr && status == MOTE_OK) *logits = s->state.logits;
  return status;
}

mote_status mote_prefill_logits(mote_session *session, const int32_t *tokens, size_t n_tokens, size_t first, float *out,
                                size_t out_n) {
  const SessionGuard guard(session);
  Session *s = guard.session();
  if (s == nullptr) return guard.refusal();
  const ErrorSink sink = session_sink(*s);
  if (s->spec.encoder) return refuse_encoder(*s, "give logits");
  if (s->backend->prefill_logits == nullptr) {
    return fail(sink, MOTE_ERR_UNSUPPORTED, "the %s backend has no per-position logits", s->backend->name);
  }
  if (first > n_tokens) {
    return fail(sink, MOTE_ERR_INVALID_ARGUMENT, "first position %llu is past the %llu tokens",
                static_cast<unsigned long long>(first), static_cast<unsigned long long>(n_tokens));
  }
  const size_t rows = n_tokens - first, vocab = s->model.view.config.vocab_size;
  if (rows > 0 && out == nullptr) return fail(sink, MOTE_ERR_INVALID_ARGUMENT, "out is null");
  if (rows > out_n / vocab) {
    const bool representable = rows <= SIZE_MAX / vocab;
    return fail(sink, MOTE_ERR_BUFFER_TOO_SMALL, "out holds %llu floats; %llu positions of %llu logits need %s%llu",
                static_cast<unsigned long long>(out_n), static_cast<unsigned long long>(rows),
                static_cast<unsigned long long>(vocab), representable ? "" : "more than ",
                static_cast<unsigned long long>(representable ? rows * vocab : SIZE_MAX));
  }
  return prefill(*s, tokens, n_tokens, PrefillRequest{true, first, rows > 0 ? out : nullptr});
}

int mote_models_share_vocabulary(const mote_model *target, const mote_model *draft) {
  const Model *a = model_of(target), *b = model_of(draft);
  return a != nullptr && b != nullptr && same_vocabulary(*a, *b) ? 1 : 0;
}

mote_status mote_generate_stats(const mote_session *session, mote_generation_stats *stats) {
  const SessionGuard guard(session);
  if (guard.session() == nullptr || stats == nullptr)
    return stats == nullptr ? MOTE_ERR_INVALID_ARGUMENT : guard.refusal();
  const GenerateTotals &t = guard.session()->generate_totals;
  stats->generated = t.generated;
  stats->passes = t.passes;
  stats->drafted = t.drafted;
  stats->accepted = t.accepted;
  return MOTE_OK;
}

const float *mote_logits(const mote_session *session) {
  const Session *s = session_of(session);
  return s != nullptr && s->has_logits ? s->state.logits : nullptr;
}

mote_sampler_options mote_sampler_options_default(void) {
  mote_sampler_options o;
  o.temperature = 0.8f;
  o.top_k = 40;
  o.top_p = 0.95f;
  o.min_p = 0.05f;
  o.repetition_penalty = 1.0f;
  o.repetition_last_n = 64;
  o.seed = 0;
  o.ignore_eos = 0;
  o.draft = MOTE_DRAFT_AUTO;
  o.draft_max = kDefaultDraftCapacity;
  o.draft_min = 1;
  o.draft_p_min = 0.5f;
  o.draft_session = nullptr;
  return o;
}

mote_status mote_sampler_seed(mote_session *session, uint64_t seed) {
  const SessionGuard guard(session);
  if (guard.session() == nullptr) return guard.refusal();
  rng_seed(guard.session()->rng, seed);
  return MOTE_OK;
}

mote_status mote_sampler_options_validate(const mote_sampler_options *options, char *err, size_t err_n) {
  const ErrorSink sink{err, err_n};
  if (options == nullptr) return fail(sink, MOTE_ERR_INVALID_ARGUMENT, "sampler options are null");
  const mote_sampler_options &o = *options;
  if (!(o.temperature >= 0.0f && std::isfinite(o.temperature))) {
    return fail(sink, MOTE_ERR_INVALID_ARGUMENT, "temperature must be a finite number >= 0 (0 is greedy)");
  }
  if (o.top_k < 0) return fail(sink, MOTE_ERR_INVALID_ARGUMENT, "top-k must be >= 0 (0 is off)");
  if (!(o.top_p > 0.0f && o.top_p <= 1.0f)) return fail(sink, MOTE_ERR_INVALID_ARGUMENT, "top-p must be in (0, 1]");
  if (!(o.min_p >= 0.0f && o.min_p <= 1.0f)) return fail(sink, MOTE_ERR_INVALID_ARGUMENT, "min-p must be in [0, 1]");
  if (!(o.repetition_penalty > 0.0f && std::isfinite(o.repetition_penalty))) {
    return fail(sink, MOTE_ERR_INVALID_ARGUMENT, "repetition penalty must be a finite number > 0 (1 is off)");
  }
  if (o.repetition_last_n < 0) {
    return fail(sink, MOTE_ERR_INVALID_ARGUMENT, "repetition window must be >= 0 tokens");
  }
  if (o.ignore_eos != 0 && o.ignore_eos != 1) return fail(sink, MOTE_ERR_INVALID_ARGUMENT, "ignore_eos must be 0 or 1");
  if (enum_value(o.draft) > MOTE_DRAFT_MODEL) {
    return fail(sink, MOTE_ERR_INVALID_ARGUMENT, "unknown draft kind %u", static_cast<unsigned>(enum_value(o.draft)));
  }
  if (o.draft_max > MOTE_MAX_DRAFT) {
    return fail(sink, MOTE_ERR_INVALID_ARGUMENT, "draft-max %u is above %d", static_cast<unsigned>(o.draft_max),
                MOTE_MAX_DRAFT);
  }
  if (o.draft != MOTE_DRAFT_NONE && o.draft_min > o.draft_max) {
    return fail(sink, MOTE_ERR_INVALID_ARGUMENT, "draft-min %u is above draft-max %u",
                static_cast<unsigned>(o.draft_min), static_cast<unsigned>(o.draft_max));
  }
  if (!(o.draft_p_min >= 0.0f && o.draft_p_min <= 1.0f)) {
    return fail(sink, MOTE_ERR_INVALID_ARGUMENT, "draft-p-min must be in [0, 1]");
  }
  if (o.draft == MOTE_DRAFT_MODEL && o.draft_session == nullptr) {
    return fail(sink, MOTE_ERR_INVALID_ARGUMENT, "drafting with a draft model needs its session (draft_session)");
  }
  return MOTE_OK;
}

mote_status mote_sample(mote_session *session, const mote_sampler_options *options, int32_t *token) {
  const SessionGuard guard(session);
  return guard.session() == nullptr ? guard.refusal() : sample_next(*guard.session(), options, nullptr, token);
}

mote_status mote_sample_grammar(mote_session *session, const mote_sampler_options *options, mote_grammar *grammar,
                                int32_t *token) {
  const SessionGuard guard(session);
  Session *s = guard.session();
  if (s == nullptr) return guard.refusal();
  grammar::Grammar *g = grammar::grammar_of(grammar);
  if (g == nullptr) return fail(session_sink(*s), MOTE_ERR_INVALID_ARGUMENT, "grammar is null or was never compiled");
  return sample_next(*s, options, g, token);
}

mote_status mote_chat_tokenize(const mote_model *model, const mote_chat_message *messages, size_t n_messages,
                               uint32_t flags, int32_t *tokens, size_t capacity, size_t *n_tokens) {
  const Model *m = model_of(model);
  // chat_encode checks the other arguments.
  if (m == nullptr || (flags & ~kChatFlags) != 0) return MOTE_ERR_INVALID_ARGUMENT;
  return chat_encode(m->view.tokenizer, m->view.chat_template, messages, n_messages,
                     (flags & MOTE_CHAT_ADD_ASSISTANT_PROMPT) != 0, tokens, capacity, n_tokens,
                     (flags & MOTE_CHAT_CONTINUE) == 0);
}

mote_status mote_chat_end_of_turn(const mote_model *model, int32_t *tokens, size_t capacity, size_t *n_tokens) {
  const Model *m = model_of(model);
  if (m == nullptr) return MOTE_ERR_INVALID_ARGUMENT;
  return chat_end_of_turn(m->view.tokenizer, m->view.chat_template, tokens, capacity, n_tokens);
}

mote_status mote_generate(mote_session *session, const int32_t *prompt, size_t n_prompt, uint32_t max_new_tokens,
                          const mote_sampler_options *options, mote_on_token on_token, void *user,
                          uint32_t *n_generated) {
  return mote_generate_constrained(session, prompt, n_prompt, max_new_tokens, options, nullptr, on_token, user,
                                   n_generated);
}

mote_status mote_generate_constrained(mote_session *session, const int32_t *prompt, size_t n_prompt,
                                      uint32_t max_new_tokens, const mote_sampler_options *options,
                                      mote_grammar *grammar, mote_on_token on_token, void *user,
                                      uint32_t *n_generated) {
  if (n_generated != nullptr) *n_generated = 0;
  // Held through on_token: a call on this session from the callback is refused.
  const SessionGuard guard(session);
  Session *s = guard.session();
  if (s == nullptr) return guard.refusal();
  grammar::Grammar *g = grammar::grammar_of(grammar);
  if (grammar != nullptr && g == nullptr) {
    return fail(session_sink(*s), MOTE_ERR_INVALID_ARGUMENT, "grammar was never compiled");
  }
  // The draft model's session is held too: a call on it meanwhile is refused, and so is a
  // draft session already in use (the session itself, or one another thread is running).
  mote_session *draft_handle =
      options != nullptr && enum_value(options->draft) != MOTE_DRAFT_NONE ? options->draft_session : nullptr;
  if (draft_handle != nullptr && draft_handle->impl_ == session->impl_) {
    return fail(session_sink(*s), MOTE_ERR_INVALID_ARGUMENT, "the draft session is the session itself");
  }
  const SessionGuard draft_guard(draft_handle);
  if (draft_handle != nullptr && draft_guard.session() == nullptr) {
    return fail(session_sink(*s), MOTE_ERR_INVALID_ARGUMENT,
                draft_guard.refusal() == MOTE_ERR_BUSY ? "the draft session is busy with another call"
                                                       : "the draft session is null or was released");
  }
  return generate(*s, prompt, n_prompt, max_new_tokens, options, g, draft_guard.session(), on_token, user, n_generated);
}

}  // extern "C"

// Generation: prefill, sampling, and mote_generate's loop with speculative decoding.
//
// A generation step samples a token from the logits it has, asks the drafters what may follow
// it, and runs the token with the drafted ones through the model in one pass (reading each weight
// once for all of them). It then samples again from each drafted position's logits, in order,
// exactly as plain decoding would after the tokens before it, and keeps a drafted token only when
// that draw equals it; the first draw that differs is the next step's token. The logits of a
// position are the same bits whatever the batch (forward.cpp), the draws consume the random
// numbers in the same order, so the reply is plain decoding's, token for token; rejected tokens
// are forgotten as mote_session_truncate forgets them.
#include "model/generate.hpp"

#include <cmath>
#include <cstring>

#include "model/state.hpp"
#include "sample/draft.hpp"
#include "sample/grammar_sample.hpp"
#include "sample/sampler.hpp"
#include "text/byte_level_bpe.hpp"
#include "text/tokenizer.hpp"

namespace mote {

bool has_byte_level_tokenizer(const Model &m) {
  return m.view.tokenizer_kind == static_cast<uint32_t>(format::TokenizerKind::byte_level_bpe);
}

void token_piece(const Model &m, int32_t prev_token, int32_t token, char *byte, const char **piece, size_t *n) {
  if (has_byte_level_tokenizer(m)) {
    byte_level_piece(m.view.tokenizer, token, piece, n);
  } else {
    piece_for(m.view.tokenizer, prev_token, token, byte, piece, n);
  }
}

bool ends_generation(const Model &m, int32_t token) {
  const format::ModelConfig &c = m.view.config;
  if (token < 0 || static_cast<uint32_t>(token) >= c.vocab_size) return false;
  return token == c.bos_id || token == c.eos_id || m.view.tokenizer.types[token] == kTokenControl;
}

bool same_vocabulary(const Model &a, const Model &b) {
  const format::TokenizerView &x = a.view.tokenizer, &y = b.view.tokenizer;
  if (a.view.config.vocab_size != b.view.config.vocab_size || x.n_tokens != y.n_tokens ||
      a.view.tokenizer_kind != b.view.tokenizer_kind) {
    return false;
  }
  for (uint32_t i = 0; i < x.n_tokens; ++i) {
    const uint32_t n = x.piece_offsets[i + 1] - x.piece_offsets[i];
    if (n != y.piece_offsets[i + 1] - y.piece_offsets[i] || x.types[i] != y.types[i] ||
        std::memcmp(x.piece_bytes + x.piece_offsets[i], y.piece_bytes + y.piece_offsets[i], n) != 0) {
      return false;
    }
  }
  return true;
}

Status refuse_encoder(Session &s, const char *what) {
  return fail(session_sink(s), MOTE_ERR_UNSUPPORTED,
              "this model is an embedder with no classifier: it cannot %s (use mote_embed)", what);
}

namespace {

// Whether the session's progress callback asks to stop, told done of total (each below the
// context length, so they fit its 32-bit arguments).
bool progress_says_stop(const Session &s, size_t done, size_t total) {
  return s.on_progress != nullptr &&
         s.on_progress(s.progress_user, static_cast<uint32_t>(done), static_cast<uint32_t>(total)) != 0;
}

Status aborted(Session &s, const char *what, size_t done, size_t total) {
  return fail(session_sink(s), MOTE_ERR_ABORTED, "stopped by the progress callback after %llu of %llu %s",
              static_cast<unsigned long long>(done), static_cast<unsigned long long>(total), what);
}

}  // namespace

Status prefill(Session &s, const int32_t *tokens, size_t n_tokens, PrefillRequest request) {
  const ErrorSink sink = session_sink(s);
  if (tokens == nullptr && n_tokens > 0) return fail(sink, MOTE_ERR_INVALID_ARGUMENT, "tokens are null");
  // Everything is checked before the first token runs, so a failed call changes nothing.
  if (n_tokens > s.context_length - s.position) {
    return fail(sink, MOTE_ERR_CONTEXT_FULL, "%llu tokens do not fit: %u of the context's %u are used",
                static_cast<unsigned long long>(n_tokens), static_cast<unsigned>(s.position),
                static_cast<unsigned>(s.context_length));
  }
  const int64_t vocab = s.model.view.config.vocab_size;
  for (size_t i = 0; i < n_tokens; ++i) {
    if (tokens[i] < 0 || tokens[i] >= vocab) {
      return fail(sink, MOTE_ERR_BAD_TOKEN, "token %d at index %llu is outside the vocabulary of %lld",
                  static_cast<int>(tokens[i]), static_cast<unsigned long long>(i), static_cast<long long>(vocab));
    }
  }
  for (size_t i = 0; i < n_tokens; i += s.batch_size) {
    const size_t n = n_tokens - i < s.batch_size ? n_tokens - i : s.batch_size;
    const bool last = i + n == n_tokens;
    Status status = MOTE_OK;
    if (request.out != nullptr && i + n > request.first) {
      const size_t first_row = request.first > i ? request.first - i : 0;
      float *out = request.out + (i + first_row - request.first) * static_cast<size_t>(vocab);
      status = s.backend->prefill_logits(s, tokens + i, n, first_row, out);
    } else {
      status = n == 1 && last ? s.backend->decode(s, tokens[i]) : s.backend->prefill(s, tokens + i, n, last);
    }
    if (status != MOTE_OK) return status;
    if (request.report_progress && progress_says_stop(s, i + n, n_tokens)) {
      return aborted(s, "prompt tokens", i + n, n_tokens);
    }
  }
  return MOTE_OK;
}

namespace {

// Picks a token from logits (modified in place) as the session would after its first `position`
// tokens: the repetition penalty looks at the history before it, a grammar's mask at the token
// before it, and the grammar accepts the pick (an end token is not accepted: nothing follows it).
Status sample_at(Session &s, const mote_sampler_options &options, grammar::Grammar *g, float *logits, uint32_t position,
                 int32_t *token) {
  const ErrorSink sink = session_sink(s);
  const size_t last_n = static_cast<size_t>(options.repetition_last_n);
  const size_t n_recent = last_n < position ? last_n : position;
  const int32_t *recent = s.history + (position - n_recent);
  const uint32_t vocab = s.model.view.config.vocab_size;
  const int32_t prev = position > 0 ? s.history[position - 1] : -1;
  size_t bad = 0;
  Status status = MOTE_OK;
  if (g != nullptr) {
    if (!g->has_tokenizer || g->tokenizer.piece_bytes != s.model.view.tokenizer.piece_bytes) {
      return fail(sink, MOTE_ERR_INVALID_ARGUMENT, "the grammar was compiled for another model (or for none)");
    }
    status = sample_with_grammar(options, s.rng, logits, vocab, recent, n_recent, s.candidates, *g, prev,
                                 kMaxGrammarSampleSteps, token, &bad, sink);
    if (status == MOTE_ERR_GRAMMAR) {
      char reason[sizeof s.error];
      std::memcpy(reason, s.error, sizeof reason);
      return fail(sink, status, "%s after position %u", reason, static_cast<unsigned>(position));
    }
    if (status == MOTE_OK && !ends_generation(s.model, *token)) {
      char byte = 0;
      const char *bytes = nullptr;
      size_t n = 0;
      piece_for(s.model.view.tokenizer, prev, *token, &byte, &bytes, &n);
      return grammar::accept_bytes(*g, bytes, n, sink);
    }
    if (status != MOTE_ERR_NUMERIC) return status;
    *token = -1;
  } else {
    *token = sample(options, s.rng, logits, vocab, recent, n_recent, s.candidates, &bad);
  }
  if (*token < 0) {
    char number[32];
    return fail(sink, MOTE_ERR_NUMERIC,
                "logit %llu of %u is %s after position %u: the model computed a non-finite number",
                static_cast<unsigned long long>(bad), static_cast<unsigned>(vocab),
                float_text(logits[bad], number, sizeof number), static_cast<unsigned>(position));
  }
  return MOTE_OK;
}

}  // namespace

Status sample_next(Session &s, const mote_sampler_options *options, grammar::Grammar *g, int32_t *token) {
  const ErrorSink sink = session_sink(s);
  if (token == nullptr) return fail(sink, MOTE_ERR_INVALID_ARGUMENT, "token is null");
  if (s.spec.encoder) return refuse_encoder(s, "sample");
  const Status status = mote_sampler_options_validate(options, s.error, sizeof s.error);
  if (status != MOTE_OK) return status;
  if (!s.has_logits) return fail(sink, MOTE_ERR_INVALID_ARGUMENT, "no logits to sample: prefill or decode first");
  return sample_at(s, *options, g, s.state.logits, s.position, token);
}

namespace {

// ---- drafting --------------------------------------------------------------------------------

// One generation's drafters: which are on, what they learned, and the draft model's session.
struct Drafters {
  size_t max = 0, min = 1;              // drafted tokens per step (max 0: drafting is off)
  bool adaptive = true;                 // each drafter drafts only while its acceptance pays (MOTE_DRAFT_AUTO)
  grammar::Grammar *grammar = nullptr;  // fast-forward through what it forces (null: off)
  DraftStats grammar_stats;
  bool lookup = false;
  DraftStats lookup_stats;
  int32_t lookup_shadow = -1;  // the first token of the last lookup proposal left unchecked (-1: none)
  Session *model = nullptr;    // the draft model's session (null: none)
  DraftStats model_stats;
  float model_cost = 0.0f;  // one draft-model decode step relative to one of the target's
  float p_min = 0.0f;
  uint32_t steps_without_model = 0;  // since the draft model last drafted (it is tried again now and then)
};

// The most bytes grammar fast-forward drafts at once (a schema's longest keys run to ~30).
constexpr size_t kMaxForcedBytes = 48;

// A draft model that has stopped paying drafts one token again after this many steps, so its
// acceptance is measured afresh.
constexpr uint32_t kDraftModelRetry = 16;

Status start_drafters(Session &s, const mote_sampler_options &o, grammar::Grammar *g, Session *draft, Drafters *d) {
  *d = Drafters{};
  const bool can_check = s.backend->prefill_logits != nullptr && s.draft_capacity > 0;
  if (o.draft == MOTE_DRAFT_NONE || !can_check) return MOTE_OK;
  d->max = o.draft_max < s.draft_capacity ? o.draft_max : s.draft_capacity;
  d->min = o.draft_min > 1 ? o.draft_min : 1;
  d->adaptive = o.draft == MOTE_DRAFT_AUTO;
  d->lookup = o.draft != MOTE_DRAFT_MODEL;
  // Forced bytes become tokens through the model's own encoder: byte-level BPE encodes a piece of
  // text as it would inside the reply (SentencePiece would open it with its dummy-prefix space).
  if (o.draft == MOTE_DRAFT_AUTO && g != nullptr && has_byte_level_tokenizer(s.model)) d->grammar = g;
  if (draft == nullptr || o.draft == MOTE_DRAFT_LOOKUP) return MOTE_OK;
  const ErrorSink sink = session_sink(s);
  if (draft == &s) return fail(sink, MOTE_ERR_INVALID_ARGUMENT, "the draft session is the session itself");
  if (draft->spec.encoder) return fail(sink, MOTE_ERR_INVALID_ARGUMENT, "the draft model is an embedder");
  if (!same_vocabulary(s.model, draft->model)) {
    return fail(sink, MOTE_ERR_INVALID_ARGUMENT,
                "the draft model's vocabulary differs from the model's (%u and %u tokens): it cannot draft for it",
                static_cast<unsigned>(draft->model.view.config.vocab_size),
                static_cast<unsigned>(s.model.view.config.vocab_size));
  }
  d->model = draft;
  // Decoding reads every weight once: the bytes are the steps' cost ratio on a memory-bound CPU.
  d->model_cost = static_cast<float>(draft->model.view.weight_bytes) /
                  static_cast<float>(s.model.view.weight_bytes > 0 ? s.model.view.weight_bytes : 1);
  d->p_min = o.draft_p_min;
  return MOTE_OK;
}

// Brings the draft model's cache to tokens[0, n) with the logits after the last one, running only
// what differs from what it holds. False when they do not fit its context.
bool sync_draft_model(Session &m, const int32_t *tokens, size_t n) {
  if (n == 0 || n > m.context_length) return false;
  size_t common = 0;
  const size_t held = m.position < n ? m.position : n;
  while (common < held && m.history[common] == tokens[common]) ++common;
  if (common == n && m.position == n && m.has_logits) return true;
  if (common == n) common = n - 1;  // the last token runs again for its logits
  truncate_session(m, static_cast<uint32_t>(common), session_sink(m));
  return prefill(m, tokens + common, n - common, PrefillRequest{false, 0, nullptr}) == MOTE_OK;
}

// The probability of the most likely token of logits (whose index goes to *top).
float top_probability(const float *logits, size_t n, int32_t *top) {
  *top = argmax(logits, n);
  if (*top < 0) return 0.0f;
  const float max = logits[*top];
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(logits[i] - max));
  return static_cast<float>(1.0 / sum);
}

// Greedy drafts from the draft model after tokens[0, n): up to max, stopping at a token it
// gives less than p_min.
size_t draft_from_model(Drafters &d, const int32_t *tokens, size_t n, size_t max, int32_t *out) {
  Session &m = *d.model;
  if (!sync_draft_model(m, tokens, n)) return 0;
  const size_t vocab = m.model.view.config.vocab_size;
  size_t k = 0;
  while (k < max) {
    int32_t top = -1;
    if (top_probability(m.state.logits, vocab, &top) < d.p_min || top < 0) break;
    out[k++] = top;
    if (k == max || m.position >= m.context_length || prefill(m, &top, 1, PrefillRequest{false, 0, nullptr}) != MOTE_OK)
      break;
  }
  return k;
}

// Writes the tokens drafted to follow tokens[0, n) (the history and the sampled token) into out,
// at most available, and says which drafter wrote them (null: none drafted).
size_t draft_tokens(Drafters &d, const int32_t *tokens, size_t n, size_t available, int32_t *out, DraftStats **by) {
  *by = nullptr;
  d.lookup_shadow = -1;
  if (available == 0) return 0;
  if (d.grammar != nullptr) {
    // The grammar holds the sampled token already: what it forces next, as the model would
    // tokenize it, less the last token (the text after it may merge into it).
    char forced[kMaxForcedBytes];
    const size_t n_forced = grammar_forced_bytes(*d.grammar, forced, sizeof forced);
    int32_t pieces[kMaxForcedBytes];
    size_t n_pieces = 0;
    const TextSpan span{forced, n_forced};
    if (n_forced > 0 &&
        encode_byte_level(d.grammar->tokenizer, &span, 1, false, pieces, kMaxForcedBytes, &n_pieces) == MOTE_OK &&
        n_pieces > 1) {
      size_t k = draft_length(d.grammar_stats, n_pieces - 1 < available ? n_pieces - 1 : available, kCheckedTokenCost);
      if (k >= d.min) {
        for (size_t i = 0; i < k; ++i) out[i] = pieces[i];
        *by = &d.grammar_stats;
        return k;
      }
    }
  }
  if (d.lookup) {
    const size_t found = lookup_draft(tokens, n, available, out);
    const size_t k = d.adaptive ? draft_length(d.lookup_stats, found, kCheckedTokenCost) : found;
    d.lookup_shadow = found > 0 && k < d.min ? out[0] : -1;
    if (k >= d.min) {
      *by = &d.lookup_stats;
      return k;
    }
  }
  if (d.model != nullptr) {
    size_t k = d.adaptive ? draft_length(d.model_stats, available, kCheckedTokenCost + d.model_cost) : available;
    if (k == 0 && ++d.steps_without_model >= kDraftModelRetry) k = 1;
    if (k > 0) {
      d.steps_without_model = 0;
      k = draft_from_model(d, tokens, n, k, out);
      if (k >= d.min) {
        *by = &d.model_stats;
        return k;
      }
    }
  }
  return 0;
}

// ---- the generation loop ----------------------------------------------------------------------

// What the loop passes to the caller, and when it stops.
struct Reply {
  uint32_t max_new_tokens;
  mote_on_token on_token;
  void *user;
  uint32_t *n_generated;
  uint32_t generated = 0;
};

// Passes the token at position `at` (already in the cache) to the callback. True when generation
// ends after it: the callback asked, the grammar is complete, or max_new_tokens are out.
bool emit(Session &s, Reply &r, grammar::Grammar *g, uint32_t at) {
  const int32_t token = s.history[at];
  ++r.generated;
  if (r.n_generated != nullptr) *r.n_generated = r.generated;
  bool stop = false;
  if (r.on_token != nullptr) {
    char byte = 0;
    const char *piece = nullptr;
    size_t n = 0;
    token_piece(s.model, at > 0 ? s.history[at - 1] : -1, token, &byte, &piece, &n);
    stop = r.on_token(r.user, token, piece, n) != 0;
  }
  return stop || (g != nullptr && !grammar::can_continue(*g)) || r.generated >= r.max_new_tokens;
}

}  // namespace

Status generate(Session &s, const int32_t *prompt, size_t n_prompt, uint32_t max_new_tokens,
                const mote_sampler_options *options, grammar::Grammar *g, Session *draft, mote_on_token on_token,
                void *user, uint32_t *n_generated) {
  if (s.spec.encoder) return refuse_encoder(s, "generate");  // before the prompt runs: nothing changes
  Status status = mote_sampler_options_validate(options, s.error, sizeof s.error);
  if (status != MOTE_OK) return status;
  Drafters drafters;
  status = start_drafters(s, *options, g, draft, &drafters);
  if (status != MOTE_OK) return status;
  status = prefill(s, prompt, n_prompt);
  if (status != MOTE_OK) return status;
  rng_seed(s.rng, options->seed);
  s.generate_totals = GenerateTotals{};
  if (max_new_tokens == 0) return MOTE_OK;
  const ErrorSink sink = session_sink(s);
  const size_t vocab = s.model.view.config.vocab_size;
  const bool end_tokens_end = options->ignore_eos == 0 || g != nullptr;  // a grammar ends at one anyway
  Reply reply{max_new_tokens, on_token, user, n_generated};
  // The step's tokens: the sampled one, then the drafted ones.
  int32_t step[MOTE_MAX_DRAFT + 1];
  status = sample_next(s, options, g, &step[0]);
  for (;;) {
    if (status == MOTE_ERR_NUMERIC || status == MOTE_ERR_GRAMMAR) {
      char reason[sizeof s.error];
      std::memcpy(reason, s.error, sizeof reason);
      return fail(sink, status, "generation step %u: %s", static_cast<unsigned>(reply.generated), reason);
    }
    if (status != MOTE_OK) return status;
    if (ends_generation(s.model, step[0]) && end_tokens_end) break;
    if (s.position >= s.context_length) {
      return fail(sink, MOTE_ERR_CONTEXT_FULL, "the context of %u tokens is full",
                  static_cast<unsigned>(s.context_length));
    }
    const uint32_t start = s.position;
    // The drafts that fit the context, the reply and one batch.
    size_t available = drafters.max;
    const size_t room = s.context_length - start - 1, left = max_new_tokens - reply.generated - 1;
    if (room < available) available = room;
    if (left < available) available = left;
    if (s.batch_size - 1 < available) available = s.batch_size - 1;
    s.history[start] = step[0];  // the context is [0, start] while drafting (the pass writes it too)
    DraftStats *drafter = nullptr;
    const size_t k = draft_tokens(drafters, s.history, start + 1, available, step + 1, &drafter);
    status = k == 0 ? prefill(s, step, 1, PrefillRequest{false, 0, nullptr})
                    : prefill(s, step, k + 1, PrefillRequest{false, 0, s.draft_logits});
    if (status != MOTE_OK) return status;
    ++s.generate_totals.passes;
    // Emit the sampled token, then each drafted one the sampler picks itself after the ones before.
    const int32_t shadow = drafters.lookup_shadow;
    size_t kept = 0;
    bool done = false, stopped = false;
    for (;; ++kept) {
      if (emit(s, reply, g, start + static_cast<uint32_t>(kept))) {
        done = true;
        break;
      }
      if (progress_says_stop(s, reply.generated, max_new_tokens)) {
        stopped = true;
        break;
      }
      if (reply.generated >= max_new_tokens) {
        done = true;
        break;
      }
      float *logits = k == 0 ? s.state.logits : s.draft_logits + kept * vocab;
      status = sample_at(s, *options, g, logits, start + static_cast<uint32_t>(kept) + 1, &step[0]);
      const bool holds = status == MOTE_OK && kept < k && step[0] == step[kept + 1] &&
                         !(ends_generation(s.model, step[0]) && end_tokens_end);
      if (!holds) break;
    }
    const bool sampled_next = !done && !stopped && status == MOTE_OK;  // step[0] is the next step's token
    if (shadow >= 0 && (kept > 0 || sampled_next)) {
      record_shadow(drafters.lookup_stats, shadow == (kept > 0 ? s.history[start + 1] : step[0]));
    }
    if (k > 0) {
      const size_t checked = kept < k && sampled_next ? kept + 1 : kept;
      record_check(*drafter, checked, kept);
      s.generate_totals.drafted += checked;
      s.generate_totals.accepted += kept;
      // Forget the drafted tokens past the last one kept; its logits become the session's.
      truncate_session(s, start + static_cast<uint32_t>(kept) + 1, sink);
      std::memcpy(s.state.logits, s.draft_logits + kept * vocab, vocab * sizeof(float));
      s.has_logits = true;
    }
    s.generate_totals.generated = reply.generated;
    if (done) break;
    if (stopped) return aborted(s, "tokens to generate", reply.generated, max_new_tokens);
  }
  s.generate_totals.generated = reply.generated;
  return MOTE_OK;
}

}  // namespace mote

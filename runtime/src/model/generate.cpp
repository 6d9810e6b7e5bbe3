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
  grammar::Grammar *grammar = nullptr;  // the generation's grammar (null: none), drafts are checked against it
  bool forced = false;                  // fast-forward through what the grammar forces
  DraftStats grammar_stats;
  bool lookup = false;
  DraftStats lookup_stats[2];  // after a match of one token (with a grammar only), and of more
  DraftStats text_stats;       // lookup by bytes (with fast-forward)
  int32_t lookup_shadow = -1;  // the first token of the last lookup proposal left unchecked (-1: none)
  size_t lookup_shadow_length = 0;
  Session *model = nullptr;  // the draft model's session (null: none)
  DraftStats model_stats;
  float model_cost = 0.0f;  // one draft-model decode step relative to one of the target's
  float p_min = 0.0f;
};

// The most bytes grammar fast-forward drafts at once (a schema's longest keys run to ~30).
constexpr size_t kMaxForcedBytes = 48;

// A draft model's acceptance before its first checked draft: it is tried from the first step and
// measured there. One that stops paying is not tried again in the generation: a try would cost
// its catching up on every token since, and free text must not pay for it.
constexpr float kDraftModelTrust = 0.95f;

// Reading a token it has not seen (the prompt at its first call, every token since at a retry)
// costs the draft model a prompt token's share of its decode step: Qwen2.5-Coder-0.5B at 1
// thread, pp512 472.5 against tg64 72.4 tok/s, 0.15 (0.11 at 2 threads: 825.7 / 89.3). Unpriced,
// a 1151-token prompt (document QA) made `auto` read it all for a few drafts: 20.8 tok/s against
// 52.5 without the draft model (bench/README.md log, 2026-12-07 04:40).
constexpr float kDraftCatchUpTokenCost = 0.15f;

// A draft-model call's cost in its decode steps: the catching-up batch (the tokens kept since
// its last call and the sampled one) and the top probability over the vocabulary (Qwen2.5-Coder
// 1.5B with the 0.5B, 1 thread, AMD Zen 5: 0.62 of a target step a call against a bytes ratio
// of 0.44).
constexpr float kDraftModelCallCost = 1.4f;

// The weight bytes a decoding step of s reads when its classifier computes `classified` rows:
// every tensor but all rows less one of a token embedding that is not the classifier.
double decode_bytes(const Session &s, size_t classified) {
  const Matrix &embedding = s.weights.token_embedding, &classifier = s.weights.classifier;
  double bytes = static_cast<double>(s.model.view.weight_bytes);
  if (embedding.data != nullptr && embedding.data != classifier.data) {
    bytes -= static_cast<double>(embedding.rows - 1) * static_cast<double>(embedding.row_bytes);
  }
  if (classified < classifier.rows) {
    bytes -= static_cast<double>(classifier.rows - classified) * static_cast<double>(classifier.row_bytes);
  }
  return bytes;
}

// While a session drafts for a generation its classifier reads the draft vocabulary only
// (Session::draft_vocabulary); after the generation it classifies in full again, and logits
// left partial are not there to be sampled (the next use runs its last token again).
class DraftVocabularyScope {
 public:
  explicit DraftVocabularyScope(Session *draft) : draft_(draft) {
    if (draft_ != nullptr) draft_->draft_vocabulary = kDraftVocabulary;
  }
  ~DraftVocabularyScope() {
    if (draft_ == nullptr) return;
    draft_->draft_vocabulary = 0;
    if (draft_->partial_logits) draft_->has_logits = false;
    draft_->partial_logits = false;
  }
  DraftVocabularyScope(const DraftVocabularyScope &) = delete;
  DraftVocabularyScope &operator=(const DraftVocabularyScope &) = delete;

 private:
  Session *draft_;
};

Status start_drafters(Session &s, const mote_sampler_options &o, grammar::Grammar *g, Session *draft, Drafters *d) {
  *d = Drafters{};
  const bool can_check = s.backend->prefill_logits != nullptr && s.draft_capacity > 0;
  if (o.draft == MOTE_DRAFT_NONE || !can_check) return MOTE_OK;
  d->max = o.draft_max < s.draft_capacity ? o.draft_max : s.draft_capacity;
  d->min = o.draft_min > 1 ? o.draft_min : 1;
  d->adaptive = o.draft == MOTE_DRAFT_AUTO;
  d->lookup = o.draft != MOTE_DRAFT_MODEL;
  d->grammar = g;
  // Forced bytes become tokens through the model's own encoder: byte-level BPE encodes a piece of
  // text as it would inside the reply (SentencePiece would open it with its dummy-prefix space).
  d->forced = o.draft == MOTE_DRAFT_AUTO && g != nullptr && has_byte_level_tokenizer(s.model);
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
  // A draft model is given to draft: it starts trusted, and its first drafts measure it.
  d->model_stats.accept = kDraftModelTrust;
  // Decoding reads every weight once: the bytes are the steps' cost ratio on a memory-bound CPU
  // (the draft's classifier reads its draft vocabulary; the cache's tokens add a few percent).
  const double target_bytes = decode_bytes(s, s.weights.classifier.rows);
  d->model_cost = static_cast<float>(decode_bytes(*draft, kDraftVocabulary) / (target_bytes > 0 ? target_bytes : 1));
  d->p_min = o.draft_p_min;
  return MOTE_OK;
}

// Brings the draft model's cache to tokens[0, n) with the logits after the last one, running only
// what differs from what it holds (in one batch). False when they do not fit its context.
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
  // A logit more than kNegligible below the top adds less than 1e-45 of it (2^18 of them less
  // than 1e-39): left out, which also skips the draft vocabulary's unclassified rows.
  constexpr float kNegligible = 104.0f;
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) {
    if (logits[i] >= max - kNegligible) sum += std::exp(static_cast<double>(logits[i] - max));
  }
  return static_cast<float>(1.0 / sum);
}

// The most bytes a draft's tokens may spell when a grammar checks them.
constexpr size_t kMaxDraftBytes = kMaxForcedPrefix;

// The draft of one step, built in the session's history after the sampled token (the checking
// pass writes those positions anyway) from runs of several drafters: a grammar's forced text,
// then what prompt lookup or the draft model says follows it, then the grammar again, and so on.
struct Draft {
  int32_t *history;  // the session's tokens; the sampled one at start, the drafts after it
  size_t start = 0, k = 0, available = 0;
  struct Run {
    DraftStats *by;
    size_t end;  // the run is the drafts before end, after the run before it
  };
  Run runs[MOTE_MAX_DRAFT];
  size_t n_runs = 0;
  char bytes[kMaxDraftBytes];  // what the drafts spell (kept only with a grammar)
  size_t n_bytes = 0;
  // The forced text past the drafts that fast-forward left out (the next token starts with it).
  char pending[kMaxForcedBytes];
  size_t n_pending = 0;
  DraftGain gain;

  int32_t *end() { return history + start + 1 + k; }
  size_t context() const { return start + 1 + k; }  // the tokens so far, sampled and drafted
  size_t room() const { return available - k; }
};

// The piece token spells after prev, as the grammar reads it.
void grammar_piece(const Session &s, int32_t prev, int32_t token, char *byte, const char **piece, size_t *n) {
  piece_for(s.model.view.tokenizer, prev, token, byte, piece, n);
}

// How many of the n tokens at the draft's end (written there, not yet counted) the grammar
// admits after the drafts before them; all n without a grammar.
size_t admitted(const Session &s, grammar::Grammar *g, const Draft &d, size_t n) {
  if (g == nullptr) return n;
  char text[kMaxDraftBytes];
  std::memcpy(text, d.bytes, d.n_bytes);
  size_t used = d.n_bytes;
  grammar::TokenChecker checker(*g, uint64_t{1} << 20);
  const int32_t *before = d.history + d.start + d.k;  // before[i]: the token before token i
  const int32_t *tokens = before + 1;
  for (size_t i = 0; i < n; ++i) {
    if (ends_generation(s.model, tokens[i])) return i;  // the grammar takes no bytes for it
    char byte = 0;
    const char *piece = nullptr;
    size_t len = 0;
    grammar_piece(s, before[i], tokens[i], &byte, &piece, &len);
    if (used + len > sizeof text) return i;
    std::memcpy(text + used, piece, len);
    used += len;
    if (checker.check(text, used) != grammar::Check::kAllowed) return i;
  }
  return n;
}

// Counts the n tokens at the draft's end as drafted by `by`.
void append(const Session &s, Draft &d, DraftStats *by, size_t n) {
  if (n == 0) return;
  d.n_pending = 0;  // the forced text's tokens, if they were, are drafted now
  for (size_t i = 0; i < n; ++i) {
    const size_t at = d.start + 1 + d.k + i;
    char byte = 0;
    const char *piece = nullptr;
    size_t len = 0;
    grammar_piece(s, d.history[at - 1], d.history[at], &byte, &piece, &len);
    if (d.n_bytes + len > sizeof d.bytes) len = 0;  // only with a grammar, which admitted these bytes
    std::memcpy(d.bytes + d.n_bytes, piece, len);
    d.n_bytes += len;
  }
  d.k += n;
  if (d.n_runs > 0 && d.runs[d.n_runs - 1].by == by) {
    d.runs[d.n_runs - 1].end = d.k;
  } else {
    d.runs[d.n_runs++] = Draft::Run{by, d.k};
  }
}

// Of n proposed tokens, how many the gate lets into the draft (all when not adaptive).
size_t gate(const Drafters &dr, Draft &d, const DraftStats &stats, size_t n, float cost_per_token) {
  if (!dr.adaptive) return n;
  return extend_draft(d.gain, stats, n, cost_per_token);
}

// Grammar fast-forward: the text the grammar forces after the draft, as the model would tokenize
// it, less the last token (the text after it may merge into it). True when it drafted.
bool draft_forced(const Session &s, Drafters &dr, Draft &d) {
  char forced[kMaxForcedBytes];
  const size_t space = sizeof d.bytes - d.n_bytes;  // the drafts' bytes must stay whole for the checks
  const size_t n_forced =
      grammar_forced_bytes(*dr.grammar, d.bytes, d.n_bytes, forced, space < sizeof forced ? space : sizeof forced);
  if (n_forced == 0) return false;
  int32_t pieces[kMaxForcedBytes];
  size_t n_pieces = 0;
  const TextSpan span{forced, n_forced};
  if (encode_byte_level(dr.grammar->tokenizer, &span, 1, false, pieces, kMaxForcedBytes, &n_pieces) != MOTE_OK ||
      n_pieces < 2) {
    return false;
  }
  size_t n = n_pieces - 1 < d.room() ? n_pieces - 1 : d.room();
  n = gate(dr, d, dr.grammar_stats, n, kCheckedTokenCost);
  std::memcpy(d.end(), pieces, n * sizeof(int32_t));
  const size_t bytes_before = d.n_bytes;
  append(s, d, &dr.grammar_stats, n);
  if (n > 0) {
    const size_t spelled = d.n_bytes - bytes_before;
    d.n_pending = spelled < n_forced ? n_forced - spelled : 0;
    std::memcpy(d.pending, forced + (n_forced - d.n_pending), d.n_pending);
  }
  return n > 0;
}

// The most tokens back that a left-out forced text is looked for.
constexpr size_t kPendingLookback = 4096;

// Where the forced text that fast-forward left out (d.pending) was written before as the start
// of a token the grammar admits here (a key's closing quote as '":'): the latest such place, or
// 0. The model writes a schema's structure the same way each time.
size_t pending_place(const Session &s, grammar::Grammar *g, Draft &d) {
  if (d.n_pending == 0 || g == nullptr) return 0;
  const size_t end = d.context();
  const size_t first = end > kPendingLookback ? end - kPendingLookback : 1;
  for (size_t j = end - 1; j >= first; --j) {
    char byte = 0;
    const char *piece = nullptr;
    size_t len = 0;
    grammar_piece(s, d.history[j - 1], d.history[j], &byte, &piece, &len);
    if (len < d.n_pending || std::memcmp(piece, d.pending, d.n_pending) != 0) continue;
    d.end()[0] = d.history[j];
    if (admitted(s, g, d, 1) == 1) return j;
  }
  return 0;
}

// How many places prompt lookup weighs when a grammar can tell which continuation fits.
constexpr size_t kLookupPlaces = 4;

// Prompt lookup after the draft, as far as the grammar admits it. With a grammar, a single
// token's match counts too, and of the places found the one whose continuation the grammar
// admits furthest wins (a schema's structure repeats: what followed this token the last time it
// fit here). True when it drafted.
bool draft_lookup(const Session &s, Drafters &dr, Draft &d) {
  size_t places[kLookupPlaces], lengths[kLookupPlaces];
  const size_t n_found = lookup_places(d.history, d.context(), dr.grammar != nullptr ? 1 : kLookupMinNgram, places,
                                       lengths, kLookupPlaces);
  size_t best = 0, fits = 0;
  size_t n_places = n_found;
  if (dr.grammar != nullptr && d.n_pending > 0) {
    // After left-out forced text the match that counts is that text, not the tokens before it.
    const size_t place = pending_place(s, dr.grammar, d);
    n_places = place > 0 ? 1 : 0;
    places[0] = place;
    lengths[0] = 1;
  }
  for (size_t p = 0; p < n_places; ++p) {
    size_t found = d.context() - places[p];
    if (found > d.room()) found = d.room();
    std::memmove(d.end(), d.history + places[p], found * sizeof(int32_t));
    const size_t n = admitted(s, dr.grammar, d, found);
    if (n > fits) {
      best = p;
      fits = n;
    }
    if (dr.grammar == nullptr || n == found) break;
  }
  if (fits == 0) return false;
  if (n_places > 1) std::memmove(d.end(), d.history + places[best], fits * sizeof(int32_t));
  const int32_t first = d.end()[0];
  DraftStats &stats = dr.lookup_stats[lengths[best] > 1 ? 1 : 0];
  const size_t n = gate(dr, d, stats, fits, kCheckedTokenCost);
  // A proposal at the draft's start that the gate turned down is scored against what comes.
  if (d.k == 0 && n == 0) {
    dr.lookup_shadow = first;
    dr.lookup_shadow_length = lengths[best] > 1 ? 1 : 0;
  }
  append(s, d, &stats, n);
  return n > 0;
}

// Lookup by bytes: the context's last bytes that it reads (at most this many), the shortest and
// longest match of its end, and the most bytes proposed after a match.
constexpr size_t kTextWindow = 4096;
constexpr size_t kTextMinMatch = 3, kTextMaxMatch = 32;
constexpr size_t kTextProposal = 48;

// Prompt lookup by bytes, where fast-forward is on (a grammar, byte-level BPE): the text after the
// latest earlier occurrence of the longest end of the text so far, tokenized by the model's
// encoder, less the last token. A reply quotes its prompt in other tokens than the prompt's
// ('"recycled' against ' recycled', so token lookup fails on a quoted value's first tokens);
// the bytes match where the tokens do not. True when it drafted.
bool draft_text_lookup(const Session &s, Drafters &dr, Draft &d) {
  char text[kTextWindow];
  size_t from = sizeof text;
  for (size_t j = d.context(); j > 1; --j) {
    char byte = 0;
    const char *piece = nullptr;
    size_t len = 0;
    grammar_piece(s, d.history[j - 2], d.history[j - 1], &byte, &piece, &len);
    if (len > from) break;
    from -= len;
    std::memcpy(text + from, piece, len);
  }
  const char *t = text + from;
  const size_t n = sizeof text - from;
  size_t best = 0, best_end = 0;
  for (size_t e = n > 0 ? n - 1 : 0; e > kTextMinMatch && best < kTextMaxMatch; --e) {
    size_t m = 0;
    while (m < kTextMaxMatch && m < e && t[e - 1 - m] == t[n - 1 - m]) ++m;
    if (m > best) {
      best = m;
      best_end = e;
    }
  }
  if (best < kTextMinMatch) return false;
  const TextSpan span{t + best_end, n - best_end < kTextProposal ? n - best_end : kTextProposal};
  int32_t pieces[kTextProposal];
  size_t n_pieces = 0;
  if (encode_byte_level(s.model.view.tokenizer, &span, 1, false, pieces, kTextProposal, &n_pieces) != MOTE_OK ||
      n_pieces < 2) {
    return false;
  }
  size_t found = n_pieces - 1 < d.room() ? n_pieces - 1 : d.room();
  std::memcpy(d.end(), pieces, found * sizeof(int32_t));
  found = admitted(s, dr.grammar, d, found);
  const size_t k = gate(dr, d, dr.text_stats, found, kCheckedTokenCost);
  append(s, d, &dr.text_stats, k);
  return k > 0;
}

// The draft model's greedy tokens after the draft, while it gives them p_min, the grammar admits
// them and the gate expects them to pay; with a grammar one at a time, so that the grammar's
// forced text and prompt lookup come in between (the draft model then reads their tokens in one
// batch instead of drafting them). Whether to run it at all is judged by its acceptance so far,
// each token by the probability it gives the token (a close draft model's confidence predicts
// the target's agreement better than an average does). True when it drafted.
bool draft_model(const Session &s, Drafters &dr, Draft &d, bool *tried) {
  size_t max = d.room();
  if (dr.grammar != nullptr && max > 1) max = 1;
  // A call's first token costs the catching-up pass too (~1.4 decode steps of the draft model a
  // call, the catching-up batch and the top probability), and every token past the draft
  // model's position (the whole prompt at its first call).
  Session &m = *dr.model;
  const size_t unread = d.context() > m.position ? d.context() - m.position : 0;
  const float first_cost =
      kCheckedTokenCost + (kDraftModelCallCost + kDraftCatchUpTokenCost * static_cast<float>(unread)) * dr.model_cost;
  const float cost = kCheckedTokenCost + dr.model_cost;
  if (dr.adaptive && !*tried) {
    DraftGain trial = d.gain;
    if (extend_draft(trial, dr.model_stats, 1, first_cost) == 0) return false;
  }
  *tried = true;
  if (!sync_draft_model(m, d.history, d.context())) return false;
  const size_t vocab = m.model.view.config.vocab_size;
  size_t n = 0;
  bool model_declined = false;  // its top token was unlikely or broke the grammar (not the gate's no)
  while (n < max) {
    int32_t top = -1;
    DraftStats confidence;
    confidence.accept = top_probability(m.state.logits, vocab, &top);
    model_declined = confidence.accept < dr.p_min || top < 0;
    if (model_declined) break;
    if (dr.adaptive && extend_draft(d.gain, confidence, 1, n == 0 ? first_cost : cost) == 0) break;
    d.end()[n] = top;
    model_declined = admitted(s, dr.grammar, d, n + 1) <= n;
    if (model_declined) break;
    ++n;
    // The next token's logits only when it drafts on (the next sync reads this one in a batch).
    if (n == max || m.position >= m.context_length || prefill(m, &top, 1, PrefillRequest{false, 0, nullptr}) != MOTE_OK)
      break;
  }
  append(s, d, &dr.model_stats, n);
  // A run the model itself ended before its first token cost its catching up for nothing: a miss
  // for the decision to run (where the gate ended it, the draft before it had reached too far).
  if (n == 0 && model_declined && dr.adaptive) record_shadow(dr.model_stats, false);
  return n > 0;
}

// Drafts the tokens that may follow the sampled one at history[start], at most available, and
// says which drafter wrote which (d->runs). Each drafter continues from what the ones before it
// drafted, as long as one has more and the gate expects the longer pass to pay.
void draft_tokens(const Session &s, Drafters &dr, int32_t *history, size_t start, size_t available, Draft *d) {
  d->history = history;
  d->start = start;
  d->available = available;
  dr.lookup_shadow = -1;
  bool model_tried = false;
  while (d->room() > 0) {
    const size_t before = d->k;
    if (dr.forced) draft_forced(s, dr, *d);
    if (d->room() > 0 && dr.lookup) draft_lookup(s, dr, *d);
    if (d->k == before && d->room() > 0 && dr.lookup && dr.forced) draft_text_lookup(s, dr, *d);
    if (d->k == before && d->room() > 0 && dr.model != nullptr) draft_model(s, dr, *d, &model_tried);
    if (d->k == before) break;
  }
  if (d->k < dr.min) {
    d->k = 0;
    d->n_runs = 0;
  }
}

// After a check that kept `kept` of the drafts and looked at `checked` of them (the kept ones,
// and the first that differed when a token was sampled there), each drafter learns about its
// runs.
void record_runs(const Draft &d, size_t checked, size_t kept) {
  size_t begin = 0;
  for (size_t r = 0; r < d.n_runs; ++r) {
    const size_t end = d.runs[r].end;
    const size_t run_checked = checked > begin ? (checked < end ? checked : end) - begin : 0;
    const size_t run_kept = kept > begin ? (kept < end ? kept : end) - begin : 0;
    if (run_checked > 0) record_check(*d.runs[r].by, run_checked, run_kept);
    begin = end;
  }
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
  const DraftVocabularyScope draft_vocabulary(drafters.model);
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
    Draft draft;
    draft_tokens(s, drafters, s.history, start, available, &draft);
    const size_t k = draft.k;
    std::memcpy(step + 1, s.history + start + 1, k * sizeof(int32_t));
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
      record_shadow(drafters.lookup_stats[drafters.lookup_shadow_length],
                    shadow == (kept > 0 ? s.history[start + 1] : step[0]));
    }
    if (k > 0) {
      const size_t checked = kept < k && sampled_next ? kept + 1 : kept;
      record_runs(draft, checked, kept);
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

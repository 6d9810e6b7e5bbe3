// Sampling under a grammar: tokens that cannot continue it get a logit of -inf, then the usual
// chain picks one. Checking a token means running its bytes through the matcher, so the work is
// kept small: a table of the bytes that can start the next token rejects most of the vocabulary
// at its first byte; a sampled draw (temperature > 0) is checked alone first; greedy picks, and
// draws the grammar refuses, check tokens in order of logit, stopping at the one (or top-k's k)
// they need; only a refused draw over the whole vocabulary checks every token.
#include "sample/grammar_sample.hpp"

#include <algorithm>
#include <cmath>

#include "text/tokenizer.hpp"

namespace mote {
namespace {

bool higher_logit(const Candidate &a, const Candidate &b) {
  return a.value > b.value || (a.value == b.value && a.id < b.id);
}

class TokenFilter {
 public:
  TokenFilter(grammar::Grammar &g, int32_t prev_token) : g_(g), prev_(prev_token), complete_(grammar::is_complete(g)) {
    grammar::first_bytes(g, first_);
  }

  bool allowed(int32_t token) {
    const format::TokenizerView &tok = g_.tokenizer;
    if (token < 0 || static_cast<uint32_t>(token) >= tok.n_tokens) return false;
    if (grammar::ends_generation(g_, token)) return complete_;
    char byte = 0;
    const char *bytes = nullptr;
    size_t n = 0;
    piece_for(tok, prev_, token, &byte, &bytes, &n);
    // A token that prints nothing would let generation run on without the grammar advancing.
    if (n == 0 || !first_[static_cast<uint8_t>(bytes[0])]) return false;
    return grammar::bytes_allowed(g_, bytes, n);
  }

 private:
  grammar::Grammar &g_;
  int32_t prev_;
  bool complete_;
  bool first_[256];
};

// Masks every token but the `want` most probable allowed ones, looking at tokens in order of
// logit (sorted chunk by chunk, so a greedy pick sorts only the first 64). Returns how many
// were kept.
size_t keep_best_allowed(TokenFilter &filter, float *logits, size_t n, size_t want, Candidate *scratch) {
  for (size_t i = 0; i < n; ++i) scratch[i] = Candidate{logits[i], static_cast<int32_t>(i)};
  size_t kept = 0, done = 0, chunk = std::max<size_t>(64, 2 * want);
  while (kept < want && done < n) {
    const size_t end = std::min(n, done + chunk);
    std::partial_sort(scratch + done, scratch + end, scratch + n, higher_logit);
    for (size_t j = done; j < end && kept < want; ++j) {
      if (filter.allowed(scratch[j].id)) scratch[kept++] = scratch[j];
    }
    done = end;
    chunk *= 2;
  }
  for (size_t i = 0; i < n; ++i) logits[i] = -INFINITY;
  for (size_t j = 0; j < kept; ++j) logits[scratch[j].id] = scratch[j].value;
  return kept;
}

size_t keep_all_allowed(TokenFilter &filter, float *logits, size_t n) {
  size_t kept = 0;
  for (size_t i = 0; i < n; ++i) {
    if (filter.allowed(static_cast<int32_t>(i))) {
      ++kept;
    } else {
      logits[i] = -INFINITY;
    }
  }
  return kept;
}

}  // namespace

Status sample_with_grammar(const mote_sampler_options &options, Rng &rng, float *logits, size_t n,
                           const int32_t *recent, size_t n_recent, Candidate *scratch, grammar::Grammar &g,
                           int32_t prev_token, int32_t *token, size_t *non_finite_at) {
  // The model's own NaN or inf is an error before any logit is masked with -inf.
  if (argmax(logits, n, non_finite_at) < 0) return MOTE_ERR_NUMERIC;
  // The penalty changes the order, so it comes before the search by order.
  apply_repetition_penalty(options, logits, n, recent, n_recent, scratch);
  mote_sampler_options rest = options;
  rest.repetition_penalty = 1.0f;
  TokenFilter filter(g, prev_token);
  const bool greedy = !(options.temperature > 0.0f);
  const size_t want = greedy ? 1 : options.top_k > 0 ? static_cast<size_t>(options.top_k) : n;
  if (!greedy) {
    // A draw from the unconstrained chain stands when the grammar allows it (one token checked,
    // not k or all of them; sample() leaves the logits as they are); only a refused draw masks
    // the vocabulary and draws again, as llama.cpp's sampler does.
    const int32_t first = sample(rest, rng, logits, n, nullptr, 0, scratch, non_finite_at, false);
    if (first >= 0 && filter.allowed(first)) {
      *token = first;
      return MOTE_OK;
    }
  }
  const size_t kept =
      want < n ? keep_best_allowed(filter, logits, n, want, scratch) : keep_all_allowed(filter, logits, n);
  if (kept == 0) return MOTE_ERR_GRAMMAR;
  *token = sample(rest, rng, logits, n, nullptr, 0, scratch, non_finite_at, true);
  return *token < 0 ? MOTE_ERR_NUMERIC : MOTE_OK;
}

}  // namespace mote

// Sampling under a grammar: tokens that cannot continue it get a logit of -inf, then the usual
// chain picks one. Checking a token means running its bytes through the matcher, so the work is
// kept small and bounded: a table of the bytes that can start the next token rejects most of the
// vocabulary at its first byte; a sampled draw (temperature > 0) is checked alone first; greedy
// picks and top-k check tokens in order of logit, stopping at the one (or k) they need; the rest
// (a refused draw over the whole vocabulary, or an ordered search that found too few) walks the
// vocabulary in byte order, so tokens that share a prefix share its matcher work. All checks of
// one token count against one budget of matcher steps: past it, an error, never a hang.
#include "sample/grammar_sample.hpp"

#include <algorithm>
#include <cmath>

#include "text/tokenizer.hpp"

namespace mote {
namespace {

// Tokens checked in order of logit before the walk in byte order takes over (the walk checks
// the whole vocabulary at about the cost of its trie; in logit order a token shares nothing).
constexpr size_t kMaxOrderedChecks = 1024;

bool higher_logit(const Candidate &a, const Candidate &b) {
  return a.value > b.value || (a.value == b.value && a.id < b.id);
}

class TokenFilter {
 public:
  TokenFilter(grammar::Grammar &g, int32_t prev_token, uint64_t max_steps)
      : g_(g), checker_(g, max_steps), prev_(prev_token), complete_(grammar::is_complete(g)) {
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
    const grammar::Check check = checker_.check(bytes, n);
    too_deep_ = too_deep_ || check == grammar::Check::kTooDeep;
    over_budget_ = over_budget_ || check == grammar::Check::kOverBudget;
    return check == grammar::Check::kAllowed;
  }

  // The checks ran out of matcher steps: nothing they say after that is an answer.
  bool over_budget() const { return over_budget_; }
  // Some token was refused because the matcher's bounds cut its check short.
  bool too_deep() const { return too_deep_; }

 private:
  grammar::Grammar &g_;
  grammar::TokenChecker checker_;
  int32_t prev_;
  bool complete_;
  bool too_deep_ = false, over_budget_ = false;
  bool first_[256];
};

// Masks every token but the `want` most probable allowed ones (*kept of them), looking at tokens
// in order of logit (sorted chunk by chunk, so a greedy pick sorts only the first 64). False,
// with the logits unchanged, when the first kMaxOrderedChecks (or 4 x want) tokens hold fewer.
bool keep_best_allowed(TokenFilter &filter, float *logits, size_t n, size_t want, Candidate *scratch, size_t *kept) {
  for (size_t i = 0; i < n; ++i) scratch[i] = Candidate{logits[i], static_cast<int32_t>(i)};
  const size_t most = std::min(n, std::max(kMaxOrderedChecks, 4 * want));
  size_t found = 0, done = 0, chunk = std::max<size_t>(64, 2 * want);
  while (found < want && done < most && !filter.over_budget()) {
    const size_t end = std::min(n, done + chunk);
    std::partial_sort(scratch + done, scratch + end, scratch + n, higher_logit);
    for (size_t j = done; j < end && found < want; ++j) {
      if (filter.allowed(scratch[j].id)) scratch[found++] = scratch[j];
    }
    done = end;
    chunk *= 2;
  }
  if (found < want && done < n) return false;
  for (size_t i = 0; i < n; ++i) logits[i] = -INFINITY;
  for (size_t j = 0; j < found; ++j) logits[scratch[j].id] = scratch[j].value;
  *kept = found;
  return true;
}

// Masks every token that cannot continue the grammar, checking them in byte order.
size_t keep_all_allowed(TokenFilter &filter, const format::TokenizerView &tok, float *logits, size_t n) {
  for (size_t i = tok.n_tokens; i < n; ++i) logits[i] = -INFINITY;  // logits past the vocabulary
  size_t kept = 0;
  for (uint32_t i = 0; i < tok.n_tokens && !filter.over_budget(); ++i) {
    const uint32_t id = tok.sorted_ids[i];
    if (id >= n) continue;
    if (filter.allowed(static_cast<int32_t>(id))) {
      ++kept;
    } else {
      logits[id] = -INFINITY;
    }
  }
  return kept;
}

}  // namespace

Status sample_with_grammar(const mote_sampler_options &options, Rng &rng, float *logits, size_t n,
                           const int32_t *recent, size_t n_recent, Candidate *scratch, grammar::Grammar &g,
                           int32_t prev_token, uint64_t max_steps, int32_t *token, size_t *non_finite_at,
                           ErrorSink err) {
  // The model's own NaN or inf is an error before any logit is masked with -inf.
  if (argmax(logits, n, non_finite_at) < 0) return MOTE_ERR_NUMERIC;
  // The penalty changes the order, so it comes before the search by order.
  apply_repetition_penalty(options, logits, n, recent, n_recent, scratch);
  mote_sampler_options rest = options;
  rest.repetition_penalty = 1.0f;
  TokenFilter filter(g, prev_token, max_steps);
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
  size_t kept = 0;
  if (!(want < n && keep_best_allowed(filter, logits, n, want, scratch, &kept)) && !filter.over_budget()) {
    kept = keep_all_allowed(filter, g.tokenizer, logits, n);
  }
  if (filter.over_budget()) {
    return fail(err, MOTE_ERR_GRAMMAR, "grammar: the grammar needs more than %llu matcher steps for one token",
                static_cast<unsigned long long>(max_steps));
  }
  if (kept == 0 && filter.too_deep()) {
    return fail(err, MOTE_ERR_GRAMMAR,
                "grammar: no token can continue it within the matcher's bounds (%u stack words, %u expansions a "
                "character)",
                static_cast<unsigned>(grammar::kStackWords), static_cast<unsigned>(grammar::kMaxExpansions));
  }
  if (kept == 0) return fail(err, MOTE_ERR_GRAMMAR, "grammar: no token can continue it");
  *token = sample(rest, rng, logits, n, nullptr, 0, scratch, non_finite_at, true);
  return *token < 0 ? MOTE_ERR_NUMERIC : MOTE_OK;
}

}  // namespace mote

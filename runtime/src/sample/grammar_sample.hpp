// Sampling with a grammar's mask (mote_sample_grammar's work).
#pragma once

#include "grammar/grammar.hpp"
#include "sample/sampler.hpp"

namespace mote {

// The matcher steps (stack words moved) that checking tokens may take for one sampled token, a
// second or two of work: a grammar that needs more gets an error, not a generation that seems to
// hang. Checking the whole vocabulary inside a JSON string takes 4.8 million on SmolLM2's 49,152
// tokens and 13.2 million on Qwen2.5's 151,936 (0.04 and 0.2 s); the grammar of 299
// overlapping lengths needs more than this bound for Qwen2.5 at its first token.
constexpr uint64_t kMaxGrammarSampleSteps = 1ull << 27;

// Masks the tokens that cannot continue g after prev_token (logit -inf; a token that ends
// generation is allowed only when g is complete), then samples as sample() does. Does not
// accept the token into g. MOTE_ERR_NUMERIC at a NaN or inf logit (its index in
// *non_finite_at), MOTE_ERR_GRAMMAR (with a line in err) when no token is allowed or checking
// them needs more than max_steps matcher steps. g must hold a tokenizer.
Status sample_with_grammar(const mote_sampler_options &options, Rng &rng, float *logits, size_t n,
                           const int32_t *recent, size_t n_recent, Candidate *scratch, grammar::Grammar &g,
                           int32_t prev_token, uint64_t max_steps, int32_t *token, size_t *non_finite_at,
                           ErrorSink err);

}  // namespace mote

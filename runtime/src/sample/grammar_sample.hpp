// Sampling with a grammar's mask (mote_sample_grammar's work).
#pragma once

#include "grammar/grammar.hpp"
#include "sample/sampler.hpp"

namespace mote {

// Masks the tokens that cannot continue g after prev_token (logit -inf; a token that ends
// generation is allowed only when g is complete), then samples as sample() does. Does not
// accept the token into g. MOTE_ERR_NUMERIC at a NaN or inf logit (its index in
// *non_finite_at), MOTE_ERR_GRAMMAR when no token is allowed. g must hold a tokenizer.
Status sample_with_grammar(const mote_sampler_options &options, Rng &rng, float *logits, size_t n,
                           const int32_t *recent, size_t n_recent, Candidate *scratch, grammar::Grammar &g,
                           int32_t prev_token, int32_t *token, size_t *non_finite_at);

}  // namespace mote

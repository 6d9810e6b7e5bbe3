// Samplers over a logits vector and the seeded random number generator they use.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mote/mote.h"

namespace mote {

// PCG32 (O'Neill): small state, good statistics, the same stream on every platform.
struct Rng {
  uint64_t state = 0;
  uint64_t increment = 1;
};
void rng_seed(Rng &rng, uint64_t seed);
uint32_t rng_next_u32(Rng &rng);
float rng_next_float(Rng &rng);  // uniform in [0, 1)

struct Candidate {
  float value;  // logit, then probability
  int32_t id;
};

// Index of the largest logit (the lowest index wins ties). -1 when n is 0, or at the first
// NaN or inf (its index then goes to *non_finite_at, which may be null): one pass does both.
// masked: -inf marks a token the caller excluded (a grammar's mask), not an error.
int32_t argmax(const float *logits, size_t n, size_t *non_finite_at = nullptr, bool masked = false);

// CTRL's repetition penalty over the last repetition_last_n of recent (the first step of sample;
// a caller that masks logits by their order applies it first). scratch holds n candidates.
void apply_repetition_penalty(const mote_sampler_options &options, float *logits, size_t n, const int32_t *recent,
                              size_t n_recent, Candidate *scratch);

// Picks a token: repetition penalty over recent[0..n_recent), then greedy when temperature is
// 0, otherwise temperature, top-k, top-p and min-p filtering and a draw from rng.
// logits is modified in place; scratch holds n candidates (from the session arena). Returns -1
// when n is 0, or when a logit is NaN or inf (its index then goes to *non_finite_at, which may
// be null; the check is part of the max search). Option edge cases (0, negative, > 1) are
// listed at the top of sampler.cpp. masked: -inf logits are excluded tokens (at least one must
// be finite); NaN and +inf are still errors.
int32_t sample(const mote_sampler_options &options, Rng &rng, float *logits, size_t n, const int32_t *recent,
               size_t n_recent, Candidate *scratch, size_t *non_finite_at = nullptr, bool masked = false);

}  // namespace mote

// The seeded PCG32 generator and the sampling chain: repetition penalty, temperature, top-k,
// top-p, min-p, then one draw.
//
// Determinism: the same seed and logits give the same token on every platform. Every step runs
// in a fixed order; sorts break ties by id so their result is unique; sums are in double; a
// non-greedy sample takes exactly one number from the generator, a greedy one takes none.
//
// Option conventions (llama.cpp's): repetition_penalty 1 (or anything not > 0) is off;
// repetition_last_n 0 is off, negative means all of recent, otherwise the last that many
// entries of recent; temperature not > 0 is greedy; top_k <= 0 or >= n is off; top_p >= 1 is
// off (<= 0 keeps only the top token); min_p <= 0 is off (> 1 keeps only the top tokens).
// Out-of-range ids in recent are ignored.
//
// Non-finite logits (NaN, +-inf) are an error, never a token: the pass that searches the maximum
// (argmax, or the softmax's max) checks each logit as it reads it and stops at the first bad one.
#include "sample/sampler.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>

namespace mote {
namespace {

// PCG32's fixed stream selector: pcg32-demo's default, so its published outputs check ours.
constexpr uint64_t kStream = 54;
constexpr uint64_t kMultiplier = 6364136223846793005ULL;

bool more_probable(const Candidate &a, const Candidate &b) {
  return a.value > b.value || (a.value == b.value && a.id < b.id);
}

double total_mass(const Candidate *c, size_t count) {
  double sum = 0.0;
  for (size_t i = 0; i < count; ++i) sum += c[i].value;
  return sum;
}

// Keeps, in order, the candidates with value >= threshold; returns how many.
size_t keep_at_least(Candidate *c, size_t count, float threshold) {
  size_t kept = 0;
  for (size_t i = 0; i < count; ++i) {
    if (c[i].value >= threshold) c[kept++] = c[i];
  }
  return kept;
}

enum class Softmax { ok, all_underflow, non_finite };

// A logit the sampler refuses: NaN or inf, except -inf where the caller masked tokens with it.
bool is_bad_logit(float value, bool masked) { return !std::isfinite(value) && !(masked && value == -INFINITY); }

// Fills c with softmax(logits / temperature). The max search checks every logit: non_finite
// (with *bad its index) at the first NaN or inf; all_underflow when every finite logit divided
// by a tiny temperature is -inf.
Softmax softmax_candidates(const float *logits, size_t n, float temperature, Candidate *c, size_t *bad, bool masked) {
  float max_value = -INFINITY;
  for (size_t i = 0; i < n; ++i) {
    if (is_bad_logit(logits[i], masked)) {
      *bad = i;
      return Softmax::non_finite;
    }
    const float value = logits[i] / temperature;  // may overflow to +-inf for a tiny temperature
    c[i] = {value, static_cast<int32_t>(i)};
    if (value > max_value) max_value = value;
  }
  if (max_value == -INFINITY) return Softmax::all_underflow;
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) {
    // The equality case keeps +inf logits finite (inf - inf would be NaN).
    const float weight = c[i].value == max_value ? 1.0f : std::exp(c[i].value - max_value);
    c[i].value = weight;
    sum += weight;
  }
  for (size_t i = 0; i < n; ++i) c[i].value = static_cast<float>(c[i].value / sum);
  return Softmax::ok;
}

// Nucleus: the smallest most-probable prefix holding top_p of the mass. c must hold all n
// softmax candidates (mass 1) unless already_sorted.
size_t apply_top_p(Candidate *c, size_t count, float top_p, bool already_sorted) {
  // The target is a share of all the candidates' mass, taken before any are dropped below.
  const double target = static_cast<double>(top_p) * total_mass(c, count);
  if (!already_sorted) {
    // A candidate below (1 - p) / (count - 1) can never be inside the nucleus: the ones from it
    // on would hold less than 1 - p. Dropping them first keeps the sort short. If even the top
    // one is below (p * count < 1), nothing can be dropped this way.
    if (count > 1) {
      const float cutoff = (1.0f - top_p) / static_cast<float>(count - 1);
      const size_t kept = keep_at_least(c, count, cutoff);
      if (kept > 0) count = kept;
    }
    std::sort(c, c + count, more_probable);
  }
  double cumulative = 0.0;
  for (size_t i = 0; i < count; ++i) {
    cumulative += c[i].value;
    if (cumulative >= target) return i + 1;
  }
  return count;
}

size_t apply_min_p(Candidate *c, size_t count, float min_p) {
  float top = 0.0f;
  for (size_t i = 0; i < count; ++i) top = std::max(top, c[i].value);
  const float threshold = std::min(min_p * top, top);  // the top token always stays
  return keep_at_least(c, count, threshold);
}

int32_t draw(Rng &rng, const Candidate *c, size_t count) {
  const double target = static_cast<double>(rng_next_float(rng)) * total_mass(c, count);
  double cumulative = 0.0;
  size_t last_probable = 0;
  for (size_t i = 0; i < count; ++i) {
    cumulative += c[i].value;
    if (target < cumulative) return c[i].id;
    if (c[i].value > 0.0f) last_probable = i;
  }
  return c[last_probable].id;  // rounding left target at the very end (never a masked token)
}

}  // namespace

// CTRL's penalty, once per distinct token: positive logits shrink, negative ones grow.
// scratch[id].id flags the tokens already penalized (only the window's entries are touched).
void apply_repetition_penalty(const mote_sampler_options &options, float *logits, size_t n, const int32_t *recent,
                              size_t n_recent, Candidate *scratch) {
  const float penalty = options.repetition_penalty;
  if (!(penalty > 0.0f) || penalty == 1.0f || !std::isfinite(penalty)) return;
  if (recent == nullptr || options.repetition_last_n == 0) return;
  size_t window = n_recent;
  if (options.repetition_last_n > 0 && static_cast<size_t>(options.repetition_last_n) < n_recent) {
    window = static_cast<size_t>(options.repetition_last_n);
  }
  const int32_t *first = recent + (n_recent - window);
  auto in_range = [n](int32_t id) { return id >= 0 && static_cast<size_t>(id) < n; };
  for (size_t i = 0; i < window; ++i) {
    if (in_range(first[i])) scratch[first[i]].id = 0;
  }
  for (size_t i = 0; i < window; ++i) {
    const int32_t id = first[i];
    if (!in_range(id) || scratch[id].id != 0) continue;
    scratch[id].id = 1;
    const float scaled = logits[id] > 0.0f ? logits[id] / penalty : logits[id] * penalty;
    // A finite logit stays finite (a large penalty saturates), so the check after this one
    // still reports only what the model produced.
    logits[id] = std::isfinite(logits[id]) && !std::isfinite(scaled) ? std::copysign(FLT_MAX, scaled) : scaled;
  }
}

void rng_seed(Rng &rng, uint64_t seed) {
  // pcg32_srandom: start from zero on the chosen stream, step, add the seed, step.
  rng.state = 0;
  rng.increment = (kStream << 1) | 1;
  rng_next_u32(rng);
  rng.state += seed;
  rng_next_u32(rng);
}

uint32_t rng_next_u32(Rng &rng) {
  const uint64_t old = rng.state;
  rng.state = old * kMultiplier + rng.increment;
  // XSH-RR output: xorshift the high bits down, then rotate by the top five bits.
  const uint32_t xorshifted = static_cast<uint32_t>(((old >> 18) ^ old) >> 27);
  const uint32_t rotation = static_cast<uint32_t>(old >> 59);
  return (xorshifted >> rotation) | (xorshifted << ((32 - rotation) & 31));
}

float rng_next_float(Rng &rng) {
  // The top 24 bits: every value is exactly representable and below 1.
  return static_cast<float>(rng_next_u32(rng) >> 8) * (1.0f / 16777216.0f);
}

int32_t argmax(const float *logits, size_t n, size_t *non_finite_at, bool masked) {
  if (n == 0) return -1;
  size_t best = 0;
  for (size_t i = 0; i < n; ++i) {
    if (is_bad_logit(logits[i], masked)) {
      if (non_finite_at != nullptr) *non_finite_at = i;
      return -1;
    }
    if (logits[i] > logits[best]) best = i;  // strictly greater keeps the lowest index on ties
  }
  return static_cast<int32_t>(best);
}

int32_t sample(const mote_sampler_options &options, Rng &rng, float *logits, size_t n, const int32_t *recent,
               size_t n_recent, Candidate *scratch, size_t *non_finite_at, bool masked) {
  if (n == 0) return -1;
  apply_repetition_penalty(options, logits, n, recent, n_recent, scratch);
  if (!(options.temperature > 0.0f)) return argmax(logits, n, non_finite_at, masked);
  size_t bad = 0;
  switch (softmax_candidates(logits, n, options.temperature, scratch, &bad, masked)) {
    case Softmax::non_finite:
      if (non_finite_at != nullptr) *non_finite_at = bad;
      return -1;
    case Softmax::all_underflow:
      return argmax(logits, n, non_finite_at, masked);
    case Softmax::ok:
      break;
  }

  size_t count = n;
  bool sorted = false;
  if (options.top_k > 0 && static_cast<size_t>(options.top_k) < count) {
    const size_t k = static_cast<size_t>(options.top_k);
    std::partial_sort(scratch, scratch + k, scratch + count, more_probable);
    count = k;
    sorted = true;
  }
  if (options.top_p < 1.0f) {
    count = apply_top_p(scratch, count, std::max(options.top_p, 0.0f), sorted);
  }
  if (options.min_p > 0.0f) count = apply_min_p(scratch, count, options.min_p);
  return draw(rng, scratch, count);
}

}  // namespace mote

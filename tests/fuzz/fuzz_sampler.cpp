// The sampler over arbitrary logits and options: a token inside the vocabulary when every logit
// is finite, else -1 with the first non-finite logit's index. Never a crash, whatever the options.
#include <cmath>

#include "fuzz_support.hpp"
#include "sample/sampler.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mote_sampler_options options{};
  constexpr size_t kOptionBytes = 4 * 6 + 8;  // five 32-bit fields, the seed, 4 bytes of recent
  if (size < kOptionBytes + 4) return 0;
  std::memcpy(&options.temperature, data, 4);
  std::memcpy(&options.top_k, data + 4, 4);
  std::memcpy(&options.top_p, data + 8, 4);
  std::memcpy(&options.min_p, data + 12, 4);
  std::memcpy(&options.repetition_penalty, data + 16, 4);
  std::memcpy(&options.seed, data + 20, 8);
  options.repetition_last_n = static_cast<int8_t>(data[28]);
  const size_t n = (size - kOptionBytes) / 4;
  if (n > 65536) return 0;
  std::vector<float> logits(n);
  std::memcpy(logits.data(), data + kOptionBytes, n * 4);
  const int32_t recent[3] = {static_cast<int8_t>(data[29]), data[30], static_cast<int32_t>(n) - 1};
  char message[128];
  mote_sampler_options_validate(&options, message, sizeof message);
  size_t first_bad = n;
  for (size_t i = 0; i < n && first_bad == n; ++i) {
    if (!std::isfinite(logits[i])) first_bad = i;
  }
  std::vector<mote::Candidate> scratch(n);
  mote::Rng rng;
  mote::rng_seed(rng, options.seed);
  size_t reported = n;
  const int32_t token = mote::sample(options, rng, logits.data(), n, recent, 3, scratch.data(), &reported);
  if (first_bad == n) {
    FUZZ_CHECK(token >= 0 && static_cast<size_t>(token) < n);
  } else {
    FUZZ_CHECK(token == -1 && reported == first_bad);
  }
  return 0;
}

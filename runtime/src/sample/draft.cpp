#include "sample/draft.hpp"

namespace mote {
namespace {

// Weight of the newest event in DraftStats::accept: about the last 10 tokens count.
constexpr float kAcceptRate = 0.1f;

void record(DraftStats &stats, bool hit) { stats.accept += kAcceptRate * ((hit ? 1.0f : 0.0f) - stats.accept); }

}  // namespace

void record_check(DraftStats &stats, size_t drafted, size_t accepted) {
  stats.drafted += drafted;
  stats.accepted += accepted;
  for (size_t i = 0; i < accepted; ++i) record(stats, true);
  if (accepted < drafted) record(stats, false);  // the tokens after the miss were never in question
}

void record_shadow(DraftStats &stats, bool hit) { record(stats, hit); }

size_t draft_length(const DraftStats &stats, size_t available, float cost_per_token) {
  // Tokens a pass yields: the sampled one, plus drafted token j when it and all before it hold.
  float expected = 1.0f, all_held = 1.0f, best = 1.0f;
  size_t best_length = 0;
  for (size_t k = 1; k <= available; ++k) {
    all_held *= stats.accept;
    expected += all_held;
    const float per_cost = expected / (1.0f + cost_per_token * static_cast<float>(k));
    if (per_cost > best) {
      best = per_cost;
      best_length = k;
    }
  }
  return best_length;
}

size_t lookup_draft(const int32_t *tokens, size_t n_tokens, size_t max, int32_t *out) {
  if (n_tokens <= kLookupMinNgram || max == 0) return 0;
  // One backward scan: at each earlier end position, how many of the last tokens match there;
  // the latest position of the longest match wins (recent text predicts best).
  size_t best_end = 0, best_match = 0;
  for (size_t end = n_tokens - 1; end >= kLookupMinNgram && best_match < kLookupMaxNgram; --end) {
    size_t match = 0;
    while (match < kLookupMaxNgram && match < end && tokens[end - 1 - match] == tokens[n_tokens - 1 - match]) ++match;
    if (match >= kLookupMinNgram && match > best_match) {
      best_match = match;
      best_end = end;
    }
  }
  if (best_match == 0) return 0;
  size_t n = 0;
  for (size_t i = best_end; i < n_tokens && n < max; ++i) out[n++] = tokens[i];
  return n;
}

size_t grammar_forced_bytes(grammar::Grammar &g, char *out, size_t max) {
  if (grammar::is_complete(g)) return 0;
  bool first[256];
  grammar::first_bytes(g, first);
  // Each check shares the matcher work of the bytes before it: about one step per byte tried.
  grammar::TokenChecker checker(g, uint64_t{1} << 20);
  size_t n = 0;
  while (n < max) {
    int only = -1;
    for (int b = 0; b < 256; ++b) {
      if (n == 0 && !first[b]) continue;
      out[n] = static_cast<char>(b);
      const grammar::Check check = checker.check(out, n + 1);
      if (check == grammar::Check::kOverBudget) return n;
      if (check != grammar::Check::kAllowed) continue;
      if (only >= 0) return n;  // a second byte fits: a choice
      only = b;
    }
    if (only < 0) return n;  // nothing fits: the grammar ends here
    out[n++] = static_cast<char>(only);
  }
  return n;
}

}  // namespace mote

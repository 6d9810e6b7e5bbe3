#include "sample/draft.hpp"

#include <cstring>

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

size_t lookup_places(const int32_t *tokens, size_t n_tokens, size_t min_ngram, size_t *places, size_t *lengths,
                     size_t max_places) {
  if (min_ngram == 0) min_ngram = 1;
  if (n_tokens <= min_ngram || max_places == 0) return 0;
  // One backward scan: at each earlier end position, how many of the last tokens match there;
  // the first (latest) position seen for each match length is that length's place.
  size_t latest[kLookupMaxNgram + 1] = {};
  size_t longest = 0;
  for (size_t end = n_tokens - 1; end >= min_ngram && longest < kLookupMaxNgram; --end) {
    size_t match = 0;
    while (match < kLookupMaxNgram && match < end && tokens[end - 1 - match] == tokens[n_tokens - 1 - match]) ++match;
    for (size_t m = match; m >= min_ngram && latest[m] == 0; --m) latest[m] = end;
    if (match > longest) longest = match;
  }
  size_t n = 0;
  for (size_t m = kLookupMaxNgram; m >= min_ngram && n < max_places; --m) {
    if (latest[m] != 0 && (n == 0 || places[n - 1] != latest[m])) {
      places[n] = latest[m];
      lengths[n++] = m;
    }
  }
  return n;
}

size_t extend_draft(DraftGain &gain, const DraftStats &stats, size_t n, float cost_per_token) {
  // A token pays when its expected yield per cost beats the draft's so far; the yields fall
  // token by token, so the first that does not pay ends the run.
  size_t k = 0;
  while (k < n) {
    const float reach = gain.reach * stats.accept;
    if ((gain.expected + reach) * gain.cost <= gain.expected * (gain.cost + cost_per_token)) break;
    gain.expected += reach;
    gain.reach = reach;
    gain.cost += cost_per_token;
    ++k;
  }
  return k;
}

size_t grammar_forced_bytes(grammar::Grammar &g, const char *prefix, size_t n_prefix, char *out, size_t max) {
  if (n_prefix > kMaxForcedPrefix) return 0;
  if (n_prefix == 0 && grammar::is_complete(g)) return 0;
  bool first[256];
  if (n_prefix == 0) grammar::first_bytes(g, first);
  char text[kMaxForcedPrefix + 64];
  if (max > sizeof text - n_prefix) max = sizeof text - n_prefix;
  std::memcpy(text, prefix, n_prefix);
  // Each check shares the matcher work of the bytes before it: about one step per byte tried.
  grammar::TokenChecker checker(g, uint64_t{1} << 20);
  size_t n = 0;
  while (n < max) {
    int only = -1;
    char *at = text + n_prefix + n;
    for (int b = 0; b < 256; ++b) {
      if (n_prefix == 0 && n == 0 && !first[b]) continue;
      *at = static_cast<char>(b);
      const grammar::Check check = checker.check(text, n_prefix + n + 1);
      if (check == grammar::Check::kOverBudget) return n;
      if (check != grammar::Check::kAllowed) continue;
      if (only >= 0) return n;  // a second byte fits: a choice
      only = b;
    }
    if (only < 0) return n;  // nothing fits: the grammar ends here
    *at = static_cast<char>(only);
    out[n++] = static_cast<char>(only);
  }
  return n;
}

}  // namespace mote

// Drafters for speculative decoding (mote_generate, model/generate.cpp): each proposes tokens that
// may follow the tokens so far, and the target model checks them all in one forward pass. What a
// drafter proposes never changes the text (generate.cpp keeps a drafted token only when the
// sampler picks it itself); it changes how many tokens one pass over the weights yields.
#pragma once

#include <cstddef>
#include <cstdint>

#include "grammar/grammar.hpp"

namespace mote {

// A checked token's cost relative to a one-token step, for choosing draft lengths. Measured
// (bench/README.md, "verify-pass batches", 1 thread, AMD Zen 5): a step of n = 2, 4, 8, 16 tokens
// costs 1.16, 1.71, 2.64, 4.68 one-token steps on Qwen2.5-Coder-1.5B (0.16 for the first drafted
// token, 0.23-0.28 for each after it: compute-bound past n = 2 on one core), 1.03, 1.20, 1.78
// on Qwen2.5-Coder-0.5B and 1.06, 1.24, 1.98 on SmolLM2 (0.03-0.14). 0.25 counts the large
// model's real cost (a draft that only breaks even there makes free text slower than plain
// decoding) and drafts a little less than would pay on the small ones. Since the K tiles'
// paired sub-blocks (2026-12-07) the 1.5B's n = 2, 3, 4, 8 cost 1.08, 1.35, 1.52, 2.22 steps
// (~0.17 a token), but a gate at 0.18 made JSON extraction slower (1.32 -> 1.19x), so 0.25 stays
// (bench/README.md, "verify-pass tiles for the K types").
constexpr float kCheckedTokenCost = 0.25f;

// A draft model classifies its first kDraftVocabulary token ids and the tokens in its cache only
// (Session::draft_vocabulary): ids come in merge order, the most frequent first. Qwen2.5-Coder
// 0.5B drafting for the 1.5B (bench/README.md log, 2026-12-07 "the draft vocabulary"): its
// classifier is 36% of its step's bytes and the first 16384 rows 11% of those.
constexpr uint32_t kDraftVocabulary = 16384;

// How often one drafter's tokens were right, learned while generating.
struct DraftStats {
  // P(a drafted token is the sampled one | the drafted tokens before it were), a moving average
  // over the last ~10 drafted tokens (checked ones, and the first token of proposals that were
  // not checked, compared with the token generated instead: so a drafter that stopped paying is
  // still watched and comes back when it would pay again).
  float accept = 0.5f;
  uint64_t drafted = 0, accepted = 0;  // checked tokens, and those kept (for mote bench)
};

// Counts one checked draft: its first `accepted` of `drafted` tokens were kept.
void record_check(DraftStats &stats, size_t drafted, size_t accepted);
// Counts an unchecked proposal whose first token was (hit) or was not the generated one.
void record_shadow(DraftStats &stats, bool hit);

// Prompt lookup matches the last kLookupMaxNgram tokens at most, kLookupMinNgram at least (one
// token matches too much to go by alone; with a grammar to check the continuation it may).
constexpr size_t kLookupMaxNgram = 4;
constexpr size_t kLookupMinNgram = 2;

// The places prompt lookup may continue from, best first: for each match length from
// kLookupMaxNgram down to min_ngram, the latest earlier occurrence of the last tokens (the index
// of the token after it, and the length), at most max_places into places and lengths. Returns
// how many. O(n_tokens). A grammar tells which place's continuation fits, so it can afford
// single-token matches.
size_t lookup_places(const int32_t *tokens, size_t n_tokens, size_t min_ngram, size_t *places, size_t *lengths,
                     size_t max_places);

// A draft's expected worth while it is built from several drafters' runs: each token is kept
// with its drafter's acceptance when every token before it was.
struct DraftGain {
  float expected = 1.0f;  // tokens the pass is expected to yield (the sampled one, and the drafts)
  float reach = 1.0f;     // P(every drafted token so far holds)
  float cost = 1.0f;      // the pass's cost in one-token steps
};

// How many of n more tokens from a drafter with these stats (each costing cost_per_token) raise
// the draft's expected tokens per cost (gain is updated for them); 0 when none does.
size_t extend_draft(DraftGain &gain, const DraftStats &stats, size_t n, float cost_per_token);

// Grammar fast-forward: the bytes g admits as its only choice after prefix (bytes g would take
// next, already checked; n_prefix at most kMaxForcedPrefix), one after another (a JSON schema's
// keys and punctuation), at most max, into out; g does not change. Stops at the first position
// with a choice (or none), and where the grammar could also end.
constexpr size_t kMaxForcedPrefix = 256;
size_t grammar_forced_bytes(grammar::Grammar &g, const char *prefix, size_t n_prefix, char *out, size_t max);

}  // namespace mote

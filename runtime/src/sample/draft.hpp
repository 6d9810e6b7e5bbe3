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
// (bench/README.md, "verify-pass batches", 1 thread, AMD Zen 4): a step of n = 2, 4, 8 tokens
// costs 1.16, 1.71, 2.64 one-token steps on Qwen2.5-Coder-1.5B (0.16-0.24 a token, compute-bound
// past n = 4), 1.03, 1.20, 1.78 on Qwen2.5-Coder-0.5B and 1.06, 1.24, 1.98 on SmolLM2 (0.03-0.14),
// plus a classifier row per checked token in a real check. 0.2 errs towards drafting a little
// less than would pay on the small models, never much more than pays on the large one.
constexpr float kCheckedTokenCost = 0.2f;

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

// The draft length (at most available) that maximises the expected tokens per pass cost, where
// each drafted token costs cost_per_token of a one-token step (checking, plus drafting it for a
// draft model) and is kept with stats.accept after the ones before it; 0 when no length beats
// decoding one token.
size_t draft_length(const DraftStats &stats, size_t available, float cost_per_token);

// Prompt lookup: finds the latest earlier occurrence of the last n tokens of tokens[0, n_tokens)
// (n from kLookupMaxNgram down to kLookupMinNgram, the longest that occurs) and writes what
// followed it, at most max tokens, into out. Returns how many (0: no occurrence). O(n_tokens).
constexpr size_t kLookupMaxNgram = 4;
constexpr size_t kLookupMinNgram = 2;
size_t lookup_draft(const int32_t *tokens, size_t n_tokens, size_t max, int32_t *out);

// Grammar fast-forward: the bytes g admits next as its only choice, one after another (a JSON
// schema's keys and punctuation), at most max, into out; g does not change. Stops at the first
// position with a choice (or none), and where the grammar could also end.
size_t grammar_forced_bytes(grammar::Grammar &g, char *out, size_t max);

}  // namespace mote

// Prefill, sampling and mote_generate's loop (generate.cpp), for the C API in api.cpp, which
// holds the session's guard around each call.
#pragma once

#include <cstddef>
#include <cstdint>

#include "grammar/grammar.hpp"
#include "model/model.hpp"
#include "mote/mote.h"

namespace mote {

inline ErrorSink session_sink(Session &s) { return ErrorSink{s.error, sizeof s.error}; }

bool has_byte_level_tokenizer(const Model &m);

// The bytes token prints after prev_token, as mote_detokenize gives them for byte-level BPE and
// SentencePiece (raw bytes, byte tokens as their byte, control tokens of byte-level vocabularies
// spelled out); byte is storage for a byte token's one byte. WordPiece needs its own spacing
// (mote_detokenize), and its encoders never generate.
void token_piece(const Model &m, int32_t prev_token, int32_t token, char *byte, const char **piece, size_t *n);

// llama2.c's convention: BOS separates documents, so it ends generation; so do EOS and every
// other control token (ChatML's <|im_end|>, <|endoftext|>).
bool ends_generation(const Model &m, int32_t token);

// Whether two models share a vocabulary: the same count and the same bytes and kind for every
// token (a draft model must, to draft for a model).
bool same_vocabulary(const Model &a, const Model &b);

// An encoder (an embedder: BERT) has no classifier, so nothing to decode or sample with.
Status refuse_encoder(Session &s, const char *what);

// What a prefill reports and returns besides the cache: on_progress after each batch (not for
// mote_decode), and the logits of the call's tokens from first on into out (mote_prefill_logits;
// out null: the last token's only).
struct PrefillRequest {
  bool report_progress;
  size_t first;
  float *out;
};

// mote_prefill's work (mote_decode's, mote_prefill_logits', mote_generate's too).
Status prefill(Session &s, const int32_t *tokens, size_t n_tokens, PrefillRequest request = {true, 0, nullptr});

// mote_sample's work; with a grammar (may be null), mote_sample_grammar's.
Status sample_next(Session &s, const mote_sampler_options *options, grammar::Grammar *g, int32_t *token);

// mote_generate's loop (with a grammar, mote_generate_constrained's); draft is the options' draft
// model session, already held by the caller (null: none).
Status generate(Session &s, const int32_t *prompt, size_t n_prompt, uint32_t max_new_tokens,
                const mote_sampler_options *options, grammar::Grammar *g, Session *draft, mote_on_token on_token,
                void *user, uint32_t *n_generated);

}  // namespace mote

// WordPiece (BERT-family embedders: all-MiniLM-L6-v2, nomic-embed-text): BERT's normalizer and
// pre-tokenizer, then greedy longest-match-first pieces with the "##" continuation prefix.
// Works on a validated view of the tables inside the model bytes; needs no memory of its own.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/status.hpp"
#include "text/tokenizer.hpp"

namespace mote {

// Encodes the concatenation of spans with tok (kind wordpiece), giving the ids Hugging Face
// tokenizers gives for a BertNormalizer + BertPreTokenizer + WordPiece tokenizer.json (the rules
// are in wordpiece.cpp). With add_special, [CLS] (bos_id) opens and [SEP] (eos_id) closes the
// ids, where the vocabulary has them. Control tokens spelled in the text ("[SEP]") become those
// tokens with parse_special, user-defined ones always. text_n + 2 entries always suffice; with
// fewer, MOTE_ERR_BUFFER_TOO_SMALL when the ids do not fit, *n_tokens = the number needed.
Status encode_wordpiece(const TokenizerView &tok, const TextSpan *spans, size_t n_spans, bool add_special,
                        bool parse_special, int32_t *tokens, size_t capacity, size_t *n_tokens);

// What token prints after prev_token (-1: none), as Hugging Face's WordPiece decoder joins
// pieces: a "##" piece continues the word without its prefix; any other piece (special tokens
// too, spelled as their text) gets a space before it unless it is the first or a lone . ? ! ,
// (the decoder's cleanup, which works per token). *space says
// whether to print " " before [*bytes, *bytes + *n_bytes) (which points into the model bytes);
// nothing for an id out of range.
void wordpiece_piece(const TokenizerView &tok, int32_t prev_token, int32_t token, bool *space, const char **bytes,
                     size_t *n_bytes);

}  // namespace mote

// Byte-level BPE (GPT-2 style, as SmolLM2 uses): pre-tokenization into words, then merges by
// rank inside each word. Needs no memory of its own: merging happens in the output buffer,
// exactly for words of any length (bpe_merge.hpp), in O(n log n).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/status.hpp"
#include "text/tokenizer.hpp"

namespace mote {

// Encodes the concatenation of spans (TextSpan, tokenizer.hpp; pre-tokenization runs across
// the joins as if the text were one string) with tok (kind byte_level_bpe), giving the ids
// Hugging Face tokenizers gives with SmolLM2's pre-tokenizer (Digits, then ByteLevel's GPT-2
// regex; the exact rules are in byte_level_bpe.cpp). With parse_special, the literal text of
// control and user-defined tokens ("<|im_end|>") becomes those tokens (the longest at the
// leftmost position); otherwise such text is encoded like any other. Invalid UTF-8 bytes are
// each a word of their own and become their byte token, so decoding returns the input bytes.
// The buffer is also the scratch space of merging: capacity must be at least the total bytes
// (whatever the text), else MOTE_ERR_BUFFER_TOO_SMALL with *n_tokens = the total bytes.
// MOTE_ERR_UNSUPPORTED: a byte of the text has no single-byte token in the vocabulary (a
// byte-level vocabulary has all 256; one without some cannot encode such text losslessly, and
// Hugging Face would silently drop it). No BOS: the caller adds it.
Status encode_byte_level(const TokenizerView &tok, const TextSpan *spans, size_t n_spans, bool parse_special,
                         int32_t *tokens, size_t capacity, size_t *n_tokens);

// The pre-tokenizer alone (steps 2 and 3 of byte_level_bpe.cpp; no special tokens): the end
// offset of each word of text[0, n), in order, into ends (its first capacity words); returns how
// many words there are. Where encode_byte_level cuts the text before merging, for tests.
size_t byte_level_words(const TokenizerView &tok, const char *text, size_t n, size_t *ends, size_t capacity);

// A byte-level token's bytes: its raw piece, control tokens included ("<|im_end|>"); nothing
// for an id out of range. Points into the model bytes.
void byte_level_piece(const TokenizerView &tok, int32_t token, const char **bytes, size_t *n_bytes);

}  // namespace mote

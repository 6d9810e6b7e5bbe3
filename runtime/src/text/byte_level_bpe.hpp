// Byte-level BPE (GPT-2 style, as SmolLM2 uses): pre-tokenization into words, then merges by
// rank inside each word. Needs no memory of its own: merging happens in the output buffer.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/status.hpp"
#include "text/tokenizer.hpp"

namespace mote {

// Encodes the concatenation of spans (TextSpan, tokenizer.hpp; pre-tokenization runs across
// the joins as if the text were one string) with tok (kind byte_level_bpe). With parse_special, the
// literal text of control and user-defined tokens ("<|im_end|>") becomes those tokens;
// otherwise such text is encoded like any other. Invalid UTF-8 bytes are each a word of their
// own and become their byte token, so decoding returns the input bytes. capacity >= total
// bytes always suffices; otherwise MOTE_ERR_BUFFER_TOO_SMALL with *n_tokens = the bytes needed.
Status encode_byte_level(const TokenizerView &tok, const TextSpan *spans, size_t n_spans, bool parse_special,
                         int32_t *tokens, size_t capacity, size_t *n_tokens);

}  // namespace mote

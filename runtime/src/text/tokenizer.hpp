// SentencePiece-style BPE with scores and <0xXX> byte fallback (llama2.c's tokenizer.bin).
// Works on a validated view of the tables inside the model bytes; needs no memory of its own.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/status.hpp"
#include "format/format.hpp"
#include "format/tokenizer_view.hpp"

namespace mote {

// The token types and the tokenizer tables' view are on-disk format (format/tokenizer_view.hpp).
using format::compare_pieces;
using format::kTokenByte;
using format::kTokenControl;
using format::kTokenNormal;
using format::kTokenUnknown;
using format::kTokenUnused;
using format::kTokenUserDefined;
using format::TokenizerView;
using format::TokenType;

// A piece of text; encoders see a list of spans as one text, which lets a chat template put
// "user\n" before a message without copying it.
struct TextSpan {
  const char *bytes;
  size_t n;
};

// Token id whose piece is exactly [text, text + n), or -1 (binary search over sorted_ids).
int32_t find_token(const TokenizerView &tok, const char *text, size_t n);

// Encodes text (see mote_tokenize for the contract). Policies, detailed in tokenizer.cpp:
// a byte that does not start a valid, complete, shortest-form UTF-8 sequence is taken alone;
// a code point that is not a piece becomes its "<0xXX>" byte tokens, or one unk_id when the
// vocabulary lacks one of them, or MOTE_ERR_UNSUPPORTED when it has no unk either. BOS is
// added only if asked for and bos_id >= 0. User-defined tokens spelled in the text (Gemma's
// "\n", whitespace runs, "<table>") are always those tokens, control ones ("<start_of_turn>")
// only with parse_special, as llama.cpp does; the dummy prefix opens the text after each one of
// two bytes or more. A buffer of text_n + 2 entries always suffices; a smaller one is enough when
// it holds every token before merging; otherwise MOTE_ERR_BUFFER_TOO_SMALL, *n_tokens = needed.
Status encode(const TokenizerView &tok, const char *text, size_t text_n, bool add_bos, int32_t *tokens, size_t capacity,
              size_t *n_tokens, bool parse_special = false);
// The same for the concatenation of spans (a code point may span a join).
Status encode_spans(const TokenizerView &tok, const TextSpan *spans, size_t n_spans, bool add_bos, int32_t *tokens,
                    size_t capacity, size_t *n_tokens, bool parse_special = false);

// The bytes token prints after prev_token (see mote_detokenize). Byte tokens decode into
// byte_storage (one byte) so the result may point there; otherwise into the model bytes.
void piece_for(const TokenizerView &tok, int32_t prev_token, int32_t token, char *byte_storage, const char **bytes,
               size_t *n_bytes);

}  // namespace mote

// Chat templates: a conversation's messages as the token ids the model was trained on.
// Special tokens come only from the template; message text is ordinary text, so a user who
// types "<|im_end|>" cannot end a turn (no prompt injection through the tokenizer).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/status.hpp"
#include "mote/mote.h"
#include "text/tokenizer.hpp"

namespace mote {

// Appends the tokens of messages, in order, then (add_assistant_prompt) the tokens that open
// the assistant's reply. Templates (format::ChatTemplate):
// - ChatML, byte-level BPE vocabularies: "<|im_start|>{role}\n{content}<|im_end|>\n" per
//   message, "<|im_start|>assistant\n" to prompt; each "{role}\n{content}" is encoded as one
//   text, exactly as Hugging Face's apply_chat_template tokenizes the rendered string.
// - llama-2, SentencePiece vocabularies: "<s>[INST] {user} [/INST]" per user message, a
//   system message folded into the next user message as "<<SYS>>\n{system}\n<</SYS>>\n\n",
//   and " {content} </s>" per assistant message (Meta's reference format); nothing to prompt.
// On MOTE_ERR_BUFFER_TOO_SMALL, *n_tokens is the capacity needed. MOTE_ERR_UNSUPPORTED: the
// model has no template, its tokenizer is not the kind the template is written for, or a
// template token is missing from the vocabulary.
Status chat_encode(const TokenizerView &tok, uint32_t chat_template, const mote_chat_message *messages,
                   size_t n_messages, bool add_assistant_prompt, int32_t *tokens, size_t capacity, size_t *n_tokens);

// The tokens that close an assistant turn whose reply is already in the KV cache; the first
// one is the token that ends generation (ChatML: "<|im_end|>" "\n"; llama-2: "</s>").
Status chat_end_of_turn(const TokenizerView &tok, uint32_t chat_template, int32_t *tokens, size_t capacity,
                        size_t *n_tokens);

}  // namespace mote

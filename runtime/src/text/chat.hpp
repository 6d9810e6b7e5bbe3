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
// the assistant's reply; opens_conversation: first what opens a conversation (below). Each text
// between two special tokens is encoded as one text, as llama.cpp and Hugging Face tokenize the
// rendered template. Templates (format::ChatTemplate), as their Jinja sources render them:
// - ChatML, byte-level BPE vocabularies: "<|im_start|>{role}\n{content}<|im_end|>\n" per
//   message, "<|im_start|>assistant\n" to prompt. chatml_qwen: a conversation without a system
//   message opens with Qwen2.5's default one ("You are Qwen, created by Alibaba Cloud. ...").
// - Gemma: BOS, "<start_of_turn>{user|model}\n{content, trimmed}<end_of_turn>\n", a system
//   message folded into the next user turn as "{system}\n\n" before its content.
// - Llama 3: BOS, "<|start_header_id|>{role}<|end_header_id|>\n\n{content, trimmed}<|eot_id|>";
//   llama3_dated (3.1-3.3) opens with a system turn "Cutting Knowledge Date: December 2023\n
//   Today Date: 26 Jul 2024\n\n{first system message, trimmed}" (the templates' default date).
// - Phi-3: "<|{role}|>\n{content}<|end|>\n" (an empty system message is left out), BOS first
//   when the model asks for it (llama.cpp adds it to the rendered prompt).
// - llama-2, SentencePiece vocabularies: "<s>[INST] {user} [/INST]" per user message, a
//   system message folded into the next user message as "<<SYS>>\n{system}\n<</SYS>>\n\n",
//   and " {content} </s>" per assistant message (Meta's reference format); nothing to prompt.
// Trimming removes ASCII whitespace (Jinja's trim also strips other Unicode spaces).
// On MOTE_ERR_BUFFER_TOO_SMALL, *n_tokens is the capacity needed. MOTE_ERR_UNSUPPORTED: the
// model has no template, its tokenizer is not the kind the template is written for, or a
// template token is missing from the vocabulary.
Status chat_encode(const TokenizerView &tok, uint32_t chat_template, const mote_chat_message *messages,
                   size_t n_messages, bool add_assistant_prompt, int32_t *tokens, size_t capacity, size_t *n_tokens,
                   bool opens_conversation = true);

// The tokens that close an assistant turn whose reply is already in the KV cache; the first
// one is the token that ends generation (ChatML: "<|im_end|>" "\n"; Gemma: "<end_of_turn>" "\n";
// Llama 3: "<|eot_id|>"; Phi-3: "<|end|>" "\n"; llama-2: "</s>").
Status chat_end_of_turn(const TokenizerView &tok, uint32_t chat_template, int32_t *tokens, size_t capacity,
                        size_t *n_tokens);

// The template's name ("chatml", "llama-2", "chatml-qwen", "gemma", "llama3", "phi3", "llama3-dated";
// "none"), or null for a value outside format::ChatTemplate.
const char *chat_template_name(uint32_t chat_template);

}  // namespace mote

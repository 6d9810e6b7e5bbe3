// Chat templates, written out as token sequences (see chat.hpp for the formats).
#include "text/chat.hpp"

#include <cstring>

#include "format/format.hpp"
#include "text/byte_level_bpe.hpp"

namespace mote {
namespace {

using format::ChatTemplate;
using format::TokenizerKind;

// Appends tokens to the caller's buffer; once it is full, only counts, so a too-small buffer
// learns the capacity it needs.
struct TokenSink {
  int32_t *tokens;
  size_t capacity;
  size_t count;

  void push(int32_t token) {
    if (count < capacity) tokens[count] = token;
    count += 1;
  }
  int32_t *free_space() { return count < capacity ? tokens + count : nullptr; }
  size_t free_capacity() const { return count < capacity ? capacity - count : 0; }
};

// Encodes the concatenation of spans as text (no special tokens) with the model's tokenizer.
Status push_text(const TokenizerView &tok, const TextSpan *spans, size_t n_spans, TokenSink *sink) {
  size_t n = 0;
  Status status = MOTE_OK;
  if (tok.kind == static_cast<uint32_t>(TokenizerKind::byte_level_bpe)) {
    status = encode_byte_level(tok, spans, n_spans, false, sink->free_space(), sink->free_capacity(), &n);
  } else {
    status = encode_spans(tok, spans, n_spans, false, sink->free_space(), sink->free_capacity(), &n);
  }
  if (status != MOTE_OK && status != MOTE_ERR_BUFFER_TOO_SMALL) return status;
  if (status == MOTE_ERR_BUFFER_TOO_SMALL) sink->capacity = sink->count;  // count from here on
  sink->count += n;
  return MOTE_OK;
}

Status push_text(const TokenizerView &tok, const char *text, TokenSink *sink) {
  const TextSpan span{text, std::strlen(text)};
  return push_text(tok, &span, 1, sink);
}

int32_t special_token(const TokenizerView &tok, const char *text) {
  const int32_t id = find_token(tok, text, std::strlen(text));
  return (id >= 0 && tok.types[id] == kTokenControl) ? id : -1;
}

// Null for a value outside the enum (read as an integer: see enum_value).
const char *role_name(const mote_chat_role &role) {
  switch (enum_value(role)) {
    case MOTE_ROLE_SYSTEM: return "system";
    case MOTE_ROLE_USER: return "user";
    case MOTE_ROLE_ASSISTANT: return "assistant";
    default: return nullptr;
  }
}

struct ChatmlTokens {
  int32_t im_start, im_end;
};

Status chatml_tokens(const TokenizerView &tok, ChatmlTokens *out) {
  if (tok.kind != static_cast<uint32_t>(TokenizerKind::byte_level_bpe)) return MOTE_ERR_UNSUPPORTED;
  out->im_start = special_token(tok, "<|im_start|>");
  out->im_end = special_token(tok, "<|im_end|>");
  return (out->im_start < 0 || out->im_end < 0) ? MOTE_ERR_UNSUPPORTED : MOTE_OK;
}

Status chatml_encode(const TokenizerView &tok, const mote_chat_message *messages, size_t n_messages,
                     bool add_assistant_prompt, TokenSink *sink) {
  ChatmlTokens t;
  Status status = chatml_tokens(tok, &t);
  if (status != MOTE_OK) return status;
  for (size_t i = 0; i < n_messages; ++i) {
    const char *role = role_name(messages[i].role);
    const TextSpan text[] = {{role, std::strlen(role)}, {"\n", 1}, {messages[i].content, messages[i].content_n}};
    sink->push(t.im_start);
    status = push_text(tok, text, 3, sink);
    if (status != MOTE_OK) return status;
    sink->push(t.im_end);
    status = push_text(tok, "\n", sink);
    if (status != MOTE_OK) return status;
  }
  if (add_assistant_prompt) {
    sink->push(t.im_start);
    status = push_text(tok, "assistant\n", sink);
  }
  return status;
}

Status llama2_encode(const TokenizerView &tok, const mote_chat_message *messages, size_t n_messages, TokenSink *sink) {
  if (tok.kind != static_cast<uint32_t>(TokenizerKind::sentencepiece_bpe) || tok.bos_id < 0 || tok.eos_id < 0) {
    return MOTE_ERR_UNSUPPORTED;
  }
  const mote_chat_message *system = nullptr;  // folded into the next user message
  for (size_t i = 0; i < n_messages; ++i) {
    const mote_chat_message &m = messages[i];
    Status status = MOTE_OK;
    if (m.role == MOTE_ROLE_SYSTEM) {
      system = &m;
    } else if (m.role == MOTE_ROLE_USER) {
      sink->push(tok.bos_id);
      TextSpan text[5];
      size_t n = 0;
      text[n++] = {"[INST] ", 7};
      if (system != nullptr) {
        text[n++] = {"<<SYS>>\n", 8};
        text[n++] = {system->content, system->content_n};
        text[n++] = {"\n<</SYS>>\n\n", 11};
        system = nullptr;
      }
      text[n++] = {m.content, m.content_n};
      const TextSpan close{" [/INST]", 8};
      status = push_text(tok, text, n, sink);
      if (status == MOTE_OK) status = push_text(tok, &close, 1, sink);
    } else {
      const TextSpan text{m.content, m.content_n};
      status = push_text(tok, &text, 1, sink);
      sink->push(tok.eos_id);
    }
    if (status != MOTE_OK) return status;
  }
  return MOTE_OK;
}

}  // namespace

Status chat_encode(const TokenizerView &tok, uint32_t chat_template, const mote_chat_message *messages,
                   size_t n_messages, bool add_assistant_prompt, int32_t *tokens, size_t capacity, size_t *n_tokens) {
  if (n_tokens == nullptr || (messages == nullptr && n_messages > 0) || (tokens == nullptr && capacity > 0)) {
    return MOTE_ERR_INVALID_ARGUMENT;
  }
  *n_tokens = 0;
  for (size_t i = 0; i < n_messages; ++i) {
    if (role_name(messages[i].role) == nullptr || (messages[i].content == nullptr && messages[i].content_n > 0)) {
      return MOTE_ERR_INVALID_ARGUMENT;
    }
  }
  TokenSink sink{tokens, capacity, 0};
  Status status = MOTE_ERR_UNSUPPORTED;
  if (chat_template == static_cast<uint32_t>(ChatTemplate::chatml)) {
    status = chatml_encode(tok, messages, n_messages, add_assistant_prompt, &sink);
  } else if (chat_template == static_cast<uint32_t>(ChatTemplate::llama2)) {
    status = llama2_encode(tok, messages, n_messages, &sink);
  }
  if (status != MOTE_OK) return status;
  *n_tokens = sink.count;
  return sink.count > capacity ? MOTE_ERR_BUFFER_TOO_SMALL : MOTE_OK;
}

Status chat_end_of_turn(const TokenizerView &tok, uint32_t chat_template, int32_t *tokens, size_t capacity,
                        size_t *n_tokens) {
  if (n_tokens == nullptr || (tokens == nullptr && capacity > 0)) return MOTE_ERR_INVALID_ARGUMENT;
  *n_tokens = 0;
  TokenSink sink{tokens, capacity, 0};
  Status status = MOTE_ERR_UNSUPPORTED;
  if (chat_template == static_cast<uint32_t>(ChatTemplate::chatml)) {
    ChatmlTokens t;
    status = chatml_tokens(tok, &t);
    if (status == MOTE_OK) {
      sink.push(t.im_end);
      status = push_text(tok, "\n", &sink);
    }
  } else if (chat_template == static_cast<uint32_t>(ChatTemplate::llama2) && tok.eos_id >= 0) {
    sink.push(tok.eos_id);
    status = MOTE_OK;
  }
  if (status != MOTE_OK) return status;
  *n_tokens = sink.count;
  return sink.count > capacity ? MOTE_ERR_BUFFER_TOO_SMALL : MOTE_OK;
}

}  // namespace mote

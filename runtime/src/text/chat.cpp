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
    case MOTE_ROLE_SYSTEM:
      return "system";
    case MOTE_ROLE_USER:
      return "user";
    case MOTE_ROLE_ASSISTANT:
      return "assistant";
    default:
      return nullptr;
  }
}

// The templates that write each message as one turn: a control token opens it (for Phi-3 one per
// role, "<|user|>"), the role's text follows (Llama 3: then "<|end_header_id|>"), a separator,
// the content, the closing control token and text after it. Special tokens come only from here.
struct TurnStyle {
  ChatTemplate kind;
  const char *open;        // control token; Phi-3: "<|" + role + "|>"
  bool role_in_open;       // Phi-3
  const char *after_role;  // control token after the role's text (Llama 3), or null
  const char *separator;   // text between the role and the content
  const char *close;       // control token that ends the turn (and generation)
  const char *after;       // text after it
  bool trim;               // the content is trimmed (Jinja's | trim: Gemma, Llama 3)
  const char *assistant;   // the assistant's role name
};

constexpr TurnStyle kTurnStyles[] = {
    {ChatTemplate::chatml, "<|im_start|>", false, nullptr, "\n", "<|im_end|>", "\n", false, "assistant"},
    {ChatTemplate::chatml_qwen, "<|im_start|>", false, nullptr, "\n", "<|im_end|>", "\n", false, "assistant"},
    {ChatTemplate::gemma, "<start_of_turn>", false, nullptr, "\n", "<end_of_turn>", "\n", true, "model"},
    {ChatTemplate::llama3, "<|start_header_id|>", false, "<|end_header_id|>", "\n\n", "<|eot_id|>", "", true,
     "assistant"},
    {ChatTemplate::llama3_dated, "<|start_header_id|>", false, "<|end_header_id|>", "\n\n", "<|eot_id|>", "", true,
     "assistant"},
    {ChatTemplate::phi3, "<|", true, nullptr, "\n", "<|end|>", "\n", false, "assistant"},
};

const TurnStyle *turn_style(uint32_t chat_template) {
  for (const TurnStyle &style : kTurnStyles) {
    if (static_cast<uint32_t>(style.kind) == chat_template) return &style;
  }
  return nullptr;
}

constexpr char kQwenSystem[] = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.";
constexpr char kLlamaDatedSystem[] = "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n";

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

// Content as the template prints it (trim: ASCII whitespace off both ends).
TextSpan content_of(const TurnStyle &style, const mote_chat_message &m) {
  TextSpan t{m.content, m.content_n};
  if (!style.trim) return t;
  while (t.n > 0 && is_space(t.bytes[0])) t = {t.bytes + 1, t.n - 1};
  while (t.n > 0 && is_space(t.bytes[t.n - 1])) t.n -= 1;
  return t;
}

class TurnWriter {
 public:
  TurnWriter(const TokenizerView &tok, const TurnStyle &style, TokenSink *sink)
      : tok_(tok), style_(style), sink_(sink) {}

  // Opens a turn of role and writes its text up to the content: the separator, then prefix.
  Status open(const char *role, const TextSpan *prefix, size_t n_prefix, const TextSpan *content) {
    TextSpan text[5];
    size_t n = 0;
    const size_t role_n = std::strlen(role);
    if (style_.role_in_open) {
      char spelling[32];
      const size_t open_n = std::strlen(style_.open);
      if (open_n + role_n + 2 > sizeof spelling) return MOTE_ERR_UNSUPPORTED;
      std::memcpy(spelling, style_.open, open_n);
      std::memcpy(spelling + open_n, role, role_n);
      std::memcpy(spelling + open_n + role_n, "|>", 3);
      Status status = push_special(spelling);
      if (status != MOTE_OK) return status;
    } else {
      Status status = push_special(style_.open);
      if (status != MOTE_OK) return status;
      if (style_.after_role != nullptr) {
        const TextSpan role_text{role, role_n};
        status = push_text(tok_, &role_text, 1, sink_);
        if (status == MOTE_OK) status = push_special(style_.after_role);
        if (status != MOTE_OK) return status;
      } else {
        text[n++] = {role, role_n};
      }
    }
    text[n++] = {style_.separator, std::strlen(style_.separator)};
    for (size_t i = 0; i < n_prefix; ++i) text[n++] = prefix[i];
    if (content != nullptr) text[n++] = *content;
    return push_text(tok_, text, n, sink_);
  }

  Status close() {
    const Status status = push_special(style_.close);
    if (status != MOTE_OK || style_.after[0] == '\0') return status;
    return push_text(tok_, style_.after, sink_);
  }

  Status turn(const char *role, const TextSpan *prefix, size_t n_prefix, const TextSpan &content) {
    const Status status = open(role, prefix, n_prefix, &content);
    return status == MOTE_OK ? close() : status;
  }

 private:
  Status push_special(const char *spelling) {
    const int32_t id = special_token(tok_, spelling);
    if (id < 0) return MOTE_ERR_UNSUPPORTED;
    sink_->push(id);
    return MOTE_OK;
  }

  const TokenizerView &tok_;
  const TurnStyle &style_;
  TokenSink *sink_;
};

// What opens a conversation: BOS (Gemma, Llama 3; Phi-3 when the model asks for BOS, as llama.cpp
// adds it), Qwen2.5's default system turn, Llama 3.1's dated system block (holding the first
// system message, which it consumes: returns how many messages it took).
Status open_conversation(const TokenizerView &tok, const TurnStyle &style, TurnWriter &writer,
                         const mote_chat_message *messages, size_t n_messages, TokenSink *sink, size_t *consumed) {
  *consumed = 0;
  const ChatTemplate kind = style.kind;
  const bool bos = kind == ChatTemplate::gemma || kind == ChatTemplate::llama3 || kind == ChatTemplate::llama3_dated ||
                   (kind == ChatTemplate::phi3 && tok.add_bos);
  if (bos) {
    if (tok.bos_id < 0) return MOTE_ERR_UNSUPPORTED;
    sink->push(tok.bos_id);
  }
  const bool has_system = n_messages > 0 && messages[0].role == MOTE_ROLE_SYSTEM;
  if (kind == ChatTemplate::chatml_qwen && !has_system) {
    return writer.turn("system", nullptr, 0, TextSpan{kQwenSystem, sizeof kQwenSystem - 1});
  }
  if (kind == ChatTemplate::llama3_dated) {
    const TextSpan preamble{kLlamaDatedSystem, sizeof kLlamaDatedSystem - 1};
    const TextSpan system = has_system ? content_of(style, messages[0]) : TextSpan{"", 0};
    *consumed = has_system ? 1 : 0;
    return writer.turn("system", &preamble, 1, system);
  }
  return MOTE_OK;
}

Status turns_encode(const TokenizerView &tok, const TurnStyle &style, const mote_chat_message *messages,
                    size_t n_messages, bool add_assistant_prompt, bool opens, TokenSink *sink) {
  if (style.kind == ChatTemplate::chatml && tok.kind != static_cast<uint32_t>(TokenizerKind::byte_level_bpe)) {
    return MOTE_ERR_UNSUPPORTED;
  }
  TurnWriter writer(tok, style, sink);
  size_t first = 0;
  if (opens) {
    const Status status = open_conversation(tok, style, writer, messages, n_messages, sink, &first);
    if (status != MOTE_OK) return status;
  }
  const mote_chat_message *folded = nullptr;  // Gemma: a system message opens the next user turn
  for (size_t i = first; i < n_messages; ++i) {
    const mote_chat_message &m = messages[i];
    if (style.kind == ChatTemplate::gemma && m.role == MOTE_ROLE_SYSTEM) {
      folded = &m;
      continue;
    }
    if (style.kind == ChatTemplate::phi3 && m.role == MOTE_ROLE_SYSTEM && m.content_n == 0) continue;
    const char *role = m.role == MOTE_ROLE_ASSISTANT ? style.assistant : role_name(m.role);
    TextSpan prefix[2];
    size_t n_prefix = 0;
    if (folded != nullptr && m.role == MOTE_ROLE_USER) {
      prefix[n_prefix++] = {folded->content, folded->content_n};
      prefix[n_prefix++] = {"\n\n", 2};
      folded = nullptr;
    }
    const Status status = writer.turn(role, prefix, n_prefix, content_of(style, m));
    if (status != MOTE_OK) return status;
  }
  return add_assistant_prompt ? writer.open(style.assistant, nullptr, 0, nullptr) : MOTE_OK;
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
                   size_t n_messages, bool add_assistant_prompt, int32_t *tokens, size_t capacity, size_t *n_tokens,
                   bool opens_conversation) {
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
  if (const TurnStyle *style = turn_style(chat_template)) {
    status = turns_encode(tok, *style, messages, n_messages, add_assistant_prompt, opens_conversation, &sink);
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
  if (const TurnStyle *style = turn_style(chat_template)) {
    status = style->kind == ChatTemplate::chatml && tok.kind != static_cast<uint32_t>(TokenizerKind::byte_level_bpe)
                 ? MOTE_ERR_UNSUPPORTED
                 : TurnWriter(tok, *style, &sink).close();
  } else if (chat_template == static_cast<uint32_t>(ChatTemplate::llama2) && tok.eos_id >= 0) {
    sink.push(tok.eos_id);
    status = MOTE_OK;
  }
  if (status != MOTE_OK) return status;
  *n_tokens = sink.count;
  return sink.count > capacity ? MOTE_ERR_BUFFER_TOO_SMALL : MOTE_OK;
}

const char *chat_template_name(uint32_t chat_template) {
  static const char *const kNames[] = {"none",  "chatml", "llama-2", "chatml-qwen",
                                       "gemma", "llama3", "phi3",    "llama3-dated"};
  return chat_template < sizeof kNames / sizeof kNames[0] ? kNames[chat_template] : nullptr;
}

}  // namespace mote

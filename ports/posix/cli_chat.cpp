// `mote chat`: a multi-turn conversation through the model's chat template, keeping the KV
// cache across turns; `mote run --chat` is one turn of it with only the reply on stdout.
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "cli_common.hpp"

namespace mote::cli {
namespace {

struct TurnStats {
  size_t prompt_tokens = 0;
  double prefill_seconds = 0, first_token_seconds = 0, decode_seconds = 0;
  uint32_t generated = 0;
};

struct Printer {
  FILE *out;
  double start;
  double first_token = 0;
  uint32_t count = 0;
};

int print_piece(void *user, int32_t, const char *piece, size_t n) {
  Printer &p = *static_cast<Printer *>(user);
  if (p.count++ == 0) p.first_token = now_seconds() - p.start;
  std::fwrite(piece, 1, n, p.out);
  std::fflush(p.out);
  return 0;
}

enum class TurnResult { kReplied, kContextFull, kError };

// True when some message cannot be tokenized at all (byte-level vocabularies may lack a few
// single-byte tokens: SmolLM2 has none for 21 bytes, e.g. 0x04 and 0xFF).
bool unrepresentable_text(const mote_model &model, const std::vector<mote_chat_message> &messages) {
  for (const mote_chat_message &m : messages) {
    std::vector<int32_t> ids(m.content_n + 1);
    size_t n = 0;
    if (mote_tokenize(&model, m.content, m.content_n, 0, ids.data(), ids.size(), &n) == MOTE_ERR_UNSUPPORTED) return true;
  }
  return false;
}

// The conversation in one session: each turn sends the end of the previous reply, the new
// messages and the assistant prompt, then streams the reply.
class Conversation {
 public:
  Conversation(const mote_model &model, mote_session &session, const GenerationSettings &settings)
      : model_(model), session_(session), settings_(settings) {}

  TurnResult reply(const std::string &system, const std::string &user, FILE *out, TurnStats *stats,
                   std::string *error) {
    std::vector<mote_chat_message> messages;
    if (mote_session_position(&session_) == 0 && !system.empty()) {
      messages.push_back({MOTE_ROLE_SYSTEM, system.data(), system.size()});
    }
    messages.push_back({MOTE_ROLE_USER, user.data(), user.size()});
    std::vector<int32_t> tokens = owed_;
    if (!append_chat_tokens(messages, &tokens, error)) return TurnResult::kError;
    const uint32_t room = mote_session_context_length(&session_) - mote_session_position(&session_);
    if (tokens.size() >= room) return TurnResult::kContextFull;  // the reply needs a token too

    const double start = now_seconds();
    if (mote_prefill(&session_, tokens.data(), tokens.size()) != MOTE_OK) {
      *error = mote_session_error(&session_);
      return TurnResult::kError;
    }
    owed_.clear();
    stats->prompt_tokens = tokens.size();
    stats->prefill_seconds = now_seconds() - start;
    Printer printer{out, now_seconds()};
    const mote_status status =
        mote_generate(&session_, nullptr, 0, settings_.n_new, &settings_.sampler, print_piece, &printer, &stats->generated);
    stats->decode_seconds = now_seconds() - printer.start;
    stats->first_token_seconds = printer.first_token;
    if (status == MOTE_ERR_CONTEXT_FULL) return TurnResult::kContextFull;
    if (status != MOTE_OK) {
      *error = mote_session_error(&session_);
      return TurnResult::kError;
    }
    // The reply is in the cache; the template's end of turn goes in with the next message.
    size_t n = 0;
    owed_.assign(8, 0);
    if (mote_chat_end_of_turn(&model_, owed_.data(), owed_.size(), &n) != MOTE_OK) {
      *error = "the model's chat template has no end-of-turn tokens";
      return TurnResult::kError;
    }
    owed_.resize(n);
    return TurnResult::kReplied;
  }

  void restart() {
    mote_session_reset(&session_);
    owed_.clear();
  }

 private:
  bool append_chat_tokens(const std::vector<mote_chat_message> &messages, std::vector<int32_t> *tokens,
                          std::string *error) {
    size_t bytes = 0;
    for (const mote_chat_message &m : messages) bytes += m.content_n;
    std::vector<int32_t> chat(bytes + 64);
    size_t n = 0;
    mote_status status = mote_chat_tokenize(&model_, messages.data(), messages.size(), MOTE_CHAT_ADD_ASSISTANT_PROMPT,
                                            chat.data(), chat.size(), &n);
    if (status == MOTE_ERR_BUFFER_TOO_SMALL) {
      chat.resize(n);
      status = mote_chat_tokenize(&model_, messages.data(), messages.size(), MOTE_CHAT_ADD_ASSISTANT_PROMPT,
                                  chat.data(), chat.size(), &n);
    }
    if (status == MOTE_ERR_UNSUPPORTED) {
      *error = unrepresentable_text(model_, messages)
                   ? "the message holds a byte this model's vocabulary cannot represent (a control character or "
                     "invalid UTF-8)"
                   : "this model has no chat template this build can apply (use mote run without --chat)";
      return false;
    }
    if (status != MOTE_OK) {
      *error = std::string("cannot tokenize the message: ") + mote_status_name(status);
      return false;
    }
    tokens->insert(tokens->end(), chat.begin(), chat.begin() + static_cast<std::ptrdiff_t>(n));
    return true;
  }

  const mote_model &model_;
  mote_session &session_;
  const GenerationSettings &settings_;
  std::vector<int32_t> owed_;  // the previous reply's end-of-turn tokens
};

void add_chat_defaults(GenerationSettings *settings) {
  // SmolLM2's model card suggests a low temperature for chat; flags still override these.
  settings->sampler.temperature = 0.2f;
  settings->sampler.top_p = 0.9f;
}

}  // namespace

int run_chat_turn(GenerationSettings &settings, const std::string &system, const std::string &prompt) {
  std::unique_ptr<LoadedModel> loaded;
  std::unique_ptr<SessionHolder> holder;
  std::string error;
  if (!open_generation(settings, &loaded, &holder, &error)) return report("run", error, kExitError);
  Conversation conversation(loaded->model, holder->session, settings);
  TurnStats stats;
  const TurnResult result = conversation.reply(system, prompt, stdout, &stats, &error);
  if (isatty(fileno(stdout))) std::fputc('\n', stdout);
  std::fflush(stdout);
  if (result == TurnResult::kError) return report("run", error, kExitError);
  if (result == TurnResult::kContextFull) {
    const unsigned context = mote_session_context_length(&holder->session);
    if (stats.prompt_tokens == 0) {
      return report("run", "the prompt does not fit the context of " + std::to_string(context) + " tokens (use --ctx)",
                    kExitError);
    }
    std::fprintf(stderr, "mote run: stopped: the context of %u tokens is full\n", context);
  }
  std::fprintf(stderr,
               "prompt: %zu tokens, %.1f tok/s | time to first token: %.1f ms | decode: %u tokens, %.1f tok/s\n",
               stats.prompt_tokens, stats.prompt_tokens / stats.prefill_seconds,
               (stats.prefill_seconds + stats.first_token_seconds) * 1e3, static_cast<unsigned>(stats.generated),
               stats.generated > 0 ? stats.generated / stats.decode_seconds : 0.0);
  return 0;
}

int command_chat(int argc, char **argv) {
  GenerationSettings settings;
  add_chat_defaults(&settings);
  std::string system;
  std::vector<Option> options = {{"--system", nullptr, Option::kString, &system}};
  settings.add_options(&options);
  std::vector<std::string> positional;
  std::string error;
  if (!parse_options(argc, argv, 2, options, &positional, &error)) return report("chat", error, kExitUsage);
  if (!positional.empty()) return report("chat", "unexpected argument '" + positional[0] + "'", kExitUsage);
  if (!settings.finish(&error)) return report("chat", error, kExitUsage);
  std::unique_ptr<LoadedModel> loaded;
  std::unique_ptr<SessionHolder> holder;
  if (!open_generation(settings, &loaded, &holder, &error)) return report("chat", error, kExitError);
  mote_model_info info;
  mote_model_info_get(&loaded->model, &info);
  if (info.chat_template == MOTE_CHAT_NONE) {
    return report("chat", "'" + settings.model_path + "' has no chat template: use mote run", kExitError);
  }

  const bool interactive = isatty(fileno(stdin)) != 0;
  const unsigned context = mote_session_context_length(&holder->session);
  if (interactive) {
    std::fprintf(stderr, "mote chat: %s, context %u tokens. Ctrl-D ends the conversation.\n",
                 settings.model_path.c_str(), context);
  }
  Conversation conversation(loaded->model, holder->session, settings);
  std::string line;
  for (;;) {
    if (interactive) {
      std::fputs("> ", stdout);
      std::fflush(stdout);
    }
    if (!std::getline(std::cin, line)) break;
    if (line.empty()) continue;
    TurnStats stats;
    TurnResult result = conversation.reply(system, line, stdout, &stats, &error);
    if (result == TurnResult::kContextFull && stats.prompt_tokens == 0) {
      // The message did not fit after the conversation so far: start over and try once more.
      std::fprintf(stderr, "mote chat: the context of %u tokens is full; starting a new conversation\n", context);
      conversation.restart();
      result = conversation.reply(system, line, stdout, &stats, &error);
      if (result == TurnResult::kContextFull && stats.prompt_tokens == 0) {
        std::fprintf(stderr, "mote chat: this message does not fit the context of %u tokens (use --ctx)\n", context);
        continue;
      }
    }
    if (result == TurnResult::kError && stats.prompt_tokens == 0) {  // nothing ran: the conversation goes on
      report("chat", error, kExitError);
      continue;
    }
    std::fputc('\n', stdout);
    std::fflush(stdout);
    if (result == TurnResult::kError) return report("chat", error, kExitError);
    if (result == TurnResult::kContextFull) {
      std::fprintf(stderr, "mote chat: the context of %u tokens is full; starting a new conversation\n", context);
      conversation.restart();
    }
  }
  if (interactive) std::fputc('\n', stdout);
  return 0;
}

}  // namespace mote::cli

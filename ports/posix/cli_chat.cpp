// `mote chat`: a multi-turn conversation through the model's chat template, keeping the KV
// cache across turns; `mote run --chat` is one turn of it with only the reply on stdout.
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>

#include "cli_common.hpp"

namespace mote::cli {
namespace {

// Set by SIGINT: stops the reply being generated (or, at the prompt, the conversation).
volatile std::sig_atomic_t interrupted = 0;

void on_interrupt(int) { interrupted = 1; }

struct TurnStats {
  size_t prompt_tokens = 0;
  double prefill_seconds = 0;
  Generated reply;
};

enum class TurnResult { kReplied, kContextFull, kError };

// True when some message cannot be tokenized at all (byte-level vocabularies may lack a few
// single-byte tokens: SmolLM2 has none for 21 bytes, e.g. 0x04 and 0xFF).
bool unrepresentable_text(const mote_model &model, const std::vector<mote_chat_message> &messages) {
  for (const mote_chat_message &m : messages) {
    std::vector<int32_t> ids(m.content_n + 1);
    size_t n = 0;
    if (mote_tokenize(&model, m.content, m.content_n, 0, ids.data(), ids.size(), &n) == MOTE_ERR_UNSUPPORTED)
      return true;
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
    const uint32_t position = mote_session_position(&session_);
    const bool first = position == 0;
    const std::vector<mote_chat_message> messages = turn_messages(system, user, first);
    const uint32_t room = mote_session_context_length(&session_) - mote_session_position(&session_);
    if (!could_fit_messages(messages, room)) return TurnResult::kContextFull;
    const Exchange before{position, owed_};
    std::vector<int32_t> tokens = owed_;
    if (!append_chat_tokens(messages, first, &tokens, error)) return TurnResult::kError;
    if (tokens.size() >= room) return TurnResult::kContextFull;  // the reply needs a token too

    const double start = now_seconds();
    if (prefill_with_progress(&session_, tokens.data(), tokens.size()) != MOTE_OK) {
      *error = mote_session_error(&session_);
      return TurnResult::kError;
    }
    owed_.clear();
    stats->prompt_tokens = tokens.size();
    stats->prefill_seconds = now_seconds() - start;
    const mote_status status = generate(model_, &session_, settings_, tokens.back(), out, &stats->reply, &interrupted);
    if (status == MOTE_ERR_CONTEXT_FULL) return TurnResult::kContextFull;
    if (status != MOTE_OK) {
      *error = stats->reply.error;
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
    exchanges_.push_back(before);
    return TurnResult::kReplied;
  }

  void restart() {
    mote_session_reset(&session_);
    owed_.clear();
    exchanges_.clear();
  }

  // Drops the last exchange (message and reply) by rewinding the cache to where it began; false
  // when there is none.
  bool undo() {
    if (exchanges_.empty()) return false;
    const Exchange &last = exchanges_.back();
    if (mote_session_truncate(&session_, last.position) != MOTE_OK) return false;
    owed_ = last.owed;
    exchanges_.pop_back();
    return true;
  }

  // Whether the message would fit a conversation started over (with the system message).
  bool fits_new_conversation(const std::string &system, const std::string &user) {
    const std::vector<mote_chat_message> messages = turn_messages(system, user, true);
    const uint32_t context = mote_session_context_length(&session_);
    if (!could_fit_messages(messages, context)) return false;
    std::vector<int32_t> tokens;
    std::string error;  // a message that cannot be tokenized: reply() says why
    return !append_chat_tokens(messages, true, &tokens, &error) || tokens.size() < context;
  }

 private:
  // The system message opens a conversation; then the user's message.
  static std::vector<mote_chat_message> turn_messages(const std::string &system, const std::string &user, bool first) {
    std::vector<mote_chat_message> messages;
    if (first && !system.empty()) messages.push_back({MOTE_ROLE_SYSTEM, system.data(), system.size()});
    messages.push_back({MOTE_ROLE_USER, user.data(), user.size()});
    return messages;
  }

  // False when the messages' bytes alone cannot become room tokens: known before tokenizing them.
  bool could_fit_messages(const std::vector<mote_chat_message> &messages, uint32_t room) const {
    size_t bytes = 0;
    for (const mote_chat_message &m : messages) bytes += m.content_n;
    return could_fit(model_, bytes, room);
  }

  // first: the conversation starts here (BOS, a default system message); later turns continue it.
  bool append_chat_tokens(const std::vector<mote_chat_message> &messages, bool first, std::vector<int32_t> *tokens,
                          std::string *error) {
    const uint32_t flags = MOTE_CHAT_ADD_ASSISTANT_PROMPT | (first ? 0u : uint32_t{MOTE_CHAT_CONTINUE});
    size_t bytes = 0;
    for (const mote_chat_message &m : messages) bytes += m.content_n;
    std::vector<int32_t> chat(bytes + 64);
    size_t n = 0;
    mote_status status =
        mote_chat_tokenize(&model_, messages.data(), messages.size(), flags, chat.data(), chat.size(), &n);
    if (status == MOTE_ERR_BUFFER_TOO_SMALL) {
      chat.resize(n);
      status = mote_chat_tokenize(&model_, messages.data(), messages.size(), flags, chat.data(), chat.size(), &n);
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
  // Where each answered exchange began: the position and the end-of-turn tokens then owed.
  struct Exchange {
    uint32_t position;
    std::vector<int32_t> owed;
  };
  std::vector<Exchange> exchanges_;
};

}  // namespace

int run_chat_turn(GenerationSettings &settings, const std::string &system, const std::string &prompt) {
  std::unique_ptr<LoadedModel> loaded;
  std::unique_ptr<SessionHolder> holder;
  std::string error;
  if (!open_generation(settings, &loaded, &holder, &error)) return report("run", error, kExitError);
  Conversation conversation(loaded->model, holder->session, settings);
  TurnStats stats;
  const TurnResult result = conversation.reply(system, prompt, stdout, &stats, &error);
  end_reply_line();
  if (result == TurnResult::kError) return report("run", error, kExitError);
  if (result == TurnResult::kContextFull) {
    const unsigned context = mote_session_context_length(&holder->session);
    if (stats.prompt_tokens == 0) {
      return report("run", "the prompt does not fit the context of " + std::to_string(context) + " tokens (use --ctx)",
                    kExitError);
    }
    stats_line("mote run: stopped: the context of %u tokens is full\n", context);
  }
  stats_line("prompt: %zu tokens, %.1f tok/s | time to first token: %.1f ms | decode: %u tokens, %.1f tok/s\n",
             stats.prompt_tokens, stats.prompt_tokens / stats.prefill_seconds,
             (stats.prefill_seconds + stats.reply.first_token_seconds) * 1e3, static_cast<unsigned>(stats.reply.tokens),
             stats.reply.tokens > 0 ? stats.reply.tokens / stats.reply.seconds : 0.0);
  return 0;
}

namespace {

// While a reply streams, typed keys are neither echoed into it nor left for the next prompt
// (a terminal only; restored when the reply ends).
class QuietTerminal {
 public:
  QuietTerminal() : active_(isatty(0) != 0 && tcgetattr(0, &saved_) == 0) {
    if (!active_) return;
    termios quiet = saved_;
    quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
    tcsetattr(0, TCSANOW, &quiet);
  }
  ~QuietTerminal() {
    if (!active_) return;
    tcflush(0, TCIFLUSH);  // the type-ahead
    tcsetattr(0, TCSANOW, &saved_);
  }

 private:
  termios saved_{};
  bool active_;
};

// The conversation so far, for /save.
struct Transcript {
  std::string system;
  std::vector<std::pair<std::string, std::string>> turns;  // (user, assistant)

  // /save FILE refuses an existing FILE (the user's file is never replaced silently); /save! FILE
  // replaces it. One line on stderr either way.
  void save(const std::string &path, bool replace) const {
    if (path.empty()) {
      std::fputs("mote chat: usage: /save FILE (the conversation as text; /save! FILE replaces a file)\n", stderr);
      return;
    }
    struct stat existing {};
    if (!replace && lstat(path.c_str(), &existing) == 0) {
      report("chat", "'" + path + "' exists; /save! " + path + " replaces it", kExitError);
      return;
    }
    std::string text = system.empty() ? "" : "system: " + system + "\n";
    for (const auto &[user, assistant] : turns) text += "user: " + user + "\nassistant: " + assistant + "\n";
    std::string error;
    if (!posix::write_file_atomically(path, text.data(), text.size(), &error)) {
      report("chat", error, kExitError);
      return;
    }
    std::fprintf(stderr, "mote chat: wrote %zu bytes to '%s'\n", text.size(), path.c_str());
  }
};

// "/save FILE" or "/save! FILE": true for either (even without FILE), with FILE trimmed.
bool parse_save(const std::string &line, std::string *path, bool *replace) {
  for (const std::string command : {"/save!", "/save"}) {
    if (line.compare(0, command.size(), command) != 0) continue;
    if (line.size() > command.size() && line[command.size()] != ' ') return false;
    const size_t first = line.find_first_not_of(' ', command.size());
    *path = first == std::string::npos ? "" : line.substr(first, line.find_last_not_of(' ') + 1 - first);
    *replace = command == "/save!";
    return true;
  }
  return false;
}

}  // namespace

int command_chat(int argc, char **argv) {
  GenerationSettings settings;
  settings.use_chat_defaults();
  std::string system;
  bool verbose = false;
  CommandHelp command{"chat",
                      "[-m MODEL] [OPTIONS]",
                      "Talk with an instruct model through its chat template, one message per line; the KV cache\n"
                      "keeps the conversation. Ctrl-C stops a reply; Ctrl-C at the prompt or Ctrl-D ends.\n"
                      "Commands: /clear (start over), /undo (drop the last message and its reply),\n"
                      "/system TEXT (new system message, starts over),\n"
                      "/save FILE (the conversation as text; /save! FILE replaces an existing FILE), /exit.\n"
                      "One message holds at most 1 MiB (and what the context can hold).",
                      {
                          {"-sys|--system-prompt|--system", Option::kString, &system, "TEXT", "the system message"},
                          {"--verbose", Option::kSwitch, &verbose, nullptr,
                           "after each reply, print tokens/s and the context used on stderr"},
                      }};
  settings.add_options(&command.options);
  std::vector<std::string> positional;
  const int parsed = parse_command(command, argc, argv, &positional);
  if (parsed != kParsed) return parsed;
  std::string error;
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
    std::fprintf(stderr,
                 "mote chat: %s, context %u tokens. Ctrl-C stops a reply; Ctrl-D or Ctrl-C at the prompt ends.\n"
                 "/clear, /undo, /system TEXT, /save FILE, /save! FILE, /exit.\n",
                 settings.model_path.c_str(), context);
  }
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);  // no SA_RESTART: Ctrl-C also ends a wait for input

  Conversation conversation(loaded->model, holder->session, settings);
  Transcript transcript{system, {}};
  const auto start_over = [&] {
    conversation.restart();
    transcript.turns.clear();
  };
  std::string line;
  for (;;) {
    if (interactive) {
      std::fputs("> ", stdout);
      std::fflush(stdout);
    }
    interrupted = 0;
    const ReadResult read = read_capped(stdin, '\n', kMaxChatLineBytes, &line);
    if (read == ReadResult::kEnd || interrupted) break;  // Ctrl-D, the end of piped input, or Ctrl-C
    if (read == ReadResult::kTooLong) {                  // piped input without end (a terminal's lines are short)
      return report("chat",
                    "a line of standard input is longer than the " + mib_text(kMaxChatLineBytes) +
                        " a message may hold; stopping",
                    kExitError);
    }
    if (line.empty()) continue;
    if (line == "/exit") break;
    if (line == "/clear") {
      start_over();
      std::fputs("mote chat: conversation cleared\n", stderr);
      continue;
    }
    if (line == "/undo") {
      const bool undone = conversation.undo();
      if (undone) transcript.turns.pop_back();
      std::fputs(undone ? "mote chat: last exchange dropped\n" : "mote chat: nothing to undo\n", stderr);
      continue;
    }
    if (line.compare(0, 8, "/system ") == 0) {
      system = transcript.system = line.substr(8);
      start_over();
      std::fputs("mote chat: new system message; conversation cleared\n", stderr);
      continue;
    }
    std::string save_path;
    bool replace = false;
    if (parse_save(line, &save_path, &replace)) {
      transcript.save(save_path, replace);
      continue;
    }
    TurnStats stats;
    TurnResult result;
    {
      QuietTerminal quiet;
      result = conversation.reply(system, line, stdout, &stats, &error);
      if (result == TurnResult::kContextFull && stats.prompt_tokens == 0 &&
          conversation.fits_new_conversation(system, line)) {
        // The message did not fit after the conversation so far, but fits alone: start over.
        std::fprintf(stderr, "mote chat: the context of %u tokens is full; starting a new conversation\n", context);
        start_over();
        result = conversation.reply(system, line, stdout, &stats, &error);
      }
    }
    if (result == TurnResult::kContextFull && stats.prompt_tokens == 0) {
      std::fprintf(stderr, "mote chat: this message does not fit the context of %u tokens (use --ctx)\n", context);
      continue;
    }
    if (result == TurnResult::kError && stats.prompt_tokens == 0) {  // nothing ran: the conversation goes on
      report("chat", error, kExitError);
      continue;
    }
    std::fputc('\n', stdout);
    std::fflush(stdout);
    transcript.turns.emplace_back(line, stats.reply.text);
    if (result == TurnResult::kError) return report("chat", error, kExitError);
    if (interrupted) std::fputs("mote chat: reply stopped\n", stderr);
    if (verbose) {
      std::fprintf(stderr, "mote chat: %u tokens, %.1f tok/s; prompt %zu tokens, %.1f tok/s; context %u/%u tokens\n",
                   static_cast<unsigned>(stats.reply.tokens),
                   stats.reply.tokens > 0 ? stats.reply.tokens / stats.reply.seconds : 0.0, stats.prompt_tokens,
                   stats.prompt_tokens / stats.prefill_seconds,
                   static_cast<unsigned>(mote_session_position(&holder->session)), context);
    }
    if (result == TurnResult::kContextFull) {
      std::fprintf(stderr, "mote chat: the context of %u tokens is full; starting a new conversation\n", context);
      start_over();
    }
  }
  if (interactive) std::fputc('\n', stdout);
  return 0;
}

}  // namespace mote::cli

// `mote chat`: a multi-turn conversation through the model's chat template, keeping the KV
// cache across turns; `mote run --chat` is one turn of it with only the reply on stdout.
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>

#include "cli_generate.hpp"
#include "cli_input.hpp"
#include "cli_model.hpp"
#include "cli_options.hpp"
#include "cli_prompt_cache.hpp"
#include "cli_terminal.hpp"
#include "commands.hpp"
#include "io/file_map.hpp"

namespace mote::cli {
namespace {

struct TurnStats {
  size_t prompt_tokens = 0;
  double prefill_seconds = 0;
  Generated reply;
};

// kInterrupted: Ctrl-C during the prompt; the cache is back where the turn began.
enum class TurnResult { kReplied, kContextFull, kError, kInterrupted };

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
  Conversation(const mote_model &model, mote_session &session, const GenerationSettings &settings,
               const PromptCache &cache)
      : model_(model), session_(session), settings_(settings), cache_(cache) {}

  // sampling: settings' sampler, or (/regenerate) another seed.
  TurnResult reply(const std::string &system, const std::string &user, FILE *out, TurnStats *stats,
                   std::string *error) {
    return reply(system, user, settings_, out, stats, error);
  }

  TurnResult reply(const std::string &system, const std::string &user, const GenerationSettings &sampling, FILE *out,
                   TurnStats *stats, std::string *error) {
    const uint32_t position = mote_session_position(&session_);
    const bool first = position == 0;
    const std::vector<mote_chat_message> messages = turn_messages(system, user, first);
    const uint32_t room = mote_session_context_length(&session_) - mote_session_position(&session_);
    if (!could_fit_messages(messages, room)) return TurnResult::kContextFull;
    const Exchange before{position, owed_, system, user};
    std::vector<int32_t> tokens = owed_;
    if (!append_chat_tokens(messages, first, &tokens, error)) return TurnResult::kError;
    if (tokens.size() >= room) return TurnResult::kContextFull;  // the reply needs a token too

    const double start = now_seconds();
    size_t reused = 0;
    // The first turn may reuse --prompt-cache's state (later ones continue the cache).
    const mote_status prefilled = first ? cache_.prefill(&session_, tokens, &reused)
                                        : prefill_with_progress(&session_, tokens.data(), tokens.size());
    if (prefilled == MOTE_ERR_ABORTED) {
      mote_session_truncate(&session_, position);  // the part of the prompt that ran goes too
      return TurnResult::kInterrupted;
    }
    if (prefilled != MOTE_OK) {
      *error = mote_session_error(&session_);
      return TurnResult::kError;
    }
    owed_.clear();
    stats->prompt_tokens = tokens.size() - reused;
    stats->prefill_seconds = now_seconds() - start;
    const mote_status status = generate(&session_, sampling, out, &stats->reply, interrupt_flag());
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

  // /regenerate: drops the last reply and samples another for the same message (the next seed,
  // so a sampling temperature gives a new reply); false when there is no reply to redo.
  bool regenerate(FILE *out, TurnStats *stats, TurnResult *result, std::string *error) {
    if (exchanges_.empty()) return false;
    const Exchange last = exchanges_.back();
    if (!undo()) return false;
    GenerationSettings sampling = settings_;
    sampling.sampler.seed += ++regenerations_;
    *result = reply(last.system, last.user, sampling, out, stats, error);
    return true;
  }

  // After /load: the state's tokens are the conversation; a non-empty one ended with a reply
  // (what /save writes), whose end of turn the next message sends. Earlier exchanges cannot be
  // undone (their boundaries are not in the state).
  void adopt_loaded_state() {
    owed_.clear();
    exchanges_.clear();
    if (mote_session_position(&session_) == 0) return;
    size_t n = 0;
    owed_.assign(8, 0);
    if (mote_chat_end_of_turn(&model_, owed_.data(), owed_.size(), &n) != MOTE_OK) n = 0;
    owed_.resize(n);
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
  const PromptCache &cache_;
  std::vector<int32_t> owed_;  // the previous reply's end-of-turn tokens
  // Where each answered exchange began (the position and the end-of-turn tokens then owed), and
  // its messages (for /regenerate).
  struct Exchange {
    uint32_t position;
    std::vector<int32_t> owed;
    std::string system, user;
  };
  std::vector<Exchange> exchanges_;
  uint64_t regenerations_ = 0;
};

}  // namespace

int run_chat_turn(GenerationSettings &settings, const PromptCache &cache, const std::string &system,
                  const std::string &prompt) {
  std::unique_ptr<LoadedModel> loaded;
  std::unique_ptr<SessionHolder> holder;
  std::string error;
  if (!open_generation(settings, &loaded, &holder, &error)) return report("run", error, kExitError);
  if (!cache.may_write(&holder->session, &error)) return report("run", error, kExitError);
  catch_interrupt();
  Conversation conversation(loaded->model, holder->session, settings, cache);
  TurnStats stats;
  const TurnResult result = conversation.reply(system, prompt, stdout, &stats, &error);
  end_reply_line();
  if (result == TurnResult::kError) return report("run", error, kExitError);
  if (result == TurnResult::kInterrupted) return report("run", "interrupted", kExitInterrupted);
  if (result == TurnResult::kContextFull) {
    const unsigned context = mote_session_context_length(&holder->session);
    if (stats.prompt_tokens == 0) {
      return report("run", "the prompt does not fit the context of " + std::to_string(context) + " tokens (use --ctx)",
                    kExitError);
    }
    stats_line("mote run: stopped: the context of %u tokens is full\n", context);
  }
  stats_line("prompt: %zu tokens, %.1f tok/s | time to first token: %.1f ms | decode: %u tokens, %.1f tok/s%s\n",
             stats.prompt_tokens, stats.prompt_tokens / stats.prefill_seconds,
             (stats.prefill_seconds + stats.reply.first_token_seconds) * 1e3, static_cast<unsigned>(stats.reply.tokens),
             stats.reply.tokens > 0 ? stats.reply.tokens / stats.reply.seconds : 0.0, draft_stats(stats.reply).c_str());
  if (interrupted()) return report("run", "interrupted", kExitInterrupted);
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

// "/NAME FILE", and for a command that writes FILE (replace given) "/NAME! FILE": true for
// either (even without FILE), with FILE trimmed of spaces and tabs and *replace for the "!" form.
bool parse_file_command(const std::string &line, const std::string &name, std::string *path, bool *replace) {
  const bool bang = replace != nullptr && line.compare(0, name.size() + 1, name + "!") == 0;
  const size_t end = name.size() + (bang ? 1 : 0);
  if (line.compare(0, name.size(), name) != 0) return false;
  if (line.size() > end && line[end] != ' ' && line[end] != '\t') return false;
  const size_t first = line.find_first_not_of(" \t", end);
  *path = first == std::string::npos ? "" : line.substr(first, line.find_last_not_of(" \t") + 1 - first);
  if (replace != nullptr) *replace = bang;
  return true;
}

// Whether path may be written: /save and /export never replace a file silently (the "!" forms
// do). One line on stderr when not.
bool may_write(const std::string &command, const std::string &path, bool replace, const char *what) {
  if (path.empty()) {
    std::fprintf(stderr, "mote chat: usage: %s FILE (%s; %s! FILE replaces a file)\n", command.c_str(), what,
                 command.c_str());
    return false;
  }
  struct stat existing {};
  if (!replace && lstat(path.c_str(), &existing) == 0) {
    report("chat", "'" + path + "' exists; " + command + "! " + path + " replaces it", kExitError);
    return false;
  }
  return true;
}

// The conversation so far as text, for /export.
struct Transcript {
  std::string system;
  std::vector<std::pair<std::string, std::string>> turns;  // (user, assistant)

  void write(const std::string &path, bool replace) const {
    if (!may_write("/export", path, replace, "the conversation as text")) return;
    std::string text = system.empty() ? "" : "system: " + system + "\n";
    for (const auto &[user, assistant] : turns) text += "user: " + user + "\nassistant: " + assistant + "\n";
    std::string error;
    if (!posix::write_file_atomically(path, text.data(), text.size(), &error, posix::kPrivateFileMode)) {
      report("chat", error, kExitError);
      return;
    }
    std::fprintf(stderr, "mote chat: wrote %zu bytes to '%s'\n", text.size(), path.c_str());
  }
};

// The chat loop's state and its slash commands.
struct ChatLoop {
  Conversation &conversation;
  mote_session &session;
  std::string &system;
  Transcript transcript;
  unsigned context;
  bool verbose;

  void start_over() {
    conversation.restart();
    transcript.turns.clear();
  }

  // Handles line when it is a command (true), else false: a message for the model.
  bool command(const std::string &line) {
    std::string path;
    bool replace = false;
    if (line == "/clear") {
      start_over();
      std::fputs("mote chat: conversation cleared\n", stderr);
    } else if (line == "/undo") {
      const bool undone = conversation.undo();
      if (undone) transcript.turns.pop_back();
      std::fputs(undone ? "mote chat: last exchange dropped\n" : "mote chat: nothing to undo\n", stderr);
    } else if (line == "/regenerate") {
      regenerate();
    } else if (line.compare(0, 8, "/system ") == 0) {
      system = transcript.system = line.substr(8);
      start_over();
      std::fputs("mote chat: new system message; conversation cleared\n", stderr);
    } else if (parse_file_command(line, "/export", &path, &replace)) {
      transcript.write(path, replace);
    } else if (parse_file_command(line, "/save", &path, &replace)) {
      save(path, replace);
    } else if (parse_file_command(line, "/load", &path, nullptr)) {
      load(path);
    } else {
      return false;
    }
    return true;
  }

  void save(const std::string &path, bool replace) {
    if (!may_write("/save", path, replace, "the session state, for /load")) return;
    std::string error;
    if (!save_state_file(&session, path, &error)) {
      report("chat", error, kExitError);
      return;
    }
    std::fprintf(stderr, "mote chat: saved the session (%u tokens) to '%s'\n",
                 static_cast<unsigned>(mote_session_position(&session)), path.c_str());
  }

  void load(const std::string &path) {
    std::string error;
    if (path.empty()) {
      std::fputs("mote chat: usage: /load FILE (a session state written by /save)\n", stderr);
    } else if (!load_state_file(&session, path, &error)) {
      report("chat", error + " (the conversation is unchanged)", kExitError);
    } else {
      conversation.adopt_loaded_state();
      transcript.turns.clear();
      std::fprintf(stderr, "mote chat: loaded '%s' (%u tokens)\n", path.c_str(),
                   static_cast<unsigned>(mote_session_position(&session)));
    }
  }

  void regenerate() {
    if (transcript.turns.empty()) {
      std::fputs("mote chat: no reply to regenerate\n", stderr);
      return;
    }
    const std::string user = transcript.turns.back().first;
    TurnStats stats;
    TurnResult result = TurnResult::kReplied;
    std::string error;
    bool redone = false;
    {
      QuietTerminal quiet;
      redone = conversation.regenerate(stdout, &stats, &result, &error);
    }
    if (!redone) {
      std::fputs("mote chat: no reply to regenerate\n", stderr);
      return;
    }
    transcript.turns.pop_back();
    if (!finish_turn(user, result, stats, error)) ended = true;
  }

  // After a turn: the transcript and the notes on stderr; false when the chat must end (an error).
  bool finish_turn(const std::string &user, TurnResult result, const TurnStats &stats, const std::string &error) {
    if (result == TurnResult::kInterrupted) {
      std::fputs("\nmote chat: stopped; the message was dropped\n", stderr);
      return true;
    }
    if (result == TurnResult::kContextFull && stats.prompt_tokens == 0) {
      std::fprintf(stderr, "mote chat: this message does not fit the context of %u tokens (use --ctx)\n", context);
      return true;
    }
    if (result == TurnResult::kError && stats.prompt_tokens == 0) {  // nothing ran: the conversation goes on
      report("chat", error, kExitError);
      return true;
    }
    std::fputc('\n', stdout);
    std::fflush(stdout);
    transcript.turns.emplace_back(user, stats.reply.text);
    if (result == TurnResult::kError) {
      report("chat", error, kExitError);
      return false;
    }
    if (interrupted()) std::fputs("mote chat: reply stopped\n", stderr);
    if (verbose) {
      std::fprintf(stderr, "mote chat: %u tokens, %.1f tok/s; prompt %zu tokens, %.1f tok/s; context %u/%u tokens\n",
                   static_cast<unsigned>(stats.reply.tokens),
                   stats.reply.tokens > 0 ? stats.reply.tokens / stats.reply.seconds : 0.0, stats.prompt_tokens,
                   stats.prompt_tokens / stats.prefill_seconds, static_cast<unsigned>(mote_session_position(&session)),
                   context);
    }
    if (result == TurnResult::kContextFull) {
      std::fprintf(stderr, "mote chat: the context of %u tokens is full; starting a new conversation\n", context);
      start_over();
    }
    return true;
  }

  // One message: the reply (starting over when it fits only a new conversation); false when the
  // chat must end.
  bool message(const std::string &line) {
    TurnStats stats;
    TurnResult result;
    std::string error;
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
    return finish_turn(line, result, stats, error);
  }

  bool ended = false;  // an error in /regenerate's turn ends the chat
};

}  // namespace

int command_chat(int argc, char **argv) {
  GenerationSettings settings;
  settings.use_chat_defaults();
  PromptCache cache;
  std::string system;
  bool verbose = false;
  CommandHelp command{"chat",
                      "[-m MODEL] [OPTIONS]",
                      "Talk with an instruct model through its chat template, one message per line; the KV cache\n"
                      "keeps the conversation. Ctrl-C stops a reply (or drops a message still being read in);\n"
                      "Ctrl-C at the prompt or Ctrl-D ends.\n"
                      "Commands: /clear (start over), /undo (drop the last message and its reply),\n"
                      "/regenerate (drop the last reply and sample another), /system TEXT (new system message,\n"
                      "starts over), /save FILE (the whole session state, binary), /load FILE (a state /save\n"
                      "wrote: the conversation goes on from there), /export FILE (the conversation as text);\n"
                      "/save! and /export! replace an existing FILE. /exit.\n"
                      "One message holds at most 1 MiB (and what the context can hold).",
                      {
                          {"-sys|--system-prompt|--system", Option::kString, &system, "TEXT", "the system message"},
                          {"--verbose", Option::kSwitch, &verbose, nullptr,
                           "after each reply, print tokens/s and the context used on stderr"},
                      }};
  settings.add_options(&command.options);
  cache.add_options(&command.options);
  std::vector<std::string> positional;
  const int parsed = parse_command(command, argc, argv, &positional);
  if (parsed != kParsed) return parsed;
  std::string error;
  if (!positional.empty()) return report("chat", "unexpected argument '" + positional[0] + "'", kExitUsage);
  if (!settings.finish(&error)) return report("chat", error, kExitUsage);
  if (!cache.check_options(&error)) return report("chat", error, kExitUsage);
  std::unique_ptr<LoadedModel> loaded;
  std::unique_ptr<SessionHolder> holder;
  if (!open_generation(settings, &loaded, &holder, &error)) return report("chat", error, kExitError);
  if (!cache.may_write(&holder->session, &error)) return report("chat", error, kExitError);
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
                 "/clear, /undo, /regenerate, /system TEXT, /save FILE, /load FILE, /export FILE, /exit.\n",
                 settings.model_path.c_str(), context);
  }
  catch_interrupt();
  Conversation conversation(loaded->model, holder->session, settings, cache);
  ChatLoop chat{conversation, holder->session, system, Transcript{system, {}}, context, verbose};
  std::string line;
  while (!chat.ended) {
    if (interactive) {
      std::fputs("> ", stdout);
      std::fflush(stdout);
    }
    clear_interrupt();
    const ReadResult read = read_capped(stdin, '\n', kMaxChatLineBytes, &line);
    if (read == ReadResult::kEnd || interrupted()) break;  // Ctrl-D, the end of piped input, or Ctrl-C
    if (read == ReadResult::kTooLong) {                    // piped input without end (a terminal's lines are short)
      return report("chat",
                    "a line of standard input is longer than the " + mib_text(kMaxChatLineBytes) +
                        " a message may hold; stopping",
                    kExitError);
    }
    if (line.empty()) continue;
    if (line == "/exit") break;
    if (chat.command(line)) continue;
    if (!chat.message(line)) return kExitError;
  }
  if (chat.ended) return kExitError;
  if (interactive) std::fputc('\n', stdout);
  return 0;
}

}  // namespace mote::cli

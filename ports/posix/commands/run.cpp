// `mote run`: generate text, streaming the prompt and each new piece to stdout.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "cli_generate.hpp"
#include "cli_input.hpp"
#include "cli_model.hpp"
#include "cli_options.hpp"
#include "cli_prompt_cache.hpp"
#include "cli_terminal.hpp"
#include "commands.hpp"

namespace mote::cli {
namespace {

void print_prompt(const mote_model &model, const std::vector<int32_t> &tokens) {
  std::vector<char> piece(256);
  for (size_t i = 0; i < tokens.size(); ++i) {
    const int32_t prev = i == 0 ? -1 : tokens[i - 1];
    size_t n = 0;
    if (mote_detokenize(&model, prev, tokens[i], piece.data(), piece.size(), &n) == MOTE_ERR_BUFFER_TOO_SMALL) {
      piece.resize(n);
      mote_detokenize(&model, prev, tokens[i], piece.data(), piece.size(), &n);
    }
    print_on_reply_line(piece.data(), n);
  }
  std::fflush(stdout);
}

}  // namespace

int command_run(int argc, char **argv) {
  GenerationSettings settings;
  PromptCache cache;
  std::string prompt, prompt_file, system;
  bool chat = false, prompt_given = false, no_display_prompt = false;
  CommandHelp command{
      "run",
      "[-m MODEL] (-p PROMPT | -f FILE) [OPTIONS]",
      "Print the prompt and the text the model continues it with (stdout: exactly that text;\n"
      "statistics on stderr). --chat sends the prompt as a user message through the model's\n"
      "chat template and prints the reply alone, with chat's sampling defaults.",
      {
          {"-p|--prompt", Option::kString, &prompt, "TEXT", "the prompt", &prompt_given},
          {"-f|--file", Option::kString, &prompt_file, "FILE", "read the prompt from FILE (-: standard input)"},
          {"--no-display-prompt", Option::kSwitch, &no_display_prompt, nullptr,
           "print only the generated text, not the prompt"},
          {"--chat", Option::kSwitch, &chat, nullptr, "one chat turn: print the reply only"},
          {"-sys|--system-prompt|--system", Option::kString, &system, "TEXT", "the system message of --chat"},
      }};
  // run --chat shares chat's defaults; the help page shows the plain ones.
  const bool chat_requested = [&] {
    for (int i = 2; i < argc; ++i) {
      if (std::string(argv[i]) == "--chat") return true;
    }
    return false;
  }();
  if (chat_requested) settings.use_chat_defaults();
  settings.add_options(&command.options);
  cache.add_options(&command.options);
  std::vector<std::string> positional;
  const int parsed = parse_command(command, argc, argv, &positional);
  if (parsed != kParsed) return parsed;
  std::string error;
  if (!positional.empty()) return report("run", "unexpected argument '" + positional[0] + "'", kExitUsage);
  if (!system.empty() && !chat) return report("run", "--system needs --chat", kExitUsage);
  if (!cache.check_options(&error)) return report("run", error, kExitUsage);
  if (prompt_given && !prompt_file.empty()) return report("run", "give -p or -f, not both", kExitUsage);
  if (!settings.finish(&error)) return report("run", error, kExitUsage);
  if (!prompt_given && prompt_file.empty()) {
    return report("run", "a prompt is required (-p TEXT or -f FILE)", kExitUsage);
  }
  if (!prompt_file.empty() && !read_prompt_file(prompt_file, &prompt, &error)) return report("run", error, kExitError);
  if (chat) return run_chat_turn(settings, cache, system, prompt);

  std::unique_ptr<LoadedModel> loaded;
  std::unique_ptr<SessionHolder> holder;
  if (!open_generation(settings, &loaded, &holder, &error)) return report("run", error, kExitError);
  mote_session *session = &holder->session;
  if (!cache.may_write(session, &error)) return report("run", error, kExitError);

  const uint32_t capacity = mote_session_context_length(session);
  if (!could_fit(loaded->model, prompt.size(), capacity)) {  // refused before tokenizing it all
    return report("run",
                  "the prompt (" + std::to_string(prompt.size()) + " bytes) cannot fit the context of " +
                      std::to_string(capacity) + " tokens: a token stands for at most " +
                      std::to_string(longest_token_bytes(loaded->model)) +
                      " bytes here (use a shorter prompt or a larger --ctx)",
                  kExitError);
  }
  std::vector<int32_t> tokens;
  if (!tokenize(loaded->model, prompt, &tokens, &error)) return report("run", error, kExitError);
  if (tokens.empty())
    return report("run", "the prompt is empty and this model has no BOS token to start from", kExitUsage);
  if (tokens.size() > capacity) {
    return report("run",
                  "the prompt is " + std::to_string(tokens.size()) + " tokens; the context holds " +
                      std::to_string(capacity) + " (use a shorter prompt or a larger --ctx)",
                  kExitError);
  }
  if (!no_display_prompt) print_prompt(loaded->model, tokens);

  catch_interrupt();
  const double prefill_start = now_seconds();
  size_t reused = 0;
  mote_status status = cache.prefill(session, tokens, &reused);
  const double prefill_seconds = now_seconds() - prefill_start;
  if (status == MOTE_ERR_ABORTED) {
    end_reply_line();
    return report("run", "interrupted", kExitInterrupted);
  }
  if (status != MOTE_OK) return report("run", mote_session_error(session), kExitError);
  Generated generated;
  status = generate(session, settings, stdout, &generated, interrupt_flag());
  end_reply_line();
  if (status == MOTE_ERR_CONTEXT_FULL) {
    stats_line("mote run: stopped: the context of %u tokens is full\n", static_cast<unsigned>(capacity));
  } else if (status != MOTE_OK) {
    begin_stderr_line();
    return report("run", generated.error, kExitError);
  }
  if (reused > 0) stats_line("prompt cache: %zu of the prompt's %zu tokens reused\n", reused, tokens.size());
  const size_t prefilled = tokens.size() - reused;
  stats_line("prompt: %zu tokens, %.1f tok/s | time to first token: %.1f ms | decode: %u tokens, %.1f tok/s%s\n",
             prefilled, prefilled / prefill_seconds, (prefill_seconds + generated.first_token_seconds) * 1e3,
             static_cast<unsigned>(generated.tokens), generated.tokens > 0 ? generated.tokens / generated.seconds : 0.0,
             draft_stats(generated).c_str());
  if (interrupted()) return report("run", "interrupted", kExitInterrupted);
  return 0;
}

}  // namespace mote::cli

// `mote run`: generate text, streaming the prompt and each new piece to stdout.
#include <unistd.h>

#include <cstdio>
#include <ctime>

#include "cli_common.hpp"

namespace mote::cli {
namespace {

struct Stream {
  double start = 0;
  double first_token = 0;  // seconds from start to the first generated token
  uint32_t count = 0;
};

int print_piece(void *user, int32_t, const char *piece, size_t n) {
  Stream &stream = *static_cast<Stream *>(user);
  if (stream.count++ == 0) stream.first_token = now_seconds() - stream.start;
  std::fwrite(piece, 1, n, stdout);
  std::fflush(stdout);
  return 0;
}

}  // namespace

int command_run(int argc, char **argv) {
  GenerationSettings settings;
  std::string prompt, system;
  bool chat = false;
  std::vector<Option> options = {
      {"--prompt", "-p", Option::kString, &prompt},
      {"--chat", nullptr, Option::kSwitch, &chat},
      {"--system", nullptr, Option::kString, &system},
  };
  settings.add_options(&options);
  std::vector<std::string> positional;
  std::string error;
  if (!parse_options(argc, argv, 2, options, &positional, &error)) return report("run", error, kExitUsage);
  if (!positional.empty()) return report("run", "unexpected argument '" + positional[0] + "'", kExitUsage);
  if (!system.empty() && !chat) return report("run", "--system needs --chat", kExitUsage);
  if (!settings.finish(&error)) return report("run", error, kExitUsage);
  if (chat) return run_chat_turn(settings, system, prompt);

  std::unique_ptr<LoadedModel> loaded;
  std::unique_ptr<SessionHolder> holder;
  if (!open_generation(settings, &loaded, &holder, &error)) return report("run", error, kExitError);
  mote_session *session = &holder->session;
  mote_sampler_options &sampler = settings.sampler;
  const uint32_t n_new = settings.n_new;

  std::vector<int32_t> tokens;
  if (!tokenize(loaded->model, prompt, &tokens, &error)) return report("run", error, kExitError);
  if (tokens.empty())
    return report("run", "the prompt is empty and this model has no BOS token to start from", kExitUsage);
  const uint32_t capacity = mote_session_context_length(session);
  if (tokens.size() > capacity) {
    return report("run",
                  "the prompt is " + std::to_string(tokens.size()) + " tokens; the context holds " +
                      std::to_string(capacity) + " (use a shorter prompt or a larger --ctx)",
                  kExitError);
  }
  std::vector<char> piece(256);
  for (size_t i = 0; i < tokens.size(); ++i) {
    const int32_t prev = i == 0 ? -1 : tokens[i - 1];
    size_t n = 0;
    if (mote_detokenize(&loaded->model, prev, tokens[i], piece.data(), piece.size(), &n) == MOTE_ERR_BUFFER_TOO_SMALL) {
      piece.resize(n);
      mote_detokenize(&loaded->model, prev, tokens[i], piece.data(), piece.size(), &n);
    }
    std::fwrite(piece.data(), 1, n, stdout);
  }
  std::fflush(stdout);

  Stream stream;
  stream.start = now_seconds();
  mote_status status = mote_prefill(session, tokens.data(), tokens.size());
  const double prefill_seconds = now_seconds() - stream.start;
  if (status != MOTE_OK) return report("run", mote_session_error(session), kExitError);
  const double decode_start = now_seconds();
  uint32_t generated = 0;
  status = mote_generate(session, nullptr, 0, n_new, &sampler, print_piece, &stream, &generated);
  const double decode_seconds = now_seconds() - decode_start;
  if (isatty(fileno(stdout))) std::fputc('\n', stdout);  // piped output stays exactly the text
  std::fflush(stdout);
  if (status == MOTE_ERR_CONTEXT_FULL) {
    std::fprintf(stderr, "mote run: stopped: the context of %u tokens is full\n", static_cast<unsigned>(capacity));
  } else if (status != MOTE_OK) {
    return report("run", mote_session_error(session), kExitError);
  }
  std::fprintf(stderr,
               "prompt: %zu tokens, %.1f tok/s | time to first token: %.1f ms | decode: %u tokens, %.1f tok/s\n",
               tokens.size(), tokens.size() / prefill_seconds, stream.first_token * 1e3,
               static_cast<unsigned>(generated), generated > 0 ? generated / decode_seconds : 0.0);
  return 0;
}

}  // namespace mote::cli

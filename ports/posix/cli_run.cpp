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
  std::string model_path, prompt, kv = "f32";
  // Every CPU this process may use by default: decoding is bandwidth-bound and each thread adds.
  uint32_t n_new = 256, threads = available_cpus(), context = 0, batch = 0;
  mote_sampler_options sampler = mote_sampler_options_default();
  bool seed_given = false;
  const std::vector<Option> options = {
      {"--model", "-m", Option::kString, &model_path},
      {"--prompt", "-p", Option::kString, &prompt},
      {"--tokens", "-n", Option::kU32, &n_new},
      {"--temp", nullptr, Option::kF32, &sampler.temperature},
      {"--top-k", nullptr, Option::kI32, &sampler.top_k},
      {"--top-p", nullptr, Option::kF32, &sampler.top_p},
      {"--min-p", nullptr, Option::kF32, &sampler.min_p},
      {"--repeat-penalty", nullptr, Option::kF32, &sampler.repetition_penalty},
      {"--seed", nullptr, Option::kU64, &sampler.seed, &seed_given},
      {"--threads", "-t", Option::kU32, &threads},
      {"--ctx", nullptr, Option::kU32, &context},
      {"--batch", "-b", Option::kU32, &batch},
      {"--kv", nullptr, Option::kString, &kv},
  };
  std::vector<std::string> positional;
  std::string error;
  if (!parse_options(argc, argv, 2, options, &positional, &error)) return report("run", error, kExitUsage);
  if (!positional.empty()) return report("run", "unexpected argument '" + positional[0] + "'", kExitUsage);
  if (model_path.empty()) return report("run", "no model given (-m MODEL)", kExitUsage);
  if (kv != "f32" && kv != "f16") return report("run", "--kv must be f32 or f16", kExitUsage);
  if (threads == 0 || threads > kMaxThreads) {
    return report("run", "--threads must be in [1, " + std::to_string(kMaxThreads) + "]", kExitUsage);
  }
  char message[256] = "";
  if (mote_sampler_options_validate(&sampler, message, sizeof message) != MOTE_OK) {
    return report("run", message, kExitUsage);
  }
  if (!seed_given) sampler.seed = static_cast<uint64_t>(std::time(nullptr));

  auto loaded = load_model(model_path, &error);
  if (!loaded) return report("run", error, kExitError);
  mote_session_options session_options = mote_session_options_default();
  session_options.context_length = context;
  session_options.kv_dtype = kv == "f16" ? MOTE_KV_F16 : MOTE_KV_F32;
  session_options.n_threads = threads;
  session_options.batch_size = batch;
  auto holder = open_session(loaded->model, session_options, &error);
  if (!holder) return report("run", error, kExitError);
  mote_session *session = &holder->session;

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

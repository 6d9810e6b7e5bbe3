// `mote perplexity`: perplexity over a text file, windowed as llama.cpp's llama-perplexity does.
//
// The whole file is tokenized once (BOS first when the model adds one) and cut into consecutive,
// non-overlapping windows of N tokens (a tail shorter than N is dropped). Each window runs in a
// fresh session with its first token replaced by BOS (when the model has one), and only its
// second half is scored: with first = N/2, the logits at positions first .. N-2 predict tokens
// first+1 .. N-1, so N-1-first tokens per window (255 of 512), exactly llama.cpp's count, so the
// values compare with llama-perplexity's. Positions 0..first are prefilled (only the last one's
// logits are computed); the rest are decoded one token at a time.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "cli_common.hpp"

namespace mote::cli {
namespace {

constexpr uint32_t kDefaultMaxWindow = 512;  // llama.cpp's default context for perplexity
constexpr uint32_t kMinWindow = 4;           // at least one scored token after the first half

// -log p(token) under softmax(logits), in double.
double negative_log_likelihood(const float *logits, uint32_t vocab, int32_t token) {
  const float max_logit = *std::max_element(logits, logits + vocab);
  double sum = 0.0;
  for (uint32_t i = 0; i < vocab; ++i) sum += std::exp(static_cast<double>(logits[i]) - max_logit);
  return std::log(sum) - (static_cast<double>(logits[token]) - max_logit);
}

// Running sums of the scored tokens' negative log-likelihoods.
struct Score {
  double nll = 0, nll2 = 0;
  uint64_t count = 0;

  void add(double v) {
    nll += v;
    nll2 += v * v;
    ++count;
  }
  double perplexity() const { return std::exp(nll / static_cast<double>(count)); }
  // llama.cpp's standard error of the perplexity: ppl * sqrt(var / (n - 1)).
  double standard_error() const {
    const double n = static_cast<double>(count);
    const double mean = nll / n, variance = nll2 / n - mean * mean;
    return count > 1 && variance > 0 ? perplexity() * std::sqrt(variance / (n - 1)) : 0.0;
  }
};

}  // namespace

int command_perplexity(int argc, char **argv) {
  std::string model_path, text_path;
  uint32_t window = 0, threads = available_cpus(), batch = mote_session_options_default().batch_size, chunks = 0;
  bool window_given = false, chunks_given = false;
  KvCacheOptions kv;
  CommandHelp command{"perplexity",
                      "-m MODEL -f TEXT [OPTIONS]",
                      "The perplexity of TEXT in windows of N tokens, scoring the second half of each as llama.cpp's\n"
                      "llama-perplexity does; running values on stderr.",
                      {
                          {"-m|--model", Option::kString, &model_path, "FILE", "the model"},
                          {"-f|--file", Option::kString, &text_path, "FILE", "the text"},
                          {"-c|--ctx-size|--ctx", Option::kU32, &window, "N", "window length in tokens", &window_given,
                           "the model's context, at most 512"},
                          {"-t|--threads", Option::kU32, &threads, "N", "threads"},
                          {"-b|--batch-size|--batch", Option::kU32, &batch, "N", "prompt tokens per forward pass"},
                          {"--chunks", Option::kU32, &chunks, "K", "score at most K windows", &chunks_given, "all"},
                      }};
  kv.add_options(&command.options);
  std::vector<std::string> positional;
  const int parsed = parse_command(command, argc, argv, &positional);
  if (parsed != kParsed) return parsed;
  std::string error;
  if (!positional.empty()) return report("perplexity", "unexpected argument '" + positional[0] + "'", kExitUsage);
  if (model_path.empty()) return report("perplexity", "no model given (-m MODEL)", kExitUsage);
  if (text_path.empty()) return report("perplexity", "no text file given (-f TEXT)", kExitUsage);
  if (threads == 0 || threads > kMaxThreads)
    return report("perplexity", "--threads must be in [1, " + std::to_string(kMaxThreads) + "]", kExitUsage);
  if (!kv.finish(&error)) return report("perplexity", error, kExitUsage);
  if (chunks_given && chunks == 0) return report("perplexity", "--chunks must be at least 1", kExitUsage);

  auto loaded = load_model(model_path, &error);
  if (!loaded) return report("perplexity", error, kExitError);
  const mote_model &model = loaded->model;
  mote_model_info info;
  mote_model_info_get(&model, &info);
  if (!window_given) window = std::min(info.max_seq_len, kDefaultMaxWindow);
  if (window < kMinWindow || window > info.max_seq_len) {
    return report("perplexity",
                  "--ctx must be in [" + std::to_string(kMinWindow) + ", " + std::to_string(info.max_seq_len) +
                      "] (the model's context)",
                  kExitUsage);
  }

  posix::FileMap text_file;
  if (!text_file.open(text_path, &error)) return report("perplexity", error, kExitError);
  const std::string text(static_cast<const char *>(text_file.data()), text_file.size());
  std::vector<int32_t> tokens;
  if (!tokenize(model, text, &tokens, &error)) return report("perplexity", "'" + text_path + "': " + error, kExitError);
  if (tokens.size() < window) {
    return report("perplexity",
                  "'" + text_path + "' is " + std::to_string(tokens.size()) + " tokens; one window needs " +
                      std::to_string(window) + " (use a longer text or a smaller --ctx)",
                  kExitError);
  }
  size_t n_windows = tokens.size() / window;
  if (chunks_given) n_windows = std::min<size_t>(n_windows, chunks);

  mote_session_options session_options = mote_session_options_default();
  session_options.context_length = window;
  session_options.kv_dtype = kv.dtype;
  session_options.n_threads = threads;
  session_options.batch_size = batch;
  auto holder = open_session(model, session_options, &error);
  if (!holder) return report("perplexity", error, kExitError);
  mote_session *session = &holder->session;

  const uint32_t first = window / 2;
  const bool replace_with_bos = info.add_bos != 0 && info.bos_id >= 0;
  std::fprintf(stderr,
               "perplexity over %zu tokens: %zu windows of %u tokens, scoring the last %u of each, %u thread%s\n",
               tokens.size(), n_windows, window, window - 1 - first, threads, threads == 1 ? "" : "s");
  const double start = now_seconds();
  Score score;
  std::vector<int32_t> batch_tokens(window);
  for (size_t w = 0; w < n_windows; ++w) {
    std::copy_n(tokens.begin() + static_cast<std::ptrdiff_t>(w * window), window, batch_tokens.begin());
    if (replace_with_bos) batch_tokens[0] = info.bos_id;
    mote_session_reset(session);
    if (mote_prefill(session, batch_tokens.data(), first + 1) != MOTE_OK)
      return report("perplexity", mote_session_error(session), kExitError);
    const float *logits = mote_logits(session);
    for (uint32_t j = first + 1; j < window; ++j) {
      score.add(negative_log_likelihood(logits, info.vocab_size, batch_tokens[j]));
      if (j + 1 < window && mote_decode(session, batch_tokens[j], &logits) != MOTE_OK)
        return report("perplexity", mote_session_error(session), kExitError);
    }
    std::fprintf(stderr, "[%zu]%.4f,", w + 1, score.perplexity());
    std::fflush(stderr);
  }
  const double seconds = now_seconds() - start;
  const double evaluated = static_cast<double>(n_windows) * (window - 1);  // tokens through the model
  std::fprintf(stderr, "\ntime: %.2f s, %.1f tok/s\n", seconds, evaluated / seconds);
  std::printf("perplexity: %.4f +/- %.5f (%zu windows of %u tokens, %llu scored tokens)\n", score.perplexity(),
              score.standard_error(), n_windows, window, static_cast<unsigned long long>(score.count));
  return 0;
}

}  // namespace mote::cli

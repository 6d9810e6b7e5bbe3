// `mote perplexity`: perplexity over a text file, windowed as llama.cpp's llama-perplexity does.
//
// The file is tokenized once (BOS first when the model adds one) and cut into consecutive,
// non-overlapping windows of N tokens (a tail shorter than N is dropped). Only the text the
// windows need is read and tokenized (TextTokens): all of it, at most kMaxTextBytes, or for
// --chunks K a prefix holding K windows, with exactly the whole file's tokens. Each window runs in a
// fresh session with its first token replaced by BOS (when the model has one), and only its
// second half is scored: with first = N/2, the logits at positions first .. N-2 predict tokens
// first+1 .. N-1, so N-1-first tokens per window (255 of 512), exactly llama.cpp's count, so the
// values compare with llama-perplexity's. Each window is one mote_prefill_logits of its first
// N-1 tokens, which returns the logits of positions first .. N-2 (batch by batch, the same bits
// as decoding them one at a time would give).
//
// --kl-divergence-base FILE saves each scored position's log-probabilities in llama.cpp's file
// (kld_file.hpp); with --kl-divergence it reads them back instead and compares, on the file's own
// windows and tokens.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cli_input.hpp"
#include "cli_model.hpp"
#include "cli_options.hpp"
#include "cli_terminal.hpp"
#include "commands.hpp"
#include "io/file_map.hpp"
#include "kld_file.hpp"

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

constexpr uint64_t kMaxTextBytes = 64u << 20;  // the text read, whole or a prefix (docs/HARDENING.md, "Limits")

// Where a prefix of text may end with tokens equal to the whole text's: before a space that
// follows a printable ASCII byte (not a space of any kind). SentencePiece merges each word (from
// a space after other bytes) alone (runtime/src/text/tokenizer.cpp, merge_words); byte-level
// BPE merges inside the pre-tokenizer's words, and no word holds such a byte and the space
// after it. So the prefix's tokens are the whole text's first tokens. 0 when there is none.
size_t word_boundary_before_end(const std::string &text) {
  for (size_t at = text.size(); at-- > 1;) {
    if (text[at] == ' ' && text[at - 1] > ' ' && text[at - 1] < 0x7F) return at;
  }
  return 0;
}

// A prefix without such a space (one endless word) is not provably exact: its last tokens are
// dropped, as a cut inside a word changes how the merges end near it (within a few pieces in the
// vocabularies tested: tests/test_cli_inputs.cpp and test_perplexity.cpp compare such texts).
constexpr size_t kTokensNearCut = 256;

// A text file read from its start in growing prefixes (pread: never mapped, never read further
// than asked).
class TextPrefix {
 public:
  TextPrefix() = default;
  TextPrefix(const TextPrefix &) = delete;
  TextPrefix &operator=(const TextPrefix &) = delete;
  ~TextPrefix() {
    if (fd_ >= 0) ::close(fd_);
  }

  bool open(const std::string &path, std::string *error) {
    path_ = path;
    fd_ = posix::open_regular_file(path, &size_, error);
    return fd_ >= 0;
  }
  uint64_t size() const { return size_; }
  const std::string &text() const { return text_; }
  bool whole() const { return text_.size() == size_; }

  // Extends the text to its first n bytes (or all of a shorter file); false when a read fails.
  bool extend(uint64_t n, std::string *error) {
    size_t at = text_.size();
    text_.resize(std::max<uint64_t>(at, std::min(n, size_)));
    while (at < text_.size()) {
      const ssize_t got = pread(fd_, &text_[at], text_.size() - at, static_cast<off_t>(at));
      if (got < 0) {
        *error = "cannot read '" + path_ + "': " + std::strerror(errno);
        return false;
      }
      if (got == 0) {  // the file shrank: its end is here
        text_.resize(at);
        size_ = at;
      }
      at += static_cast<size_t>(got);
    }
    return true;
  }

 private:
  std::string path_, text_;
  uint64_t size_ = 0;
  int fd_ = -1;
};

// The tokens of the text file that `needed` tokens of windows draw on (0: every window), read
// and tokenized in prefixes that double until they hold them. *whole: the file's end was read.
bool read_tokens(const mote_model &model, const std::string &path, uint64_t needed, std::vector<int32_t> *tokens,
                 bool *whole, std::string *error) {
  TextPrefix file;
  if (!file.open(path, error)) return false;
  if (file.size() == 0) {
    *error = "'" + path + "' is empty";
    return false;
  }
  if (needed == 0 && file.size() > kMaxTextBytes) {
    *error = "'" + path + "' is " + std::to_string(file.size()) + " bytes; perplexity reads at most " +
             mib_text(kMaxTextBytes) + " of a text (score its first K windows with --chunks K)";
    return false;
  }
  for (uint64_t prefix = needed == 0 ? file.size() : std::max<uint64_t>(64u << 10, needed * 16);; prefix *= 2) {
    if (!file.extend(std::min(prefix, kMaxTextBytes), error)) return false;
    *whole = file.whole();
    const size_t boundary = *whole ? file.text().size() : word_boundary_before_end(file.text());
    if (!tokenize(model, std::string_view(file.text()).substr(0, boundary > 0 ? boundary : std::string::npos), tokens,
                  error)) {
      *error = "'" + path + "': " + *error;
      return false;
    }
    if (*whole) return true;
    const size_t exact = boundary > 0 ? tokens->size() : tokens->size() - std::min(tokens->size(), kTokensNearCut);
    if (exact >= needed) {
      tokens->resize(needed);
      return true;
    }
    if (file.text().size() == kMaxTextBytes) {
      *error = "the first " + mib_text(kMaxTextBytes) + " of '" + path + "' (what perplexity reads) hold fewer than " +
               std::to_string(needed) + " tokens";
      return false;
    }
  }
}

// What the windows are scored against: nothing (perplexity alone), or a base-logits file written
// (--kl-divergence-base alone) or read (with --kl-divergence).
struct BaseLogits {
  std::string path;
  bool compare = false;
  LogitsWriter writer;
  LogitsReader reader;
  Divergence divergence;
  std::vector<uint16_t> row;

  bool active() const { return !path.empty(); }
  // At each scored position: the current logits and the token they predict.
  bool add(const float *logits, uint32_t n_vocab, int32_t token, std::string *error) {
    if (!active()) return true;
    if (!compare) return writer.write_row(logits, error);
    if (!reader.read_row(&row, error)) return false;
    divergence.add(logits, row.data(), n_vocab, token);
    return true;
  }
};

// --kl-divergence: the window and the tokens come from the base file; a text given with -f must
// tokenize to the same tokens, and the model must have the file's vocabulary and room for its
// windows. *window is the file's (a different --ctx is an error); *n_windows at most its count.
bool use_base_windows(const mote_model &model, const mote_model_info &info, const std::string &text_path,
                      bool window_given, uint32_t *window, size_t *n_windows, BaseLogits *base,
                      std::vector<int32_t> *tokens, std::string *error) {
  if (!base->reader.open(base->path, error)) return false;
  const LogitsHeader &header = base->reader.header();
  const std::string file = "'" + base->path + "'";
  if (header.n_vocab != info.vocab_size) {
    *error = file + " was computed with a vocabulary of " + std::to_string(header.n_vocab) +
             " tokens; this model has " + std::to_string(info.vocab_size);
    return false;
  }
  if (window_given && *window != header.n_ctx) {
    *error = file + " was computed with --ctx " + std::to_string(header.n_ctx) + ", not " + std::to_string(*window);
    return false;
  }
  if (header.n_ctx < kMinWindow || header.n_ctx > info.max_seq_len) {
    *error = file + " holds windows of " + std::to_string(header.n_ctx) + " tokens; this model takes " +
             std::to_string(kMinWindow) + " to " + std::to_string(info.max_seq_len);
    return false;
  }
  *window = header.n_ctx;
  *n_windows = std::min<size_t>(*n_windows, header.n_chunk);
  const size_t needed = *n_windows * *window;
  const std::vector<int32_t> &stored = base->reader.tokens();
  if (text_path.empty()) {
    tokens->assign(stored.begin(), stored.begin() + static_cast<std::ptrdiff_t>(needed));
    return true;
  }
  bool whole = false;
  if (!read_tokens(model, text_path, needed, tokens, &whole, error)) return false;
  if (tokens->size() < needed) {
    *error = "'" + text_path + "' is " + std::to_string(tokens->size()) + " tokens; " + file + " holds " +
             std::to_string(needed);
    return false;
  }
  const auto [here, there] =
      std::mismatch(tokens->begin(), tokens->begin() + static_cast<std::ptrdiff_t>(needed), stored.begin());
  if (here != tokens->begin() + static_cast<std::ptrdiff_t>(needed)) {
    *error = "token " + std::to_string(here - tokens->begin()) + " of '" + text_path + "' is " + std::to_string(*here) +
             " but " + std::to_string(*there) + " in " + file +
             ": not the text (or the tokenizer) the base logits were computed on";
    return false;
  }
  tokens->resize(needed);
  return true;
}

// Runs each window in a fresh session (its first token replaced by BOS when the model has one):
// its first window - 1 tokens prefilled, with the logits of positions first .. window - 2, each
// scored against the token after it and handed to base. The running perplexity after each window
// goes to stderr (ended by a newline before a failure, so its message is a line of its own).
bool run_windows(mote_session *session, const mote_model_info &info, const std::vector<int32_t> &tokens,
                 uint32_t window, size_t n_windows, LoadedModel *loaded, BaseLogits *base, Score *score,
                 std::string *error) {
  const uint32_t first = window / 2, vocab = info.vocab_size;
  const bool replace_with_bos = info.add_bos != 0 && info.bos_id >= 0;
  std::vector<int32_t> batch_tokens(window);
  std::vector<float> logits(static_cast<size_t>(window - 1 - first) * vocab);
  const auto fail = [&](size_t w, const std::string &message) {
    if (w > 0) std::fputc('\n', stderr);
    *error = message;
    return false;
  };
  for (size_t w = 0; w < n_windows; ++w) {
    std::copy_n(tokens.begin() + static_cast<std::ptrdiff_t>(w * window), window, batch_tokens.begin());
    if (replace_with_bos) batch_tokens[0] = info.bos_id;
    mote_session_reset(session);
    if (mote_prefill_logits(session, batch_tokens.data(), window - 1, first, logits.data(), logits.size()) != MOTE_OK)
      return fail(w, mote_session_error(session));
    for (uint32_t j = first + 1; j < window; ++j) {
      const float *row = logits.data() + static_cast<size_t>(j - 1 - first) * vocab;
      score->add(negative_log_likelihood(row, vocab, batch_tokens[j]));
      if (!base->add(row, vocab, batch_tokens[j], error)) return fail(w, *error);
    }
    loaded->exit_if_changed();  // a window scored on weights written in place is no score
    std::fprintf(stderr, "[%zu]%.4f,", w + 1, score->perplexity());
    std::fflush(stderr);
  }
  return true;
}

}  // namespace

int command_perplexity(int argc, char **argv) {
  std::string model_path, text_path;
  uint32_t window = 0, threads = available_cpus(), batch = mote_session_options_default().batch_size, chunks = 0;
  bool window_given = false, chunks_given = false;
  KvCacheOptions kv;
  ModelLoadOptions load;
  BaseLogits base;
  CommandHelp command{
      "perplexity",
      "-m MODEL -f TEXT [OPTIONS]",
      "The perplexity of TEXT in windows of N tokens, scoring the second half of each as llama.cpp's\n"
      "llama-perplexity does; running values on stderr. --kl-divergence-base FILE saves the model's\n"
      "log-probabilities there (llama.cpp's file); with --kl-divergence as well, it reads them back and\n"
      "compares this model to that base (KL divergence, same top token, perplexity ratio), on the\n"
      "file's windows and tokens (-f TEXT optional: its tokens must be the file's).",
      {
          {"-m|--model", Option::kString, &model_path, "FILE", "the model"},
          {"-f|--file", Option::kString, &text_path, "FILE", "the text"},
          {"-c|--ctx-size|--ctx", Option::kU32, &window, "N", "window length in tokens", &window_given,
           "the model's context, at most 512"},
          {"-t|--threads", Option::kU32, &threads, "N", "threads"},
          {"-b|--batch-size|--batch", Option::kU32, &batch, "N", "prompt tokens per forward pass"},
          {"--chunks", Option::kU32, &chunks, "K", "score at most K windows", &chunks_given, "all"},
          {"--kl-divergence-base", Option::kString, &base.path, "FILE",
           "save the base model's log-probabilities to FILE (read them with --kl-divergence)"},
          {"--kl-divergence", Option::kSwitch, &base.compare, nullptr,
           "compare with the base saved in --kl-divergence-base FILE"},
      }};
  kv.add_options(&command.options);
  load.add_options(&command.options);
  std::vector<std::string> positional;
  const int parsed = parse_command(command, argc, argv, &positional);
  if (parsed != kParsed) return parsed;
  std::string error;
  if (!positional.empty()) return report("perplexity", "unexpected argument '" + positional[0] + "'", kExitUsage);
  if (model_path.empty()) return report("perplexity", "no model given (-m MODEL)", kExitUsage);
  if (base.compare && !base.active())
    return report("perplexity", "--kl-divergence needs --kl-divergence-base FILE (the base's logits)", kExitUsage);
  if (text_path.empty() && !base.compare) return report("perplexity", "no text file given (-f TEXT)", kExitUsage);
  if (threads == 0 || threads > kMaxThreads)
    return report("perplexity", "--threads must be in [1, " + std::to_string(kMaxThreads) + "]", kExitUsage);
  if (!kv.finish(&error)) return report("perplexity", error, kExitUsage);
  if (chunks_given && chunks == 0) return report("perplexity", "--chunks must be at least 1", kExitUsage);

  auto loaded = load_model(model_path, &error, load.load());
  if (!loaded) return report("perplexity", error, kExitError);
  const mote_model &model = loaded->model;
  mote_model_info info;
  mote_model_info_get(&model, &info);
  if (!base.compare && !window_given) window = std::min(info.max_seq_len, kDefaultMaxWindow);
  if (window_given && (window < kMinWindow || window > info.max_seq_len)) {
    return report("perplexity",
                  "--ctx must be in [" + std::to_string(kMinWindow) + ", " + std::to_string(info.max_seq_len) +
                      "] (the model's context)",
                  kExitUsage);
  }

  std::vector<int32_t> tokens;
  bool whole = true;
  size_t n_windows = chunks_given ? chunks : SIZE_MAX;
  if (base.compare) {
    if (!use_base_windows(model, info, text_path, window_given, &window, &n_windows, &base, &tokens, &error))
      return report("perplexity", error, kExitError);
  } else {
    if (!read_tokens(model, text_path, chunks_given ? uint64_t{chunks} * window : 0, &tokens, &whole, &error))
      return report("perplexity", error, kExitError);
    if (tokens.size() < window) {
      return report("perplexity",
                    "'" + text_path + "' is " + std::to_string(tokens.size()) + " tokens; one window needs " +
                        std::to_string(window) + " (use a longer text or a smaller --ctx)",
                    kExitError);
    }
    n_windows = std::min(n_windows, tokens.size() / window);
  }
  if (base.active() && !base.compare) {
    const LogitsHeader header{window, info.vocab_size, static_cast<uint32_t>(n_windows)};
    if (!base.writer.open(base.path, header, tokens.data(), &error)) return report("perplexity", error, kExitError);
  }

  mote_session_options session_options = mote_session_options_default();
  session_options.context_length = window;
  session_options.kv_dtype = kv.dtype;
  session_options.n_threads = threads;
  session_options.batch_size = batch;
  auto holder = open_session(model, session_options, &error);
  if (!holder) return report("perplexity", error, kExitError);
  mote_session *session = &holder->session;

  std::fprintf(stderr,
               "perplexity over %s%zu tokens%s: %zu windows of %u tokens, scoring the last %u of each, %u thread%s\n",
               whole ? "" : "the first ", tokens.size(), text_path.empty() ? (" from '" + base.path + "'").c_str() : "",
               n_windows, window, scored_per_window(window), threads, threads == 1 ? "" : "s");
  const double start = now_seconds();
  Score score;
  if (!run_windows(session, info, tokens, window, n_windows, loaded.get(), &base, &score, &error))
    return report("perplexity", error, kExitError);
  const double seconds = now_seconds() - start;
  const double evaluated = static_cast<double>(n_windows) * (window - 1);  // tokens through the model
  std::fprintf(stderr, "\ntime: %.2f s, %.1f tok/s\n", seconds, evaluated / seconds);
  if (base.active() && !base.compare) {
    if (!base.writer.commit(&error)) return report("perplexity", error, kExitError);
    std::fprintf(stderr, "saved the base log-probabilities of %llu positions to '%s'\n",
                 static_cast<unsigned long long>(score.count), base.path.c_str());
  }
  std::printf("perplexity: %.4f +/- %.5f (%zu windows of %u tokens, %llu scored tokens)\n", score.perplexity(),
              score.standard_error(), n_windows, window, static_cast<unsigned long long>(score.count));
  if (base.compare) base.divergence.print(stdout);
  return 0;
}

}  // namespace mote::cli

// The base-logits file of llama.cpp's `llama-perplexity --kl-divergence-base`, read and written
// in its own layout, so either tool reads the other's, and the statistics `--kl-divergence`
// reports against it (KL divergence, same top token, the perplexity ratio).
//
// Layout (little-endian, no padding):
//   char    magic[8]  "_logits_"
//   uint32  n_ctx     window length in tokens
//   int32   n_vocab
//   int32   n_chunk   windows
//   int32   tokens[n_chunk * n_ctx]   the text's tokens as tokenized (BOS not substituted)
//   rows: per window, per scored position (n_ctx-1-n_ctx/2 of them, first = n_ctx/2 onwards),
//         row_words(n_vocab) uint16 words:
//     float scale, float min_log_prob (4 words), then one uint16 q per vocabulary entry (and one
//     0 word of padding when n_vocab is odd); log p(i) = min_log_prob + scale * q(i).
// The encoding keeps the 16 nats below the largest logit: min_logit = max(min, max - 16),
// scale = (max - min_logit) / 65535, q(i) = round((logit(i) - min_logit) / scale) (0 at or below
// min_logit), min_log_prob = min_logit - max - log(sum exp(logit - max)).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "io/file_map.hpp"

namespace mote::cli {

constexpr char kLogitsMagic[8] = {'_', 'l', 'o', 'g', 'i', 't', 's', '_'};
constexpr uint64_t kLogitsHeaderBytes = 20;  // magic, n_ctx, n_vocab, n_chunk

// uint16 words per row: the two floats, the vocabulary, padded to an even count.
inline uint64_t row_words(uint32_t n_vocab) { return 2 * ((uint64_t{n_vocab} + 1) / 2) + 4; }
// The positions of a window whose logits are scored: first = n_ctx/2 .. n_ctx-2.
inline uint32_t scored_per_window(uint32_t n_ctx) { return n_ctx - 1 - n_ctx / 2; }

// One row for logits[0..n_vocab) (row holds row_words(n_vocab) words).
void encode_log_probs(const float *logits, uint32_t n_vocab, uint16_t *row);
// log p(i) as a row stores it.
float decoded_log_prob(const uint16_t *row, uint32_t i);

struct LogitsHeader {
  uint32_t n_ctx = 0, n_vocab = 0, n_chunk = 0;
  // The file's size for this header; false when it does not fit in 64 bits.
  bool file_bytes(uint64_t *bytes) const;
  std::string describe() const;  // "2 windows of 512 tokens, vocabulary 49152"
};

// Writes a base file row by row into a temporary file, put in place by commit() (a run that
// fails or is interrupted leaves an existing file as it was).
class LogitsWriter {
 public:
  bool open(const std::string &path, const LogitsHeader &header, const int32_t *tokens, std::string *error);
  bool write_row(const float *logits, std::string *error);
  bool commit(std::string *error);

 private:
  posix::AtomicFileWriter file_;
  std::vector<uint16_t> row_;
  uint32_t n_vocab_ = 0;
};

// Reads a base file, validated before use: the magic, a header whose size is the file's exact
// size, tokens inside the vocabulary, and every row's scale and minimum (finite, >= 0 and <= 0),
// all in open(). Every failure is a one-line error.
class LogitsReader {
 public:
  LogitsReader() = default;
  LogitsReader(const LogitsReader &) = delete;
  LogitsReader &operator=(const LogitsReader &) = delete;
  ~LogitsReader();

  bool open(const std::string &path, std::string *error);
  const LogitsHeader &header() const { return header_; }
  const std::vector<int32_t> &tokens() const { return tokens_; }
  // The next row (row_words(n_vocab) words).
  bool read_row(std::vector<uint16_t> *row, std::string *error);

 private:
  bool read_exactly(void *data, size_t n, const char *what, std::string *error);
  bool check_rows(std::string *error);
  bool changed(const char *what, std::string *error) const;  // false, with "cannot read WHAT ... changed"
  std::FILE *file_ = nullptr;
  std::string path_;
  LogitsHeader header_;
  std::vector<int32_t> tokens_;
};

// A mean and its standard error (0 for fewer than 11 values, as llama.cpp reports).
struct Estimate {
  double value = 0, error = 0;
};

// The current model's logits against the base rows, token by token; llama.cpp's statistics.
class Divergence {
 public:
  // logits: the current model at a scored position; base_row: the base's row there; token: the
  // text's next token.
  void add(const float *logits, const uint16_t *base_row, uint32_t n_vocab, int32_t token);

  uint64_t count() const { return count_; }
  Estimate log_perplexity() const;        // mean -log p(token), the current model
  Estimate log_perplexity_base() const;   // the same from the base rows
  Estimate log_perplexity_ratio() const;  // their difference, with the covariance
  Estimate kl_divergence() const;         // mean KL(base || current), in nats
  Estimate same_top() const;              // fraction of positions whose most likely token agrees
  Estimate rms_p_diff() const;            // root mean square of p(token) - p_base(token)
  // The fraction-th KL divergence, linearly interpolated between the sorted values (0: the
  // smallest, 0.5: the median, 1: the largest; a sort per call).
  double kl_percentile(double fraction) const;

  // The summary lines for stdout.
  void print(std::FILE *out) const;

 private:
  double nll_ = 0, nll2_ = 0, nll_base_ = 0, nll_base2_ = 0, nll_nll_base_ = 0;
  double kld_ = 0, kld2_ = 0, p_diff2_ = 0, p_diff4_ = 0;
  uint64_t same_top_ = 0, count_ = 0;
  std::vector<float> klds_;  // per position, for the percentiles
};

}  // namespace mote::cli

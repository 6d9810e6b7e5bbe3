#include "kld_file.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace mote::cli {

// The file is little-endian and read and written with memcpy.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the logits file is read as little-endian");

namespace {

constexpr float kKeptNats = 16;  // the range below the largest logit a row resolves (llama.cpp's)

struct RowScale {
  float scale, min_log_prob;
};

RowScale read_scale(const uint16_t *row) {
  RowScale s;
  std::memcpy(&s.scale, row, sizeof(float));
  std::memcpy(&s.min_log_prob, row + 2, sizeof(float));
  return s;
}

// What open() checks of each row, so every value a row decodes to is finite and in range: the
// step spans at most 16 nats (1% slack for float rounding), and the floor lies between -16 -
// log(n_vocab) (the widest row) and 0.
bool valid_scale(const RowScale &s, uint32_t n_vocab) {
  return s.scale >= 0 && s.scale <= kKeptNats / 65535 * 1.01f && s.min_log_prob <= 0 &&
         s.min_log_prob >= -kKeptNats - std::log(static_cast<float>(n_vocab)) - 1;
}

// log(sum exp(logits - max)) in double.
double log_sum_exp(const float *logits, uint32_t n_vocab, float max_logit) {
  double sum = 0;
  for (uint32_t i = 0; i < n_vocab; ++i) sum += std::exp(static_cast<double>(logits[i]) - max_logit);
  return std::log(sum);
}

// The mean of n values from their sum and sum of squares, with its standard error.
Estimate mean_of(double sum, double sum2, uint64_t n) {
  if (n == 0) return {};
  const double count = static_cast<double>(n), mean = sum / count, variance = sum2 / count - mean * mean;
  return {mean, variance > 0 && n > 10 ? std::sqrt(variance / (count - 1)) : 0.0};
}

}  // namespace

void encode_log_probs(const float *logits, uint32_t n_vocab, uint16_t *row) {
  const auto [min_it, max_it] = std::minmax_element(logits, logits + n_vocab);
  const float max_logit = *max_it, min_logit = std::max(*min_it, max_logit - kKeptNats);
  const float scale = (max_logit - min_logit) / 65535.f;
  const float min_log_prob = min_logit - max_logit - static_cast<float>(log_sum_exp(logits, n_vocab, max_logit));
  std::memcpy(row, &scale, sizeof(float));
  std::memcpy(row + 2, &min_log_prob, sizeof(float));
  uint16_t *q = row + 4;
  const float inverse = scale > 0 ? 1 / scale : 0;
  for (uint32_t i = 0; i < n_vocab; ++i) {
    // Round to nearest, ties to even (the FPU's default mode), clamped for the last ulp.
    const long rounded = logits[i] > min_logit ? std::lrintf(inverse * (logits[i] - min_logit)) : 0;
    q[i] = static_cast<uint16_t>(std::min<long>(rounded, 65535));
  }
  std::fill(q + n_vocab, row + row_words(n_vocab), uint16_t{0});
}

float decoded_log_prob(const uint16_t *row, uint32_t i) {
  const RowScale s = read_scale(row);
  return s.scale * row[4 + i] + s.min_log_prob;
}

bool LogitsHeader::file_bytes(uint64_t *bytes) const {
  uint64_t tokens = 0, rows = 0, row_bytes = 0, tokens_bytes = 0, rows_bytes = 0;
  return !__builtin_mul_overflow(uint64_t{n_ctx}, n_chunk, &tokens) &&
         !__builtin_mul_overflow(tokens, 4, &tokens_bytes) &&
         !__builtin_mul_overflow(uint64_t{scored_per_window(n_ctx)}, n_chunk, &rows) &&
         !__builtin_mul_overflow(row_words(n_vocab), 2, &row_bytes) &&
         !__builtin_mul_overflow(rows, row_bytes, &rows_bytes) &&
         !__builtin_add_overflow(kLogitsHeaderBytes + tokens_bytes, rows_bytes, bytes);
}

std::string LogitsHeader::describe() const {
  return std::to_string(n_chunk) + " window" + (n_chunk == 1 ? "" : "s") + " of " + std::to_string(n_ctx) +
         " tokens, vocabulary " + std::to_string(n_vocab);
}

// --- writing ------------------------------------------------------------------------------

bool LogitsWriter::open(const std::string &path, const LogitsHeader &header, const int32_t *tokens,
                        std::string *error) {
  n_vocab_ = header.n_vocab;
  row_.assign(row_words(n_vocab_), 0);
  uint8_t head[kLogitsHeaderBytes];
  std::memcpy(head, kLogitsMagic, 8);
  std::memcpy(head + 8, &header.n_ctx, 4);
  std::memcpy(head + 12, &header.n_vocab, 4);
  std::memcpy(head + 16, &header.n_chunk, 4);
  return file_.open(path, error) && file_.write(head, sizeof head, error) &&
         file_.write(tokens, size_t{header.n_ctx} * header.n_chunk * sizeof(int32_t), error);
}

bool LogitsWriter::write_row(const float *logits, std::string *error) {
  encode_log_probs(logits, n_vocab_, row_.data());
  return file_.write(row_.data(), row_.size() * sizeof(uint16_t), error);
}

bool LogitsWriter::commit(std::string *error) { return file_.commit(error); }

// --- reading ------------------------------------------------------------------------------

LogitsReader::~LogitsReader() {
  if (file_ != nullptr) std::fclose(file_);
}

bool LogitsReader::read_exactly(void *data, size_t n, const char *what, std::string *error) {
  if (std::fread(data, 1, n, file_) == n) return true;
  return changed(what, error);
}

bool LogitsReader::changed(const char *what, std::string *error) const {
  *error = "cannot read " + std::string(what) + " from '" + path_ + "' (it changed while being read?)";
  return false;
}

bool LogitsReader::open(const std::string &path, std::string *error) {
  path_ = path;
  uint64_t size = 0;
  const int fd = posix::open_regular_file(path, &size, error);
  if (fd < 0) return false;
  file_ = fdopen(fd, "rb");
  if (file_ == nullptr) {
    *error = "cannot open '" + path + "': " + std::strerror(errno);
    return false;
  }
  if (size < kLogitsHeaderBytes) {
    *error = "'" + path + "' is " + std::to_string(size) + " bytes, too short for a llama.cpp logits file";
    return false;
  }
  uint8_t head[kLogitsHeaderBytes];
  if (!read_exactly(head, sizeof head, "the header", error)) return false;
  if (std::memcmp(head, kLogitsMagic, 8) != 0) {
    *error = "'" + path + "' is not a llama.cpp logits file (it does not start with \"_logits_\")";
    return false;
  }
  int32_t n_vocab = 0, n_chunk = 0;
  std::memcpy(&header_.n_ctx, head + 8, 4);
  std::memcpy(&n_vocab, head + 12, 4);
  std::memcpy(&n_chunk, head + 16, 4);
  header_.n_vocab = static_cast<uint32_t>(n_vocab);
  header_.n_chunk = static_cast<uint32_t>(n_chunk);
  uint64_t expected = 0;
  if (header_.n_ctx < 3 || header_.n_ctx > INT32_MAX || n_vocab < 1 || n_chunk < 1 || !header_.file_bytes(&expected)) {
    *error = "'" + path + "' has an impossible header (" + std::to_string(n_chunk) + " windows of " +
             std::to_string(header_.n_ctx) + " tokens, vocabulary " + std::to_string(n_vocab) + ")";
    return false;
  }
  if (size != expected) {
    *error = "'" + path + "' is " + std::to_string(size) + " bytes, but its header (" + header_.describe() + ") says " +
             std::to_string(expected) + (size < expected ? " (truncated?)" : " (extra bytes at the end)");
    return false;
  }
  tokens_.resize(size_t{header_.n_ctx} * header_.n_chunk);
  if (!read_exactly(tokens_.data(), tokens_.size() * sizeof(int32_t), "the tokens", error)) return false;
  for (size_t i = 0; i < tokens_.size(); ++i) {
    if (tokens_[i] < 0 || static_cast<uint32_t>(tokens_[i]) >= header_.n_vocab) {
      *error = "'" + path + "' holds token " + std::to_string(tokens_[i]) + " at position " + std::to_string(i) +
               ", outside its vocabulary of " + std::to_string(header_.n_vocab);
      return false;
    }
  }
  return check_rows(error);
}

// Every row's scale and minimum (8 bytes a row, read in place), before the first is used.
bool LogitsReader::check_rows(std::string *error) {
  const uint64_t rows = uint64_t{scored_per_window(header_.n_ctx)} * header_.n_chunk;
  const uint64_t first_row = kLogitsHeaderBytes + tokens_.size() * sizeof(int32_t);
  const uint64_t row_bytes = row_words(header_.n_vocab) * sizeof(uint16_t);
  for (uint64_t r = 0; r < rows; ++r) {
    uint16_t head[4];
    if (pread(fileno(file_), head, sizeof head, static_cast<off_t>(first_row + r * row_bytes)) != sizeof head)
      return changed("a row's scale", error);
    const RowScale s = read_scale(head);
    if (!valid_scale(s, header_.n_vocab)) {
      const uint32_t per_window = scored_per_window(header_.n_ctx);
      *error = "'" + path_ + "': row " + std::to_string(r % per_window) + " of window " +
               std::to_string(r / per_window + 1) + " has an invalid scale or minimum (" + std::to_string(s.scale) +
               ", " + std::to_string(s.min_log_prob) + ")";
      return false;
    }
  }
  return true;
}

bool LogitsReader::read_row(std::vector<uint16_t> *row, std::string *error) {
  row->resize(row_words(header_.n_vocab));
  if (!read_exactly(row->data(), row->size() * sizeof(uint16_t), "a row of log-probabilities", error)) return false;
  // open() checked every row: a row that fails now was written since.
  return valid_scale(read_scale(row->data()), header_.n_vocab) || changed("a row of log-probabilities", error);
}

// --- statistics ---------------------------------------------------------------------------

void Divergence::add(const float *logits, const uint16_t *base_row, uint32_t n_vocab, int32_t token) {
  const float *top = std::max_element(logits, logits + n_vocab);  // the first of equal maxima
  // log q(i) = logits[i] - normalizer
  const double normalizer = *top + log_sum_exp(logits, n_vocab, *top);
  const double nll = normalizer - logits[token];
  const double nll_base = -static_cast<double>(decoded_log_prob(base_row, static_cast<uint32_t>(token)));
  double kld = 0;
  uint32_t top_base = 0;
  float top_base_log_prob = 0;
  for (uint32_t i = 0; i < n_vocab; ++i) {
    const float log_p = decoded_log_prob(base_row, i);
    if (i == 0 || log_p > top_base_log_prob) {
      top_base_log_prob = log_p;
      top_base = i;
    }
    // Below e^-16 the row resolves nothing (llama.cpp leaves those terms out too).
    if (log_p > -kKeptNats) kld += std::exp(static_cast<double>(log_p)) * (log_p - (logits[i] - normalizer));
  }
  const double p_diff = std::exp(-nll) - std::exp(-nll_base);
  nll_ += nll;
  nll2_ += nll * nll;
  nll_base_ += nll_base;
  nll_base2_ += nll_base * nll_base;
  nll_nll_base_ += nll * nll_base;
  kld_ += kld;
  kld2_ += kld * kld;
  p_diff2_ += p_diff * p_diff;
  p_diff4_ += p_diff * p_diff * p_diff * p_diff;
  same_top_ += static_cast<uint32_t>(top - logits) == top_base;
  ++count_;
  klds_.push_back(static_cast<float>(kld));
}

Estimate Divergence::log_perplexity() const { return mean_of(nll_, nll2_, count_); }
Estimate Divergence::log_perplexity_base() const { return mean_of(nll_base_, nll_base2_, count_); }
Estimate Divergence::kl_divergence() const { return mean_of(kld_, kld2_, count_); }

Estimate Divergence::log_perplexity_ratio() const {
  const Estimate current = log_perplexity(), base = log_perplexity_base();
  const double n = static_cast<double>(count_);
  const double covariance = count_ > 10 ? (nll_nll_base_ / n - (nll_ / n) * (nll_base_ / n)) / (n - 1) : 0.0;
  const double variance = current.error * current.error + base.error * base.error - 2 * covariance;
  return {current.value - base.value, variance > 0 ? std::sqrt(variance) : 0.0};
}

Estimate Divergence::same_top() const {
  if (count_ == 0) return {};
  const double p = static_cast<double>(same_top_) / static_cast<double>(count_);
  return {p, count_ > 1 ? std::sqrt(p * (1 - p) / static_cast<double>(count_ - 1)) : 0.0};
}

Estimate Divergence::rms_p_diff() const {
  const Estimate mse = mean_of(p_diff2_, p_diff4_, count_);
  const double rms = std::sqrt(mse.value);
  return {rms, rms > 0 ? 0.5 / rms * mse.error : 0.0};
}

double Divergence::kl_percentile(double fraction) const {
  if (klds_.empty()) return 0;
  std::vector<float> sorted = klds_;
  std::sort(sorted.begin(), sorted.end());
  const double at = std::clamp(fraction, 0.0, 1.0) * static_cast<double>(sorted.size() - 1);
  const size_t below = static_cast<size_t>(at);
  const size_t above = std::min(below + 1, sorted.size() - 1);
  return sorted[below] + (at - static_cast<double>(below)) * (sorted[above] - sorted[below]);
}

void Divergence::print(std::FILE *out) const {
  const Estimate base = log_perplexity_base(), ratio = log_perplexity_ratio(), kld = kl_divergence();
  const Estimate top = same_top(), rms = rms_p_diff();
  const double base_ppl = std::exp(base.value), ratio_value = std::exp(ratio.value);
  std::fprintf(out, "base perplexity: %.4f +/- %.5f\n", base_ppl, base_ppl * base.error);
  std::fprintf(out, "perplexity ratio: %.5f +/- %.5f (ln %.6f +/- %.6f)\n", ratio_value, ratio_value * ratio.error,
               ratio.value, ratio.error);
  std::fprintf(out, "KL divergence: %.6f +/- %.6f (median %.6f, 99%% %.6f, 99.9%% %.6f, max %.6f)\n", kld.value,
               kld.error, kl_percentile(0.5), kl_percentile(0.99), kl_percentile(0.999), kl_percentile(1));
  std::fprintf(out, "same top token: %.3f +/- %.3f %%\n", 100 * top.value, 100 * top.error);
  std::fprintf(out, "RMS delta p: %.3f +/- %.3f %%\n", 100 * rms.value, 100 * rms.error);
}

}  // namespace mote::cli

// Shared pieces of the libFuzzer targets: splitting one input into several files, and running
// whatever model an input produced through open, session, generate and the tokenizers, so that
// every mutant reaches as deep as it can. A target aborts (a finding) only on a broken
// invariant; refusing an input with a status is the expected outcome for most of them.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "mote/mote.h"
#include "mote_writer.hpp"

namespace mote_fuzz {

// A broken invariant: print it and abort, so libFuzzer records the input.
#define FUZZ_CHECK(condition)                                                                      \
  do {                                                                                             \
    if (!(condition)) {                                                                            \
      std::fprintf(stderr, "fuzz invariant failed: %s (%s:%d)\n", #condition, __FILE__, __LINE__); \
      std::abort();                                                                                \
    }                                                                                              \
  } while (0)

// Splits data into n parts: each but the last is prefixed by its u32 little-endian length
// (clamped to what is left); the last takes the rest. tests/fuzz/make_corpus.py writes seeds so.
inline std::vector<std::string> split_parts(const uint8_t *data, size_t size, size_t n) {
  std::vector<std::string> parts;
  size_t at = 0;
  for (size_t i = 0; i + 1 < n; ++i) {
    uint32_t length = 0;
    if (size - at >= 4) {
      std::memcpy(&length, data + at, 4);
      at += 4;
    }
    const size_t take = length < size - at ? length : size - at;
    parts.emplace_back(reinterpret_cast<const char *>(data + at), take);
    at += take;
  }
  parts.emplace_back(reinterpret_cast<const char *>(data + at), size - at);
  return parts;
}

struct AlignedBytes {
  std::unique_ptr<void, void (*)(void *)> data{nullptr, std::free};
  size_t size = 0;
  explicit AlignedBytes(const void *bytes, size_t n) : size(n) {
    data.reset(std::aligned_alloc(64, (n + 63) / 64 * 64 + 64));
    if (n > 0) std::memcpy(data.get(), bytes, n);
  }
};

// Opens bytes as a model and, when that works and the model is small, runs a short session.
// Returns whether the bytes opened.
inline bool exercise_model(const void *bytes, size_t n) {
  AlignedBytes aligned(bytes, n);
  mote_model model;
  char message[256] = "";
  if (mote_model_open(aligned.data.get(), n, &model, message, sizeof message) != MOTE_OK) {
    FUZZ_CHECK(std::strlen(message) > 0 && std::strchr(message, '\n') == nullptr);  // one line, always
    return false;
  }
  mote_model_info info;
  mote_model_info_get(&model, &info);
  FUZZ_CHECK(info.vocab_size > 0);
  mote_model_check_values(&model, message, sizeof message);
  const char text[] = "Hello, wor1d <|im_end|> \xE2\x96\x81x";
  int32_t tokens[sizeof text + 2];
  size_t n_tokens = 0;
  if (mote_tokenize(&model, text, sizeof text - 1, MOTE_TOKENIZE_ADD_BOS | MOTE_TOKENIZE_SPECIAL, tokens,
                    sizeof text + 2, &n_tokens) == MOTE_OK) {
    FUZZ_CHECK(n_tokens <= sizeof text + 1);
    for (size_t i = 0; i < n_tokens; ++i) {
      FUZZ_CHECK(tokens[i] >= 0 && static_cast<uint32_t>(tokens[i]) < info.vocab_size);
      char piece[512];
      size_t piece_n = 0;
      mote_detokenize(&model, i == 0 ? -1 : tokens[i - 1], tokens[i], piece, sizeof piece, &piece_n);
    }
  }
  // Generation only for small models: a fuzzed config of huge sizes would be a slow input, not
  // a bug.
  if (info.weight_bytes > (4u << 20) || uint64_t{info.dim} * info.n_layers > (1u << 16)) return true;
  mote_session_options options = mote_session_options_default();
  options.context_length = info.max_seq_len < 8 ? info.max_seq_len : 8;
  const size_t arena_n = mote_arena_size(&model, &options);
  if (arena_n == 0 || arena_n > (64u << 20)) return true;
  AlignedBytes arena(nullptr, 0);
  arena.data.reset(std::aligned_alloc(64, (arena_n + 63) / 64 * 64));
  mote_session session;
  if (mote_session_init(&session, &model, &options, arena.data.get(), arena_n, message, sizeof message) != MOTE_OK) {
    return true;
  }
  const int32_t prompt[] = {info.bos_id >= 0 ? info.bos_id : 0, static_cast<int32_t>(1 % info.vocab_size)};
  if ((info.block_flags & MOTE_BLOCK_ENCODER) != 0) {  // an embedder: no logits, decoding refused in one line
    float out[8192];
    if (2 * size_t{info.dim} > sizeof out / sizeof out[0]) return true;
    for (const mote_pool pool : {MOTE_POOL_MEAN, MOTE_POOL_CLS, MOTE_POOL_LAST}) {
      const mote_status status = mote_embed(&session, prompt, 2, pool, pool == MOTE_POOL_MEAN, out, info.dim);
      FUZZ_CHECK(status == MOTE_OK || status == MOTE_ERR_NUMERIC);
    }
    const uint32_t lengths[] = {1, 1};
    const mote_status status = mote_embed_batch(&session, prompt, lengths, 2, MOTE_POOL_MEAN, 0, out, info.dim * 2);
    FUZZ_CHECK(status == MOTE_OK || status == MOTE_ERR_NUMERIC);
    const float *logits = nullptr;
    FUZZ_CHECK(mote_decode(&session, prompt[0], &logits) == MOTE_ERR_UNSUPPORTED);
    FUZZ_CHECK(std::strchr(mote_session_error(&session), '\n') == nullptr);
    return true;
  }
  mote_sampler_options sampler = mote_sampler_options_default();
  for (const float temperature : {0.0f, 0.9f}) {
    mote_session_reset(&session);
    sampler.temperature = temperature;
    uint32_t generated = 0;
    const mote_status status = mote_generate(&session, prompt, 2, 3, &sampler, nullptr, nullptr, &generated);
    FUZZ_CHECK(status == MOTE_OK || status == MOTE_ERR_NUMERIC || status == MOTE_ERR_CONTEXT_FULL);
    FUZZ_CHECK(mote_session_position(&session) <= options.context_length);
  }
  return true;
}

// What every importer must guarantee: a model it produced either opens (the reader's rules
// were applied by check_opens) or is refused with one line.
inline void check_converted(const mote::convert::ModelData &model) {
  const std::vector<uint8_t> bytes = mote::convert::serialize(model);
  std::string error;
  const bool opens = mote::convert::check_opens(bytes, &error);
  FUZZ_CHECK(opens || (!error.empty() && error.find('\n') == std::string::npos));
  if (opens) FUZZ_CHECK(exercise_model(bytes.data(), bytes.size()));
}

// A file under $TMPDIR (or /tmp) unique to this process, for importers that read paths.
inline std::string scratch_path(const char *name) {
  const char *dir = std::getenv("TMPDIR");
  return std::string(dir != nullptr && dir[0] != '\0' ? dir : "/tmp") + "/mote_fuzz_" + std::to_string(getpid()) + "_" +
         name;
}

inline void write_whole(const std::string &path, const std::string &bytes) {
  std::FILE *f = std::fopen(path.c_str(), "wb");
  FUZZ_CHECK(f != nullptr);
  if (!bytes.empty()) FUZZ_CHECK(std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size());
  std::fclose(f);
}

}  // namespace mote_fuzz

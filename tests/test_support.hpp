// Helpers shared by the tests: locating test data and the real models in ../shared/models.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace mote_test {

inline std::string golden_path(const std::string &name) { return std::string(MOTE_TEST_DATA_DIR) + "/" + name; }

inline bool file_exists(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  return f.good();
}

inline std::vector<unsigned char> read_file(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<unsigned char>(std::istreambuf_iterator<char>(f), {});
}

// CPU seconds the fastest of `runs` calls of work takes on this thread (CPU time, so a busy
// machine's preemption does not count; the best, so a cold cache counts less). Tests compare such
// times as ratios of two input sizes, never against a wall-clock bound: sanitizer, emulated and
// busy builds run the same tests.
template <typename Work>
double best_seconds(int runs, Work &&work) {
  const auto thread_seconds = [] {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
  };
  double best = 1e30;
  for (int run = 0; run < runs; ++run) {
    const double start = thread_seconds();
    work();
    best = std::min(best, thread_seconds() - start);
  }
  return best;
}

// Whether the running test case skipped (reset per case by test_main.cpp's listener).
inline bool &skip_noted() {
  static bool noted = false;
  return noted;
}

}  // namespace mote_test

// Skips the rest of what needs the absent thing, saying why ("SKIPPED: ..."); a binary whose
// every case skipped exits 77 (ctest: "Skipped").
#define MOTE_SKIP(reason)             \
  do {                                \
    MESSAGE("SKIPPED: " << reason);   \
    ::mote_test::skip_noted() = true; \
  } while (false)

namespace mote_test {

// Path of a real model in ../shared/models, or "" when the folder is absent (a user's fresh
// clone): the caller then skips, saying so. With MOTE_REQUIRE_SHARED_MODELS=1 (set by .ci/run)
// absence is a failure, so nothing skips silently in CI.
inline std::string shared_model(const std::string &name) {
  const std::string path = std::string(MOTE_SHARED_MODELS_DIR) + "/" + name;
  if (file_exists(path)) return path;
  const char *require = std::getenv("MOTE_REQUIRE_SHARED_MODELS");
  if (require != nullptr && std::string(require) == "1") {
    FAIL("required test model missing: " << path);
  }
  MOTE_SKIP(path << " is absent (set MOTE_SHARED_MODELS_DIR at configure time)");
  return "";
}

// The SmolLM2-135M-Instruct GGUF that models/fetch_smollm2.sh caches ($MOTE_SMOLLM2_GGUF
// overrides), or "" when it was never fetched: the caller then skips, saying so. With
// MOTE_REQUIRE_SMOLLM2=1 (set by .ci/run after fetching it) absence is a failure.
inline std::string smollm2_gguf() {
  if (const char *skip = std::getenv("MOTE_SKIP_REAL_MODELS")) {  // set by the emulated test presets
    MOTE_SKIP("SmolLM2-135M-Instruct: " << std::string(skip));
    return "";
  }
  std::string path;
  if (const char *env = std::getenv("MOTE_SMOLLM2_GGUF")) {
    path = env;
  } else {
    const char *cache = std::getenv("XDG_CACHE_HOME");
    const char *home = std::getenv("HOME");
    path = (cache != nullptr && cache[0] != '\0' ? std::string(cache) : std::string(home ? home : ".") + "/.cache") +
           "/mote/SmolLM2-135M-Instruct.Q4_1.gguf";
  }
  if (file_exists(path)) return path;
  const char *require = std::getenv("MOTE_REQUIRE_SMOLLM2");
  if (require != nullptr && std::string(require) == "1") {
    FAIL("required model missing: " << path << " (models/fetch_smollm2.sh fetches it)");
  }
  MOTE_SKIP(path << " is absent: run models/fetch_smollm2.sh to fetch SmolLM2-135M-Instruct");
  return "";
}

// The cached GGUF (models/fetch_families.sh), or "" (skipped, saying so) when it was never
// fetched; with MOTE_REQUIRE_FAMILIES=1 its absence is a failure.
inline std::string real_gguf(const std::string &file) {
  if (const char *skip = std::getenv("MOTE_SKIP_REAL_MODELS")) {  // set by the emulated test presets
    MOTE_SKIP(file << ": " << std::string(skip));
    return "";
  }
  const char *cache = std::getenv("XDG_CACHE_HOME");
  const char *home = std::getenv("HOME");
  const std::string path =
      (cache != nullptr && cache[0] != '\0' ? std::string(cache) : std::string(home ? home : ".") + "/.cache") +
      "/mote/" + file;
  if (file_exists(path)) return path;
  const char *require = std::getenv("MOTE_REQUIRE_FAMILIES");
  if (require != nullptr && std::string(require) == "1") {
    FAIL("required model missing: " << path << " (models/fetch_families.sh fetches it)");
  }
  MOTE_SKIP(path << " is absent: run models/fetch_families.sh to fetch it");
  return "";
}

// A Python interpreter that imports every module of `modules` ("gguf, numpy": the independent
// oracles), tried as `python3` on PATH, then Debian's /usr/bin/python3; "" when none does: the
// caller then skips, saying so. With MOTE_REQUIRE_PYTHON_ORACLES=1 (set by .ci/run, which
// installs them) absence is a failure.
inline std::string python_with(const std::string &modules) {
  for (const char *python : {"python3", "/usr/bin/python3"}) {
    const std::string probe = std::string(python) + " -c 'import " + modules + "' >/dev/null 2>&1";
    if (std::system(probe.c_str()) == 0) return python;
  }
  const char *require = std::getenv("MOTE_REQUIRE_PYTHON_ORACLES");
  if (require != nullptr && std::string(require) == "1") {
    FAIL("python3 cannot import " << modules << " (pip install gguf==0.10.0 'numpy<2' sentencepiece)");
  }
  MOTE_SKIP("no python3 imports " << modules << " (pip install gguf==0.10.0 'numpy<2' sentencepiece)");
  return "";
}

}  // namespace mote_test

#include <cstring>
#include <map>
#include <memory>
#include <optional>

#include "gguf/gguf.hpp"
#include "llama2c/llama2c.hpp"
#include "mote/mote.h"
#include "mote_writer.hpp"

namespace mote_test {

// A 64-byte aligned copy of bytes (the runtime reads models and arenas only at that alignment).
struct AlignedBuffer {
  struct Free {
    void operator()(void *p) const { std::free(p); }
  };
  std::unique_ptr<unsigned char, Free> data;
  size_t size = 0;

  explicit AlignedBuffer(size_t n) : size(n) {
    data.reset(static_cast<unsigned char *>(std::aligned_alloc(64, (n + 63) / 64 * 64 + 64)));
  }
  static AlignedBuffer copy_of(const std::vector<unsigned char> &bytes) {
    AlignedBuffer b(bytes.size());
    std::memcpy(b.data.get(), bytes.data(), bytes.size());
    return b;
  }
};

// A llama2.c checkpoint converted in memory and opened.
struct ConvertedModel {
  AlignedBuffer bytes{0};
  mote_model model{};
};

inline std::unique_ptr<ConvertedModel> convert_and_open(
    const std::string &checkpoint, const std::string &tokenizer, mote::format::DType dtype = mote::format::DType::f32,
    mote::format::RopeLayout rope = mote::format::RopeLayout::interleaved) {
  mote::convert::Llama2cOptions options;
  options.dtype = dtype;
  options.rope_layout = rope;
  mote::convert::ModelData data;
  std::string error;
  if (!mote::convert::load_llama2c(checkpoint, tokenizer, options, &data, &error)) {
    FAIL("conversion failed: " << error);
    return nullptr;
  }
  auto converted = std::make_unique<ConvertedModel>();
  converted->bytes = AlignedBuffer::copy_of(mote::convert::serialize(data));
  char message[256] = "";
  const mote_status status =
      mote_model_open(converted->bytes.data.get(), converted->bytes.size, &converted->model, message, sizeof message);
  if (status != MOTE_OK) {
    FAIL("open failed: " << message);
    return nullptr;
  }
  return converted;
}

// A GGUF converted in memory by mote's GGUF importer (dtype as `mote convert --dtype`) and opened.
inline std::unique_ptr<ConvertedModel> gguf_converted(const std::string &path,
                                                      std::optional<mote::format::DType> dtype) {
  mote::convert::GgufOptions options;
  options.dtype = dtype;
  mote::convert::ModelData data;
  std::string error;
  REQUIRE_MESSAGE(mote::convert::load_gguf(path, options, &data, &error), error);
  auto converted = std::make_unique<ConvertedModel>();
  converted->bytes = AlignedBuffer::copy_of(mote::convert::serialize(data));
  char message[256] = "";
  REQUIRE_MESSAGE(mote_model_open(converted->bytes.data.get(), converted->bytes.size, &converted->model, message,
                                  sizeof message) == MOTE_OK,
                  message);
  return converted;
}

// SmolLM2-135M-Instruct (see smollm2_gguf) converted in memory by mote's GGUF importer and
// opened, once per dtype and process (no dtype: the default conversion, the GGUF's quantized
// tensors as stored, interleaved 8 rows at a time); null (the caller skips) when it was never
// fetched.
inline const ConvertedModel *smollm2_model(std::optional<mote::format::DType> dtype) {
  static std::map<std::optional<mote::format::DType>, std::unique_ptr<ConvertedModel>> cache;
  auto found = cache.find(dtype);
  if (found != cache.end()) return found->second.get();
  const std::string path = smollm2_gguf();
  if (path.empty()) return nullptr;
  return (cache[dtype] = gguf_converted(path, dtype)).get();
}

// mote_session_options_default() with an f32 KV cache: the precision the goldens and references
// were checked at (the default cache is f16), so a change of default changes no oracle.
inline mote_session_options f32_kv_options() {
  mote_session_options options = mote_session_options_default();
  options.kv_dtype = MOTE_KV_F32;
  return options;
}

// text as one user turn of the model's chat template, with the assistant's prompt after it.
inline std::vector<int32_t> chat_tokens(const mote_model &model, const std::string &text) {
  const mote_chat_message message{MOTE_ROLE_USER, text.data(), text.size()};
  std::vector<int32_t> tokens(text.size() + 256);
  size_t n = 0;
  REQUIRE(mote_chat_tokenize(&model, &message, 1, MOTE_CHAT_ADD_ASSISTANT_PROMPT, tokens.data(), tokens.size(), &n) ==
          MOTE_OK);
  tokens.resize(n);
  return tokens;
}

// A JSON schema's grammar compiled for model, in an arena of its own.
struct SchemaGrammar {
  mote_grammar grammar{};
  AlignedBuffer arena{0};
};

inline std::unique_ptr<SchemaGrammar> compile_schema(const mote_model &model, const std::string &schema) {
  std::vector<char> text(1 << 16);
  size_t n = 0;
  char error[256] = "";
  REQUIRE_MESSAGE(mote_grammar_from_json_schema(schema.data(), schema.size(), text.data(), text.size(), &n, error,
                                                sizeof error) == MOTE_OK,
                  error);
  auto g = std::make_unique<SchemaGrammar>();
  size_t bytes = 0;
  REQUIRE(mote_grammar_arena_size(text.data(), n, &bytes, error, sizeof error) == MOTE_OK);
  g->arena = AlignedBuffer(bytes);
  REQUIRE_MESSAGE(mote_grammar_init(&g->grammar, &model, text.data(), n, g->arena.data.get(), bytes, error,
                                    sizeof error) == MOTE_OK,
                  error);
  return g;
}

// A session with an exactly sized arena.
struct TestSession {
  AlignedBuffer arena{0};
  mote_session session{};
};

inline std::unique_ptr<TestSession> open_session(const mote_model &model, mote_session_options options) {
  auto s = std::make_unique<TestSession>();
  const size_t needed = mote_arena_size(&model, &options);
  REQUIRE(needed > 0);
  s->arena = AlignedBuffer(needed);
  char message[256] = "";
  const mote_status status =
      mote_session_init(&s->session, &model, &options, s->arena.data.get(), needed, message, sizeof message);
  if (status != MOTE_OK) FAIL("session init failed: " << message);
  return s;
}

inline std::vector<float> read_floats(const std::string &path) {
  const std::vector<unsigned char> bytes = read_file(path);
  std::vector<float> values(bytes.size() / 4);
  if (!values.empty()) std::memcpy(values.data(), bytes.data(), values.size() * 4);
  return values;
}

// "key=value key=value" manifest lines.
inline std::string manifest_value(const std::string &line, const std::string &key) {
  const std::string needle = key + "=";
  size_t at = 0;
  while ((at = line.find(needle, at)) != std::string::npos) {
    if (at == 0 || line[at - 1] == ' ') {
      const size_t begin = at + needle.size();
      return line.substr(begin, line.find(' ', begin) - begin);
    }
    at += needle.size();
  }
  return "";
}

// The bytes a hex string spells ("48656c" -> "Hel").
inline std::string from_hex(const std::string &hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

inline std::vector<int32_t> parse_ids(const std::string &csv) {
  std::vector<int32_t> ids;
  size_t at = 0;
  while (at < csv.size()) {
    size_t end = csv.find(',', at);
    if (end == std::string::npos) end = csv.size();
    ids.push_back(std::stoi(csv.substr(at, end - at)));
    at = end + 1;
  }
  return ids;
}

inline std::vector<std::string> read_lines(const std::string &path) {
  std::ifstream f(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(f, line);) {
    if (!line.empty() && line[0] != '#') lines.push_back(line);
  }
  return lines;
}

}  // namespace mote_test

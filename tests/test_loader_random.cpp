// The loader against random corruption (DESIGN.md invariant 3): byte flips, field overwrites and
// truncations never crash mote_model_open, nor a session over a mutated file that still validates.
//
// Model bytes sit in a buffer of exactly their size at a 64-byte aligned address, so an
// AddressSanitizer build catches any read past the end of the file. The ctest entry
// test_loader_fuzz_long (label fuzz) runs it longer via MOTE_FUZZ_ITERATIONS and MOTE_FUZZ_SEED.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>

#include "loader_support.hpp"
#include "mote/mote.h"
#include "test_support.hpp"

using namespace mote_loader_test;

// Random flips, field overwrites and truncations of the valid file: mote_model_open never
// crashes; when a mutated file of the original size still validates, a session over it
// initializes and decodes 4 tokens, or stops at a non-finite logit with MOTE_ERR_NUMERIC and a
// one-line message. MOTE_FUZZ_ITERATIONS overrides the count (default 2000), MOTE_FUZZ_SEED the seed.
TEST_CASE("loader: randomized corruption never crashes") {
  const Bytes &file = valid_file();
  const FileHeader h = header_of(file);
  const size_t metadata_end = h.data_offset;  // header, config, table and tokenizer
  size_t iterations = 2000;
  if (const char *env = std::getenv("MOTE_FUZZ_ITERATIONS")) iterations = std::strtoull(env, nullptr, 10);
  uint64_t seed = 0x6d6f7465ull;
  if (const char *env = std::getenv("MOTE_FUZZ_SEED")) seed = std::strtoull(env, nullptr, 10);
  std::mt19937_64 rng(seed);
  auto below = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  const uint64_t interesting[] = {0,
                                  1,
                                  2,
                                  3,
                                  63,
                                  64,
                                  65,
                                  127,
                                  128,
                                  0x7F,
                                  0x80,
                                  0xFF,
                                  0xFFFF,
                                  0x10000,
                                  0x7FFFFFFF,
                                  0x80000000u,
                                  0xFFFFFFFFu,
                                  file.size(),
                                  file.size() - 64,
                                  file.size() + 64,
                                  UINT64_MAX,
                                  UINT64_MAX - 63,
                                  1ull << 32,
                                  1ull << 63};

  size_t opened = 0, ran = 0, numeric_refusals = 0, statuses[8] = {};
  for (size_t iter = 0; iter < iterations; ++iter) {
    Bytes b = file;
    const size_t kind = below(4);
    if (kind == 0) {  // flip a few bytes, mostly in the metadata
      const size_t n = 1 + below(4);
      for (size_t i = 0; i < n; ++i) {
        const size_t at = below(3) == 0 ? below(b.size()) : below(metadata_end);
        b[at] ^= static_cast<uint8_t>(1u << below(8));
      }
    } else if (kind == 1) {  // overwrite an aligned 4- or 8-byte field with an interesting value
      const uint64_t v = below(2) == 0 ? interesting[below(sizeof interesting / sizeof interesting[0])] : rng();
      if (below(2) == 0) {
        const size_t at = below(metadata_end / 4) * 4;
        const uint32_t v32 = static_cast<uint32_t>(v);
        std::memcpy(b.data() + at, &v32, 4);
      } else {
        const size_t at = below(metadata_end / 8) * 8;
        std::memcpy(b.data() + at, &v, 8);
      }
    } else if (kind == 2) {  // random bytes over a short run
      const size_t at = below(metadata_end);
      const size_t n = 1 + below(16);
      for (size_t i = 0; i < n && at + i < b.size(); ++i) b[at + i] = static_cast<uint8_t>(rng());
    } else {  // truncate (to a block boundary half the time), sometimes patching the header
      size_t n = below(b.size());
      if (below(2) == 0) n &= ~static_cast<size_t>(63);
      b.resize(n);
      if (n >= sizeof(FileHeader) && below(2) == 0) set<uint64_t>(b, offsetof(FileHeader, file_size), n);
    }
    if (below(2) == 0) refresh_checksum(b);

    ExactBuffer buffer(b);
    mote_model model;
    char message[256] = "";
    const mote_status status = mote_model_open(buffer.data, buffer.size, &model, message, sizeof message);
    REQUIRE(static_cast<unsigned>(status) < 8);
    statuses[status] += 1;
    if (status != MOTE_OK) {
      INFO("iteration " << iter << ": " << message);
      REQUIRE(message[0] != '\0');
      REQUIRE(std::strchr(message, '\n') == nullptr);
      continue;
    }
    opened += 1;
    if (b.size() != file.size()) continue;

    // It validated: everything the API offers must be safe over it.
    mote_model_info info;
    mote_model_info_get(&model, &info);
    mote_session_options options = mote_session_options_default();
    options.context_length = info.max_seq_len < 8 ? info.max_seq_len : 8;
    options.kv_dtype = below(2) == 0 ? MOTE_KV_F32 : MOTE_KV_F16;
    const size_t arena_n = mote_arena_size(&model, &options);
    INFO("iteration " << iter << ": arena " << arena_n);
    REQUIRE(arena_n < (size_t{256} << 20));  // a file of this size cannot need more
    mote_session session;
    std::unique_ptr<ExactBuffer> arena;
    if (arena_n > 0) arena = std::make_unique<ExactBuffer>(Bytes(arena_n));
    const mote_status init =
        mote_session_init(&session, &model, &options, arena ? arena->data : nullptr, arena_n, message, sizeof message);
    if (init != MOTE_OK) {
      CHECK(init == MOTE_ERR_UNSUPPORTED);  // e.g. a flipped family or norm kind
      continue;
    }
    ran += 1;
    int32_t tokens[16];
    size_t n_tokens = 0;
    const mote_status tok = mote_tokenize(&model, "the abc\xff", 8, MOTE_TOKENIZE_ADD_BOS, tokens, 16, &n_tokens);
    if (tok != MOTE_OK || n_tokens == 0) {
      tokens[0] = 0;
      n_tokens = 1;
    }
    REQUIRE(n_tokens <= 16);
    int32_t token = tokens[0];
    for (size_t i = 0; i < n_tokens; ++i)
      REQUIRE((tokens[i] >= 0 && tokens[i] < static_cast<int32_t>(info.vocab_size)));
    mote_sampler_options sampler = mote_sampler_options_default();
    sampler.seed = iter;
    for (int step = 0; step < 4 && mote_session_position(&session) < options.context_length; ++step) {
      const float *logits = nullptr;
      REQUIRE(mote_decode(&session, token, &logits) == MOTE_OK);
      REQUIRE(logits != nullptr);
      const mote_status sampled = mote_sample(&session, &sampler, &token);
      if (sampled == MOTE_ERR_NUMERIC) {
        // Mutated weights that still validate can make a logit NaN or inf: the sampler's guard
        // refuses it in one line instead of returning a token (seed 20261129, iteration 13,889).
        const char *why = mote_session_error(&session);
        REQUIRE(why != nullptr);
        REQUIRE(why[0] != '\0');
        REQUIRE(std::strchr(why, '\n') == nullptr);
        numeric_refusals += 1;
        break;
      }
      REQUIRE(sampled == MOTE_OK);
      REQUIRE((token >= 0 && token < static_cast<int32_t>(info.vocab_size)));
      char piece[512];
      size_t piece_n = 0;
      const mote_status d = mote_detokenize(&model, tokens[0], token, piece, sizeof piece, &piece_n);
      CHECK((d == MOTE_OK || d == MOTE_ERR_BUFFER_TOO_SMALL));
    }
  }
  MESSAGE("randomized corruption (seed " << seed << "): " << iterations << " variants, " << opened << " still valid, "
                                         << ran << " ran a session (" << numeric_refusals
                                         << " stopped by a non-finite logit); rejected as bad model: "
                                         << statuses[MOTE_ERR_BAD_MODEL]);
  CHECK(statuses[MOTE_ERR_BAD_MODEL] > iterations / 2);
}

// The loader on valid files (DESIGN.md invariant 3): the small model built in memory opens and
// runs, and valid files with hostile vocabularies open and stay in bounds when used.
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "loader_support.hpp"
#include "mote/mote.h"
#include "mote_writer.hpp"
#include "test_support.hpp"

using namespace mote_loader_test;

TEST_CASE("loader: the small model built in memory opens and runs") {
  const Bytes &file = valid_file();
  REQUIRE(file.size() % 64 == 0);
  ExactBuffer buffer(file);
  mote_model model;
  char message[256] = "";
  REQUIRE_MESSAGE(mote_model_open(buffer.data, buffer.size, &model, message, sizeof message) == MOTE_OK, message);
  mote_model_info info;
  mote_model_info_get(&model, &info);
  CHECK(info.dim == kDim);
  CHECK(info.n_layers == kLayers);
  CHECK(info.n_heads == kHeads);
  CHECK(info.n_kv_heads == kKvHeads);
  CHECK(info.head_dim == kHeadDim);
  CHECK(info.ffn_dim == kFfn);
  CHECK(info.vocab_size == kVocab);
  CHECK(info.max_seq_len == kSeq);
  CHECK(info.bos_id == 1);
  CHECK(info.eos_id == 2);

  // The classifier variant (untied) opens too.
  const Bytes untied = mote::convert::serialize(valid_model_data(true));
  CHECK(open_bytes(untied).status == MOTE_OK);

  // Tokenize, prefill, decode.
  int32_t tokens[32];
  size_t n = 0;
  REQUIRE(mote_tokenize(&model, "the abc", 7, MOTE_TOKENIZE_ADD_BOS, tokens, 32, &n) == MOTE_OK);
  REQUIRE(n >= 2);
  CHECK(tokens[0] == 1);
  mote_session_options options = mote_session_options_default();
  const size_t arena_n = mote_arena_size(&model, &options);
  REQUIRE(arena_n > 0);
  ExactBuffer arena{Bytes(arena_n)};
  mote_session session;
  REQUIRE_MESSAGE(
      mote_session_init(&session, &model, &options, arena.data, arena_n, message, sizeof message) == MOTE_OK, message);
  REQUIRE(mote_prefill(&session, tokens, n) == MOTE_OK);
  const float *logits = mote_logits(&session);
  REQUIRE(logits != nullptr);
  for (uint32_t i = 0; i < kVocab; ++i) REQUIRE(std::isfinite(logits[i]));
  int32_t next = 0;
  const mote_sampler_options sampler = mote_sampler_options_default();
  REQUIRE(mote_sample(&session, &sampler, &next) == MOTE_OK);
  CHECK(next >= 0);
  CHECK(next < static_cast<int32_t>(kVocab));
  CHECK(mote_decode(&session, next, &logits) == MOTE_OK);
}

// Files that are valid but hostile in what validation cannot judge: random piece bytes (empty
// pieces, duplicates, spellings like "<0x41>" typed as normal text), random token types and
// scores, random special ids and flags. They open, and tokenizing, detokenizing and generating
// over them stays in bounds.
TEST_CASE("loader: valid but strange vocabularies") {
  std::mt19937_64 rng(77);
  auto below = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  const char *const spellings[] = {"", " ", "a", "ab", "<0x41>", "<0xzz>", "<unk>", "\xff", "\xe2\x96\x81", "  "};
  for (int iter = 0; iter < 200; ++iter) {
    mote::convert::ModelData m = valid_model_data();
    mote::convert::TokenizerData &t = m.tokenizer;
    for (uint32_t i = 0; i < kVocab; ++i) {
      if (below(3) == 0) {
        std::string piece;
        const size_t n = below(4);
        for (size_t k = 0; k < n; ++k) piece += static_cast<char>(rng());
        t.pieces[i] = piece;
      } else if (below(4) == 0) {
        t.pieces[i] = spellings[below(sizeof spellings / sizeof spellings[0])];
      }
      if (below(3) == 0) t.types[i] = static_cast<uint8_t>(1 + below(6));
      if (below(3) == 0) {
        const float choices[] = {0.0f, -1e10f, -1e30f, 1e30f, -3.4e38f, 3.4e38f, 1e-40f, -0.0f};
        t.scores[i] = below(2) == 0 ? choices[below(8)] : static_cast<float>(static_cast<int64_t>(rng() % 2001) - 1000);
      }
    }
    auto special = [&]() { return below(4) == 0 ? -1 : static_cast<int32_t>(below(kVocab)); };
    t.bos_id = m.config.bos_id = special();
    t.eos_id = m.config.eos_id = special();
    t.unk_id = special();
    t.flags = static_cast<uint32_t>(below(4));
    m.config.rope_layout = static_cast<mote::format::RopeLayout>(1 + below(2));
    m.config.max_seq_len = 1 + static_cast<uint32_t>(below(16));

    const Bytes bytes = mote::convert::serialize(m);
    ExactBuffer buffer(bytes);
    mote_model model;
    char message[256] = "";
    INFO("vocabulary " << iter);
    REQUIRE_MESSAGE(mote_model_open(buffer.data, buffer.size, &model, message, sizeof message) == MOTE_OK, message);

    std::string text;
    const size_t text_n = below(24);
    for (size_t k = 0; k < text_n; ++k) {
      text += below(2) == 0 ? static_cast<char>(rng()) : "ab <"[below(4)];
    }
    std::vector<int32_t> tokens(text.size() + 2, -7);
    size_t n_tokens = 0;
    const mote_status st =
        mote_tokenize(&model, text.data(), text.size(), MOTE_TOKENIZE_ADD_BOS, tokens.data(), tokens.size(), &n_tokens);
    CHECK((st == MOTE_OK || st == MOTE_ERR_UNSUPPORTED));
    if (st == MOTE_OK) {
      REQUIRE(n_tokens <= tokens.size());
      for (size_t k = 0; k < n_tokens; ++k) REQUIRE((tokens[k] >= 0 && tokens[k] < static_cast<int32_t>(kVocab)));
    }
    for (int k = 0; k < 8; ++k) {
      char out[8];
      size_t out_n = 0;
      const int32_t token = static_cast<int32_t>(below(kVocab));
      const mote_status d = mote_detokenize(&model, k == 0 ? -1 : token - 1, token, out, sizeof out, &out_n);
      CHECK((d == MOTE_OK || d == MOTE_ERR_BUFFER_TOO_SMALL));
    }
    mote_session_options options = mote_session_options_default();
    const size_t arena_n = mote_arena_size(&model, &options);
    ExactBuffer arena{Bytes(arena_n)};
    mote_session session;
    REQUIRE(mote_session_init(&session, &model, &options, arena.data, arena_n, message, sizeof message) == MOTE_OK);
    mote_sampler_options sampler = mote_sampler_options_default();
    sampler.seed = static_cast<uint64_t>(iter);
    const int32_t prompt[1] = {static_cast<int32_t>(below(kVocab))};
    uint32_t generated = 0;
    // The callback reads every byte of each piece (AddressSanitizer checks they are in bounds).
    unsigned checksum = 0;
    const mote_on_token on_token = [](void *user, int32_t, const char *piece, size_t n) {
      for (size_t k = 0; k < n; ++k) *static_cast<unsigned *>(user) += static_cast<unsigned char>(piece[k]);
      return 0;
    };
    const mote_status g = mote_generate(&session, prompt, 1, 32, &sampler, on_token, &checksum, &generated);
    CHECK((g == MOTE_OK || g == MOTE_ERR_CONTEXT_FULL));
    CHECK(mote_session_position(&session) <= m.config.max_seq_len);
  }
}

// The embedder firmware: a BERT-family sentence embedder on a microcontroller. It tokenizes
// MOTE_FIRMWARE_SENTENCE on the device (WordPiece, with [CLS] and [SEP]), embeds it in one step
// with the model's own pooling and normalization, and compares the vector with the host's
// embedding of the same sentence (`mote embed -o f32`, embedded by the build as the data blob):
// exit status 0 when the cosine similarity is at least 0.9999 (the device's scalar kernels round
// unlike the host's SIMD ones, so the vectors are close, not bit-identical).
#include <cmath>
#include <cstdio>
#include <cstring>

#include "firmware_arena.h"
#include "firmware_support.hpp"

#ifndef MOTE_FIRMWARE_SENTENCE
#error "MOTE_FIRMWARE_SENTENCE (the text to embed) must be defined by the build"
#endif
#ifndef MOTE_FIRMWARE_EMBED_TOKENS
#error "MOTE_FIRMWARE_EMBED_TOKENS (the step the arena was sized for) must be defined by the build"
#endif

namespace {

alignas(64) unsigned char g_arena[MOTE_FIRMWARE_ARENA_BYTES];
constexpr uint32_t kMaxDim = 1024;
float g_vector[kMaxDim];

// cos(a, host) for the host's floats in the data blob (little-endian, as this core).
double cosine_to_host(const float *a, uint32_t dim) {
  double dot = 0, aa = 0, bb = 0;
  for (uint32_t i = 0; i < dim; ++i) {
    float b = 0;
    std::memcpy(&b, mote_fw_data + i * sizeof b, sizeof b);
    dot += static_cast<double>(a[i]) * b;
    aa += static_cast<double>(a[i]) * a[i];
    bb += static_cast<double>(b) * b;
  }
  return aa > 0 && bb > 0 ? dot / std::sqrt(aa * bb) : 0.0;
}

}  // namespace

int main() {
  mote_fw::cycles_start();
  mote_model model;
  mote_session session;
  if (const int failed = mote_fw::open_model_and_session(&model, &session, g_arena, sizeof g_arena, false,
                                                         MOTE_FIRMWARE_EMBED_TOKENS))
    return failed;
  mote_model_info info;
  mote_model_info_get(&model, &info);
  const size_t host_floats = static_cast<size_t>(mote_fw_data_end - mote_fw_data) / sizeof(float);
  if (info.dim > kMaxDim || host_floats != info.dim) {
    char detail[96];
    std::snprintf(detail, sizeof detail, "the model's %u floats, the host's %u, this image's room %u",
                  static_cast<unsigned>(info.dim), static_cast<unsigned>(host_floats), static_cast<unsigned>(kMaxDim));
    return mote_fw::fail("embedding size", detail);
  }

  static const char kSentence[] = MOTE_FIRMWARE_SENTENCE;
  int32_t tokens[MOTE_FIRMWARE_EMBED_TOKENS];
  size_t n_tokens = 0;
  if (mote_tokenize(&model, kSentence, sizeof kSentence - 1, MOTE_TOKENIZE_ADD_BOS, tokens,
                    MOTE_FIRMWARE_EMBED_TOKENS, &n_tokens) != MOTE_OK) {
    return mote_fw::fail("tokenize", "the sentence is more tokens than the arena's step");
  }
  const uint64_t start = mote_fw::cycles_now();
  if (mote_embed(&session, tokens, n_tokens, static_cast<mote_pool>(info.pooling),
                 static_cast<int>(info.normalize_embeddings), g_vector, kMaxDim) != MOTE_OK) {
    return mote_fw::fail("embed", mote_session_error(&session));
  }
  const uint64_t cycles = mote_fw::cycles_now() - start;
  const double cosine = cosine_to_host(g_vector, info.dim);
  std::printf("mote firmware: embedded \"%s\" (%u tokens, tokenized on the device) into %u floats in %.0f ms "
              "(emulated); cosine to the host's %.7f\n",
              kSentence, static_cast<unsigned>(n_tokens), static_cast<unsigned>(info.dim), mote_fw::cycles_to_ms(cycles),
              cosine);
  mote_fw::print_stack();
  return cosine >= 0.9999 ? 0 : 1;
}

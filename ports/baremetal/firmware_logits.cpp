// mote on a bare-metal Cortex-M, checked against PyTorch: the model is a const array in flash,
// used in place; the only writable memory the runtime touches is one static arena whose size the
// build computed with the host tool (`mote inspect --arena-bytes`; the firmware stops, naming
// the right size, if it differs). Runs the PyTorch golden token sequence, checks every position's logits,
// greedy-generates a few tokens and reports over semihosting; the exit status is 0 on pass, 1 on failure.
#include <mote/mote.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "firmware_arena.h"  // generated at build time: MOTE_FIRMWARE_ARENA_BYTES
#include "firmware_support.hpp"

#ifndef MOTE_FIRMWARE_TOKENS
#error "MOTE_FIRMWARE_TOKENS (the golden token ids, comma-separated) must be defined by the build"
#endif

namespace {

constexpr float kTolerance = 1e-4f;
constexpr uint32_t kGenerateTokens = 8;
constexpr size_t kArenaBytes = MOTE_FIRMWARE_ARENA_BYTES;

const int32_t kTokens[] = {MOTE_FIRMWARE_TOKENS};
constexpr size_t kTokenCount = sizeof kTokens / sizeof kTokens[0];

// The session arena: a static buffer in RAM (.bss), never the heap.
alignas(MOTE_ARENA_ALIGNMENT) unsigned char g_arena[kArenaBytes];

struct Generated {
  int32_t ids[kGenerateTokens];
  uint32_t n;
};

int on_token(void *user, int32_t token, const char *, size_t) {
  Generated *g = static_cast<Generated *>(user);
  if (g->n < kGenerateTokens) g->ids[g->n++] = token;
  return 0;
}

}  // namespace

int main() {
  mote_model model;
  mote_session session;
  if (const int failed = mote_fw::open_model_and_session(&model, &session, g_arena, sizeof g_arena)) return failed;
  mote_model_info info;
  mote_model_info_get(&model, &info);

  const size_t vocab = info.vocab_size;
  const size_t golden_bytes = static_cast<size_t>(mote_fw_data_end - mote_fw_data);
  if (golden_bytes != kTokenCount * vocab * sizeof(float)) {
    char detail[120];
    std::snprintf(detail, sizeof detail, "%u bytes of golden logits, expected %u tokens x %u vocabulary x 4",
                  static_cast<unsigned>(golden_bytes), static_cast<unsigned>(kTokenCount),
                  static_cast<unsigned>(vocab));
    return mote_fw::fail("golden", detail);
  }

  // Every position's logits against PyTorch's.
  mote_fw::cycles_start();
  const uint64_t t0 = mote_fw::cycles_now();
  float worst = 0.0f;
  for (size_t p = 0; p < kTokenCount; ++p) {
    const float *logits = nullptr;
    if (mote_decode(&session, kTokens[p], &logits) != MOTE_OK)
      return mote_fw::fail("decode", mote_session_error(&session));
    for (size_t i = 0; i < vocab; ++i) {
      float expected;
      std::memcpy(&expected, mote_fw_data + (p * vocab + i) * sizeof(float), sizeof expected);
      const float error = std::fabs(logits[i] - expected);
      if (std::isnan(error) || error > worst) worst = error;  // a NaN sticks, and fails
    }
  }
  const uint64_t decode_cycles = mote_fw::cycles_now() - t0;

  // Greedy generation after the same prompt (no reference: it only has to run).
  mote_session_reset(&session);
  mote_sampler_options sampler = mote_sampler_options_default();
  sampler.temperature = 0.0f;
  Generated generated{};
  const uint64_t t1 = mote_fw::cycles_now();
  const mote_status gen =
      mote_generate(&session, kTokens, kTokenCount, kGenerateTokens, &sampler, on_token, &generated, nullptr);
  const uint64_t generate_cycles = mote_fw::cycles_now() - t1;
  if (gen != MOTE_OK) return mote_fw::fail("generate", mote_session_error(&session));
  std::printf("mote firmware: greedy after the %u-token prompt:", static_cast<unsigned>(kTokenCount));
  for (uint32_t i = 0; i < generated.n; ++i) std::printf(" %d", static_cast<int>(generated.ids[i]));
  std::printf(" (%u tokens; prompt and generation %llu SysTick cycles)\n", static_cast<unsigned>(generated.n),
              static_cast<unsigned long long>(generate_cycles));

  const bool pass = worst <= kTolerance;
  mote_fw::print_stack();
  std::printf(
      "mote firmware: %s %u positions x %u logits vs PyTorch, max |err| %.3g (limit %.0e); %llu SysTick cycles = "
      "%.2f ms at %u MHz (%llu per token)\n",
      pass ? "PASS" : "FAIL", static_cast<unsigned>(kTokenCount), static_cast<unsigned>(vocab),
      static_cast<double>(worst), static_cast<double>(kTolerance), static_cast<unsigned long long>(decode_cycles),
      mote_fw::cycles_to_ms(decode_cycles), static_cast<unsigned>(mote_fw::kCoreHz / 1000000u),
      static_cast<unsigned long long>(decode_cycles / kTokenCount));
  return pass ? 0 : 1;
}

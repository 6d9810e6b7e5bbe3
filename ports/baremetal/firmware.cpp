// mote on a bare-metal Cortex-M4F: the model is a const array in flash, used in place; the only
// writable memory the runtime touches is one static arena of exactly mote_arena_size() bytes.
// Runs the PyTorch golden token sequence, checks every position's logits, greedy-generates a
// few tokens and reports over semihosting; the exit status is 0 on pass, 1 on failure.
#include <mote/mote.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

#ifndef MOTE_FIRMWARE_ARENA_BYTES
#error "MOTE_FIRMWARE_ARENA_BYTES (the session arena size) must be defined by the build"
#endif
#ifndef MOTE_FIRMWARE_TOKENS
#error "MOTE_FIRMWARE_TOKENS (the golden token ids, comma-separated) must be defined by the build"
#endif

extern "C" {
// Embedded by blobs.S (.incbin): the .mote file and the golden logits (float32, position-major).
extern const unsigned char mote_fw_model[], mote_fw_model_end[];
extern const unsigned char mote_fw_golden[], mote_fw_golden_end[];
void SysTick_Handler(void);
}

namespace {

constexpr float kTolerance = 1e-4f;
constexpr uint32_t kGenerateTokens = 8;
constexpr size_t kArenaBytes = MOTE_FIRMWARE_ARENA_BYTES;
constexpr size_t kRamBytes = 4u << 20;  // mps2-an386
static_assert(kArenaBytes > 0, "the arena size must be positive");
static_assert(kArenaBytes <= kRamBytes - (256u << 10), "the arena does not fit in RAM with the stack");

const int32_t kTokens[] = {MOTE_FIRMWARE_TOKENS};
constexpr size_t kTokenCount = sizeof kTokens / sizeof kTokens[0];

// The session arena: a static buffer in RAM (.bss), never the heap.
alignas(MOTE_ARENA_ALIGNMENT) unsigned char g_arena[kArenaBytes];

// Cycle counting with SysTick (24-bit down counter at the core clock, 25 MHz on mps2-an386);
// the interrupt counts wraps. On a board these are core cycles; QEMU's SysTick follows the host's
// clock, so under emulation the count measures the emulator, not a Cortex-M4.
constexpr uint32_t kCoreHz = 25000000u;
volatile uint32_t g_systick_wraps = 0;
volatile uint32_t *const kSystCsr = reinterpret_cast<volatile uint32_t *>(0xE000E010u);
volatile uint32_t *const kSystRvr = reinterpret_cast<volatile uint32_t *>(0xE000E014u);
volatile uint32_t *const kSystCvr = reinterpret_cast<volatile uint32_t *>(0xE000E018u);
constexpr uint32_t kSystReload = 0x00FFFFFFu;

void cycles_start() {
  *kSystRvr = kSystReload;
  *kSystCvr = 0;
  *kSystCsr = 0x7;  // CLKSOURCE = core clock, TICKINT, ENABLE
  while (*kSystCvr == 0) {
  }  // until the first reload: 0 would read as a full period
  g_systick_wraps = 0;
}

uint64_t cycles_now() {
  uint32_t wraps, value;
  do {
    wraps = g_systick_wraps;
    value = *kSystCvr;
  } while (wraps != g_systick_wraps);
  return static_cast<uint64_t>(wraps) * (kSystReload + 1u) + (kSystReload - value);
}

int fail(const char *what, const char *detail) {
  std::printf("mote firmware: FAIL %s: %s\n", what, detail);
  return 1;
}

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

extern "C" void SysTick_Handler(void) { g_systick_wraps = g_systick_wraps + 1; }

int main() {
  char err[160];
  const size_t model_bytes = static_cast<size_t>(mote_fw_model_end - mote_fw_model);
  mote_model model;
  if (mote_model_open(mote_fw_model, model_bytes, &model, err, sizeof err) != MOTE_OK) return fail("model", err);
  mote_model_info info;
  mote_model_info_get(&model, &info);

  // Decode one token at a time (batch 1: the smallest arena); the model's whole context.
  mote_session_options options = mote_session_options_default();
  options.batch_size = 1;
  const size_t needed = mote_arena_size(&model, &options);
  if (needed != kArenaBytes) {
    char detail[160];
    std::snprintf(detail, sizeof detail,
                  "the session needs %u bytes, the firmware has %u (configure with "
                  "-DMOTE_FIRMWARE_ARENA_BYTES=%u)",
                  static_cast<unsigned>(needed), static_cast<unsigned>(kArenaBytes), static_cast<unsigned>(needed));
    return fail("arena", detail);
  }
  mote_session session;
  if (mote_session_init(&session, &model, &options, g_arena, sizeof g_arena, err, sizeof err) != MOTE_OK)
    return fail("session", err);

  const size_t vocab = info.vocab_size;
  const size_t golden_bytes = static_cast<size_t>(mote_fw_golden_end - mote_fw_golden);
  if (golden_bytes != kTokenCount * vocab * sizeof(float)) {
    char detail[120];
    std::snprintf(detail, sizeof detail, "%u bytes of golden logits, expected %u tokens x %u vocabulary x 4",
                  static_cast<unsigned>(golden_bytes), static_cast<unsigned>(kTokenCount),
                  static_cast<unsigned>(vocab));
    return fail("golden", detail);
  }

  // Every position's logits against PyTorch's.
  cycles_start();
  const uint64_t t0 = cycles_now();
  float worst = 0.0f;
  for (size_t p = 0; p < kTokenCount; ++p) {
    const float *logits = nullptr;
    if (mote_decode(&session, kTokens[p], &logits) != MOTE_OK) return fail("decode", mote_session_error(&session));
    for (size_t i = 0; i < vocab; ++i) {
      float expected;
      std::memcpy(&expected, mote_fw_golden + (p * vocab + i) * sizeof(float), sizeof expected);
      const float error = std::fabs(logits[i] - expected);
      if (std::isnan(error) || error > worst) worst = error;  // a NaN sticks, and fails
    }
  }
  const uint64_t decode_cycles = cycles_now() - t0;

  // Greedy generation after the same prompt (no reference: it only has to run).
  mote_session_reset(&session);
  mote_sampler_options sampler = mote_sampler_options_default();
  sampler.temperature = 0.0f;
  Generated generated{};
  const uint64_t t1 = cycles_now();
  const mote_status gen =
      mote_generate(&session, kTokens, kTokenCount, kGenerateTokens, &sampler, on_token, &generated, nullptr);
  const uint64_t generate_cycles = cycles_now() - t1;
  if (gen != MOTE_OK) return fail("generate", mote_session_error(&session));
  std::printf("mote firmware: greedy after the %u-token prompt:", static_cast<unsigned>(kTokenCount));
  for (uint32_t i = 0; i < generated.n; ++i) std::printf(" %d", static_cast<int>(generated.ids[i]));
  std::printf(" (%u tokens; prompt and generation %llu SysTick cycles)\n", static_cast<unsigned>(generated.n),
              static_cast<unsigned long long>(generate_cycles));

  const bool pass = worst <= kTolerance;
  std::printf(
      "mote firmware: %s %u positions x %u logits vs PyTorch, max |err| %.3g (limit %.0e); model %u B "
      "in flash @0x%08x (in place), arena %u B static in RAM; %llu SysTick cycles = %.2f ms at 25 MHz "
      "(%llu per token)\n",
      pass ? "PASS" : "FAIL", static_cast<unsigned>(kTokenCount), static_cast<unsigned>(vocab),
      static_cast<double>(worst), static_cast<double>(kTolerance), static_cast<unsigned>(model_bytes),
      static_cast<unsigned>(reinterpret_cast<uintptr_t>(mote_fw_model)), static_cast<unsigned>(kArenaBytes),
      static_cast<unsigned long long>(decode_cycles), static_cast<double>(decode_cycles) * 1000.0 / kCoreHz,
      static_cast<unsigned long long>(decode_cycles / kTokenCount));
  return pass ? 0 : 1;
}

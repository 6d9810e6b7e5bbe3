#include "firmware_support.hpp"

#include <cstdio>

namespace mote_fw {
namespace {

volatile uint32_t g_systick_wraps = 0;
volatile uint32_t *const kSystCsr = reinterpret_cast<volatile uint32_t *>(0xE000E010u);
volatile uint32_t *const kSystRvr = reinterpret_cast<volatile uint32_t *>(0xE000E014u);
volatile uint32_t *const kSystCvr = reinterpret_cast<volatile uint32_t *>(0xE000E018u);
constexpr uint32_t kSystReload = 0x00FFFFFFu;

}  // namespace

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

int open_model_and_session(mote_model *model, mote_session *session, unsigned char *arena, size_t arena_bytes,
                           bool quiet, uint32_t tokens, uint32_t batch) {
  char err[160];
  const size_t model_bytes = static_cast<size_t>(mote_fw_model_end - mote_fw_model);
  if (mote_model_open(mote_fw_model, model_bytes, model, err, sizeof err) != MOTE_OK) return fail("model", err);
  mote_session_options options = mote_session_options_default();
  // f32, not the library's f16 default: the logits goldens and the host text comparison were made
  // with an f32 cache (arena_header.cmake and run_firmware.cmake pass --kv f32 to match).
  options.kv_dtype = MOTE_KV_F32;
  options.batch_size = tokens > 0 ? tokens : batch;
  if (tokens > 0) options.context_length = tokens;
  const size_t needed = mote_arena_size(model, &options);
  if (needed == 0 || needed > arena_bytes) {
    std::snprintf(err, sizeof err, "the session needs %u bytes, the build computed %u", static_cast<unsigned>(needed),
                  static_cast<unsigned>(arena_bytes));
    return fail("arena", err);
  }
  if (mote_session_init(session, model, &options, arena, arena_bytes, err, sizeof err) != MOTE_OK)
    return fail("session", err);
  if (quiet) return 0;
  std::printf(
      "mote firmware: %s, model %u B in flash @0x%08x (read in place), arena %u B static in RAM "
      "(the session uses %u)\n",
      MOTE_FIRMWARE_BOARD, static_cast<unsigned>(model_bytes),
      static_cast<unsigned>(reinterpret_cast<uintptr_t>(mote_fw_model)), static_cast<unsigned>(arena_bytes),
      static_cast<unsigned>(needed));
  return 0;
}

void print_stack() {
  std::printf("mote firmware: stack high-water %u of %u B (painted at reset)\n",
              static_cast<unsigned>(mote_fw_stack_high_water()), static_cast<unsigned>(mote_fw_stack_size()));
}

}  // namespace mote_fw

extern "C" void SysTick_Handler(void) { mote_fw::g_systick_wraps = mote_fw::g_systick_wraps + 1; }

// mote generating text on a bare-metal Cortex-M: the model is a const array in flash, used in
// place; the only writable memory the runtime touches is one static arena whose size the build
// computed with the host tool (`mote inspect --arena-bytes`). The prompt is tokenized on the
// device, then generated from greedily through the public C API exactly as `mote run --temp 0`
// does on a host; the prompt and the text are printed over semihosting between two marker lines,
// so that the test (run_firmware.cmake) can compare them byte for byte with the host's output.
//
// With MOTE_FIRMWARE_RESUME_AFTER=K the image also survives a power cycle mid-generation: after K
// tokens it saves the session state (mote_session_state_save) into a "flash sector", wipes the
// arena, opens a fresh session as a reboot would, restores the state and generates the rest. The
// text must still equal the host's uninterrupted run.
#include <mote/mote.h>

#include <cstdio>

#include "firmware_arena.h"  // generated at build time: MOTE_FIRMWARE_ARENA_BYTES
#include "firmware_support.hpp"

#ifndef MOTE_FIRMWARE_MAX_TOKENS
#error "MOTE_FIRMWARE_MAX_TOKENS (how many tokens to generate) must be defined by the build"
#endif
#ifndef MOTE_FIRMWARE_PROMPT_BYTES
#error "MOTE_FIRMWARE_PROMPT_BYTES (the embedded prompt's length) must be defined by the build"
#endif

namespace {

constexpr size_t kArenaBytes = MOTE_FIRMWARE_ARENA_BYTES;
constexpr uint32_t kMaxTokens = MOTE_FIRMWARE_MAX_TOKENS;
// mote_tokenize needs text bytes + 2 entries (the pieces before merging, and BOS).
constexpr size_t kPromptCapacity = MOTE_FIRMWARE_PROMPT_BYTES + 2;
#ifdef MOTE_FIRMWARE_RESUME_AFTER
constexpr uint32_t kResumeAfter = MOTE_FIRMWARE_RESUME_AFTER;
#else
constexpr uint32_t kResumeAfter = 0;  // no power cycle
#endif

// The session arena and the prompt's tokens: static buffers in RAM (.bss), never the heap.
alignas(MOTE_ARENA_ALIGNMENT) unsigned char g_arena[kArenaBytes];
int32_t g_prompt[kPromptCapacity];

int print_piece(void *, int32_t, const char *piece, size_t n) {
  std::fwrite(piece, 1, n, stdout);
  return 0;
}

#ifdef MOTE_FIRMWARE_RESUME_AFTER
// Stands for a flash sector: on a board the save would be erased and programmed there (QEMU's
// MPS3 flash is read-only to the core), so it lives in RAM beside the arena, never in it.
alignas(8) unsigned char g_flash_sector[MOTE_FIRMWARE_STATE_BYTES];
// What the power cycle did, reported after the text (printing it inside would change the text).
uint32_t g_power_cycle_position = 0;
size_t g_power_cycle_bytes = 0;

// Saves the session, loses everything a power cut would (the arena and the session), opens the
// model and a fresh session as the next boot does, and restores the saved state into it.
int power_cycle(mote_model *model, mote_session *session) {
  size_t saved = 0;
  const mote_status status = mote_session_state_save(session, g_flash_sector, sizeof g_flash_sector, &saved);
  if (status == MOTE_ERR_BUFFER_TOO_SMALL) {
    std::printf("mote firmware: the state needs %u bytes, the flash sector holds %u\n", static_cast<unsigned>(saved),
                static_cast<unsigned>(sizeof g_flash_sector));
  }
  if (status != MOTE_OK) return mote_fw::fail("state save", mote_session_error(session));
  const uint32_t position = mote_session_position(session);
  mote_session_release(session);
  for (unsigned char &byte : g_arena) byte = 0xA5;  // the RAM a reboot does not keep
  *session = mote_session{};

  if (const int failed =
          mote_fw::open_model_and_session(model, session, g_arena, sizeof g_arena, true, 0, MOTE_FIRMWARE_BATCH))
    return failed;
  char err[160];
  if (mote_session_state_load(session, g_flash_sector, saved, err, sizeof err) != MOTE_OK)
    return mote_fw::fail("state load", err);
  if (mote_session_position(session) != position) return mote_fw::fail("state load", "the position changed");
  g_power_cycle_position = position;
  g_power_cycle_bytes = saved;
  return 0;
}
#endif

}  // namespace

int main() {
  mote_model model;
  mote_session session;
  // A batch of MOTE_FIRMWARE_BATCH: generation checks prompt lookup's drafts in one pass (the
  // library's default drafting, in the same arena; the text is the same as without).
  if (const int failed =
          mote_fw::open_model_and_session(&model, &session, g_arena, sizeof g_arena, false, 0, MOTE_FIRMWARE_BATCH))
    return failed;
  mote_model_info info;
  mote_model_info_get(&model, &info);

  // Tokenize on the device, with BOS when the model expects one (as the host tool does).
  const char *prompt = reinterpret_cast<const char *>(mote_fw_data);
  const size_t prompt_bytes = static_cast<size_t>(mote_fw_data_end - mote_fw_data);
  const uint32_t flags = info.add_bos ? MOTE_TOKENIZE_ADD_BOS : 0u;
  size_t n_prompt = 0;
  const mote_status tokenized =
      mote_tokenize(&model, prompt, prompt_bytes, flags, g_prompt, kPromptCapacity, &n_prompt);
  if (tokenized != MOTE_OK) return mote_fw::fail("tokenize", mote_status_name(tokenized));
  if (n_prompt == 0) return mote_fw::fail("tokenize", "the prompt is empty and the model has no BOS token");
  if (n_prompt > mote_session_context_length(&session)) return mote_fw::fail("prompt", "longer than the context");
  std::printf("mote firmware: prompt %u bytes -> %u tokens (tokenized on the device); up to %u new tokens, greedy\n",
              static_cast<unsigned>(prompt_bytes), static_cast<unsigned>(n_prompt), static_cast<unsigned>(kMaxTokens));

  // The prompt as its tokens print, then the generated pieces: what `mote run` writes to stdout.
  std::printf("<<<mote-text\n");
  for (size_t i = 0; i < n_prompt; ++i) {
    char piece[256];
    size_t n = 0;
    if (mote_detokenize(&model, i == 0 ? -1 : g_prompt[i - 1], g_prompt[i], piece, sizeof piece, &n) != MOTE_OK)
      return mote_fw::fail("detokenize", "a prompt token's piece does not fit 256 bytes");
    std::fwrite(piece, 1, n, stdout);
  }

  mote_fw::cycles_start();
  const uint64_t t0 = mote_fw::cycles_now();
  if (mote_prefill(&session, g_prompt, n_prompt) != MOTE_OK)
    return mote_fw::fail("prefill", mote_session_error(&session));
  const uint64_t t1 = mote_fw::cycles_now();
  mote_sampler_options sampler = mote_sampler_options_default();
  sampler.temperature = 0.0f;
  // Greedy generation: in two runs around a power cycle when the build asks for one.
  const uint32_t first_run = kResumeAfter > 0 && kResumeAfter < kMaxTokens ? kResumeAfter : kMaxTokens;
  uint32_t generated = 0;
  mote_status status = mote_generate(&session, nullptr, 0, first_run, &sampler, print_piece, nullptr, &generated);
#ifdef MOTE_FIRMWARE_RESUME_AFTER
  if (status == MOTE_OK && generated == first_run && first_run < kMaxTokens) {
    if (const int failed = power_cycle(&model, &session)) return failed;
    uint32_t more = 0;
    status = mote_generate(&session, nullptr, 0, kMaxTokens - generated, &sampler, print_piece, nullptr, &more);
    generated += more;
  }
#endif
  const uint64_t t2 = mote_fw::cycles_now();
  mote_generation_stats drafting{};
  mote_generate_stats(&session, &drafting);
  std::printf("\nmote-text>>>\n");
  std::printf("mote firmware: prompt lookup: %u of %u drafted tokens kept, %u forward passes for the last %u tokens\n",
              static_cast<unsigned>(drafting.accepted), static_cast<unsigned>(drafting.drafted),
              static_cast<unsigned>(drafting.passes), static_cast<unsigned>(drafting.generated));
#ifdef MOTE_FIRMWARE_RESUME_AFTER
  if (g_power_cycle_bytes > 0) {
    std::printf(
        "mote firmware: power cycle after %u tokens, at position %u: %u state bytes saved to the flash sector "
        "(%u B), arena wiped, a fresh session restored from them\n",
        static_cast<unsigned>(first_run), static_cast<unsigned>(g_power_cycle_position),
        static_cast<unsigned>(g_power_cycle_bytes), static_cast<unsigned>(sizeof g_flash_sector));
  }
#endif
  if (status == MOTE_ERR_CONTEXT_FULL) {
    std::printf("mote firmware: stopped: the context of %u tokens is full\n",
                static_cast<unsigned>(mote_session_context_length(&session)));
  } else if (status != MOTE_OK) {
    return mote_fw::fail("generate", mote_session_error(&session));
  }

  const double prefill_ms = mote_fw::cycles_to_ms(t1 - t0), decode_ms = mote_fw::cycles_to_ms(t2 - t1);
  std::printf(
      "mote firmware: prompt %u tokens in %.1f ms, %u tokens generated in %.1f ms: %.1f tok/s "
      "(QEMU's emulated clock, for reference only)\n",
      static_cast<unsigned>(n_prompt), prefill_ms, static_cast<unsigned>(generated), decode_ms,
      decode_ms > 0 ? generated * 1000.0 / decode_ms : 0.0);
  mote_fw::print_stack();
  return 0;
}

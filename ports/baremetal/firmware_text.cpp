// mote generating text on a bare-metal Cortex-M: the model is a const array in flash, used in
// place; the only writable memory the runtime touches is one static arena whose size the build
// computed with the host tool (`mote inspect --arena-bytes`). The prompt is tokenized on the
// device, then generated from greedily through the public C API exactly as `mote run --temp 0`
// does on a host; the prompt and the text are printed over semihosting between two marker lines,
// so that the test (run_firmware.cmake) can compare them byte for byte with the host's output.
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

// The session arena and the prompt's tokens: static buffers in RAM (.bss), never the heap.
alignas(MOTE_ARENA_ALIGNMENT) unsigned char g_arena[kArenaBytes];
int32_t g_prompt[kPromptCapacity];

int print_piece(void *, int32_t, const char *piece, size_t n) {
  std::fwrite(piece, 1, n, stdout);
  return 0;
}

}  // namespace

int main() {
  mote_model model;
  mote_session session;
  if (const int failed = mote_fw::open_model_and_session(&model, &session, g_arena, sizeof g_arena)) return failed;
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
  uint32_t generated = 0;
  const mote_status status =
      mote_generate(&session, nullptr, 0, kMaxTokens, &sampler, print_piece, nullptr, &generated);
  const uint64_t t2 = mote_fw::cycles_now();
  std::printf("\nmote-text>>>\n");
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

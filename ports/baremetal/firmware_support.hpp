// What both firmware programs share: the embedded blobs, SysTick cycle counting, the painted
// stack's high-water mark and the one-line failure report.
#pragma once

#include <mote/mote.h>

#include <cstddef>
#include <cstdint>

#ifndef MOTE_FIRMWARE_CORE_HZ
#error "MOTE_FIRMWARE_CORE_HZ (the board's core clock) must be defined by the build"
#endif
#ifndef MOTE_FIRMWARE_BOARD
#error "MOTE_FIRMWARE_BOARD (the QEMU machine name) must be defined by the build"
#endif

extern "C" {
// Embedded by blobs.S (.incbin) in flash: the .mote file (64-byte aligned) and the program's
// data (the prompt's UTF-8 bytes, or the golden logits).
extern const unsigned char mote_fw_model[], mote_fw_model_end[];
extern const unsigned char mote_fw_data[], mote_fw_data_end[];
// startup.c: bytes of the stack ever used (painted at reset), and its size.
size_t mote_fw_stack_high_water(void);
size_t mote_fw_stack_size(void);
void SysTick_Handler(void);
}

namespace mote_fw {

constexpr uint32_t kCoreHz = MOTE_FIRMWARE_CORE_HZ;

// Starts SysTick at the core clock (24-bit down counter; its interrupt counts wraps). On a board
// these are core cycles; QEMU's SysTick follows the host's clock, so under emulation the count
// measures the emulator, not the core.
void cycles_start();
uint64_t cycles_now();
inline double cycles_to_ms(uint64_t cycles) { return static_cast<double>(cycles) * 1000.0 / kCoreHz; }

// Prints "mote firmware: FAIL what: detail" and returns 1 (the exit status for a failure).
int fail(const char *what, const char *detail);

// Opens the embedded model in place and a session in the static arena with the options the build
// sized it for (batch 1: the smallest arena; the model's full context; f32 KV cache; or, with
// tokens > 0, a batch and context of that many tokens: the embedder's one step), and prints where
// everything lives.
// The build's figure comes from the host tool, whose pointers are 8 bytes: a 32-bit core needs
// as many bytes or a few hundred fewer (the session's own tables hold pointers), never more; more
// would fail here, naming both sizes. Prints the board, model and arena line unless quiet (a
// reboot's second open). batch: tokens per forward pass (the text firmware checks drafted tokens
// in one pass; the arena header was computed for the same). Returns 0, or the exit status of a
// failure.
int open_model_and_session(mote_model *model, mote_session *session, unsigned char *arena, size_t arena_bytes,
                           bool quiet = false, uint32_t tokens = 0, uint32_t batch = 1);
// "stack high-water N of M B (painted at reset)" on one line.
void print_stack();

}  // namespace mote_fw

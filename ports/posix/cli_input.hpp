// What the `mote` tool reads from its user: a prompt from -f FILE or standard input, chat lines,
// each within a cap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

namespace mote::cli {

// Caps on what the CLI reads (docs/HARDENING.md, "Limits"): a prompt (-f FILE, -f -) and one chat message.
constexpr size_t kMaxPromptBytes = 64u << 20;
constexpr size_t kMaxChatLineBytes = 1u << 20;

// "64 MiB" for a cap.
std::string mib_text(uint64_t bytes);

enum class ReadResult { kRead, kEnd, kTooLong };
// Reads stream up to delimiter (not kept; EOF: to the end) into *text, at most max_bytes of it:
// kTooLong past that (the rest stays unread), kEnd when the stream ends (or a read fails, e.g.
// interrupted by a signal) before a byte was read.
ReadResult read_capped(FILE *stream, int delimiter, size_t max_bytes, std::string *text);

// The whole text of -f FILE, or of standard input for "-f -", at most kMaxPromptBytes. A path
// that is not a regular file (a FIFO, a directory, a device) is refused before a read.
bool read_prompt_file(const std::string &path, std::string *text, std::string *error);

}  // namespace mote::cli

// The terminal the `mote` tool talks to: Ctrl-C, the prompt's progress line, and the line the
// reply is printed on, ended before anything else is printed.
#pragma once

#include <csignal>
#include <cstddef>
#include <cstdint>

#include "mote/mote.h"

namespace mote::cli {

// Ctrl-C: after catch_interrupt(), SIGINT sets a flag instead of ending the process (without
// SA_RESTART, so it also ends a wait for input). The sessions of GenerationSettings stop their
// prefill through mote's on_progress callback when it is set (MOTE_ERR_ABORTED); generate() stops
// before its next token.
void catch_interrupt();
bool interrupted();
void clear_interrupt();
const volatile std::sig_atomic_t *interrupt_flag();

double now_seconds();

// mote_prefill that prints the prompt-processing progress ("prompt 1200/5343 tokens, 410 tok/s")
// on stderr after each batch of a long prompt when stderr is a terminal, erased when done: the
// sessions' on_progress callback (GenerationSettings::session_options) prints it. Ctrl-C stops
// it at the last complete batch (MOTE_ERR_ABORTED).
mote_status prefill_with_progress(mote_session *session, const int32_t *tokens, size_t n);

// The on_progress callback of the CLI's sessions: the progress line while prefill_with_progress
// runs, exit_if_model_changed(), and non-zero once Ctrl-C was pressed.
int report_progress(void *user, uint32_t done, uint32_t total);

// Writes n bytes of text to stdout on the reply's line (run's echo of the prompt), so that
// end_reply_line and begin_stderr_line know whether they ended a line.
void print_on_reply_line(const char *text, size_t n);

// Ends the reply's line on a terminal (piped output stays exactly the text).
void end_reply_line();

// Starts a new line on stderr when the reply printed last did not end one and stdout and stderr
// are the same file, pipe or terminal (2>&1), so what follows never sticks to the reply.
void begin_stderr_line();

// A line on stderr (printf-style) that starts on a line of its own (begin_stderr_line).
void stats_line(const char *format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace mote::cli

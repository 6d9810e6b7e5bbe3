#include "cli_terminal.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdarg>
#include <cstdio>

#include "cli_model.hpp"

namespace mote::cli {

double now_seconds() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

namespace {

// Whether the last byte a reply wrote to stdout ended a line (for stats_line).
bool reply_line_open = false;

// True when stdout and stderr are one file, pipe or terminal (2>&1, or both on the terminal).
bool stdout_is_stderr() {
  struct stat out {
  }, err{};
  return fstat(1, &out) == 0 && fstat(2, &err) == 0 && out.st_dev == err.st_dev && out.st_ino == err.st_ino;
}

volatile std::sig_atomic_t interrupt_requested = 0;

void on_interrupt(int) { interrupt_requested = 1; }

// The prompt's progress line: shown by report_progress while prefill_with_progress runs a long
// prompt with stderr on a terminal.
struct PromptLine {
  bool shown = false;
  double start = 0;
} prompt_line;

}  // namespace

void catch_interrupt() {
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);  // no SA_RESTART: Ctrl-C also ends a wait for input
}

bool interrupted() { return interrupt_requested != 0; }

void clear_interrupt() { interrupt_requested = 0; }

const volatile std::sig_atomic_t *interrupt_flag() { return &interrupt_requested; }

int report_progress(void *, uint32_t done, uint32_t total) {
  exit_if_model_changed();  // the batch ran on the model file: if it was written meanwhile, stop
  if (prompt_line.shown) {
    std::fprintf(stderr, "\rprompt %u/%u tokens, %.0f tok/s\033[K", static_cast<unsigned>(done),
                 static_cast<unsigned>(total), done / (now_seconds() - prompt_line.start));
    std::fflush(stderr);
  }
  return interrupt_requested != 0 ? 1 : 0;
}

mote_status prefill_with_progress(mote_session *session, const int32_t *tokens, size_t n) {
  constexpr size_t kShowAbove = 256;  // shorter prompts take well under a second
  prompt_line.shown = n > kShowAbove && isatty(2) != 0;
  prompt_line.start = now_seconds();
  const mote_status status = mote_prefill(session, tokens, n);
  if (prompt_line.shown) std::fputs("\r\033[K", stderr);  // erased: the reply starts on a clean line
  prompt_line.shown = false;
  exit_if_model_changed();
  return status;
}

void print_on_reply_line(const char *text, size_t n) {
  if (n == 0) return;
  std::fwrite(text, 1, n, stdout);
  reply_line_open = text[n - 1] != '\n';
}

void end_reply_line() {
  if (reply_line_open && isatty(1)) {
    std::fputc('\n', stdout);  // piped output stays exactly the text
    reply_line_open = false;
  }
  std::fflush(stdout);
}

void begin_stderr_line() {
  if (reply_line_open && stdout_is_stderr()) std::fputc('\n', stderr);
  reply_line_open = false;
}

void stats_line(const char *format, ...) {
  begin_stderr_line();
  va_list args;
  va_start(args, format);
  std::vfprintf(stderr, format, args);
  va_end(args);
}

}  // namespace mote::cli

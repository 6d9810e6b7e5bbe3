// The `mote` tool's command lines: exit codes, one option table per command (parsing and --help),
// the option values several commands share (--kv, --backend, --threads) and the one-line report.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "io/file_map.hpp"
#include "mote/mote.h"

namespace mote::cli {

constexpr int kExitError = 1;          // the command ran and failed (bad file, arena, context...)
constexpr int kExitUsage = 2;          // the command line was wrong
constexpr int kExitInterrupted = 130;  // Ctrl-C, as a shell reports a SIGINT death

// One command-line option: every spelling it answers to, what it sets, and its help line. A
// command's table of these is the single source of truth for both parsing and `--help`.
struct Option {
  enum Kind {
    kString,
    kU32,
    kI32,
    kF32,
    kU64,
    kSwitch,
    kCount,    // a uint32_t where -1 means "no limit" (UINT32_MAX), as llama.cpp's -n -1
    kU32List,  // std::vector<uint32_t>: "1,2,4" (llama-bench's comma lists)
  };
  const char *names;  // "-n|--n-predict|--tokens": every spelling, the first "--" one names it in messages
  Kind kind;
  void *target;            // std::string*, uint32_t*, int32_t*, float*, uint64_t*, bool* or std::vector<uint32_t>*
  const char *value_name;  // "N" in the help line; null for switches
  const char *help;
  bool *seen = nullptr;                // set when the option was given
  const char *default_text = nullptr;  // shown as the default; null: the target's value before parsing
};

// A command's help page and option table.
struct CommandHelp {
  const char *name;     // "run"
  const char *usage;    // "[-m MODEL] -p PROMPT [OPTIONS]"
  const char *summary;  // what the command does (may hold newlines)
  std::vector<Option> options;
};

// What parse_command returns when the command should go on (otherwise: the exit code).
constexpr int kParsed = -1;

// Parses argv[2..argc) against the command's table; non-option words go to *positional. --help
// or -h prints the help page on stdout and returns 0; an unknown option, a missing value or a
// malformed number is reported on stderr (one line) and returns kExitUsage.
int parse_command(const CommandHelp &command, int argc, char **argv, std::vector<std::string> *positional);

// The help page: usage, summary and one line per option with its default.
void print_help(const CommandHelp &command, const std::vector<std::string> &defaults, FILE *out);

// --kv NAME: f32, f16 or q8_0; false (with the usage message in *error) for anything else.
bool parse_kv_dtype(const std::string &name, mote_kv_dtype *dtype, std::string *error);

// The KV cache type from --kv and llama.cpp's -ctk/-ctv (mote has one KV dtype, so the ones
// given must agree); false with a usage message otherwise.
struct KvCacheOptions {
  std::string kv = "f16", k, v;  // mote_session_options_default()'s type
  mote_kv_dtype dtype = MOTE_KV_F16;
  void add_options(std::vector<Option> *options);
  bool finish(std::string *error);
};

// --no-mmap (llama.cpp's spelling): read the model into memory in 2 MiB pages instead of mapping
// the file (posix::FileMap::Load::kCopy).
struct ModelLoadOptions {
  bool no_mmap = false;
  void add_options(std::vector<Option> *options);
  posix::FileMap::Load load() const { return no_mmap ? posix::FileMap::Load::kCopy : posix::FileMap::Load::kMap; }
};

// --backend NAME (cpu or cuda; --gpu is --backend cuda): false with the usage message otherwise.
bool parse_backend(const std::string &name, bool gpu, mote_backend *backend, std::string *error);

// Prints "mote COMMAND: message" on stderr and returns code.
int report(const char *command, const std::string &message, int code);

// Threads this process may run on (its CPU affinity), at most kMaxThreads: the default of every
// command that runs a model (decoding is bandwidth-bound and each thread adds bandwidth).
constexpr uint32_t kMaxThreads = MOTE_MAX_THREADS;
uint32_t available_cpus();

}  // namespace mote::cli

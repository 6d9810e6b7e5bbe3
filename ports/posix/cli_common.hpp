// Shared pieces of the `mote` command-line tool: option parsing, model loading, sessions.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "file_map.hpp"
#include "mote/mote.h"

namespace mote::cli {

constexpr int kExitError = 1;  // the command ran and failed (bad file, arena, context...)
constexpr int kExitUsage = 2;  // the command line was wrong

struct Option {
  enum Kind { kString, kU32, kI32, kF32, kU64, kSwitch };
  const char *long_name;   // "--top-k"
  const char *short_name;  // "-t" or null
  Kind kind;
  void *target;          // std::string*, uint32_t*, int32_t*, float*, uint64_t* or bool*
  bool *seen = nullptr;  // set when the option was given
};

// Parses argv[first..argc); non-option words go to *positional. Returns false with a one-line
// reason in *error for an unknown option, a missing value or a malformed number.
// --kv NAME: f32, f16 or q8_0; false (with the usage message in *error) for anything else.
bool parse_kv_dtype(const std::string &name, mote_kv_dtype *dtype, std::string *error);

// --backend NAME (cpu or cuda; --gpu is --backend cuda): false with the usage message otherwise.
bool parse_backend(const std::string &name, bool gpu, mote_backend *backend, std::string *error);

bool parse_options(int argc, char **argv, int first, const std::vector<Option> &options,
                   std::vector<std::string> *positional, std::string *error);

// Prints "mote COMMAND: message" on stderr and returns code.
int report(const char *command, const std::string &message, int code);

// A memory-mapped, validated model.
struct LoadedModel {
  posix::FileMap file;
  mote_model model{};
};
std::unique_ptr<LoadedModel> load_model(const std::string &path, std::string *error);

// A session with its own 64-byte aligned arena.
struct SessionHolder {
  struct FreeArena {
    void operator()(void *p) const;
  };
  std::unique_ptr<void, FreeArena> arena;
  size_t arena_bytes = 0;
  mote_session session{};
  ~SessionHolder() { mote_session_release(&session); }  // a CUDA session's device memory
};
std::unique_ptr<SessionHolder> open_session(const mote_model &model, const mote_session_options &options,
                                            std::string *error);

double now_seconds();

// Threads this process may run on (its CPU affinity), at most kMaxThreads.
constexpr uint32_t kMaxThreads = MOTE_MAX_THREADS;
uint32_t available_cpus();

// Encodes text, with BOS first when the model expects one; false with a reason on failure.
bool tokenize(const mote_model &model, const std::string &text, std::vector<int32_t> *tokens, std::string *error);

// The model `mote run` and `mote chat` use when -m is absent: SmolLM2-135M-Instruct, fetched
// and converted once by models/fetch_smollm2.sh into $XDG_CACHE_HOME/mote (~/.cache/mote).
std::string default_model_path();

// What generating commands (run, chat) share: the model, the sampler, threads and context.
struct GenerationSettings {
  std::string model_path;
  std::string kv = "f32";
  mote_kv_dtype kv_dtype = MOTE_KV_F32;  // kv, parsed by finish()
  uint32_t n_new = 256;
  uint32_t threads = available_cpus();  // decoding is bandwidth-bound and each thread adds
  uint32_t context = 0, batch = 0;
  mote_sampler_options sampler = mote_sampler_options_default();
  bool seed_given = false;
  std::string backend_name = "cpu";
  bool gpu = false;                         // --gpu: --backend cuda
  mote_backend backend = MOTE_BACKEND_CPU;  // backend_name, parsed by finish()

  void add_options(std::vector<Option> *options);
  // Checks the values (a usage error) and fills in the default model and the seed.
  bool finish(std::string *error);
  mote_session_options session_options() const;
};

// Loads the model and opens a session for settings; false with a reason.
bool open_generation(const GenerationSettings &settings, std::unique_ptr<LoadedModel> *loaded,
                     std::unique_ptr<SessionHolder> *holder, std::string *error);

// The subcommands; argv[1] is the command name.
int command_run(int argc, char **argv);
int command_inspect(int argc, char **argv);
int command_convert(int argc, char **argv);
int command_bench(int argc, char **argv);
int command_chat(int argc, char **argv);
int command_perplexity(int argc, char **argv);
int command_embed(int argc, char **argv);

// One chat turn for `mote run --chat`: the reply alone goes to stdout.
int run_chat_turn(GenerationSettings &settings, const std::string &system, const std::string &prompt);

}  // namespace mote::cli

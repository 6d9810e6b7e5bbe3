// Shared pieces of the `mote` command-line tool: option parsing, model loading, sessions.
#pragma once

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "file_map.hpp"
#include "mote/mote.h"

namespace mote::cli {

constexpr int kExitError = 1;          // the command ran and failed (bad file, arena, context...)
constexpr int kExitUsage = 2;          // the command line was wrong
constexpr int kExitInterrupted = 130;  // Ctrl-C, as a shell reports a SIGINT death

// Ctrl-C: after catch_interrupt(), SIGINT sets a flag instead of ending the process (without
// SA_RESTART, so it also ends a wait for input). The sessions of GenerationSettings stop their
// prefill through mote's on_progress callback when it is set (MOTE_ERR_ABORTED); generate() stops
// before its next token.
void catch_interrupt();
bool interrupted();
void clear_interrupt();
const volatile std::sig_atomic_t *interrupt_flag();

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
  std::string kv = "f32", k, v;
  mote_kv_dtype dtype = MOTE_KV_F32;
  void add_options(std::vector<Option> *options);
  bool finish(std::string *error);
};

// --backend NAME (cpu or cuda; --gpu is --backend cuda): false with the usage message otherwise.
bool parse_backend(const std::string &name, bool gpu, mote_backend *backend, std::string *error);

// Prints "mote COMMAND: message" on stderr and returns code.
int report(const char *command, const std::string &message, int code);

// A memory-mapped, validated model. A GGUF or a Hugging Face folder is converted once into the cache first (see
// resolve_model_file); a file in another known format gets a message naming `mote convert`.
// While one is alive, exit_if_model_changed() watches its file (the CLI's commands all run one
// model at a time, so the watch list is process-wide and generate() needs no extra argument).
struct LoadedModel {
  posix::FileMap file;  // the .mote mapped (nothing mapped when a GGUF was converted in memory)
  std::unique_ptr<uint8_t, void (*)(void *)> in_memory{nullptr, std::free};  // that conversion, 64-byte aligned
  mote_model model{};
  std::string path;  // the .mote file actually mapped, or the GGUF converted in memory

  LoadedModel();
  ~LoadedModel();
  LoadedModel(const LoadedModel &) = delete;
  LoadedModel &operator=(const LoadedModel &) = delete;

  // When the model file was written in place, truncated or extended since it was opened:
  // prints "mote: model file 'X' changed while running (written in place?); stopping" (one line,
  // on a line of its own) and exits 1. One fstat (FileMap::change, its limits). When only the
  // file's ctime moved (a chmod, a rename, a rename over its path, or a write with its mtime set
  // back) the bytes are checked again (the loader's checksum, against the one at load: a full
  // read, once per such change) and the run goes on if they are intact. Commands call it after
  // each step whose result they print, before printing it.
  void exit_if_changed();

 private:
  uint64_t checksum_ = 0;  // the payload checksum of the bytes as loaded
  friend std::unique_ptr<LoadedModel> load_model(const std::string &path, std::string *error);
};
std::unique_ptr<LoadedModel> load_model(const std::string &path, std::string *error);

// exit_if_changed() for every LoadedModel alive (generate and prefill_with_progress call it).
void exit_if_model_changed();

// The folder mote keeps converted models in: $XDG_CACHE_HOME/mote, else ~/.cache/mote.
std::string cache_dir();

// What a model path opens as. For a GGUF file or a Hugging Face folder (one with config.json;
// another folder is an error): its conversion in cache_dir(), converted now
// unless an entry verified against the GGUF's content is there (cli_model_cache.cpp: the key,
// the record beside the entry, what is checked), with a line on stderr saying which; when the
// cache cannot be written, the conversion in memory (*converted) with a one-line hint. rebuild:
// convert again even when an entry is there (it failed to open). Any other path is returned as
// it is. False with a one-line reason.
struct ModelFile {
  std::string path;                // the file to map: path itself, or a cache entry
  bool cache_entry = false;        // path is a cache entry (a failure to open it is the cache's)
  std::vector<uint8_t> converted;  // not empty: map nothing, open these bytes
};
bool resolve_model_file(const std::string &path, bool rebuild, ModelFile *file, std::string *error);

// "a safetensors file" for a file in a format mote converts from but cannot open directly, with
// the `mote convert` command that converts it; empty when the first bytes are no known format.
std::string foreign_format_hint(const std::string &path);

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

// Threads this process may run on (its CPU affinity), at most kMaxThreads: the default of every
// command that runs a model (decoding is bandwidth-bound and each thread adds bandwidth).
constexpr uint32_t kMaxThreads = MOTE_MAX_THREADS;
uint32_t available_cpus();

// Encodes text, with BOS first when the model expects one; false with a reason on failure.
bool tokenize(const mote_model &model, std::string_view text, std::vector<int32_t> *tokens, std::string *error);

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

// The most bytes of text one token can stand for: the longest piece of the vocabulary, and at
// least 4 (an unknown token stands for a whole UTF-8 character); a pass over the vocabulary.
size_t longest_token_bytes(const mote_model &model);

// False when text of text_bytes bytes cannot become `tokens` tokens or fewer, known without
// tokenizing it: each token stands for at most longest_token_bytes of it.
bool could_fit(const mote_model &model, size_t text_bytes, size_t tokens);

// The model commands use when -m is absent: SmolLM2-135M-Instruct, fetched and converted once
// by models/fetch_smollm2.sh into cache_dir().
std::string default_model_path();

// --grammar, --grammar-file, --json-schema, --json (cli_grammar.cpp).
struct GrammarOptions {
  std::string gbnf, file, schema;
  bool json = false;

  bool given() const;
  void add_options(std::vector<Option> *options);
  bool check(std::string *error) const;  // at most one of them
};

// A compiled grammar and the arena it lives in.
struct GrammarHolder {
  mote_grammar grammar{};
  std::unique_ptr<uint8_t, void (*)(void *)> arena{nullptr, std::free};
};

// Compiles the grammar the options name for model's vocabulary; false with a one-line reason.
bool compile_grammar(const GrammarOptions &options, const mote_model &model, std::shared_ptr<GrammarHolder> *out,
                     std::string *error);

// What generating commands (run, chat) share: the model, the sampler, threads and context.
struct GenerationSettings {
  std::string model_path;
  KvCacheOptions kv;
  uint32_t n_new = 256;  // UINT32_MAX (-n -1): until the context is full or the end of the turn
  uint32_t threads = available_cpus();
  uint32_t context = 0;
  uint32_t batch = mote_session_options_default().batch_size;
  mote_sampler_options sampler = mote_sampler_options_default();
  bool seed_given = false;
  bool ignore_eos = false;
  std::string stop;  // -r: generation stops once the output ends with it (not printed)
  std::string backend_name = "cpu";
  bool gpu = false;                         // --gpu: --backend cuda
  mote_backend backend = MOTE_BACKEND_CPU;  // backend_name, parsed by finish()
  GrammarOptions grammar;
  // The compiled grammar (open_generation fills it when one is given): each reply starts it anew
  // and ends once it is complete and can take nothing more.
  mutable std::shared_ptr<GrammarHolder> compiled_grammar;

  // Chat's sampling defaults, shared by `mote chat` and `mote run --chat`.
  void use_chat_defaults();
  void add_options(std::vector<Option> *options);
  // Checks the values (a usage error) and fills in the default model and the seed.
  bool finish(std::string *error);
  mote_session_options session_options() const;
};

// Loads the model and opens a session for settings; false with a reason.
bool open_generation(const GenerationSettings &settings, std::unique_ptr<LoadedModel> *loaded,
                     std::unique_ptr<SessionHolder> *holder, std::string *error);

// Samples and decodes after a prefill until settings.n_new tokens, an end-of-generation token
// (unless --ignore-eos), the stop string, a full context (MOTE_ERR_CONTEXT_FULL) or *interrupt
// (when given and set, e.g. by Ctrl-C). Text goes to out as it comes, never split inside a UTF-8
// character and without the stop string. Every generated token is in the KV cache.
struct Generated {
  uint32_t tokens = 0;
  double first_token_seconds = 0;  // from the call to the first piece
  double seconds = 0;
  std::string text;   // what was printed
  std::string error;  // why it failed (a status other than MOTE_OK or MOTE_ERR_CONTEXT_FULL)
};
// mote_generate_constrained (the library's loop, no copy of it here) with the text printed from its
// callback.
mote_status generate(mote_session *session, const GenerationSettings &settings, FILE *out, Generated *generated,
                     const volatile std::sig_atomic_t *interrupt = nullptr);

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

// The subcommands; argv[1] is the command name.
int command_run(int argc, char **argv);
int command_inspect(int argc, char **argv);
int command_convert(int argc, char **argv);
int command_bench(int argc, char **argv);
int command_chat(int argc, char **argv);
int command_perplexity(int argc, char **argv);
int command_embed(int argc, char **argv);

// One chat turn for `mote run --chat`: the reply alone goes to stdout.
struct PromptCache;
int run_chat_turn(GenerationSettings &settings, const PromptCache &cache, const std::string &system,
                  const std::string &prompt);

}  // namespace mote::cli

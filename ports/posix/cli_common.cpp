#include "cli_common.hpp"

#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace mote::cli {
namespace {

// "-n|--n-predict|--tokens" -> {"-n", "--n-predict", "--tokens"}.
std::vector<std::string> spellings(const Option &o) {
  std::vector<std::string> names;
  std::string rest = o.names;
  for (size_t bar; (bar = rest.find('|')) != std::string::npos; rest.erase(0, bar + 1))
    names.push_back(rest.substr(0, bar));
  names.push_back(rest);
  return names;
}

// The name messages use: the first long spelling ("--n-predict"), else the only one.
std::string option_name(const Option &o) {
  for (const std::string &name : spellings(o)) {
    if (name.compare(0, 2, "--") == 0) return name;
  }
  return spellings(o).front();
}

bool parse_u32(const std::string &text, uint32_t *value) {
  char *end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || text[0] == '-' || errno != 0 || *end != '\0' || v > UINT32_MAX) return false;
  *value = static_cast<uint32_t>(v);
  return true;
}

bool parse_value(const Option &o, const std::string &text, std::string *error) {
  const char *s = text.c_str();
  char *end = nullptr;
  errno = 0;
  bool ok = !text.empty();
  switch (o.kind) {
    case Option::kString:
      *static_cast<std::string *>(o.target) = text;
      return true;
    case Option::kCount:
      if (text == "-1") {
        *static_cast<uint32_t *>(o.target) = UINT32_MAX;
        return true;
      }
      [[fallthrough]];
    case Option::kU32:
      ok = parse_u32(text, static_cast<uint32_t *>(o.target));
      break;
    case Option::kU64: {
      const unsigned long long v = std::strtoull(s, &end, 10);
      ok = ok && text[0] != '-' && errno == 0 && *end == '\0';
      if (ok) *static_cast<uint64_t *>(o.target) = v;
      break;
    }
    case Option::kI32: {
      const long v = std::strtol(s, &end, 10);
      ok = ok && errno == 0 && *end == '\0' && v >= INT32_MIN && v <= INT32_MAX;
      if (ok) *static_cast<int32_t *>(o.target) = static_cast<int32_t>(v);
      break;
    }
    case Option::kF32: {
      const float v = std::strtof(s, &end);
      ok = ok && errno == 0 && *end == '\0' && std::isfinite(v);
      if (ok) *static_cast<float *>(o.target) = v;
      break;
    }
    case Option::kU32List: {
      std::vector<uint32_t> values;
      std::string rest = text + ",";
      for (size_t comma; ok && (comma = rest.find(',')) != std::string::npos; rest.erase(0, comma + 1)) {
        uint32_t v = 0;
        ok = parse_u32(rest.substr(0, comma), &v);
        values.push_back(v);
      }
      if (ok) *static_cast<std::vector<uint32_t> *>(o.target) = values;
      break;
    }
    case Option::kSwitch:
      break;
  }
  if (!ok) *error = "invalid value '" + text + "' for " + option_name(o);
  return ok;
}

// The option's value as the help page shows it ("" for none).
std::string value_text(const Option &o) {
  char number[32] = "";
  switch (o.kind) {
    case Option::kString:
      return *static_cast<const std::string *>(o.target);
    case Option::kCount:
      if (*static_cast<const uint32_t *>(o.target) == UINT32_MAX) return "-1";
      [[fallthrough]];
    case Option::kU32:
      return std::to_string(*static_cast<const uint32_t *>(o.target));
    case Option::kI32:
      return std::to_string(*static_cast<const int32_t *>(o.target));
    case Option::kU64:
      return std::to_string(*static_cast<const uint64_t *>(o.target));
    case Option::kF32:
      std::snprintf(number, sizeof number, "%g", static_cast<double>(*static_cast<const float *>(o.target)));
      return number;
    case Option::kU32List: {
      std::string text;
      for (uint32_t v : *static_cast<const std::vector<uint32_t> *>(o.target)) {
        text += (text.empty() ? "" : ",") + std::to_string(v);
      }
      return text;
    }
    case Option::kSwitch:
      break;
  }
  return "";
}

}  // namespace

void print_help(const CommandHelp &command, const std::vector<std::string> &defaults, FILE *out) {
  std::fprintf(out, "usage: mote %s %s\n\n%s\n\noptions:\n", command.name, command.usage, command.summary);
  for (size_t i = 0; i < command.options.size(); ++i) {
    const Option &o = command.options[i];
    std::string left;
    for (const std::string &name : spellings(o)) left += (left.empty() ? "" : ", ") + name;
    if (o.value_name != nullptr) left += std::string(" ") + o.value_name;
    if (left.size() > 34) left += "\n" + std::string(2 + 34, ' ');  // a long spelling list gets its own line
    std::fprintf(out, "  %-34s %s", left.c_str(), o.help);
    if (!defaults[i].empty()) std::fprintf(out, " (default: %s)", defaults[i].c_str());
    std::fputc('\n', out);
  }
  std::fprintf(out, "  %-34s %s\n", "-h, --help", "print this help and exit");
}

int parse_command(const CommandHelp &command, int argc, char **argv, std::vector<std::string> *positional) {
  // The defaults are the targets' values before anything is parsed.
  std::vector<std::string> defaults;
  for (const Option &o : command.options)
    defaults.push_back(o.default_text != nullptr ? o.default_text : value_text(o));
  const std::string see_help = std::string("; see 'mote ") + command.name + " --help'";
  for (int i = 2; i < argc; ++i) {
    const std::string word = argv[i];
    if (word == "-h" || word == "--help") {
      print_help(command, defaults, stdout);
      return 0;
    }
    if (word.size() < 2 || word[0] != '-') {
      positional->push_back(word);
      continue;
    }
    const Option *match = nullptr;
    for (const Option &o : command.options) {
      for (const std::string &name : spellings(o)) {
        if (word == name) match = &o;
      }
    }
    if (match == nullptr) return report(command.name, "unknown option '" + word + "'" + see_help, kExitUsage);
    if (match->seen != nullptr) *match->seen = true;
    if (match->kind == Option::kSwitch) {
      *static_cast<bool *>(match->target) = true;
      continue;
    }
    if (i + 1 >= argc) return report(command.name, "option " + word + " needs a value", kExitUsage);
    std::string error;
    if (!parse_value(*match, argv[++i], &error)) return report(command.name, error, kExitUsage);
  }
  return kParsed;
}

int report(const char *command, const std::string &message, int code) {
  std::fprintf(stderr, "mote %s: %s\n", command, message.c_str());
  return code;
}

namespace {

// The models exit_if_model_changed() watches: the LoadedModels alive (one, in every command).
std::vector<LoadedModel *> &watched_models() {
  static std::vector<LoadedModel *> models;
  return models;
}

// Maps file.path (or copies the bytes converted in memory to aligned storage) and opens it with
// mote_model_open; false with the mapping's one-line error, or the reader's message and
// *rejected set.
bool open_model_file(const ModelFile &file, LoadedModel *loaded, std::string *error, bool *rejected) {
  loaded->path = file.path;
  *rejected = false;
  const void *bytes = nullptr;
  size_t n = file.converted.size();
  if (n > 0) {
    const size_t rounded = (n + MOTE_ARENA_ALIGNMENT - 1) / MOTE_ARENA_ALIGNMENT * MOTE_ARENA_ALIGNMENT;
    loaded->in_memory.reset(static_cast<uint8_t *>(std::aligned_alloc(MOTE_ARENA_ALIGNMENT, rounded)));
    if (loaded->in_memory == nullptr) {
      *error = "cannot allocate " + std::to_string(n) + " bytes for the converted model";
      return false;
    }
    std::memcpy(loaded->in_memory.get(), file.converted.data(), n);
    bytes = loaded->in_memory.get();
  } else {
    if (!loaded->file.open(file.path, error)) return false;
    // The CLI owns its process: a model file truncated under it is a message, not "Bus error".
    loaded->file.exit_on_truncation("mote: model file '" + file.path +
                                    "' changed while running (truncated?); stopping");
    bytes = loaded->file.data();
    n = loaded->file.size();
  }
  char message[256] = "";
  *rejected = mote_model_open(bytes, n, &loaded->model, message, sizeof message) != MOTE_OK;
  if (*rejected) *error = message;
  return !*rejected;
}

}  // namespace

LoadedModel::LoadedModel() { watched_models().push_back(this); }

LoadedModel::~LoadedModel() {
  auto &models = watched_models();
  models.erase(std::remove(models.begin(), models.end(), this), models.end());
}

void LoadedModel::exit_if_changed() {
  const posix::FileMap::Change change = file.change();
  if (change == posix::FileMap::Change::kNone) return;
  if (change == posix::FileMap::Change::kMetadata) {
    // Only ctime moved: intact bytes (the reader's checksum, and the same one as at load) mean
    // a chmod or a rename, not a write whose mtime was set back.
    mote_model again{};
    char message[256] = "";
    uint64_t checksum = 0;
    std::memcpy(&checksum, file.bytes() + 16, sizeof checksum);  // FileHeader.payload_checksum
    file.accept_current();                                       // first: a write from now on moves ctime again
    if (checksum == checksum_ &&
        mote_model_open(file.data(), file.size(), &again, message, sizeof message) == MOTE_OK) {
      return;
    }
  }
  std::fflush(stdout);  // what was printed came from the file as it was
  begin_stderr_line();
  std::fprintf(stderr, "mote: model file '%s' changed while running (written in place?); stopping\n", path.c_str());
  // _Exit, not exit: worker threads may be mid-step; nothing else needs flushing.
  std::fflush(stderr);
  std::_Exit(kExitError);
}

void exit_if_model_changed() {
  for (LoadedModel *model : watched_models()) model->exit_if_changed();
}

std::unique_ptr<LoadedModel> load_model(const std::string &path, std::string *error) {
  ModelFile file;
  if (!resolve_model_file(path, false, &file, error)) return nullptr;
  auto loaded = std::make_unique<LoadedModel>();
  bool rejected = false;
  bool opened = open_model_file(file, loaded.get(), error, &rejected);
  if (!opened && file.cache_entry) {
    // A cache entry that does not open is the cache's fault, not the GGUF's: convert it again.
    std::fprintf(stderr, "mote: cache file %s does not open (%s); converting %s again\n", file.path.c_str(),
                 error->c_str(), path.c_str());
    loaded = std::make_unique<LoadedModel>();
    if (!resolve_model_file(path, true, &file, error)) return nullptr;
    opened = open_model_file(file, loaded.get(), error, &rejected);
  }
  if (!opened && rejected) {
    const std::string hint = error->compare(0, 9, "bad magic") == 0 ? foreign_format_hint(path) : "";
    *error = "'" + path + "': " + (hint.empty() ? *error : hint);
  }
  if (!opened) return nullptr;
  if (loaded->in_memory == nullptr)
    std::memcpy(&loaded->checksum_, loaded->file.bytes() + 16, sizeof loaded->checksum_);
  loaded->exit_if_changed();  // written while the reader checked it (the checksum reads every byte)
  return loaded;
}

void SessionHolder::FreeArena::operator()(void *p) const { std::free(p); }

std::unique_ptr<SessionHolder> open_session(const mote_model &model, const mote_session_options &options,
                                            std::string *error) {
  auto holder = std::make_unique<SessionHolder>();
  holder->arena_bytes = mote_arena_size(&model, &options);
  char message[256] = "";
  if (holder->arena_bytes > 0) {
    const size_t rounded =
        (holder->arena_bytes + MOTE_ARENA_ALIGNMENT - 1) / MOTE_ARENA_ALIGNMENT * MOTE_ARENA_ALIGNMENT;
    holder->arena.reset(std::aligned_alloc(MOTE_ARENA_ALIGNMENT, rounded));
    if (holder->arena == nullptr) {
      *error = "cannot allocate the " + std::to_string(holder->arena_bytes) + "-byte arena";
      return nullptr;
    }
  }
  if (mote_session_init(&holder->session, &model, &options, holder->arena.get(), holder->arena_bytes, message,
                        sizeof message) != MOTE_OK) {
    *error = message;
    return nullptr;
  }
  return holder;
}

bool tokenize(const mote_model &model, std::string_view text, std::vector<int32_t> *tokens, std::string *error) {
  tokens->assign(text.size() + 2, 0);
  size_t n = 0;
  mote_model_info info;
  mote_model_info_get(&model, &info);
  const uint32_t flags = info.add_bos ? MOTE_TOKENIZE_ADD_BOS : 0u;
  const mote_status status = mote_tokenize(&model, text.data(), text.size(), flags, tokens->data(), tokens->size(), &n);
  if (status == MOTE_ERR_UNSUPPORTED) {
    *error = "the prompt holds a byte this model's vocabulary cannot represent (a control character or invalid UTF-8)";
    return false;
  }
  if (status != MOTE_OK) {
    *error = std::string("cannot tokenize the prompt: ") + mote_status_name(status);
    return false;
  }
  tokens->resize(n);
  return true;
}

std::string mib_text(uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

ReadResult read_capped(FILE *stream, int delimiter, size_t max_bytes, std::string *text) {
  text->clear();
  for (int c; (c = getc_unlocked(stream)) != EOF;) {
    if (c == delimiter) return ReadResult::kRead;
    if (text->size() == max_bytes) return ReadResult::kTooLong;
    text->push_back(static_cast<char>(c));
  }
  return text->empty() ? ReadResult::kEnd : ReadResult::kRead;
}

bool read_prompt_file(const std::string &path, std::string *text, std::string *error) {
  if (path == "-") {
    if (read_capped(stdin, EOF, kMaxPromptBytes, text) == ReadResult::kTooLong) {
      *error = "standard input holds more than the " + mib_text(kMaxPromptBytes) + " a prompt may hold";
      return false;
    }
    if (std::ferror(stdin)) {
      *error = std::string("cannot read standard input: ") + std::strerror(errno);
      return false;
    }
    return true;
  }
  std::vector<uint8_t> bytes;
  if (!posix::read_small_file(path, kMaxPromptBytes, &bytes, error)) return false;
  text->assign(bytes.begin(), bytes.end());
  return true;
}

size_t longest_token_bytes(const mote_model &model) {
  mote_model_info info;
  mote_model_info_get(&model, &info);
  size_t longest = 4;
  char piece[256];
  for (uint32_t id = 0; id < info.vocab_size; ++id) {
    size_t n = 0;  // a piece too long for the buffer still reports its length
    mote_detokenize(&model, -1, static_cast<int32_t>(id), piece, sizeof piece, &n);
    longest = std::max(longest, n);
  }
  return longest;
}

bool could_fit(const mote_model &model, size_t text_bytes, size_t tokens) {
  return text_bytes / longest_token_bytes(model) <= tokens;
}

std::string cache_dir() {
  const char *cache = std::getenv("XDG_CACHE_HOME");
  const char *home = std::getenv("HOME");
  const std::string dir =
      cache != nullptr && cache[0] != '\0' ? std::string(cache) : std::string(home ? home : ".") + "/.cache";
  return dir + "/mote";
}

std::string default_model_path() { return cache_dir() + "/SmolLM2-135M-Instruct.mote"; }

void GenerationSettings::use_chat_defaults() {
  // SmolLM2's model card suggests a low temperature for chat; flags still override these.
  sampler.temperature = 0.2f;
  sampler.top_p = 0.9f;
  // Without a penalty SmolLM2-135M loops on one sentence in 10 of 16 replies; 1.1 in 0 of 16,
  // 1.2 in 2 of 16 (bench/repeat_penalty.py: 8 prompts x 2 seeds, 200 tokens, docs/DESIGN.md).
  sampler.repetition_penalty = 1.1f;
}

void GenerationSettings::add_options(std::vector<Option> *options) {
  const std::vector<Option> mine = {
      {"-m|--model", Option::kString, &model_path, "FILE",
       "the model: a .mote file, or a GGUF file or Hugging Face folder converted once into ~/.cache/mote", nullptr,
       "SmolLM2-135M-Instruct from ~/.cache/mote (models/fetch_smollm2.sh)"},
      {"-n|--n-predict|--tokens", Option::kCount, &n_new, "N",
       "tokens to generate; -1: until the context is full or the end of the text/turn"},
      {"-c|--ctx-size|--ctx", Option::kU32, &context, "N", "context length in tokens", nullptr, "the model's maximum"},
      {"--temp", Option::kF32, &sampler.temperature, "T", "sampling temperature; 0: greedy"},
      {"--top-k", Option::kI32, &sampler.top_k, "K", "sample among the K most likely tokens; 0: off"},
      {"--top-p", Option::kF32, &sampler.top_p, "P",
       "sample among the most likely tokens whose probabilities sum to P; 1: off"},
      {"--min-p", Option::kF32, &sampler.min_p, "P",
       "drop tokens less likely than P times the most likely one; 0: off"},
      {"--repeat-penalty", Option::kF32, &sampler.repetition_penalty, "R",
       "penalize recently generated tokens by R; 1: off"},
      {"--repeat-last-n", Option::kI32, &sampler.repetition_last_n, "N",
       "how many recent tokens --repeat-penalty looks at"},
      {"-s|--seed", Option::kU64, &sampler.seed, "S", "the sampler's seed", &seed_given, "the current time"},
      {"--ignore-eos", Option::kSwitch, &ignore_eos, nullptr,
       "go on past end-of-text tokens (until -n or a full context)"},
      {"-r|--reverse-prompt", Option::kString, &stop, "TEXT", "stop once the output holds TEXT (TEXT is not printed)"},
      {"-t|--threads", Option::kU32, &threads, "N", "threads (the default: the CPUs this process may use)"},
      {"-b|--batch-size|--batch", Option::kU32, &batch, "N", "prompt tokens per forward pass"},
      {"--backend", Option::kString, &backend_name, "NAME",
       "cpu or cuda (cuda: a -DMOTE_CUDA=ON build and an NVIDIA GPU)"},
      {"--gpu", Option::kSwitch, &gpu, nullptr, "the same as --backend cuda"},
  };
  options->insert(options->end(), mine.begin(), mine.end());
  kv.add_options(options);
  grammar.add_options(options);
}

void KvCacheOptions::add_options(std::vector<Option> *options) {
  const std::vector<Option> mine = {
      {"--kv", Option::kString, &kv, "TYPE", "KV cache type: f32, f16 or q8_0"},
      {"-ctk|--cache-type-k", Option::kString, &k, "TYPE", "llama.cpp's spelling of --kv", nullptr, "--kv"},
      {"-ctv|--cache-type-v", Option::kString, &v, "TYPE", "llama.cpp's spelling of --kv (must equal -ctk)", nullptr,
       "--kv"},
  };
  options->insert(options->end(), mine.begin(), mine.end());
}

bool KvCacheOptions::finish(std::string *error) {
  // mote keeps K and V in one type: llama.cpp's separate spellings must agree with each other.
  if (!k.empty() && !v.empty() && k != v) {
    *error = "-ctk " + k + " and -ctv " + v + " differ: mote keeps K and V in one type (give the same one, or --kv)";
    return false;
  }
  const std::string &name = !k.empty() ? k : !v.empty() ? v : kv;
  return parse_kv_dtype(name, &dtype, error);
}

bool parse_kv_dtype(const std::string &name, mote_kv_dtype *dtype, std::string *error) {
  if (name == "f32" || name == "f16" || name == "q8_0") {
    *dtype = name == "f32" ? MOTE_KV_F32 : name == "f16" ? MOTE_KV_F16 : MOTE_KV_Q8_0;
    return true;
  }
  *error = "--kv must be f32, f16 or q8_0";
  return false;
}

bool parse_backend(const std::string &name, bool gpu, mote_backend *backend, std::string *error) {
  if (name != "cpu" && name != "cuda") {
    *error = "--backend must be cpu or cuda";
    return false;
  }
  *backend = gpu || name == "cuda" ? MOTE_BACKEND_CUDA : MOTE_BACKEND_CPU;
  return true;
}

bool GenerationSettings::finish(std::string *error) {
  if (!kv.finish(error) || !grammar.check(error)) return false;
  if (!parse_backend(backend_name, gpu, &backend, error)) return false;
  if (threads == 0 || threads > kMaxThreads) {
    *error = "--threads must be in [1, " + std::to_string(kMaxThreads) + "]";
    return false;
  }
  char message[256] = "";
  if (mote_sampler_options_validate(&sampler, message, sizeof message) != MOTE_OK) {
    *error = message;
    return false;
  }
  if (!seed_given) sampler.seed = static_cast<uint64_t>(std::time(nullptr));
  if (model_path.empty()) model_path = default_model_path();
  return true;
}

mote_session_options GenerationSettings::session_options() const {
  mote_session_options o = mote_session_options_default();
  o.context_length = context;
  o.kv_dtype = kv.dtype;
  o.n_threads = threads;
  o.batch_size = batch;
  o.backend = backend;
  o.on_progress = report_progress;
  return o;
}

bool open_generation(const GenerationSettings &settings, std::unique_ptr<LoadedModel> *loaded,
                     std::unique_ptr<SessionHolder> *holder, std::string *error) {
  if (settings.model_path == default_model_path() && access(settings.model_path.c_str(), R_OK) != 0) {
    *error = "no model given (-m MODEL) and the default model " + settings.model_path +
             " is not installed: run models/fetch_smollm2.sh";
    return false;
  }
  *loaded = load_model(settings.model_path, error);
  if (!*loaded) return false;
  *holder = open_session((*loaded)->model, settings.session_options(), error);
  if (*holder == nullptr) return false;
  return !settings.grammar.given() ||
         compile_grammar(settings.grammar, (*loaded)->model, &settings.compiled_grammar, error);
}

uint32_t available_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  const int count = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
  return std::clamp<uint32_t>(static_cast<uint32_t>(count), 1, kMaxThreads);
}

double now_seconds() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

namespace {

// Whether the last byte a reply wrote to stdout ended a line (for stats_line).
bool reply_line_open = false;

// The bytes at the end of text that start a UTF-8 character not yet complete (0 to 3).
size_t incomplete_utf8_tail(const std::string &text) {
  for (size_t back = 1; back <= 3 && back <= text.size(); ++back) {
    const auto c = static_cast<unsigned char>(text[text.size() - back]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte: look further back for the lead
    const size_t length = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    return length > back ? back : 0;
  }
  return 0;
}

// The reply's text on its way to out: bytes that may still turn into the stop string, or that
// begin a UTF-8 character whose other bytes are still to come, are held back.
class ReplyWriter {
 public:
  ReplyWriter(FILE *out, const std::string &stop, std::string *printed) : out_(out), stop_(stop), printed_(printed) {}

  // Appends a piece; true when the text now holds the stop string (cut there, not printed).
  bool write(const char *piece, size_t n) {
    held_.append(piece, n);
    const size_t stop_at = stop_.empty() ? std::string::npos : held_.find(stop_);
    if (stop_at != std::string::npos) {
      emit(stop_at);
      held_.clear();
      return true;
    }
    size_t keep = incomplete_utf8_tail(held_);
    for (size_t k = std::min(stop_.size() - (stop_.empty() ? 0 : 1), held_.size()); k > keep; --k) {
      if (held_.compare(held_.size() - k, k, stop_, 0, k) == 0) {
        keep = k;
        break;
      }
    }
    emit(held_.size() - keep);
    return false;
  }

  // The end of the reply: what was held as a possible stop string is text after all; a
  // character cut off by the token limit is dropped, so the output stays valid UTF-8.
  void finish() {
    emit(held_.size() - incomplete_utf8_tail(held_));
    held_.clear();
  }

 private:
  void emit(size_t n) {
    if (n == 0) return;
    std::fwrite(held_.data(), 1, n, out_);
    printed_->append(held_, 0, n);
    std::fflush(out_);
    if (out_ == stdout) reply_line_open = held_[n - 1] != '\n';
    held_.erase(0, n);
  }

  FILE *out_;
  const std::string &stop_;
  std::string *printed_;
  std::string held_;
};

// True when stdout and stderr are one file, pipe or terminal (2>&1, or both on the terminal).
bool stdout_is_stderr() {
  struct stat out {
  }, err{};
  return fstat(1, &out) == 0 && fstat(2, &err) == 0 && out.st_dev == err.st_dev && out.st_ino == err.st_ino;
}

}  // namespace

namespace {

// What mote_generate's on_token callback writes a reply through.
struct ReplySink {
  ReplyWriter *writer;
  Generated *generated;
  double start;
  const volatile std::sig_atomic_t *interrupt;
};

int write_reply_token(void *user, int32_t, const char *piece, size_t n) {
  ReplySink &sink = *static_cast<ReplySink *>(user);
  // The token and its text came from the model file: if it was written meanwhile, stop before
  // printing them (a write moves ctime before its data lands).
  exit_if_model_changed();
  if (sink.generated->tokens++ == 0) sink.generated->first_token_seconds = now_seconds() - sink.start;
  const bool stop = sink.writer->write(piece, n);
  return stop || (sink.interrupt != nullptr && *sink.interrupt != 0) ? 1 : 0;
}

}  // namespace

mote_status generate(mote_session *session, const GenerationSettings &settings, FILE *out, Generated *generated,
                     const volatile std::sig_atomic_t *interrupt) {
  *generated = Generated{};
  const double start = now_seconds();
  ReplyWriter writer(out, settings.stop, &generated->text);
  mote_grammar *grammar = settings.compiled_grammar ? &settings.compiled_grammar->grammar : nullptr;
  if (grammar != nullptr) mote_grammar_reset(grammar);
  mote_sampler_options options = settings.sampler;
  options.ignore_eos = settings.ignore_eos ? 1 : 0;
  ReplySink sink{&writer, generated, start, interrupt};
  mote_status status = MOTE_OK;
  if (interrupt == nullptr || *interrupt == 0) {
    // The prompt is in the cache already (prefill_with_progress): mote_generate samples from its logits.
    status = mote_generate_constrained(session, nullptr, 0, settings.n_new, &options, grammar, write_reply_token, &sink,
                                       nullptr);
  }
  // Ctrl-C between steps reaches mote_generate through the sessions' on_progress: the reply so far stands.
  if (status == MOTE_ERR_ABORTED) status = MOTE_OK;
  writer.finish();
  generated->seconds = now_seconds() - start;
  if (status != MOTE_OK && status != MOTE_ERR_CONTEXT_FULL) generated->error = mote_session_error(session);
  return status;
}

namespace {

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

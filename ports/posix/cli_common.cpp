#include "cli_common.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace mote::cli {
namespace {

bool parse_number(const Option &o, const std::string &text, std::string *error) {
  const char *s = text.c_str();
  char *end = nullptr;
  errno = 0;
  bool ok = !text.empty();
  switch (o.kind) {
    case Option::kU32:
    case Option::kU64: {
      const unsigned long long v = std::strtoull(s, &end, 10);
      ok = ok && text[0] != '-' && errno == 0 && *end == '\0' && (o.kind == Option::kU64 || v <= UINT32_MAX);
      if (ok && o.kind == Option::kU32) *static_cast<uint32_t *>(o.target) = static_cast<uint32_t>(v);
      if (ok && o.kind == Option::kU64) *static_cast<uint64_t *>(o.target) = v;
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
    default:
      break;
  }
  if (!ok) *error = std::string("invalid value '") + text + "' for " + o.long_name;
  return ok;
}

}  // namespace

bool parse_options(int argc, char **argv, int first, const std::vector<Option> &options,
                   std::vector<std::string> *positional, std::string *error) {
  for (int i = first; i < argc; ++i) {
    const std::string word = argv[i];
    if (word.size() < 2 || word[0] != '-') {
      positional->push_back(word);
      continue;
    }
    const Option *match = nullptr;
    for (const Option &o : options) {
      if (word == o.long_name || (o.short_name != nullptr && word == o.short_name)) match = &o;
    }
    if (match == nullptr) {
      *error = "unknown option '" + word + "'";
      return false;
    }
    if (match->seen != nullptr) *match->seen = true;
    if (match->kind == Option::kSwitch) {
      *static_cast<bool *>(match->target) = true;
      continue;
    }
    if (i + 1 >= argc) {
      *error = "option " + word + " needs a value";
      return false;
    }
    const std::string value = argv[++i];
    if (match->kind == Option::kString) {
      *static_cast<std::string *>(match->target) = value;
    } else if (!parse_number(*match, value, error)) {
      return false;
    }
  }
  return true;
}

int report(const char *command, const std::string &message, int code) {
  std::fprintf(stderr, "mote %s: %s\n", command, message.c_str());
  return code;
}

std::unique_ptr<LoadedModel> load_model(const std::string &path, std::string *error) {
  auto loaded = std::make_unique<LoadedModel>();
  if (!loaded->file.open(path, error)) return nullptr;
  // The CLI owns its process: a model file truncated under it is a message, not "Bus error".
  loaded->file.exit_on_truncation("mote: model file '" + path + "' changed while running (truncated?); stopping");
  char message[256] = "";
  if (mote_model_open(loaded->file.data(), loaded->file.size(), &loaded->model, message, sizeof message) != MOTE_OK) {
    *error = "'" + path + "': " + message;
    return nullptr;
  }
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

bool tokenize(const mote_model &model, const std::string &text, std::vector<int32_t> *tokens, std::string *error) {
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

std::string default_model_path() {
  const char *cache = std::getenv("XDG_CACHE_HOME");
  const char *home = std::getenv("HOME");
  std::string dir = cache != nullptr && cache[0] != '\0' ? std::string(cache) : std::string(home ? home : ".") + "/.cache";
  return dir + "/mote/SmolLM2-135M-Instruct.mote";
}

void GenerationSettings::add_options(std::vector<Option> *options) {
  const std::vector<Option> mine = {
      {"--model", "-m", Option::kString, &model_path},
      {"--tokens", "-n", Option::kU32, &n_new},
      {"--temp", nullptr, Option::kF32, &sampler.temperature},
      {"--top-k", nullptr, Option::kI32, &sampler.top_k},
      {"--top-p", nullptr, Option::kF32, &sampler.top_p},
      {"--min-p", nullptr, Option::kF32, &sampler.min_p},
      {"--repeat-penalty", nullptr, Option::kF32, &sampler.repetition_penalty},
      {"--seed", nullptr, Option::kU64, &sampler.seed, &seed_given},
      {"--threads", "-t", Option::kU32, &threads},
      {"--ctx", nullptr, Option::kU32, &context},
      {"--batch", "-b", Option::kU32, &batch},
      {"--kv", nullptr, Option::kString, &kv},
      {"--backend", nullptr, Option::kString, &backend_name},
      {"--gpu", nullptr, Option::kSwitch, &gpu},
  };
  options->insert(options->end(), mine.begin(), mine.end());
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
  if (!parse_kv_dtype(kv, &kv_dtype, error)) return false;
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
  o.kv_dtype = kv_dtype;
  o.n_threads = threads;
  o.batch_size = batch;
  o.backend = backend;
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
  return *holder != nullptr;
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

}  // namespace mote::cli

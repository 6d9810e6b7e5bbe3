#include "cli_model.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "cli_options.hpp"
#include "cli_terminal.hpp"

namespace mote::cli {

namespace {

// The models exit_if_model_changed() watches: the LoadedModels alive (one, in every command).
std::vector<LoadedModel *> &watched_models() {
  static std::vector<LoadedModel *> models;
  return models;
}

// Maps or reads file.path as load says (or copies the bytes converted in memory to aligned
// storage) and opens it with mote_model_open; false with the mapping's one-line error, or the
// reader's message and *rejected set.
bool open_model_file(const ModelFile &file, posix::FileMap::Load load, LoadedModel *loaded, std::string *error,
                     bool *rejected) {
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
    if (!loaded->file.open(file.path, error, load)) return false;
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

std::unique_ptr<LoadedModel> load_model(const std::string &path, std::string *error, posix::FileMap::Load load) {
  ModelFile file;
  if (!resolve_model_file(path, false, &file, error)) return nullptr;
  auto loaded = std::make_unique<LoadedModel>();
  bool rejected = false;
  bool opened = open_model_file(file, load, loaded.get(), error, &rejected);
  if (!opened && file.cache_entry) {
    // A cache entry that does not open is the cache's fault, not the GGUF's: convert it again.
    std::fprintf(stderr, "mote: cache file %s does not open (%s); converting %s again\n", file.path.c_str(),
                 error->c_str(), path.c_str());
    loaded = std::make_unique<LoadedModel>();
    if (!resolve_model_file(path, true, &file, error)) return nullptr;
    opened = open_model_file(file, load, loaded.get(), error, &rejected);
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

}  // namespace mote::cli

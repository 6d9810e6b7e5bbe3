// Session state files: --prompt-cache for run and chat, chat's /save and /load.
#include "cli_prompt_cache.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include "cli_terminal.hpp"
#include "io/file_map.hpp"

namespace mote::cli {
namespace {

// The tokens the session holds (after a load: the state's).
std::vector<int32_t> session_tokens(const mote_session *session) {
  std::vector<int32_t> tokens(mote_session_position(session));
  size_t n = 0;
  if (mote_session_tokens(session, tokens.data(), tokens.size(), &n) != MOTE_OK) n = 0;
  tokens.resize(n);
  return tokens;
}

// A state file opened and its header accepted by the session.
struct OpenStateFile {
  int fd = -1;
  uint64_t file_size = 0, state_size = 0;
  OpenStateFile() = default;
  OpenStateFile(const OpenStateFile &) = delete;
  OpenStateFile &operator=(const OpenStateFile &) = delete;
  ~OpenStateFile() {
    if (fd >= 0) ::close(fd);
  }
};

// Opens path and judges it by its header alone (at most MOTE_SESSION_STATE_HEADER_SIZE bytes
// read): a file that is not a state of this model and session shape, or one larger than the
// session can hold, is refused before the rest is read (a wrong path to a disk image costs one
// read). false with a one-line reason.
bool open_state_file(mote_session *session, const std::string &path, OpenStateFile *file, std::string *error) {
  file->fd = posix::open_regular_file(path, &file->file_size, error);
  if (file->fd < 0) return false;
  uint8_t header[MOTE_SESSION_STATE_HEADER_SIZE];
  const size_t n = file->file_size < sizeof header ? static_cast<size_t>(file->file_size) : sizeof header;
  if (!posix::read_exactly(file->fd, header, n)) {
    *error = "cannot read '" + path + "' (it changed while being read?)";
    return false;
  }
  char message[256] = "";
  if (mote_session_state_check_header(session, header, n, &file->state_size, message, sizeof message) != MOTE_OK) {
    *error = "'" + path + "': " + message;
    return false;
  }
  return true;
}

}  // namespace

bool load_state_file(mote_session *session, const std::string &path, std::string *error) {
  OpenStateFile file;
  if (!open_state_file(session, path, &file, error)) return false;
  if (file.file_size > file.state_size) {
    *error = "'" + path + "' is " + std::to_string(file.file_size) + " bytes; its header says " +
             std::to_string(file.state_size) + ": more than a saved state";
    return false;
  }
  // At most the state of the session's whole context (the header said so); a shorter file is
  // read as it is, and the load says it is truncated.
  std::vector<uint8_t> bytes(static_cast<size_t>(file.file_size));
  if (lseek(file.fd, 0, SEEK_SET) != 0 || !posix::read_exactly(file.fd, bytes.data(), bytes.size())) {
    *error = "cannot read '" + path + "' (it changed while being read?)";
    return false;
  }
  char message[256] = "";
  if (mote_session_state_load(session, bytes.data(), bytes.size(), message, sizeof message) != MOTE_OK) {
    *error = "'" + path + "': " + message;
    return false;
  }
  return true;
}

bool save_state_file(const mote_session *session, const std::string &path, std::string *error) {
  std::vector<uint8_t> bytes(mote_session_state_size(session));
  size_t written = 0;
  if (bytes.empty() || mote_session_state_save(session, bytes.data(), bytes.size(), &written) != MOTE_OK) {
    *error = std::string("cannot save the session: ") + mote_session_error(session);
    return false;
  }
  return posix::write_file_atomically(path, bytes.data(), written, error, posix::kPrivateFileMode);
}

void PromptCache::add_options(std::vector<Option> *options) {
  options->push_back({"--prompt-cache", Option::kString, &path, "FILE",
                      "reuse the session state in FILE for the prompt's common start, then save the state after "
                      "the prompt there (written atomically, new files private; a file that is not a state of "
                      "this model and session shape is refused, untouched)"});
  options->push_back(
      {"--prompt-cache-ro", Option::kSwitch, &read_only, nullptr, "use --prompt-cache FILE but never write it"});
  options->push_back({"--prompt-cache-force", Option::kSwitch, &force, nullptr,
                      "let --prompt-cache replace a FILE that is not a state of this model and session shape"});
}

bool PromptCache::check_options(std::string *error) const {
  if ((read_only || force) && !active()) {
    *error = std::string(read_only ? "--prompt-cache-ro" : "--prompt-cache-force") + " needs --prompt-cache FILE";
    return false;
  }
  if (read_only && force) {
    *error = "--prompt-cache-force and --prompt-cache-ro contradict: a read-only cache is never written";
    return false;
  }
  return true;
}

bool PromptCache::may_write(mote_session *session, std::string *error) const {
  struct stat existing {};
  if (!active() || read_only || force || stat(path.c_str(), &existing) != 0) return true;
  OpenStateFile file;
  if (open_state_file(session, path, &file, error)) return true;
  *error = "not replacing the prompt cache " + *error + " (--prompt-cache-force replaces it)";
  return false;
}

mote_status PromptCache::prefill(mote_session *session, const std::vector<int32_t> &tokens, size_t *reused) const {
  *reused = 0;
  if (!active()) return prefill_with_progress(session, tokens.data(), tokens.size());
  std::string error;
  if (access(path.c_str(), F_OK) == 0) {
    if (load_state_file(session, path, &error)) {
      const std::vector<int32_t> cached = session_tokens(session);
      size_t common = 0;
      while (common < cached.size() && common < tokens.size() && cached[common] == tokens[common]) ++common;
      // The last prompt token runs again: its logits are what the reply starts from.
      *reused = common < tokens.size() || common == 0 ? common : common - 1;
      mote_session_truncate(session, static_cast<uint32_t>(*reused));
    } else {
      begin_stderr_line();
      std::fprintf(stderr, "mote: warning: ignoring the prompt cache: %s\n", error.c_str());
    }
  }
  const mote_status status = prefill_with_progress(session, tokens.data() + *reused, tokens.size() - *reused);
  if (status != MOTE_OK || read_only) return status;
  if (!save_state_file(session, path, &error)) {
    begin_stderr_line();
    std::fprintf(stderr, "mote: warning: the prompt cache was not saved: %s\n", error.c_str());
  }
  return MOTE_OK;
}

}  // namespace mote::cli

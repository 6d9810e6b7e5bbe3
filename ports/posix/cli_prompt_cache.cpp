// Session state files: --prompt-cache for run and chat, chat's /save and /load.
#include "cli_prompt_cache.hpp"

#include <unistd.h>

#include <cstdio>

namespace mote::cli {
namespace {

// A state holds the KV rows of every position; far above any real one (SmolLM2's full context
// of 8192 tokens in f32 is 1.5 GiB), it only stops a wrong path from reading a disk image.
constexpr uint64_t kMaxStateBytes = uint64_t{16} << 30;

// The tokens the session holds (after a load: the state's).
std::vector<int32_t> session_tokens(const mote_session *session) {
  std::vector<int32_t> tokens(mote_session_position(session));
  size_t n = 0;
  if (mote_session_tokens(session, tokens.data(), tokens.size(), &n) != MOTE_OK) n = 0;
  tokens.resize(n);
  return tokens;
}

}  // namespace

bool load_state_file(mote_session *session, const std::string &path, std::string *error) {
  std::vector<uint8_t> bytes;
  if (!posix::read_small_file(path, kMaxStateBytes, &bytes, error)) return false;
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
  return posix::write_file_atomically(path, bytes.data(), written, error);
}

void PromptCache::add_options(std::vector<Option> *options) {
  options->push_back({"--prompt-cache", Option::kString, &path, "FILE",
                      "reuse the session state in FILE for the prompt's common start, then save the state after "
                      "the prompt there (written atomically; a file of another model or shape is ignored)"});
  options->push_back(
      {"--prompt-cache-ro", Option::kSwitch, &read_only, nullptr, "use --prompt-cache FILE but never write it"});
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

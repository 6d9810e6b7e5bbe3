// Session state files for the CLI: llama.cpp's --prompt-cache for `run` and `chat` (the state
// after a prompt, reused by a later prompt that starts with the same tokens) and chat's /save and
// /load. The files are mote_session_state_save's bytes (models/FORMAT.md, "Session state").
#pragma once

#include <string>
#include <vector>

#include "cli_common.hpp"

namespace mote::cli {

// Reads a state file into the session (mote_session_state_load checks it belongs to this model
// and session shape); false with a one-line reason, the session unchanged.
bool load_state_file(mote_session *session, const std::string &path, std::string *error);

// Writes the session's state to path atomically (a temporary file renamed over it); false with a
// one-line reason, path untouched.
bool save_state_file(const mote_session *session, const std::string &path, std::string *error);

// --prompt-cache FILE and --prompt-cache-ro.
struct PromptCache {
  std::string path;  // empty: no cache
  bool read_only = false;

  void add_options(std::vector<Option> *options);
  bool active() const { return !path.empty(); }

  // Prefills tokens into a session at position 0, reusing the cache file's longest common
  // prefix with them when the file exists and fits this model and session (one warning line on
  // stderr when it does not: it is ignored), then (unless read-only) writes the state after
  // tokens back. *reused: the tokens taken from the file (at most all but the last, whose logits
  // are computed again). Without a cache: prefill_with_progress.
  mote_status prefill(mote_session *session, const std::vector<int32_t> &tokens, size_t *reused) const;
};

}  // namespace mote::cli

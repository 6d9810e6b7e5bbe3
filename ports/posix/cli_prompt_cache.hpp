// Session state files for the CLI: llama.cpp's --prompt-cache for `run` and `chat` (the state
// after a prompt, reused by a later prompt that starts with the same tokens) and chat's /save and
// /load. The files are mote_session_state_save's bytes (models/FORMAT.md, "Session state").
#pragma once

#include <string>
#include <vector>

#include "cli_options.hpp"
#include "mote/mote.h"

namespace mote::cli {

// Reads a state file into the session: its header first (mote_session_state_check_header: a file
// that is not a state of this model and session shape, or larger than the session can hold, is
// refused having read at most the header), then the state (mote_session_state_load); false with a
// one-line reason, the session unchanged.
bool load_state_file(mote_session *session, const std::string &path, std::string *error);

// Writes the session's state to path atomically (a temporary file renamed over it; a new file
// 0600, a replaced one keeps its mode); false with a one-line reason, path untouched.
bool save_state_file(const mote_session *session, const std::string &path, std::string *error);

// --prompt-cache FILE, --prompt-cache-ro and --prompt-cache-force.
struct PromptCache {
  std::string path;  // empty: no cache
  bool read_only = false, force = false;

  void add_options(std::vector<Option> *options);
  bool active() const { return !path.empty(); }
  // The options make sense together; false with a one-line usage error.
  bool check_options(std::string *error) const;
  // Whether the run may go on to write FILE: false (one line) when it exists and is not a state of
  // this model and session shape by its header (a document, a model, another model's cache),
  // unless read-only (never written) or forced. Call before the prompt runs.
  bool may_write(mote_session *session, std::string *error) const;

  // Prefills tokens into a session at position 0, reusing the cache file's longest common
  // prefix with them when the file exists and fits this model and session (one warning line on
  // stderr when it does not: it is ignored), then (unless read-only) writes the state after
  // tokens back. *reused: the tokens taken from the file (at most all but the last, whose logits
  // are computed again). Without a cache: prefill_with_progress.
  mote_status prefill(mote_session *session, const std::vector<int32_t> &tokens, size_t *reused) const;
};

}  // namespace mote::cli

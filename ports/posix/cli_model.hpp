// Opening models for the `mote` tool: a .mote mapped and watched for changes, a GGUF file or a
// Hugging Face folder converted once into the cache (cli_model_cache.cpp), sessions with their
// arenas, and what a model's vocabulary says about a text.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "io/file_map.hpp"
#include "mote/mote.h"

namespace mote::cli {

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
  friend std::unique_ptr<LoadedModel> load_model(const std::string &path, std::string *error,
                                                 posix::FileMap::Load load);
};
// load: kCopy for --no-mmap (posix::FileMap::Load).
std::unique_ptr<LoadedModel> load_model(const std::string &path, std::string *error,
                                        posix::FileMap::Load load = posix::FileMap::Load::kMap);

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

// Encodes text, with BOS first when the model expects one; false with a reason on failure.
bool tokenize(const mote_model &model, std::string_view text, std::vector<int32_t> *tokens, std::string *error);

// The most bytes of text one token can stand for: the longest piece of the vocabulary, and at
// least 4 (an unknown token stands for a whole UTF-8 character); a pass over the vocabulary.
size_t longest_token_bytes(const mote_model &model);

// False when text of text_bytes bytes cannot become `tokens` tokens or fewer, known without
// tokenizing it: each token stands for at most longest_token_bytes of it.
bool could_fit(const mote_model &model, size_t text_bytes, size_t tokens);

// The model commands use when -m is absent: SmolLM2-135M-Instruct, fetched and converted once
// by models/fetch_smollm2.sh into cache_dir().
std::string default_model_path();

}  // namespace mote::cli

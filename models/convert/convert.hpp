// The converter's front door for tools: one call from a source checkpoint to the bytes of a
// .mote (or GGUF) file. It speaks strings and bytes only, so the `mote` CLI, which includes this
// header and mote.h, never sees runtime/src (the build enforces it: runtime/src is private to
// the converter library).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace mote::convert {

struct ConvertRequest {
  std::string input;  // a GGUF file, a Hugging Face folder (or its config.json / .safetensors), a llama2.c checkpoint
  std::string tokenizer;     // llama2.c: its tokenizer.bin (required); Hugging Face: a tokenizer.json elsewhere
  std::string dtype;         // a --dtype name (dtype_choice_list), "" for the source's default
  std::string layout;        // quantized blocks: "interleaved" ("" too) or "gguf"
  std::string rope;          // llama2.c only: "interleaved" ("" too) or "split"
  bool gguf_output = false;  // write GGUF (llama.cpp's names and keys) instead of .mote
  std::function<void(size_t done, size_t total)> progress;  // per tensor converted, or empty
};

struct Converted {
  std::vector<uint8_t> bytes;  // the file, validated by mote's own loader when it is a .mote
  size_t n_tensors = 0;
  std::string dtype_counts;  // "61 f32, 1 q8_0x8, 210 q4_1x8" (a GGUF: the plain types it holds, "1 q8_0, 210 q4_1")
  std::vector<std::string> notes;  // what the importer left out on purpose (one line each): print them
};

enum class ConvertResult { ok, usage_error, failed };

// Converts request.input. usage_error: the request itself is wrong (an unknown --dtype, a
// tokenizer given to a GGUF...); failed: the input could not be read or converted. Either way
// *error holds one line naming the cause.
ConvertResult convert_model(const ConvertRequest &request, Converted *out, std::string *error);

// "f32, f16, q8_0, ...": the --dtype names convert_model accepts.
std::string dtype_choice_list();

// Writes bytes to path atomically (a temporary beside it, fsync, rename).
bool write_file(const std::string &path, const std::vector<uint8_t> &bytes, std::string *error);

}  // namespace mote::convert

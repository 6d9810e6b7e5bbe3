// GPT-2 byte-level BPE vocabularies in mapped form (host side): shared by the GGUF and Hugging
// Face importers.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "mote_writer.hpp"

namespace mote::convert {

// Undoes GPT-2's byte-to-unicode mapping (bytes 0x21-0x7E, 0xA1-0xAC, 0xAE-0xFF stand for
// themselves; the other 68 bytes are U+0100.. in increasing order). False when mapped is not
// valid UTF-8 or holds a character outside the mapping.
bool gpt2_unicode_to_bytes(const std::string &mapped, std::string *raw);
// The inverse: raw bytes spelled in GPT-2's byte-to-unicode form (UTF-8).
std::string gpt2_bytes_to_unicode(const std::string &raw);

// Fills tok's pieces, types, scores (0) and merges from a vocabulary in GPT-2 mapped form:
// normal tokens (type 1) become raw bytes, every other type keeps its literal text; each merge
// (left, right) in mapped form is resolved to ids, the result being the token spelled left+right.
// Duplicate merges keep the first. `source` prefixes messages ("GGUF", "tokenizer.json").
bool build_byte_level_vocab(const std::vector<std::string> &mapped_tokens, const std::vector<uint8_t> &types,
                            const std::vector<std::pair<std::string, std::string>> &merges, const char *source,
                            TokenizerData *tok, std::string *error);

// ChatML when the template contains "<|im_start|>", llama-2 for "[INST]", else none.
format::ChatTemplate detect_chat_template(const std::string &jinja);

}  // namespace mote::convert

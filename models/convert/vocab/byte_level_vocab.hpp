// GPT-2 byte-level BPE vocabularies in mapped form (host side): shared by the GGUF and Hugging
// Face importers.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "model_data.hpp"

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

// A byte-level BPE pre-tokenizer as the header stores it: its kind and the flag bits it sets.
struct PreTokenizerChoice {
  format::PreTokenizer kind = format::PreTokenizer::gpt2;
  uint32_t flags = 0;  // format::kTokNoDigitSplit or 0
};
// GGUF's tokenizer.ggml.pre name (empty when absent) -> mote's pre-tokenizer, by one table; false
// with a one-line error naming a pre-tokenizer mote does not implement.
bool pre_tokenizer_from_gguf(const std::string &name, PreTokenizerChoice *out, std::string *error);
// The same for a tokenizer.json Split pre-tokenizer's regex text.
bool pre_tokenizer_from_regex(const std::string &pattern, PreTokenizerChoice *out, std::string *error);

// The template kind a Jinja chat template is written in, by the tokens it spells: ChatML
// ("<|im_start|>"; Qwen2.5's when it holds Qwen's default system message), Gemma
// ("<start_of_turn>"), Llama 3 ("<|start_header_id|>"; 3.1's with "Cutting Knowledge Date"), Phi-3 ("<|user|>"),
// llama-2 ("[INST]"), else none.
format::ChatTemplate detect_chat_template(const std::string &jinja);

}  // namespace mote::convert

// GPT-2 byte-level BPE vocabularies (shared by the GGUF and Hugging Face importers): the
// byte-to-unicode mapping undone, merges resolved to ids, the chat template recognised.
#include "vocab/byte_level_vocab.hpp"

#include <unordered_map>
#include <unordered_set>

#include "message_text.hpp"
#include "text/tokenizer.hpp"

namespace mote::convert {

namespace {

// GPT-2's byte-to-unicode table both ways: code point -> byte (-1 where no byte maps there) and
// byte -> code point.
struct Gpt2Table {
  int16_t byte_of[324];
  int16_t code_point_of[256];
  Gpt2Table() {
    for (int16_t &b : byte_of) b = -1;
    int extra = 0;
    for (int b = 0; b < 256; ++b) {
      const bool self = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      code_point_of[b] = static_cast<int16_t>(self ? b : 256 + extra++);
      byte_of[code_point_of[b]] = static_cast<int16_t>(b);
    }
  }
};

// Next code point of s at *at (strict UTF-8); -1 when malformed.
int32_t next_code_point(const std::string &s, size_t *at) {
  const unsigned char c = static_cast<unsigned char>(s[*at]);
  int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
  if (n == 0 || s.size() - *at < static_cast<size_t>(n)) return -1;
  int32_t cp = n == 1 ? c : c & (0x7F >> n);
  for (int k = 1; k < n; ++k) {
    const unsigned char cc = static_cast<unsigned char>(s[*at + k]);
    if ((cc & 0xC0) != 0x80) return -1;
    cp = (cp << 6) | (cc & 0x3F);
  }
  static const int32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return -1;
  *at += static_cast<size_t>(n);
  return cp;
}

}  // namespace

bool gpt2_unicode_to_bytes(const std::string &mapped, std::string *raw) {
  static const Gpt2Table table;
  raw->clear();
  size_t at = 0;
  while (at < mapped.size()) {
    const int32_t cp = next_code_point(mapped, &at);
    if (cp < 0 || cp >= 324 || table.byte_of[cp] < 0) return false;
    raw->push_back(static_cast<char>(table.byte_of[cp]));
  }
  return true;
}

std::string gpt2_bytes_to_unicode(const std::string &raw) {
  static const Gpt2Table table;
  std::string mapped;
  for (const char c : raw) {
    const int cp = table.code_point_of[static_cast<unsigned char>(c)];  // below U+0800: 1 or 2 UTF-8 bytes
    if (cp < 0x80) {
      mapped.push_back(static_cast<char>(cp));
    } else {
      mapped.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      mapped.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }
  return mapped;
}

bool build_byte_level_vocab(const std::vector<std::string> &mapped_tokens, const std::vector<uint8_t> &types,
                            const std::vector<std::pair<std::string, std::string>> &merges, const char *source,
                            TokenizerData *tok, std::string *error) {
  const size_t n = mapped_tokens.size();
  tok->kind = format::TokenizerKind::byte_level_bpe;
  tok->pieces.assign(n, std::string());
  tok->types = types;
  tok->scores.assign(n, 0.0f);
  tok->merges.clear();
  std::unordered_map<std::string, uint32_t> id_of;  // mapped spelling -> first id
  id_of.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    id_of.emplace(mapped_tokens[i], static_cast<uint32_t>(i));
    if (types[i] != kTokenNormal) {
      tok->pieces[i] = mapped_tokens[i];
    } else if (!gpt2_unicode_to_bytes(mapped_tokens[i], &tok->pieces[i])) {
      *error = std::string(source) + " token " + num(i) + " '" + printable(mapped_tokens[i]) +
               "' is a normal token but not in GPT-2's byte-to-unicode form";
      return false;
    }
  }
  std::unordered_set<uint64_t> seen;
  seen.reserve(merges.size());
  tok->merges.reserve(merges.size());
  for (size_t m = 0; m < merges.size(); ++m) {
    const std::string &a = merges[m].first, &b = merges[m].second;
    const std::string what = std::string(source) + " merge " + num(m) + " '" + printable(a + " " + b) + "'";
    const auto left = id_of.find(a), right = id_of.find(b), result = id_of.find(a + b);
    if (left == id_of.end() || right == id_of.end() || result == id_of.end()) {
      const std::string &missing = left == id_of.end() ? a : right == id_of.end() ? b : a + b;
      *error = what + ": token '" + printable(missing) + "' is not in the vocabulary";
      return false;
    }
    if (tok->pieces[result->second] != tok->pieces[left->second] + tok->pieces[right->second]) {
      *error = what + ": the result's bytes are not the left's followed by the right's";
      return false;
    }
    const uint64_t pair = static_cast<uint64_t>(left->second) << 32 | right->second;
    if (!seen.insert(pair).second) continue;  // a duplicate: the first keeps its rank
    tok->merges.push_back(format::BpeMerge{left->second, right->second, result->second, 0});
  }
  return true;
}

namespace {

using format::PreTokenizer;

struct PreTokenizerRow {
  const char *gguf_name;  // llama.cpp's tokenizer.ggml.pre names with this exact behavior
  PreTokenizer kind;
  uint32_t flags;
};

// llama.cpp groups these names under one regex each (its llama-vocab.cpp). A file without the key,
// or with "default", keeps what mote always read it as: SmolLM2's digit split (llama.cpp's own
// "default" chain for byte-level BPE differs; files that name it are mote's test GGUFs).
constexpr PreTokenizerRow kPreTokenizers[] = {
    {"", PreTokenizer::gpt2, 0},
    {"default", PreTokenizer::gpt2, 0},
    {"smollm", PreTokenizer::gpt2, 0},
    {"starcoder", PreTokenizer::gpt2, 0},
    {"refact", PreTokenizer::gpt2, 0},
    {"gpt2", PreTokenizer::gpt2, format::kTokNoDigitSplit},
    {"gpt-2", PreTokenizer::gpt2, format::kTokNoDigitSplit},
    {"phi-2", PreTokenizer::gpt2, format::kTokNoDigitSplit},
    {"mpt", PreTokenizer::gpt2, format::kTokNoDigitSplit},
    {"olmo", PreTokenizer::gpt2, format::kTokNoDigitSplit},
    {"llama-bpe", PreTokenizer::llama3, 0},
    {"llama3", PreTokenizer::llama3, 0},
    {"llama-v3", PreTokenizer::llama3, 0},
    {"qwen2", PreTokenizer::qwen2, 0},
    {"deepseek-r1-qwen", PreTokenizer::qwen2, 0},
};

// tokenizer.json's Split regexes, exactly as Meta's and Qwen's files spell them.
struct PreTokenizerRegex {
  const char *pattern;
  PreTokenizer kind;
};
constexpr PreTokenizerRegex kPreTokenizerRegexes[] = {
    {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
     "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
     PreTokenizer::llama3},
    {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
     "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
     PreTokenizer::qwen2},
};

}  // namespace

bool pre_tokenizer_from_gguf(const std::string &name, PreTokenizerChoice *out, std::string *error) {
  for (const PreTokenizerRow &row : kPreTokenizers) {
    if (name == row.gguf_name) {
      *out = {row.kind, row.flags};
      return true;
    }
  }
  *error = "GGUF pre-tokenizer '" + printable(name) +
           "' (tokenizer.ggml.pre) is not supported (mote has gpt-2, smollm, llama-bpe, qwen2 and their aliases)";
  return false;
}

bool pre_tokenizer_from_regex(const std::string &pattern, PreTokenizerChoice *out, std::string *error) {
  for (const PreTokenizerRegex &row : kPreTokenizerRegexes) {
    if (pattern == row.pattern) {
      *out = {row.kind, 0};
      return true;
    }
  }
  *error = "tokenizer.json pre-tokenizer regex '" + printable(pattern) +
           "' is not supported (mote has GPT-2's, Llama 3's and Qwen2's)";
  return false;
}

format::ChatTemplate detect_chat_template(const std::string &jinja) {
  auto has = [&](const char *text) { return jinja.find(text) != std::string::npos; };
  if (has("<|im_start|>")) {
    // Qwen2.5 opens a conversation without a system message with its own.
    return has("You are Qwen, created by Alibaba Cloud.") ? format::ChatTemplate::chatml_qwen
                                                          : format::ChatTemplate::chatml;
  }
  if (has("<start_of_turn>")) return format::ChatTemplate::gemma;
  if (has("<|start_header_id|>")) {
    return has("Cutting Knowledge Date") ? format::ChatTemplate::llama3_dated : format::ChatTemplate::llama3;
  }
  if (has("<|user|>") || (has("<|end|>") && has("<|assistant|>"))) return format::ChatTemplate::phi3;
  if (jinja.find("[INST]") != std::string::npos) return format::ChatTemplate::llama2;
  return format::ChatTemplate::none;
}

}  // namespace mote::convert

// A GGUF file's tokenizer (tokenizer.ggml.*) -> a .mote tokenizer (host side).
#include <cmath>
#include <string>
#include <vector>

#include "gguf/gguf_meta.hpp"
#include "text/tokenizer.hpp"
#include "vocab/byte_level_vocab.hpp"
#include "vocab/wordpiece_vocab.hpp"

namespace mote::convert {

using format::kTokenNormal;

namespace {

// llama.cpp's BERT vocabulary (tokenizer.ggml.model "bert"): phantom-space pieces (undone into
// "##" ones), [CLS] and [SEP] as cls_token_id and seperator_token_id (llama.cpp's spelling), and
// the normalizer llama.cpp's WPM tokenizer always runs: lowercase, accents stripped, CJK split,
// text cleaned (its BERT GGUFs are uncased models).
bool map_wordpiece(Meta &meta, std::vector<std::string> tokens, std::vector<uint8_t> types, TokenizerData *tok,
                   std::string *error) {
  for (std::string &token : tokens) token = wordpiece_from_phantom_space(token);
  const int64_t last = static_cast<int64_t>(tokens.size()) - 1;
  int64_t unk = -1, cls = -1, sep = -1;
  if (!meta.integer("tokenizer.ggml.unknown_token_id", false, -1, -1, last, &unk) ||
      !meta.integer("tokenizer.ggml.bos_token_id", false, -1, -1, last, &cls) ||
      !meta.integer("tokenizer.ggml.cls_token_id", false, cls, -1, last, &cls) ||
      !meta.integer("tokenizer.ggml.eos_token_id", false, -1, -1, last, &sep) ||
      !meta.integer("tokenizer.ggml.seperator_token_id", false, sep, -1, last, &sep))
    return false;
  return build_wordpiece_vocab(std::move(tokens), std::move(types), BertNormalizerOptions{}, static_cast<int32_t>(unk),
                               static_cast<int32_t>(cls), static_cast<int32_t>(sep), format::kWordPiecePrefix,
                               format::kWordPieceMaxWordChars, "GGUF", tok, error);
}

}  // namespace

bool map_tokenizer(const GgufFile &file, Meta &meta, uint32_t vocab, ModelData *m, std::string *error) {
  TokenizerData &tok = m->tokenizer;
  std::string model;
  if (file.find("tokenizer.ggml.tokens") == nullptr) {
    *error = "GGUF has no tokenizer (no tokenizer.ggml.tokens): mote needs one in the model file";
    return false;
  }
  if (!meta.string("tokenizer.ggml.model", true, &model)) return false;
  std::vector<std::string> tokens;
  if (!file.strings("tokenizer.ggml.tokens", &tokens, error)) return false;
  if (tokens.size() != vocab) {
    *error =
        "GGUF tokenizer.ggml.tokens has " + num(tokens.size()) + " tokens but the model's vocabulary is " + num(vocab);
    return false;
  }
  std::vector<uint8_t> types(vocab, kTokenNormal);
  if (file.find("tokenizer.ggml.token_type") != nullptr) {
    std::vector<int64_t> raw;
    if (!file.integers("tokenizer.ggml.token_type", &raw, error)) return false;
    if (raw.size() != vocab) {
      *error = "GGUF tokenizer.ggml.token_type has " + num(raw.size()) + " entries for " + num(vocab) + " tokens";
      return false;
    }
    for (size_t i = 0; i < vocab; ++i) {
      if (raw[i] < 0 || raw[i] > 6) {
        *error = "GGUF tokenizer.ggml.token_type[" + num(i) + "] is " + std::to_string(raw[i]) + " (expected 1 to 6)";
        return false;
      }
      types[i] =
          raw[i] == 0 ? static_cast<uint8_t>(kTokenNormal) : static_cast<uint8_t>(raw[i]);  // 0: ggml's "undefined"
    }
  }
  bool add_bos = false, add_space_prefix = true;
  if (model == "llama") {
    // SentencePiece: "▁" (U+2581) stands for a space; mote's pieces hold the space itself.
    tok.kind = format::TokenizerKind::sentencepiece_bpe;
    tok.pieces = std::move(tokens);
    for (std::string &piece : tok.pieces) {
      for (size_t at = 0; (at = piece.find("\xE2\x96\x81", at)) != std::string::npos;) piece.replace(at, 3, " ");
    }
    tok.types = types;
    tok.scores.assign(vocab, 0.0f);
    if (file.find("tokenizer.ggml.scores") != nullptr) {
      if (!file.floats("tokenizer.ggml.scores", &tok.scores, error)) return false;
      if (tok.scores.size() != vocab) {
        *error = "GGUF tokenizer.ggml.scores has " + num(tok.scores.size()) + " entries for " + num(vocab) + " tokens";
        return false;
      }
      for (size_t i = 0; i < vocab; ++i) {
        if (!std::isfinite(tok.scores[i])) {
          *error = "GGUF tokenizer.ggml.scores[" + num(i) + "] is not finite";
          return false;
        }
      }
    }
    if (!meta.boolean("tokenizer.ggml.add_bos_token", true, &add_bos) ||
        !meta.boolean("tokenizer.ggml.add_space_prefix", true, &add_space_prefix))
      return false;
    tok.flags =
        (add_space_prefix ? uint32_t{format::kTokAddSpacePrefix} : 0u) | (add_bos ? uint32_t{format::kTokAddBos} : 0u);
  } else if (model == "gpt2") {
    std::vector<std::pair<std::string, std::string>> merges;
    if (file.find("tokenizer.ggml.merges") != nullptr) {
      std::vector<std::string> lines;
      if (!file.strings("tokenizer.ggml.merges", &lines, error)) return false;
      merges.reserve(lines.size());
      for (size_t i = 0; i < lines.size(); ++i) {
        const size_t space = lines[i].find(' ');
        if (space == std::string::npos || space == 0 || space + 1 == lines[i].size() ||
            lines[i].find(' ', space + 1) != std::string::npos) {
          *error = "GGUF merge " + num(i) + " '" + printable(lines[i]) + "' is not two tokens split by one space";
          return false;
        }
        merges.emplace_back(lines[i].substr(0, space), lines[i].substr(space + 1));
      }
    }
    if (!build_byte_level_vocab(tokens, types, merges, "GGUF", &tok, error)) return false;
    std::string pre;
    PreTokenizerChoice choice;
    if (!meta.boolean("tokenizer.ggml.add_bos_token", false, &add_bos) ||
        !meta.string("tokenizer.ggml.pre", false, &pre) || !pre_tokenizer_from_gguf(pre, &choice, error))
      return false;
    tok.pre_tokenizer = choice.kind;
    tok.flags = (add_bos ? uint32_t{format::kTokAddBos} : 0u) | choice.flags;
  } else if (model == "bert") {
    if (!map_wordpiece(meta, std::move(tokens), types, &tok, error)) return false;
    m->config.bos_id = tok.bos_id;
    m->config.eos_id = tok.eos_id;
    return true;
  } else {
    *error = "GGUF tokenizer model '" + printable(model) + "' is not supported (only llama, gpt2 and bert)";
    return false;
  }
  int64_t bos = -1, eos = -1, unk = -1;
  const int64_t last = static_cast<int64_t>(vocab) - 1;
  if (!meta.integer("tokenizer.ggml.bos_token_id", false, -1, -1, last, &bos) ||
      !meta.integer("tokenizer.ggml.eos_token_id", false, -1, -1, last, &eos) ||
      !meta.integer("tokenizer.ggml.unknown_token_id", false, -1, -1, last, &unk))
    return false;
  // The end-of-turn token (Llama 3's <|eot_id|>, Gemma's <end_of_turn>) must end generation,
  // which control tokens do (mote_token_ends_generation), even when the file's eos is another.
  int64_t eot = -1;
  if (!meta.integer("tokenizer.ggml.eot_token_id", false, -1, -1, last, &eot)) return false;
  if (eot >= 0 && tok.types[static_cast<size_t>(eot)] != format::kTokenByte) {
    tok.types[static_cast<size_t>(eot)] = format::kTokenControl;
  }
  tok.bos_id = static_cast<int32_t>(bos);
  tok.eos_id = static_cast<int32_t>(eos);
  tok.unk_id = static_cast<int32_t>(unk);
  m->config.bos_id = tok.bos_id;
  m->config.eos_id = tok.eos_id;
  std::string chat;
  if (!meta.string("tokenizer.chat_template", false, &chat)) return false;
  tok.chat_template = detect_chat_template(chat);
  return true;
}

}  // namespace mote::convert

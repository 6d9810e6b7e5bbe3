// Hugging Face tokenizer.json + tokenizer_config.json -> a .mote tokenizer (host side).
#include "hf/hf_tokenizer.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "hf/json.hpp"
#include "message_text.hpp"
#include "text/tokenizer.hpp"
#include "vocab/byte_level_vocab.hpp"
#include "vocab/wordpiece_vocab.hpp"

namespace mote::convert {
namespace {

// ---- tokenizer.json ----------------------------------------------------------------------------

bool has_byte_level(const JsonValue *pre) {
  if (pre == nullptr) return false;
  const JsonValue *type = pre->get("type");
  if (type == nullptr || !type->is_string()) return false;
  if (type->text == "ByteLevel") return true;
  if (type->text == "Sequence") {
    const JsonValue *list = pre->get("pretokenizers");
    if (list == nullptr || list->kind != JsonValue::Kind::array) return false;
    for (const JsonValue &p : list->items) {
      if (has_byte_level(&p)) return true;
    }
  }
  return false;
}

// Whether the pre-tokenizer splits every digit off (Digits with individual_digits, SmolLM2's);
// GPT-2's plain ByteLevel does not.
bool splits_digits(const JsonValue *pre) {
  if (pre == nullptr) return false;
  const JsonValue *type = pre->get("type");
  if (type == nullptr || !type->is_string()) return false;
  if (type->text == "Digits") {
    const JsonValue *individual = pre->get("individual_digits");
    return individual != nullptr && individual->kind == JsonValue::Kind::boolean && individual->boolean;
  }
  const JsonValue *list = pre->get("pretokenizers");
  if (type->text != "Sequence" || list == nullptr || list->kind != JsonValue::Kind::array) return false;
  for (const JsonValue &p : list->items) {
    if (splits_digits(&p)) return true;
  }
  return false;
}

// The regex of the first Split pre-tokenizer (Llama 3's and Qwen2's split before a ByteLevel that
// uses no regex of its own), or null.
const JsonValue *split_regex(const JsonValue *pre) {
  if (pre == nullptr) return nullptr;
  const JsonValue *type = pre->get("type");
  if (type == nullptr || !type->is_string()) return nullptr;
  if (type->text == "Split") {
    const JsonValue *pattern = pre->get("pattern");
    const JsonValue *regex = pattern != nullptr ? pattern->get("Regex") : nullptr;
    return regex != nullptr && regex->is_string() ? regex : nullptr;
  }
  const JsonValue *list = pre->get("pretokenizers");
  if (type->text != "Sequence" || list == nullptr || list->kind != JsonValue::Kind::array) return nullptr;
  for (const JsonValue &p : list->items) {
    if (const JsonValue *regex = split_regex(&p)) return regex;
  }
  return nullptr;
}

// A special token's text in tokenizer_config.json: "<s>" or {"content": "<s>", ...}.
std::string token_text(const JsonValue *v) {
  if (v == nullptr) return "";
  if (v->is_string()) return v->text;
  const JsonValue *content = v->get("content");
  return content != nullptr && content->is_string() ? content->text : "";
}

// The vocabulary as tokenizer.json numbers it: model.vocab, then added_tokens (which may restate
// a vocabulary entry to mark it special).
struct VocabTable {
  std::vector<std::string> tokens;
  std::vector<uint8_t> types;
  std::vector<bool> filled;
  explicit VocabTable(uint32_t vocab_size) : tokens(vocab_size), types(vocab_size, kTokenUnused), filled(vocab_size) {}

  bool place(const std::string &text, const JsonValue *id, uint8_t token_type, bool added, std::string *error) {
    if (id == nullptr || id->kind != JsonValue::Kind::number || !id->integral || id->integer < 0) {
      *error = "tokenizer.json token '" + printable(text) + "' has no valid id";
      return false;
    }
    if (id->integer >= static_cast<int64_t>(tokens.size())) {
      *error = "tokenizer.json token '" + printable(text) + "' has id " + std::to_string(id->integer) +
               ", outside the model's vocabulary of " + num(tokens.size());
      return false;
    }
    const size_t i = static_cast<size_t>(id->integer);
    if (filled[i] && !(added && tokens[i] == text)) {
      *error =
          "tokenizer.json gives id " + num(i) + " to both '" + printable(tokens[i]) + "' and '" + printable(text) + "'";
      return false;
    }
    tokens[i] = text;
    types[i] = token_type;
    filled[i] = true;
    return true;
  }

  int32_t find_id(const std::string &text) const {
    if (text.empty()) return -1;
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (filled[i] && tokens[i] == text) return static_cast<int32_t>(i);
    }
    return -1;
  }
};

// The model object of a byte-level BPE tokenizer.json, or null with the reason in *error.
const JsonValue *byte_level_bpe_model(const JsonValue &json, std::string *error) {
  const JsonValue *model = json.get("model");
  const JsonValue *type = model != nullptr ? model->get("type") : nullptr;
  if (model == nullptr || model->kind != JsonValue::Kind::object) {
    *error = "tokenizer.json has no model object";
    return nullptr;
  }
  if (type != nullptr && (!type->is_string() || type->text != "BPE")) {
    *error = "tokenizer.json model type '" + (type->is_string() ? printable(type->text) : std::string("?")) +
             "' is not supported (only byte-level BPE)";
    return nullptr;
  }
  if (!has_byte_level(json.get("pre_tokenizer"))) {
    *error = "tokenizer.json has no ByteLevel pre-tokenizer: only byte-level BPE tokenizers are supported";
    return nullptr;
  }
  return model;
}

bool read_vocabulary(const JsonValue &json, const JsonValue &model, VocabTable *table, std::string *error) {
  const JsonValue *vocab = model.get("vocab");
  if (vocab == nullptr || vocab->kind != JsonValue::Kind::object) {
    *error = "tokenizer.json model.vocab is not an object";
    return false;
  }
  for (const auto &member : vocab->members) {
    if (!table->place(member.first, &member.second, kTokenNormal, false, error)) return false;
  }
  const JsonValue *added = json.get("added_tokens");
  if (added == nullptr || added->kind != JsonValue::Kind::array) return true;
  for (const JsonValue &a : added->items) {
    const JsonValue *content = a.get("content"), *special = a.get("special");
    if (content == nullptr || !content->is_string()) {
      *error = "tokenizer.json has an added token without content";
      return false;
    }
    const bool is_special = special != nullptr && special->kind == JsonValue::Kind::boolean && special->boolean;
    if (!table->place(content->text, a.get("id"), is_special ? kTokenControl : kTokenUserDefined, true, error))
      return false;
  }
  return true;
}

// model.merges: "A B" strings (tokenizers < 0.20) or ["A", "B"] pairs (>= 0.20).
bool read_merges(const JsonValue &model, std::vector<std::pair<std::string, std::string>> *merges, std::string *error) {
  const JsonValue *list = model.get("merges");
  if (list == nullptr || list->kind != JsonValue::Kind::array) return true;
  merges->reserve(list->items.size());
  for (size_t i = 0; i < list->items.size(); ++i) {
    const JsonValue &m = list->items[i];
    if (m.is_string()) {
      const size_t space = m.text.find(' ');
      if (space == std::string::npos || m.text.find(' ', space + 1) != std::string::npos) {
        *error = "tokenizer.json merge " + num(i) + " '" + printable(m.text) + "' is not two tokens split by one space";
        return false;
      }
      merges->emplace_back(m.text.substr(0, space), m.text.substr(space + 1));
    } else if (m.kind == JsonValue::Kind::array && m.items.size() == 2 && m.items[0].is_string() &&
               m.items[1].is_string()) {
      merges->emplace_back(m.items[0].text, m.items[1].text);
    } else {
      *error = "tokenizer.json merge " + num(i) + " is neither \"A B\" nor [\"A\", \"B\"]";
      return false;
    }
  }
  return true;
}

// tokenizer_config.json: add_bos_token, the chat template, and special ids config.json left out.
bool apply_tokenizer_config(const std::string &config_json, const VocabTable &table, TokenizerData *tok,
                            std::string *error) {
  JsonValue cfg;
  if (!parse_json(config_json.data(), config_json.size(), &cfg, error)) {
    *error = "tokenizer_config.json: " + *error;
    return false;
  }
  const JsonValue *add_bos = cfg.get("add_bos_token");
  if (add_bos != nullptr && add_bos->kind == JsonValue::Kind::boolean && add_bos->boolean)
    tok->flags |= format::kTokAddBos;
  if (const JsonValue *chat = cfg.get("chat_template")) {
    if (chat->is_string()) {
      tok->chat_template = detect_chat_template(chat->text);
    } else if (chat->kind == JsonValue::Kind::array) {  // [{"name": "default", "template": "..."}]
      for (const JsonValue &entry : chat->items) {
        const JsonValue *name = entry.get("name"), *text = entry.get("template");
        if (name != nullptr && name->is_string() && name->text == "default" && text != nullptr && text->is_string())
          tok->chat_template = detect_chat_template(text->text);
      }
    }
  }
  if (tok->bos_id < 0) tok->bos_id = table.find_id(token_text(cfg.get("bos_token")));
  if (tok->eos_id < 0) tok->eos_id = table.find_id(token_text(cfg.get("eos_token")));
  return true;
}

// ---- WordPiece (BERT) ---------------------------------------------------------------------------

bool json_flag(const JsonValue *object, const char *key, bool fallback) {
  const JsonValue *v = object != nullptr ? object->get(key) : nullptr;
  return v != nullptr && v->kind == JsonValue::Kind::boolean ? v->boolean : fallback;
}

bool is_type(const JsonValue *object, const char *type) {
  const JsonValue *t = object != nullptr ? object->get("type") : nullptr;
  return t != nullptr && t->is_string() && t->text == type;
}

// BertNormalizer's options; strip_accents null (or absent) follows lowercase.
bool bert_normalizer(const JsonValue *normalizer, BertNormalizerOptions *options, std::string *error) {
  if (!is_type(normalizer, "BertNormalizer")) {
    *error = "tokenizer.json: a WordPiece tokenizer needs a BertNormalizer (mote implements no other normalizer)";
    return false;
  }
  options->clean_text = json_flag(normalizer, "clean_text", true);
  options->handle_chinese_chars = json_flag(normalizer, "handle_chinese_chars", true);
  options->lowercase = json_flag(normalizer, "lowercase", true);
  const JsonValue *strip = normalizer->get("strip_accents");
  options->strip_accents = strip != nullptr && strip->kind == JsonValue::Kind::boolean ? (strip->boolean ? 1 : 0) : -1;
  return true;
}

// A special token's id: the post-processor's (BertProcessing's ["[CLS]", 101], or
// TemplateProcessing's special_tokens entry), else the vocabulary's entry of that text.
int32_t special_id(const JsonValue *post, const char *field, const std::string &text, const VocabTable &table) {
  const JsonValue *pair = post != nullptr ? post->get(field) : nullptr;
  if (pair != nullptr && pair->kind == JsonValue::Kind::array && pair->items.size() == 2 &&
      pair->items[1].kind == JsonValue::Kind::number && pair->items[1].integral) {
    return table.find_id(pair->items[0].is_string() ? pair->items[0].text : text);
  }
  const JsonValue *specials = post != nullptr ? post->get("special_tokens") : nullptr;
  const JsonValue *entry = specials != nullptr ? specials->get(text) : nullptr;
  const JsonValue *ids = entry != nullptr ? entry->get("ids") : nullptr;
  if (ids != nullptr && ids->kind == JsonValue::Kind::array && ids->items.size() == 1 &&
      ids->items[0].kind == JsonValue::Kind::number && ids->items[0].integral && ids->items[0].integer >= 0 &&
      ids->items[0].integer < static_cast<int64_t>(table.tokens.size())) {
    return static_cast<int32_t>(ids->items[0].integer);
  }
  return table.find_id(text);
}

// A WordPiece tokenizer.json: BertNormalizer, BertPreTokenizer, model.vocab with unk_token,
// continuing_subword_prefix and max_input_chars_per_word; [CLS] and [SEP] become bos and eos.
bool hf_wordpiece(const JsonValue &json, const JsonValue &model, uint32_t vocab_size, TokenizerData *tok,
                  std::string *error) {
  BertNormalizerOptions options;
  if (!bert_normalizer(json.get("normalizer"), &options, error)) return false;
  if (!is_type(json.get("pre_tokenizer"), "BertPreTokenizer")) {
    *error = "tokenizer.json: a WordPiece tokenizer needs a BertPreTokenizer (mote implements no other)";
    return false;
  }
  VocabTable table(vocab_size);
  if (!read_vocabulary(json, model, &table, error)) return false;
  const JsonValue *unk = model.get("unk_token"), *prefix = model.get("continuing_subword_prefix");
  const JsonValue *max_chars = model.get("max_input_chars_per_word");
  const int64_t max_word = max_chars != nullptr && max_chars->kind == JsonValue::Kind::number && max_chars->integral
                               ? max_chars->integer
                               : format::kWordPieceMaxWordChars;
  const JsonValue *post = json.get("post_processor");
  const int32_t cls = special_id(post, "cls", "[CLS]", table), sep = special_id(post, "sep", "[SEP]", table);
  return build_wordpiece_vocab(table.tokens, table.types, options,
                               table.find_id(unk != nullptr && unk->is_string() ? unk->text : "[UNK]"), cls, sep,
                               prefix != nullptr && prefix->is_string() ? prefix->text : format::kWordPiecePrefix,
                               max_word, "tokenizer.json", tok, error);
}

}  // namespace

bool hf_vocab_txt_tokenizer(const std::string &vocab_txt, const std::string &tokenizer_config_json, uint32_t vocab_size,
                            TokenizerData *tok, std::string *error) {
  const std::vector<std::string> lines = read_vocab_txt(vocab_txt);
  if (lines.size() > vocab_size) {
    *error = "vocab.txt has " + num(lines.size()) + " tokens but the model's vocabulary is " + num(vocab_size);
    return false;
  }
  JsonValue cfg;  // BertTokenizer's defaults when absent
  if (!tokenizer_config_json.empty() &&
      !parse_json(tokenizer_config_json.data(), tokenizer_config_json.size(), &cfg, error)) {
    *error = "tokenizer_config.json: " + *error;
    return false;
  }
  BertNormalizerOptions options;
  options.lowercase = json_flag(&cfg, "do_lower_case", true);
  options.handle_chinese_chars = json_flag(&cfg, "tokenize_chinese_chars", true);
  const JsonValue *strip = cfg.get("strip_accents");
  options.strip_accents = strip != nullptr && strip->kind == JsonValue::Kind::boolean ? (strip->boolean ? 1 : 0) : -1;
  VocabTable table(vocab_size);
  for (size_t i = 0; i < lines.size(); ++i) {
    table.tokens[i] = lines[i];
    table.types[i] = kTokenNormal;
    table.filled[i] = true;
  }
  auto named = [&](const char *key, const char *fallback) {
    const std::string text = token_text(cfg.get(key));
    return text.empty() ? std::string(fallback) : text;
  };
  const int32_t unk = table.find_id(named("unk_token", "[UNK]"));
  const int32_t cls = table.find_id(named("cls_token", "[CLS]")), sep = table.find_id(named("sep_token", "[SEP]"));
  for (const int32_t id :
       {unk, cls, sep, table.find_id(named("pad_token", "[PAD]")), table.find_id(named("mask_token", "[MASK]"))}) {
    if (id >= 0) table.types[static_cast<size_t>(id)] = kTokenControl;
  }
  return build_wordpiece_vocab(table.tokens, table.types, options, unk, cls, sep, format::kWordPiecePrefix,
                               format::kWordPieceMaxWordChars, "vocab.txt", tok, error);
}

bool hf_tokenizer(const std::string &tokenizer_json, const std::string &tokenizer_config_json, uint32_t vocab_size,
                  TokenizerData *tok, std::string *error) {
  JsonValue json;
  if (!parse_json(tokenizer_json.data(), tokenizer_json.size(), &json, error)) {
    *error = "tokenizer.json: " + *error;
    return false;
  }
  const JsonValue *wordpiece = json.get("model");
  if (wordpiece != nullptr && is_type(wordpiece, "WordPiece"))
    return hf_wordpiece(json, *wordpiece, vocab_size, tok, error);
  const JsonValue *model = byte_level_bpe_model(json, error);
  if (model == nullptr) return false;
  VocabTable table(vocab_size);
  if (!read_vocabulary(json, *model, &table, error)) return false;
  std::vector<std::pair<std::string, std::string>> merges;
  if (!read_merges(*model, &merges, error)) return false;

  const int32_t keep_bos = tok->bos_id, keep_eos = tok->eos_id;
  if (!build_byte_level_vocab(table.tokens, table.types, merges, "tokenizer.json", tok, error)) return false;
  const JsonValue *unk = model->get("unk_token");
  tok->unk_id = unk != nullptr && unk->is_string() ? table.find_id(unk->text) : -1;
  tok->bos_id = keep_bos;
  tok->eos_id = keep_eos;
  PreTokenizerChoice choice;
  if (const JsonValue *regex = split_regex(json.get("pre_tokenizer"))) {
    if (!pre_tokenizer_from_regex(regex->text, &choice, error)) return false;
  } else {
    choice.flags = splits_digits(json.get("pre_tokenizer")) ? 0u : uint32_t{format::kTokNoDigitSplit};
  }
  tok->pre_tokenizer = choice.kind;
  tok->flags = choice.flags;
  tok->chat_template = format::ChatTemplate::none;
  if (!tokenizer_config_json.empty() && !apply_tokenizer_config(tokenizer_config_json, table, tok, error)) return false;
  return true;
}

}  // namespace mote::convert

// BERT's config.json and sentence-transformers' pooling files (host side): BertModel is a
// post-norm LayerNorm encoder with learned positions, token types, an embedding LayerNorm and a
// GELU (erf) FFN; families.cpp's "bert" row gives the block, this file the sizes.
#include <cmath>

#include "hf/hf_config.hpp"
#include "hf/hf_family_configs.hpp"

namespace mote::convert {

bool hf_bert_config(const JsonValue &json, const FamilyRow &row, format::ModelConfig *out, std::string *error) {
  Config cfg{json, error};
  int64_t dim = 0, layers = 0, heads = 0, ffn = 0, vocab = 0, context = 0, type_vocab = 0;
  double eps = 0;
  if (!cfg.integer("hidden_size", true, 0, 1, 65536, &dim) ||
      !cfg.integer("num_hidden_layers", true, 0, 1, 1024, &layers) ||
      !cfg.integer("num_attention_heads", true, 0, 1, 1024, &heads) ||
      !cfg.integer("intermediate_size", true, 0, 1, 1 << 18, &ffn) ||
      !cfg.integer("vocab_size", true, 0, 1, 1 << 24, &vocab) ||
      !cfg.integer("max_position_embeddings", true, 0, 1, 1 << 20, &context) ||
      !cfg.integer("type_vocab_size", false, 2, 1, 1 << 16, &type_vocab) || !cfg.real("layer_norm_eps", 1e-12, &eps))
    return false;
  if (dim % heads != 0) {
    *error = "config.json hidden_size " + num(dim) + " is not a multiple of num_attention_heads " + num(heads);
    return false;
  }
  if (!(eps > 0 && eps < 1)) {
    *error = "config.json layer_norm_eps " + real_text(eps) + " must be in (0, 1)";
    return false;
  }
  const struct {
    const char *key, *fallback, *supported;
  } texts[] = {{"hidden_act", "gelu", "gelu"}, {"position_embedding_type", "absolute", "absolute"}};
  for (const auto &t : texts) {
    const JsonValue *v = json.get(t.key);
    if (v == nullptr || v->is_null()) continue;
    if (!v->is_string()) return cfg.wrong(t.key, *v, "a string");
    if (v->text != t.supported) {
      *error = "config.json " + std::string(t.key) + " '" + printable(v->text) + "' is not supported (only '" +
               t.supported + "')";
      return false;
    }
  }
  *out = family_config(row, {dim, layers, heads, heads, dim / heads, ffn, vocab, context}, eps, 0.0, 0);
  return true;
}

bool sentence_transformers_pooling(const JsonValue *modules, const JsonValue *pooling, format::ModelConfig *c,
                                   std::string *error) {
  c->pooling = format::Pooling::mean;  // sentence-transformers' default for a plain encoder
  if (pooling != nullptr) {
    const struct {
      const char *key;
      format::Pooling pooling;
    } modes[] = {{"pooling_mode_mean_tokens", format::Pooling::mean},
                 {"pooling_mode_cls_token", format::Pooling::cls},
                 {"pooling_mode_lasttoken", format::Pooling::last}};
    int chosen = 0;
    for (const auto &mode : modes) {
      const JsonValue *v = pooling->get(mode.key);
      if (v == nullptr || v->kind != JsonValue::Kind::boolean || !v->boolean) continue;
      c->pooling = mode.pooling;
      ++chosen;
    }
    for (const char *key :
         {"pooling_mode_max_tokens", "pooling_mode_mean_sqrt_len_tokens", "pooling_mode_weightedmean_tokens"}) {
      const JsonValue *v = pooling->get(key);
      if (v != nullptr && v->kind == JsonValue::Kind::boolean && v->boolean) {
        *error =
            "1_Pooling/config.json sets " + std::string(key) + ": only mean, cls and last-token pooling are supported";
        return false;
      }
    }
    if (chosen > 1) {
      *error = "1_Pooling/config.json sets more than one pooling mode: mote pools one way";
      return false;
    }
  }
  // modules.json lists the pipeline; a Normalize module scales the pooled vector to unit length.
  if (modules != nullptr && modules->kind == JsonValue::Kind::array) {
    for (const JsonValue &module : modules->items) {
      const JsonValue *type = module.get("type");
      if (type != nullptr && type->is_string() && type->text == "sentence_transformers.models.Normalize")
        c->flags |= format::kFlagNormalizeEmbeddings;
    }
  }
  return true;
}

}  // namespace mote::convert

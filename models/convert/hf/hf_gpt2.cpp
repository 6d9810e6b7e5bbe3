// GPT-2's config.json (model_type "gpt2") as a .mote config; see hf_family_configs.hpp.
#include "families.hpp"
#include "hf/hf_config.hpp"
#include "hf/hf_family_configs.hpp"
#include "message_text.hpp"

namespace mote::convert {

bool hf_gpt2_config(const JsonValue &json, const FamilyRow &row, format::ModelConfig *out, bool *tied,
                    std::string *error) {
  if (json.kind != JsonValue::Kind::object) {
    *error = "config.json is not a JSON object";
    return false;
  }
  Config cfg{json, error};
  std::string activation = "gelu_new", placement = "pre", positions = "learned";
  const struct {
    const char *key;
    std::string *value;
  } texts[] = {{"activation_function", &activation},
               {"mote_norm_placement", &placement},
               {"mote_position_embedding", &positions}};
  for (const auto &t : texts) {
    const JsonValue *v = json.get(t.key);
    if (v == nullptr || v->is_null()) continue;
    if (!v->is_string()) return cfg.wrong(t.key, *v, "a string");
    *t.value = v->text;
  }
  format::ModelConfig &c = *out;
  c = format::ModelConfig{};
  if (activation == "gelu_new" || activation == "gelu_pytorch_tanh" || activation == "gelu_fast") {
    c.activation = format::Activation::gelu;
  } else if (activation == "gelu") {
    c.activation = format::Activation::gelu_erf;
  } else if (activation == "relu") {
    c.activation = format::Activation::relu;
  } else {
    *error = "config.json activation_function '" + printable(activation) +
             "' is not supported (gelu_new, gelu_pytorch_tanh, gelu or relu)";
    return false;
  }
  if ((placement != "pre" && placement != "post") || (positions != "learned" && positions != "sinusoidal")) {
    *error = "config.json mote_norm_placement must be pre or post, mote_position_embedding learned or sinusoidal";
    return false;
  }
  bool scale_weights = true, scale_by_layer = false;
  if (!cfg.boolean("tie_word_embeddings", true, tied) || !cfg.boolean("scale_attn_weights", true, &scale_weights) ||
      !cfg.boolean("scale_attn_by_inverse_layer_idx", false, &scale_by_layer))
    return false;
  if (!scale_weights || scale_by_layer) {
    *error = "config.json scales attention other than by 1/sqrt(head_dim): not supported";
    return false;
  }
  int64_t dim = 0, layers = 0, heads = 1, inner = 0, vocab = 0, context = 0, bos = -1, eos = -1;
  double eps = 0;
  if (!cfg.integer("n_embd", true, 0, 1, 65536, &dim) || !cfg.integer("n_layer", true, 0, 1, 1024, &layers) ||
      !cfg.integer("n_head", true, 0, 1, 1024, &heads) || !cfg.integer("n_inner", false, 4 * dim, 1, 1 << 18, &inner) ||
      !cfg.integer("vocab_size", true, 0, 1, 1 << 24, &vocab) ||
      !cfg.integer("n_positions", true, 0, 1, 1 << 20, &context) || !cfg.real("layer_norm_epsilon", 1e-5, &eps) ||
      !cfg.token_id("bos_token_id", &bos) || !cfg.token_id("eos_token_id", &eos))
    return false;
  // One check, one message: the user learns which number to fix.
  if (dim % heads != 0) {
    *error = "config.json n_embd " + num(dim) + " is not divisible by n_head " + num(heads);
    return false;
  }
  if (positions == "sinusoidal" && dim % 2 != 0) {
    *error = "config.json n_embd " + num(dim) + " is odd: sinusoidal positions pair its dimensions";
    return false;
  }
  if (!(eps > 0 && eps < 1)) {
    *error = "config.json layer_norm_epsilon " + real_text(eps) + " must be in (0, 1)";
    return false;
  }
  if (bos >= vocab || eos >= vocab) {
    *error = "config.json bos_token_id " + std::to_string(bos) + " and eos_token_id " + std::to_string(eos) +
             " must be inside the vocabulary of " + num(vocab);
    return false;
  }
  const format::Activation act = c.activation;
  c = family_config(row, {dim, layers, heads, heads, dim / heads, inner, vocab, context}, eps, 0.0, 0);
  c.activation = act;
  c.position_kind = positions == "learned" ? format::PositionKind::learned : format::PositionKind::sinusoidal;
  c.flags |= (*tied ? format::kFlagTiedEmbeddings : 0u) | (placement == "post" ? format::kFlagPostNorm : 0u);
  c.bos_id = static_cast<int32_t>(bos);
  c.eos_id = static_cast<int32_t>(eos);
  return true;
}

}  // namespace mote::convert

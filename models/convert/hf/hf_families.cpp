// The Hugging Face side of the model families: each family's config.json keys and tensor names as
// data over families.cpp's rows (hf_families.hpp).
#include "hf/hf_families.hpp"

#include <cmath>

#include "hf/hf_config.hpp"
#include "hf/hf_family_configs.hpp"
#include "layer_names.hpp"
#include "message_text.hpp"

namespace mote::convert {
namespace {

using format::Role;

// The names every decoder family (Llama, Qwen2/3, Gemma 3, Phi-3) shares; the spec decides which
// a family needs, and a tensor it has no place for is refused as such.
const HfName kDecoderNames[] = {
    {"model.embed_tokens.weight", Role::token_embedding, false, false},
    {"model.norm.weight", Role::output_norm, false, false},
    {"lm_head.weight", Role::output, false, false},
    {"input_layernorm.weight", Role::attn_norm, true, false},
    {"self_attn.q_proj.weight", Role::attn_q, true, false},
    {"self_attn.k_proj.weight", Role::attn_k, true, false},
    {"self_attn.v_proj.weight", Role::attn_v, true, false},
    {"self_attn.q_proj.bias", Role::attn_q_bias, true, false},
    {"self_attn.k_proj.bias", Role::attn_k_bias, true, false},
    {"self_attn.v_proj.bias", Role::attn_v_bias, true, false},
    {"self_attn.qkv_proj.weight", Role::attn_qkv, true, false},  // Phi-3: rows q, k, v
    {"self_attn.o_proj.weight", Role::attn_output, true, false},
    {"self_attn.q_norm.weight", Role::attn_q_norm, true, false},
    {"self_attn.k_norm.weight", Role::attn_k_norm, true, false},
    {"post_attention_layernorm.weight", Role::ffn_norm, true, false},
    {"mlp.gate_proj.weight", Role::ffn_gate, true, false},
    {"mlp.up_proj.weight", Role::ffn_up, true, false},
    {"mlp.down_proj.weight", Role::ffn_down, true, false},
    {"mlp.gate_up_proj.weight", Role::ffn_gate_up, true, false},  // Phi-3: rows gate, up
};
// Gemma's sandwich: its post_attention_layernorm normalizes the attention's output; the FFN's
// input norm is pre_feedforward_layernorm.
const HfName kGemmaNames[] = {
    {"post_attention_layernorm.weight", Role::post_attn_norm, true, false},
    {"pre_feedforward_layernorm.weight", Role::ffn_norm, true, false},
    {"post_feedforward_layernorm.weight", Role::post_ffn_norm, true, false},
};
// GPT-2's names without the "transformer." prefix GPT2LMHeadModel adds (GPT2Model has none).
const HfName kGpt2Names[] = {
    {"wte.weight", Role::token_embedding, false, false},
    {"wpe.weight", Role::pos_embd, false, false},
    {"ln_f.weight", Role::output_norm, false, false},
    {"ln_f.bias", Role::output_norm_bias, false, false},
    {"lm_head.weight", Role::output, false, false},
    {"ln_1.weight", Role::attn_norm, true, false},
    {"ln_1.bias", Role::attn_norm_bias, true, false},
    {"attn.c_attn.weight", Role::attn_qkv, true, true},
    {"attn.c_attn.bias", Role::attn_qkv_bias, true, false},
    {"attn.c_proj.weight", Role::attn_output, true, true},
    {"attn.c_proj.bias", Role::attn_output_bias, true, false},
    {"ln_2.weight", Role::ffn_norm, true, false},
    {"ln_2.bias", Role::ffn_norm_bias, true, false},
    {"mlp.c_fc.weight", Role::ffn_up, true, true},
    {"mlp.c_fc.bias", Role::ffn_up_bias, true, false},
    {"mlp.c_proj.weight", Role::ffn_down, true, true},
    {"mlp.c_proj.bias", Role::ffn_down_bias, true, false},
};

// BertModel's names (BertForMaskedLM's under "bert."); the post-norm LayerNorms follow each
// sub-block, so attention.output.LayerNorm is the attention's norm and output.LayerNorm the FFN's.
const HfName kBertNames[] = {
    {"embeddings.word_embeddings.weight", Role::token_embedding, false, false},
    {"embeddings.position_embeddings.weight", Role::pos_embd, false, false},
    {"embeddings.token_type_embeddings.weight", Role::token_types, false, false},
    {"embeddings.LayerNorm.weight", Role::embd_norm, false, false},
    {"embeddings.LayerNorm.bias", Role::embd_norm_bias, false, false},
    {"attention.self.query.weight", Role::attn_q, true, false},
    {"attention.self.query.bias", Role::attn_q_bias, true, false},
    {"attention.self.key.weight", Role::attn_k, true, false},
    {"attention.self.key.bias", Role::attn_k_bias, true, false},
    {"attention.self.value.weight", Role::attn_v, true, false},
    {"attention.self.value.bias", Role::attn_v_bias, true, false},
    {"attention.output.dense.weight", Role::attn_output, true, false},
    {"attention.output.dense.bias", Role::attn_output_bias, true, false},
    {"attention.output.LayerNorm.weight", Role::attn_norm, true, false},
    {"attention.output.LayerNorm.bias", Role::attn_norm_bias, true, false},
    {"intermediate.dense.weight", Role::ffn_up, true, false},
    {"intermediate.dense.bias", Role::ffn_up_bias, true, false},
    {"output.dense.weight", Role::ffn_down, true, false},
    {"output.dense.bias", Role::ffn_down_bias, true, false},
    {"output.LayerNorm.weight", Role::ffn_norm, true, false},
    {"output.LayerNorm.bias", Role::ffn_norm_bias, true, false},
};

template <size_t N>
constexpr size_t count(const HfName (&)[N]) {
  return N;
}

// How a family's config.json states sliding windows.
enum class HfWindow {
  none,         // no window key (Llama)
  opt_in,       // Qwen: use_sliding_window must stay false (windows from max_window_layers on are not supported)
  every_layer,  // Phi-3: sliding_window (null: none) applies to every layer
  pattern,      // Gemma 3: sliding_window with the row's local:global pattern (layer_types / sliding_window_pattern)
};

struct HfFamilyKeys;
// config.json read into out for row's block (hf_config has set out's row and names).
using HfConfigReader = bool (*)(const JsonValue &json, const FamilyRow &row, const HfFamilyKeys &keys, HfConfig *out,
                                std::string *error);
bool decoder_config(const JsonValue &json, const FamilyRow &row, const HfFamilyKeys &keys, HfConfig *out,
                    std::string *error);
bool gpt2_config(const JsonValue &json, const FamilyRow &row, const HfFamilyKeys &keys, HfConfig *out,
                 std::string *error);
bool bert_config(const JsonValue &json, const FamilyRow &row, const HfFamilyKeys &keys, HfConfig *out,
                 std::string *error);

// One row per family families.cpp gives a model_type: the Hugging Face facts its row lacks.
struct HfFamilyKeys {
  const char *hf_type;
  const char *hf_class;  // transformers' model class, config.json's architectures (read when model_type is absent)
  HfConfigReader read_config;  // the decoders share one reader; GPT-2's and BERT's keys are their own
  HfNames names;
  bool tied_by_default;  // tie_word_embeddings' default in the family's transformers config class
  bool fixed_bias;       // Qwen2: q/k/v biases always, no attention_bias key
  HfWindow window;
};

// A decoder family's names: the shared ones, preceded by its own (own wins), under model.layers.N.
constexpr HfNames decoder_names(const char *what, const HfName *own = nullptr, size_t n_own = 0) {
  return {what,
          own,
          n_own,
          kDecoderNames,
          count(kDecoderNames),
          "model.layers.",
          "",
          {".rotary_emb.inv_freq", ".rotary_emb_local.inv_freq"}};
}

const HfFamilyKeys kHfFamilies[] = {
    // hf_type, hf_class, read_config, names, tied_by_default, fixed_bias, window
    {"llama", "LlamaForCausalLM", decoder_config, decoder_names("a Llama model"), false, false, HfWindow::none},
    // attn.bias / attn.masked_bias: the causal mask buffers older GPT-2 checkpoints saved.
    {"gpt2",
     "GPT2LMHeadModel",
     gpt2_config,
     {"a GPT-2 model",
      nullptr,
      0,
      kGpt2Names,
      count(kGpt2Names),
      "h.",
      "transformer.",
      {".attn.bias", ".attn.masked_bias"}},
     true,
     false,
     HfWindow::none},
    {"qwen2", "Qwen2ForCausalLM", decoder_config, decoder_names("a Qwen2 model"), false, true, HfWindow::opt_in},
    {"qwen3", "Qwen3ForCausalLM", decoder_config, decoder_names("a Qwen3 model"), false, false, HfWindow::opt_in},
    {"gemma3_text", "Gemma3ForCausalLM", decoder_config,
     decoder_names("a Gemma 3 model", kGemmaNames, count(kGemmaNames)), true, false, HfWindow::pattern},
    {"phi3", "Phi3ForCausalLM", decoder_config, decoder_names("a Phi-3 model"), false, false, HfWindow::every_layer},
    // The pooler (a classification head over [CLS]) and BertForMaskedLM's head (cls.*) are not
    // part of the embedding.
    {"bert",
     "BertModel",
     bert_config,
     {"a BERT model",
      nullptr,
      0,
      kBertNames,
      count(kBertNames),
      "encoder.layer.",
      "bert.",
      {"embeddings.position_ids", "pooler.*", "cls.*"}},
     false,
     false,
     HfWindow::none},
};

// row's Hugging Face keys; null with a one-line *error for a family without them.
const HfFamilyKeys *hf_keys(const FamilyRow &row, std::string *error) {
  for (const HfFamilyKeys &keys : kHfFamilies) {
    if (row.hf_type != nullptr && std::string(row.hf_type) == keys.hf_type) return &keys;
  }
  *error = "mote has no Hugging Face keys for the " + std::string(row.gguf_arch) + " family (it imports " +
           known_hf_types() + ")";
  return nullptr;
}

const HfName *find_name(const HfNames &names, bool (*match)(const HfName &, const void *), const void *what) {
  for (size_t i = 0; i < names.n_own; ++i) {
    if (match(names.own[i], what)) return &names.own[i];
  }
  for (size_t i = 0; i < names.n_shared; ++i) {
    if (match(names.shared[i], what)) return &names.shared[i];
  }
  return nullptr;
}

}  // namespace

const HfNames *hf_names(const FamilyRow &row, std::string *error) {
  const HfFamilyKeys *keys = hf_keys(row, error);
  return keys != nullptr ? &keys->names : nullptr;
}

const HfName *find_hf_name(const HfNames &names, Role role) {
  return find_name(
      names, [](const HfName &h, const void *r) { return h.role == *static_cast<const Role *>(r); }, &role);
}

std::string hf_tensor_name(const HfNames &names, Role role, uint32_t layer) {
  const HfName *h = find_hf_name(names, role);
  if (h == nullptr) return "?";
  const std::string strip = names.strip_prefix;
  const std::string prefix = strip + (h->per_layer ? names.layer_prefix + num(layer) + "." : "");
  return (h->role == Role::output ? std::string() : prefix) + h->name;
}

bool parse_hf_tensor_name(const HfNames &names, const std::string &full_name, Role *role, uint32_t *layer) {
  std::string name = full_name;
  const std::string strip = names.strip_prefix;
  if (!strip.empty() && name.compare(0, strip.size(), strip) == 0) name = name.substr(strip.size());
  struct Wanted {
    std::string rest;
    bool per_layer;
  } wanted{name, false};
  *layer = format::kNoLayer;
  std::string rest;
  const LayerPrefix prefix = split_layer_prefix(name, names.layer_prefix, layer, &rest);
  if (prefix == LayerPrefix::malformed) return false;
  if (prefix == LayerPrefix::found) wanted = {rest, true};
  const HfName *h = find_name(
      names,
      [](const HfName &n, const void *w) {
        const Wanted &x = *static_cast<const Wanted *>(w);
        return n.per_layer == x.per_layer && x.rest == n.name;
      },
      &wanted);
  if (h != nullptr) *role = h->role;
  return h != nullptr;
}

bool is_norm_weight(Role role) {
  switch (role) {
    case Role::attn_norm:
    case Role::ffn_norm:
    case Role::output_norm:
    case Role::attn_q_norm:
    case Role::attn_k_norm:
    case Role::post_attn_norm:
    case Role::post_ffn_norm:
      return true;
    default:
      return false;
  }
}

std::vector<float> llama3_rope_factors(uint32_t head_dim, double theta, double factor, double low_freq_factor,
                                       double high_freq_factor, double original_context) {
  // torch evaluates `a / t` with a tensor t as reciprocal(t) * a, in float32.
  const float base = static_cast<float>(theta);
  const float low_wavelen = static_cast<float>(original_context / low_freq_factor);
  const float high_wavelen = static_cast<float>(original_context / high_freq_factor);
  std::vector<float> factors;
  for (uint32_t i = 0; i < head_dim; i += 2) {
    const float freq = 1.0f / std::pow(base, static_cast<float>(i) / static_cast<float>(head_dim));
    const float wavelen = (1.0f / freq) * static_cast<float>(2.0 * M_PI);
    if (wavelen < high_wavelen) {
      factors.push_back(1.0f);
    } else if (wavelen > low_wavelen) {
      factors.push_back(static_cast<float>(factor));
    } else {
      const float smooth =
          ((1.0f / wavelen) * static_cast<float>(original_context) - static_cast<float>(low_freq_factor)) /
          static_cast<float>(high_freq_factor - low_freq_factor);
      factors.push_back(1.0f / ((1.0f - smooth) / static_cast<float>(factor) + smooth));
    }
  }
  return factors;
}

namespace {

// transformers 5's rope_parameters for the layers of one attention kind: its member of that name
// where it holds one per kind (Gemma 3: full_attention, sliding_attention), else the flat object
// for the full-attention layers.
const JsonValue *rope_parameters(const JsonValue &json, const char *kind) {
  const JsonValue *params = json.get("rope_parameters");
  if (params == nullptr || params->kind != JsonValue::Kind::object) return params;
  const JsonValue *per_kind = params->get(kind);
  if (per_kind != nullptr) return per_kind;
  // A flat object holds the full-attention layers' parameters only.
  return std::string(kind) == "full_attention" && params->get("sliding_attention") == nullptr ? params : nullptr;
}

// A RoPE base from rope_parameters' rope_theta when it has one, else fallback.
bool rope_parameters_theta(const JsonValue &json, const char *kind, double fallback, double *theta,
                           std::string *error) {
  const JsonValue *params = rope_parameters(json, kind);
  *theta = fallback;
  if (params == nullptr || params->kind != JsonValue::Kind::object) return true;
  // Scaling applies to the global layers (read_rope_scaling); a scaled window has no row in mote.
  const JsonValue *type = params->get("rope_type");
  if (std::string(kind) == "sliding_attention" && type != nullptr && !(type->is_string() && type->text == "default")) {
    *error = "config.json rope_parameters.sliding_attention scales RoPE: not supported";
    return false;
  }
  return Config{*params, error}.real("rope_theta", fallback, theta);
}

// rope_scaling (or transformers 5's rope_parameters): null, rope_type "default", or Llama 3's.
bool read_rope_scaling(const JsonValue &json, uint32_t head_dim, double theta, HfConfig *out, std::string *error) {
  const JsonValue *scaling = json.get("rope_scaling");
  if (scaling == nullptr || scaling->is_null()) scaling = rope_parameters(json, "full_attention");
  if (scaling == nullptr || scaling->is_null()) return true;
  if (scaling->kind != JsonValue::Kind::object) {
    *error =
        "config.json rope_scaling is " + std::string(json_kind_name(scaling->kind)) + ", expected an object or null";
    return false;
  }
  const JsonValue *type = scaling->get("rope_type");
  if (type == nullptr) type = scaling->get("type");
  const std::string name = type != nullptr && type->is_string() ? type->text : "?";
  if (name == "default") return true;
  if (name != "llama3") {
    *error = "config.json rope_scaling rope_type '" + printable(name) + "' is not supported (only llama3)";
    return false;
  }
  double values[4] = {0, 0, 0, 0};
  const char *keys[4] = {"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"};
  Config scaled{*scaling, error};
  for (int k = 0; k < 4; ++k) {
    if (scaling->get(keys[k]) == nullptr) {
      *error = std::string("config.json rope_scaling (llama3) is missing '") + keys[k] + "'";
      return false;
    }
    if (!scaled.real(keys[k], 0.0, &values[k])) return false;
  }
  if ((out->config.flags & format::kFlagSlidingWindow) != 0) {  // the .mote format has no row for both
    *error = "config.json rope_scaling (llama3) with sliding_window " + num(out->config.sliding_window) +
             ": scaled RoPE on windowed layers is not supported";
    return false;
  }
  const double factor = values[0], low = values[1], high = values[2], context = values[3];
  if (!(factor >= 1 && factor < 1e6 && low > 0 && high > low && high < 1e6 && context >= 1 && context <= (1 << 30))) {
    *error =
        "config.json rope_scaling (llama3) needs 1 <= factor, 0 < low_freq_factor < high_freq_factor and "
        "original_max_position_embeddings >= 1";
    return false;
  }
  out->rope_factors = llama3_rope_factors(head_dim, theta, factor, low, high, context);
  out->config.flags |= format::kFlagRopeFactors;
  return true;
}

// The window config.json states, as families.hpp's family_config takes it (0: none); Gemma's
// local:global pattern must be its row's.
bool read_window(const JsonValue &json, const FamilyRow &row, const HfFamilyKeys &keys, uint32_t layers,
                 int64_t *window, std::string *error) {
  Config cfg{json, error};
  *window = 0;
  if (keys.window == HfWindow::none) return true;
  if (keys.window == HfWindow::opt_in) {
    bool used = false;
    if (!cfg.boolean("use_sliding_window", false, &used)) return false;
    if (used) {
      *error = "config.json use_sliding_window is true: Qwen's windowed layers are not supported";
      return false;
    }
    return true;
  }
  if (!cfg.integer("sliding_window", false, keys.window == HfWindow::pattern ? 4096 : 0, 0, 1 << 30, window))
    return false;
  if (keys.window != HfWindow::pattern) return true;
  const uint32_t every = row.swa_global_every;
  int64_t pattern = every;
  if (!cfg.integer("sliding_window_pattern", false, every, 1, 1024, &pattern)) return false;
  const std::string expected = "every " + num(every) + "th layer full_attention, the others sliding_attention";
  if (pattern != every) {
    *error =
        "config.json sliding_window_pattern " + num(pattern) + " is not " + row.gguf_arch + "'s (" + expected + ")";
    return false;
  }
  const JsonValue *types = json.get("layer_types");
  if (types == nullptr || types->is_null()) return true;
  bool same = types->kind == JsonValue::Kind::array && types->items.size() == layers;
  for (uint32_t l = 0; same && l < layers; ++l) {
    const char *want = (l + 1) % every == 0 ? "full_attention" : "sliding_attention";
    same = types->items[l].is_string() && types->items[l].text == want;
  }
  if (!same) {
    *error = "config.json layer_types is not " + std::string(row.gguf_arch) + "'s pattern (" + expected + ")";
    return false;
  }
  return true;
}

// Keys naming a feature the family's block does not have, refused rather than ignored.
bool refuse_features(const JsonValue &json, const FamilyRow &row, const HfFamilyKeys &keys, std::string *error) {
  Config cfg{json, error};
  const std::string act_key = json.get("hidden_activation") != nullptr ? "hidden_activation" : "hidden_act";
  const char *act = row.activation == format::Activation::geglu ? "gelu_pytorch_tanh" : "silu";
  if (const JsonValue *v = json.get(act_key); v != nullptr && !v->is_null() && (!v->is_string() || v->text != act)) {
    *error = "config.json " + act_key + " '" + (v->is_string() ? printable(v->text) : std::string("?")) +
             "' is not supported (only " + act + ")";
    return false;
  }
  bool attention_bias = false, mlp_bias = false;
  if (!cfg.boolean("attention_bias", false, &attention_bias) || !cfg.boolean("mlp_bias", false, &mlp_bias))
    return false;
  if ((attention_bias && !keys.fixed_bias) || mlp_bias) {
    *error = std::string("config.json ") + (mlp_bias ? "mlp_bias" : "attention_bias") +
             " is true: biases are not supported for " + keys.hf_type;
    return false;
  }
  bool bidirectional = false;  // EmbeddingGemma's encoder: no causal mask
  if (!cfg.boolean("use_bidirectional_attention", false, &bidirectional)) return false;
  if (bidirectional) {
    *error = "config.json use_bidirectional_attention is true: mote runs causal decoders only";
    return false;
  }
  for (const char *key : {"attn_logit_softcapping", "final_logit_softcapping"}) {
    if (const JsonValue *v = json.get(key); v != nullptr && !v->is_null()) {
      *error = std::string("config.json ") + key + " is set: logit soft-capping is not supported";
      return false;
    }
  }
  double rotary_fraction = 1;
  if (!cfg.real("partial_rotary_factor", 1.0, &rotary_fraction)) return false;
  if (rotary_fraction != 1) {
    *error = "config.json partial_rotary_factor " + real_text(rotary_fraction) +
             " is not supported (every head dimension rotates)";
    return false;
  }
  return true;
}

bool decoder_config(const JsonValue &json, const FamilyRow &row, const HfFamilyKeys &keys, HfConfig *out,
                    std::string *error) {
  Config cfg{json, error};
  if (!refuse_features(json, row, keys, error) || !cfg.boolean("tie_word_embeddings", keys.tied_by_default, &out->tied))
    return false;
  int64_t dim = 0, layers = 0, heads = 0, kv_heads = 0, ffn = 0, vocab = 0, context = 0, head_dim = 0, bos = -1,
          eos = -1;
  double eps = 0, theta = 0, local_theta = 0, query_scalar = 0;
  if (!cfg.integer("hidden_size", true, 0, 1, 65536, &dim) ||
      !cfg.integer("num_hidden_layers", true, 0, 1, 1024, &layers) ||
      !cfg.integer("num_attention_heads", true, 0, 1, 1024, &heads) ||
      !cfg.integer("num_key_value_heads", false, heads, 1, 1024, &kv_heads) ||
      !cfg.integer("intermediate_size", true, 0, 1, 1 << 18, &ffn) ||
      !cfg.integer("vocab_size", true, 0, 1, 1 << 24, &vocab) ||
      !cfg.integer("max_position_embeddings", false, 2048, 1, 1 << 30, &context) ||
      !cfg.real("rms_norm_eps", 1e-6, &eps) || !cfg.real("rope_theta", 10000.0, &theta) ||
      !cfg.token_id("bos_token_id", &bos) || !cfg.token_id("eos_token_id", &eos))
    return false;
  // The windowed layers' base: Gemma 3's own key, else the row's fixed one, else the global base.
  if (!rope_parameters_theta(json, "full_attention", theta, &theta, error) ||
      !cfg.real("rope_local_base_freq", row.rope_theta_local != 0 ? row.rope_theta_local : theta, &local_theta) ||
      !rope_parameters_theta(json, "sliding_attention", local_theta, &local_theta, error))
    return false;
  // The head size is its own key where it differs from hidden_size / heads (Qwen3, Gemma 3).
  const JsonValue *head_key = json.get("head_dim");
  if ((head_key == nullptr || head_key->is_null()) && dim % heads != 0)
    head_dim = 0;
  else if (!cfg.integer("head_dim", false, dim / heads, 1, 4096, &head_dim))
    return false;
  if (head_dim == 0 || heads % kv_heads != 0) {
    *error = "config.json hidden_size " + num(dim) + ", num_attention_heads " + num(heads) +
             " and num_key_value_heads " + num(kv_heads) + " do not divide evenly";
    return false;
  }
  if (head_dim % 2 != 0) {
    *error = "config.json head_dim " + num(head_dim) + " is odd: RoPE rotates pairs";
    return false;
  }
  if (!(eps > 0 && eps < 1) || !std::isfinite(theta) || theta <= 1 || theta > 3.0e38 || !std::isfinite(local_theta) ||
      local_theta <= 1 || local_theta > 3.0e38) {
    *error = "config.json rms_norm_eps must be in (0, 1) and rope_theta (rope_local_base_freq) finite and > 1";
    return false;
  }
  if (bos >= vocab || eos >= vocab) {
    *error = "config.json bos_token_id/eos_token_id lie outside the vocabulary of " + num(vocab);
    return false;
  }
  if (!cfg.real("query_pre_attn_scalar", static_cast<double>(head_dim), &query_scalar)) return false;
  if (!(query_scalar > 0 && std::isfinite(query_scalar))) {
    *error = "config.json query_pre_attn_scalar " + real_text(query_scalar) + " must be positive";
    return false;
  }
  int64_t window = 0;
  if (!read_window(json, row, keys, static_cast<uint32_t>(layers), &window, error)) return false;
  format::ModelConfig &c = out->config;
  c = family_config(row, {dim, layers, heads, kv_heads, head_dim, ffn, vocab, context}, eps, theta,
                    static_cast<uint32_t>(window));
  c.rope_layout = format::RopeLayout::split_half;  // Hugging Face rotates halves in every family
  if (c.flags & format::kFlagSlidingWindow) c.rope_theta_local = static_cast<float>(local_theta);
  const float scale = static_cast<float>(1.0 / std::sqrt(query_scalar));
  if (scale != static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)))) {
    c.flags |= format::kFlagAttentionScale;
    c.attention_scale = scale;
  }
  c.flags |= out->tied ? static_cast<uint32_t>(format::kFlagTiedEmbeddings) : 0u;
  c.bos_id = static_cast<int32_t>(bos);
  c.eos_id = static_cast<int32_t>(eos);
  return read_rope_scaling(json, c.head_dim, theta, out, error);
}

bool gpt2_config(const JsonValue &json, const FamilyRow &row, const HfFamilyKeys &, HfConfig *out, std::string *error) {
  return hf_gpt2_config(json, row, &out->config, &out->tied, error);
}

bool bert_config(const JsonValue &json, const FamilyRow &row, const HfFamilyKeys &, HfConfig *out, std::string *error) {
  return hf_bert_config(json, row, &out->config, error);
}

// config.json's model_type; a hand-written config without one names its family by the first of
// its architectures classes, and with neither it is llama's.
bool model_type(const JsonValue &json, std::string *type, std::string *error) {
  Config cfg{json, error};
  *type = "llama";
  if (const JsonValue *v = json.get("model_type"); v != nullptr && !v->is_null()) {
    if (!v->is_string()) return cfg.wrong("model_type", *v, "a string");
    *type = v->text;
    return true;
  }
  const JsonValue *classes = json.get("architectures");
  if (classes == nullptr || classes->is_null() || (classes->kind == JsonValue::Kind::array && classes->items.empty()))
    return true;
  if (classes->kind != JsonValue::Kind::array || !classes->items[0].is_string())
    return cfg.wrong("architectures", *classes, "a list of class names");
  std::string known;
  for (const HfFamilyKeys &keys : kHfFamilies) {
    if (classes->items[0].text == keys.hf_class) {
      *type = keys.hf_type;
      return true;
    }
    known += (known.empty() ? "" : ", ") + std::string(keys.hf_class);
  }
  *error = "config.json has no model_type and its architectures class '" + printable(classes->items[0].text) +
           "' is not supported (mote knows " + known + ")";
  return false;
}

}  // namespace

bool hf_config(const JsonValue &json, HfConfig *out, std::string *error) {
  *out = HfConfig{};
  if (json.kind != JsonValue::Kind::object) {
    *error = "config.json is not a JSON object";
    return false;
  }
  std::string type;
  if (!model_type(json, &type, error)) return false;
  out->row = family_by_hf_type(type);
  if (out->row == nullptr) {
    *error = "config.json model_type '" + printable(type) + "' is not supported (mote knows " + known_hf_types() + ")";
    return false;
  }
  const HfFamilyKeys *keys = hf_keys(*out->row, error);
  if (keys == nullptr) return false;
  out->names = &keys->names;
  return keys->read_config(json, *out->row, *keys, out, error);
}

}  // namespace mote::convert

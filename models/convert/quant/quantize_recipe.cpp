#include "quant/quantize_recipe.hpp"

#include "quant/host_types.hpp"

namespace mote::convert {
namespace {

using format::DType;
using format::Role;

constexpr DTypeChoice kChoices[] = {
    // mote's own rule (dtype_policy.hpp output_dtype)
    {"f32", DType::f32, Mix::none},
    {"f16", DType::f16, Mix::none},
    {"q8_0", DType::q8_0, Mix::none},
    {"q4_0", DType::q4_0, Mix::none},
    {"q4_1", DType::q4_1, Mix::none},
    // llama-quantize's types, recipe and all
    {"q5_0", DType::q5_0, Mix::q5_0},
    {"q5_1", DType::q5_1, Mix::q5_1},
    {"iq4_nl", DType::iq4_nl, Mix::iq4_nl},
    {"q6_k", DType::q6_k, Mix::q6_k},
    {"q2_k", DType::q2_k, Mix::q2_k},
    {"q3_k_s", DType::q3_k, Mix::q3_k_s},
    {"q3_k_m", DType::q3_k, Mix::q3_k_m},
    {"q4_k_s", DType::q4_k, Mix::q4_k_s},
    {"q4_k_m", DType::q4_k, Mix::q4_k_m},
    {"q5_k_s", DType::q5_k, Mix::q5_k_s},
    {"q5_k_m", DType::q5_k, Mix::q5_k_m},
    // one K type throughout (llama-quantize --pure)
    {"q3_k", DType::q3_k, Mix::pure},
    {"q4_k", DType::q4_k, Mix::pure},
    {"q5_k", DType::q5_k, Mix::pure},
};

// When a rule applies, by the layer's index i among n layers (llama-quantize counts attn_v and
// ffn_down tensors in layer order, so its counters are the layer index).
enum class When : uint8_t {
  always,
  more_bits,     // i < n/8, i >= 7n/8, or every third layer between: llama.cpp's use_more_bits
  first_2,       // i < 2
  first_4,       // i < 4
  first_eighth,  // i < n/8
  first_16th,    // i < n/16
  gqa_4,         // n_heads / n_kv_heads >= 4 (any layer)
};

// Beyond the base type, a mix changes these roles; the first row that matches wins. attn_qkv
// (a fused q/k/v matrix) follows attn_v's rows, as llama-quantize treats it.
struct Rule {
  Mix mix;
  Role role;
  When when;
  DType dtype;
};
constexpr Rule kRules[] = {
    {Mix::q2_k, Role::attn_v, When::gqa_4, DType::q4_k},
    {Mix::q2_k, Role::attn_v, When::always, DType::q3_k},
    {Mix::q3_k_m, Role::attn_v, When::first_2, DType::q5_k},
    {Mix::q3_k_m, Role::attn_v, When::always, DType::q4_k},
    {Mix::iq4_nl, Role::attn_v, When::gqa_4, DType::q5_k},
    {Mix::q4_k_m, Role::attn_v, When::more_bits, DType::q6_k},
    {Mix::q5_k_m, Role::attn_v, When::more_bits, DType::q6_k},
    {Mix::q4_k_s, Role::attn_v, When::first_4, DType::q5_k},

    {Mix::q2_k, Role::ffn_down, When::always, DType::q3_k},
    {Mix::q3_k_m, Role::ffn_down, When::first_16th, DType::q5_k},
    {Mix::q3_k_m, Role::ffn_down, When::always, DType::q4_k},
    {Mix::q4_k_m, Role::ffn_down, When::more_bits, DType::q6_k},
    {Mix::iq4_nl, Role::ffn_down, When::first_eighth, DType::q5_k},
    {Mix::q5_k_m, Role::ffn_down, When::more_bits, DType::q6_k},
    {Mix::q4_k_s, Role::ffn_down, When::first_eighth, DType::q5_k},

    {Mix::q2_k, Role::attn_output, When::always, DType::q3_k},
    {Mix::q3_k_m, Role::attn_output, When::always, DType::q4_k},
};

bool holds(When when, uint32_t i, const format::ModelConfig &config) {
  const uint32_t n = config.n_layers;
  switch (when) {
    case When::always:
      return true;
    case When::more_bits:
      return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
    case When::first_2:
      return i < 2;
    case When::first_4:
      return i < 4;
    case When::first_eighth:
      return i < n / 8;
    case When::first_16th:
      return i < n / 16;
    case When::gqa_4:
      return config.n_kv_heads != 0 && config.n_heads / config.n_kv_heads >= 4;
  }
  return false;
}

// The recipe's choice before the fallback.
DType chosen_dtype(Mix mix, DType base, const RecipeSlot &slot, const format::ModelConfig &config) {
  if (mix == Mix::pure) return base;
  // The classifier (or the token embedding that doubles as it) gets 6 bits: q6_k, or q8_0 when
  // the base type's blocks do not tile its rows.
  const bool classifier =
      slot.role == Role::output || (slot.role == Role::token_embedding && format::block_spec(config).tied_embeddings);
  if (classifier) {
    if (slot.cols % format::traits_of(base).block_elements != 0) return DType::q8_0;
    return base == DType::q8_0 ? base : DType::q6_k;
  }
  const Role role = slot.role == Role::attn_qkv ? Role::attn_v : slot.role;
  for (const Rule &rule : kRules) {
    if (rule.mix == mix && rule.role == role && holds(rule.when, slot.layer, config)) return rule.dtype;
  }
  return base;
}

}  // namespace

const DTypeChoice *dtype_choices(size_t *count) {
  *count = sizeof kChoices / sizeof kChoices[0];
  return kChoices;
}

const DTypeChoice *find_dtype_choice(const std::string &name) {
  for (const DTypeChoice &choice : kChoices) {
    if (name == choice.name) return &choice;
  }
  return nullptr;
}

std::string dtype_choice_list() {
  const char *names[sizeof kChoices / sizeof kChoices[0]];
  for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) names[i] = kChoices[i].name;
  return or_list(names, sizeof names / sizeof names[0]);
}

DType fallback_dtype(DType type, uint64_t cols) {
  if (cols % format::traits_of(type).block_elements == 0) return type;
  DType smaller = type;  // a 32-value type has no smaller block to fall back to
  switch (type) {
    case DType::q4_k:
      smaller = DType::q5_0;
      break;
    case DType::q5_k:
      smaller = DType::q5_1;
      break;
    case DType::q6_k:
      smaller = DType::q8_0;
      break;
    case DType::q2_k:
    case DType::q3_k:
      smaller = DType::q4_0;
      break;
    default:
      break;
  }
  return cols % format::traits_of(smaller).block_elements == 0 ? smaller : DType::f16;
}

DType recipe_dtype(Mix mix, DType base, const RecipeSlot &slot, const format::ModelConfig &config) {
  // llama-quantize leaves learned positions unquantized.
  if (slot.role == Role::pos_embd) return DType::f16;
  return fallback_dtype(chosen_dtype(mix, base, slot, config), slot.cols);
}

}  // namespace mote::convert

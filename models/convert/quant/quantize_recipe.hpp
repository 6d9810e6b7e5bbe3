// What `mote convert --dtype NAME` stores each matrix as: llama-quantize's per-tensor recipes
// (its "mixes", e.g. Q4_K_M) and its fallbacks for rows that are not whole blocks, as data.
//
// Each name is a row of quantize_recipe.cpp's table. A name that is also a llama-quantize type
// (q4_k_m, q5_0, q2_k, ...) follows that type's recipe without an importance matrix, so the
// tensors come out byte-identical to llama-quantize's on the same float weights
// (tests/golden/kquant_*, written by gen_kquant_goldens.py). q3_k, q4_k and q5_k are one type
// throughout, as `llama-quantize --pure`. f32, f16, q8_0, q4_0 and q4_1 keep mote's own rule
// (dtype_policy.hpp's output_dtype), as before the recipes existed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "format/format.hpp"

namespace mote::convert {

// The recipe family a --dtype name selects.
enum class Mix : uint8_t {
  none,  // mote's own rule (output_dtype), or keep the source's types when no dtype is asked
  pure,  // the base type for every matrix, then llama-quantize's fallbacks
  q2_k,  // llama-quantize's ftypes, named as it names them
  q3_k_s,
  q3_k_m,
  q4_k_s,
  q4_k_m,
  q5_k_s,
  q5_k_m,
  q6_k,
  q5_0,
  q5_1,
  iq4_nl,
};

struct DTypeChoice {
  const char *name;    // the --dtype spelling
  format::DType base;  // the type most matrices get
  Mix mix;
};

// Every --dtype name, in the order messages list them; *count gets how many.
const DTypeChoice *dtype_choices(size_t *count);

// The row spelled name, or null.
const DTypeChoice *find_dtype_choice(const std::string &name);

// "f32, f16, q8_0, ..., q4_k_m or q5_k_m": every --dtype name, for help and messages.
std::string dtype_choice_list();

// Where the tensor sits, as the recipe needs it.
struct RecipeSlot {
  format::Role role;
  uint32_t layer;  // format::kNoLayer for global tensors
  uint64_t cols;   // values per row
};

// The dtype recipe mix (with base type base) gives a matrix of a model shaped by config: the
// recipe's choice for its role and layer, then llama-quantize's fallback when its rows are not
// whole blocks of that type (q4_k -> q5_0, q5_k -> q5_1, q6_k -> q8_0, q2_k/q3_k -> q4_0; a
// 32-value type on rows of another length -> f16). mix must not be Mix::none.
format::DType recipe_dtype(Mix mix, format::DType base, const RecipeSlot &slot, const format::ModelConfig &config);

// llama-quantize's fallback alone: type where rows of cols values are whole blocks of it, else
// the replacement above.
format::DType fallback_dtype(format::DType type, uint64_t cols);

}  // namespace mote::convert

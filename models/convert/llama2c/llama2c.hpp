// Import of llama2.c checkpoints (the legacy float .bin) and their tokenizer.bin.
#pragma once

#include <string>

#include "dtype_policy.hpp"

namespace mote::convert {

struct Llama2cOptions {
  // Of the matrices (f32, f16, q8_0, q4_0 or q4_1); norm vectors stay f32.
  format::DType dtype = format::DType::f32;
  Mix mix = Mix::none;                            // dtype's recipe (quantize_recipe.hpp)
  BlockLayout layout = BlockLayout::interleaved;  // of quantized matrices (see BlockLayout)
  // llama2.c stores RoPE pairs interleaved; checkpoints exported without llama2.c's permutation
  // of wq/wk use split halves instead.
  format::RopeLayout rope_layout = format::RopeLayout::interleaved;
};

// Reads checkpoint_path and tokenizer_path into *out; on failure returns false and a one-line
// reason in *error.
bool load_llama2c(const std::string &checkpoint_path, const std::string &tokenizer_path, const Llama2cOptions &options,
                  ModelData *out, std::string *error);

}  // namespace mote::convert

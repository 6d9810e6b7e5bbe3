// Which .mote dtype each tensor is stored as, and storing it (host side): a requested --dtype
// or recipe, the source's own type, the block layout; every importer adds its tensors here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "format/format.hpp"
#include "model_data.hpp"
#include "quant/quantize_recipe.hpp"

namespace mote::convert {

// A tensor's bytes as its source file holds them, typed by ggml's type ids (GgmlType in
// dequant.hpp), which cover every importer: llama2.c's floats are F32, safetensors' F32, F16 or
// BF16, GGUF's whatever its tensor info says.
struct SourceTensor {
  const uint8_t *bytes;
  uint32_t ggml_type;  // a dequantizable one
};

// The dtypes matrices can be stored as: those with a host row (host_types.hpp: f32, f16, q8_0,
// q4_0, q4_1, q5_0, q5_1, iq4_nl and the K types). False with a message listing them otherwise.
bool check_matrix_dtype(format::DType dtype, std::string *error);

// How quantized matrices order their blocks.
enum class BlockLayout {
  // The default: a matrix of a type with an x8 twin (q8_0 / q4_0 / ... / iq4_nl, q4_k..q6_k) whose
  // rows are a multiple of 8 becomes that twin, q8_0x8 / q4_0x8 / ... / iq4_nlx8 (8 rows
  // interleaved, so the integer kernels keep one row per vector lane).
  interleaved,
  gguf,  // GGUF's plain row-major blocks: a GGUF tensor stays byte-identical
};

// The dtype the tensor for slot is written as. Vectors (norms) are always f32. A matrix takes the
// requested dtype; with none requested it keeps the source's own type when .mote has it (a host
// row's format row names its ggml type: F32, F16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q2_K..
// Q6_K), else (BF16, IQ4_XS) becomes f16. A requested quantized type falls back to f16 for a matrix whose rows are not
// whole blocks. With the interleaved layout a quantized matrix whose rows are a multiple of 8
// takes the x8 twin.
// With a recipe (mix other than Mix::none, quantize_recipe.hpp; requested is its base type and
// config the model's), the recipe alone chooses the blocks, before the layout's interleaving.
format::DType output_dtype(const TensorSlot &slot, uint32_t ggml_type, std::optional<format::DType> requested,
                           BlockLayout layout, Mix mix = Mix::none, const format::ModelConfig *config = nullptr);

// Appends the tensor for slot, read from source, to model as output_dtype(): copied byte for
// byte when the source already holds its blocks (no requantization), else dequantized and
// encoded (f32, f16) or quantized (its host row's quantize_ref); then, for an x8 dtype, rows
// interleaved. Quantized rows must hold whole blocks: false, with a one-line message naming the
// tensor, when they do not.
// mix: a --dtype recipe (output_dtype), read with model->config.
bool add_tensor(const TensorSlot &slot, const SourceTensor &source, std::optional<format::DType> requested,
                BlockLayout layout, ModelData *model, std::string *error, Mix mix = Mix::none);

// Stores floats as dtype (f32 or f16), row-major.
std::vector<uint8_t> encode_floats(const float *values, size_t n, format::DType dtype);

}  // namespace mote::convert

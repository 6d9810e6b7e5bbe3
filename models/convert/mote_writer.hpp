// Builds .mote files (host side: converters and tests may allocate).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "format/format.hpp"
#include "quant/quantize_recipe.hpp"

namespace mote::convert {

struct TensorData {
  format::Role role;
  uint32_t layer;  // format::kNoLayer for global tensors
  format::DType dtype;
  uint32_t n_dims;      // 1 or 2
  uint32_t rows, cols;  // cols = 1 for vectors
  std::vector<uint8_t> bytes;
};

struct TokenizerData {
  format::TokenizerKind kind = format::TokenizerKind::sentencepiece_bpe;
  uint32_t flags = format::kTokAddSpacePrefix;
  format::ChatTemplate chat_template = format::ChatTemplate::none;
  format::PreTokenizer pre_tokenizer = format::PreTokenizer::gpt2;  // byte-level BPE only
  int32_t bos_id = -1, eos_id = -1, unk_id = -1;
  std::vector<std::string> pieces;
  std::vector<float> scores;
  std::vector<uint8_t> types;
  // Byte-level BPE: pieces hold raw bytes; merges listed in priority order (first = rank 0),
  // each with left, right and result ids filled in (rank is assigned from the position).
  std::vector<format::BpeMerge> merges;
};

struct ModelData {
  format::ModelConfig config{};
  std::vector<TensorData> tensors;
  TokenizerData tokenizer;
  std::vector<std::string> notes;  // what the importer left out on purpose, one line each, for the user
};

// One tensor a model needs, shaped by its config (cols = 0 for a vector).
struct TensorSlot {
  format::Role role;
  uint32_t layer;  // format::kNoLayer for global tensors
  uint64_t rows, cols;
};

// Every tensor of a config in file order, as its block spec needs them (format::role_needed):
// the embedding (and learned positions), each layer's, the final norm, then the classifier
// unless the config ties it to the embedding.
std::vector<TensorSlot> tensor_slots(const format::ModelConfig &config);

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

// The llama row's config (families.cpp): RMSNorm (epsilon 1e-5), RoPE (base 10000, interleaved
// pairs), SwiGLU, no biases, no sizes: llama2.c checkpoints and tests start from it.
format::ModelConfig llama_config();

// The sizes every importer reads from its source (already range-checked by it).
struct LlamaShape {
  int64_t dim, n_layers, n_heads, n_kv_heads, head_dim, ffn_dim, vocab_size, context;
};
// llama_config() with these sizes; the context is capped at the format's 2^20 positions.
format::ModelConfig llama_config(const LlamaShape &shape);

// Stores floats as dtype (f32 or f16), row-major.
std::vector<uint8_t> encode_floats(const float *values, size_t n, format::DType dtype);

// Lays out and checksums a complete .mote file.
std::vector<uint8_t> serialize(const ModelData &model);

// Opens bytes (a serialized .mote) with mote_model_open: the reader's own rules, so a file the
// converters write is always one the runtime accepts. False with the reader's message.
bool check_opens(const std::vector<uint8_t> &bytes, std::string *error);

// Writes bytes to path atomically (posix::write_file_atomically: a temporary file in the same
// folder, fsynced, renamed), so a failure never leaves half a model or harms an existing one.
bool write_file(const std::string &path, const std::vector<uint8_t> &bytes, std::string *error);

}  // namespace mote::convert

// Import of GGUF files (versions 2 and 3): a container parser that treats the file as hostile
// input, and the mapping of the architectures families.cpp lists (llama, gpt2, qwen2, qwen3,
// gemma3, phi3) onto a .mote model.
//
// Decisions (the next engineer should know):
// - By default every matrix is kept as stored: F32, F16, Q8_0, Q4_0 and Q4_1 tensors keep their
//   bytes (the .mote block layouts are GGUF's; quantized ones interleaved, below), BF16, Q5_0,
//   Q5_1, IQ4_NL and the K-quants and IQ4_XS (which .mote lacks) are dequantized to f16 — a
//   llama-quantize Q4_K_M file mixes Q4_K/Q6_K with Q5_0/Q8_0/IQ4_NL wherever rows are not whole
//   256-element super-blocks. options.dtype stores every matrix as that dtype instead
//   (dequantized, then re-quantized for q8_0/q4_0/q4_1; a tensor already in that type is
//   copied). Norm vectors are always f32. Supported GGUF types: F32, F16, BF16, Q8_0, Q4_0,
//   Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS; other ggml types (Q8_1,
//   the IQ1/IQ2/IQ3 families, ...) are validated as a container but rejected by the importer.
// - Quantized matrices whose rows are a multiple of 8 are stored row-interleaved (their x8 twins,
//   q8_0x8 ... iq4_nlx8: the same bytes reordered) unless options.layout is BlockLayout::gguf, which keeps
//   GGUF's block order byte for byte.
// - A tensor name the family does not know (e.g. Phi-3 128k's `rope_factors_long.weight`) is an
//   error, not silently dropped: an ignored tensor could change the model. `rope_freqs.weight`
//   (Llama 3's scaled RoPE) turns on RoPE factors.
// - GGUF's llama Q/K weights are already permuted for interleaved RoPE: rope_layout = interleaved;
//   every other family rotates split halves (NeoX) with unpermuted weights.
// - Hyperparameters are read under the architecture's prefix ("qwen2.block_count"); the head size
//   is attention.key_length where it differs from embedding_length / head_count (Gemma 3, Qwen3).
// - Gemma 3: llama.cpp fixes 5 windowed layers : 1 global and the windowed RoPE base 10000 rather
//   than storing them, so the family row does too; the window is attention.sliding_window. A
//   window as wide as the context is no window. Soft-capping keys (Gemma 2) are refused.
// - attention.sliding_window is read for Gemma 3 and Phi-3 only, as llama.cpp reads it; a llama,
//   qwen2 or qwen3 file's is ignored with a note (FamilyRow::gguf_window), so the file generates
//   as in llama.cpp (and as Hugging Face's Llama, without windows, and Qwen2, with
//   use_sliding_window false by default, do).
// - Phi-3 keeps its fused gate/up in `ffn_up` (2 × ffn rows): imported as the ffn_gate_up role.
// - max_seq_len is <arch>.context_length, capped at the format's 2^20.
// - gpt2 (llama.cpp's convert_hf_to_gguf layout): Linear-shaped matrices (no transposing), the
//   fused attn_qkv, `.bias` tensors, LayerNorm with bias, position_embd, GELU with the tanh
//   approximation; tied when there is no output.weight. A tensor the block spec has no use for
//   (a bias in a llama file) is an error. tokenizer.ggml.pre "gpt-2" (or "gpt2") keeps number runs whole.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "dtype_policy.hpp"

namespace mote::convert {

enum class GgufType : uint32_t {
  u8 = 0,
  i8 = 1,
  u16 = 2,
  i16 = 3,
  u32 = 4,
  i32 = 5,
  f32 = 6,
  boolean = 7,
  string = 8,
  array = 9,
  u64 = 10,
  i64 = 11,
  f64 = 12,
};
const char *gguf_type_name(GgufType type);

// One metadata value. Scalars are decoded; strings copied; arrays are kept as a validated range
// of the file (element type, count, offset of the first element) and read on demand.
struct GgufValue {
  GgufType type = GgufType::u8;
  uint64_t u = 0;  // unsigned integers and bool
  int64_t i = 0;   // signed integers
  double f = 0;    // floats
  std::string s;
  GgufType array_type = GgufType::u8;
  uint64_t array_count = 0;
  size_t array_offset = 0;  // file offset of the first element

  bool is_integer() const;
};

struct GgufTensorInfo {
  std::string name;
  uint32_t n_dims = 0;
  uint64_t dims[4] = {1, 1, 1, 1};  // innermost first: dims[0] is the row length
  uint32_t type = 0;                // ggml type id
  uint64_t offset = 0;              // absolute file offset of the data
  uint64_t n_elements = 0;
  uint64_t n_bytes = 0;
};

// A parsed, validated GGUF file: every key, array and tensor lies inside `bytes`.
struct GgufFile {
  const uint8_t *bytes = nullptr;  // not owned
  size_t size = 0;
  uint32_t version = 0;
  uint64_t alignment = 32;
  uint64_t data_offset = 0;       // start of the tensor data section
  std::vector<std::string> keys;  // in file order
  std::unordered_map<std::string, GgufValue> values;
  std::vector<GgufTensorInfo> tensors;  // in file order
  std::unordered_map<std::string, size_t> tensor_index;

  const GgufValue *find(const std::string &key) const;
  // Array readers; false with a message when key's value is not an array of that kind.
  bool strings(const std::string &key, std::vector<std::string> *out, std::string *error) const;
  bool floats(const std::string &key, std::vector<float> *out, std::string *error) const;
  bool integers(const std::string &key, std::vector<int64_t> *out, std::string *error) const;
};

// Validates and indexes bytes[0, n) (which must outlive *out). On failure returns false with a
// one-line reason in *error.
bool parse_gguf(const uint8_t *bytes, size_t n, GgufFile *out, std::string *error);

struct GgufOptions {
  // For matrices: f32, f16, q8_0, q4_0 or q4_1; none keeps each as stored (see above).
  std::optional<format::DType> dtype;
  Mix mix = Mix::none;  // dtype's recipe (quantize_recipe.hpp), when --dtype named one
  // Quantized matrices: rows interleaved in x8 types (the default), or GGUF's own block order.
  BlockLayout layout = BlockLayout::interleaved;
  // Called after each tensor is converted (done of total), e.g. for a progress line.
  std::function<void(size_t done, size_t total)> progress;
};

// The GGUF name of a tensor ("token_embd.weight", "blk.3.attn_qkv.bias"), as llama.cpp spells it
// for a block of this spec (a post-norm block's norms are "attn_output_norm", "layer_output_norm").
std::string gguf_tensor_name(format::Role role, uint32_t layer, const format::BlockSpec &spec);

// Maps a parsed `llama` GGUF onto a model (config, tensors, tokenizer).
bool gguf_to_model(const GgufFile &file, const GgufOptions &options, ModelData *out, std::string *error);

// Reads path, parses it and maps it; errors name the file.
bool load_gguf(const std::string &path, const GgufOptions &options, ModelData *out, std::string *error);

// True when the file at path starts with the GGUF magic.
bool is_gguf_file(const std::string &path);

}  // namespace mote::convert

// Import of Hugging Face checkpoints of every family families.hpp knows (config.json's model_type
// picks the row: llama, gpt2, qwen2, qwen3, gemma3_text, phi3; hf_families.hpp reads the keys and
// names the tensors): a directory with config.json, model.safetensors (or
// shards listed in model.safetensors.index.json), tokenizer.json and optionally
// tokenizer_config.json.
//
// Decisions (the next engineer should know):
// - Tensors (F32, F16 or BF16) are stored as options.dtype (f32, f16, q8_0, q4_0 or q4_1);
//   norm vectors as f32.
// - GPT-2's Conv1D weights (c_attn, c_proj, c_fc) are stored (in, out): they are transposed
//   into mote's (out, in) rows; c_attn stays one fused attn_qkv matrix (q, k, v rows).
// - Hugging Face rotates split halves (rotate_half) in every family: rope_layout = split_half,
//   and the Q/K weights are used as they are (no permutation).
// - Llama 3's rope_scaling becomes a rope_freqs tensor computed as llama.cpp's converter does;
//   Gemma's norm weights w are stored as the 1 + w its RMSNorm multiplies by (as GGUF holds them).
// - A tensor name the mapping does not know is an error, except `*.rotary_emb.inv_freq` (derived
//   from rope_theta), GPT-2's `*.attn.bias` / `*.attn.masked_bias` (causal mask buffers) and
//   `lm_head.weight` of a model with tied embeddings (a copy of the embedding). A known tensor the
//   config's architecture has no use for (wpe with sinusoidal positions) is an error too.
// - Only byte-level BPE tokenizers are imported (tokenizer.json with a BPE model and a ByteLevel
//   pre-tokenizer). When the embedding has more rows than the tokenizer has tokens (vocabularies
//   padded to a multiple of 64, say), the missing ids become empty tokens of type "unused".
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "families.hpp"
#include "json.hpp"
#include "mote_writer.hpp"

namespace mote::convert {

// One tensor of a .safetensors file, validated against the file's size.
struct SafetensorsTensor {
  std::string name;
  std::string dtype;            // "F32", "F16" or "BF16"
  std::vector<uint64_t> shape;  // outermost first
  uint64_t offset = 0;          // absolute file offset of the data
  uint64_t n_bytes = 0;
};

// Validates the header of a .safetensors file held in bytes[0, n). Tensors of other dtypes are
// rejected with a message naming them.
bool parse_safetensors(const uint8_t *bytes, size_t n, std::vector<SafetensorsTensor> *tensors, std::string *error);

struct SafetensorsOptions {
  format::DType dtype = format::DType::f16;       // for matrices: f32, f16, q8_0, q4_0 or q4_1
  Mix mix = Mix::none;                            // dtype's recipe (quantize_recipe.hpp)
  BlockLayout layout = BlockLayout::interleaved;  // of quantized matrices (see BlockLayout)
  std::string tokenizer_path;                     // tokenizer.json; empty: the one in the directory
  std::function<void(size_t done, size_t total)> progress;
};

// path: the checkpoint directory, or its config.json or a .safetensors file inside it.
bool load_hf_checkpoint(const std::string &path, const SafetensorsOptions &options, ModelData *out, std::string *error);

// Maps a GPT-2 config.json (model_type "gpt2") onto row's block (n_kv_heads = n_heads, head_dim =
// dim / n_heads): LayerNorm with bias, learned positions, fused QKV, biases everywhere, pre-norm,
// tied unless tie_word_embeddings is false;
// activation_function gelu_new / gelu_pytorch_tanh -> GELU (tanh), gelu -> GELU (erf), relu.
// Two keys of mote's own describe blocks GPT-2 has no key for (safetensors.cpp):
// "mote_norm_placement": "post" and "mote_position_embedding": "sinusoidal" (no wpe tensor).
bool hf_gpt2_config(const JsonValue &config, const FamilyRow &row, format::ModelConfig *out, bool *tied,
                    std::string *error);

// Maps a BERT config.json (model_type "bert") onto row's block: the sizes, layer_norm_eps;
// hidden_act must be gelu (erf) and position_embedding_type absolute (hf_bert.cpp).
bool hf_bert_config(const JsonValue &config, const FamilyRow &row, format::ModelConfig *out, std::string *error);
// An encoder's pooling from sentence-transformers' files, each null when absent: 1_Pooling/config.json
// picks mean (also the default), cls or last-token pooling (max and weighted ones are refused);
// a Normalize module in modules.json sets kFlagNormalizeEmbeddings.
bool sentence_transformers_pooling(const JsonValue *modules, const JsonValue *pooling, format::ModelConfig *c,
                                   std::string *error);

// Reads a byte-level BPE or WordPiece tokenizer.json (plus tokenizer_config.json's text, may be
// empty) for a model of vocab_size tokens. On entry tok->bos_id / eos_id hold config.json's ids
// (or -1); ids still -1 are looked up by tokenizer_config.json's bos_token / eos_token text.
// WordPiece: bos and eos are [CLS] and [SEP] (the post-processor's, else those texts').
bool hf_tokenizer(const std::string &tokenizer_json, const std::string &tokenizer_config_json, uint32_t vocab_size,
                  TokenizerData *tok, std::string *error);
// A BERT vocab.txt alone (no tokenizer.json): a WordPiece tokenizer with BertTokenizer's
// normalizer as tokenizer_config.json's text (may be empty) sets it: do_lower_case (default
// true), strip_accents (default: as do_lower_case), tokenize_chinese_chars (default true); the
// unk, cls, sep, pad and mask tokens it names (default "[UNK]"...) become control tokens.
bool hf_vocab_txt_tokenizer(const std::string &vocab_txt, const std::string &tokenizer_config_json, uint32_t vocab_size,
                            TokenizerData *tok, std::string *error);

}  // namespace mote::convert

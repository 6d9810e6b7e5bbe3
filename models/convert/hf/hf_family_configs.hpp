// The config.json readers of the Hugging Face rows that are not llama-style decoders (the row's
// config reader, hf_families.cpp, calls them): GPT-2 (hf_gpt2.cpp) and BERT with its
// sentence-transformers pooling (hf_bert.cpp).
#pragma once

#include <string>

#include "families.hpp"
#include "format/format.hpp"
#include "hf/json.hpp"

namespace mote::convert {

// Maps a GPT-2 config.json (model_type "gpt2") onto row's block (n_kv_heads = n_heads, head_dim =
// dim / n_heads): LayerNorm with bias, learned positions, fused QKV, biases everywhere, pre-norm,
// tied unless tie_word_embeddings is false;
// activation_function gelu_new / gelu_pytorch_tanh -> GELU (tanh), gelu -> GELU (erf), relu.
// Two keys of mote's own describe blocks GPT-2 has no key for (hf_gpt2.cpp):
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

}  // namespace mote::convert

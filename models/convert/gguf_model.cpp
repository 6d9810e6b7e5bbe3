// The mapping of a parsed GGUF file's `llama` and `gpt2` architectures onto a .mote model:
// hyperparameters, tokenizer and tensors (gguf.hpp lists the decisions).
#include <cmath>
#include <cstring>

#include "byte_level_vocab.hpp"
#include "dequant.hpp"
#include "gguf.hpp"
#include "gguf_meta.hpp"
#include "message_text.hpp"
#include "text/tokenizer.hpp"

namespace mote::convert {

namespace {

using format::Role;

// The tensors of the llama and gpt2 architectures, by their GGUF names (stem, then ".weight" or
// ".bias"); which of them a file must hold is the block spec's business (format::role_needed).
struct RoleName {
  const char *name;
  Role role;
  bool per_layer;
  bool bias;  // ".bias" rather than ".weight"
};
const RoleName kRoleNames[] = {
    {"token_embd", Role::token_embedding, false, false},
    {"position_embd", Role::pos_embd, false, false},
    {"output_norm", Role::output_norm, false, false},
    {"output_norm", Role::output_norm_bias, false, true},
    {"output", Role::output, false, false},
    {"attn_norm", Role::attn_norm, true, false},
    {"attn_norm", Role::attn_norm_bias, true, true},
    {"attn_q", Role::attn_q, true, false},
    {"attn_k", Role::attn_k, true, false},
    {"attn_v", Role::attn_v, true, false},
    {"attn_qkv", Role::attn_qkv, true, false},
    {"attn_qkv", Role::attn_qkv_bias, true, true},
    {"attn_output", Role::attn_output, true, false},
    {"attn_output", Role::attn_output_bias, true, true},
    {"ffn_norm", Role::ffn_norm, true, false},
    {"ffn_norm", Role::ffn_norm_bias, true, true},
    {"ffn_gate", Role::ffn_gate, true, false},
    {"ffn_down", Role::ffn_down, true, false},
    {"ffn_down", Role::ffn_down_bias, true, true},
    {"ffn_up", Role::ffn_up, true, false},
    {"ffn_up", Role::ffn_up_bias, true, true},
};

}  // namespace

std::string gguf_tensor_name(Role role, uint32_t layer) {
  for (const RoleName &r : kRoleNames) {
    if (r.role == role)
      return (r.per_layer ? "blk." + num(layer) + "." : std::string()) + r.name + (r.bias ? ".bias" : ".weight");
  }
  return "?";
}

namespace {

// Parses "token_embd.weight" / "blk.12.attn_q.weight" / "blk.0.attn_qkv.bias"; false for any
// other name.
bool parse_tensor_name(const std::string &name, Role *role, uint32_t *layer) {
  const std::string weight = ".weight", bias = ".bias";
  auto ends_with = [&](const std::string &suffix) {
    return name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  const bool is_bias = ends_with(bias);
  if (!is_bias && !ends_with(weight)) return false;
  std::string stem = name.substr(0, name.size() - (is_bias ? bias : weight).size());
  bool per_layer = false;
  *layer = format::kNoLayer;
  if (stem.compare(0, 4, "blk.") == 0) {
    size_t at = 4, digits = 0;
    uint64_t value = 0;
    while (at < stem.size() && stem[at] >= '0' && stem[at] <= '9' && digits < 9) {
      value = value * 10 + static_cast<uint64_t>(stem[at] - '0');
      ++at;
      ++digits;
    }
    // No empty, over-long or zero-padded layer numbers, so each tensor has one spelling.
    if (digits == 0 || at >= stem.size() || stem[at] != '.' || (digits > 1 && stem[4] == '0')) return false;
    *layer = static_cast<uint32_t>(value);
    stem = stem.substr(at + 1);
    per_layer = true;
  }
  for (const RoleName &r : kRoleNames) {
    if (r.per_layer == per_layer && r.bias == is_bias && stem == r.name) {
      *role = r.role;
      return true;
    }
  }
  return false;
}

}  // namespace

bool import_tensors(const GgufFile &file, const GgufOptions &options, const std::string &arch, ModelData *out,
                    std::string *error);

// GPT-2 (llama.cpp's convert_hf_to_gguf layout: Linear-shaped matrices, fused attn_qkv, biases,
// LayerNorm with bias, learned positions, GELU with the tanh approximation).
bool gguf_gpt2_to_model(const GgufFile &file, const GgufOptions &options, ModelData *out, std::string *error) {
  Meta meta{file, error};
  int64_t layers = 0, dim = 0, ffn = 0, heads = 1, context = 0;
  double eps = 0;
  if (!meta.integer("gpt2.block_count", true, 0, 1, 1024, &layers) ||
      !meta.integer("gpt2.embedding_length", true, 0, 1, 65536, &dim) ||
      !meta.integer("gpt2.feed_forward_length", true, 0, 1, 1 << 18, &ffn) ||
      !meta.integer("gpt2.attention.head_count", true, 0, 1, 1024, &heads) ||
      !meta.integer("gpt2.context_length", true, 0, 1, 1 << 20, &context) ||
      !meta.real("gpt2.attention.layer_norm_epsilon", 1e-5, false, &eps))
    return false;
  const GgufValue *tokens = file.find("tokenizer.ggml.tokens");
  if (tokens == nullptr || tokens->type != GgufType::array || tokens->array_count < 1 ||
      tokens->array_count > (1u << 24)) {
    *error = "GGUF has no tokenizer (no tokenizer.ggml.tokens): mote needs one in the model file";
    return false;
  }
  if (dim % heads != 0) {
    *error = "GGUF gpt2.embedding_length " + num(dim) + " is not divisible by gpt2.attention.head_count " + num(heads);
    return false;
  }
  if (!(eps > 0 && eps < 1)) {
    *error = "GGUF gpt2.attention.layer_norm_epsilon " + real_text(eps) + " must be in (0, 1)";
    return false;
  }
  ModelData &m = *out;
  m = ModelData{};
  format::ModelConfig &c = m.config;
  const int64_t vocab = static_cast<int64_t>(tokens->array_count);
  c = gpt2_config({dim, layers, heads, heads, dim / heads, ffn, vocab, context}, eps);
  if (!map_tokenizer(file, meta, c.vocab_size, &m, error)) return false;
  return import_tensors(file, options, "gpt2", &m, error);
}

bool gguf_to_model(const GgufFile &file, const GgufOptions &options, ModelData *out, std::string *error) {
  if (options.dtype && !check_matrix_dtype(*options.dtype, error)) return false;
  Meta meta{file, error};
  std::string arch;
  if (!meta.string("general.architecture", true, &arch)) return false;
  if (arch == "gpt2") return gguf_gpt2_to_model(file, options, out, error);
  if (arch != "llama") {
    *error = "GGUF architecture '" + printable(arch) + "' is not supported (only llama and gpt2)";
    return false;
  }
  int64_t layers, dim, ffn, heads, kv_heads, context, rope_dims, key_length;
  double theta, eps;
  if (!meta.integer("llama.block_count", true, 0, 1, 1024, &layers) ||
      !meta.integer("llama.embedding_length", true, 0, 1, 65536, &dim) ||
      !meta.integer("llama.feed_forward_length", true, 0, 1, 1 << 18, &ffn) ||
      !meta.integer("llama.attention.head_count", true, 0, 1, 1024, &heads) ||
      !meta.integer("llama.attention.head_count_kv", false, heads, 1, 1024, &kv_heads) ||
      !meta.integer("llama.context_length", true, 0, 1, 1 << 20, &context) ||
      !meta.real("llama.rope.freq_base", 10000.0, false, &theta) ||
      !meta.real("llama.attention.layer_norm_rms_epsilon", 1e-5, false, &eps))
    return false;
  if (dim % heads != 0) {
    *error =
        "GGUF llama.embedding_length " + num(dim) + " is not divisible by llama.attention.head_count " + num(heads);
    return false;
  }
  if (heads % kv_heads != 0) {
    *error = "GGUF llama.attention.head_count " + num(heads) + " is not a multiple of head_count_kv " + num(kv_heads);
    return false;
  }
  const int64_t head_dim = dim / heads;
  if (head_dim % 2 != 0 || head_dim > 4096) {
    *error = "GGUF head dimension " + num(head_dim) + " (embedding_length / head_count) must be even and at most 4096";
    return false;
  }
  if (!meta.integer("llama.rope.dimension_count", false, head_dim, 0, INT64_MAX, &rope_dims) ||
      !meta.integer("llama.attention.key_length", false, head_dim, 0, INT64_MAX, &key_length))
    return false;
  if (rope_dims != head_dim) {
    *error = "GGUF llama.rope.dimension_count " + num(rope_dims) + " differs from the head dimension " + num(head_dim) +
             " (partial rotary embeddings are not supported)";
    return false;
  }
  if (key_length != head_dim) {
    *error = "GGUF llama.attention.key_length " + num(key_length) + " differs from embedding_length / head_count (" +
             num(head_dim) + ")";
    return false;
  }
  if (!std::isfinite(theta) || theta <= 1 || theta > 3.0e38) {
    *error = "GGUF llama.rope.freq_base " + real_text(theta) + " must be finite and > 1";
    return false;
  }
  if (!(eps > 0 && eps < 1)) {
    *error = "GGUF llama.attention.layer_norm_rms_epsilon " + real_text(eps) + " must be in (0, 1)";
    return false;
  }
  if (file.find("llama.rope.scaling.type") != nullptr) {
    std::string scaling;
    if (!meta.string("llama.rope.scaling.type", false, &scaling)) return false;
    if (scaling != "none") {
      *error = "GGUF llama.rope.scaling.type '" + printable(scaling) + "' is not supported";
      return false;
    }
  }
  // The vocabulary: llama.vocab_size when present, else the token count; both must agree.
  int64_t vocab = -1;
  const GgufValue *tokens = file.find("tokenizer.ggml.tokens");
  const int64_t token_count =
      tokens != nullptr && tokens->type == GgufType::array ? static_cast<int64_t>(tokens->array_count) : -1;
  if (!meta.integer("llama.vocab_size", false, token_count, 0, 1 << 24, &vocab)) return false;
  if (vocab < 0) {
    *error = "GGUF has no tokenizer (no tokenizer.ggml.tokens): mote needs one in the model file";
    return false;
  }
  if (vocab < 1 || vocab > (1 << 24)) {
    *error = "GGUF vocabulary size " + std::to_string(vocab) + " is outside [1, 2^24]";
    return false;
  }

  ModelData &m = *out;
  m = ModelData{};
  format::ModelConfig &c = m.config;
  c = llama_config({dim, layers, heads, kv_heads, head_dim, ffn, vocab, context});
  c.norm_eps = static_cast<float>(eps);
  c.rope_theta = static_cast<float>(theta);
  c.rope_layout = format::RopeLayout::interleaved;

  if (!map_tokenizer(file, meta, c.vocab_size, &m, error)) return false;
  return import_tensors(file, options, arch, &m, error);
}

// The file's tensors for m's config (tokenizer and hyperparameters already mapped); the
// embeddings are tied when the file has no output tensor.
bool import_tensors(const GgufFile &file, const GgufOptions &options, const std::string &arch, ModelData *out,
                    std::string *error) {
  ModelData &m = *out;
  format::ModelConfig &c = m.config;
  // Which file tensor plays each (role, layer).
  const uint32_t L = c.n_layers;
  std::vector<size_t> slot((L + 1) * format::kRoleCount, SIZE_MAX);
  auto slot_of = [&](Role role, uint32_t layer) -> size_t & {
    return slot[(layer == format::kNoLayer ? L : layer) * format::kRoleCount + static_cast<uint32_t>(role)];
  };
  for (size_t i = 0; i < file.tensors.size(); ++i) {
    const GgufTensorInfo &t = file.tensors[i];
    Role role = Role::token_embedding;
    uint32_t layer = format::kNoLayer;
    if (!parse_tensor_name(t.name, &role, &layer)) {
      *error = "GGUF tensor '" + printable(t.name) + "' is not part of the " + arch + " architecture as mote knows it";
      return false;
    }
    if (layer != format::kNoLayer && layer >= L) {
      *error = "GGUF tensor '" + printable(t.name) + "' is for layer " + num(layer) + " but " + arch +
               ".block_count is " + num(L);
      return false;
    }
    size_t &s = slot_of(role, layer);
    if (s != SIZE_MAX) {
      *error = "GGUF tensor '" + printable(t.name) + "' duplicates '" + file.tensors[s].name + "'";
      return false;
    }
    s = i;
  }
  const bool tied = slot_of(Role::output, format::kNoLayer) == SIZE_MAX;
  c.flags |= tied ? static_cast<uint32_t>(format::kFlagTiedEmbeddings) : 0u;
  const format::BlockSpec spec = format::block_spec(c);
  for (uint32_t role = 1; role < format::kRoleCount; ++role) {
    for (uint32_t layer = 0; layer <= L; ++layer) {
      const size_t at = slot_of(static_cast<Role>(role), layer == L ? format::kNoLayer : layer);
      if (at != SIZE_MAX && !format::role_needed(spec, static_cast<Role>(role))) {
        *error = "GGUF tensor '" + printable(file.tensors[at].name) + "' has no place in the " + arch + " architecture";
        return false;
      }
    }
  }

  const std::vector<TensorSlot> wanted = tensor_slots(c);

  for (const TensorSlot &w : wanted) {
    if (slot_of(w.role, w.layer) == SIZE_MAX) {
      *error = "GGUF is missing tensor '" + gguf_tensor_name(w.role, w.layer) + "'";
      return false;
    }
  }
  m.tensors.reserve(wanted.size());
  for (size_t k = 0; k < wanted.size(); ++k) {
    const TensorSlot &w = wanted[k];
    const GgufTensorInfo &t = file.tensors[slot_of(w.role, w.layer)];
    const bool vector = w.cols == 0;
    // GGUF dims are innermost first: a matrix is [cols, rows], a vector [n].
    const uint64_t expect[4] = {vector ? w.rows : w.cols, vector ? 1 : w.rows, 1, 1};
    if (std::memcmp(t.dims, expect, sizeof expect) != 0) {
      std::string got, need;
      for (uint32_t d = 0; d < t.n_dims; ++d) got += (d ? ", " : "") + num(t.dims[d]);
      need = vector ? num(w.rows) : num(w.cols) + ", " + num(w.rows);
      *error = "GGUF tensor '" + printable(t.name) + "' has shape [" + got +
               "] (innermost first); the hyperparameters need [" + need + "]";
      return false;
    }
    const GgmlTypeInfo *info = ggml_type_info(t.type);
    if (!info->dequantizable) {
      *error = "GGUF tensor '" + printable(t.name) + "' has type " + info->name +
               ", which mote convert cannot import (supported: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, "
               "Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS)";
      return false;
    }
    if (!add_tensor(w, {file.bytes + t.offset, t.type}, options.dtype, options.layout, &m, error, options.mix)) return false;
    if (options.progress) options.progress(k + 1, wanted.size());
  }
  return true;
}

}  // namespace mote::convert

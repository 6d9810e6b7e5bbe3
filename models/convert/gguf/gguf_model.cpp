// The mapping of a parsed GGUF file onto a .mote model: the architecture's row (families.hpp)
// and its hyperparameters, the tokenizer and the tensors (gguf.hpp lists the decisions).
#include <cmath>
#include <cstring>

#include "families.hpp"
#include "gguf/gguf.hpp"
#include "gguf/gguf_meta.hpp"
#include "layer_names.hpp"
#include "message_text.hpp"
#include "quant/dequant.hpp"
#include "text/tokenizer.hpp"
#include "vocab/byte_level_vocab.hpp"

namespace mote::convert {

namespace {

using format::Role;

}  // namespace

std::string gguf_tensor_name(Role role, uint32_t layer, const format::BlockSpec &spec) {
  const format::RoleInfo *info = format::role_info(static_cast<uint32_t>(role));
  if (info == nullptr) return "?";
  const char *stem = spec.post_norm && info->post_norm_stem != nullptr ? info->post_norm_stem : info->stem;
  return (info->per_layer ? "blk." + num(layer) + "." : std::string()) + stem + (info->bias ? ".bias" : ".weight");
}

namespace {

// Parses "token_embd.weight" / "blk.12.attn_q.weight" / "blk.0.attn_qkv.bias" into the role the
// spec gives that name (ffn_up is Phi-3's fused gate/up); false for any other name.
bool parse_tensor_name(const std::string &name, const format::BlockSpec &spec, Role *role, uint32_t *layer) {
  const std::string weight = ".weight", bias = ".bias";
  auto ends_with = [&](const std::string &suffix) {
    return name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  const bool is_bias = ends_with(bias);
  if (!is_bias && !ends_with(weight)) return false;
  std::string stem = name.substr(0, name.size() - (is_bias ? bias : weight).size());
  bool per_layer = false;
  *layer = format::kNoLayer;
  std::string rest;
  const LayerPrefix prefix = split_layer_prefix(stem, "blk.", layer, &rest);
  if (prefix == LayerPrefix::malformed) return false;
  if (prefix == LayerPrefix::found) {
    stem = rest;
    per_layer = true;
  }
  bool found = false;
  for (uint32_t r = 1; r < format::kRoleCount; ++r) {
    const Role candidate = static_cast<Role>(r);
    if (gguf_tensor_name(candidate, per_layer ? 0 : format::kNoLayer, spec) !=
        (per_layer ? "blk.0." : "") + stem + (is_bias ? bias : weight))
      continue;
    // Of two roles with one name, the one the spec needs.
    if (!found || format::role_needed(spec, candidate)) *role = candidate;
    found = true;
  }
  return found;
}

}  // namespace

bool import_tensors(const GgufFile &file, const GgufOptions &options, const FamilyRow &row, ModelData *out,
                    std::string *error);

namespace {

// An embedder's pooling (<arch>.pooling_type, llama.cpp's numbering: 0 none, 1 mean, 2 cls, 3 last,
// 4 rank). Without it, or with none, mean. A causal encoder (attention.causal true) is refused. GGUF has no key for
// normalization: llama.cpp's embedding tool L2-normalizes by default, and so does mote.
bool read_pooling(Meta &meta, const std::string &p, format::ModelConfig *out, std::string *error) {
  int64_t pooling = 1;
  bool causal = false;
  if (!meta.integer(p + "pooling_type", false, 1, 0, INT64_MAX, &pooling) ||
      !meta.boolean(p + "attention.causal", false, &causal))
    return false;
  if (causal) {
    *error = "GGUF " + p + "attention.causal is true: mote's encoders attend both ways (a causal one is not supported)";
    return false;
  }
  if (pooling > 3) {
    *error = "GGUF " + p + "pooling_type " + num(pooling) + " is not supported (mean 1, cls 2, last 3)";
    return false;
  }
  out->pooling = pooling == 2 ? format::Pooling::cls : pooling == 3 ? format::Pooling::last : format::Pooling::mean;
  out->flags |= format::kFlagNormalizeEmbeddings;
  return true;
}

// The hyperparameters under the family's key prefix ("qwen2.block_count"), checked, as a config;
// a key llama.cpp ignores for the family is ignored too, with a note.
bool read_config(const GgufFile &file, Meta &meta, const FamilyRow &row, format::ModelConfig *out,
                 std::vector<std::string> *notes, std::string *error) {
  const std::string p = std::string(row.gguf_arch) + ".";
  int64_t layers = 0, dim = 0, ffn = 0, heads = 0, kv_heads = 0, context = 0, window = 0;
  double theta = 0, eps = 0;
  const bool rotary = row.positions == format::PositionKind::rope;
  if (!meta.integer(p + "block_count", true, 0, 1, 1024, &layers) ||
      !meta.integer(p + "embedding_length", true, 0, 1, 65536, &dim) ||
      !meta.integer(p + "feed_forward_length", true, 0, 1, 1 << 18, &ffn) ||
      !meta.integer(p + "attention.head_count", true, 0, 1, 1024, &heads) ||
      !meta.integer(p + "attention.head_count_kv", false, heads, 1, 1024, &kv_heads) ||
      !meta.integer(p + "context_length", true, 0, 1, 1 << 30, &context) ||
      (row.gguf_window && !meta.integer(p + "attention.sliding_window", false, 0, 0, 1 << 30, &window)) ||
      !meta.real(p + row.eps_key, 1e-5, false, &eps) ||
      (rotary && !meta.real(p + "rope.freq_base", 10000.0, false, &theta)))
    return false;
  if (!row.gguf_window && file.find(p + "attention.sliding_window") != nullptr) {
    notes->push_back("GGUF " + p + "attention.sliding_window is ignored, as llama.cpp ignores it for " + row.gguf_arch +
                     ": every layer attends to the whole context");
  }
  if (heads % kv_heads != 0) {
    *error =
        "GGUF " + p + "attention.head_count " + num(heads) + " is not a multiple of head_count_kv " + num(kv_heads);
    return false;
  }
  // The head size is its own key where it differs from embedding_length / head_count (Gemma 3, Qwen3).
  int64_t head_dim = dim % heads == 0 ? dim / heads : 0, value_length = 0, rope_dims = 0;
  if (head_dim == 0 && file.find(p + "attention.key_length") == nullptr) {
    *error = "GGUF " + p + "embedding_length " + num(dim) + " is not divisible by " + p + "attention.head_count " +
             num(heads) + " and there is no " + p + "attention.key_length";
    return false;
  }
  if (!meta.integer(p + "attention.key_length", false, head_dim, 1, 4096, &head_dim) ||
      !meta.integer(p + "attention.value_length", false, head_dim, 1, 4096, &value_length) ||
      !meta.integer(p + "rope.dimension_count", false, head_dim, 0, INT64_MAX, &rope_dims))
    return false;
  if (value_length != head_dim) {
    *error = "GGUF " + p + "attention.value_length " + num(value_length) + " differs from key_length " + num(head_dim);
    return false;
  }
  if (rotary && (head_dim % 2 != 0 || rope_dims != head_dim)) {
    *error = "GGUF " + p + "rope.dimension_count " + num(rope_dims) + " must be the (even) head dimension " +
             num(head_dim) + " (partial rotary embeddings are not supported)";
    return false;
  }
  if (rotary && (!std::isfinite(theta) || theta <= 1 || theta > 3.0e38)) {
    *error = "GGUF " + p + "rope.freq_base " + real_text(theta) + " must be finite and > 1";
    return false;
  }
  if (!(eps > 0 && eps < 1)) {
    *error = "GGUF " + p + row.eps_key + " " + real_text(eps) + " must be in (0, 1)";
    return false;
  }
  if (file.find(p + "rope.scaling.type") != nullptr) {
    std::string scaling;
    if (!meta.string(p + "rope.scaling.type", false, &scaling)) return false;
    if (scaling != "none") {
      *error = "GGUF " + p + "rope.scaling.type '" + printable(scaling) + "' is not supported";
      return false;
    }
  }
  // A scaling factor without a type is linear scaling to llama.cpp: refused unless it is 1.
  for (const char *key : {"rope.scaling.factor", "rope.scale_linear"}) {
    double factor = 1.0;
    if (!meta.real(p + key, 1.0, false, &factor)) return false;
    if (factor != 1.0) {
      *error = "GGUF " + p + key + " " + real_text(factor) + ": RoPE scaling is not supported";
      return false;
    }
  }
  for (const char *key : {"attn_logit_softcapping", "final_logit_softcapping"}) {
    if (file.find(p + key) != nullptr) {
      *error = "GGUF " + p + key + " is set: logit soft-capping (Gemma 2) is not supported";
      return false;
    }
  }
  // The vocabulary: <arch>.vocab_size when present, else the token count; both must agree.
  const GgufValue *tokens = file.find("tokenizer.ggml.tokens");
  const int64_t token_count =
      tokens != nullptr && tokens->type == GgufType::array ? static_cast<int64_t>(tokens->array_count) : -1;
  int64_t vocab = -1;
  if (!meta.integer(p + "vocab_size", false, token_count, 0, 1 << 24, &vocab)) return false;
  if (vocab < 0) {
    *error = "GGUF has no tokenizer (no tokenizer.ggml.tokens): mote needs one in the model file";
    return false;
  }
  if (vocab < 1 || vocab > (1 << 24)) {
    *error = "GGUF vocabulary size " + std::to_string(vocab) + " is outside [1, 2^24]";
    return false;
  }
  if (context > (1 << 20)) context = 1 << 20;  // the format's cap
  *out = family_config(row, {dim, layers, heads, kv_heads, head_dim, ffn, vocab, context}, eps, theta,
                       static_cast<uint32_t>(window));
  if (!row.grouped_heads) out->n_kv_heads = out->n_heads;
  return (out->flags & format::kFlagEncoder) == 0 || read_pooling(meta, p, out, error);
}

}  // namespace

bool gguf_to_model(const GgufFile &file, const GgufOptions &options, ModelData *out, std::string *error) {
  if (options.dtype && !check_matrix_dtype(*options.dtype, error)) return false;
  Meta meta{file, error};
  std::string arch;
  if (!meta.string("general.architecture", true, &arch)) return false;
  const FamilyRow *row = family_by_gguf_arch(arch);
  if (row == nullptr) {
    *error = "GGUF architecture '" + printable(arch) + "' is not supported (mote knows " + known_gguf_archs() + ")";
    return false;
  }
  ModelData &m = *out;
  m = ModelData{};
  if (!read_config(file, meta, *row, &m.config, &m.notes, error)) return false;
  if (!map_tokenizer(file, meta, m.config.vocab_size, &m, error)) return false;
  return import_tensors(file, options, *row, &m, error);
}

// The file's tensors for m's config (tokenizer and hyperparameters already mapped); the
// embeddings are tied when the file has no output tensor.
bool import_tensors(const GgufFile &file, const GgufOptions &options, const FamilyRow &row, ModelData *out,
                    std::string *error) {
  const std::string arch = row.gguf_arch;
  ModelData &m = *out;
  format::ModelConfig &c = m.config;
  // Which file tensor plays each (role, layer).
  const uint32_t L = c.n_layers;
  std::vector<size_t> slot((L + 1) * format::kRoleCount, SIZE_MAX);
  auto slot_of = [&](Role role, uint32_t layer) -> size_t & {
    return slot[(layer == format::kNoLayer ? L : layer) * format::kRoleCount + static_cast<uint32_t>(role)];
  };
  const format::BlockSpec family_spec = format::block_spec(c);
  for (size_t i = 0; i < file.tensors.size(); ++i) {
    const GgufTensorInfo &t = file.tensors[i];
    Role role = Role::token_embedding;
    uint32_t layer = format::kNoLayer;
    if (!parse_tensor_name(t.name, family_spec, &role, &layer)) {
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
  // Per file: tied when there is no classifier (an encoder has none at all); Llama 3's scaled RoPE stores its factors.
  const bool tied = slot_of(Role::output, format::kNoLayer) == SIZE_MAX && (c.flags & format::kFlagEncoder) == 0;
  c.flags |= tied ? static_cast<uint32_t>(format::kFlagTiedEmbeddings) : 0u;
  // (Where llama.cpp does not read rope_freqs, the tensor has no place, below.)
  const bool factors = slot_of(Role::rope_freqs, format::kNoLayer) != SIZE_MAX;
  c.flags |= factors && row.gguf_rope_factors ? static_cast<uint32_t>(format::kFlagRopeFactors) : 0u;
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
      *error = "GGUF is missing tensor '" + gguf_tensor_name(w.role, w.layer, spec) + "'";
      return false;
    }
  }
  m.tensors.reserve(wanted.size());
  for (size_t k = 0; k < wanted.size(); ++k) {
    const TensorSlot &w = wanted[k];
    const GgufTensorInfo &t = file.tensors[slot_of(w.role, w.layer)];
    const bool vector = w.cols == 0;
    // GGUF dims are innermost first: a matrix is [cols, rows], a vector [n].
    uint64_t expect[4] = {vector ? w.rows : w.cols, vector ? 1 : w.rows, 1, 1};
    // token_types holds a row per segment type; every text is segment 0, its first row.
    if (w.role == Role::token_types && t.n_dims == 2 && t.dims[1] >= 1) expect[1] = t.dims[1];
    if (std::memcmp(t.dims, expect, sizeof expect) != 0) {
      std::string got, need;
      for (uint32_t d = 0; d < t.n_dims; ++d) got += (d ? ", " : "") + num(t.dims[d]);
      need = vector ? num(w.rows) : num(w.cols) + ", " + num(w.rows);
      *error = "GGUF tensor '" + printable(t.name) + "' has shape [" + got +
               "] (innermost first); the hyperparameters need [" + need + "]";
      return false;
    }
    const GgmlTypeInfo *info = ggml_type_info(t.type);
    if (info->to_float == nullptr) {
      *error = "GGUF tensor '" + printable(t.name) + "' has type " + info->name +
               ", which mote convert cannot import (supported: " + importable_ggml_types() + ")";
      return false;
    }
    if (!add_tensor(w, {file.bytes + t.offset, t.type}, options.dtype, options.layout, &m, error, options.mix))
      return false;
    if (options.progress) options.progress(k + 1, wanted.size());
  }
  return true;
}

}  // namespace mote::convert

// The C API's description of a model: its architecture, tensors and vocabulary, read from the
// validated view. Tools (`mote inspect`) and apps learn what a file holds through these calls only.
#include <cstring>

#include "format/reader.hpp"
#include "model/model.hpp"
#include "mote/mote.h"
#include "text/chat.hpp"

using namespace mote;

namespace {

#define MOTE_TEXT_OF(x) #x
#define MOTE_VERSION_OF(major, minor, patch) MOTE_TEXT_OF(major) "." MOTE_TEXT_OF(minor) "." MOTE_TEXT_OF(patch)

const char *norm_name(format::NormKind norm) { return norm == format::NormKind::rmsnorm ? "rmsnorm" : "layernorm"; }

const char *activation_name(format::Activation activation) {
  switch (activation) {
    case format::Activation::swiglu:
      return "swiglu";
    case format::Activation::gelu:
      return "gelu";
    case format::Activation::gelu_erf:
      return "gelu_erf";
    case format::Activation::relu:
      return "relu";
    case format::Activation::geglu:
      return "geglu";
  }
  return "";
}

const char *positions_name(format::PositionKind positions) {
  switch (positions) {
    case format::PositionKind::rope:
      return "rope";
    case format::PositionKind::learned:
      return "learned";
    case format::PositionKind::sinusoidal:
      return "sinusoidal";
  }
  return "";
}

const char *rope_layout_name(const format::BlockSpec &spec) {
  if (spec.positions != format::PositionKind::rope) return "";
  return spec.rope_layout == format::RopeLayout::split_half ? "split_half" : "interleaved";
}

uint32_t block_flags(const format::BlockSpec &spec) {
  const struct {
    bool set;
    uint32_t bit;
  } kBits[] = {
      {spec.norm_bias, MOTE_BLOCK_NORM_BIAS},
      {spec.post_norm, MOTE_BLOCK_POST_NORM},
      {spec.tied_embeddings, MOTE_BLOCK_TIED_EMBEDDINGS},
      {spec.gated_ffn, MOTE_BLOCK_GATED_FFN},
      {spec.fused_gate_up, MOTE_BLOCK_FUSED_GATE_UP},
      {spec.fused_qkv, MOTE_BLOCK_FUSED_QKV},
      {spec.qkv_bias, MOTE_BLOCK_QKV_BIAS},
      {spec.output_bias, MOTE_BLOCK_OUTPUT_BIAS},
      {spec.ffn_bias, MOTE_BLOCK_FFN_BIAS},
      {spec.qk_norm, MOTE_BLOCK_QK_NORM},
      {spec.sandwich_norm, MOTE_BLOCK_SANDWICH_NORM},
      {spec.embed_scale, MOTE_BLOCK_EMBED_SCALE},
      {spec.rope_factors, MOTE_BLOCK_ROPE_FACTORS},
      {spec.encoder, MOTE_BLOCK_ENCODER},
      {spec.embed_norm, MOTE_BLOCK_EMBED_NORM},
      {spec.token_types, MOTE_BLOCK_TOKEN_TYPES},
  };
  uint32_t flags = 0;
  for (const auto &b : kBits) flags |= b.set ? b.bit : 0u;
  return flags;
}

}  // namespace

extern "C" {

const char *mote_version(void) { return MOTE_VERSION_OF(MOTE_VERSION_MAJOR, MOTE_VERSION_MINOR, MOTE_VERSION_PATCH); }

void mote_model_info_get(const mote_model *model, mote_model_info *info) {
  const Model *m = model_of(model);
  if (info == nullptr) return;
  std::memset(info, 0, sizeof *info);
  if (m == nullptr) return;
  const format::ModelConfig &c = m->view.config;
  const format::BlockSpec spec = format::block_spec(c);
  info->dim = c.dim;
  info->n_layers = c.n_layers;
  info->n_heads = c.n_heads;
  info->n_kv_heads = c.n_kv_heads;
  info->head_dim = c.head_dim;
  info->ffn_dim = c.ffn_dim;
  info->vocab_size = c.vocab_size;
  info->max_seq_len = c.max_seq_len;
  info->bos_id = c.bos_id;
  info->eos_id = c.eos_id;
  info->chat_template = m->view.chat_template;
  info->tokenizer_kind = m->view.tokenizer_kind;
  info->add_bos = m->view.tokenizer.add_bos ? 1u : 0u;
  info->weight_bytes = m->view.weight_bytes;
  info->family = format::family_name(c.family);
  info->norm = norm_name(spec.norm);
  info->activation = activation_name(spec.activation);
  info->positions = positions_name(spec.positions);
  info->rope_layout = rope_layout_name(spec);
  info->norm_eps = spec.norm_eps;
  info->rope_theta = spec.positions == format::PositionKind::rope ? c.rope_theta : 0.0f;
  info->attention_scale = spec.attention_scale;
  info->sliding_window = spec.sliding_window;
  info->swa_global_every = spec.swa_global_every;
  info->rope_theta_local = spec.rope_theta_local;
  info->block_flags = block_flags(spec);
  info->n_tensors = m->view.n_tensors;
  info->n_vocab_tokens = m->view.tokenizer.n_tokens;
  info->n_merges = m->view.tokenizer.n_merges;
  info->format_version = format::kVersion;
  info->pooling = static_cast<uint32_t>(spec.pooling);
  info->normalize_embeddings = spec.normalize_embeddings ? 1u : 0u;
}

mote_status mote_model_tensor(const mote_model *model, uint32_t index, mote_tensor_info *info) {
  const Model *m = model_of(model);
  if (m == nullptr || info == nullptr || index >= m->view.n_tensors) return MOTE_ERR_INVALID_ARGUMENT;
  const format::TensorEntry &t = m->view.tensors[index];
  std::memset(info, 0, sizeof *info);
  format::tensor_name(t, info->name, sizeof info->name);
  info->dtype = format::dtype_traits(t.dtype)->name;
  info->n_dims = t.n_dims;
  info->shape[0] = t.shape[0];
  info->shape[1] = t.n_dims == 2 ? t.shape[1] : 0;
  info->offset = t.offset;
  info->size = t.size;
  return MOTE_OK;
}

mote_status mote_model_check_supported(const mote_model *model, char *err, size_t err_n) {
  const ErrorSink sink{err, err_n};
  const Model *m = model_of(model);
  if (m == nullptr) return fail(sink, MOTE_ERR_INVALID_ARGUMENT, "model is null or was not opened");
  return check_supported(m->view, sink);
}

int mote_token_type_of(const mote_model *model, int32_t token) {
  const Model *m = model_of(model);
  if (m == nullptr || token < 0 || static_cast<uint32_t>(token) >= m->view.tokenizer.n_tokens) return 0;
  return m->view.tokenizer.types[token];
}

mote_status mote_token_text(const mote_model *model, int32_t token, char *out, size_t capacity, size_t *n_bytes) {
  const Model *m = model_of(model);
  if (m == nullptr || n_bytes == nullptr || (out == nullptr && capacity > 0)) return MOTE_ERR_INVALID_ARGUMENT;
  *n_bytes = 0;
  const format::TokenizerView &tok = m->view.tokenizer;
  if (token < 0 || static_cast<uint32_t>(token) >= tok.n_tokens) return MOTE_ERR_BAD_TOKEN;
  const uint32_t begin = tok.piece_offsets[token], n = tok.piece_offsets[token + 1] - begin;
  *n_bytes = n;
  if (n > capacity) return MOTE_ERR_BUFFER_TOO_SMALL;
  if (n > 0) std::memcpy(out, tok.piece_bytes + begin, n);
  return MOTE_OK;
}

const char *mote_chat_template_name(mote_chat_template chat_template) {
  return chat_template_name(enum_value(chat_template));  // a C caller's value may be outside the enum
}

}  // extern "C"

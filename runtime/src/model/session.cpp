#include <cmath>
#include <cstring>
#include <new>

#include "model/model.hpp"

namespace mote {

using format::DType;
using format::Role;

Status check_supported(const format::ModelView &view, ErrorSink err) {
  const format::ModelConfig &c = view.config;
  for (uint32_t i = 0; i < view.n_tensors; ++i) {
    const format::TensorEntry &t = view.tensors[i];
    if (weight_type(t.dtype) == nullptr) {
      char name[48];
      format::tensor_name(t, name, sizeof name);
      return fail(err, MOTE_ERR_UNSUPPORTED, "tensor '%s' is %s, which this build does not run", name,
                  format::dtype_traits(t.dtype)->name);
    }
    // Fused QKV and gate/up matrices are used as row ranges: each must be whole row groups.
    const uint32_t group = format::dtype_traits(t.dtype)->interleaved_rows;
    const uint32_t q_rows = c.n_heads * c.head_dim, kv_rows = c.n_kv_heads * c.head_dim;
    const bool split_qkv =
        t.role == static_cast<uint32_t>(Role::attn_qkv) && (q_rows % group != 0 || kv_rows % group != 0);
    const bool split_gate_up = t.role == static_cast<uint32_t>(Role::ffn_gate_up) && c.ffn_dim % group != 0;
    if (split_qkv || split_gate_up) {
      char name[48];
      format::tensor_name(t, name, sizeof name);
      return fail(err, MOTE_ERR_UNSUPPORTED, "tensor '%s' is %s: its parts (%u, %u rows) are not whole groups of %u",
                  name, format::dtype_traits(t.dtype)->name, static_cast<unsigned>(split_qkv ? q_rows : c.ffn_dim),
                  static_cast<unsigned>(split_qkv ? kv_rows : c.ffn_dim), static_cast<unsigned>(group));
    }
  }
  return MOTE_OK;
}

void sinusoidal_positions(float *table, size_t n_pos, size_t dim) {
  for (size_t i = 0; i < dim / 2; ++i) {
    const double inv_freq = std::pow(10000.0, -2.0 * static_cast<double>(i) / static_cast<double>(dim));
    for (size_t pos = 0; pos < n_pos; ++pos) {
      const double angle = static_cast<double>(pos) * inv_freq;
      table[pos * dim + 2 * i] = static_cast<float>(std::sin(angle));
      table[pos * dim + 2 * i + 1] = static_cast<float>(std::cos(angle));
    }
  }
}

namespace {

// Whether some weight of the model multiplies 8-bit activation blocks.
bool takes_q8_activations(const format::ModelView &view) {
  for (uint32_t i = 0; i < view.n_tensors; ++i) {
    const WeightType *type = weight_type(view.tensors[i].dtype);
    if (type != nullptr && type->activation == ActivationFormat::q8) return true;
  }
  return false;
}

// The threads a session runs with (0 asks for one).
uint32_t session_threads(const mote_session_options &options) { return options.n_threads == 0 ? 1 : options.n_threads; }

}  // namespace

Session *plan_session(ArenaPlanner &arena, const Model &model, const mote_session_options &options) {
  const format::ModelConfig &c = model.view.config;
  // Sizes in 64 bits: the KV cache of a large context overflows a 32-bit size_t, and the
  // planner must see the true size to refuse it.
  const uint64_t context = options.context_length;
  const uint64_t q_dim = static_cast<uint64_t>(c.n_heads) * c.head_dim;
  const uint64_t kv_dim = static_cast<uint64_t>(c.n_kv_heads) * c.head_dim;
  uint64_t kv_elements = c.n_layers * context * kv_dim;
  const KvType &kv_type_row = *kv_type(options.kv_dtype);  // checked by the API
  const uint64_t kv_element_bytes = kv_type_row.element_bytes;
  const uint64_t blocks_per_head = (c.head_dim + kernels::kQuantBlock - 1) / kernels::kQuantBlock;
  uint64_t kv_scales = kv_type_row.block_scales ? c.n_layers * context * c.n_kv_heads * blocks_per_head : 0;

  // Another backend keeps activations and the KV cache on its device: the host arena holds
  // the bound weights, the logits, the sampler's buffers and the backend's own state.
  const Backend *backend = find_backend(options.backend);
  const bool host_forward = options.backend == MOTE_BACKEND_CPU;
  const uint64_t batch = host_forward ? options.batch_size : 0;
  const uint64_t half_head = c.head_dim / 2;
  Session *s = arena.take<Session>(1);
  LayerWeights *layers = arena.take<LayerWeights>(c.n_layers);
  void *backend_state = nullptr;
  if (backend != nullptr && backend->host_bytes != nullptr) {
    backend_state = arena.take<uint8_t>(backend->host_bytes(model, options));
  }
  RunState st{};
  st.x = arena.take<float>(batch * c.dim);
  st.normed = arena.take<float>(batch * (q_dim > c.dim ? q_dim : c.dim));
  st.block_out = arena.take<float>(batch * c.dim);
  st.hidden = arena.take<float>(batch * c.ffn_dim);
  st.up = arena.take<float>(batch * c.ffn_dim);
  st.q = arena.take<float>(batch * q_dim);
  st.k = arena.take<float>(batch * kv_dim);
  st.v = arena.take<float>(batch * kv_dim);
  // Each thread's score rows: one per query of its attention call (Crew::worker picks the rows).
  st.att =
      arena.take<float>(host_forward ? uint64_t{session_threads(options)} * attention_tiles(c).queries() * context : 0);
  st.logits = arena.take<float>(c.vocab_size);
  const auto take_rope_table = [&] {
    return RopeTable{arena.take<float>(batch * half_head), arena.take<float>(batch * half_head),
                     arena.take<double>(half_head)};
  };
  st.rope = take_rope_table();
  st.rope_local = (c.flags & format::kFlagSlidingWindow) != 0 ? take_rope_table() : st.rope;
  if (host_forward && c.position_kind == format::PositionKind::sinusoidal) {
    st.sinusoids = arena.take<float>(context * c.dim);
  }
  if (host_forward && takes_q8_activations(model.view)) {
    uint64_t widest = q_dim > c.dim ? q_dim : c.dim;  // every product's input width
    if (c.ffn_dim > widest) widest = c.ffn_dim;
    st.xq.q = arena.take<int8_t>(batch * widest);
    st.xq.scale = arena.take<float>(batch * widest / kernels::kQuantBlock);
    st.xq.lane_offset = arena.take<int32_t>(batch * widest / kernels::kLaneElements);
    st.xq.lane_sum_scaled = arena.take<float>(batch * widest / kernels::kLaneElements);
    st.xq.block_sum = arena.take<int32_t>(batch * widest / kernels::kQuantBlock);
    st.xq.half_sum = arena.take<int32_t>(batch * widest / kernels::kHalfBlock);
    st.xq.scaled_sum = arena.take<float>(batch * widest / kernels::kQuantBlock);
  }
  KvCache cache{};
  if (!host_forward) kv_elements = kv_scales = 0;
  cache.keys = arena.take<uint8_t>(kv_elements * kv_element_bytes);
  cache.values = arena.take<uint8_t>(kv_elements * kv_element_bytes);
  if (kv_scales > 0) {
    cache.key_scales = arena.take<float>(kv_scales);
    cache.value_scales = arena.take<float>(kv_scales);
  }
  cache.blocks_per_head = static_cast<uint32_t>(blocks_per_head);
  cache.type = &kv_type_row;
  int32_t *history = arena.take<int32_t>(context);
  Candidate *candidates = arena.take<Candidate>(c.vocab_size);
  // An encoder has no logits to check drafts with.
  const uint32_t draft_capacity = format::block_spec(c).encoder ? 0 : options.draft_capacity;
  float *draft_logits = arena.take<float>(draft_capacity == 0 ? 0 : (draft_capacity + uint64_t{1}) * c.vocab_size);
  if (s == nullptr || candidates == nullptr) return nullptr;  // planning, or the arena is short

  new (s) Session{};  // placement: constructs in the arena, allocates nothing
  s->backend = backend;
  s->backend_state = backend_state;
  s->weights.layers = layers;
  s->state = st;
  s->cache = cache;
  s->history = history;
  s->candidates = candidates;
  s->draft_logits = draft_logits;
  s->draft_capacity = draft_capacity;
  return s;
}

namespace {

Matrix bind_matrix(const format::ModelView &view, Role role, uint32_t layer) {
  const format::TensorEntry *t = format::find_tensor(view, role, layer);
  if (t == nullptr) return Matrix{};  // a role the spec does not have (the reader checked which)
  return Matrix{view.bytes + t->offset, weight_type(t->dtype), t->shape[0], t->shape[1],
                weight_row_bytes(static_cast<DType>(t->dtype), t->shape[1])};
}

// Rows [first, first + rows) of a matrix, in place (whole row groups: check_supported).
Matrix row_range(const Matrix &m, uint32_t first, uint32_t rows) {
  return Matrix{static_cast<const uint8_t *>(m.data) + first * m.row_bytes, m.type, rows, m.cols, m.row_bytes};
}

// theta^(-2i / head_dim) for each pair i, divided by its factor where the model has RoPE factors.
// In double: angles up to context * 1 rad must keep float precision after cos/sin.
void rope_frequencies(double *inv_freq, float theta, const float *factors, uint32_t head_dim) {
  for (uint32_t i = 0; i < head_dim / 2; ++i) {
    inv_freq[i] = std::pow(static_cast<double>(theta), -2.0 * i / head_dim);
    if (factors != nullptr) inv_freq[i] /= static_cast<double>(factors[i]);
  }
}

// A vector (f32), or null when the file has no tensor of this role.
const float *bind_vector(const format::ModelView &view, Role role, uint32_t layer) {
  const format::TensorEntry *t = format::find_tensor(view, role, layer);
  return t == nullptr ? nullptr : reinterpret_cast<const float *>(view.bytes + t->offset);
}

Norm bind_norm(const format::ModelView &view, Role weight, Role bias, uint32_t layer) {
  return Norm{bind_vector(view, weight, layer), bind_vector(view, bias, layer)};
}

}  // namespace

void bind_session(Session &s, const Model &model, const mote_session_options &options) {
  const format::ModelView &view = model.view;
  const format::ModelConfig &c = view.config;
  s.model = model;  // a copy: the caller's mote_model may move or go away; only its bytes must stay
  s.spec = format::block_spec(c);
  s.causal = options.bidirectional == 0 && !s.spec.encoder;  // an encoder always sees the whole text
  s.kernels = &kernels::best_kernels();
  s.context_length = options.context_length;
  s.n_threads = session_threads(options);
  s.batch_size = options.batch_size;
  s.on_progress = options.on_progress;
  s.progress_user = options.progress_user;
  Weights &w = s.weights;
  w.token_embedding = bind_matrix(view, Role::token_embedding, format::kNoLayer);
  w.positions = bind_matrix(view, Role::pos_embd, format::kNoLayer);
  w.token_types = bind_vector(view, Role::token_types, format::kNoLayer);
  w.embed_norm = bind_norm(view, Role::embd_norm, Role::embd_norm_bias, format::kNoLayer);
  const uint32_t q_dim = c.n_heads * c.head_dim, kv_dim = c.n_kv_heads * c.head_dim;
  for (uint32_t l = 0; l < c.n_layers; ++l) {
    LayerWeights &lw = w.layers[l];
    lw.attn_norm = bind_norm(view, Role::attn_norm, Role::attn_norm_bias, l);
    if (s.spec.fused_qkv) {
      const Matrix qkv = bind_matrix(view, Role::attn_qkv, l);
      lw.wq = row_range(qkv, 0, q_dim);
      lw.wk = row_range(qkv, q_dim, kv_dim);
      lw.wv = row_range(qkv, q_dim + kv_dim, kv_dim);
      const float *bias = bind_vector(view, Role::attn_qkv_bias, l);
      lw.q_bias = bias;
      lw.k_bias = bias == nullptr ? nullptr : bias + q_dim;
      lw.v_bias = bias == nullptr ? nullptr : bias + q_dim + kv_dim;
    } else {
      lw.wq = bind_matrix(view, Role::attn_q, l);
      lw.wk = bind_matrix(view, Role::attn_k, l);
      lw.wv = bind_matrix(view, Role::attn_v, l);
      lw.q_bias = bind_vector(view, Role::attn_q_bias, l);
      lw.k_bias = bind_vector(view, Role::attn_k_bias, l);
      lw.v_bias = bind_vector(view, Role::attn_v_bias, l);
    }
    lw.wo = bind_matrix(view, Role::attn_output, l);
    lw.o_bias = bind_vector(view, Role::attn_output_bias, l);
    lw.q_norm = bind_vector(view, Role::attn_q_norm, l);
    lw.k_norm = bind_vector(view, Role::attn_k_norm, l);
    lw.post_attn_norm = Norm{bind_vector(view, Role::post_attn_norm, l), nullptr};
    lw.ffn_norm = bind_norm(view, Role::ffn_norm, Role::ffn_norm_bias, l);
    if (s.spec.fused_gate_up) {
      const Matrix gate_up = bind_matrix(view, Role::ffn_gate_up, l);
      lw.ffn_gate = row_range(gate_up, 0, c.ffn_dim);
      lw.ffn_up = row_range(gate_up, c.ffn_dim, c.ffn_dim);
    } else {
      lw.ffn_gate = bind_matrix(view, Role::ffn_gate, l);
      lw.ffn_up = bind_matrix(view, Role::ffn_up, l);
    }
    lw.ffn_down = bind_matrix(view, Role::ffn_down, l);
    lw.gate_bias = bind_vector(view, Role::ffn_gate_bias, l);
    lw.down_bias = bind_vector(view, Role::ffn_down_bias, l);
    lw.up_bias = bind_vector(view, Role::ffn_up_bias, l);
    lw.post_ffn_norm = Norm{bind_vector(view, Role::post_ffn_norm, l), nullptr};
  }
  w.output_norm = bind_norm(view, Role::output_norm, Role::output_norm_bias, format::kNoLayer);
  w.classifier = s.spec.tied_embeddings ? w.token_embedding : bind_matrix(view, Role::output, format::kNoLayer);
  const float *factors = bind_vector(view, Role::rope_freqs, format::kNoLayer);
  rope_frequencies(s.state.rope.inv_freq, c.rope_theta, factors, c.head_dim);
  if (s.state.rope_local.inv_freq != s.state.rope.inv_freq) {
    rope_frequencies(s.state.rope_local.inv_freq, s.spec.rope_theta_local, factors, c.head_dim);
  }
  if (s.state.sinusoids != nullptr) sinusoidal_positions(s.state.sinusoids, s.context_length, c.dim);
  rng_seed(s.rng, 0);
}

}  // namespace mote

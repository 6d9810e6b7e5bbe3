// The Llama forward pass for one token, read top to bottom as llama2.c's: embedding, then per
// layer RMSNorm -> QKV -> RoPE -> attention -> output projection -> residual -> RMSNorm ->
// SwiGLU FFN -> residual, then the final norm and the classifier.
#include <cmath>
#include <cstring>

#include "core/fp16.hpp"
#include "model/model.hpp"

namespace mote {
namespace {

using format::DType;

// Runs fn(i) for i in [0, n), spread over the session's threads. Each i is handled by exactly
// one thread and the work per i never depends on the split, so results are thread-invariant.
template <typename Fn>
void parallel_for(uint32_t n_threads, size_t n, Fn &&fn) {
#if defined(MOTE_OPENMP)
  if (n_threads > 1 && n > 1) {
#pragma omp parallel for num_threads(n_threads) schedule(static)
    for (long i = 0; i < static_cast<long>(n); ++i) fn(static_cast<size_t>(i));
    return;
  }
#else
  (void)n_threads;
#endif
  for (size_t i = 0; i < n; ++i) fn(i);
}

// out = W x, rows split into one contiguous chunk per thread.
void matvec(const Session &s, float *out, const Matrix &w, const float *x) {
  const kernels::KernelTable &k = *s.kernels;
  const size_t chunks = s.n_threads < w.rows ? s.n_threads : w.rows;
  parallel_for(s.n_threads, chunks, [&](size_t chunk) {
    const size_t begin = w.rows * chunk / chunks, end = w.rows * (chunk + 1) / chunks;
    const size_t offset = begin * w.cols;
    if (w.dtype == DType::f16) {
      k.matvec_f16(out + begin, static_cast<const uint16_t *>(w.data) + offset, x, end - begin, w.cols);
    } else {
      k.matvec_f32(out + begin, static_cast<const float *>(w.data) + offset, x, end - begin, w.cols);
    }
  });
}

void embed(float *out, const Matrix &embedding, int32_t token) {
  const size_t row = static_cast<size_t>(token) * embedding.cols;
  if (embedding.dtype == DType::f16) {
    const uint16_t *src = static_cast<const uint16_t *>(embedding.data) + row;
    for (uint32_t i = 0; i < embedding.cols; ++i) out[i] = fp16_to_f32(src[i]);
  } else {
    std::memcpy(out, static_cast<const float *>(embedding.data) + row, embedding.cols * sizeof(float));
  }
}

// Copies this position's key or value into the cache, converting to the cache's dtype.
void store_kv(void *cache, mote_kv_dtype dtype, size_t index, const float *src, size_t n) {
  if (dtype == MOTE_KV_F16) {
    uint16_t *dst = static_cast<uint16_t *>(cache) + index;
    for (size_t i = 0; i < n; ++i) dst[i] = f32_to_fp16(src[i]);
  } else {
    std::memcpy(static_cast<float *>(cache) + index, src, n * sizeof(float));
  }
}

}  // namespace

void forward(Session &s, int32_t token, bool want_logits) {
  const format::ModelConfig &c = s.model->view.config;
  const kernels::KernelTable &k = *s.kernels;
  const Weights &w = s.weights;
  RunState &st = s.state;
  const uint32_t pos = s.position;
  const size_t head_dim = c.head_dim;
  const size_t kv_dim = static_cast<size_t>(c.n_kv_heads) * head_dim;
  const size_t heads_per_kv = c.n_heads / c.n_kv_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  const auto rope = c.rope_layout == static_cast<uint32_t>(format::RopeLayout::split_half)
                        ? k.rope_split_half : k.rope_interleaved;

  embed(st.x, w.token_embedding, token);

  // The rotation angles of this position, shared by every layer and head.
  for (size_t i = 0; i < head_dim / 2; ++i) {
    const double angle = pos * st.rope_inv_freq[i];
    st.rope_cos[i] = static_cast<float>(std::cos(angle));
    st.rope_sin[i] = static_cast<float>(std::sin(angle));
  }

  for (uint32_t l = 0; l < c.n_layers; ++l) {
    const LayerWeights &lw = w.layers[l];

    // Attention: normalize, project, rotate, append k and v to the cache.
    k.rmsnorm(st.xb, st.x, lw.attn_norm, c.dim, c.norm_eps);
    matvec(s, st.q, lw.wq, st.xb);
    matvec(s, st.k, lw.wk, st.xb);
    matvec(s, st.v, lw.wv, st.xb);
    rope(st.q, st.rope_cos, st.rope_sin, c.n_heads, head_dim);
    rope(st.k, st.rope_cos, st.rope_sin, c.n_kv_heads, head_dim);
    const size_t layer_base = static_cast<size_t>(l) * s.context_length * kv_dim;
    store_kv(s.cache.keys, s.cache.dtype, layer_base + pos * kv_dim, st.k, kv_dim);
    store_kv(s.cache.values, s.cache.dtype, layer_base + pos * kv_dim, st.v, kv_dim);

    // Each query head attends over positions [0, pos] of its key/value head.
    parallel_for(s.n_threads, c.n_heads, [&](size_t h) {
      const size_t kv_offset = layer_base + (h / heads_per_kv) * head_dim;
      float *out = st.xb + h * head_dim;
      float *scores = st.att + h * s.context_length;
      const float *q = st.q + h * head_dim;
      if (s.cache.dtype == MOTE_KV_F16) {
        k.attention_f16(out, scores, q, static_cast<const uint16_t *>(s.cache.keys) + kv_offset,
                        static_cast<const uint16_t *>(s.cache.values) + kv_offset, pos + 1, head_dim, kv_dim, scale);
      } else {
        k.attention_f32(out, scores, q, static_cast<const float *>(s.cache.keys) + kv_offset,
                        static_cast<const float *>(s.cache.values) + kv_offset, pos + 1, head_dim, kv_dim, scale);
      }
    });
    matvec(s, st.xb2, lw.wo, st.xb);
    k.add(st.x, st.xb2, c.dim);

    // Feed-forward: w2(silu(w1 x) * w3 x).
    k.rmsnorm(st.xb, st.x, lw.ffn_norm, c.dim, c.norm_eps);
    matvec(s, st.hb, lw.w1, st.xb);
    matvec(s, st.hb2, lw.w3, st.xb);
    k.swiglu(st.hb, st.hb2, c.ffn_dim);
    matvec(s, st.xb2, lw.w2, st.hb);
    k.add(st.x, st.xb2, c.dim);
  }

  s.history[pos] = token;
  s.position = pos + 1;
  if (!want_logits) {
    s.has_logits = false;
    return;
  }
  k.rmsnorm(st.x, st.x, w.output_norm, c.dim, c.norm_eps);
  matvec(s, st.logits, w.classifier, st.x);
  s.has_logits = true;
}

}  // namespace mote

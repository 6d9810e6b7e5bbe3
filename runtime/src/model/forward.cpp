// The forward pass, read top to bottom as llama2.c's: embedding (scaled, plus learned or
// sinusoidal positions and BERT's token type, normalized where the model says), then per layer norm -> QKV (+ biases)
// -> q/k norms -> RoPE -> attention (over a sliding window or all positions) -> output projection -> post-norm ->
// residual -> norm -> FFN (SwiGLU / GeGLU, or GELU / ReLU between two projections) -> post-norm -> residual, then the
// final norm and the classifier. The block spec (format::BlockSpec) picks each step's kind:
// RMSNorm or LayerNorm, pre-norm x + f(norm(x)) or post-norm norm(x + f(x)), sandwich norms,
// biases or none, so Llama, GPT-2, Qwen, Gemma and Phi share every line. It runs a batch of consecutive tokens at once
// (prefill) so each weight is read once per batch, not once per token; decoding is a batch of one.
#include <cmath>
#include <cstring>

#include "model/model.hpp"

namespace mote {
namespace {

// A product's input: the batch's vectors, quantized once into 8-bit blocks when the model has
// weights that take them (q, k and v share one input, as do the gate and up projections).
MatmulInput prepare_input(const Session &s, const float *x, size_t cols, size_t n_tokens) {
  MatmulInput input{x, s.state.xq};
  if (input.q8.q != nullptr) s.kernels->quantize_q8(input.q8, x, cols, n_tokens);
  return input;
}

// One matrix product of a step: the weights and where the outputs go.
struct Product {
  float *out;
  const Matrix &w;
};

size_t round_up(size_t n, size_t multiple) { return (n + multiple - 1) / multiple * multiple; }

// Rows per chunk of one product: about kChunkWork multiply-adds (the leader waits at a step's end
// for no more than one chunk); for prefill also at least kPrefillChunkBytes of rows, but at most
// a quarter of the matrix, so the small ones (k, v) still split.
size_t rows_per_chunk(const Matrix &w, size_t n_tokens) {
  const size_t align = w.type->chunk_rows;
  const size_t rows = Crew::items_per_chunk(w.rows, static_cast<size_t>(w.cols) * n_tokens, align);
  if (n_tokens == 1) return rows;
  const size_t by_bytes = round_up(kPrefillChunkBytes / w.row_bytes, align);
  const size_t quarter = round_up((w.rows + 3) / 4, align);
  const size_t prefill_rows = by_bytes < quarter ? by_bytes : quarter;
  return prefill_rows > rows ? prefill_rows : rows;
}

// out[t] = W x[t] for the batch's n_tokens vectors (token-major), for every product of one
// input (q, k and v; gate and up) as one shared step: chunks of whole kernel tiles (8-row
// groups for the interleaved types) from every matrix, claimed from one counter, so the threads
// meet once per input, not once per matrix. The kernels give each (token, row) the same bits
// whatever the batch or chunk.
template <size_t N>
void matmuls(Session &s, const Product (&products)[N], const MatmulInput &x, size_t n_tokens) {
  size_t per_chunk[N], first_chunk[N + 1] = {0}, work = 0;
  for (size_t i = 0; i < N; ++i) {
    const Matrix &w = products[i].w;
    per_chunk[i] = rows_per_chunk(w, n_tokens);
    first_chunk[i + 1] = first_chunk[i] + (w.rows + per_chunk[i] - 1) / per_chunk[i];
    work += static_cast<size_t>(w.rows) * w.cols * n_tokens;
  }
  s.crew.parallel_for(first_chunk[N], work, [&](size_t chunk) {
    size_t i = 0;
    while (chunk >= first_chunk[i + 1]) ++i;
    const Matrix &w = products[i].w;
    const size_t begin = (chunk - first_chunk[i]) * per_chunk[i];
    const size_t end = begin + per_chunk[i] < w.rows ? begin + per_chunk[i] : w.rows;
    const void *rows = static_cast<const uint8_t *>(w.data) + begin * w.row_bytes;
    w.type->matmul(*s.kernels, products[i].out + begin, w.rows, rows, x, end - begin, w.cols, n_tokens);
  });
}

void matmul(Session &s, float *out, const Matrix &w, const MatmulInput &x, size_t n_tokens) {
  const Product product[] = {{out, w}};
  matmuls(s, product, x, n_tokens);
}

void embed(float *out, const Matrix &embedding, int32_t token) {
  embedding.type->dequantize_row(out, embedding.data, static_cast<size_t>(token), embedding.cols);
}

// out[t] = norm(x[t]) for the batch's rows, by the spec's kind (out may alias x).
void normalize(const Session &s, float *out, const float *x, const Norm &norm, size_t dim, size_t n_tokens) {
  const kernels::KernelTable &k = *s.kernels;
  for (size_t t = 0; t < n_tokens; ++t) {
    if (s.spec.norm == format::NormKind::rmsnorm) {
      k.rmsnorm(out + t * dim, x + t * dim, norm.weight, dim, s.spec.norm_eps);
    } else {
      k.layernorm(out + t * dim, x + t * dim, norm.weight, norm.bias, dim, s.spec.norm_eps);
    }
  }
}

// out[t] += bias for the batch's rows of n outputs; nothing when the spec has no bias.
void add_bias(const Session &s, float *out, const float *bias, size_t n, size_t n_tokens) {
  if (bias == nullptr) return;
  for (size_t t = 0; t < n_tokens; ++t) s.kernels->add(out + t * n, bias, n);
}

// The FFN's hidden activation over n values: the gated ones gate with up; the others map gate alone.
void activate(const Session &s, float *gate, const float *up, size_t n) {
  const kernels::KernelTable &k = *s.kernels;
  switch (s.spec.activation) {
    case format::Activation::swiglu:
      k.swiglu(gate, up, n);
      return;
    case format::Activation::geglu:
      k.geglu(gate, up, n);
      return;
    case format::Activation::gelu:
      k.gelu_tanh(gate, n);
      return;
    case format::Activation::gelu_erf:
      k.gelu_erf(gate, n);
      return;
    case format::Activation::relu:
      k.relu(gate, n);
      return;
  }
}

// Each head of the batch's rows (n_heads heads of head_dim values per token) RMS-normalized in
// place by the one weight vector the heads share; nothing when the spec has no q/k norms.
void normalize_heads(const Session &s, float *x, const float *weight, size_t n_heads, size_t head_dim,
                     size_t n_tokens) {
  if (weight == nullptr) return;
  for (size_t h = 0; h < n_tokens * n_heads; ++h) {
    s.kernels->rmsnorm(x + h * head_dim, x + h * head_dim, weight, head_dim, s.spec.norm_eps);
  }
}

// Token t's position: pos + t, or its place in its own text when the batch holds several.
size_t position_of(const Session &s, TextCursor &texts, size_t pos, size_t t) {
  if (s.text_lengths == nullptr) return pos + t;
  texts.advance_to(t);
  return t - texts.begin;
}

// The rotation angles of the batch's positions under one base, shared by every layer and head.
void rope_angles(const Session &s, const RopeTable &rope, size_t pos, size_t n_tokens, size_t half_head) {
  TextCursor texts(s, n_tokens);
  for (size_t t = 0; t < n_tokens; ++t) {
    const double position = static_cast<double>(position_of(s, texts, pos, t));
    for (size_t i = 0; i < half_head; ++i) {
      const double angle = position * rope.inv_freq[i];
      rope.cos[t * half_head + i] = static_cast<float>(std::cos(angle));
      rope.sin[t * half_head + i] = static_cast<float>(std::sin(angle));
    }
  }
}

// The batch's rows of the residual stream: each token's embedding (scaled, plus its learned or
// sinusoidal position and BERT's token type, normalized where the spec says), and the RoPE
// angles of the batch's positions.
void embed_batch(Session &s, const int32_t *tokens, size_t n_tokens) {
  const kernels::KernelTable &k = *s.kernels;
  const Weights &w = s.weights;
  const format::BlockSpec &spec = s.spec;
  RunState &st = s.state;
  const size_t dim = s.model.view.config.dim, half_head = s.model.view.config.head_dim / 2;
  const float embed_scale = std::sqrt(static_cast<float>(dim));  // Gemma's, computed in float as it does
  TextCursor texts(s, n_tokens);
  for (size_t t = 0; t < n_tokens; ++t) {
    float *x = st.x + t * dim;
    const size_t position = position_of(s, texts, s.position, t);
    embed(x, w.token_embedding, tokens[t]);
    for (size_t i = 0; spec.embed_scale && i < dim; ++i) x[i] *= embed_scale;
    if (spec.positions == format::PositionKind::learned) {
      embed(st.block_out + t * dim, w.positions, static_cast<int32_t>(position));
      k.add(x, st.block_out + t * dim, dim);
    } else if (spec.positions == format::PositionKind::sinusoidal) {
      k.add(x, st.sinusoids + position * dim, dim);
    }
    if (w.token_types != nullptr) k.add(x, w.token_types, dim);
  }
  if (spec.embed_norm) normalize(s, st.x, st.x, w.embed_norm, dim, n_tokens);
  if (spec.positions != format::PositionKind::rope) return;
  rope_angles(s, st.rope, s.position, n_tokens, half_head);
  if (st.rope_local.inv_freq != st.rope.inv_freq) rope_angles(s, st.rope_local, s.position, n_tokens, half_head);
}

// A block's input: the residual stream, normalized first in a pre-norm model, quantized once.
MatmulInput block_input(Session &s, const Norm &norm, size_t n_tokens) {
  const size_t dim = s.model.view.config.dim;
  if (s.spec.post_norm) return prepare_input(s, s.state.x, dim, n_tokens);
  normalize(s, s.state.normed, s.state.x, norm, dim, n_tokens);
  return prepare_input(s, s.state.normed, dim, n_tokens);
}

// x += the block's output (plus its bias, normalized first where the spec has sandwich norms),
// then normalized in a post-norm model.
void add_block_output(Session &s, const float *bias, const Norm &sandwich, const Norm &post, size_t n_tokens) {
  RunState &st = s.state;
  const size_t dim = s.model.view.config.dim;
  add_bias(s, st.block_out, bias, dim, n_tokens);
  if (s.spec.sandwich_norm) normalize(s, st.block_out, st.block_out, sandwich, dim, n_tokens);
  s.kernels->add(st.x, st.block_out, n_tokens * dim);
  if (s.spec.post_norm) normalize(s, st.x, st.x, post, dim, n_tokens);
}

// Where one layer's keys and values lie in the KV cache: head by head, each head's positions in
// order (head-major), so the rows a group of queries attends to are one contiguous stream. With
// the heads interleaved position by position, a 64-wide f16 head's 128-byte row came from every
// 384 bytes (SmolLM2) and decode at depth waited for them: at depth 4096, 1 thread, SmolLM2 f16
// 138-143 -> 163-174 tok/s, q8_0 155-160 -> 177-179, Qwen2.5-Coder-1.5B q8_0 26.6-26.8 -> 28.7-29.1
// (bench/README.md, "the cache head-major"). head(h): the element of head h's position 0; its
// q8_0 scales from scales(h), blocks_per_head a position.
struct LayerCache {
  size_t base, head_elements;      // the layer's first element; a head's elements (context x head_dim)
  size_t scale_base, head_scales;  // the same for the scales (context x blocks_per_head)
  size_t head(size_t h) const { return base + h * head_elements; }
  size_t scales(size_t h) const { return scale_base + h * head_scales; }
};

LayerCache layer_cache(const Session &s, uint32_t layer) {
  const format::ModelConfig &c = s.model.view.config;
  const size_t head_elements = s.context_length * c.head_dim, head_scales = s.context_length * s.cache.blocks_per_head;
  return {static_cast<size_t>(layer) * c.n_kv_heads * head_elements, head_elements,
          static_cast<size_t>(layer) * c.n_kv_heads * head_scales, head_scales};
}

// q, k and v of the batch: projected (plus biases), q and k normalized per head and rotated,
// then the keys and values appended to the layer's cache.
void project_qkv(Session &s, const LayerWeights &lw, const RopeTable &angles, const LayerCache &lc, size_t n_tokens) {
  const format::ModelConfig &c = s.model.view.config;
  RunState &st = s.state;
  const size_t head_dim = c.head_dim, half_head = head_dim / 2;
  const size_t q_dim = c.n_heads * head_dim, kv_dim = c.n_kv_heads * head_dim;
  const Product qkv[] = {{st.q, lw.wq}, {st.k, lw.wk}, {st.v, lw.wv}};
  matmuls(s, qkv, block_input(s, lw.attn_norm, n_tokens), n_tokens);
  add_bias(s, st.q, lw.q_bias, q_dim, n_tokens);
  add_bias(s, st.k, lw.k_bias, kv_dim, n_tokens);
  add_bias(s, st.v, lw.v_bias, kv_dim, n_tokens);
  normalize_heads(s, st.q, lw.q_norm, c.n_heads, head_dim, n_tokens);
  normalize_heads(s, st.k, lw.k_norm, c.n_kv_heads, head_dim, n_tokens);
  const auto rope =
      s.spec.rope_layout == format::RopeLayout::split_half ? s.kernels->rope_split_half : s.kernels->rope_interleaved;
  for (size_t t = 0; s.spec.positions == format::PositionKind::rope && t < n_tokens; ++t) {
    const float *cos = angles.cos + t * half_head, *sin = angles.sin + t * half_head;
    rope(st.q + t * q_dim, cos, sin, c.n_heads, head_dim);
    rope(st.k + t * kv_dim, cos, sin, c.n_kv_heads, head_dim);
  }
  const KvType &kv = *s.cache.type;
  for (size_t h = 0; h < c.n_kv_heads; ++h) {
    for (size_t t = 0; t < n_tokens; ++t) {
      const size_t index = lc.head(h) + (s.position + t) * head_dim;
      const size_t first_scale = lc.scales(h) + (s.position + t) * s.cache.blocks_per_head;
      const size_t from = t * kv_dim + h * head_dim;
      kv.store(s.cache.keys, s.cache.key_scales, index, first_scale, st.k + from, head_dim, head_dim);
      kv.store(s.cache.values, s.cache.value_scales, index, first_scale, st.v + from, head_dim, head_dim);
    }
  }
}

// Each query head attends over positions [first, pos + t] of its key/value head (the last
// sliding_window of them in a windowed layer; encoder mode: the whole batch too; a batch of
// texts: its own text's), into st.normed. One call takes a tile of the heads sharing a key/value
// head and of the batch's tokens (attention_tiles), in the calling thread's score rows.
void attend(Session &s, const LayerCache &lc, bool windowed, size_t n_tokens) {
  const format::ModelConfig &c = s.model.view.config;
  const kernels::KernelTable &k = *s.kernels;
  RunState &st = s.state;
  const size_t pos = s.position, head_dim = c.head_dim;
  const size_t q_dim = c.n_heads * head_dim;
  const size_t heads_per_kv = c.n_heads / c.n_kv_heads;
  const float scale = s.spec.attention_scale;
  const size_t attention_work = 2 * c.n_heads * n_tokens * (pos + n_tokens) * head_dim;  // q.k, then p.v
  const AttentionTiles tiles = attention_tiles(c);
  const size_t head_tiles = (heads_per_kv + tiles.heads - 1) / tiles.heads;
  const size_t token_tiles = (n_tokens + tiles.tokens - 1) / tiles.tokens;
  s.crew.parallel_for(c.n_kv_heads * head_tiles * token_tiles, attention_work, [&](size_t item) {
    const size_t kv_head = item / (head_tiles * token_tiles);
    const size_t h0 = kv_head * heads_per_kv + item / token_tiles % head_tiles * tiles.heads;
    const size_t h_end =
        h0 + tiles.heads < (kv_head + 1) * heads_per_kv ? h0 + tiles.heads : (kv_head + 1) * heads_per_kv;
    const size_t t0 = item % token_tiles * tiles.tokens;
    const size_t t_end = t0 + tiles.tokens < n_tokens ? t0 + tiles.tokens : n_tokens;
    float *rows = st.att + s.crew.worker() * tiles.queries() * s.context_length;
    kernels::AttentionQuery queries[kAttentionQueries];
    size_t n_queries = 0;
    TextCursor text(s, n_tokens);
    for (size_t t = t0; t < t_end; ++t) {
      text.advance_to(t);
      const size_t text_end = s.text_lengths != nullptr ? text.end : pos + n_tokens;
      const size_t end = s.causal ? pos + t + 1 : text_end;
      const size_t text_first = s.text_lengths != nullptr ? text.begin : 0;
      const size_t first = windowed && end > s.spec.sliding_window ? end - s.spec.sliding_window : text_first;
      for (size_t h = h0; h < h_end; ++h, ++n_queries) {
        queries[n_queries] = {st.q + t * q_dim + h * head_dim, st.normed + t * q_dim + h * head_dim,
                              rows + n_queries * s.context_length, first, end};
      }
    }
    const KvSpan span{s.cache.keys,         s.cache.values,     lc.head(kv_head),       s.cache.key_scales,
                      s.cache.value_scales, lc.scales(kv_head), s.cache.blocks_per_head};
    s.cache.type->attend(k, queries, n_queries, span, head_dim, head_dim, scale);
  });
}

// The attention block: q, k, v and the cache; attention; the output projection into the stream.
void attention_block(Session &s, uint32_t layer, size_t n_tokens) {
  const LayerWeights &lw = s.weights.layers[layer];
  const bool windowed = format::windowed_layer(s.spec, layer);
  const LayerCache lc = layer_cache(s, layer);
  project_qkv(s, lw, windowed ? s.state.rope_local : s.state.rope, lc, n_tokens);
  attend(s, lc, windowed, n_tokens);
  const size_t q_dim = static_cast<size_t>(s.model.view.config.n_heads) * s.model.view.config.head_dim;
  matmul(s, s.state.block_out, lw.wo, prepare_input(s, s.state.normed, q_dim, n_tokens), n_tokens);
  add_block_output(s, lw.o_bias, lw.post_attn_norm, lw.attn_norm, n_tokens);
}

// The feed-forward block: down(act(gate x) * up x) when gated, else down(act(up x)) (up is
// GPT-2's c_fc), into the stream.
void ffn_block(Session &s, uint32_t layer, size_t n_tokens) {
  const LayerWeights &lw = s.weights.layers[layer];
  RunState &st = s.state;
  const size_t ffn_dim = s.model.view.config.ffn_dim;
  const MatmulInput ffn_in = block_input(s, lw.ffn_norm, n_tokens);
  if (s.spec.gated_ffn) {
    const Product gate_up[] = {{st.hidden, lw.ffn_gate}, {st.up, lw.ffn_up}};
    matmuls(s, gate_up, ffn_in, n_tokens);
    add_bias(s, st.hidden, lw.gate_bias, ffn_dim, n_tokens);
    add_bias(s, st.up, lw.up_bias, ffn_dim, n_tokens);
  } else {
    matmul(s, st.hidden, lw.ffn_up, ffn_in, n_tokens);
    add_bias(s, st.hidden, lw.up_bias, ffn_dim, n_tokens);
  }
  // Row by row: a row's values then sit in the same SIMD lanes or scalar tail as in a batch of
  // one (the SIMD activations round unlike their scalar twins), so the batch never shows.
  for (size_t t = 0; t < n_tokens; ++t) activate(s, st.hidden + t * ffn_dim, st.up + t * ffn_dim, ffn_dim);
  matmul(s, st.block_out, lw.ffn_down, prepare_input(s, st.hidden, ffn_dim, n_tokens), n_tokens);
  add_block_output(s, lw.down_bias, lw.post_ffn_norm, lw.ffn_norm, n_tokens);
}

// A logit the draft vocabulary left out: below any real one, and finite, so the draft's argmax
// and top probability read it as a token with no chance.
constexpr float kNotClassified = -1e30f;

// Kernel groups of classifier rows per chunk of the draft vocabulary's threads.
constexpr size_t kDraftGroupsPerChunk = 64;

// A drafting session's classifier (Session::draft_vocabulary): into the logits, the rows of the
// most common tokens and of the tokens in the cache, in whole kernel groups; every other logit
// is kNotClassified. Byte-level BPE and SentencePiece vocabularies number their tokens in merge
// order, most frequent first, so the first ids are common text, and a draft that copies the
// context (names, code) copies the cache's tokens. On Qwen2.5-Coder-0.5B the classifier is 36%
// of a decoding step's bytes; 16384 rows are 11% of it. The target checks every draft with its
// whole classifier: the draft vocabulary changes what is drafted, never the text.
void classify_draft_vocabulary(Session &s, const MatmulInput &x) {
  const Matrix &w = s.weights.classifier;
  float *logits = s.state.logits;
  const size_t group = w.type->chunk_rows, common = round_up(s.draft_vocabulary, group);
  // The rows to classify are marked in the logits themselves (0, the others kNotClassified).
  for (size_t i = 0; i < w.rows; ++i) logits[i] = i < common ? 0.0f : kNotClassified;
  for (uint32_t i = 0; i < s.position; ++i) logits[s.history[i]] = 0.0f;
  const size_t n_groups = (w.rows + group - 1) / group;
  const auto marked = [&](size_t g) {
    const size_t end = (g + 1) * group < w.rows ? (g + 1) * group : w.rows;
    for (size_t i = g * group; i < end; ++i) {
      if (logits[i] != kNotClassified) return true;
    }
    return false;
  };
  const size_t n_chunks = (n_groups + kDraftGroupsPerChunk - 1) / kDraftGroupsPerChunk;
  const size_t work = (common + s.position) * static_cast<size_t>(w.cols);
  s.crew.parallel_for(n_chunks, work, [&](size_t chunk) {
    const size_t last = (chunk + 1) * kDraftGroupsPerChunk < n_groups ? (chunk + 1) * kDraftGroupsPerChunk : n_groups;
    for (size_t g = chunk * kDraftGroupsPerChunk; g < last;) {
      if (!marked(g)) {
        ++g;
        continue;
      }
      size_t end = g + 1;  // a run of marked groups, one kernel call
      while (end < last && marked(end)) ++end;
      const size_t begin_row = g * group, end_row = end * group < w.rows ? end * group : w.rows;
      const void *rows = static_cast<const uint8_t *>(w.data) + begin_row * w.row_bytes;
      w.type->matmul(*s.kernels, logits + begin_row, w.rows, rows, x, end_row - begin_row, w.cols, 1);
      g = end;
    }
  });
}

// The rows asked for, normalized and classified as one batch (the kernels give each row the
// bits a batch of one would): into the caller's buffer, or the last row into the logits. An
// encoder has no classifier.
void classify(Session &s, size_t n_tokens, LogitRows rows) {
  RunState &st = s.state;
  if (rows.out == nullptr && rows.first < n_tokens) rows.first = n_tokens - 1;  // s.state.logits holds one row
  s.has_logits = rows.first < n_tokens && !s.spec.encoder;
  if (!s.has_logits) return;
  const size_t dim = s.model.view.config.dim, vocab = s.model.view.config.vocab_size;
  const size_t n_rows = n_tokens - rows.first;
  float *first_row = st.x + rows.first * dim;
  if (!s.spec.post_norm) normalize(s, first_row, first_row, s.weights.output_norm, dim, n_rows);
  s.partial_logits = s.draft_vocabulary > 0 && s.draft_vocabulary < vocab && rows.out == nullptr && n_rows == 1;
  if (s.partial_logits) {
    classify_draft_vocabulary(s, prepare_input(s, first_row, dim, n_rows));
    return;
  }
  matmul(s, rows.out != nullptr ? rows.out : st.logits, s.weights.classifier, prepare_input(s, first_row, dim, n_rows),
         n_rows);
  if (rows.out != nullptr) std::memcpy(st.logits, rows.out + (n_rows - 1) * vocab, vocab * sizeof(float));
}

// One batch of consecutive tokens through the model, as llama2.c reads: embed; per layer an
// attention block and a feed-forward block; then the position moves on and the rows asked for
// are classified.
void forward_pass(Session &s, const int32_t *tokens, size_t n_tokens, LogitRows rows) {
  embed_batch(s, tokens, n_tokens);
  for (uint32_t layer = 0; layer < s.model.view.config.n_layers; ++layer) {
    attention_block(s, layer, n_tokens);
    ffn_block(s, layer, n_tokens);
  }
  for (size_t t = 0; t < n_tokens; ++t) s.history[s.position + t] = tokens[t];
  s.position = static_cast<uint32_t>(s.position + n_tokens);
  classify(s, n_tokens, rows);
}

}  // namespace

void forward(Session &s, const int32_t *tokens, size_t n_tokens, LogitRows rows) {
  // The pass's largest step and whole work (multiply-adds) decide whether threads are worth
  // starting at all (tiny models: never).
  const format::ModelConfig &c = s.model.view.config;
  const size_t dim = c.dim, ffn_dim = c.ffn_dim;
  const size_t q_dim = static_cast<size_t>(c.n_heads) * c.head_dim,
               kv_dim = static_cast<size_t>(c.n_kv_heads) * c.head_dim;
  const size_t classifier = (n_tokens - rows.first) * c.vocab_size * dim;
  const size_t attention = 2 * q_dim * n_tokens * (s.position + n_tokens);
  size_t largest = n_tokens * ffn_dim * dim;
  if (n_tokens * q_dim * dim > largest) largest = n_tokens * q_dim * dim;
  if (classifier > largest) largest = classifier;
  if (attention > largest) largest = attention;
  const size_t per_layer = n_tokens * dim * (2 * q_dim + 2 * kv_dim + (s.spec.gated_ffn ? 3 : 2) * ffn_dim) + attention;
  const size_t total = c.n_layers * per_layer + classifier;
  s.crew.run(s.n_threads, n_tokens, largest, total, [&] { forward_pass(s, tokens, n_tokens, rows); });
}

void pool_hidden(Session &s, size_t n_tokens, mote_pool pool, float *out) {
  const size_t dim = s.model.view.config.dim;
  if (!s.spec.post_norm) normalize(s, s.state.x, s.state.x, s.weights.output_norm, dim, n_tokens);
  TextCursor text(s, n_tokens);
  for (size_t i = 0; i < text.n_texts; ++i, out += dim) {
    if (i > 0) text.advance_to(text.end);  // to text i
    const float *rows = s.state.x + text.begin * dim;
    const size_t n = text.end - text.begin;
    if (pool != MOTE_POOL_MEAN) {
      std::memcpy(out, rows + (pool == MOTE_POOL_LAST ? n - 1 : 0) * dim, dim * sizeof(float));
      continue;
    }
    for (size_t d = 0; d < dim; ++d) {
      float sum = 0.0f;
      for (size_t t = 0; t < n; ++t) sum += rows[t * dim + d];
      out[d] = sum / static_cast<float>(n);
    }
  }
}

}  // namespace mote

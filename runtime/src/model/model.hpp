// The loaded model, the weights bound to it, and a session's state: plain structs of pointers
// into the model bytes and the arena, as llama2.c's Config / TransformerWeights / RunState.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "core/arena.hpp"
#include "core/status.hpp"
#include "format/reader.hpp"
#include "kernels/kernels.hpp"
#include "model/backend.hpp"
#include "model/kv_types.hpp"
#include "model/parallel.hpp"
#include "model/weight_types.hpp"
#include "mote/mote.h"
#include "sample/sampler.hpp"

namespace mote {

// What lives inside mote_model's opaque storage.
struct Model {
  uint32_t tag;  // kModelTag once opened, so a zeroed or stale mote_model is caught
  format::ModelView view;
};
constexpr uint32_t kModelTag = 0x4D4F5445u;

// The Model inside a caller's mote_model, or null when it is null or was never opened.
inline const Model *model_of(const mote_model *m) {
  if (m == nullptr) return nullptr;
  const Model *model = reinterpret_cast<const Model *>(m->opaque_);
  return model->tag == kModelTag ? model : nullptr;
}

// A matrix in the model bytes, used in place: (rows, cols) row-major, rows of whole blocks.
struct Matrix {
  const void *data;
  const WeightType *type;
  uint32_t rows, cols;
  size_t row_bytes;
};

// A norm's parameters: LayerNorm's bias is null when the spec has none (RMSNorm never has one).
struct Norm {
  const float *weight;  // (dim)
  const float *bias;    // (dim) or null
};

// Optional vectors (biases, q/k norms) are null when the block spec has none. A fused QKV matrix
// is bound as three row ranges of itself, a fused gate/up matrix as two, so the pass never knows
// the difference.
struct LayerWeights {
  Norm attn_norm;
  Matrix wq;                                       // (n_heads * head_dim, dim)
  Matrix wk;                                       // (n_kv_heads * head_dim, dim)
  Matrix wv;                                       // (n_kv_heads * head_dim, dim)
  Matrix wo;                                       // (dim, n_heads * head_dim)
  const float *q_bias, *k_bias, *v_bias, *o_bias;  // (q_dim), (kv_dim), (kv_dim), (dim)
  const float *q_norm, *k_norm;                    // (head_dim) each, shared by the heads
  Norm post_attn_norm;                             // sandwich norms only
  Norm ffn_norm;
  Matrix ffn_gate;                               // (ffn_dim, dim) gated FFNs only
  Matrix ffn_down;                               // (dim, ffn_dim)
  Matrix ffn_up;                                 // (ffn_dim, dim) (GPT-2's c_fc)
  const float *gate_bias, *down_bias, *up_bias;  // (ffn_dim), (dim), (ffn_dim)
  Norm post_ffn_norm;
};

struct Weights {
  Matrix token_embedding;    // (vocab, dim)
  Matrix positions;          // (max_seq_len, dim) learned positions only
  const float *token_types;  // (dim) segment 0's vector, or null
  Norm embed_norm;           // the embeddings' norm (BERT), or a null weight
  LayerWeights *layers;      // (n_layers), in the arena
  Norm output_norm;          // absent (null weight) in post-norm models
  Matrix classifier;         // (vocab, dim); the embedding when tied; none in an encoder
};

// RoPE's angles for the batch's positions under one base: every layer shares them, except the
// windowed layers of a model whose windows rotate with their own base (Gemma 3).
struct RopeTable {
  float *cos;        // (batch, head_dim / 2)
  float *sin;        // (batch, head_dim / 2)
  double *inv_freq;  // (head_dim / 2) theta^(-2i / head_dim), divided by rope_freqs' factor
};

// The current wave of activations, for up to batch_size tokens at once (token-major: row t of
// x is token t's residual stream). Decoding uses row 0 only.
struct RunState {
  float *x;                   // (batch, dim) the residual stream
  float *normed;              // (batch, max(dim, q_dim)) a block's normalized input; the attention's output reuses it
  float *block_out;           // (batch, dim) a block's output before the residual add
  float *hidden;              // (batch, ffn_dim) the FFN's gate (or, ungated, up) projection, then its activated values
  float *up;                  // (batch, ffn_dim) the FFN's up projection (gated FFNs)
  float *q;                   // (batch, n_heads * head_dim)
  float *k;                   // (batch, n_kv_heads * head_dim) keys before they enter the cache
  float *v;                   // (batch, n_kv_heads * head_dim)
  float *att;                 // (n_threads, attention_tiles' queries, context) each thread's score rows
  float *logits;              // (vocab) of the last token
  kernels::Q8Activations xq;  // (batch, max(dim, q_dim, ffn_dim)) a product's input in 8-bit blocks,
                              // planned only when some weight type takes them (else null)
  float *sinusoids;           // (context, dim) sinusoidal positions only: PE(pos) as FORMAT.md defines it
  RopeTable rope;             // the global layers' (every layer's, without windows)
  RopeTable rope_local;       // the windowed layers' own base; equal to rope (same pointers) otherwise
};

struct KvCache {
  void *keys;                // (n_layers, n_kv_heads, context, head_dim) of f32, f16 or int8: head-major
  void *values;              // same
  float *key_scales;         // q8_0 only: (n_layers, n_kv_heads, context, blocks_per_head) per 32-block
  float *value_scales;       // same
  uint32_t blocks_per_head;  // ceil(head_dim / 32)
  const KvType *type;        // the cache type's row, bound once per session
};

// What the last mote_generate on a session did (mote_generate_stats).
struct GenerateTotals {
  uint64_t generated = 0;  // tokens passed to on_token
  uint64_t passes = 0;     // forward passes of the target model while generating
  uint64_t drafted = 0;    // drafted tokens checked
  uint64_t accepted = 0;   // drafted tokens kept
};

struct Session {
  Model model;             // the validated view, copied: sessions depend on the model bytes only
  const Backend *backend;  // where the forward pass runs
  void *backend_state;     // the backend's own state, in the arena (null for the CPU)
  format::BlockSpec spec;  // what each step of the forward pass does
  bool causal;             // false: encoder mode, every token of a batch sees the whole batch
  const kernels::KernelTable *kernels;
  Weights weights;
  RunState state;
  KvCache cache;
  uint32_t context_length;
  uint32_t position;  // tokens in the cache
  uint32_t n_threads;
  Crew crew;              // the threads of a forward pass
  uint32_t batch_size;    // tokens one prefill step runs through the weights together
  int32_t *history;       // (context) the tokens in the cache, for the repetition penalty
  Candidate *candidates;  // (vocab) sampler scratch
  // ((draft_capacity + 1) x vocab) the logits of a generation step's sampled and drafted tokens
  float *draft_logits;
  uint32_t draft_capacity;
  // While the session drafts for another's generation (its draft model): the classifier computes
  // the first draft_vocabulary rows and those of the tokens in the cache only (forward.cpp's
  // classify_draft_vocabulary; 0: every row), and partial_logits says the last logits are so.
  uint32_t draft_vocabulary = 0;
  bool partial_logits = false;
  GenerateTotals generate_totals;
  Rng rng;
  mote_on_progress on_progress;  // the options' callback (null: none) and its user pointer
  void *progress_user;
  // mote_embed_batch's texts, one after another in the step's batch (null: the batch is one text
  // continuing the cache): each token sees only its own text, whose positions start at 0.
  const uint32_t *text_lengths;
  size_t n_texts;
  bool has_logits;
  char error[256];
  // 1 while a call runs on the session: an overlapping one gets MOTE_ERR_BUSY (see SessionGuard).
  std::atomic<uint32_t> in_use{0};
};

// A word-sized exchange must be one instruction sequence (x86, ARMv7-M's LDREX/STREX, RISC-V's
// A extension): a libatomic call would take a lock, which bare metal has not got.
static_assert(std::atomic<uint32_t>::is_always_lock_free, "the session's in-use flag needs lock-free atomics");

// Holds a session's in-use flag for one C API call: the first call takes it, an overlapping one
// (another thread, or a callback of mote_generate) does not and is refused without touching the
// session. Released when the call returns.
class SessionGuard {
 public:
  explicit SessionGuard(const mote_session *session)
      : session_(session == nullptr ? nullptr : static_cast<Session *>(session->impl_)),
        held_(session_ != nullptr && session_->in_use.exchange(1, std::memory_order_acquire) == 0) {}
  ~SessionGuard() {
    if (held_) session_->in_use.store(0, std::memory_order_release);
  }
  SessionGuard(const SessionGuard &) = delete;
  SessionGuard &operator=(const SessionGuard &) = delete;

  // The session, or null when there is none or another call holds it.
  Session *session() const { return held_ ? session_ : nullptr; }
  // What the call returns when session() is null.
  Status refusal() const { return session_ == nullptr ? MOTE_ERR_INVALID_ARGUMENT : MOTE_ERR_BUSY; }

 private:
  Session *session_;
  bool held_;
};

// Rejects valid files this build cannot run (a weight dtype without kernels, a fused QKV
// matrix that cannot be split at whole row groups).
Status check_supported(const format::ModelView &view, ErrorSink err);

// Lays the session out in an arena (base null: only counts). Used by mote_arena_size and
// mote_session_init so the two can never disagree. Returns the session or null when planning.
Session *plan_session(ArenaPlanner &arena, const Model &model, const mote_session_options &options);

// Binds the weights to the model bytes and fills the constant tables; after plan_session.
void bind_session(Session &s, const Model &model, const mote_session_options &options);

// After forward(s, tokens, n_tokens, false): the batch's final hidden states (final norm applied
// in place, where the spec has one), each text's (s.text_lengths; without them the batch is one
// text) pooled into out (dim floats a text).
void pool_hidden(Session &s, size_t n_tokens, mote_pool pool, float *out);

// The queries one call of a cache type's attend takes: `heads` of the query heads sharing a
// key/value head, for `tokens` tokens of a batch, so each block of keys and values is read from
// memory once for all of them, not once per head and token (the others read it from L1).
struct AttentionTiles {
  size_t heads, tokens;
  size_t queries() const { return heads * tokens; }
};
constexpr size_t kAttentionQueries = 32;  // at most, per call (their score rows are scratch)
constexpr size_t kAttentionTokens = 4;
inline AttentionTiles attention_tiles(const format::ModelConfig &c) {
  const size_t group = c.n_heads / c.n_kv_heads;
  const size_t heads = group < kAttentionQueries ? group : kAttentionQueries;
  const size_t tokens = kAttentionQueries / heads < kAttentionTokens ? kAttentionQueries / heads : kAttentionTokens;
  return {heads, tokens};
}

// Walks a batch's texts in order: token t lies in [begin, end), the batch rows of its text
// (one text of n_tokens when the session has no text lengths).
struct TextCursor {
  const uint32_t *lengths;
  size_t n_texts, index = 0, begin = 0, end;
  TextCursor(const Session &s, size_t n_tokens)
      : lengths(s.text_lengths),
        n_texts(s.text_lengths != nullptr ? s.n_texts : 1),
        end(s.text_lengths != nullptr ? s.text_lengths[0] : n_tokens) {}
  void advance_to(size_t t) {
    while (t >= end && index + 1 < n_texts) {
      begin = end;
      end += lengths[++index];
    }
  }
};

// PE(pos, 2i) = sin(pos / 10000^(2i / dim)), PE(pos, 2i + 1) = cos(...) for pos < n_pos, into
// table (n_pos, dim); dim even. Computed in double, stored as float.
void sinusoidal_positions(float *table, size_t n_pos, size_t dim);

// Which rows of a forward step get logits: rows [first, n_tokens) of the step. The last row's
// land in s.state.logits; with out, every one's goes to out ((n_tokens - first) x vocab, row
// after row, the classifier run over them as one batch). first == n_tokens: none (a prefill's
// steps before its last).
struct LogitRows {
  size_t first;
  float *out;
  static LogitRows last(size_t n_tokens) { return LogitRows{n_tokens - 1, nullptr}; }
  static LogitRows none(size_t n_tokens) { return LogitRows{n_tokens, nullptr}; }
};

// Runs n_tokens (1..batch_size) tokens at s.position through the model, appending them to the
// KV cache, with the logits of rows (prefill skips them for all but its final step). The caller
// checked the tokens and the remaining capacity.
void forward(Session &s, const int32_t *tokens, size_t n_tokens, LogitRows rows);

}  // namespace mote

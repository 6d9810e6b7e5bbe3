// The CUDA backend's row of the backend table (model/backend.hpp): the Llama block (RMSNorm,
// RoPE in either layout, SwiGLU, grouped-query attention) on an NVIDIA GPU, read top to bottom
// as forward.cpp. Device memory is two allocations: the weights (the file's tensor bytes,
// unchanged) and one per session, laid out by the arena planner (count, then place) so its size
// is exact. Decoding replays one captured CUDA graph per token; the step's position and tokens
// live in device memory, so the graph is the same for every position.
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstring>
#include <new>

#include "cuda_kernels.hpp"
#include "model/model.hpp"
#include "mote/mote_cuda.h"

namespace mote::cuda {
namespace {

constexpr uint32_t kDeviceModelTag = 0x41445543u;  // "CUDA"
constexpr uint32_t kSplitFrom = 1024;              // contexts from this long split attention (flash-decoding)
constexpr uint32_t kSplitPositions = 256;          // positions per split

// What a mote_cuda_model holds: the device copy of the file's tensor region [begin, end).
struct DeviceWeights {
  uint32_t tag;
  uint8_t *base;
  const uint8_t *host_begin;  // the model bytes at begin
  uint64_t bytes;
};
static_assert(sizeof(DeviceWeights) <= sizeof(mote_cuda_model::opaque_), "DeviceWeights must fit");

struct DeviceLayer {
  const float *attn_norm, *ffn_norm;  // (dim)
  DeviceMatrix wq, wk, wv, wo, w1, w2, w3;
};

// The session's device allocation, as pointers (token-major rows of batch tokens).
struct DeviceState {
  float *x, *xb, *xb2, *hb, *hb2, *q, *k, *v;  // as RunState's
  float *scores;                               // (batch, n_heads, context)
  float *partial;                              // (batch, n_heads, n_splits, head_dim + 2)
  float *logits;                               // (vocab)
  void *keys, *values;                         // (n_layers, context, kv_dim) f32 or f16
  double *inv_freq;                            // (head_dim / 2)
  int32_t *step;                               // [0] the step's first position, [1..] its tokens
  int32_t *argmax;                             // the greedy token of the logits
};

// Lives in the host arena (Session::backend_state), followed by the layers.
struct CudaSession {
  mote_cuda_model own_weights;  // when the options gave no device model
  const DeviceWeights *weights;
  bool owns_weights;
  void *device_block;
  uint64_t device_bytes;
  DeviceState d;
  DeviceMatrix embedding, classifier;
  const float *output_norm;
  DeviceLayer *layers;  // (n_layers)
  uint32_t n_splits;
  cudaStream_t stream;
  cudaGraph_t graph;
  cudaGraphExec_t graph_exec;
  bool use_graphs;
  int32_t upload[1 + MOTE_MAX_BATCH];  // staging for d.step
  int32_t argmax;
};

size_t round_up(size_t n) { return (n + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment; }

Status device_fail(ErrorSink err, cudaError_t e, const char *what) {
  return fail(err, MOTE_ERR_DEVICE, "CUDA %s failed: %s", what, cudaGetErrorString(e));
}

#define MOTE_CUDA_TRY(call, what)                               \
  do {                                                          \
    const cudaError_t e_ = (call);                              \
    if (e_ != cudaSuccess) return device_fail(err, e_, (what)); \
  } while (0)

CudaSession *state_of(const Session &s) { return static_cast<CudaSession *>(s.backend_state); }

// The file's tensor region: [*begin, *end) covers every tensor.
void tensor_region(const format::ModelView &view, uint64_t *begin, uint64_t *end) {
  *begin = view.n_tensors > 0 ? UINT64_MAX : 0;
  *end = 0;
  for (uint32_t i = 0; i < view.n_tensors; ++i) {
    const format::TensorEntry &t = view.tensors[i];
    if (t.offset < *begin) *begin = t.offset;
    if (t.offset + t.size > *end) *end = t.offset + t.size;
  }
}

Status check_runs_here(const Model &model, const mote_session_options &options, ErrorSink err) {
  const format::BlockSpec spec = format::block_spec(model.view.config);
  if (spec.norm != format::NormKind::rmsnorm || spec.positions != format::PositionKind::rope ||
      spec.activation != format::Activation::swiglu || spec.qkv_bias || spec.output_bias || spec.ffn_bias ||
      spec.post_norm || spec.encoder || spec.embed_norm || spec.token_types || spec.qk_norm || spec.sandwich_norm || spec.embed_scale || spec.rope_factors ||
      spec.sliding_window != 0 || (model.view.config.flags & format::kFlagAttentionScale) != 0) {
    return fail(err, MOTE_ERR_UNSUPPORTED,
                "the CUDA backend runs the Llama block (RMSNorm, RoPE, SwiGLU, no biases); this model's is another");
  }
  if (options.kv_dtype != MOTE_KV_F32 && options.kv_dtype != MOTE_KV_F16) {
    return fail(err, MOTE_ERR_UNSUPPORTED, "the CUDA backend keeps an f32 or f16 KV cache, not q8_0");
  }
  for (uint32_t i = 0; i < model.view.n_tensors; ++i) {
    const format::TensorEntry &t = model.view.tensors[i];
    if (!dtype_supported(t.dtype)) {
      char name[48];
      format::tensor_name(t, name, sizeof name);
      return fail(err, MOTE_ERR_UNSUPPORTED, "tensor '%s' is %s, which the CUDA backend does not run", name,
                  format::dtype_traits(t.dtype)->name);
    }
  }
  return MOTE_OK;
}

uint32_t splits_for(uint32_t context) {
  return context < kSplitFrom ? 1 : (context + kSplitPositions - 1) / kSplitPositions;
}

// Lays out a session's device allocation (base null: only counts).
void plan_device(ArenaPlanner &arena, const format::ModelConfig &c, const mote_session_options &options,
                 DeviceState *d) {
  const uint64_t batch = options.batch_size, context = options.context_length;
  const uint64_t q_dim = static_cast<uint64_t>(c.n_heads) * c.head_dim;
  const uint64_t kv_dim = static_cast<uint64_t>(c.n_kv_heads) * c.head_dim;
  const uint64_t kv_bytes = c.n_layers * context * kv_dim * (options.kv_dtype == MOTE_KV_F16 ? 2 : 4);
  d->x = arena.take<float>(batch * c.dim);
  d->xb = arena.take<float>(batch * (q_dim > c.dim ? q_dim : c.dim));
  d->xb2 = arena.take<float>(batch * c.dim);
  d->hb = arena.take<float>(batch * c.ffn_dim);
  d->hb2 = arena.take<float>(batch * c.ffn_dim);
  d->q = arena.take<float>(batch * q_dim);
  d->k = arena.take<float>(batch * kv_dim);
  d->v = arena.take<float>(batch * kv_dim);
  d->scores = arena.take<float>(batch * c.n_heads * context);
  d->partial = arena.take<float>(batch * c.n_heads * splits_for(options.context_length) * (c.head_dim + 2));
  d->logits = arena.take<float>(c.vocab_size);
  d->keys = arena.take<uint8_t>(kv_bytes);
  d->values = arena.take<uint8_t>(kv_bytes);
  d->inv_freq = arena.take<double>(c.head_dim / 2);
  d->step = arena.take<int32_t>(1 + batch);
  d->argmax = arena.take<int32_t>(1);
}

uint64_t device_session_bytes(const format::ModelConfig &c, const mote_session_options &options) {
  ArenaPlanner planner(nullptr, 0);
  DeviceState d{};
  plan_device(planner, c, options, &d);
  return planner.overflowed() ? 0 : planner.used();
}

size_t cuda_host_bytes(const Model &model, const mote_session_options &) {
  return round_up(sizeof(CudaSession)) + static_cast<size_t>(model.view.config.n_layers) * sizeof(DeviceLayer);
}

Status cuda_device_memory(const Model &model, const mote_session_options &options, uint64_t *weight_bytes,
                          uint64_t *session_bytes, ErrorSink err) {
  const Status status = check_runs_here(model, options, err);
  if (status != MOTE_OK) return status;
  uint64_t begin = 0, end = 0;
  tensor_region(model.view, &begin, &end);
  *weight_bytes = end - begin;
  *session_bytes = device_session_bytes(model.view.config, options);
  if (*session_bytes == 0) return fail(err, MOTE_ERR_INVALID_ARGUMENT, "the session's device memory overflows");
  return MOTE_OK;
}

Status upload(const Model &model, DeviceWeights *w, ErrorSink err) {
  uint64_t begin = 0, end = 0;
  tensor_region(model.view, &begin, &end);
  *w = DeviceWeights{};
  void *base = nullptr;
  MOTE_CUDA_TRY(cudaMalloc(&base, end - begin), "cudaMalloc of the weights");
  // A copy from pageable memory may still be in flight when cudaMemcpy returns, and sessions'
  // streams do not wait for the default stream: wait for it here, once.
  cudaError_t copied = cudaMemcpy(base, model.view.bytes + begin, end - begin, cudaMemcpyHostToDevice);
  if (copied == cudaSuccess) copied = cudaDeviceSynchronize();
  if (copied != cudaSuccess) {
    cudaFree(base);
    return device_fail(err, copied, "copying the weights to the device");
  }
  *w = DeviceWeights{kDeviceModelTag, static_cast<uint8_t *>(base), model.view.bytes + begin, end - begin};
  return MOTE_OK;
}

void free_weights(DeviceWeights *w) {
  if (w->tag == kDeviceModelTag && w->base != nullptr) cudaFree(w->base);
  *w = DeviceWeights{};
}

// The device twin of a matrix bound in the model bytes (fused QKV ranges included).
DeviceMatrix on_device(const DeviceWeights &w, const Matrix &m) {
  const uint8_t *host = static_cast<const uint8_t *>(m.data);
  const uint32_t dtype = m.type == nullptr ? 0 : static_cast<uint32_t>(m.type->dtype);
  return DeviceMatrix{w.base + (host - w.host_begin), dtype, m.rows, m.cols, m.row_bytes};
}

const float *on_device(const DeviceWeights &w, const float *host) {
  return reinterpret_cast<const float *>(w.base + (reinterpret_cast<const uint8_t *>(host) - w.host_begin));
}

void cuda_release(Session &s) {
  CudaSession *c = state_of(s);
  if (c == nullptr) return;
  if (c->graph_exec != nullptr) cudaGraphExecDestroy(c->graph_exec);
  if (c->graph != nullptr) cudaGraphDestroy(c->graph);
  if (c->stream != nullptr) cudaStreamDestroy(c->stream);
  if (c->device_block != nullptr) cudaFree(c->device_block);
  if (c->owns_weights) free_weights(reinterpret_cast<DeviceWeights *>(c->own_weights.opaque_));
  c->~CudaSession();
  s.backend_state = nullptr;
}

Status take_resources(Session &s, CudaSession &c, const mote_session_options &options, ErrorSink err) {
  const format::ModelConfig &cfg = s.model.view.config;
  if (options.device_model != nullptr) {
    const DeviceWeights *shared =
        reinterpret_cast<const DeviceWeights *>(static_cast<const mote_cuda_model *>(options.device_model)->opaque_);
    uint64_t begin = 0, end = 0;
    tensor_region(s.model.view, &begin, &end);
    if (shared->tag != kDeviceModelTag || shared->host_begin != s.model.view.bytes + begin ||
        shared->bytes != end - begin) {
      return fail(err, MOTE_ERR_INVALID_ARGUMENT, "the device model was not uploaded from this model");
    }
    c.weights = shared;
  } else {
    DeviceWeights *own = reinterpret_cast<DeviceWeights *>(c.own_weights.opaque_);
    const Status status = upload(s.model, own, err);
    if (status != MOTE_OK) return status;
    c.owns_weights = true;
    c.weights = own;
  }
  MOTE_CUDA_TRY(cudaStreamCreateWithFlags(&c.stream, cudaStreamNonBlocking), "cudaStreamCreate");
  c.device_bytes = device_session_bytes(cfg, options);
  MOTE_CUDA_TRY(cudaMalloc(&c.device_block, c.device_bytes), "cudaMalloc of the session");
  ArenaPlanner planner(c.device_block, c.device_bytes);
  plan_device(planner, cfg, options, &c.d);
  // On the session's stream, which does not wait for the default one; then waited for.
  MOTE_CUDA_TRY(cudaMemcpyAsync(c.d.inv_freq, s.state.rope.inv_freq, cfg.head_dim / 2 * sizeof(double),
                                cudaMemcpyHostToDevice, c.stream),
                "copying the RoPE frequencies");
  MOTE_CUDA_TRY(cudaStreamSynchronize(c.stream), "copying the RoPE frequencies");
  return MOTE_OK;
}

Status cuda_init(Session &s, const mote_session_options &options, ErrorSink err) {
  Status status = check_runs_here(s.model, options, err);
  if (status != MOTE_OK) return status;
  int devices = 0;
  const cudaError_t counted = cudaGetDeviceCount(&devices);
  if (counted != cudaSuccess || devices == 0) {
    return fail(err, MOTE_ERR_UNSUPPORTED, "no CUDA device: %s",
                counted != cudaSuccess ? cudaGetErrorString(counted) : "none found");
  }
  CudaSession *c = new (s.backend_state) CudaSession{};  // placement: in the host arena
  c->layers = reinterpret_cast<DeviceLayer *>(static_cast<uint8_t *>(s.backend_state) + round_up(sizeof(CudaSession)));
  c->use_graphs = true;
  c->n_splits = splits_for(s.context_length);
  c->argmax = -1;
  status = take_resources(s, *c, options, err);
  if (status != MOTE_OK) {
    cuda_release(s);
    return status;
  }
  const DeviceWeights &w = *c->weights;
  c->embedding = on_device(w, s.weights.token_embedding);
  c->classifier = on_device(w, s.weights.classifier);
  c->output_norm = on_device(w, s.weights.output_norm.weight);
  for (uint32_t l = 0; l < s.model.view.config.n_layers; ++l) {
    const LayerWeights &lw = s.weights.layers[l];
    c->layers[l] = DeviceLayer{on_device(w, lw.attn_norm.weight),
                               on_device(w, lw.ffn_norm.weight),
                               on_device(w, lw.wq),
                               on_device(w, lw.wk),
                               on_device(w, lw.wv),
                               on_device(w, lw.wo),
                               on_device(w, lw.ffn_gate),
                               on_device(w, lw.ffn_down),
                               on_device(w, lw.ffn_up)};
  }
  return MOTE_OK;
}

// Enqueues the forward pass of n_tokens tokens whose position and ids are in d.step (no copies,
// no synchronization: the same calls run directly or under graph capture).
Status enqueue_forward(const Session &s, const CudaSession &c, uint32_t n_tokens, bool want_logits, ErrorSink err) {
  const format::ModelConfig &cfg = s.model.view.config;
  const DeviceState &d = c.d;
  const cudaStream_t stream = c.stream;
  const uint32_t dim = cfg.dim, ffn_dim = cfg.ffn_dim, head_dim = cfg.head_dim;
  const uint32_t kv_dim = cfg.n_kv_heads * head_dim;
  const float eps = s.spec.norm_eps;
  const bool f16 = s.cache.type->dtype == MOTE_KV_F16;
  const size_t layer_bytes = static_cast<size_t>(s.context_length) * kv_dim * (f16 ? 2 : 4);
  const bool split_half = s.spec.rope_layout == format::RopeLayout::split_half;

  MOTE_CUDA_TRY(embed(stream, d.x, c.embedding, d.step + 1, n_tokens), "embed");
  for (uint32_t l = 0; l < cfg.n_layers; ++l) {
    const DeviceLayer &lw = c.layers[l];
    void *keys = static_cast<uint8_t *>(d.keys) + l * layer_bytes;
    void *values = static_cast<uint8_t *>(d.values) + l * layer_bytes;
    // Attention: normalize, project, rotate, append to the cache, attend, project back, add.
    MOTE_CUDA_TRY(rmsnorm(stream, d.xb, d.x, lw.attn_norm, dim, eps, n_tokens), "rmsnorm");
    MOTE_CUDA_TRY(matmul(stream, d.q, lw.wq, d.xb, n_tokens), "matmul q");
    MOTE_CUDA_TRY(matmul(stream, d.k, lw.wk, d.xb, n_tokens), "matmul k");
    MOTE_CUDA_TRY(matmul(stream, d.v, lw.wv, d.xb, n_tokens), "matmul v");
    MOTE_CUDA_TRY(
        rope(stream, d.q, d.k, d.inv_freq, d.step, cfg.n_heads, cfg.n_kv_heads, head_dim, split_half, n_tokens),
        "rope");
    MOTE_CUDA_TRY(store_kv(stream, keys, f16, d.k, d.step, kv_dim, n_tokens), "store keys");
    MOTE_CUDA_TRY(store_kv(stream, values, f16, d.v, d.step, kv_dim, n_tokens), "store values");
    const AttentionArgs attention_args{d.xb,
                                       d.q,
                                       keys,
                                       values,
                                       f16,
                                       d.scores,
                                       d.partial,
                                       d.step,
                                       n_tokens,
                                       cfg.n_heads,
                                       cfg.n_kv_heads,
                                       head_dim,
                                       s.context_length,
                                       c.n_splits,
                                       s.causal,
                                       1.0f / std::sqrt(static_cast<float>(head_dim))};
    MOTE_CUDA_TRY(attention(stream, attention_args), "attention");
    MOTE_CUDA_TRY(matmul(stream, d.xb2, lw.wo, d.xb, n_tokens), "matmul attention output");
    MOTE_CUDA_TRY(add(stream, d.x, d.xb2, n_tokens * dim), "residual add");
    // Feed-forward: w2(silu(w1 x) * w3 x), added to the residual stream.
    MOTE_CUDA_TRY(rmsnorm(stream, d.xb, d.x, lw.ffn_norm, dim, eps, n_tokens), "rmsnorm");
    MOTE_CUDA_TRY(matmul(stream, d.hb, lw.w1, d.xb, n_tokens), "matmul gate");
    MOTE_CUDA_TRY(matmul(stream, d.hb2, lw.w3, d.xb, n_tokens), "matmul up");
    MOTE_CUDA_TRY(swiglu(stream, d.hb, d.hb2, n_tokens * ffn_dim), "swiglu");
    MOTE_CUDA_TRY(matmul(stream, d.xb2, lw.w2, d.hb, n_tokens), "matmul down");
    MOTE_CUDA_TRY(add(stream, d.x, d.xb2, n_tokens * dim), "residual add");
  }
  if (!want_logits) return MOTE_OK;
  MOTE_CUDA_TRY(rmsnorm(stream, d.xb, d.x + static_cast<size_t>(n_tokens - 1) * dim, c.output_norm, dim, eps, 1),
                "final rmsnorm");
  MOTE_CUDA_TRY(matmul(stream, d.logits, c.classifier, d.xb, 1), "classifier");
  MOTE_CUDA_TRY(argmax(stream, d.argmax, d.logits, cfg.vocab_size), "argmax");
  return MOTE_OK;
}

// Copies the step's position and tokens to the device (before the step's kernels, in stream order).
Status upload_step(const Session &s, CudaSession &c, const int32_t *tokens, size_t n_tokens, ErrorSink err) {
  c.upload[0] = static_cast<int32_t>(s.position);
  std::memcpy(c.upload + 1, tokens, n_tokens * sizeof(int32_t));
  MOTE_CUDA_TRY(cudaMemcpyAsync(c.d.step, c.upload, (1 + n_tokens) * sizeof(int32_t), cudaMemcpyHostToDevice, c.stream),
                "copying the step's tokens");
  return MOTE_OK;
}

// After the step's kernels: the logits (and greedy token) back to the host, then the bookkeeping.
Status finish_step(Session &s, CudaSession &c, const int32_t *tokens, size_t n_tokens, bool want_logits,
                   ErrorSink err) {
  if (want_logits) {
    MOTE_CUDA_TRY(cudaMemcpyAsync(s.state.logits, c.d.logits, s.model.view.config.vocab_size * sizeof(float),
                                  cudaMemcpyDeviceToHost, c.stream),
                  "copying the logits");
    MOTE_CUDA_TRY(cudaMemcpyAsync(&c.argmax, c.d.argmax, sizeof(int32_t), cudaMemcpyDeviceToHost, c.stream),
                  "copying the greedy token");
  }
  MOTE_CUDA_TRY(cudaStreamSynchronize(c.stream), "the forward pass");
  for (size_t t = 0; t < n_tokens; ++t) s.history[s.position + t] = tokens[t];
  s.position += static_cast<uint32_t>(n_tokens);
  s.has_logits = want_logits;
  return MOTE_OK;
}

Status cuda_prefill(Session &s, const int32_t *tokens, size_t n_tokens, bool want_logits) {
  CudaSession &c = *state_of(s);
  const ErrorSink err{s.error, sizeof s.error};
  Status status = upload_step(s, c, tokens, n_tokens, err);
  if (status == MOTE_OK) status = enqueue_forward(s, c, static_cast<uint32_t>(n_tokens), want_logits, err);
  if (status == MOTE_OK) status = finish_step(s, c, tokens, n_tokens, want_logits, err);
  return status;
}

// Captures the one-token forward pass once; every decode replays it.
Status capture_decode_graph(const Session &s, CudaSession &c, ErrorSink err) {
  MOTE_CUDA_TRY(cudaStreamBeginCapture(c.stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  const Status status = enqueue_forward(s, c, 1, true, err);
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(c.stream, &graph);  // always, to leave capture mode
  if (status != MOTE_OK) {
    if (graph != nullptr) cudaGraphDestroy(graph);
    return status;
  }
  if (ended != cudaSuccess) return device_fail(err, ended, "cudaStreamEndCapture");
  c.graph = graph;
  MOTE_CUDA_TRY(cudaGraphInstantiate(&c.graph_exec, c.graph, 0), "cudaGraphInstantiate");
  return MOTE_OK;
}

Status cuda_decode(Session &s, int32_t token) {
  CudaSession &c = *state_of(s);
  if (!c.use_graphs) return cuda_prefill(s, &token, 1, true);
  const ErrorSink err{s.error, sizeof s.error};
  Status status = c.graph_exec == nullptr ? capture_decode_graph(s, c, err) : MOTE_OK;
  if (status == MOTE_OK) status = upload_step(s, c, &token, 1, err);
  if (status != MOTE_OK) return status;
  MOTE_CUDA_TRY(cudaGraphLaunch(c.graph_exec, c.stream), "cudaGraphLaunch");
  return finish_step(s, c, &token, 1, true, err);
}

const Backend kCudaBackend = {"cuda",       sizeof(Session), cuda_host_bytes, cuda_device_memory, cuda_init,
                              cuda_prefill, cuda_decode,     cuda_release,    nullptr};

Session *cuda_session_of(const mote_session *session) {
  Session *s = session == nullptr ? nullptr : static_cast<Session *>(session->impl_);
  return s != nullptr && s->backend == &kCudaBackend && s->backend_state != nullptr ? s : nullptr;
}

}  // namespace
}  // namespace mote::cuda

using namespace mote;
using namespace mote::cuda;

extern "C" const Backend *mote_cuda_backend(void) { return &kCudaBackend; }

extern "C" int mote_cuda_device_available(char *err, size_t err_n) {
  int devices = 0;
  const cudaError_t counted = cudaGetDeviceCount(&devices);
  if (counted == cudaSuccess && devices > 0) return 1;
  fail(ErrorSink{err, err_n}, MOTE_ERR_UNSUPPORTED, "no CUDA device: %s",
       counted != cudaSuccess ? cudaGetErrorString(counted) : "none found");
  return 0;
}

extern "C" uint64_t mote_cuda_weights_size(const mote_model *model) {
  const Model *m = model_of(model);
  if (m == nullptr) return 0;
  uint64_t begin = 0, end = 0;
  tensor_region(m->view, &begin, &end);
  return end - begin;
}

extern "C" uint64_t mote_cuda_arena_size(const mote_model *model, const mote_session_options *options) {
  mote_session_options o = options != nullptr ? *options : mote_session_options_default();
  o.backend = MOTE_BACKEND_CUDA;
  uint64_t weight_bytes = 0, session_bytes = 0;
  return mote_backend_memory(model, &o, &weight_bytes, &session_bytes, nullptr, 0) == MOTE_OK ? session_bytes : 0;
}

extern "C" mote_status mote_cuda_model_upload(const mote_model *model, mote_cuda_model *device_model, char *err,
                                              size_t err_n) {
  const ErrorSink sink{err, err_n};
  const Model *m = model_of(model);
  if (m == nullptr || device_model == nullptr) return fail(sink, MOTE_ERR_INVALID_ARGUMENT, "model or output is null");
  std::memset(device_model, 0, sizeof *device_model);
  if (mote_cuda_device_available(err, err_n) == 0) return MOTE_ERR_UNSUPPORTED;
  return upload(*m, new (device_model->opaque_) DeviceWeights{}, sink);
}

extern "C" void mote_cuda_model_free(mote_cuda_model *device_model) {
  if (device_model != nullptr) free_weights(reinterpret_cast<DeviceWeights *>(device_model->opaque_));
}

extern "C" void mote_cuda_set_graphs(mote_session *session, int enabled) {
  Session *s = cuda_session_of(session);
  if (s != nullptr) state_of(*s)->use_graphs = enabled != 0;
}

extern "C" int32_t mote_cuda_argmax(const mote_session *session) {
  const Session *s = cuda_session_of(session);
  return s != nullptr && s->has_logits ? state_of(*s)->argmax : -1;
}

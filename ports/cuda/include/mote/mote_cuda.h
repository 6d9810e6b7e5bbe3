/* mote's optional CUDA backend (build with -DMOTE_CUDA=ON, link mote::mote_cuda).
 *
 * A session runs on the GPU when its options say backend = MOTE_BACKEND_CUDA. Device memory is
 * two allocations: the model's weights (the file's tensor bytes, uploaded once, unchanged) and
 * one per session for its KV cache and activations. Sessions that share a mote_cuda_model
 * (options.device_model) share one copy of the weights; without one a session uploads its own.
 * mote_session_release frees a session's device memory.
 */
#ifndef MOTE_MOTE_CUDA_H
#define MOTE_MOTE_CUDA_H

#include "mote/mote.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Weights on the device: caller-owned storage, private fields. */
typedef struct mote_cuda_model {
  uint64_t opaque_[8];
} mote_cuda_model;

/* 1 when a CUDA device is present and usable, else 0 (with the reason in err). */
int mote_cuda_device_available(char *err, size_t err_n);

/* Bytes of the one weight allocation: the model file's tensor region. */
uint64_t mote_cuda_weights_size(const mote_model *model);

/* Exact bytes of a session's one device allocation (KV cache, activations, scratch); 0 when the
 * options are invalid or the model cannot run on CUDA (mote_session_init says why). */
uint64_t mote_cuda_arena_size(const mote_model *model, const mote_session_options *options);

/* Uploads the model's weights (one cudaMalloc, one copy). The model bytes must outlive it. */
mote_status mote_cuda_model_upload(const mote_model *model, mote_cuda_model *device_model, char *err, size_t err_n);
void mote_cuda_model_free(mote_cuda_model *device_model);

/* Decode as one captured CUDA graph per token (the default, 1) or as separate launches (0); the
 * same kernels either way, so the logits are the same bits. */
void mote_cuda_set_graphs(mote_session *session, int enabled);

/* The greedy token the device computed from the last logits (argmax, first on ties); -1 before
 * any logits. */
int32_t mote_cuda_argmax(const mote_session *session);

#ifdef __cplusplus
}
#endif

#endif /* MOTE_MOTE_CUDA_H */

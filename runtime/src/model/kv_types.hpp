// One row per KV-cache type, as weight_types.hpp has one per weight type: what the session
// planner, the state file, the API and the forward pass need of a cache type. Each is bound once
// per session (KvCache::type), so nothing else branches on the dtype: a new cache type (q4_0, a
// rotated q4) is one row here plus its store and attention kernels.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/kernels.hpp"
#include "mote/mote.h"

namespace mote {

// One key/value head's run of positions as the attention kernels read it.
struct KvSpan {
  const void *keys, *values;  // the layer-major arrays of the cache
  size_t first;               // the element of the first position's head
  const float *key_scales, *value_scales;  // block-scaled types only
  size_t first_scale;         // the first position's first scale of the head
  size_t scale_stride;        // scales per position
};

struct KvType {
  mote_kv_dtype dtype;
  const char *name;        // as the CLI and llama.cpp spell it
  uint32_t element_bytes;  // per stored value
  bool block_scales;       // one float scale per 32 values of a head, stored beside the values
  // Stores n floats (whole heads of head_dim) at element index of data, converted to the type;
  // a block-scaled type writes its scales from scales[first_scale] on (ceil(head_dim / 32) a head).
  void (*store)(void *data, float *scales, size_t index, size_t first_scale, const float *src, size_t n,
                size_t head_dim);
  // out = softmax(scale q.k) v over kv's n_pos positions (kv_stride: elements between positions).
  void (*attend)(const kernels::KernelTable &k, float *out, float *scores, const float *q, const KvSpan &kv,
                 size_t n_pos, size_t head_dim, size_t kv_stride, float scale);
};

// The row of a cache dtype, or null when dtype is none (a caller's out-of-range enum included).
const KvType *kv_type(uint32_t dtype);

}  // namespace mote

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

// One key/value head of a layer as the attention kernels read it, from position 0 on.
struct KvSpan {
  const void *keys, *values;               // the cache: layer, then head, then position
  size_t first;                            // the element of position 0's head
  const float *key_scales, *value_scales;  // block-scaled types only
  size_t first_scale;                      // position 0's first scale of the head
  size_t scale_stride;                     // scales per position
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
  // Each query's out = softmax(scale q.k) v over its positions of kv (kv_stride: elements between
  // positions), the group's queries reading each block of keys and values once.
  void (*attend)(const kernels::KernelTable &k, const kernels::AttentionQuery *queries, size_t n_queries,
                 const KvSpan &kv, size_t head_dim, size_t kv_stride, float scale);
};

// The row of a cache dtype, or null when dtype is none (a caller's out-of-range enum included).
const KvType *kv_type(uint32_t dtype);

}  // namespace mote

// The KV-cache types' rows: how each stores a batch's keys or values and which attention kernel
// reads them back.
#include "model/kv_types.hpp"

#include <cmath>
#include <cstring>

#include "core/fp16.hpp"

namespace mote {
namespace {

void store_f32(void *data, float *, size_t index, size_t, const float *src, size_t n, size_t) {
  std::memcpy(static_cast<float *>(data) + index, src, n * sizeof(float));
}

void store_f16(void *data, float *, size_t index, size_t, const float *src, size_t n, size_t) {
  uint16_t *dst = static_cast<uint16_t *>(data) + index;
  for (size_t i = 0; i < n; ++i) dst[i] = f32_to_fp16(src[i]);
}

// Each head in blocks of 32 (fewer at the head's end) with scale amax / 127, rounding half to even.
void store_q8_0(void *data, float *scales, size_t index, size_t first_scale, const float *src, size_t n,
                size_t head_dim) {
  int8_t *dst = static_cast<int8_t *>(data) + index;
  float *scale = scales + first_scale;
  for (size_t head = 0; head < n / head_dim; ++head) {
    for (size_t begin = 0; begin < head_dim; begin += kernels::kQuantBlock, ++scale) {
      const size_t end = begin + kernels::kQuantBlock < head_dim ? begin + kernels::kQuantBlock : head_dim;
      const float *x = src + head * head_dim;
      float amax = 0.0f;
      for (size_t i = begin; i < end; ++i) amax = std::fmax(amax, std::fabs(x[i]));
      *scale = amax / 127.0f;
      const float inverse = amax > 0.0f ? 127.0f / amax : 0.0f;
      for (size_t i = begin; i < end; ++i) {
        dst[head * head_dim + i] =
            static_cast<int8_t>(std::nearbyint(std::fmin(std::fmax(x[i] * inverse, -127.0f), 127.0f)));
      }
    }
  }
}

void attend_f32(const kernels::KernelTable &k, const kernels::AttentionQuery *queries, size_t n_queries,
                const KvSpan &kv, size_t head_dim, size_t kv_stride, float scale) {
  k.attention_group_f32(queries, n_queries, static_cast<const float *>(kv.keys) + kv.first,
                        static_cast<const float *>(kv.values) + kv.first, head_dim, kv_stride, scale);
}

void attend_f16(const kernels::KernelTable &k, const kernels::AttentionQuery *queries, size_t n_queries,
                const KvSpan &kv, size_t head_dim, size_t kv_stride, float scale) {
  k.attention_group_f16(queries, n_queries, static_cast<const uint16_t *>(kv.keys) + kv.first,
                        static_cast<const uint16_t *>(kv.values) + kv.first, head_dim, kv_stride, scale);
}

void attend_q8_0(const kernels::KernelTable &k, const kernels::AttentionQuery *queries, size_t n_queries,
                 const KvSpan &kv, size_t head_dim, size_t kv_stride, float scale) {
  k.attention_group_q8(queries, n_queries, static_cast<const int8_t *>(kv.keys) + kv.first,
                       kv.key_scales + kv.first_scale, static_cast<const int8_t *>(kv.values) + kv.first,
                       kv.value_scales + kv.first_scale, head_dim, kv_stride, kv.scale_stride, scale);
}

constexpr KvType kKvTypes[] = {
    {MOTE_KV_F32, "f32", 4, false, store_f32, attend_f32},
    {MOTE_KV_F16, "f16", 2, false, store_f16, attend_f16},
    {MOTE_KV_Q8_0, "q8_0", 1, true, store_q8_0, attend_q8_0},
};

}  // namespace

const KvType *kv_type(uint32_t dtype) {
  for (const KvType &type : kKvTypes) {
    if (static_cast<uint32_t>(type.dtype) == dtype) return &type;
  }
  return nullptr;
}

}  // namespace mote

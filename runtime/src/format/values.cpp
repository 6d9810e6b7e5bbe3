#include "format/values.hpp"

#include <cmath>
#include <cstring>

#include "core/fp16.hpp"

namespace mote::format {
namespace {

float half_at(const uint8_t *p) {
  uint16_t h;
  std::memcpy(&h, p, sizeof h);
  return fp16_to_f32(h);
}

float bf16_at(const uint8_t *p) {
  uint16_t h;
  std::memcpy(&h, p, sizeof h);
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

float f32_at(const uint8_t *p) {
  float f;
  std::memcpy(&f, p, sizeof f);
  return f;
}

bool found(uint64_t at, float v, uint64_t *index, float *value) {
  *index = at;
  *value = v;
  return true;
}

}  // namespace

bool find_non_finite(const TensorEntry &t, const uint8_t *data, uint64_t *index, float *value) {
  const uint64_t rows = t.shape[0], cols = t.n_dims == 2 ? t.shape[1] : 1, n = rows * cols;
  const DType dtype = static_cast<DType>(t.dtype);
  if (dtype == DType::f32 || dtype == DType::f16 || dtype == DType::bf16) {
    const size_t width = dtype == DType::f32 ? 4 : 2;
    for (uint64_t i = 0; i < n; ++i) {
      const uint8_t *p = data + i * width;
      const float v = dtype == DType::f32 ? f32_at(p) : dtype == DType::f16 ? half_at(p) : bf16_at(p);
      if (!std::isfinite(v)) return found(i, v, index, value);
    }
    return false;
  }
  const DTypeTraits *traits = dtype_traits(t.dtype);
  const uint64_t blocks_per_row = cols / traits->block_elements;
  if (traits->interleaved_rows == 1) {
    // Plain blocks: the row's fp16 fields (d, then m) at scale_offset in each.
    for (uint64_t b = 0; b < rows * blocks_per_row; ++b) {
      const uint8_t *p = data + b * traits->block_bytes + traits->scale_offset;
      for (uint32_t k = 0; k < traits->scale_fields; ++k) {
        const float v = half_at(p + 2 * k);
        if (!std::isfinite(v)) return found(b * traits->block_elements, v, index, value);
      }
    }
    return false;
  }
  // x8 group blocks (8 x block_bytes): d[0..7], then (with a minimum) m[0..7], for rows 8g..8g+7.
  const uint32_t group_rows = traits->interleaved_rows;
  const uint64_t group_block_bytes = group_rows * uint64_t{traits->block_bytes};
  for (uint64_t g = 0; g < rows / group_rows; ++g) {
    for (uint64_t b = 0; b < blocks_per_row; ++b) {
      const uint8_t *p = data + (g * blocks_per_row + b) * group_block_bytes;
      for (uint32_t k = 0; k < traits->scale_fields * group_rows; ++k) {
        const float v = half_at(p + 2 * k);
        const uint64_t row = g * group_rows + k % group_rows;
        if (!std::isfinite(v)) return found(row * cols + b * traits->block_elements, v, index, value);
      }
    }
  }
  return false;
}

}  // namespace mote::format

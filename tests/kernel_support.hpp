// Shared by the kernel tests: the SIMD tables this CPU has, random inputs and tolerance checks.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/fp16.hpp"
#include "kernels/kernels.hpp"

namespace mote_kernel_test {

using mote::kernels::Isa;
using mote::kernels::KernelTable;

struct IsaCase {
  Isa isa;
  const char *name;
};
// Every ISA but the scalar twins, from the one list (kernels/isa_list.inc).
inline constexpr IsaCase kIsaCases[] = {
#define MOTE_ISA(name) {Isa::name, #name},
#include "kernels/isa_list.inc"
#undef MOTE_ISA
};

// The SIMD tables this build and CPU can run, saying which are skipped and why.
inline std::vector<const KernelTable *> simd_tables() {
  std::vector<const KernelTable *> tables;
  for (const IsaCase &c : kIsaCases) {
    if (c.isa == Isa::scalar) continue;
    if (const KernelTable *table = mote::kernels::kernels_for(c.isa)) {
      tables.push_back(table);
    } else {
      MESSAGE("skipping " << std::string(c.name) << ": this build or CPU lacks it");
    }
  }
  return tables;
}

// Sizes around every SIMD width in use (4 on NEON, 8 on AVX2, 16 on AVX-512) plus large ones.
inline const size_t kSizes[] = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64, 100, 576, 4097};

inline std::vector<float> random_floats(size_t n, std::mt19937 &rng, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float &f : v) f = dist(rng);
  return v;
}

inline std::vector<uint16_t> to_halves(const std::vector<float> &v) {
  std::vector<uint16_t> h(v.size());
  for (size_t i = 0; i < v.size(); ++i) h[i] = mote::f32_to_fp16(v[i]);
  return h;
}

// |actual - expected| <= rel * magnitude + abs, where magnitude is what the result was summed
// from (sum of |terms| for dot products), so cancellation does not make the bound meaningless.
inline void check_close(const std::vector<float> &actual, const std::vector<float> &expected,
                        const std::vector<float> &magnitude, float rel, float abs, const std::string &what) {
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    const float bound = rel * magnitude[i] + abs;
    if (!(std::fabs(actual[i] - expected[i]) <= bound)) {
      FAIL(what << ": element " << i << " is " << actual[i] << ", expected " << expected[i] << " (bound " << bound
                << ")");
    }
  }
}

inline void check_close(const std::vector<float> &actual, const std::vector<float> &expected, float rel, float abs,
                        const std::string &what) {
  std::vector<float> magnitude(expected.size());
  for (size_t i = 0; i < expected.size(); ++i) magnitude[i] = std::fabs(expected[i]);
  check_close(actual, expected, magnitude, rel, abs, what);
}

// sum_c |w[r, c] x[c]| per row: the scale of a dot product's rounding error.
inline std::vector<float> row_magnitudes(const std::vector<float> &w, const std::vector<float> &x, size_t rows,
                                         size_t cols) {
  std::vector<float> m(rows, 0.0f);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t c = 0; c < cols; ++c) m[r] += std::fabs(w[r * cols + c] * x[c]);
  }
  return m;
}

inline std::string label(const KernelTable &t, const char *kernel, size_t a, size_t b = 0) {
  return std::string(t.isa_name) + " " + kernel + " " + std::to_string(a) + "x" + std::to_string(b);
}

// Owns the arrays of one Q8Activations for n_tokens vectors of cols values (the only owner the
// kernel tests use, so a new array is allocated everywhere at once).
struct OwnedQ8 {
  std::vector<int8_t> q;
  std::vector<float> scale, lane_sum_scaled, scaled_sum;
  std::vector<int32_t> lane_offset, block_sum, half_sum;
  size_t cols;
  OwnedQ8(size_t cols_, size_t n_tokens)
      : q(cols_ * n_tokens),
        scale(cols_ * n_tokens / 32),
        lane_sum_scaled(cols_ * n_tokens / 4),
        scaled_sum(cols_ * n_tokens / 32),
        lane_offset(cols_ * n_tokens / 4),
        block_sum(cols_ * n_tokens / 32),
        half_sum(cols_ * n_tokens / 16),
        cols(cols_) {}
  // Token `first` onwards.
  mote::kernels::Q8Activations view(size_t first = 0) {
    return {q.data() + first * cols,
            scale.data() + first * cols / 32,
            lane_offset.data() + first * cols / 4,
            lane_sum_scaled.data() + first * cols / 4,
            block_sum.data() + first * cols / 32,
            half_sum.data() + first * cols / 16,
            scaled_sum.data() + first * cols / 32};
  }
};

}  // namespace mote_kernel_test

// The Helium (MVE) kernels against their scalar twins, on the device (the doctest suite does not
// run on bare metal): built for a Cortex-M55 only, run under QEMU's mps3-an547. Float products
// must agree within rounding and not depend on batching; the q8_0 and q8_0x8 products must be
// bit-identical to the scalar twins (quant.hpp's sum). Exit status 0 on pass, 1 on failure.
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <initializer_list>

#include "core/fp16.hpp"
#include "kernels/kernels.hpp"

namespace {

using mote::kernels::BlockQ8_0;
using mote::kernels::BlockQ8_0x8;
using mote::kernels::KernelTable;
using mote::kernels::Q8Activations;

constexpr size_t kMaxRows = 24, kMaxCols = 160, kMaxTokens = 3;
constexpr size_t kMaxBlocks = kMaxTokens * kMaxCols / 32;

uint32_t g_random = 12345u;
uint32_t next_random() {
  g_random = g_random * 1664525u + 1013904223u;
  return g_random >> 8;
}
float random_float() { return static_cast<float>(next_random() % 20001u) / 10000.0f - 1.0f; }    // [-1, 1]
int8_t random_q() { return static_cast<int8_t>(static_cast<int>(next_random() % 256u) - 128); }  // -128 too
uint16_t random_scale() { return mote::f32_to_fp16(0.001f + static_cast<float>(next_random() % 1000u) * 1e-4f); }

float g_w[kMaxRows * kMaxCols], g_x[kMaxTokens * kMaxCols];
float g_out[kMaxTokens * kMaxRows], g_ref[kMaxTokens * kMaxRows], g_one[kMaxRows];
BlockQ8_0 g_q8[kMaxRows * kMaxCols / 32];
BlockQ8_0x8 g_q8x8[kMaxRows / 8 * kMaxCols / 32];
int8_t g_xq[kMaxTokens * kMaxCols];
float g_xscale[kMaxBlocks], g_lane_sum_scaled[kMaxTokens * kMaxCols / 4];
int32_t g_lane_offset[kMaxTokens * kMaxCols / 4], g_block_sum[kMaxBlocks], g_half_sum[2 * kMaxBlocks];
float g_scaled_sum[kMaxBlocks];

unsigned g_cases = 0, g_failures = 0;

void check(bool ok, const char *what, size_t rows, size_t cols, size_t tokens) {
  ++g_cases;
  if (ok) return;
  ++g_failures;
  std::printf("mote kernels: FAIL %s rows %u cols %u tokens %u\n", what, static_cast<unsigned>(rows),
              static_cast<unsigned>(cols), static_cast<unsigned>(tokens));
}

void test_f32(const KernelTable &mve, const KernelTable &ref) {
  static const size_t kRows[] = {1, 2, 3, 5, 8};
  static const size_t kCols[] = {1, 3, 4, 5, 7, 8, 9, 16, 17, 33, 64, 100, 160};
  for (size_t rows : kRows) {
    for (size_t cols : kCols) {
      for (size_t i = 0; i < rows * cols; ++i) g_w[i] = random_float();
      for (size_t i = 0; i < kMaxTokens * cols; ++i) g_x[i] = random_float();
      mve.matvec_f32(g_out, g_w, g_x, rows, cols);
      ref.matvec_f32(g_ref, g_w, g_x, rows, cols);
      bool close = true;
      for (size_t r = 0; r < rows; ++r) {
        float magnitude = 0.0f;
        for (size_t c = 0; c < cols; ++c) magnitude += std::fabs(g_w[r * cols + c] * g_x[c]);
        // Both sum cols products in float: each within cols * epsilon / 2 of the exact sum.
        close = close && std::fabs(g_out[r] - g_ref[r]) <= static_cast<float>(cols) * FLT_EPSILON * magnitude;
      }
      check(close, "matvec_f32 vs scalar", rows, cols, 1);
      // Batching: each token's row equals the matrix-vector product of that token, bit for bit.
      mve.matmul_f32(g_out, rows, g_w, g_x, rows, cols, kMaxTokens);
      bool same = true;
      for (size_t t = 0; t < kMaxTokens; ++t) {
        mve.matvec_f32(g_one, g_w, g_x + t * cols, rows, cols);
        same = same && std::memcmp(g_one, g_out + t * rows, rows * sizeof(float)) == 0;
      }
      check(same, "matmul_f32 vs matvec_f32", rows, cols, kMaxTokens);
    }
  }
}

Q8Activations quantized_activations(const KernelTable &ref, size_t cols, size_t tokens) {
  for (size_t i = 0; i < tokens * cols; ++i) g_x[i] = random_float() * 3.0f;
  const Q8Activations x{g_xq, g_xscale, g_lane_offset, g_lane_sum_scaled, g_block_sum, g_half_sum, g_scaled_sum};
  ref.quantize_q8(x, g_x, cols, tokens);
  return x;
}

void test_q8(const KernelTable &mve, const KernelTable &ref) {
  static const size_t kRows[] = {8, 16, 24};  // multiples of 8: the x8 layout's groups
  static const size_t kCols[] = {32, 64, 96, 160};
  static const size_t kTokens[] = {1, 3};
  for (size_t rows : kRows) {
    for (size_t cols : kCols) {
      for (size_t tokens : kTokens) {
        const Q8Activations x = quantized_activations(ref, cols, tokens);
        const size_t n_plain = rows * cols / 32;
        for (size_t b = 0; b < n_plain; ++b) {
          g_q8[b].d = random_scale();
          for (int8_t &q : g_q8[b].qs) q = random_q();
        }
        for (size_t n : {size_t{1}, size_t{3}, rows}) {  // the plain layout takes any row count
          mve.matmul_q8_0(g_out, n, g_q8, x, n, cols, tokens);
          ref.matmul_q8_0(g_ref, n, g_q8, x, n, cols, tokens);
          check(std::memcmp(g_out, g_ref, n * tokens * sizeof(float)) == 0, "matmul_q8_0 bits", n, cols, tokens);
        }
        const size_t n_groups = rows / 8 * cols / 32;
        for (size_t b = 0; b < n_groups; ++b) {
          for (uint16_t &d : g_q8x8[b].d) d = random_scale();
          for (int8_t &q : g_q8x8[b].qs) q = random_q();
        }
        mve.matmul_q8_0x8(g_out, rows, g_q8x8, x, rows, cols, tokens);
        ref.matmul_q8_0x8(g_ref, rows, g_q8x8, x, rows, cols, tokens);
        check(std::memcmp(g_out, g_ref, rows * tokens * sizeof(float)) == 0, "matmul_q8_0x8 bits", rows, cols, tokens);
      }
    }
  }
}

}  // namespace

int main() {
  const KernelTable *mve = mote::kernels::kernels_for(mote::kernels::Isa::mve);
  if (mve == nullptr) {
    std::printf("mote kernels: FAIL this build has no MVE table\n");
    return 1;
  }
  const KernelTable &ref = mote::kernels::scalar_kernels();
  std::printf("mote kernels: best table '%s'\n", mote::kernels::best_kernels().isa_name);
  test_f32(*mve, ref);
  test_q8(*mve, ref);
  std::printf("mote kernels: %s %u of %u cases (MVE matvec_f32, matmul_f32, matmul_q8_0, matmul_q8_0x8 vs scalar)\n",
              g_failures == 0 ? "PASS" : "FAIL", g_cases - g_failures, g_cases);
  return g_failures == 0 ? 0 : 1;
}

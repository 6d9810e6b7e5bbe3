// The kernels: the scalar twins against hand-computed cases, then every SIMD table this CPU has
// against the scalar twins over edge sizes (1, a SIMD width, width ± 1, multiples, large).
// The quantized kernels are in test_quant_kernels.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/fp16.hpp"
#include "kernel_support.hpp"
#include "kernels/kernels.hpp"

using namespace mote_kernel_test;

// --- the tables ---------------------------------------------------------------------------

TEST_CASE("every kernel table has every kernel") {
  std::vector<const KernelTable *> tables = simd_tables();
  tables.push_back(&mote::kernels::scalar_kernels());
  for (const KernelTable *table : tables) {
    const std::string isa_name = table->isa_name;
    CAPTURE(isa_name);
#define MOTE_KERNEL(name, type) CHECK_MESSAGE(bool(table->name), #name " is missing");
#include "kernels/kernel_list.inc"
#undef MOTE_KERNEL
  }
  CHECK(mote::kernels::scalar_kernels().isa == Isa::scalar);
  for (const IsaCase &c : kIsaCases) {
    if (const KernelTable *table = mote::kernels::kernels_for(c.isa)) {
      CHECK(table->isa == c.isa);
      CHECK(std::string(table->isa_name) == c.name);
    }
  }
  const KernelTable &best = mote::kernels::best_kernels();
  CHECK(&best == &mote::kernels::best_kernels());  // resolved once
  MESSAGE("best kernels: " << std::string(best.isa_name));
}

// --- the scalar twins against hand-computed values ------------------------------------------

TEST_CASE("scalar matvec computes row dot products") {
  const KernelTable &k = mote::kernels::scalar_kernels();
  const float w[] = {1, 2, 3, 4, 5, 6};  // 2 x 3
  const float x[] = {1, 0.5f, -1};
  float out[2];
  k.matvec_f32(out, w, x, 2, 3);
  CHECK(out[0] == doctest::Approx(1 + 1 - 3));
  CHECK(out[1] == doctest::Approx(4 + 2.5 - 6));

  uint16_t w_half[6];
  for (int i = 0; i < 6; ++i) w_half[i] = mote::f32_to_fp16(w[i]);  // exact in half
  float out_half[2];
  k.matvec_f16(out_half, w_half, x, 2, 3);
  CHECK(out_half[0] == out[0]);
  CHECK(out_half[1] == out[1]);

  // Two tokens through the same 2 x 3 matrix, written with a stride of 3 (one spare column).
  const float xs[] = {1, 0.5f, -1, 0, 1, 2};
  float out2[] = {9, 9, 9, 9, 9, 9};
  k.matmul_f32(out2, 3, w, xs, 2, 3, 2);
  CHECK(out2[0] == out[0]);
  CHECK(out2[1] == out[1]);
  CHECK(out2[2] == 9);
  CHECK(out2[3] == doctest::Approx(2 + 6));
  CHECK(out2[4] == doctest::Approx(5 + 12));
  CHECK(out2[5] == 9);
  float out2_half[6];
  k.matmul_f16(out2_half, 2, w_half, xs, 2, 3, 2);
  CHECK(out2_half[0] == out[0]);
  CHECK(out2_half[3] == out2[4]);
}

TEST_CASE("scalar rmsnorm divides by the root mean square") {
  const KernelTable &k = mote::kernels::scalar_kernels();
  float x[] = {3, 4};
  const float ones[] = {1, 1};
  const float twos[] = {2, 2};
  float out[2];
  k.rmsnorm(out, x, ones, 2, 0.0f);  // rms = sqrt((9 + 16) / 2)
  CHECK(out[0] == doctest::Approx(3 / std::sqrt(12.5)));
  CHECK(out[1] == doctest::Approx(4 / std::sqrt(12.5)));
  k.rmsnorm(x, x, twos, 2, 0.0f);  // in place, with a weight
  CHECK(x[0] == doctest::Approx(6 / std::sqrt(12.5)));
  CHECK(x[1] == doctest::Approx(8 / std::sqrt(12.5)));
  float zeros[] = {0, 0};
  k.rmsnorm(zeros, zeros, ones, 2, 1e-5f);  // eps keeps zeros finite
  CHECK(zeros[0] == 0.0f);
}

TEST_CASE("scalar softmax gives probabilities") {
  const KernelTable &k = mote::kernels::scalar_kernels();
  float x[] = {1, 2, 3};
  k.softmax(x, 3);
  const double total = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  CHECK(x[0] == doctest::Approx(std::exp(1.0) / total));
  CHECK(x[1] == doctest::Approx(std::exp(2.0) / total));
  CHECK(x[2] == doctest::Approx(std::exp(3.0) / total));
  CHECK(x[0] + x[1] + x[2] == doctest::Approx(1.0));

  float huge[] = {1000, 1001};  // would overflow exp without the max shift
  k.softmax(huge, 2);
  CHECK(huge[1] == doctest::Approx(1 / (1 + std::exp(-1.0))));
  float single[] = {-42};
  k.softmax(single, 1);
  CHECK(single[0] == 1.0f);
}

TEST_CASE("scalar rope rotates pairs by their angles") {
  const KernelTable &k = mote::kernels::scalar_kernels();
  // Pair 0 turns by 90 degrees, pair 1 by 0.
  const float cos[] = {0, 1};
  const float sin[] = {1, 0};
  float interleaved[] = {1, 2, 3, 4};  // pairs (1, 2) and (3, 4)
  k.rope_interleaved(interleaved, cos, sin, 1, 4);
  CHECK(interleaved[0] == doctest::Approx(-2));
  CHECK(interleaved[1] == doctest::Approx(1));
  CHECK(interleaved[2] == 3);
  CHECK(interleaved[3] == 4);

  float split[] = {1, 2, 3, 4, 1, 2, 3, 4};  // two heads; pairs (1, 3) and (2, 4)
  k.rope_split_half(split, cos, sin, 2, 4);
  for (int h = 0; h < 2; ++h) {
    CHECK(split[4 * h + 0] == doctest::Approx(-3));
    CHECK(split[4 * h + 1] == 2);
    CHECK(split[4 * h + 2] == doctest::Approx(1));
    CHECK(split[4 * h + 3] == 4);
  }

  // A 30-degree turn keeps the pair's length.
  const double pi = std::acos(-1.0);
  const float c30[] = {static_cast<float>(std::cos(pi / 6))};
  const float s30[] = {static_cast<float>(std::sin(pi / 6))};
  float pair[] = {2, 0};
  k.rope_interleaved(pair, c30, s30, 1, 2);
  CHECK(pair[0] == doctest::Approx(std::sqrt(3.0)));
  CHECK(pair[1] == doctest::Approx(1));
}

TEST_CASE("scalar attention weighs values by softmaxed scores") {
  const KernelTable &k = mote::kernels::scalar_kernels();
  const float q[] = {1, 2};
  const float keys[] = {0.5f, -1, 3, 1};  // two positions, kv_stride 2
  const float values[] = {10, 20, 30, 40};
  float out[2];
  float scores[2];

  k.attention_f32(out, scores, q, keys, values, 1, 2, 2, 0.7f);  // one position: v itself
  CHECK(out[0] == doctest::Approx(10));
  CHECK(out[1] == doctest::Approx(20));
  CHECK(scores[0] == doctest::Approx(1));

  k.attention_f32(out, scores, q, keys, values, 2, 2, 2, 0.5f);
  const double s0 = 0.5 * (0.5 - 2), s1 = 0.5 * (3 + 2);
  const double p1 = 1 / (1 + std::exp(s0 - s1)), p0 = 1 - p1;
  CHECK(scores[0] == doctest::Approx(p0));
  CHECK(scores[1] == doctest::Approx(p1));
  CHECK(out[0] == doctest::Approx(p0 * 10 + p1 * 30));
  CHECK(out[1] == doctest::Approx(p0 * 20 + p1 * 40));

  const float same_keys[] = {1, 1, 1, 1};  // equal scores: the mean of the values
  k.attention_f32(out, scores, q, same_keys, values, 2, 2, 2, 1.0f);
  CHECK(out[0] == doctest::Approx(20));
  CHECK(out[1] == doctest::Approx(30));

  uint16_t keys_half[4], values_half[4];
  for (int i = 0; i < 4; ++i) {
    keys_half[i] = mote::f32_to_fp16(keys[i]);  // all exact in half
    values_half[i] = mote::f32_to_fp16(values[i]);
  }
  float out_half[2];
  k.attention_f16(out_half, scores, q, keys_half, values_half, 2, 2, 2, 0.5f);
  // The same keys and values in an 8-bit cache, each position's 2-element head one block.
  const int8_t keys_q[] = {127, 0, 0, 127}, values_q[] = {127, 64, 32, 127};
  const float key_scales[] = {1.0f / 127, 1.0f / 127}, value_scales[] = {2.0f / 127, 3.0f / 127};
  float out_q[2];
  k.attention_q8(out_q, scores, q, keys_q, key_scales, values_q, value_scales, 2, 2, 2, 1, 0.5f);
  const float w0 = scores[0], w1 = scores[1];  // softmax of 0.5 * (q . k_t)
  CHECK(w0 == doctest::Approx(1.0 / (1.0 + std::exp(0.5 * (q[1] - q[0])))));
  CHECK(out_q[0] == doctest::Approx(w0 * 2.0f + w1 * 3.0f * 32 / 127));
  CHECK(out_q[1] == doctest::Approx(w0 * 2.0f * 64 / 127 + w1 * 3.0f));
  CHECK(out_half[0] == doctest::Approx(p0 * 10 + p1 * 30));
  CHECK(out_half[1] == doctest::Approx(p0 * 20 + p1 * 40));
}

TEST_CASE("scalar swiglu and add") {
  const KernelTable &k = mote::kernels::scalar_kernels();
  float gate[] = {0, 1, -1, 20};
  const float up[] = {5, 2, 2, 3};
  k.swiglu(gate, up, 4);
  CHECK(gate[0] == 0.0f);
  CHECK(gate[1] == doctest::Approx(2 / (1 + std::exp(-1.0))));
  CHECK(gate[2] == doctest::Approx(-2 / (1 + std::exp(1.0))));
  CHECK(gate[3] == doctest::Approx(60));

  float y[] = {1, 2, 3};
  const float x[] = {0.5f, -2, 10};
  k.add(y, x, 3);
  CHECK(y[0] == 1.5f);
  CHECK(y[1] == 0.0f);
  CHECK(y[2] == 13.0f);
}

// --- every SIMD table against the scalar twins --------------------------------------------

TEST_CASE("simd matvec matches the scalar twin") {
  const KernelTable &ref = mote::kernels::scalar_kernels();
  std::mt19937 rng(1);
  const size_t row_counts[] = {1, 3, 4, 5, 8, 13};
  for (const KernelTable *t : simd_tables()) {
    for (size_t rows : row_counts) {
      for (size_t cols : kSizes) {
        const std::vector<float> w = random_floats(rows * cols, rng);
        const std::vector<float> x = random_floats(cols, rng);
        const std::vector<float> magnitude = row_magnitudes(w, x, rows, cols);
        std::vector<float> expected(rows), actual(rows);
        ref.matvec_f32(expected.data(), w.data(), x.data(), rows, cols);
        t->matvec_f32(actual.data(), w.data(), x.data(), rows, cols);
        check_close(actual, expected, magnitude, 1e-5f, 1e-7f, label(*t, "matvec_f32", rows, cols));

        const std::vector<uint16_t> w_half = to_halves(w);
        ref.matvec_f16(expected.data(), w_half.data(), x.data(), rows, cols);
        t->matvec_f16(actual.data(), w_half.data(), x.data(), rows, cols);
        check_close(actual, expected, magnitude, 1e-5f, 1e-7f, label(*t, "matvec_f16", rows, cols));
      }
    }
  }
}

TEST_CASE("matvec gives bit-identical rows however the rows are split") {
  // Threads split the rows into chunks; each row must come out the same as in one call.
  std::mt19937 rng(2);
  std::vector<const KernelTable *> tables = simd_tables();
  tables.push_back(&mote::kernels::scalar_kernels());
  const size_t rows = 37;
  for (const KernelTable *t : tables) {
    for (size_t cols : {size_t{7}, size_t{33}, size_t{100}, size_t{576}}) {
      const std::vector<float> w = random_floats(rows * cols, rng);
      const std::vector<uint16_t> w_half = to_halves(w);
      const std::vector<float> x = random_floats(cols, rng);
      std::vector<float> whole(rows), whole_half(rows);
      t->matvec_f32(whole.data(), w.data(), x.data(), rows, cols);
      t->matvec_f16(whole_half.data(), w_half.data(), x.data(), rows, cols);
      for (size_t split : {size_t{1}, size_t{2}, size_t{3}, size_t{4}, size_t{5}, size_t{17}, size_t{36}}) {
        const std::string isa_name = t->isa_name;
        CAPTURE(isa_name);
        CAPTURE(cols);
        CAPTURE(split);
        std::vector<float> parts(rows), parts_half(rows);
        t->matvec_f32(parts.data(), w.data(), x.data(), split, cols);
        t->matvec_f32(parts.data() + split, w.data() + split * cols, x.data(), rows - split, cols);
        t->matvec_f16(parts_half.data(), w_half.data(), x.data(), split, cols);
        t->matvec_f16(parts_half.data() + split, w_half.data() + split * cols, x.data(), rows - split, cols);
        CHECK(std::memcmp(parts.data(), whole.data(), rows * sizeof(float)) == 0);
        CHECK(std::memcmp(parts_half.data(), whole_half.data(), rows * sizeof(float)) == 0);
      }
    }
  }
}

// Shapes around every SIMD width and tile edge (AVX2 2 rows x 3 tokens, AVX-512 3 x 4, AArch64
// 2 x 4; row blocks of 128 KiB, so 64 x 577 f32 spans two).
const size_t kMatmulRows[] = {1, 3, 4, 5, 17, 64};
const size_t kMatmulCols[] = {1, 7, 8, 9, 16, 17, 33, 64, 288, 577};
const size_t kMatmulTokens[] = {1, 2, 3, 4, 5, 8, 13};

TEST_CASE("simd matmul matches the scalar twin") {
  const KernelTable &ref = mote::kernels::scalar_kernels();
  std::mt19937 rng(8);
  for (const KernelTable *t : simd_tables()) {
    for (size_t rows : kMatmulRows) {
      for (size_t cols : kMatmulCols) {
        for (size_t n_tokens : kMatmulTokens) {
          const std::vector<float> w = random_floats(rows * cols, rng);
          const std::vector<uint16_t> w_half = to_halves(w);
          const std::vector<float> x = random_floats(n_tokens * cols, rng);
          std::vector<float> magnitude(n_tokens * rows);
          for (size_t tok = 0; tok < n_tokens; ++tok) {
            const std::vector<float> x_tok(x.begin() + tok * cols, x.begin() + (tok + 1) * cols);
            const std::vector<float> m = row_magnitudes(w, x_tok, rows, cols);
            std::copy(m.begin(), m.end(), magnitude.begin() + tok * rows);
          }
          const std::string what = label(*t, "matmul", rows, cols) + " tokens " + std::to_string(n_tokens);
          std::vector<float> expected(n_tokens * rows), actual(n_tokens * rows);
          ref.matmul_f32(expected.data(), rows, w.data(), x.data(), rows, cols, n_tokens);
          t->matmul_f32(actual.data(), rows, w.data(), x.data(), rows, cols, n_tokens);
          check_close(actual, expected, magnitude, 1e-5f, 1e-7f, what + " f32");
          ref.matmul_f16(expected.data(), rows, w_half.data(), x.data(), rows, cols, n_tokens);
          t->matmul_f16(actual.data(), rows, w_half.data(), x.data(), rows, cols, n_tokens);
          check_close(actual, expected, magnitude, 1e-5f, 1e-7f, what + " f16");
        }
      }
    }
  }
}

TEST_CASE("matmul is bit-identical to matvec per token") {
  // Batching the prompt's tokens must not change the logits; a row chunk (out_stride > rows)
  // writes only its own columns of the full-width output.
  std::mt19937 rng(9);
  std::vector<const KernelTable *> tables = simd_tables();
  tables.push_back(&mote::kernels::scalar_kernels());
  constexpr float kUntouched = -12345.0f;
  constexpr size_t kOffset = 2, kPad = 5;  // the chunk's first column and the columns after it
  for (const KernelTable *t : tables) {
    for (size_t rows : kMatmulRows) {
      for (size_t cols : kMatmulCols) {
        for (size_t n_tokens : kMatmulTokens) {
          const std::string isa_name = t->isa_name;
          CAPTURE(isa_name);
          CAPTURE(rows);
          CAPTURE(cols);
          CAPTURE(n_tokens);
          const std::vector<float> w = random_floats(rows * cols, rng);
          const std::vector<uint16_t> w_half = to_halves(w);
          const std::vector<float> x = random_floats(n_tokens * cols, rng);
          std::vector<float> expected(n_tokens * rows), expected_half(n_tokens * rows);
          for (size_t tok = 0; tok < n_tokens; ++tok) {
            t->matvec_f32(expected.data() + tok * rows, w.data(), x.data() + tok * cols, rows, cols);
            t->matvec_f16(expected_half.data() + tok * rows, w_half.data(), x.data() + tok * cols, rows, cols);
          }
          const size_t bytes = n_tokens * rows * sizeof(float);
          std::vector<float> actual(n_tokens * rows), actual_half(n_tokens * rows);
          t->matmul_f32(actual.data(), rows, w.data(), x.data(), rows, cols, n_tokens);
          t->matmul_f16(actual_half.data(), rows, w_half.data(), x.data(), rows, cols, n_tokens);
          CHECK(std::memcmp(actual.data(), expected.data(), bytes) == 0);
          CHECK(std::memcmp(actual_half.data(), expected_half.data(), bytes) == 0);

          const size_t stride = kOffset + rows + kPad;
          std::vector<float> wide(n_tokens * stride, kUntouched), wide_half = wide;
          t->matmul_f32(wide.data() + kOffset, stride, w.data(), x.data(), rows, cols, n_tokens);
          t->matmul_f16(wide_half.data() + kOffset, stride, w_half.data(), x.data(), rows, cols, n_tokens);
          bool same = true, outside_untouched = true;
          for (size_t tok = 0; tok < n_tokens; ++tok) {
            for (size_t col = 0; col < stride; ++col) {
              const size_t i = tok * stride + col;
              if (col >= kOffset && col < kOffset + rows) {
                const size_t j = tok * rows + col - kOffset;
                same = same && std::memcmp(&wide[i], &expected[j], sizeof(float)) == 0 &&
                       std::memcmp(&wide_half[i], &expected_half[j], sizeof(float)) == 0;
              } else {
                outside_untouched = outside_untouched && wide[i] == kUntouched && wide_half[i] == kUntouched;
              }
            }
          }
          CHECK(same);
          CHECK(outside_untouched);
        }
      }
    }
  }
}

TEST_CASE("matmul row chunks fill the full-width output as one call does") {
  // Threads split the rows: each passes w + r0 * cols and out + r0 with the full out_stride.
  std::mt19937 rng(10);
  std::vector<const KernelTable *> tables = simd_tables();
  tables.push_back(&mote::kernels::scalar_kernels());
  const size_t rows = 37, n_tokens = 7;
  for (const KernelTable *t : tables) {
    for (size_t cols : {size_t{7}, size_t{33}, size_t{100}, size_t{576}}) {
      const std::vector<float> w = random_floats(rows * cols, rng);
      const std::vector<uint16_t> w_half = to_halves(w);
      const std::vector<float> x = random_floats(n_tokens * cols, rng);
      std::vector<float> whole(n_tokens * rows), whole_half(n_tokens * rows);
      t->matmul_f32(whole.data(), rows, w.data(), x.data(), rows, cols, n_tokens);
      t->matmul_f16(whole_half.data(), rows, w_half.data(), x.data(), rows, cols, n_tokens);
      for (size_t split : {size_t{1}, size_t{2}, size_t{3}, size_t{5}, size_t{18}, size_t{36}}) {
        const std::string isa_name = t->isa_name;
        CAPTURE(isa_name);
        CAPTURE(cols);
        CAPTURE(split);
        std::vector<float> parts(n_tokens * rows), parts_half(n_tokens * rows);
        t->matmul_f32(parts.data(), rows, w.data(), x.data(), split, cols, n_tokens);
        t->matmul_f32(parts.data() + split, rows, w.data() + split * cols, x.data(), rows - split, cols, n_tokens);
        t->matmul_f16(parts_half.data(), rows, w_half.data(), x.data(), split, cols, n_tokens);
        t->matmul_f16(parts_half.data() + split, rows, w_half.data() + split * cols, x.data(), rows - split, cols,
                      n_tokens);
        const size_t bytes = n_tokens * rows * sizeof(float);
        CHECK(std::memcmp(parts.data(), whole.data(), bytes) == 0);
        CHECK(std::memcmp(parts_half.data(), whole_half.data(), bytes) == 0);
      }
    }
  }
}

TEST_CASE("simd rmsnorm matches the scalar twin") {
  const KernelTable &ref = mote::kernels::scalar_kernels();
  std::mt19937 rng(3);
  for (const KernelTable *t : simd_tables()) {
    for (size_t n : kSizes) {
      const std::vector<float> x = random_floats(n, rng, -3.0f, 3.0f);
      const std::vector<float> weight = random_floats(n, rng, 0.5f, 1.5f);
      std::vector<float> expected(n), actual(n);
      ref.rmsnorm(expected.data(), x.data(), weight.data(), n, 1e-5f);
      t->rmsnorm(actual.data(), x.data(), weight.data(), n, 1e-5f);
      check_close(actual, expected, 1e-5f, 1e-7f, label(*t, "rmsnorm", n));
      std::vector<float> in_place = x;  // out aliasing x
      t->rmsnorm(in_place.data(), in_place.data(), weight.data(), n, 1e-5f);
      check_close(in_place, expected, 1e-5f, 1e-7f, label(*t, "rmsnorm in place", n));
    }
  }
}

TEST_CASE("simd softmax matches the scalar twin") {
  const KernelTable &ref = mote::kernels::scalar_kernels();
  std::mt19937 rng(4);
  for (const KernelTable *t : simd_tables()) {
    for (size_t n : kSizes) {
      const std::vector<float> x = random_floats(n, rng, -20.0f, 20.0f);
      std::vector<float> expected = x, actual = x;
      ref.softmax(expected.data(), n);
      t->softmax(actual.data(), n);
      check_close(actual, expected, 1e-5f, 1e-9f, label(*t, "softmax", n));
      double total = 0;
      for (float p : actual) total += p;
      CHECK(total == doctest::Approx(1.0).epsilon(1e-5));
    }
  }
}

TEST_CASE("simd rope matches the scalar twin") {
  const KernelTable &ref = mote::kernels::scalar_kernels();
  std::mt19937 rng(5);
  const size_t head_dims[] = {2, 4, 6, 8, 14, 16, 18, 30, 32, 34, 48, 64, 80, 128};
  for (const KernelTable *t : simd_tables()) {
    for (size_t n_heads : {size_t{1}, size_t{3}, size_t{9}}) {
      for (size_t head_dim : head_dims) {
        std::vector<float> cos(head_dim / 2), sin(head_dim / 2);
        for (size_t i = 0; i < head_dim / 2; ++i) {
          const double angle = 17.0 * std::pow(10000.0, -2.0 * i / head_dim) + 0.3 * i;
          cos[i] = static_cast<float>(std::cos(angle));
          sin[i] = static_cast<float>(std::sin(angle));
        }
        const std::vector<float> x = random_floats(n_heads * head_dim, rng, -2.0f, 2.0f);
        const std::vector<float> magnitude(x.size(), 4.0f);  // |a| + |b| of a pair is at most 4

        std::vector<float> expected = x, actual = x;
        ref.rope_interleaved(expected.data(), cos.data(), sin.data(), n_heads, head_dim);
        t->rope_interleaved(actual.data(), cos.data(), sin.data(), n_heads, head_dim);
        check_close(actual, expected, magnitude, 1e-6f, 0.0f, label(*t, "rope_interleaved", n_heads, head_dim));

        expected = x;
        actual = x;
        ref.rope_split_half(expected.data(), cos.data(), sin.data(), n_heads, head_dim);
        t->rope_split_half(actual.data(), cos.data(), sin.data(), n_heads, head_dim);
        check_close(actual, expected, magnitude, 1e-6f, 0.0f, label(*t, "rope_split_half", n_heads, head_dim));
      }
    }
  }
}

TEST_CASE("simd attention matches the scalar twin") {
  const KernelTable &ref = mote::kernels::scalar_kernels();
  std::mt19937 rng(6);
  // 544: an 8-bit cache's keys laid out 16 positions at a time on x86; 4100: scored one by one.
  const size_t head_dims[] = {1, 7, 8, 9, 16, 17, 32, 48, 64, 100, 128, 544, 4100};
  // 4097: past a 4096-token prompt (heads up to 128 wide there, to keep the test quick).
  const size_t positions[] = {1, 2, 7, 8, 9, 33, 100, 257, 4097};
  const size_t n_kv_heads = 3;  // k and v rows are strided past the other heads
  for (const KernelTable *t : simd_tables()) {
    for (size_t head_dim : head_dims) {
      for (size_t n_pos : positions) {
        if (n_pos > 1000 && head_dim > 128) continue;
        const size_t kv_stride = n_kv_heads * head_dim;
        const std::vector<float> q = random_floats(head_dim, rng);
        const std::vector<float> k = random_floats(n_pos * kv_stride, rng);
        const std::vector<float> v = random_floats(n_pos * kv_stride, rng);
        const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
        // Each output is a convex combination of values in [-1, 1].
        const std::vector<float> magnitude(head_dim, 1.0f);
        std::vector<float> expected(head_dim), actual(head_dim);
        std::vector<float> expected_scores(n_pos), actual_scores(n_pos);

        ref.attention_f32(expected.data(), expected_scores.data(), q.data(), k.data(), v.data(), n_pos, head_dim,
                          kv_stride, scale);
        t->attention_f32(actual.data(), actual_scores.data(), q.data(), k.data(), v.data(), n_pos, head_dim, kv_stride,
                         scale);
        check_close(actual, expected, magnitude, 1e-5f, 0.0f, label(*t, "attention_f32", head_dim, n_pos));
        check_close(actual_scores, expected_scores, 1e-5f, 1e-9f, label(*t, "attention_f32 scores", head_dim, n_pos));

        const std::vector<uint16_t> k_half = to_halves(k), v_half = to_halves(v);
        ref.attention_f16(expected.data(), expected_scores.data(), q.data(), k_half.data(), v_half.data(), n_pos,
                          head_dim, kv_stride, scale);
        t->attention_f16(actual.data(), actual_scores.data(), q.data(), k_half.data(), v_half.data(), n_pos, head_dim,
                         kv_stride, scale);
        check_close(actual, expected, magnitude, 1e-5f, 0.0f, label(*t, "attention_f16", head_dim, n_pos));
        check_close(actual_scores, expected_scores, 1e-5f, 1e-9f, label(*t, "attention_f16 scores", head_dim, n_pos));

        // An 8-bit cache: int8 values with one scale per head, position and block of 32.
        const size_t blocks = (head_dim + 31) / 32, scale_stride = n_kv_heads * blocks;
        std::vector<int8_t> k_q(k.size()), v_q(v.size());
        std::uniform_int_distribution<int> byte(-127, 127);
        for (size_t i = 0; i < k.size(); ++i) {
          k_q[i] = static_cast<int8_t>(byte(rng));
          v_q[i] = static_cast<int8_t>(byte(rng));
        }
        const std::vector<float> k_scale = random_floats(n_pos * scale_stride, rng, 0.0f, 1.0f / 127);
        const std::vector<float> v_scale = random_floats(n_pos * scale_stride, rng, 0.0f, 1.0f / 127);
        ref.attention_q8(expected.data(), expected_scores.data(), q.data(), k_q.data(), k_scale.data(), v_q.data(),
                         v_scale.data(), n_pos, head_dim, kv_stride, scale_stride, scale);
        t->attention_q8(actual.data(), actual_scores.data(), q.data(), k_q.data(), k_scale.data(), v_q.data(),
                        v_scale.data(), n_pos, head_dim, kv_stride, scale_stride, scale);
        // The x86 tables round the query to 16 bits per block for integer products with the keys
        // (kernels/attention_q8_keys.hpp): a score may move by scale * sum_c |k_c| * (max |q| / 65534)
        // on top of the float roundings, and a probability-weighted sum of values (|v| <= 1) by
        // twice the largest such move.
        float q_max = 0.0f;
        for (float x : q) q_max = std::max(q_max, std::fabs(x));
        std::vector<float> score_bound(n_pos);
        float largest_move = 0.0f;
        for (size_t p = 0; p < n_pos; ++p) {
          float key_sum = 0.0f;
          for (size_t d = 0; d < head_dim; ++d) {
            key_sum += std::fabs(k_scale[p * scale_stride + d / 32] * static_cast<float>(k_q[p * kv_stride + d]));
          }
          const float move = scale * key_sum * q_max / 65534.0f;
          score_bound[p] = std::fabs(expected_scores[p]) + move / 1e-5f;
          largest_move = std::max(largest_move, move);
        }
        check_close(actual, expected, magnitude, 1e-5f, 2.0f * largest_move,
                    label(*t, "attention_q8", head_dim, n_pos));
        check_close(actual_scores, expected_scores, score_bound, 1e-5f, 1e-9f,
                    label(*t, "attention_q8 scores", head_dim, n_pos));
      }
    }
  }
}

TEST_CASE("simd swiglu and add match the scalar twins") {
  const KernelTable &ref = mote::kernels::scalar_kernels();
  std::mt19937 rng(7);
  for (const KernelTable *t : simd_tables()) {
    for (size_t n : kSizes) {
      const std::vector<float> gate = random_floats(n, rng, -10.0f, 10.0f);
      const std::vector<float> up = random_floats(n, rng, -2.0f, 2.0f);
      std::vector<float> expected = gate, actual = gate;
      ref.swiglu(expected.data(), up.data(), n);
      t->swiglu(actual.data(), up.data(), n);
      check_close(actual, expected, 1e-5f, 1e-7f, label(*t, "swiglu", n));

      expected = gate;
      actual = gate;
      ref.add(expected.data(), up.data(), n);
      t->add(actual.data(), up.data(), n);
      CHECK(std::memcmp(actual.data(), expected.data(), n * sizeof(float)) == 0);
    }
  }
}

// --- GPT-2 blocks: LayerNorm and the plain FFN activations ----------------------------------

TEST_CASE("scalar layernorm centers, scales and shifts as torch.nn.LayerNorm") {
  const KernelTable &k = mote::kernels::scalar_kernels();
  const float x[] = {1, 2, 3, 6};  // mean 3, biased variance (4 + 1 + 0 + 9) / 4 = 3.5
  const float weight[] = {1, 2, 1, 0.5f};
  const float bias[] = {0, 1, -1, 0.25f};
  float out[4], plain[4];
  k.layernorm(out, x, weight, bias, 4, 0.0f);
  k.layernorm(plain, x, weight, nullptr, 4, 0.0f);
  const double sd = std::sqrt(3.5);
  const double expected[] = {-2 / sd, 2 * -1 / sd + 1, 0 - 1, 0.5 * 3 / sd + 0.25};
  for (int i = 0; i < 4; ++i) {
    CHECK(out[i] == doctest::Approx(expected[i]).epsilon(1e-6));
    CHECK(plain[i] == doctest::Approx(expected[i] - bias[i]).epsilon(1e-6));
  }
  float same[] = {7, 7};
  const float ones[] = {1, 1};
  k.layernorm(same, same, ones, nullptr, 2, 1e-5f);  // zero variance: eps keeps it finite, in place
  CHECK(same[0] == 0.0f);
}

TEST_CASE("scalar gelu (tanh and erf) and relu follow their formulas") {
  const KernelTable &k = mote::kernels::scalar_kernels();
  const float inputs[] = {-6, -1.5f, -0.25f, 0, 0.5f, 1, 3, 10};
  constexpr size_t n = sizeof inputs / sizeof inputs[0];
  float tanh_out[n], erf_out[n], relu_out[n];
  std::copy(inputs, inputs + n, tanh_out);
  std::copy(inputs, inputs + n, erf_out);
  std::copy(inputs, inputs + n, relu_out);
  k.gelu_tanh(tanh_out, n);
  k.gelu_erf(erf_out, n);
  k.relu(relu_out, n);
  const double pi = std::acos(-1.0);
  for (size_t i = 0; i < n; ++i) {
    const double x = inputs[i];
    CHECK(tanh_out[i] ==
          doctest::Approx(0.5 * x * (1 + std::tanh(std::sqrt(2 / pi) * (x + 0.044715 * x * x * x)))).epsilon(1e-6));
    CHECK(erf_out[i] == doctest::Approx(0.5 * x * (1 + std::erf(x / std::sqrt(2.0)))).epsilon(1e-6));
    CHECK(relu_out[i] == (x > 0 ? inputs[i] : 0.0f));
  }
}

TEST_CASE("simd layernorm, gelu and relu match the scalar twins") {
  const KernelTable &ref = mote::kernels::scalar_kernels();
  std::mt19937 rng(11);
  for (const KernelTable *t : simd_tables()) {
    for (size_t n : kSizes) {
      const std::vector<float> x = random_floats(n, rng, -4.0f, 6.0f);
      const std::vector<float> weight = random_floats(n, rng, 0.5f, 1.5f);
      const std::vector<float> bias = random_floats(n, rng);
      for (const float *b : {bias.data(), static_cast<const float *>(nullptr)}) {
        std::vector<float> expected(n), actual(n), in_place = x;
        ref.layernorm(expected.data(), x.data(), weight.data(), b, n, 1e-5f);
        t->layernorm(actual.data(), x.data(), weight.data(), b, n, 1e-5f);
        check_close(actual, expected, 1e-5f, 1e-5f, label(*t, b ? "layernorm" : "layernorm without bias", n));
        t->layernorm(in_place.data(), in_place.data(), weight.data(), b, n, 1e-5f);
        check_close(in_place, expected, 1e-5f, 1e-5f, label(*t, "layernorm in place", n));
      }
      const std::vector<float> h = random_floats(n, rng, -8.0f, 8.0f);
      struct Activation {
        const char *name;
        void (*KernelTable::*kernel)(float *, size_t);
      };
      const Activation activations[] = {
          {"gelu_tanh", &KernelTable::gelu_tanh}, {"gelu_erf", &KernelTable::gelu_erf}, {"relu", &KernelTable::relu}};
      for (const Activation &a : activations) {
        std::vector<float> expected = h, actual = h;
        (ref.*a.kernel)(expected.data(), n);
        (t->*a.kernel)(actual.data(), n);
        check_close(actual, expected, 1e-5f, 1e-6f, label(*t, a.name, n));
      }
    }
  }
}

// The forward pass attends in groups (the heads sharing a key/value head, a few tokens of a
// batch); batch and thread invariance rest on each query's result being the single-query
// kernel's to the bit, whatever the group: depths 1, 17, 256 and 4097, sliding windows (a later
// first position), mixed spans in one group, every table and cache type.
TEST_CASE("attention groups give every query the single-query kernel's bits") {
  std::vector<const KernelTable *> tables = simd_tables();
  tables.push_back(&mote::kernels::scalar_kernels());
  std::mt19937 rng(36);
  const size_t n_kv_heads = 2, max_pos = 4097 + 3;
  struct Span {
    size_t first, end;
  };
  // Causal spans of a 4-token tile at each depth, windows of 64 and 1000, and a query alone.
  const std::vector<std::vector<Span>> groups = {{{0, 1}},
                                                 {{0, 17}, {0, 17}, {0, 18}, {0, 19}},
                                                 {{0, 256}, {0, 257}, {0, 258}, {0, 259}, {0, 256}, {0, 257}},
                                                 {{0, 4097}, {0, 4098}, {0, 4099}, {0, 4100}},
                                                 {{4033, 4097}, {4034, 4098}, {3098, 4098}, {0, 4098}, {4000, 4001}},
                                                 {{1, 2}, {100, 357}, {63, 64}, {64, 65}, {0, 129}}};
  // 80 and 160: head_dims that are not whole 32s and 64s; 544: an 8-bit cache's keys laid out 16
  // positions at a time on x86.
  for (size_t head_dim : {64, 80, 160, 544}) {
    const size_t kv_stride = n_kv_heads * head_dim, blocks = (head_dim + 31) / 32, scale_stride = n_kv_heads * blocks;
    const std::vector<float> k = random_floats(max_pos * kv_stride, rng), v = random_floats(max_pos * kv_stride, rng);
    const std::vector<uint16_t> k_half = to_halves(k), v_half = to_halves(v);
    std::vector<int8_t> k_q(k.size()), v_q(v.size());
    std::uniform_int_distribution<int> byte(-127, 127);
    for (size_t i = 0; i < k.size(); ++i) {
      k_q[i] = static_cast<int8_t>(byte(rng));
      v_q[i] = static_cast<int8_t>(byte(rng));
    }
    const std::vector<float> k_scale = random_floats(max_pos * scale_stride, rng, 0.0f, 1.0f / 127);
    const std::vector<float> v_scale = random_floats(max_pos * scale_stride, rng, 0.0f, 1.0f / 127);
    const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
    const size_t head = 1;  // the second key/value head: rows strided past the first
    for (const std::vector<Span> &spans : groups) {
      const size_t n = spans.size();
      const std::vector<float> q = random_floats(n * head_dim, rng, -2.0f, 2.0f);
      for (const KernelTable *t : tables) {
        for (const char *cache : {"f32", "f16", "q8_0"}) {
          std::vector<float> out(n * head_dim), scores(n * max_pos), alone_out(head_dim), alone_scores(max_pos);
          std::vector<mote::kernels::AttentionQuery> queries(n);
          for (size_t i = 0; i < n; ++i) {
            queries[i] = {q.data() + i * head_dim, out.data() + i * head_dim, scores.data() + i * max_pos,
                          spans[i].first, spans[i].end};
          }
          const std::string kind(cache);
          const size_t at = head * head_dim, scale_at = head * blocks;
          if (kind == "f32") {
            t->attention_group_f32(queries.data(), n, k.data() + at, v.data() + at, head_dim, kv_stride, scale);
          } else if (kind == "f16") {
            t->attention_group_f16(queries.data(), n, k_half.data() + at, v_half.data() + at, head_dim, kv_stride,
                                   scale);
          } else {
            t->attention_group_q8(queries.data(), n, k_q.data() + at, k_scale.data() + scale_at, v_q.data() + at,
                                  v_scale.data() + scale_at, head_dim, kv_stride, scale_stride, scale);
          }
          for (size_t i = 0; i < n; ++i) {
            const size_t first = spans[i].first, n_pos = spans[i].end - first;
            const size_t from = at + first * kv_stride, scales_from = scale_at + first * scale_stride;
            const float *qi = q.data() + i * head_dim;
            if (kind == "f32") {
              t->attention_f32(alone_out.data(), alone_scores.data(), qi, k.data() + from, v.data() + from, n_pos,
                               head_dim, kv_stride, scale);
            } else if (kind == "f16") {
              t->attention_f16(alone_out.data(), alone_scores.data(), qi, k_half.data() + from, v_half.data() + from,
                               n_pos, head_dim, kv_stride, scale);
            } else {
              t->attention_q8(alone_out.data(), alone_scores.data(), qi, k_q.data() + from,
                              k_scale.data() + scales_from, v_q.data() + from, v_scale.data() + scales_from, n_pos,
                              head_dim, kv_stride, scale_stride, scale);
            }
            const std::string what = std::string(t->isa_name) + " " + kind + " head_dim " + std::to_string(head_dim) +
                                     " query " + std::to_string(i) + " of " + std::to_string(n) + ", positions " +
                                     std::to_string(first) + ".." + std::to_string(spans[i].end);
            CHECK_MESSAGE(std::memcmp(out.data() + i * head_dim, alone_out.data(), head_dim * sizeof(float)) == 0,
                          what);
            CHECK_MESSAGE(std::memcmp(scores.data() + i * max_pos, alone_scores.data(), n_pos * sizeof(float)) == 0,
                          what << " scores");
          }
        }
      }
    }
  }
}

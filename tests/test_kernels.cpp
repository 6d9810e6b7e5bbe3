// The kernels: the scalar twins against hand-computed cases, then every SIMD table this CPU has
// against the scalar twins over edge sizes (1, a SIMD width, width ± 1, multiples, large).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "core/fp16.hpp"
#include "kernels/kernels.hpp"

namespace {

using mote::kernels::Isa;
using mote::kernels::KernelTable;

struct IsaCase {
  Isa isa;
  const char *name;
};
constexpr IsaCase kSimdIsas[] = {{Isa::avx2, "avx2"}, {Isa::avx512, "avx512"}, {Isa::neon, "neon"}};

// The SIMD tables this build and CPU can run, saying which are skipped and why.
std::vector<const KernelTable *> simd_tables() {
  std::vector<const KernelTable *> tables;
  for (const IsaCase &c : kSimdIsas) {
    if (const KernelTable *table = mote::kernels::kernels_for(c.isa)) {
      tables.push_back(table);
    } else {
      MESSAGE("skipping " << std::string(c.name) << ": this build or CPU lacks it");
    }
  }
  return tables;
}

// Sizes around every SIMD width in use (4 on NEON, 8 on AVX2, 16 on AVX-512) plus large ones.
const size_t kSizes[] = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64, 100, 576, 4097};

std::vector<float> random_floats(size_t n, std::mt19937 &rng, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float &f : v) f = dist(rng);
  return v;
}

std::vector<uint16_t> to_halves(const std::vector<float> &v) {
  std::vector<uint16_t> h(v.size());
  for (size_t i = 0; i < v.size(); ++i) h[i] = mote::f32_to_fp16(v[i]);
  return h;
}

// |actual - expected| <= rel * magnitude + abs, where magnitude is what the result was summed
// from (sum of |terms| for dot products), so cancellation does not make the bound meaningless.
void check_close(const std::vector<float> &actual, const std::vector<float> &expected,
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

void check_close(const std::vector<float> &actual, const std::vector<float> &expected, float rel, float abs,
                 const std::string &what) {
  std::vector<float> magnitude(expected.size());
  for (size_t i = 0; i < expected.size(); ++i) magnitude[i] = std::fabs(expected[i]);
  check_close(actual, expected, magnitude, rel, abs, what);
}

// sum_c |w[r, c] x[c]| per row: the scale of a dot product's rounding error.
std::vector<float> row_magnitudes(const std::vector<float> &w, const std::vector<float> &x, size_t rows, size_t cols) {
  std::vector<float> m(rows, 0.0f);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t c = 0; c < cols; ++c) m[r] += std::fabs(w[r * cols + c] * x[c]);
  }
  return m;
}

std::string label(const KernelTable &t, const char *kernel, size_t a, size_t b = 0) {
  return std::string(t.isa_name) + " " + kernel + " " + std::to_string(a) + "x" + std::to_string(b);
}

}  // namespace

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
  for (const IsaCase &c : kSimdIsas) {
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
  const size_t head_dims[] = {1, 7, 8, 9, 16, 17, 32, 48, 64, 100, 128};
  const size_t positions[] = {1, 2, 7, 8, 9, 33, 100, 257};
  const size_t n_kv_heads = 3;  // k and v rows are strided past the other heads
  for (const KernelTable *t : simd_tables()) {
    for (size_t head_dim : head_dims) {
      for (size_t n_pos : positions) {
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
        check_close(actual, expected, magnitude, 1e-5f, 0.0f, label(*t, "attention_q8", head_dim, n_pos));
        check_close(actual_scores, expected_scores, 1e-5f, 1e-9f, label(*t, "attention_q8 scores", head_dim, n_pos));
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

// --- quantized weights: 8-bit activations and integer products --------------------------------

namespace {

using mote::kernels::BlockQ4_0;
using mote::kernels::BlockQ4_1;
using mote::kernels::BlockQ8_0;
using mote::kernels::kQuantBlock;
using mote::kernels::Q8Activations;

// Owns the arrays of one Q8Activations.
struct Activations {
  std::vector<int8_t> q;
  std::vector<float> scale;
  std::vector<int32_t> lane_offset;
  std::vector<float> lane_sum_scaled;
  std::vector<int32_t> block_sum;
  Activations(size_t cols, size_t n_tokens)
      : q(cols * n_tokens),
        scale(cols * n_tokens / 32),
        lane_offset(cols * n_tokens / 4),
        lane_sum_scaled(cols * n_tokens / 4),
        block_sum(cols * n_tokens / 32) {}
  Q8Activations view() {
    return {q.data(), scale.data(), lane_offset.data(), lane_sum_scaled.data(), block_sum.data()};
  }
};

// Random blocks as a converter would write them: any nibbles or int8 values, scales of real
// models' size (and some negative), q4_1 mins of either sign.
template <class Block>
std::vector<Block> random_blocks(size_t n, std::mt19937 &rng) {
  std::vector<Block> blocks(n);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(-0.02f, 0.05f);
  for (Block &b : blocks) {
    uint8_t *bytes = reinterpret_cast<uint8_t *>(&b);
    for (size_t i = 0; i < sizeof b; ++i) bytes[i] = static_cast<uint8_t>(byte(rng));
    b.d = mote::f32_to_fp16(scale(rng));
    if constexpr (std::is_same_v<Block, BlockQ4_1>) b.m = mote::f32_to_fp16(scale(rng) - 0.3f);
  }
  return blocks;
}

// GGUF's dequantization formulas, written out independently of the runtime.
float weight_value(const BlockQ8_0 &b, size_t i) { return mote::fp16_to_f32(b.d) * b.qs[i]; }
int weight_nibble(const uint8_t *qs, size_t i) { return i < 16 ? qs[i] & 15 : qs[i - 16] >> 4; }
float weight_value(const BlockQ4_0 &b, size_t i) { return mote::fp16_to_f32(b.d) * (weight_nibble(b.qs, i) - 8); }
float weight_value(const BlockQ4_1 &b, size_t i) {
  return mote::fp16_to_f32(b.d) * weight_nibble(b.qs, i) + mote::fp16_to_f32(b.m);
}

// Activations with the shapes real ones have: mostly small, some blocks zero, some outliers.
std::vector<float> random_activations(size_t n, std::mt19937 &rng) {
  std::vector<float> x = random_floats(n, rng, -2.0f, 2.0f);
  for (size_t i = 0; i < n; i += 97) x[i] *= 40.0f;
  if (n >= 64) std::fill(x.begin() + 32, x.begin() + 64, 0.0f);  // an all-zero block
  return x;
}

template <class Block>
using QuantMatmul = void (*)(float *, size_t, const Block *, const Q8Activations &, size_t, size_t, size_t);

// The table's product kernel for a block type, plain or interleaved.
template <class Block>
QuantMatmul<Block> quant_matmul(const KernelTable &t) {
  if constexpr (std::is_same_v<Block, BlockQ8_0>) return t.matmul_q8_0;
  if constexpr (std::is_same_v<Block, BlockQ4_0>) return t.matmul_q4_0;
  if constexpr (std::is_same_v<Block, BlockQ4_1>) return t.matmul_q4_1;
  if constexpr (std::is_same_v<Block, mote::kernels::BlockQ8_0x8>) return t.matmul_q8_0x8;
  if constexpr (std::is_same_v<Block, mote::kernels::BlockQ4_0x8>) return t.matmul_q4_0x8;
  if constexpr (std::is_same_v<Block, mote::kernels::BlockQ4_1x8>) return t.matmul_q4_1x8;
}

template <class Block>
const char *quant_name() {
  if constexpr (std::is_same_v<Block, BlockQ8_0>) return "matmul_q8_0";
  if constexpr (std::is_same_v<Block, BlockQ4_0>) return "matmul_q4_0";
  return "matmul_q4_1";
}

const size_t kQuantCols[] = {32, 64, 96, 288, 576, 1536};
const size_t kQuantRows[] = {1, 2, 3, 4, 5, 7, 9};
const size_t kQuantTokens[] = {1, 2, 3, 4, 5, 7};

bool same_bits(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// The scalar twin against the exact product of the dequantized weights and activations.
template <class Block>
void check_scalar_quant_matmul() {
  const KernelTable &ref = mote::kernels::scalar_kernels();
  std::mt19937 rng(11);
  for (size_t cols : kQuantCols) {
    const size_t rows = 5, n_tokens = 3, n_blocks = cols / kQuantBlock;
    const std::vector<Block> w = random_blocks<Block>(rows * n_blocks, rng);
    const std::vector<float> x = random_activations(cols * n_tokens, rng);
    Activations xq(cols, n_tokens);
    ref.quantize_q8(xq.view(), x.data(), cols, n_tokens);
    std::vector<float> out(rows * n_tokens);
    quant_matmul<Block>(ref)(out.data(), rows, w.data(), xq.view(), rows, cols, n_tokens);
    for (size_t t = 0; t < n_tokens; ++t) {
      for (size_t r = 0; r < rows; ++r) {
        double exact = 0.0, magnitude = 0.0;
        for (size_t c = 0; c < cols; ++c) {
          const double term = static_cast<double>(weight_value(w[r * n_blocks + c / 32], c % 32)) *
                              xq.scale[t * n_blocks + c / 32] * xq.q[t * cols + c];
          exact += term;
          magnitude += std::fabs(term);
        }
        CAPTURE(cols);
        CHECK(std::fabs(out[t * rows + r] - exact) <= 1e-5 * magnitude + 1e-6);
      }
    }
  }
}

// Every SIMD table equals the scalar twin bit for bit, at every tile edge; and a row split or
// a token batch never changes a result.
template <class Block>
void check_simd_quant_matmul() {
  const KernelTable &ref = mote::kernels::scalar_kernels();
  std::mt19937 rng(12);
  for (const KernelTable *t : simd_tables()) {
    for (size_t cols : kQuantCols) {
      const size_t n_blocks = cols / kQuantBlock;
      const std::vector<Block> w = random_blocks<Block>(9 * n_blocks, rng);
      const std::vector<float> x = random_activations(cols * 7, rng);
      Activations xq(cols, 7);
      ref.quantize_q8(xq.view(), x.data(), cols, 7);
      for (size_t rows : kQuantRows) {
        for (size_t n_tokens : kQuantTokens) {
          const std::string what = label(*t, quant_name<Block>(), rows, cols) + " tokens " + std::to_string(n_tokens);
          std::vector<float> expected(rows * n_tokens), actual(rows * n_tokens, -1.0f);
          quant_matmul<Block>(ref)(expected.data(), rows, w.data(), xq.view(), rows, cols, n_tokens);
          quant_matmul<Block> (*t)(actual.data(), rows, w.data(), xq.view(), rows, cols, n_tokens);
          CHECK_MESSAGE(same_bits(actual, expected), what);
          // One token at a time and the rows in two calls give the same bits.
          std::vector<float> pieces(rows * n_tokens, -1.0f);
          const size_t split = rows / 2;
          for (size_t tok = 0; tok < n_tokens; ++tok) {
            Q8Activations one = xq.view();
            one.q += tok * cols;
            one.scale += tok * n_blocks;
            one.lane_offset += tok * cols / 4;
            one.lane_sum_scaled += tok * cols / 4;
            one.block_sum += tok * n_blocks;
            float *row_out = pieces.data() + tok * rows;
            quant_matmul<Block> (*t)(row_out, rows, w.data(), one, split, cols, 1);
            quant_matmul<Block> (*t)(row_out + split, rows, w.data() + split * n_blocks, one, rows - split, cols, 1);
          }
          CHECK_MESSAGE(same_bits(pieces, expected), what << " split");
        }
      }
    }
  }
}

}  // namespace

TEST_CASE("scalar quantize_q8 follows its definition") {
  const KernelTable &ref = mote::kernels::scalar_kernels();
  float x[64];
  for (size_t i = 0; i < 32; ++i) x[i] = static_cast<float>(i) - 10.5f;  // amax 21.5 at i = 31
  x[5] = -25.4f;                                                         // the largest magnitude
  for (size_t i = 32; i < 64; ++i) x[i] = 0.0f;
  Activations xq(32, 2);
  ref.quantize_q8(xq.view(), x, 32, 2);
  const float d = 25.4f / 127.0f;
  CHECK(xq.scale[0] == d);
  CHECK(xq.q[5] == -127);
  CHECK(xq.q[31] == static_cast<int8_t>(std::nearbyint(20.5f * (1.0f / d))));
  for (size_t i = 0; i < 32; ++i) CHECK(std::fabs(x[i] - d * xq.q[i]) <= d / 2 * 1.0001f);
  for (size_t k = 0; k < 8; ++k) {
    const int32_t sum = xq.q[4 * k] + xq.q[4 * k + 1] + xq.q[4 * k + 2] + xq.q[4 * k + 3];
    CHECK(xq.lane_offset[k] == 8 * sum);
    CHECK(xq.lane_sum_scaled[k] == d * static_cast<float>(sum));
  }
  int32_t block_sum = 0;
  for (size_t i = 0; i < 32; ++i) block_sum += xq.q[i];
  CHECK(xq.block_sum[0] == block_sum);
  CHECK(xq.scale[1] == 0.0f);  // an all-zero block
  for (size_t i = 32; i < 64; ++i) CHECK(xq.q[i] == 0);
}

TEST_CASE("scalar quantized products equal the dequantized dot product") {
  check_scalar_quant_matmul<BlockQ8_0>();
  check_scalar_quant_matmul<BlockQ4_0>();
  check_scalar_quant_matmul<BlockQ4_1>();
}

TEST_CASE("simd quantize_q8 matches the scalar twin bit for bit") {
  const KernelTable &ref = mote::kernels::scalar_kernels();
  std::mt19937 rng(13);
  for (const KernelTable *t : simd_tables()) {
    for (size_t cols : kQuantCols) {
      const std::vector<float> x = random_activations(cols * 3, rng);
      Activations expected(cols, 3), actual(cols, 3);
      ref.quantize_q8(expected.view(), x.data(), cols, 3);
      t->quantize_q8(actual.view(), x.data(), cols, 3);
      const std::string what = label(*t, "quantize_q8", cols);
      CHECK_MESSAGE(actual.q == expected.q, what);
      CHECK_MESSAGE(actual.scale == expected.scale, what);
      CHECK_MESSAGE(actual.lane_offset == expected.lane_offset, what);
      CHECK_MESSAGE(actual.lane_sum_scaled == expected.lane_sum_scaled, what);
      CHECK_MESSAGE(actual.block_sum == expected.block_sum, what);
    }
  }
}

TEST_CASE("simd quantized products match the scalar twin bit for bit") {
  check_simd_quant_matmul<BlockQ8_0>();
  check_simd_quant_matmul<BlockQ4_0>();
  check_simd_quant_matmul<BlockQ4_1>();
}

// --- the row-interleaved x8 layouts -------------------------------------------------------------

namespace {

using mote::kernels::BlockQ4_0x8;
using mote::kernels::BlockQ4_1x8;
using mote::kernels::BlockQ8_0x8;

// Plain blocks of rows 8g .. 8g + 7 as x8 group blocks, written from quant.hpp's formula: quant
// byte j of row i goes to qs[(8 * (j / 4) + i) * 4 + j % 4].
template <class Interleaved, class Plain>
std::vector<Interleaved> interleave(const std::vector<Plain> &plain, size_t rows, size_t n_blocks) {
  std::vector<Interleaved> out(rows / 8 * n_blocks);
  for (size_t g = 0; g < rows / 8; ++g) {
    for (size_t b = 0; b < n_blocks; ++b) {
      Interleaved &dst = out[g * n_blocks + b];
      for (size_t i = 0; i < 8; ++i) {
        const Plain &src = plain[(8 * g + i) * n_blocks + b];
        dst.d[i] = src.d;
        if constexpr (std::is_same_v<Plain, BlockQ4_1>) dst.m[i] = src.m;
        for (size_t j = 0; j < sizeof src.qs; ++j) {
          std::memcpy(reinterpret_cast<uint8_t *>(dst.qs) + (8 * (j / 4) + i) * 4 + j % 4,
                      reinterpret_cast<const uint8_t *>(src.qs) + j, 1);
        }
      }
    }
  }
  return out;
}

// The scalar twin against the exact dot product of the same weights in plain blocks; every
// SIMD table against the scalar twin bit for bit, whole, per token and with the rows split at
// a group boundary.
template <class Interleaved, class Plain>
void check_interleaved_matmul(const char *name) {
  const KernelTable &ref = mote::kernels::scalar_kernels();
  std::mt19937 rng(21);
  std::vector<const KernelTable *> tables = simd_tables();
  for (size_t cols : kQuantCols) {
    const size_t n_blocks = cols / kQuantBlock, max_rows = 40, max_tokens = 7;
    const std::vector<Plain> plain = random_blocks<Plain>(max_rows * n_blocks, rng);
    const std::vector<Interleaved> w = interleave<Interleaved>(plain, max_rows, n_blocks);
    const std::vector<float> x = random_activations(cols * max_tokens, rng);
    Activations xq(cols, max_tokens);
    ref.quantize_q8(xq.view(), x.data(), cols, max_tokens);
    for (size_t rows : {size_t{8}, size_t{16}, size_t{24}, size_t{40}}) {
      for (size_t n_tokens : kQuantTokens) {
        const std::string what = std::string(name) + " " + std::to_string(rows) + "x" + std::to_string(cols) +
                                 " tokens " + std::to_string(n_tokens);
        std::vector<float> expected(rows * n_tokens);
        quant_matmul<Interleaved>(ref)(expected.data(), rows, w.data(), xq.view(), rows, cols, n_tokens);
        for (size_t t = 0; t < n_tokens; ++t) {
          for (size_t r = 0; r < rows; ++r) {
            double exact = 0.0, magnitude = 0.0;
            for (size_t c = 0; c < cols; ++c) {
              const double term = static_cast<double>(weight_value(plain[r * n_blocks + c / 32], c % 32)) *
                                  xq.scale[t * n_blocks + c / 32] * xq.q[t * cols + c];
              exact += term;
              magnitude += std::fabs(term);
            }
            CHECK_MESSAGE(std::fabs(expected[t * rows + r] - exact) <= 1e-5 * magnitude + 1e-6, what);
          }
        }
        for (const KernelTable *table : tables) {
          std::vector<float> actual(rows * n_tokens, -1.0f), pieces(rows * n_tokens, -1.0f);
          quant_matmul<Interleaved> (*table)(actual.data(), rows, w.data(), xq.view(), rows, cols, n_tokens);
          CHECK_MESSAGE(same_bits(actual, expected), table->isa_name << " " << what);
          const size_t split = rows / 16 * 8;  // a group boundary (0 for one group)
          for (size_t tok = 0; tok < n_tokens; ++tok) {
            Q8Activations one = xq.view();
            one.q += tok * cols;
            one.scale += tok * n_blocks;
            one.block_sum += tok * n_blocks;
            float *row_out = pieces.data() + tok * rows;
            quant_matmul<Interleaved> (*table)(row_out, rows, w.data(), one, split, cols, 1);
            quant_matmul<Interleaved> (*table)(row_out + split, rows, w.data() + split / 8 * n_blocks, one,
                                               rows - split, cols, 1);
          }
          CHECK_MESSAGE(same_bits(pieces, expected), table->isa_name << " " << what << " split");
        }
      }
    }
  }
}

}  // namespace

TEST_CASE("interleaved quantized products: exact sums, every SIMD table bit-identical to the scalar twin") {
  check_interleaved_matmul<BlockQ8_0x8, BlockQ8_0>("matmul_q8_0x8");
  check_interleaved_matmul<BlockQ4_0x8, BlockQ4_0>("matmul_q4_0x8");
  check_interleaved_matmul<BlockQ4_1x8, BlockQ4_1>("matmul_q4_1x8");
}

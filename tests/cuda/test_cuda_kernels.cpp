// Each CUDA kernel against the CPU's scalar twin (kernels/*_ref.cpp) or the exact dequantized
// weights, on random inputs of odd and large sizes. f32 within 1e-5 relative to the sum of the
// products' magnitudes; the quantized types, read in their stored blocks, within the same bound
// of the exactly dequantized product (the GPU multiplies f32 activations, not 8-bit ones).
// Skipped (saying so) where no CUDA device is present.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "cuda_kernels.hpp"
#include "cuda_test_support.hpp"
#include "kernels/ref.hpp"

using namespace mote_cuda_test;
namespace cuda = mote::cuda;

namespace {

void check_close(const std::vector<float> &got, const std::vector<float> &want, const std::vector<float> &magnitude,
                 float relative) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    CHECK(std::fabs(got[i] - want[i]) <= relative * std::max(magnitude[i], 1e-6f));
  }
}

}  // namespace

TEST_CASE("cuda kernels: matmul and embed of every weight type against the dequantized rows") {
  if (!have_device()) return;
  std::mt19937 rng(11);
  for (DType dtype : kWeightTypes) {
    const bool quantized = mote::format::dtype_traits(static_cast<uint32_t>(dtype))->block_elements > 1;
    const bool x8 = dtype == DType::q8_0x8 || dtype == DType::q4_0x8 || dtype == DType::q4_1x8;
    const size_t row_counts[] = {8, 40, 1000, 4104};
    const size_t col_counts[] = {quantized ? 32u : 1u, quantized ? 96u : 33u, quantized ? 576u : 577u, 4096};
    for (size_t rows : row_counts) {
      for (size_t cols : col_counts) {
        if (x8 && rows % 8 != 0) continue;
        CAPTURE(mote::format::dtype_traits(static_cast<uint32_t>(dtype))->name);
        CAPTURE(rows);
        CAPTURE(cols);
        const size_t n_tokens = 3;
        const std::vector<unsigned char> w = random_matrix(dtype, rows, cols, rng);
        const std::vector<float> x = random_floats(n_tokens * cols, rng);
        // The oracle: every row dequantized exactly by the CPU's row of this type, dotted in double.
        const mote::WeightType *type = mote::weight_type(static_cast<uint32_t>(dtype));
        REQUIRE(type != nullptr);
        std::vector<float> dequantized(rows * cols), want(n_tokens * rows), magnitude(n_tokens * rows);
        for (size_t r = 0; r < rows; ++r) type->dequantize_row(dequantized.data() + r * cols, w.data(), r, cols);
        for (size_t t = 0; t < n_tokens; ++t) {
          for (size_t r = 0; r < rows; ++r) {
            double sum = 0.0, abs = 0.0;
            for (size_t c = 0; c < cols; ++c) {
              sum += static_cast<double>(dequantized[r * cols + c]) * x[t * cols + c];
              abs += std::fabs(static_cast<double>(dequantized[r * cols + c]) * x[t * cols + c]);
            }
            want[t * rows + r] = static_cast<float>(sum);
            magnitude[t * rows + r] = static_cast<float>(abs);
          }
        }
        DeviceBuffer<unsigned char> dw(w);
        DeviceBuffer<float> dx(x), dout(n_tokens * rows);
        const cuda::DeviceMatrix m{dw.ptr, static_cast<uint32_t>(dtype), static_cast<uint32_t>(rows),
                                   static_cast<uint32_t>(cols), mote::weight_row_bytes(dtype, cols)};
        REQUIRE(cuda::matmul(nullptr, dout.ptr, m, dx.ptr, n_tokens) == cudaSuccess);
        check_close(dout.host(), want, magnitude, 1e-5f);

        // Embedding lookups: rows 0, the last and one between, exactly the CPU's floats (q4_1's
        // d * n + m may be fused on the GPU: within one rounding).
        const std::vector<int32_t> tokens = {0, static_cast<int32_t>(rows - 1), static_cast<int32_t>(rows / 2)};
        DeviceBuffer<int32_t> dtokens(tokens);
        DeviceBuffer<float> dembed(tokens.size() * cols);
        REQUIRE(cuda::embed(nullptr, dembed.ptr, m, dtokens.ptr, tokens.size()) == cudaSuccess);
        const std::vector<float> got = dembed.host();
        for (size_t t = 0; t < tokens.size(); ++t) {
          for (size_t c = 0; c < cols; ++c) {
            const float expected = dequantized[tokens[t] * cols + c];
            CHECK(std::fabs(got[t * cols + c] - expected) <= 1e-6f * std::max(std::fabs(expected), 1.0f));
          }
        }
      }
    }
  }
}

TEST_CASE("cuda kernels: rmsnorm, swiglu, add and argmax against the scalar twins") {
  if (!have_device()) return;
  std::mt19937 rng(12);
  for (size_t dim : {1u, 7u, 576u, 4097u}) {
    CAPTURE(dim);
    const size_t n_tokens = 3;
    const std::vector<float> x = random_floats(n_tokens * dim, rng, 3.0f), w = random_floats(dim, rng);
    std::vector<float> want(n_tokens * dim), magnitude(n_tokens * dim);
    for (size_t t = 0; t < n_tokens; ++t)
      kernels::ref::rmsnorm(want.data() + t * dim, x.data() + t * dim, w.data(), dim, 1e-5f);
    for (size_t i = 0; i < want.size(); ++i) magnitude[i] = std::fabs(want[i]);
    DeviceBuffer<float> dx(x), dw(w), dout(n_tokens * dim);
    REQUIRE(cuda::rmsnorm(nullptr, dout.ptr, dx.ptr, dw.ptr, dim, 1e-5f, n_tokens) == cudaSuccess);
    check_close(dout.host(), want, magnitude, 1e-5f);
    REQUIRE(cuda::rmsnorm(nullptr, dx.ptr, dx.ptr, dw.ptr, dim, 1e-5f, n_tokens) == cudaSuccess);  // in place
    check_close(dx.host(), want, magnitude, 1e-5f);
  }
  for (size_t n : {1u, 255u, 257u, 100003u}) {
    CAPTURE(n);
    const std::vector<float> gate = random_floats(n, rng, 6.0f), up = random_floats(n, rng);
    std::vector<float> want = gate, magnitude(n);
    kernels::ref::swiglu(want.data(), up.data(), n);
    for (size_t i = 0; i < n; ++i) magnitude[i] = std::fabs(want[i]);
    DeviceBuffer<float> dgate(gate), dup(up);
    REQUIRE(cuda::swiglu(nullptr, dgate.ptr, dup.ptr, n) == cudaSuccess);
    check_close(dgate.host(), want, magnitude, 1e-5f);

    std::vector<float> sum = gate;
    kernels::ref::add(sum.data(), up.data(), n);
    DeviceBuffer<float> dsum(gate);
    REQUIRE(cuda::add(nullptr, dsum.ptr, dup.ptr, n) == cudaSuccess);
    CHECK(dsum.host() == sum);  // one addition each: exact

    std::vector<float> values = gate;
    values[n / 3] = 100.0f;
    values[n - 1] = 100.0f;  // a tie: the first index wins, as std::max_element's
    DeviceBuffer<float> dvalues(values);
    DeviceBuffer<int32_t> dindex(1);
    REQUIRE(cuda::argmax(nullptr, dindex.ptr, dvalues.ptr, n) == cudaSuccess);
    CHECK(dindex.host()[0] == static_cast<int32_t>(std::max_element(values.begin(), values.end()) - values.begin()));
  }
}

TEST_CASE("cuda kernels: rope (both layouts) and the KV store against the CPU") {
  if (!have_device()) return;
  std::mt19937 rng(13);
  const size_t n_heads = 9, n_kv_heads = 3, head_dim = 64, n_tokens = 5, half = head_dim / 2;
  const int32_t pos = 1234;
  std::vector<double> inv_freq(half);
  for (size_t i = 0; i < half; ++i) inv_freq[i] = std::pow(10000.0, -2.0 * i / head_dim);
  for (bool split : {false, true}) {
    CAPTURE(split);
    const std::vector<float> q = random_floats(n_tokens * n_heads * head_dim, rng);
    const std::vector<float> k = random_floats(n_tokens * n_kv_heads * head_dim, rng);
    std::vector<float> want_q = q, want_k = k;
    for (size_t t = 0; t < n_tokens; ++t) {
      std::vector<float> cos(half), sin(half);
      for (size_t i = 0; i < half; ++i) {
        const double angle = static_cast<double>(pos + t) * inv_freq[i];
        cos[i] = static_cast<float>(std::cos(angle));
        sin[i] = static_cast<float>(std::sin(angle));
      }
      const auto rope = split ? kernels::ref::rope_split_half : kernels::ref::rope_interleaved;
      rope(want_q.data() + t * n_heads * head_dim, cos.data(), sin.data(), n_heads, head_dim);
      rope(want_k.data() + t * n_kv_heads * head_dim, cos.data(), sin.data(), n_kv_heads, head_dim);
    }
    DeviceBuffer<float> dq(q), dk(k);
    DeviceBuffer<double> dfreq(inv_freq);
    DeviceBuffer<int32_t> dpos(std::vector<int32_t>{pos});
    REQUIRE(cuda::rope(nullptr, dq.ptr, dk.ptr, dfreq.ptr, dpos.ptr, n_heads, n_kv_heads, head_dim, split, n_tokens) ==
            cudaSuccess);
    std::vector<float> ones_q(q.size(), 1.0f), ones_k(k.size(), 1.0f);
    check_close(dq.host(), want_q, ones_q, 2e-6f);
    check_close(dk.host(), want_k, ones_k, 2e-6f);
  }
  // The cache row of each token: f32 copied, f16 rounded to nearest even as f32_to_fp16.
  const size_t kv_dim = n_kv_heads * head_dim, context = 16;
  const std::vector<float> src = random_floats(2 * kv_dim, rng, 70000.0f);
  DeviceBuffer<float> dsrc(src), dcache32(context * kv_dim);
  DeviceBuffer<uint16_t> dcache16(context * kv_dim);
  DeviceBuffer<int32_t> dpos(std::vector<int32_t>{7});
  REQUIRE(cuda::store_kv(nullptr, dcache32.ptr, false, dsrc.ptr, dpos.ptr, kv_dim, 2) == cudaSuccess);
  REQUIRE(cuda::store_kv(nullptr, dcache16.ptr, true, dsrc.ptr, dpos.ptr, kv_dim, 2) == cudaSuccess);
  const std::vector<float> cache32 = dcache32.host();
  const std::vector<uint16_t> cache16 = dcache16.host();
  for (size_t i = 0; i < 2 * kv_dim; ++i) {
    CHECK(cache32[7 * kv_dim + i] == src[i]);
    CHECK(cache16[7 * kv_dim + i] == mote::f32_to_fp16(src[i]));
  }
}

TEST_CASE("cuda kernels: attention (one block per head and split) against the scalar twin, GQA, f32 and f16") {
  if (!have_device()) return;
  std::mt19937 rng(14);
  const size_t n_heads = 8, n_kv_heads = 2, head_dim = 48, n_tokens = 3;
  const size_t q_dim = n_heads * head_dim, kv_dim = n_kv_heads * head_dim;
  for (size_t context : {7u, 300u, 2048u}) {
    for (uint32_t n_splits : {1u, 3u, 8u}) {
      for (bool f16 : {false, true}) {
        CAPTURE(context);
        CAPTURE(n_splits);
        CAPTURE(f16);
        const int32_t pos = static_cast<int32_t>(context - n_tokens);  // the batch ends at the context's end
        const std::vector<float> q = random_floats(n_tokens * q_dim, rng);
        std::vector<float> keys = random_floats(context * kv_dim, rng, 2.0f),
                           values = random_floats(context * kv_dim, rng);
        std::vector<uint16_t> keys16(keys.size()), values16(values.size());
        for (size_t i = 0; i < keys.size(); ++i) {
          keys16[i] = mote::f32_to_fp16(keys[i]);
          values16[i] = mote::f32_to_fp16(values[i]);
        }
        const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
        std::vector<float> want(n_tokens * q_dim), scores(context), ones(want.size(), 1.0f);
        for (size_t t = 0; t < n_tokens; ++t) {
          for (size_t h = 0; h < n_heads; ++h) {
            const size_t kv = (h / (n_heads / n_kv_heads)) * head_dim, n_pos = pos + t + 1;
            if (f16) {
              kernels::ref::attention_f16(want.data() + t * q_dim + h * head_dim, scores.data(),
                                          q.data() + t * q_dim + h * head_dim, keys16.data() + kv, values16.data() + kv,
                                          n_pos, head_dim, kv_dim, scale);
            } else {
              kernels::ref::attention_f32(want.data() + t * q_dim + h * head_dim, scores.data(),
                                          q.data() + t * q_dim + h * head_dim, keys.data() + kv, values.data() + kv,
                                          n_pos, head_dim, kv_dim, scale);
            }
          }
        }
        DeviceBuffer<float> dq(q), dk(keys), dv(values), dout(want.size());
        DeviceBuffer<uint16_t> dk16(keys16), dv16(values16);
        DeviceBuffer<float> dscores(n_tokens * n_heads * context),
            dpartial(n_tokens * n_heads * n_splits * (head_dim + 2));
        DeviceBuffer<int32_t> dpos(std::vector<int32_t>{pos});
        const cuda::AttentionArgs args{dout.ptr,
                                       dq.ptr,
                                       f16 ? static_cast<const void *>(dk16.ptr) : dk.ptr,
                                       f16 ? static_cast<const void *>(dv16.ptr) : dv.ptr,
                                       f16,
                                       dscores.ptr,
                                       dpartial.ptr,
                                       dpos.ptr,
                                       n_tokens,
                                       n_heads,
                                       n_kv_heads,
                                       head_dim,
                                       static_cast<uint32_t>(context),
                                       n_splits,
                                       true,
                                       scale};
        REQUIRE(cuda::attention(nullptr, args) == cudaSuccess);
        check_close(dout.host(), want, ones, 1e-5f);  // outputs are averages of values in [-1, 1]
      }
    }
  }
}

// matvec_f32 / matvec_f16 on every instruction set this CPU has, at the shapes of real models.
// Decoding is bound by reading the weights, so the figure to compare is bytes/s (GB/s).
// matmul_f32 / matmul_f16 batch n_tokens vectors per weight pass (prompt prefill): compare
// their tokens/s (items_per_second) and GFLOP/s with matvec's at the same shape.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>

#include "core/fp16.hpp"
#include "kernels/kernels.hpp"

namespace {

using mote::kernels::Isa;
using mote::kernels::KernelTable;

struct Shape {
  size_t rows;
  size_t cols;
};
// stories260K-ish attention, GPT-2-small-ish FFN, SmolLM2-135M FFN, llama2.c 32k classifier,
// SmolLM2-135M classifier.
constexpr Shape kShapes[] = {{288, 288}, {768, 288}, {576, 1536}, {32000, 288}, {49152, 576}};

// 64-byte aligned, as tensors are in a .mote file.
template <class T>
struct AlignedBuffer {
  explicit AlignedBuffer(size_t n) : data(static_cast<T *>(std::aligned_alloc(64, (n * sizeof(T) + 63) / 64 * 64))) {}
  ~AlignedBuffer() { std::free(data); }
  AlignedBuffer(const AlignedBuffer &) = delete;
  AlignedBuffer &operator=(const AlignedBuffer &) = delete;
  T *data;
};

// Uniform values in [-1, 1), stored as the weight type (f32 or IEEE half bits).
template <class Weight>
void fill_random(Weight *values, size_t n, std::mt19937 &rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (size_t i = 0; i < n; ++i) {
    if constexpr (sizeof(Weight) == 2) {
      values[i] = mote::f32_to_fp16(dist(rng));
    } else {
      values[i] = dist(rng);
    }
  }
}

template <class Weight>
void bench_matvec(benchmark::State &state, const KernelTable *table, Shape shape) {
  const size_t rows = shape.rows, cols = shape.cols;
  AlignedBuffer<Weight> w(rows * cols);
  AlignedBuffer<float> x(cols), out(rows);
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  fill_random(w.data, rows * cols, rng);
  for (size_t i = 0; i < cols; ++i) x.data[i] = dist(rng);

  for (auto _ : state) {
    if constexpr (sizeof(Weight) == 2) {
      table->matvec_f16(out.data, w.data, x.data, rows, cols);
    } else {
      table->matvec_f32(out.data, w.data, x.data, rows, cols);
    }
    benchmark::DoNotOptimize(out.data);
    benchmark::ClobberMemory();
  }
  const int64_t bytes = static_cast<int64_t>(rows * cols * sizeof(Weight) + (cols + rows) * sizeof(float));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * bytes);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));  // one token per call
  state.counters["weights_MB"] = static_cast<double>(rows * cols * sizeof(Weight)) / 1e6;
  state.counters["GFLOP/s"] = benchmark::Counter(
      2e-9 * static_cast<double>(rows * cols) * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

// Prefill's batched products (shapes where prompts are processed a few tokens at a time).
constexpr Shape kMatmulShapes[] = {{288, 288}, {768, 288}, {576, 1536}};
constexpr size_t kMatmulTokens[] = {1, 4, 16, 64};

template <class Weight>
void bench_matmul(benchmark::State &state, const KernelTable *table, Shape shape, size_t n_tokens) {
  const size_t rows = shape.rows, cols = shape.cols;
  AlignedBuffer<Weight> w(rows * cols);
  AlignedBuffer<float> x(n_tokens * cols), out(n_tokens * rows);
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  fill_random(w.data, rows * cols, rng);
  for (size_t i = 0; i < n_tokens * cols; ++i) x.data[i] = dist(rng);

  for (auto _ : state) {
    if constexpr (sizeof(Weight) == 2) {
      table->matmul_f16(out.data, rows, w.data, x.data, rows, cols, n_tokens);
    } else {
      table->matmul_f32(out.data, rows, w.data, x.data, rows, cols, n_tokens);
    }
    benchmark::DoNotOptimize(out.data);
    benchmark::ClobberMemory();
  }
  const int64_t bytes = static_cast<int64_t>(rows * cols * sizeof(Weight) + n_tokens * (cols + rows) * sizeof(float));
  const auto calls = static_cast<int64_t>(state.iterations());
  state.SetBytesProcessed(calls * bytes);
  state.SetItemsProcessed(calls * static_cast<int64_t>(n_tokens));  // tokens
  state.counters["weights_MB"] = static_cast<double>(rows * cols * sizeof(Weight)) / 1e6;
  state.counters["GFLOP/s"] = benchmark::Counter(
      2e-9 * static_cast<double>(rows * cols * n_tokens) * static_cast<double>(calls), benchmark::Counter::kIsRate);
}

void register_all() {
  constexpr Isa kIsas[] = {Isa::scalar, Isa::avx2, Isa::avx512, Isa::neon};
  for (Isa isa : kIsas) {
    const KernelTable *table = mote::kernels::kernels_for(isa);
    if (table == nullptr) continue;  // not in this build or not on this CPU
    for (const Shape &shape : kShapes) {
      const std::string suffix =
          std::string("/") + table->isa_name + "/" + std::to_string(shape.rows) + "x" + std::to_string(shape.cols);
      benchmark::RegisterBenchmark(("matvec_f32" + suffix).c_str(), bench_matvec<float>, table, shape);
      benchmark::RegisterBenchmark(("matvec_f16" + suffix).c_str(), bench_matvec<uint16_t>, table, shape);
    }
    for (const Shape &shape : kMatmulShapes) {
      for (size_t n_tokens : kMatmulTokens) {
        const std::string suffix = std::string("/") + table->isa_name + "/" + std::to_string(shape.rows) + "x" +
                                   std::to_string(shape.cols) + "/tokens:" + std::to_string(n_tokens);
        benchmark::RegisterBenchmark(("matmul_f32" + suffix).c_str(), bench_matmul<float>, table, shape, n_tokens);
        benchmark::RegisterBenchmark(("matmul_f16" + suffix).c_str(), bench_matmul<uint16_t>, table, shape, n_tokens);
      }
    }
  }
}

}  // namespace

int main(int argc, char **argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

// matvec_f32 / matvec_f16 on every instruction set this CPU has, at the shapes of real models.
// Decoding is bound by reading the weights, so the figure to compare is bytes/s (GB/s).
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
  explicit AlignedBuffer(size_t n)
      : data(static_cast<T *>(std::aligned_alloc(64, (n * sizeof(T) + 63) / 64 * 64))) {}
  ~AlignedBuffer() { std::free(data); }
  AlignedBuffer(const AlignedBuffer &) = delete;
  AlignedBuffer &operator=(const AlignedBuffer &) = delete;
  T *data;
};

template <class Weight>
void bench_matvec(benchmark::State &state, const KernelTable *table, Shape shape) {
  const size_t rows = shape.rows, cols = shape.cols;
  AlignedBuffer<Weight> w(rows * cols);
  AlignedBuffer<float> x(cols), out(rows);
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (size_t i = 0; i < rows * cols; ++i) {
    if constexpr (sizeof(Weight) == 2) {
      w.data[i] = mote::f32_to_fp16(dist(rng));
    } else {
      w.data[i] = dist(rng);
    }
  }
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
  const int64_t bytes =
      static_cast<int64_t>(rows * cols * sizeof(Weight) + (cols + rows) * sizeof(float));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * bytes);
  state.counters["weights_MB"] = static_cast<double>(rows * cols * sizeof(Weight)) / 1e6;
}

void register_all() {
  constexpr Isa kIsas[] = {Isa::scalar, Isa::avx2, Isa::avx512, Isa::neon};
  for (Isa isa : kIsas) {
    const KernelTable *table = mote::kernels::kernels_for(isa);
    if (table == nullptr) continue;  // not in this build or not on this CPU
    for (const Shape &shape : kShapes) {
      const std::string suffix = std::string("/") + table->isa_name + "/" +
                                 std::to_string(shape.rows) + "x" + std::to_string(shape.cols);
      benchmark::RegisterBenchmark(("matvec_f32" + suffix).c_str(), bench_matvec<float>, table,
                                   shape);
      benchmark::RegisterBenchmark(("matvec_f16" + suffix).c_str(), bench_matvec<uint16_t>, table,
                                   shape);
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

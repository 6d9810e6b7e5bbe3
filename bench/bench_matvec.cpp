// Every weight type's matrix products (each row of model/weight_types: f32, f16, q8_0, q4_0,
// q4_1, q5_0, q5_1, iq4_nl, the x8 interleavings, ...) on every instruction set this CPU has, at
// the shapes of real models.
// Decoding (one token) is bound by reading the weights, so its figure to compare is bytes/s
// (GB/s); prefill batches n_tokens vectors per weight pass: compare tokens/s (items_per_second)
// and GFLOP/s. Quantized products include quantizing their input to 8-bit blocks, as the
// forward pass does.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

#include "core/fp16.hpp"
#include "kernels/kernels.hpp"
#include "model/weight_types.hpp"

namespace {

using mote::format::DType;
using mote::kernels::Isa;
using mote::kernels::KernelTable;

struct Shape {
  size_t rows;
  size_t cols;
};
// stories15M attention and FFN, SmolLM2-135M attention and FFN (down), llama2.c 32k
// classifier, SmolLM2-135M classifier, Qwen2.5-1.5B attention (rows of whole 256-value blocks),
// FFN up/gate, FFN down and classifier (the shapes bench/kernel_compare.py puts next to ggml's).
constexpr Shape kMatvecShapes[] = {{288, 288},   {768, 288},   {576, 576},   {576, 1536},  {32000, 288},
                                   {49152, 576}, {1536, 1536}, {8960, 1536}, {1536, 8960}, {151936, 1536}};
// Prefill's batched products, and the short batches of a speculative check (2-8 tokens: a step
// of n tokens should cost about one token's, issue 37).
constexpr Shape kMatmulShapes[] = {{288, 288}, {576, 576}, {1536, 576}, {576, 1536}, {1536, 1536}};
constexpr size_t kMatmulTokens[] = {2, 3, 4, 8, 16, 64};

// 64-byte aligned, as tensors are in a .mote file.
template <class T>
struct AlignedBuffer {
  explicit AlignedBuffer(size_t n) : data(static_cast<T *>(std::aligned_alloc(64, (n * sizeof(T) + 63) / 64 * 64))) {}
  ~AlignedBuffer() { std::free(data); }
  AlignedBuffer(const AlignedBuffer &) = delete;
  AlignedBuffer &operator=(const AlignedBuffer &) = delete;
  T *data;
};

// Weights of any type: f32 in [-1, 1), halves of those, or quantized blocks of random bytes
// whose scales (every block's first two halves) are small halves.
void fill_weights(DType dtype, uint8_t *bytes, size_t n_bytes, size_t n_values, std::mt19937 &rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  if (dtype == DType::f32) {
    for (size_t i = 0; i < n_values; ++i) reinterpret_cast<float *>(bytes)[i] = dist(rng);
    return;
  }
  if (dtype == DType::f16) {
    for (size_t i = 0; i < n_values; ++i) reinterpret_cast<uint16_t *>(bytes)[i] = mote::f32_to_fp16(dist(rng));
    return;
  }
  for (size_t i = 0; i < n_bytes; ++i) bytes[i] = static_cast<uint8_t>(rng());
  // Each block keeps its halves where its format row says: d (and m), one per row in the x8
  // layouts (d[8], then m[8]).
  const mote::format::DTypeTraits &traits = *mote::format::dtype_traits(static_cast<uint32_t>(dtype));
  const size_t rows_per_block = traits.interleaved_rows;
  const size_t halves = rows_per_block * traits.scale_fields;
  const size_t block_bytes = traits.block_bytes * rows_per_block;
  for (size_t b = 0; b < n_bytes; b += block_bytes) {
    for (size_t h = 0; h < halves; ++h) {
      const uint16_t scale = mote::f32_to_fp16((h < rows_per_block ? 0.01f : 0.1f) * dist(rng));
      std::memcpy(bytes + b + traits.scale_offset + 2 * h, &scale, 2);
    }
  }
}

void bench_product(benchmark::State &state, const KernelTable *table, DType dtype, Shape shape, size_t n_tokens) {
  const size_t rows = shape.rows, cols = shape.cols;
  const mote::WeightType &type = *mote::weight_type(static_cast<uint32_t>(dtype));
  const size_t weight_bytes = rows * mote::weight_row_bytes(dtype, cols);
  AlignedBuffer<uint8_t> w(weight_bytes);
  AlignedBuffer<float> x(n_tokens * cols), out(n_tokens * rows);
  AlignedBuffer<uint8_t> q8(n_tokens * mote::kernels::q8_activation_bytes(cols));
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  fill_weights(dtype, w.data, weight_bytes, rows * cols, rng);
  for (size_t i = 0; i < n_tokens * cols; ++i) x.data[i] = dist(rng);
  mote::MatmulInput input{x.data, {}};
  if (type.activation == mote::ActivationFormat::q8) {
    // Each array in turn, 4-byte elements after the quants (q8_activation_bytes covers them).
    uint8_t *p = q8.data;
    const auto take = [&](size_t values_per_element, size_t element_bytes) {
      uint8_t *at = p;
      p += n_tokens * cols / values_per_element * element_bytes;
      return at;
    };
    input.q8.q = reinterpret_cast<int8_t *>(take(1, 1));
    input.q8.scale = reinterpret_cast<float *>(take(mote::kernels::kQuantBlock, 4));
    input.q8.lane_offset = reinterpret_cast<int32_t *>(take(mote::kernels::kLaneElements, 4));
    input.q8.lane_sum_scaled = reinterpret_cast<float *>(take(mote::kernels::kLaneElements, 4));
    input.q8.block_sum = reinterpret_cast<int32_t *>(take(mote::kernels::kQuantBlock, 4));
    input.q8.half_sum = reinterpret_cast<int32_t *>(take(mote::kernels::kHalfBlock, 4));
    input.q8.scaled_sum = reinterpret_cast<float *>(take(mote::kernels::kQuantBlock, 4));
  }

  for (auto _ : state) {
    if (input.q8.q != nullptr) table->quantize_q8(input.q8, x.data, cols, n_tokens);
    type.matmul(*table, out.data, rows, w.data, input, rows, cols, n_tokens);
    benchmark::DoNotOptimize(out.data);
    benchmark::ClobberMemory();
  }
  const auto calls = static_cast<int64_t>(state.iterations());
  const int64_t bytes = static_cast<int64_t>(weight_bytes + n_tokens * (cols + rows) * sizeof(float));
  state.SetBytesProcessed(calls * bytes);
  state.SetItemsProcessed(calls * static_cast<int64_t>(n_tokens));  // tokens
  state.counters["weights_MB"] = static_cast<double>(weight_bytes) / 1e6;
  state.counters["GFLOP/s"] = benchmark::Counter(
      2e-9 * static_cast<double>(rows * cols * n_tokens) * static_cast<double>(calls), benchmark::Counter::kIsRate);
}

void register_product(const KernelTable *table, DType dtype, Shape shape, size_t n_tokens) {
  const char *dtype_name = mote::format::dtype_traits(static_cast<uint32_t>(dtype))->name;
  std::string name = std::string(n_tokens == 1 ? "matvec_" : "matmul_") + dtype_name + "/" + table->isa_name + "/" +
                     std::to_string(shape.rows) + "x" + std::to_string(shape.cols);
  if (n_tokens > 1) name += "/tokens:" + std::to_string(n_tokens);
  benchmark::RegisterBenchmark(name.c_str(), bench_product, table, dtype, shape, n_tokens);
}

void register_all() {
  for (Isa isa : mote::kernels::kIsasFastestFirst) {
    const KernelTable *table = mote::kernels::kernels_for(isa);
    if (table == nullptr) continue;  // not in this build or not on this CPU
    for (uint32_t d = 0; d < mote::format::kDTypeCount; ++d) {
      if (mote::weight_type(d) == nullptr) continue;  // stored, not run (bf16)
      const DType dtype = static_cast<DType>(d);
      for (const Shape &shape : kMatvecShapes) {
        if (shape.cols % mote::format::traits_of(dtype).block_elements != 0) continue;  // a K type on 288 columns
        register_product(table, dtype, shape, 1);
      }
      for (const Shape &shape : kMatmulShapes) {
        if (shape.cols % mote::format::traits_of(dtype).block_elements != 0) continue;
        for (size_t n_tokens : kMatmulTokens) register_product(table, dtype, shape, n_tokens);
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

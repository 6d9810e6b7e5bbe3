// Memory read bandwidth with 1..N threads: streams a buffer far larger than the caches, the
// way decoding streams the weights, so tok/s x weight bytes can be read against it.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace {

constexpr size_t kBytes = size_t{1} << 30;  // 1 GiB: 32x this machine's L3

const uint64_t *buffer() {
  static uint64_t *data = [] {
    auto *p = static_cast<uint64_t *>(std::aligned_alloc(64, kBytes));
    std::memset(p, 1, kBytes);  // touch every page before timing
    return p;
  }();
  return data;
}

void read_bandwidth(benchmark::State &state) {
  const uint64_t *data = buffer();
  const long words = static_cast<long>(kBytes / sizeof(uint64_t));
  const int threads = static_cast<int>(state.range(0));
  for (auto _ : state) {
    uint64_t sum = 0;
#pragma omp parallel for num_threads(threads) reduction(+ : sum) schedule(static)
    for (long block = 0; block < words / 64; ++block) {
      // 64 words (one 512-byte block) into eight lanes the compiler keeps in vector registers,
      // so loads, not additions, are the limit.
      uint64_t lanes[8] = {};
      const uint64_t *p = data + block * 64;
      for (int i = 0; i < 64; i += 8) {
        for (int l = 0; l < 8; ++l) lanes[l] += p[i + l];
      }
      for (int l = 0; l < 8; ++l) sum += lanes[l];
    }
    benchmark::DoNotOptimize(sum);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(kBytes));
}

}  // namespace

BENCHMARK(read_bandwidth)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_MAIN();

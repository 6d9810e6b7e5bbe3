// Memory read bandwidth with 1..N threads: streams a buffer far larger than the caches, the
// way decoding streams the weights, so tok/s x weight bytes can be read against it.
#include <benchmark/benchmark.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

// 1 GiB: far past the caches (the VM has reported a 32 MiB, 260 MiB and 300 MiB L3 on its hosts).
constexpr size_t kBytes = size_t{1} << 30;

const uint64_t *buffer() {
  static uint64_t *data = [] {
    auto *p = static_cast<uint64_t *>(std::aligned_alloc(64, kBytes));
    std::memset(p, 1, kBytes);  // touch every page before timing
    return p;
  }();
  return data;
}

// The same 1 GiB in 2 MiB pages (aligned, advised with MADV_HUGEPAGE before the first touch), as
// `mote ... --no-mmap` holds a model: the roofline of a decode that reads its weights so.
const uint64_t *huge_page_buffer() {
  static uint64_t *data = [] {
    constexpr size_t kHugePage = size_t{2} << 20;
    auto *p = static_cast<uint64_t *>(std::aligned_alloc(kHugePage, kBytes));
    madvise(p, kBytes, MADV_HUGEPAGE);
    std::memset(p, 1, kBytes);
    return p;
  }();
  return data;
}

// The sum of data's words, read by threads threads.
uint64_t read_words(const uint64_t *data, long words, int threads) {
  uint64_t sum = 0;
#pragma omp parallel num_threads(threads) reduction(+ : sum)
  {
    // Eight lanes the compiler keeps in one vector register across the whole range, summed once
    // at the end: loads, not additions, are the limit (a horizontal sum per 512-byte block
    // read a third less than this).
    uint64_t lanes[8] = {};
#pragma omp for schedule(static)
    for (long block = 0; block < words / 64; ++block) {
      const uint64_t *p = data + block * 64;
      for (int i = 0; i < 64; i += 8) {
        for (int l = 0; l < 8; ++l) lanes[l] += p[i + l];
      }
    }
    for (int l = 0; l < 8; ++l) sum += lanes[l];
  }
  return sum;
}

// range(0) threads reading the 1 GiB of data again and again.
void read_gib(benchmark::State &state, const uint64_t *data) {
  const int threads = static_cast<int>(state.range(0));
  for (auto _ : state)
    benchmark::DoNotOptimize(read_words(data, static_cast<long>(kBytes / sizeof(uint64_t)), threads));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(kBytes));
}
void read_bandwidth(benchmark::State &state) { read_gib(state, buffer()); }
void read_bandwidth_huge_pages(benchmark::State &state) { read_gib(state, huge_page_buffer()); }

// range(1) threads rereading a buffer of range(0) MiB: where the caches stop helping a stream
// that is read again and again, as decoding rereads the weights once per token (a model that
// fits the size with a plateau here would decode faster than the 1 GiB figure says).
// --sizes-mib=A,B,... adds these sizes at 1 and 2 threads: bench/compare.py asks for each
// model's own decode bytes, the roofline of a model that the last-level cache partly holds.
void read_bandwidth_by_size(benchmark::State &state) {
  const size_t bytes = static_cast<size_t>(state.range(0)) << 20;
  auto *data = static_cast<uint64_t *>(std::aligned_alloc(64, bytes));
  std::memset(data, 1, bytes);
  const int threads = static_cast<int>(state.range(1));
  for (auto _ : state) benchmark::DoNotOptimize(read_words(data, static_cast<long>(bytes / sizeof(uint64_t)), threads));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(bytes));
  std::free(data);
}

}  // namespace

BENCHMARK(read_bandwidth)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(read_bandwidth_huge_pages)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(read_bandwidth_by_size)
    ->ArgsProduct({{1, 4, 16, 64, 256, 1024}, {1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

int main(int argc, char **argv) {
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const char *flag = "--sizes-mib=";
    if (std::strncmp(argv[i], flag, std::strlen(flag)) != 0) {
      argv[kept++] = argv[i];
      continue;
    }
    for (const char *p = argv[i] + std::strlen(flag); *p != '\0';) {
      char *end = nullptr;
      const long mib = std::strtol(p, &end, 10);
      if (end == p || mib < 1 || mib > 65536 || (*end != ',' && *end != '\0')) {
        std::fprintf(stderr, "bench_bandwidth: --sizes-mib takes sizes in MiB (1..65536) separated by commas\n");
        return 2;
      }
      benchmark::RegisterBenchmark("read_bandwidth_by_size", read_bandwidth_by_size)
          ->ArgsProduct({{mib}, {1, 2}})
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
      p = *end == ',' ? end + 1 : end;
    }
  }
  argc = kept;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

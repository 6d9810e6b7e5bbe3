// The attention kernels alone, per KV-cache type (f32, f16, q8_0) on every instruction set this
// CPU has: one group call as the forward pass makes it (the query heads that share a key/value
// head, times 1 token for decode or 4 tokens of a prompt's batch, causal), at depth 1024 and 4096.
// The counter to compare is ns per query and position (`ns_per_qpos`): a cache type that reads
// fewer bytes should not cost more per position. The cache (2 heads, as Qwen2.5's) is filled
// once and read as the forward pass reads it.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/fp16.hpp"
#include "kernels/kernels.hpp"

namespace {

using mote::kernels::AttentionQuery;
using mote::kernels::Isa;
using mote::kernels::KernelTable;

enum class Cache { f32, f16, q8_0 };
constexpr const char *kCacheNames[] = {"f32", "f16", "q8_0"};

struct Shape {
  size_t head_dim;
  size_t heads_per_group;  // query heads sharing a key/value head
  size_t tokens;           // 1: decode; 4: a prompt batch's tile
  size_t depth;            // positions already in the cache
};
// SmolLM2-135M (64 x 3), Qwen2.5-Coder-1.5B (128 x 6), Qwen2.5-0.5B (64 x 7).
constexpr Shape kShapes[] = {{64, 3, 1, 1024},  {64, 3, 1, 4096},  {64, 3, 4, 1024},  {64, 3, 4, 4096},
                             {128, 6, 1, 1024}, {128, 6, 1, 4096}, {128, 6, 4, 1024}, {128, 6, 4, 4096},
                             {64, 7, 1, 4096},  {64, 7, 4, 4096}};
constexpr size_t kKvHeads = 2;

void bench_group(benchmark::State &state, const KernelTable *table, Cache cache, Shape shape) {
  const size_t n_pos = shape.depth + shape.tokens, kv_stride = kKvHeads * shape.head_dim;
  const size_t blocks = (shape.head_dim + 31) / 32, scale_stride = kKvHeads * blocks;
  std::mt19937 rng(36);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::uniform_int_distribution<int> byte(-127, 127);
  std::vector<float> k(n_pos * kv_stride), v(n_pos * kv_stride);
  for (float &x : k) x = dist(rng);
  for (float &x : v) x = dist(rng);
  std::vector<uint16_t> k_half(k.size()), v_half(v.size());
  for (size_t i = 0; i < k.size(); ++i) {
    k_half[i] = mote::f32_to_fp16(k[i]);
    v_half[i] = mote::f32_to_fp16(v[i]);
  }
  std::vector<int8_t> k_q(k.size()), v_q(v.size());
  for (size_t i = 0; i < k.size(); ++i) {
    k_q[i] = static_cast<int8_t>(byte(rng));
    v_q[i] = static_cast<int8_t>(byte(rng));
  }
  std::vector<float> k_scale(n_pos * scale_stride), v_scale(n_pos * scale_stride);
  for (float &x : k_scale) x = (dist(rng) + 1.0f) / 254.0f;
  for (float &x : v_scale) x = (dist(rng) + 1.0f) / 254.0f;

  // The group's queries: token-major, as the forward pass lists them; token j sees depth + j + 1.
  const size_t n_queries = shape.heads_per_group * shape.tokens;
  std::vector<float> q(n_queries * shape.head_dim), out(n_queries * shape.head_dim), scores(n_queries * n_pos);
  for (float &x : q) x = 2.0f * dist(rng);
  std::vector<AttentionQuery> queries(n_queries);
  size_t positions = 0;
  for (size_t j = 0; j < shape.tokens; ++j) {
    for (size_t h = 0; h < shape.heads_per_group; ++h) {
      const size_t i = j * shape.heads_per_group + h;
      queries[i] = {q.data() + i * shape.head_dim, out.data() + i * shape.head_dim, scores.data() + i * n_pos, 0,
                    shape.depth + j + 1};
      positions += shape.depth + j + 1;
    }
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(shape.head_dim));
  const size_t head = 1;  // the second key/value head, strided past the first
  const size_t at = head * shape.head_dim, scale_at = head * blocks;
  for (auto _ : state) {
    switch (cache) {
      case Cache::f32:
        table->attention_group_f32(queries.data(), n_queries, k.data() + at, v.data() + at, shape.head_dim, kv_stride,
                                   scale);
        break;
      case Cache::f16:
        table->attention_group_f16(queries.data(), n_queries, k_half.data() + at, v_half.data() + at, shape.head_dim,
                                   kv_stride, scale);
        break;
      case Cache::q8_0:
        table->attention_group_q8(queries.data(), n_queries, k_q.data() + at, k_scale.data() + scale_at,
                                  v_q.data() + at, v_scale.data() + scale_at, shape.head_dim, kv_stride, scale_stride,
                                  scale);
        break;
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  const auto calls = static_cast<double>(state.iterations());
  state.counters["ns_per_qpos"] =
      benchmark::Counter(calls * static_cast<double>(positions) * 1e-9,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void register_all() {
  for (Isa isa : mote::kernels::kIsasFastestFirst) {
    const KernelTable *table = mote::kernels::kernels_for(isa);
    if (table == nullptr) continue;  // not in this build or not on this CPU
    for (const Shape &shape : kShapes) {
      for (Cache cache : {Cache::f32, Cache::f16, Cache::q8_0}) {
        const std::string name = std::string("attention_group/") + table->isa_name + "/" +
                                 kCacheNames[static_cast<int>(cache)] + "/head_dim:" + std::to_string(shape.head_dim) +
                                 "/queries:" + std::to_string(shape.heads_per_group) + "x" +
                                 std::to_string(shape.tokens) + "/depth:" + std::to_string(shape.depth);
        benchmark::RegisterBenchmark(name.c_str(), bench_group, table, cache, shape);
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

// mote-ggml-matvec: times one ggml_mul_mat (weights of one ggml type, rows x cols, times one f32
// vector) on ggml's CPU backend, the equivalent of test-backend-ops' perf mode for shapes its
// built-in perf cases lack. Built by bench/peers/build_llama_cpp.sh against the peer's ggml,
// outside mote's CMake; never in CI. bench/kernel_compare.py runs it next to bench_matvec.
//
// Usage: mote-ggml-matvec --type q4_K --rows 8960 --cols 1536 [--threads 1] [--repack]
//                         [--min-time 0.3]
// Prints one JSON line: the type, shape, threads, layout ("plain", or "repack" when --repack
// put the weights in the CPU_REPACK buffer that llama.cpp loads its weights into where ggml has
// an interleaved kernel for that type on this CPU; "plain" again where it has none),
// microseconds per product and weight GB/s (weight bytes / time).
//
// Like test-backend-ops' perf mode: one graph holds the same product several times (here as
// separate nodes reading the same tensors), and the graph runs until --min-time has passed;
// the figure is total time / products. Each product quantizes its input vector, as in decode.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"

namespace {

[[noreturn]] void fail(const char *what) {
  std::fprintf(stderr, "mote-ggml-matvec: %s\n", what);
  std::exit(1);
}

ggml_type parse_type(const std::string &name) {
  for (int t = 0; t < GGML_TYPE_COUNT; ++t) {
    const char *n = ggml_type_name(static_cast<ggml_type>(t));
    if (n != nullptr && name == n) return static_cast<ggml_type>(t);
  }
  fail(("unknown ggml type " + name).c_str());
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The CPU device's CPU_REPACK buffer type, or null when this ggml has none.
ggml_backend_buffer_type_t repack_buffer_type(ggml_backend_dev_t dev) {
  ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(dev);
  auto get_extra = reinterpret_cast<ggml_backend_dev_get_extra_bufts_t>(
      ggml_backend_reg_get_proc_address(reg, "ggml_backend_dev_get_extra_bufts"));
  if (get_extra == nullptr) return nullptr;
  for (ggml_backend_buffer_type_t *b = get_extra(dev); b != nullptr && *b != nullptr; ++b) {
    if (std::strcmp(ggml_backend_buft_name(*b), "CPU_REPACK") == 0) return *b;
  }
  return nullptr;
}

// Whether the device runs this product with the weights in `buft`: asked as llama.cpp asks it
// when it places a weight (an empty buffer of that type stands in for the weight's).
bool product_supported(ggml_backend_dev_t dev, ggml_backend_buffer_type_t buft, ggml_type type, int64_t rows,
                       int64_t cols) {
  ggml_init_params params{ggml_tensor_overhead() * 4, nullptr, true};
  ggml_context *ctx = ggml_init(params);
  ggml_tensor *w = ggml_new_tensor_2d(ctx, type, cols, rows);
  ggml_tensor *x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, cols, 1);
  ggml_tensor *y = ggml_mul_mat(ctx, w, x);
  ggml_backend_buffer_t empty = ggml_backend_buft_alloc_buffer(buft, 0);
  w->buffer = empty;
  const bool ok = ggml_backend_dev_supports_op(dev, y);
  w->buffer = nullptr;
  ggml_backend_buffer_free(empty);
  ggml_free(ctx);
  return ok;
}

}  // namespace

int main(int argc, char **argv) {
  std::string type_name = "q4_K";
  int64_t rows = 1536, cols = 1536;
  int threads = 1;
  bool want_repack = false;
  double min_time = 0.3;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char * {
      if (i + 1 >= argc) fail(("missing value after " + a).c_str());
      return argv[++i];
    };
    if (a == "--type") type_name = value();
    else if (a == "--rows") rows = std::atoll(value());
    else if (a == "--cols") cols = std::atoll(value());
    else if (a == "--threads") threads = std::atoi(value());
    else if (a == "--repack") want_repack = true;
    else if (a == "--min-time") min_time = std::atof(value());
    else fail(("unknown argument " + a).c_str());
  }
  const ggml_type type = parse_type(type_name);
  if (rows <= 0 || cols <= 0 || threads <= 0) fail("rows, cols and threads must be positive");
  if (cols % ggml_blck_size(type) != 0) fail("cols is not a whole number of the type's blocks");

  ggml_backend_t backend = ggml_backend_cpu_init();
  if (backend == nullptr) fail("no CPU backend");
  ggml_backend_dev_t dev = ggml_backend_get_device(backend);
  // A threadpool kept for the whole run, so that thread start-up is not timed.
  ggml_threadpool_params tpp = ggml_threadpool_params_default(threads);
  ggml_threadpool *pool = ggml_threadpool_new(&tpp);
  ggml_backend_cpu_set_n_threads(backend, threads);
  ggml_backend_cpu_set_threadpool(backend, pool);

  ggml_backend_buffer_type_t weight_buft = ggml_backend_get_default_buffer_type(backend);
  const char *layout = "plain";
  if (want_repack) {
    ggml_backend_buffer_type_t repack = repack_buffer_type(dev);
    if (repack != nullptr && product_supported(dev, repack, type, rows, cols)) {
      weight_buft = repack;
      layout = "repack";
    }
  }

  // Weights: a block of rows quantized from uniform [-1, 1) values, repeated down the matrix
  // (the bytes read are what matters; quantizing 233M values per run would take long).
  ggml_init_params wparams{ggml_tensor_overhead() * 2, nullptr, true};
  ggml_context *wctx = ggml_init(wparams);
  ggml_tensor *w = ggml_new_tensor_2d(wctx, type, cols, rows);
  ggml_backend_buffer_t wbuf = ggml_backend_alloc_ctx_tensors_from_buft(wctx, weight_buft);
  if (wbuf == nullptr) fail("cannot allocate the weights");
  ggml_backend_buffer_set_usage(wbuf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
  const size_t row_bytes = ggml_row_size(type, cols);
  const size_t weight_bytes = row_bytes * static_cast<size_t>(rows);
  {
    std::mt19937 rng(42);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    const int64_t block_rows = std::min<int64_t>(rows, 64);
    std::vector<float> values(static_cast<size_t>(block_rows * cols));
    for (float &v : values) v = dist(rng);
    std::vector<uint8_t> block(row_bytes * static_cast<size_t>(block_rows));
    ggml_quantize_chunk(type, values.data(), block.data(), 0, block_rows, cols, nullptr);
    std::vector<uint8_t> all(weight_bytes);
    for (size_t off = 0; off < weight_bytes; off += block.size()) {
      std::memcpy(all.data() + off, block.data(), std::min(block.size(), weight_bytes - off));
    }
    ggml_backend_tensor_set(w, all.data(), 0, weight_bytes);  // CPU_REPACK interleaves here
  }

  // Graphs of `copies` products of w and x; the first (one product) sizes the timed one.
  auto run_graph = [&](int copies, double seconds, double *per_product_s) {
    const size_t n_nodes = static_cast<size_t>(copies) + 8;
    ggml_init_params params{ggml_tensor_overhead() * n_nodes + ggml_graph_overhead_custom(n_nodes, false), nullptr,
                            true};
    ggml_context *ctx = ggml_init(params);
    ggml_tensor *x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, cols, 1);
    ggml_cgraph *graph = ggml_new_graph_custom(ctx, n_nodes, false);
    for (int c = 0; c < copies; ++c) ggml_build_forward_expand(graph, ggml_mul_mat(ctx, w, x));
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx, backend);
    if (buf == nullptr) fail("cannot allocate the activations");
    std::vector<float> xs(static_cast<size_t>(cols));
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (float &v : xs) v = dist(rng);
    ggml_backend_tensor_set(x, xs.data(), 0, xs.size() * sizeof(float));
    if (ggml_backend_graph_compute(backend, graph) != GGML_STATUS_SUCCESS) fail("graph compute failed");  // warm-up
    int64_t products = 0;
    const double start = now_s();
    double elapsed = 0.0;
    do {
      if (ggml_backend_graph_compute(backend, graph) != GGML_STATUS_SUCCESS) fail("graph compute failed");
      products += copies;
      elapsed = now_s() - start;
    } while (elapsed < seconds);
    *per_product_s = elapsed / static_cast<double>(products);
    ggml_backend_buffer_free(buf);
    ggml_free(ctx);
  };
  double single = 0.0;
  run_graph(1, 0.02, &single);
  // About 20 ms of products per graph, so that the per-graph cost is small next to them.
  const int copies = static_cast<int>(std::clamp(0.02 / single, 1.0, 256.0));
  double per_product = 0.0;
  run_graph(copies, min_time, &per_product);

  std::printf(
      "{\"type\": \"%s\", \"rows\": %lld, \"cols\": %lld, \"threads\": %d, \"layout\": \"%s\", "
      "\"copies\": %d, \"us\": %.3f, \"weight_bytes\": %zu, \"GBps\": %.3f}\n",
      ggml_type_name(type), static_cast<long long>(rows), static_cast<long long>(cols), threads, layout, copies,
      per_product * 1e6, weight_bytes, static_cast<double>(weight_bytes) / per_product / 1e9);

  ggml_backend_buffer_free(wbuf);
  ggml_free(wctx);
  ggml_backend_free(backend);
  ggml_threadpool_free(pool);
  return 0;
}

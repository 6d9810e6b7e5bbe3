// The CUDA backend's logits against the CPU backend's, position by position, on the golden
// models: the tiny random Llama variants (MHA, GQA, odd sizes; both RoPE layouts; f32 and f16
// weights), the real llama2.c checkpoints and SmolLM2-135M. Quantized models are compared with
// the CPU running the same weights dequantized to f32 (what the GPU multiplies: f32 activations
// with the exact stored values), so one tight bound serves every type. Also: greedy ids equal,
// decode by graph bit-identical to decode without, two sessions on one uploaded model equal to
// one alone, and other block specs refused. Skipped (saying so) where no CUDA device is present.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "cuda_test_support.hpp"
#include "gguf/gguf.hpp"
#include "llama2c/llama2c.hpp"
#include "model/weight_types.hpp"

using mote::format::DType;
using mote::format::RopeLayout;
using namespace mote_test;
using namespace mote_cuda_test;

namespace {

// The same model with every matrix dequantized to f32 (exactly the values the GPU reads).
mote::convert::ModelData dequantized(mote::convert::ModelData data) {
  for (mote::convert::TensorData &t : data.tensors) {
    if (t.dtype == DType::f32) continue;
    const mote::WeightType *type = mote::weight_type(static_cast<uint32_t>(t.dtype));
    REQUIRE(type != nullptr);
    std::vector<float> values(static_cast<size_t>(t.rows) * t.cols);
    for (uint32_t r = 0; r < t.rows; ++r)
      type->dequantize_row(values.data() + static_cast<size_t>(r) * t.cols, t.bytes.data(), r, t.cols);
    t.bytes.resize(values.size() * sizeof(float));
    std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
    t.dtype = DType::f32;
  }
  return data;
}

int32_t argmax(const float *logits, size_t vocab) {
  return static_cast<int32_t>(std::max_element(logits, logits + vocab) - logits);
}

// Feeds tokens one at a time to a CPU session over `reference` and a CUDA session over `model`,
// then continues greedily; checks every position's logits within tolerance and the greedy ids
// equal. Returns the largest |logit difference|.
float compare(const mote_model &model, const mote_model &reference, const std::vector<int32_t> &tokens, float tolerance,
              mote_kv_dtype kv = MOTE_KV_F32, size_t n_greedy = 16) {
  mote_session_options options = mote_session_options_default();
  options.kv_dtype = kv;
  mote_model_info info;
  mote_model_info_get(&model, &info);
  const size_t vocab = info.vocab_size;
  if (tokens.size() + n_greedy > info.max_seq_len) n_greedy = info.max_seq_len - tokens.size();
  auto cpu = open(reference, options, MOTE_BACKEND_CPU);
  auto gpu = open(model, options, MOTE_BACKEND_CUDA);
  float worst = 0.0f;
  std::vector<int32_t> cpu_ids, gpu_ids;
  int32_t cpu_next = tokens[0], gpu_next = tokens[0];
  for (size_t p = 0; p < tokens.size() + n_greedy; ++p) {
    const float *a = nullptr, *b = nullptr;
    REQUIRE(mote_decode(&cpu->session, p < tokens.size() ? tokens[p] : cpu_next, &a) == MOTE_OK);
    const mote_status status = mote_decode(&gpu->session, p < tokens.size() ? tokens[p] : gpu_next, &b);
    REQUIRE_MESSAGE(status == MOTE_OK, mote_session_error(&gpu->session));
    for (size_t i = 0; i < vocab; ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
    cpu_next = argmax(a, vocab);
    gpu_next = argmax(b, vocab);
    CHECK(mote_cuda_argmax(&gpu->session) == gpu_next);  // the device's own argmax
    if (p + 1 >= tokens.size()) {
      cpu_ids.push_back(cpu_next);
      gpu_ids.push_back(gpu_next);
    }
  }
  CHECK(worst <= tolerance);
  CHECK(gpu_ids == cpu_ids);

  // The prompt as one prefill (default-size batches on the device): the last logits agree too.
  mote_session_reset(&cpu->session);
  mote_session_reset(&gpu->session);
  REQUIRE(mote_prefill(&cpu->session, tokens.data(), tokens.size()) == MOTE_OK);
  REQUIRE(mote_prefill(&gpu->session, tokens.data(), tokens.size()) == MOTE_OK);
  const float *a = mote_logits(&cpu->session), *b = mote_logits(&gpu->session);
  REQUIRE(b != nullptr);
  float prefill_worst = 0.0f;
  for (size_t i = 0; i < vocab; ++i) prefill_worst = std::max(prefill_worst, std::fabs(a[i] - b[i]));
  CHECK(prefill_worst <= tolerance);
  MESSAGE("max |logit difference| " << worst << " (prefill " << prefill_worst << ")");
  return worst;
}

std::vector<int32_t> prompt_of(size_t n, size_t vocab) {
  std::vector<int32_t> tokens(n);
  for (size_t i = 0; i < n; ++i) tokens[i] = static_cast<int32_t>((1 + 7919 * i) % vocab);
  return tokens;
}

}  // namespace

TEST_CASE("cuda forward: tiny random Llama models (every golden variant) match the CPU within 1e-3") {
  if (!have_device()) return;
  for (const std::string &line : read_lines(golden_path("tiny_models.txt"))) {
    CAPTURE(line);
    const std::string dtype = manifest_value(line, "dtype");
    auto m =
        convert_and_open(golden_path(manifest_value(line, "case") + ".bin"),
                         golden_path(manifest_value(line, "tokenizer")), dtype == "f16" ? DType::f16 : DType::f32,
                         manifest_value(line, "rope") == "split" ? RopeLayout::split_half : RopeLayout::interleaved);
    const std::vector<int32_t> tokens = parse_ids(manifest_value(line, "tokens"));
    compare(m->model, m->model, tokens, 1e-3f);
    compare(m->model, m->model, tokens, 1e-3f, MOTE_KV_F16);  // both round the cache the same way
  }
}

TEST_CASE("cuda forward: the real llama2.c checkpoints, f32 and every quantized type") {
  if (!have_device()) return;
  const std::string tokenizer = shared_model("aidreams_tok512.bin");
  if (tokenizer.empty()) return;
  for (const std::string &line : read_lines(golden_path("real_models.txt"))) {
    CAPTURE(line);
    const std::string checkpoint = shared_model(manifest_value(line, "model"));
    if (checkpoint.empty()) continue;
    const std::vector<int32_t> tokens = parse_ids(manifest_value(line, "tokens"));
    for (DType dtype : {DType::f32, DType::f16, DType::q8_0, DType::q4_0, DType::q4_1}) {
      for (mote::convert::BlockLayout layout :
           {mote::convert::BlockLayout::interleaved, mote::convert::BlockLayout::gguf}) {
        CAPTURE(static_cast<int>(dtype));
        CAPTURE(static_cast<int>(layout));
        mote::convert::Llama2cOptions options;
        options.dtype = dtype;
        options.layout = layout;
        mote::convert::ModelData data;
        std::string error;
        if (!mote::convert::load_llama2c(checkpoint, tokenizer, options, &data, &error)) {
          // stories260K's FFN rows hold 172 values: not whole blocks, so no quantized version.
          REQUIRE_MESSAGE(dtype != DType::f32, error);
          REQUIRE_MESSAGE(dtype != DType::f16, error);
          MESSAGE("not quantized: " << error);
          continue;
        }
        auto model = open_data(data);
        auto reference = open_data(dequantized(data));
        compare(model->model, reference->model, tokens, 1e-3f);
      }
    }
  }
}

TEST_CASE("cuda forward: SmolLM2-135M (f32, f16, and as stored) matches the CPU") {
  if (!have_device()) return;
  const std::string path = smollm2_gguf();
  if (path.empty()) return;
  const std::vector<int32_t> tokens = prompt_of(24, 49152);
  for (std::optional<DType> dtype :
       {std::optional<DType>(DType::f32), std::optional<DType>(DType::f16), std::optional<DType>(),
        std::optional<DType>(DType::q8_0), std::optional<DType>(DType::q4_0)}) {
    CAPTURE(dtype.has_value() ? static_cast<int>(*dtype) : -1);
    mote::convert::GgufOptions options;
    options.dtype = dtype;
    mote::convert::ModelData data;
    std::string error;
    REQUIRE_MESSAGE(mote::convert::load_gguf(path, options, &data, &error), error);
    auto model = open_data(data);
    auto reference = open_data(dequantized(data));
    // 30 layers with logits near 20: the bound the CPU keeps against transformers (test_smollm2).
    compare(model->model, reference->model, tokens, 1e-2f, MOTE_KV_F32, 8);
  }
}

TEST_CASE("cuda forward: decode by graph equals decode without, bit for bit; two sessions share one upload") {
  if (!have_device()) return;
  auto m = convert_and_open(golden_path("tiny_gqa.bin"), golden_path("tiny_tok70.bin"));
  mote_model_info info;
  mote_model_info_get(&m->model, &info);
  const std::vector<int32_t> tokens = prompt_of(40, info.vocab_size);
  for (mote_kv_dtype kv : {MOTE_KV_F32, MOTE_KV_F16}) {
    mote_session_options options = mote_session_options_default();
    options.kv_dtype = kv;
    auto graph = open(m->model, options, MOTE_BACKEND_CUDA);
    auto plain = open(m->model, options, MOTE_BACKEND_CUDA);
    mote_cuda_set_graphs(&plain->session, 0);
    for (int32_t token : tokens) {
      const float *a = nullptr, *b = nullptr;
      REQUIRE(mote_decode(&graph->session, token, &a) == MOTE_OK);
      REQUIRE(mote_decode(&plain->session, token, &b) == MOTE_OK);
      CHECK(std::memcmp(a, b, info.vocab_size * sizeof(float)) == 0);
    }
  }

  // Greedy text from one session alone, then from two sessions on one device model, interleaved.
  mote_cuda_model shared{};
  char message[256] = "";
  REQUIRE_MESSAGE(mote_cuda_model_upload(&m->model, &shared, message, sizeof message) == MOTE_OK, message);
  mote_sampler_options greedy = mote_sampler_options_default();
  greedy.temperature = 0.0f;
  const std::vector<int32_t> prompt = {1, 5, 9, 13};
  auto generate = [&](std::vector<Session *> sessions) {
    std::vector<std::vector<int32_t>> texts(sessions.size());
    for (Session *s : sessions) REQUIRE(mote_prefill(&s->session, prompt.data(), prompt.size()) == MOTE_OK);
    for (int step = 0; step < 24; ++step) {
      for (size_t i = 0; i < sessions.size(); ++i) {
        int32_t token = 0;
        REQUIRE(mote_sample(&sessions[i]->session, &greedy, &token) == MOTE_OK);
        texts[i].push_back(token);
        REQUIRE(mote_decode(&sessions[i]->session, token, nullptr) == MOTE_OK);
      }
    }
    return texts;
  };
  auto alone = open(m->model, mote_session_options_default(), MOTE_BACKEND_CUDA);
  const std::vector<int32_t> expected = generate({alone.get()})[0];
  {
    auto first = open(m->model, mote_session_options_default(), MOTE_BACKEND_CUDA, &shared);
    auto second = open(m->model, mote_session_options_default(), MOTE_BACKEND_CUDA, &shared);
    const auto texts = generate({first.get(), second.get()});
    CHECK(texts[0] == expected);
    CHECK(texts[1] == expected);
  }
  mote_cuda_model_free(&shared);
}

TEST_CASE("cuda forward: the session's device allocation is sized by mote_cuda_arena_size") {
  if (!have_device()) return;
  auto m = convert_and_open(golden_path("tiny_gqa.bin"), golden_path("tiny_tok70.bin"));
  mote_session_options options = mote_session_options_default();
  const uint64_t expected = mote_cuda_arena_size(&m->model, &options);
  REQUIRE(expected > 0);
  size_t free_before = 0, free_after = 0, total = 0;
  REQUIRE(cudaMemGetInfo(&free_before, &total) == cudaSuccess);
  mote_cuda_model shared{};
  char message[256] = "";
  REQUIRE(mote_cuda_model_upload(&m->model, &shared, message, sizeof message) == MOTE_OK);
  {
    auto s = open(m->model, options, MOTE_BACKEND_CUDA, &shared);
    REQUIRE(cudaMemGetInfo(&free_after, &total) == cudaSuccess);
    // The driver rounds allocations to pages: the two allocations take at least their sizes.
    CHECK(free_before - free_after >= expected + mote_cuda_weights_size(&m->model));
  }
  mote_cuda_model_free(&shared);
}

namespace {

int stop_at_first_batch(void *user, uint32_t, uint32_t) { return ++*static_cast<int *>(user) == 1 ? 1 : 0; }

}  // namespace

TEST_CASE("cuda forward: per-position logits are refused cleanly; on_progress stops a prefill as on the CPU") {
  if (!have_device()) return;
  auto m = convert_and_open(golden_path("tiny_gqa.bin"), golden_path("tiny_tok70.bin"));
  mote_model_info info;
  mote_model_info_get(&m->model, &info);
  const std::vector<int32_t> tokens = prompt_of(20, info.vocab_size);
  mote_session_options options = mote_session_options_default();
  options.batch_size = 4;
  auto whole = open(m->model, options, MOTE_BACKEND_CUDA);
  std::vector<float> out(tokens.size() * info.vocab_size);
  CHECK(mote_prefill_logits(&whole->session, tokens.data(), tokens.size(), 0, out.data(), out.size()) ==
        MOTE_ERR_UNSUPPORTED);
  CHECK(std::string(mote_session_error(&whole->session)) == "the cuda backend has no per-position logits");
  CHECK(mote_session_position(&whole->session) == 0);
  REQUIRE(mote_prefill(&whole->session, tokens.data(), tokens.size()) == MOTE_OK);

  int calls = 0;
  options.on_progress = stop_at_first_batch;
  options.progress_user = &calls;
  auto stopped = open(m->model, options, MOTE_BACKEND_CUDA);
  CHECK(mote_prefill(&stopped->session, tokens.data(), tokens.size()) == MOTE_ERR_ABORTED);
  REQUIRE(mote_session_position(&stopped->session) == 4);
  REQUIRE(mote_prefill(&stopped->session, tokens.data() + 4, tokens.size() - 4) == MOTE_OK);
  const float *a = mote_logits(&whole->session), *b = mote_logits(&stopped->session);
  REQUIRE((a != nullptr && b != nullptr));
  for (uint32_t i = 0; i < info.vocab_size; ++i) CHECK(b[i] == doctest::Approx(a[i]).epsilon(1e-3));
}

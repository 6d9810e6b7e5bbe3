// What the CUDA backend checks without a device (so this runs on machines without a GPU too):
// the kernels' weight accessor reads every block format as the CPU dequantizes it, a q8_0 KV
// cache is refused with a one-line reason, the device memory is reported, and a missing device
// is a clear error; other block specs (GPT-2) and weight types without CUDA kernels are refused.
#include <string>

#include "cuda_kernels.hpp"
#include "cuda_test_support.hpp"
#include "hf/hf.hpp"

using namespace mote_test;
using namespace mote_cuda_test;

TEST_CASE("cuda: the kernels' weight accessor reads every type exactly as the CPU dequantizes it") {
  std::mt19937 rng(15);
  for (DType dtype : kWeightTypes) {
    CAPTURE(mote::format::dtype_traits(static_cast<uint32_t>(dtype))->name);
    const size_t rows = 24, cols = 96;  // three x8 groups, three blocks per row
    const std::vector<unsigned char> w = random_matrix(dtype, rows, cols, rng);
    const mote::cuda::DeviceMatrix m{w.data(), static_cast<uint32_t>(dtype), rows, cols,
                                     mote::weight_row_bytes(dtype, cols)};
    std::vector<float> row(cols);
    for (uint32_t r = 0; r < rows; ++r) {
      mote::weight_type(static_cast<uint32_t>(dtype))->dequantize_row(row.data(), w.data(), r, cols);
      for (uint32_t c = 0; c < cols; ++c) {
        CAPTURE(r);
        CAPTURE(c);
        REQUIRE(mote::cuda::host_element(m, r, c) == row[c]);  // same formula, same rounding on the host
      }
    }
  }
}

TEST_CASE("cuda: a q8_0 KV cache is refused with a one-line reason") {
  auto m = convert_and_open(golden_path("tiny_mha.bin"), golden_path("tiny_tok64.bin"));
  mote_session_options o = mote_session_options_default();
  o.backend = MOTE_BACKEND_CUDA;
  o.kv_dtype = MOTE_KV_Q8_0;
  uint64_t weights = 0, session = 0;
  char message[256] = "";
  CHECK(mote_backend_memory(&m->model, &o, &weights, &session, message, sizeof message) == MOTE_ERR_UNSUPPORTED);
  CHECK(std::string(message) == "the CUDA backend keeps an f32 or f16 KV cache, not q8_0");
  CHECK(mote_cuda_arena_size(&m->model, &o) == 0);
  const size_t needed = mote_arena_size(&m->model, &o);
  REQUIRE(needed > 0);
  AlignedBuffer arena(needed);
  mote_session s{};
  message[0] = '\0';
  CHECK(mote_session_init(&s, &m->model, &o, arena.data.get(), needed, message, sizeof message) ==
        MOTE_ERR_UNSUPPORTED);
  CHECK(std::string(message) == "the CUDA backend keeps an f32 or f16 KV cache, not q8_0");
}

TEST_CASE("cuda: exactly the kernels' weight types run; a tensor of another is refused in one line naming it") {
  for (uint32_t d = 0; d < mote::format::kDTypeCount; ++d) {
    CAPTURE(mote::format::kDTypeTraits[d].name);
    bool listed = false;
    for (DType dtype : kWeightTypes) listed = listed || static_cast<uint32_t>(dtype) == d;
    CHECK(mote::cuda::dtype_supported(d) == listed);
  }
  // --dtype iq4_nl stores the matrices as iq4_nlx8 (the classifier q8_0x8); the first is blk.0.attn_q.
  auto m = convert_and_open(golden_path("tiny_mha.bin"), golden_path("tiny_tok64.bin"), DType::iq4_nl);
  mote_session_options o = mote_session_options_default();
  o.backend = MOTE_BACKEND_CUDA;
  uint64_t weights = 0, session = 0;
  char message[256] = "";
  CHECK(mote_backend_memory(&m->model, &o, &weights, &session, message, sizeof message) == MOTE_ERR_UNSUPPORTED);
  CHECK(std::string(message) == "tensor 'blk.0.attn_q' is iq4_nlx8, which the CUDA backend does not run");
}

TEST_CASE("cuda: a Llama model's memory is reported; no device is a clear error") {
  auto m = convert_and_open(golden_path("tiny_gqa.bin"), golden_path("tiny_tok70.bin"));
  mote_session_options o = mote_session_options_default();
  o.kv_dtype = MOTE_KV_F32;  // the size bound below is an f32 cache's
  o.backend = MOTE_BACKEND_CUDA;
  uint64_t weights = 0, session = 0;
  char message[256] = "";
  REQUIRE(mote_backend_memory(&m->model, &o, &weights, &session, message, sizeof message) == MOTE_OK);
  CHECK(weights == mote_cuda_weights_size(&m->model));
  CHECK(session == mote_cuda_arena_size(&m->model, &o));
  mote_model_info info;
  mote_model_info_get(&m->model, &info);
  CHECK(weights >= info.weight_bytes);  // the tensor region, alignment gaps included
  // At least the f32 KV cache of the full context.
  CHECK(session >= 2ull * info.n_layers * info.max_seq_len * info.n_kv_heads * info.head_dim * 4);
  if (mote_cuda_device_available(message, sizeof message) == 0) {
    CHECK(std::string(message).rfind("no CUDA device", 0) == 0);
    const size_t needed = mote_arena_size(&m->model, &o);
    AlignedBuffer arena(needed);
    mote_session s{};
    CHECK(mote_session_init(&s, &m->model, &o, arena.data.get(), needed, message, sizeof message) ==
          MOTE_ERR_UNSUPPORTED);
    CHECK(std::string(message).rfind("no CUDA device", 0) == 0);
    mote_cuda_model upload{};
    CHECK(mote_cuda_model_upload(&m->model, &upload, message, sizeof message) == MOTE_ERR_UNSUPPORTED);
  }
}

TEST_CASE("cuda: a GPT-2 block is refused with a one-line reason") {
  mote::convert::SafetensorsOptions options;
  options.tokenizer_path = golden_path("tiny_gpt2/tokenizer.json");
  mote::convert::ModelData data;
  std::string error;
  REQUIRE_MESSAGE(mote::convert::load_hf_checkpoint(golden_path("tiny_gpt2/prenorm_gelu_tanh"), options, &data, &error),
                  error);
  auto opened = open_data(data);
  const mote_model &model = opened->model;
  char message[256] = "";
  mote_session_options o = mote_session_options_default();
  o.backend = MOTE_BACKEND_CUDA;
  const std::string expected =
      "the CUDA backend runs the Llama block (RMSNorm, RoPE, SwiGLU, no biases); this model's is another";
  uint64_t weights = 0, session = 0;
  CHECK(mote_backend_memory(&model, &o, &weights, &session, message, sizeof message) == MOTE_ERR_UNSUPPORTED);
  CHECK(std::string(message) == expected);
  const size_t needed = mote_arena_size(&model, &o);
  REQUIRE(needed > 0);
  AlignedBuffer arena(needed);
  mote_session s{};
  CHECK(mote_session_init(&s, &model, &o, arena.data.get(), needed, message, sizeof message) == MOTE_ERR_UNSUPPORTED);
  CHECK(std::string(message) == expected);
}

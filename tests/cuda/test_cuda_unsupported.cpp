// What the CUDA backend refuses, with one-line reasons, before it touches a device (so this runs
// on machines without a GPU too): other block specs (GPT-2), a q8_0 KV cache, foreign uploads.
#include <string>

#include "cuda_test_support.hpp"

using namespace mote_test;

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
  CHECK(mote_session_init(&s, &m->model, &o, arena.data.get(), needed, message, sizeof message) == MOTE_ERR_UNSUPPORTED);
  CHECK(std::string(message) == "the CUDA backend keeps an f32 or f16 KV cache, not q8_0");
}

TEST_CASE("cuda: a Llama model's memory is reported; no device is a clear error") {
  auto m = convert_and_open(golden_path("tiny_gqa.bin"), golden_path("tiny_tok70.bin"));
  mote_session_options o = mote_session_options_default();
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

// The C API is total: every public function, given null pointers, zero sizes, out-of-range enums
// and token ids, returns a status (or a documented neutral value) and never crashes. The asan
// preset runs this file under AddressSanitizer and UndefinedBehaviorSanitizer (enum loads
// included), so an out-of-range enum read as the C++ type fails there.
#include <cmath>
#include <cstring>

#include "test_support.hpp"

namespace {

// A value no mote enum holds, stored as a C caller would (any int fits the field).
template <typename Enum>
void store_raw(Enum *field, uint32_t value) {
  static_assert(sizeof(Enum) == sizeof value, "32-bit enums");
  std::memcpy(field, &value, sizeof value);
}

const mote_test::ConvertedModel &tiny() {
  static std::unique_ptr<mote_test::ConvertedModel> model =
      mote_test::convert_and_open(mote_test::golden_path("tiny_mha.bin"), mote_test::golden_path("tiny_tok64.bin"));
  return *model;
}

}  // namespace

TEST_CASE("status names and options: any integer is answered") {
  // A C caller may pass any int as a mote_status (the same 32-bit argument); a C++ caller could
  // not even hold 1000 in the enum without undefined behaviour, so call as C does.
  const auto status_name_of_int = reinterpret_cast<const char *(*)(uint32_t)>(&mote_status_name);
  CHECK(std::string(status_name_of_int(1000)) == "unknown status");
  CHECK(std::string(status_name_of_int(0xFFFFFFFFu)) == "unknown status");
  CHECK(std::string(status_name_of_int(MOTE_ERR_NUMERIC)) == "non-finite number");
  CHECK(std::string(mote_isa_name()).size() > 0);

  const mote_model &model = tiny().model;
  char message[256] = "";
  for (const uint32_t bad : {3u, 4u, 255u, 0x80000000u, 0xFFFFFFFFu}) {
    mote_session_options options = mote_session_options_default();
    store_raw(&options.kv_dtype, bad);
    CAPTURE(bad);
    CHECK(mote_arena_size(&model, &options) == 0);
    mote_session session;
    alignas(64) static unsigned char arena[64];
    CHECK(mote_session_init(&session, &model, &options, arena, sizeof arena, message, sizeof message) ==
          MOTE_ERR_INVALID_ARGUMENT);
    CHECK(std::string(message) == "unknown KV cache dtype " + std::to_string(bad));
  }
  mote_session_options options = mote_session_options_default();
  options.n_threads = MOTE_MAX_THREADS + 1;
  CHECK(mote_arena_size(&model, &options) == 0);
  options = mote_session_options_default();
  options.batch_size = 0xFFFFFFFFu;
  CHECK(mote_arena_size(&model, &options) == 0);
  options = mote_session_options_default();
  options.context_length = 0xFFFFFFFFu;
  CHECK(mote_arena_size(&model, &options) == 0);
}

TEST_CASE("model functions: null, unaligned, short and unopened arguments") {
  char message[256] = "";
  mote_model model;
  CHECK(mote_model_open(nullptr, 0, &model, message, sizeof message) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_model_open(nullptr, 1000, &model, nullptr, 0) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_model_open(tiny().bytes.data.get(), tiny().bytes.size, nullptr, message, sizeof message) ==
        MOTE_ERR_INVALID_ARGUMENT);
  alignas(64) static unsigned char zeros[256] = {};
  CHECK(mote_model_open(zeros, 0, &model, message, 1) == MOTE_ERR_BAD_MODEL);  // a 1-byte buffer: "" fits
  CHECK(message[0] == '\0');
  CHECK(mote_model_open(zeros + 1, 200, &model, message, sizeof message) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_model_open(zeros, sizeof zeros, &model, message, sizeof message) == MOTE_ERR_BAD_MODEL);

  // The failed open left a model that no other call accepts.
  mote_model_info info;
  std::memset(&info, 0xAB, sizeof info);
  mote_model_info_get(&model, &info);
  CHECK(info.vocab_size == 0);
  mote_model_info_get(nullptr, &info);
  mote_model_info_get(&tiny().model, nullptr);
  CHECK(mote_model_check_values(&model, message, sizeof message) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_arena_size(&model, nullptr) == 0);
  CHECK(mote_arena_size(nullptr, nullptr) == 0);
  mote_session session;
  CHECK(mote_session_init(&session, &model, nullptr, nullptr, 0, message, sizeof message) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_session_init(nullptr, &tiny().model, nullptr, nullptr, 0, nullptr, 0) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_session_init(&session, &tiny().model, nullptr, nullptr, 0, message, sizeof message) ==
        MOTE_ERR_ARENA_TOO_SMALL);
  int32_t tokens[8];
  size_t n = 0;
  CHECK(mote_tokenize(&model, "hi", 2, 0, tokens, 8, &n) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_detokenize(&model, -1, 1, message, sizeof message, &n) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_chat_tokenize(&model, nullptr, 0, 0, tokens, 8, &n) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_chat_end_of_turn(&model, tokens, 8, &n) == MOTE_ERR_INVALID_ARGUMENT);
}

TEST_CASE("text functions: null buffers, zero capacities, out-of-range tokens and roles") {
  const mote_model *model = &tiny().model;
  int32_t tokens[64];
  size_t n = 0;
  CHECK(mote_tokenize(model, nullptr, 5, 0, tokens, 64, &n) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_tokenize(model, "hello", 5, 0, nullptr, 64, &n) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_tokenize(model, "hello", 5, 0, tokens, 64, nullptr) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_tokenize(model, "hello", 5, 0xFFFFFFFFu, tokens, 0, &n) == MOTE_ERR_BUFFER_TOO_SMALL);
  CHECK(n > 0);
  CHECK(mote_tokenize(model, nullptr, 0, 0, nullptr, 0, &n) == MOTE_OK);
  CHECK(n == 0);

  char piece[16];
  for (const int32_t token : {-1, 64, INT32_MAX, INT32_MIN}) {
    CHECK(mote_detokenize(model, -1, token, piece, sizeof piece, &n) == MOTE_ERR_BAD_TOKEN);
    CHECK(mote_detokenize(model, token == -1 ? -2 : token, 5, piece, sizeof piece, &n) == MOTE_ERR_BAD_TOKEN);
  }
  CHECK(mote_detokenize(model, -1, 5, nullptr, 4, &n) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_detokenize(model, -1, 5, piece, sizeof piece, nullptr) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_detokenize(model, -1, 5, nullptr, 0, &n) != MOTE_OK);  // never writes through null

  mote_chat_message message{MOTE_ROLE_USER, "hi", 2};
  store_raw(&message.role, 7);
  CHECK(mote_chat_tokenize(model, &message, 1, 0, tokens, 64, &n) == MOTE_ERR_INVALID_ARGUMENT);
  store_raw(&message.role, 0xFFFFFFFFu);
  CHECK(mote_chat_tokenize(model, &message, 1, 0, tokens, 64, &n) == MOTE_ERR_INVALID_ARGUMENT);
  message = {MOTE_ROLE_USER, nullptr, 3};
  CHECK(mote_chat_tokenize(model, &message, 1, 0, tokens, 64, &n) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_chat_tokenize(model, nullptr, 2, 0, tokens, 64, &n) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_chat_tokenize(model, nullptr, 0, 0, tokens, 64, nullptr) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_chat_end_of_turn(model, nullptr, 4, &n) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_chat_end_of_turn(model, tokens, 4, nullptr) == MOTE_ERR_INVALID_ARGUMENT);
}

TEST_CASE("session functions: null and uninitialized sessions, bad tokens, bad sampler options") {
  CHECK(mote_session_position(nullptr) == 0);
  CHECK(mote_session_context_length(nullptr) == 0);
  CHECK(std::string(mote_session_error(nullptr)).size() > 0);
  mote_session_reset(nullptr);
  mote_sampler_seed(nullptr, 1);
  CHECK(mote_logits(nullptr) == nullptr);
  mote_session empty{nullptr};
  const int32_t one = 1;
  const float *logits = reinterpret_cast<const float *>(&one);
  int32_t token = 0;
  const mote_sampler_options sampler = mote_sampler_options_default();
  CHECK(mote_prefill(&empty, &one, 1) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_prefill(nullptr, &one, 1) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_decode(&empty, 1, &logits) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_sample(&empty, &sampler, &token) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_generate(&empty, &one, 1, 4, &sampler, nullptr, nullptr, nullptr) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_logits(&empty) == nullptr);

  auto s = mote_test::open_session(tiny().model, mote_session_options_default());
  mote_session *session = &s->session;
  CHECK(mote_prefill(session, nullptr, 3) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_prefill(session, nullptr, 0) == MOTE_OK);
  for (const int32_t bad : {-1, 64, INT32_MAX, INT32_MIN}) {
    CHECK(mote_prefill(session, &bad, 1) == MOTE_ERR_BAD_TOKEN);
    CHECK(mote_decode(session, bad, &logits) == MOTE_ERR_BAD_TOKEN);
    CHECK(logits == nullptr);
  }
  CHECK(mote_session_position(session) == 0);
  const int32_t huge_count_token = 1;
  CHECK(mote_prefill(session, &huge_count_token, SIZE_MAX) == MOTE_ERR_CONTEXT_FULL);
  CHECK(mote_sample(session, &sampler, &token) == MOTE_ERR_INVALID_ARGUMENT);  // no logits yet
  CHECK(mote_decode(session, 1, nullptr) == MOTE_OK);
  CHECK(mote_sample(session, nullptr, &token) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_sample(session, &sampler, nullptr) == MOTE_ERR_INVALID_ARGUMENT);

  char message[128] = "";
  CHECK(mote_sampler_options_validate(nullptr, message, sizeof message) == MOTE_ERR_INVALID_ARGUMENT);
  const float bad_floats[] = {NAN, INFINITY, -INFINITY, -1.0f, 2.0f};
  for (const float bad : bad_floats) {
    mote_sampler_options o = sampler;
    o.top_p = bad;
    CHECK(mote_sampler_options_validate(&o, message, sizeof message) == MOTE_ERR_INVALID_ARGUMENT);
    CHECK(mote_sample(session, &o, &token) == MOTE_ERR_INVALID_ARGUMENT);
    CHECK(mote_generate(session, nullptr, 0, 1, &o, nullptr, nullptr, nullptr) == MOTE_ERR_INVALID_ARGUMENT);
    o = sampler;
    o.temperature = bad == 2.0f ? -2.0f : bad;
    CHECK(mote_sampler_options_validate(&o, nullptr, 0) == MOTE_ERR_INVALID_ARGUMENT);
    o = sampler;
    o.repetition_penalty = bad == 2.0f ? 0.0f : bad;
    CHECK(mote_sampler_options_validate(&o, nullptr, 0) == MOTE_ERR_INVALID_ARGUMENT);
  }
  mote_sampler_options o = sampler;
  o.top_k = -1;
  CHECK(mote_sampler_options_validate(&o, nullptr, 0) == MOTE_ERR_INVALID_ARGUMENT);
  o = sampler;
  o.repetition_last_n = INT32_MIN;
  CHECK(mote_sampler_options_validate(&o, nullptr, 0) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_generate(session, nullptr, 0, 4, nullptr, nullptr, nullptr, nullptr) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_generate(session, nullptr, 5, 4, &sampler, nullptr, nullptr, nullptr) == MOTE_ERR_INVALID_ARGUMENT);
  uint32_t generated = 0;
  CHECK(mote_generate(session, nullptr, 0, 0, &sampler, nullptr, nullptr, &generated) == MOTE_OK);
  CHECK(generated == 0);
}

// The C API is total: every public function, given null pointers, zero sizes, out-of-range enums
// and flags, and token ids, returns a status (or a documented neutral value) and never crashes.
// The asan preset runs this file under AddressSanitizer and UndefinedBehaviorSanitizer (enum
// loads included), so an out-of-range enum read as the C++ type fails there. Which arguments are
// enums or flags comes from mote_enum_args.inc, checked against mote.h's text.
#include <cmath>
#include <cstring>
#include <set>

#include "api_header_support.hpp"
#include "grammar_support.hpp"
#include "test_support.hpp"

namespace {

// A value no mote enum holds, stored as a C caller would (any int fits the field).
template <typename Enum>
void store_raw(Enum *field, uint32_t value) {
  static_assert(sizeof(Enum) == sizeof value, "32-bit enums");
  std::memcpy(field, &value, sizeof value);
}

// mote_enum_args.inc as data; naming each function and type also makes the list fail to compile
// when one is renamed.
struct EnumArg {
  const char *function, *argument, *type;
  uint32_t first_invalid;
};
const EnumArg kEnumArgs[] = {
#define MOTE_ENUM_ARG(function, argument, type, first_invalid) \
  {(static_cast<void>(&function), #function), #argument, (static_cast<void>(sizeof(type)), #type), first_invalid},
#define MOTE_FLAGS_ARG(function, argument, defined_bits)
#include "mote/mote_enum_args.inc"
#undef MOTE_ENUM_ARG
#undef MOTE_FLAGS_ARG
};

struct FlagsArg {
  const char *function, *argument;
  uint32_t defined_bits;
};
const FlagsArg kFlagsArgs[] = {
#define MOTE_ENUM_ARG(function, argument, type, first_invalid)
#define MOTE_FLAGS_ARG(function, argument, defined_bits) \
  {(static_cast<void>(&function), #function), #argument, defined_bits},
#include "mote/mote_enum_args.inc"
#undef MOTE_ENUM_ARG
#undef MOTE_FLAGS_ARG
};

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

  CHECK(std::string(mote_status_name(MOTE_ERR_BUSY)) == "session busy");
  CHECK(std::string(mote_status_name(MOTE_ERR_ABORTED)) == "aborted");
  CHECK(std::string(mote_status_name(MOTE_ERR_GRAMMAR)) == "grammar error");
  CHECK(std::string(status_name_of_int(MOTE_ERR_GRAMMAR + 1)) == "unknown status");

  const mote_model &model = tiny().model;
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
  CHECK(mote_model_check_supported(&model, message, sizeof message) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_model_check_supported(nullptr, nullptr, 0) == MOTE_ERR_INVALID_ARGUMENT);
  mote_tensor_info tensor;
  CHECK(mote_model_tensor(&model, 0, &tensor) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_model_tensor(nullptr, 0, &tensor) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_model_tensor(&tiny().model, 0, nullptr) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_model_tensor(&tiny().model, 0xFFFFFFFFu, &tensor) == MOTE_ERR_INVALID_ARGUMENT);
  size_t piece_n = 0;
  CHECK(mote_token_text(&model, 0, message, sizeof message, &piece_n) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_token_text(&tiny().model, 0, nullptr, 8, &piece_n) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_token_text(&tiny().model, 0, message, sizeof message, nullptr) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_token_type_of(&model, 0) == 0);
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

constexpr uint32_t kTokenizeAll = MOTE_TOKENIZE_ADD_BOS | MOTE_TOKENIZE_SPECIAL;

TEST_CASE("text functions: null buffers, zero capacities, out-of-range tokens and roles") {
  const mote_model *model = &tiny().model;
  int32_t tokens[64];
  size_t n = 0;
  CHECK(mote_tokenize(model, nullptr, 5, 0, tokens, 64, &n) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_tokenize(model, "hello", 5, 0, nullptr, 64, &n) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_tokenize(model, "hello", 5, 0, tokens, 64, nullptr) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_tokenize(model, "hello", 5, kTokenizeAll, tokens, 0, &n) == MOTE_ERR_BUFFER_TOO_SMALL);
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

TEST_CASE("grammar functions: null, unaligned, uncompiled and model-less arguments") {
  const std::string text = "root ::= [a-z]+\n";
  size_t bytes = 0;
  char message[256] = "";
  CHECK(mote_grammar_arena_size(nullptr, 5, &bytes, message, sizeof message) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_grammar_arena_size(text.data(), text.size(), nullptr, message, sizeof message) ==
        MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_grammar_arena_size(nullptr, 0, &bytes, nullptr, 0) == MOTE_ERR_GRAMMAR);  // no rules
  REQUIRE(mote_grammar_arena_size(text.data(), text.size(), &bytes, nullptr, 0) == MOTE_OK);
  mote_test::AlignedBuffer arena(bytes + 64);
  void *aligned = arena.data.get();
  mote_grammar grammar{};
  mote_model unopened{};
  CHECK(mote_grammar_init(nullptr, nullptr, text.data(), text.size(), aligned, bytes, nullptr, 0) ==
        MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_grammar_init(&grammar, &unopened, text.data(), text.size(), aligned, bytes, nullptr, 0) ==
        MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_grammar_init(&grammar, nullptr, text.data(), text.size(), nullptr, bytes, nullptr, 0) ==
        MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_grammar_init(&grammar, nullptr, text.data(), text.size(), arena.data.get() + 8, bytes, message,
                          sizeof message) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(std::string(message).find("aligned") != std::string::npos);
  CHECK(mote_grammar_init(&grammar, nullptr, nullptr, 9, aligned, bytes, nullptr, 0) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_grammar_init(&grammar, nullptr, text.data(), text.size(), aligned, 0, nullptr, 0) ==
        MOTE_ERR_ARENA_TOO_SMALL);

  // Null and never-compiled grammars (a failed init leaves impl_ null).
  for (mote_grammar *bad : {static_cast<mote_grammar *>(nullptr), &grammar}) {
    CHECK(mote_grammar_reset(bad) == MOTE_ERR_INVALID_ARGUMENT);
    CHECK(mote_grammar_accept_bytes(bad, "a", 1, nullptr, 0) == MOTE_ERR_INVALID_ARGUMENT);
    CHECK(mote_grammar_accept_token(bad, -1, 1, nullptr, 0) == MOTE_ERR_INVALID_ARGUMENT);
    CHECK(mote_grammar_state(bad) == 0);
  }
  std::memset(aligned, 0, bytes);
  mote_grammar stale{aligned};  // points at an arena that holds no compiled grammar
  CHECK(mote_grammar_reset(&stale) == MOTE_ERR_INVALID_ARGUMENT);

  // A grammar compiled without a model matches bytes but cannot mask a model's tokens.
  REQUIRE(mote_grammar_init(&grammar, nullptr, text.data(), text.size(), aligned, bytes, nullptr, 0) == MOTE_OK);
  CHECK(mote_grammar_accept_bytes(&grammar, nullptr, 1, nullptr, 0) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_grammar_accept_bytes(&grammar, nullptr, 0, nullptr, 0) == MOTE_OK);
  CHECK(mote_grammar_accept_token(&grammar, -1, 1, message, sizeof message) == MOTE_ERR_INVALID_ARGUMENT);
  auto s = mote_test::open_session(tiny().model, mote_session_options_default());
  const int32_t one = 1;
  REQUIRE(mote_decode(&s->session, one, nullptr) == MOTE_OK);
  const mote_sampler_options sampler = mote_sampler_options_default();
  int32_t token = 0;
  CHECK(mote_sample_grammar(&s->session, &sampler, &grammar, &token) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(std::string(mote_session_error(&s->session)).find("another model") != std::string::npos);
  CHECK(mote_sample_grammar(&s->session, &sampler, nullptr, &token) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_sample_grammar(nullptr, &sampler, &grammar, &token) == MOTE_ERR_INVALID_ARGUMENT);
  mote_grammar never{};
  CHECK(mote_generate_constrained(&s->session, nullptr, 0, 4, &sampler, &never, nullptr, nullptr, nullptr) ==
        MOTE_ERR_INVALID_ARGUMENT);

  // With the model: token ids are checked.
  REQUIRE(mote_grammar_init(&grammar, &tiny().model, text.data(), text.size(), aligned, bytes, nullptr, 0) ==
          MOTE_OK);
  for (const int32_t bad : {-1, 64, INT32_MAX, INT32_MIN}) {
    CHECK(mote_grammar_accept_token(&grammar, -1, bad, nullptr, 0) == MOTE_ERR_BAD_TOKEN);
  }
  CHECK(mote_sample_grammar(&s->session, nullptr, &grammar, &token) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_sample_grammar(&s->session, &sampler, &grammar, nullptr) == MOTE_ERR_INVALID_ARGUMENT);

  size_t written = 0;
  char out[8];
  CHECK(mote_grammar_from_json_schema(nullptr, 4, out, sizeof out, &written, nullptr, 0) ==
        MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_grammar_from_json_schema("{}", 2, nullptr, 8, &written, nullptr, 0) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(mote_grammar_from_json_schema("{}", 2, out, sizeof out, nullptr, nullptr, 0) == MOTE_ERR_BUFFER_TOO_SMALL);
  CHECK(mote_grammar_from_json_schema(nullptr, 0, nullptr, 0, &written, nullptr, 0) == MOTE_ERR_GRAMMAR);
}

namespace {

// An entry of mote_enum_args.inc as the header scan spells it.
std::string enum_entry(const std::string &function, const std::string &argument, const std::string &type,
                       uint32_t first_invalid) {
  return function + "(" + argument + ") " + type + " from " + std::to_string(first_invalid);
}

std::string flags_entry(const std::string &function, const std::string &argument) {
  return function + "(" + argument + ") flags";
}

// Every enum-typed parameter, enum field of a struct passed in by const pointer, and flags
// parameter that mote.h declares.
std::set<std::string> declared_enum_args() {
  const mote_test::ApiHeader header = mote_test::read_api_header();
  REQUIRE(header.functions.size() >= 30);  // the scan found the prototypes
  REQUIRE(header.enums.count("mote_pool") == 1);
  REQUIRE(header.struct_fields.count("mote_session_options") == 1);
  std::set<std::string> declared;
  for (const auto &[function, parameters] : header.functions) {
    for (const mote_test::Parameter &p : parameters) {
      const std::string type = mote_test::base_type(p.type);
      if (header.enums.count(type) != 0) declared.insert(enum_entry(function, p.name, type, header.enums.at(type)));
      if (p.name.find("flags") != std::string::npos) declared.insert(flags_entry(function, p.name));
      const auto fields = header.struct_fields.find(type);
      const bool input = p.type.find("const") != std::string::npos && p.type.find('*') != std::string::npos;
      if (fields == header.struct_fields.end() || !input) continue;
      for (const mote_test::Parameter &f : fields->second) {
        const std::string field_type = mote_test::base_type(f.type);
        if (header.enums.count(field_type) != 0) {
          declared.insert(enum_entry(function, p.name + "." + f.name, field_type, header.enums.at(field_type)));
        }
      }
    }
  }
  return declared;
}

// Values a C caller may store in an enum whose values end below first_invalid.
std::vector<uint32_t> values_outside(uint32_t first_invalid) {
  return {first_invalid, first_invalid + 1, 0xFFu, 0x100u, 0xFFFFu, 0x7FFFFFFFu, 0x80000000u, 0xFFFFFFFFu};
}

mote_test::TestSession &embed_session() {
  static std::unique_ptr<mote_test::TestSession> s =
      mote_test::open_session(tiny().model, mote_session_options_default());
  return *s;
}

// Calls function with argument holding raw (outside its enum) and checks the refusal; false when
// this file has no call for the pair (a new line of mote_enum_args.inc needs one here).
bool refuses_enum(const std::string &function, const std::string &argument, uint32_t raw) {
  const mote_model &model = tiny().model;
  char message[256] = "";
  if (function == "mote_status_name" && argument == "status") {
    const auto name_of_int = reinterpret_cast<const char *(*)(uint32_t)>(&mote_status_name);  // as C calls it
    CHECK(std::string(name_of_int(raw)) == "unknown status");
    return true;
  }
  if (function == "mote_backend_name" && argument == "backend") {
    const auto name_of_int = reinterpret_cast<const char *(*)(uint32_t)>(&mote_backend_name);
    CHECK(name_of_int(raw) == nullptr);
    return true;
  }
  if (function == "mote_chat_template_name" && argument == "chat_template") {
    const auto name_of_int = reinterpret_cast<const char *(*)(uint32_t)>(&mote_chat_template_name);
    CHECK(name_of_int(raw) == nullptr);
    return true;
  }
  if (argument == "options.kv_dtype" || argument == "options.backend") {
    mote_session_options options = mote_session_options_default();
    const bool kv = argument == "options.kv_dtype";
    if (kv) {
      store_raw(&options.kv_dtype, raw);
    } else {
      store_raw(&options.backend, raw);
    }
    const std::string expected = (kv ? "unknown KV cache dtype " : "unknown backend ") + std::to_string(raw);
    if (function == "mote_arena_size") {
      CHECK(mote_arena_size(&model, &options) == 0);
      return true;
    }
    if (function == "mote_backend_memory") {
      uint64_t weight_bytes = 1, session_bytes = 1;
      CHECK(mote_backend_memory(&model, &options, &weight_bytes, &session_bytes, message, sizeof message) ==
            MOTE_ERR_INVALID_ARGUMENT);
      CHECK(message == expected);
      return true;
    }
    if (function == "mote_session_init") {
      mote_session session{&session};
      alignas(64) static unsigned char arena[64];
      CHECK(mote_session_init(&session, &model, &options, arena, sizeof arena, message, sizeof message) ==
            MOTE_ERR_INVALID_ARGUMENT);
      CHECK(message == expected);
      CHECK(session.impl_ == nullptr);
      return true;
    }
    return false;
  }
  if (function == "mote_embed" && argument == "pool") {
    const auto embed_int =
        reinterpret_cast<mote_status (*)(mote_session *, const int32_t *, size_t, uint32_t, int, float *, size_t)>(
            &mote_embed);
    const int32_t tokens[] = {1, 2, 3};
    std::vector<float> out(1024);
    mote_session *session = &embed_session().session;
    CHECK(embed_int(session, tokens, 3, raw, 1, out.data(), out.size()) == MOTE_ERR_INVALID_ARGUMENT);
    CHECK(std::string(mote_session_error(session)) == "unknown pooling " + std::to_string(raw));
    CHECK(embed_int(session, tokens, 3, MOTE_POOL_CLS, 1, out.data(), out.size()) == MOTE_OK);  // the session works
    return true;
  }
  if (function == "mote_embed_batch" && argument == "pool") {
    const auto embed_int = reinterpret_cast<mote_status (*)(mote_session *, const int32_t *, const uint32_t *, size_t,
                                                            uint32_t, int, float *, size_t)>(&mote_embed_batch);
    const int32_t tokens[] = {1, 2, 3};
    const uint32_t lengths[] = {1, 2};
    std::vector<float> out(1024);
    mote_session *session = &embed_session().session;
    CHECK(embed_int(session, tokens, lengths, 2, raw, 1, out.data(), out.size()) == MOTE_ERR_INVALID_ARGUMENT);
    CHECK(std::string(mote_session_error(session)) == "unknown pooling " + std::to_string(raw));
    CHECK(embed_int(session, tokens, lengths, 2, MOTE_POOL_CLS, 1, out.data(), out.size()) == MOTE_OK);
    return true;
  }
  if (argument == "options.draft") {
    mote_sampler_options options = mote_sampler_options_default();
    store_raw(&options.draft, raw);
    mote_session *session = &embed_session().session;  // a decoder session (tiny() is a Llama)
    const int32_t token = 1;
    int32_t out = -1;
    if (function == "mote_sampler_options_validate") {
      CHECK(mote_sampler_options_validate(&options, message, sizeof message) == MOTE_ERR_INVALID_ARGUMENT);
    } else if (function == "mote_sample") {
      CHECK(mote_decode(session, token, nullptr) == MOTE_OK);
      CHECK(mote_sample(session, &options, &out) == MOTE_ERR_INVALID_ARGUMENT);
    } else if (function == "mote_sample_grammar") {
      CHECK(mote_decode(session, token, nullptr) == MOTE_OK);
      mote_test::Compiled grammar("root ::= \"a\"\n");
      REQUIRE(grammar.status == MOTE_OK);
      CHECK(mote_sample_grammar(session, &options, &grammar.grammar, &out) == MOTE_ERR_INVALID_ARGUMENT);
    } else if (function == "mote_generate") {
      CHECK(mote_generate(session, &token, 1, 2, &options, nullptr, nullptr, nullptr) == MOTE_ERR_INVALID_ARGUMENT);
    } else if (function == "mote_generate_constrained") {
      CHECK(mote_generate_constrained(session, &token, 1, 2, &options, nullptr, nullptr, nullptr, nullptr) ==
            MOTE_ERR_INVALID_ARGUMENT);
    } else {
      return false;
    }
    CHECK(std::string(message[0] != '\0' ? message : mote_session_error(session)) ==
          "unknown draft kind " + std::to_string(raw));
    CHECK(out == -1);
    mote_session_reset(session);
    return true;
  }
  if (function == "mote_chat_tokenize" && argument == "messages.role") {
    mote_chat_message messages[2] = {{MOTE_ROLE_USER, "hi", 2}, {MOTE_ROLE_ASSISTANT, "yo", 2}};
    int32_t tokens[64];
    size_t n = 0;
    // The tiny model has no chat template: a valid conversation is MOTE_ERR_UNSUPPORTED.
    CHECK(mote_chat_tokenize(&model, messages, 2, 0, tokens, 64, &n) == MOTE_ERR_UNSUPPORTED);
    store_raw(&messages[1].role, raw);
    CHECK(mote_chat_tokenize(&model, messages, 2, 0, tokens, 64, &n) == MOTE_ERR_INVALID_ARGUMENT);
    return true;
  }
  return false;
}

// The same for a flags argument holding an undefined bit.
bool refuses_flags(const std::string &function, const std::string &argument, uint32_t raw, uint32_t defined) {
  const mote_model &model = tiny().model;
  int32_t tokens[64];
  size_t n = 0;
  if (function == "mote_tokenize" && argument == "flags") {
    CHECK(mote_tokenize(&model, "hi", 2, defined, tokens, 64, &n) == MOTE_OK);
    CHECK(mote_tokenize(&model, "hi", 2, raw, tokens, 64, &n) == MOTE_ERR_INVALID_ARGUMENT);
    return true;
  }
  if (function == "mote_chat_tokenize" && argument == "flags") {
    const mote_chat_message message{MOTE_ROLE_USER, "hi", 2};
    CHECK(mote_chat_tokenize(&model, &message, 1, defined, tokens, 64, &n) == MOTE_ERR_UNSUPPORTED);  // no template
    CHECK(mote_chat_tokenize(&model, &message, 1, raw, tokens, 64, &n) == MOTE_ERR_INVALID_ARGUMENT);
    return true;
  }
  return false;
}

}  // namespace

TEST_CASE("mote_enum_args.inc lists every enum and flags argument that mote.h declares, and nothing else") {
  const std::set<std::string> declared = declared_enum_args();
  std::set<std::string> listed;
  for (const EnumArg &a : kEnumArgs) listed.insert(enum_entry(a.function, a.argument, a.type, a.first_invalid));
  for (const FlagsArg &a : kFlagsArgs) listed.insert(flags_entry(a.function, a.argument));
  for (const std::string &entry : declared) {
    if (listed.count(entry) == 0) FAIL_CHECK("mote.h declares " << entry << ", missing from mote_enum_args.inc");
  }
  for (const std::string &entry : listed) {
    if (declared.count(entry) == 0)
      FAIL_CHECK("mote_enum_args.inc lists " << entry << ", which mote.h does not declare");
  }
  CHECK(declared.size() == listed.size());
}

TEST_CASE("every listed enum argument refuses values outside its enum; every flags argument, undefined bits") {
  for (const EnumArg &a : kEnumArgs) {
    for (const uint32_t raw : values_outside(a.first_invalid)) {
      CAPTURE(a.function);
      CAPTURE(a.argument);
      CAPTURE(raw);
      if (!refuses_enum(a.function, a.argument, raw)) FAIL_CHECK("no hostile call written for this argument");
    }
  }
  for (const FlagsArg &a : kFlagsArgs) {
    for (uint32_t bit = 0; bit < 32; ++bit) {
      const uint32_t raw = 1u << bit;
      if ((raw & a.defined_bits) != 0) continue;
      CAPTURE(a.function);
      CAPTURE(raw);
      if (!refuses_flags(a.function, a.argument, raw | a.defined_bits, a.defined_bits)) {
        FAIL_CHECK("no hostile call written for this argument");
      }
    }
  }
}

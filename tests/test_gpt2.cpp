// GPT-2-style blocks end to end: tiny random GPT-2 checkpoints (tests/golden/tiny_gpt2, written by
// gen_gpt2_goldens.py) converted by mote's safetensors importer, against logits of a PyTorch
// reference built from torch.nn.LayerNorm / MultiheadAttention / functional.gelu, itself checked
// against transformers' GPT2LMHeadModel. Also: the causal mask and encoder mode, embeddings
// (the C API and `mote embed`), and the sinusoidal position table against its formula.
#include <doctest/doctest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "cli_support.hpp"
#include "gguf/gguf.hpp"
#include "hf/hf.hpp"
#include "model/model.hpp"
#include "test_support.hpp"

using mote_test::AlignedBuffer;

namespace {

const std::vector<int32_t> kTokens = {5, 17, 250, 3, 99, 42, 42, 7, 280, 120, 64, 11};  // the generator's TOKENS
constexpr size_t kPrompt = 6;                                                           // PROMPT = TOKENS[:6]
constexpr size_t kVocab = 304, kDim = 32;
const char *const kVariants[] = {"prenorm_gelu_tanh", "prenorm_gelu_erf", "prenorm_relu", "postnorm_sinusoidal"};

std::string variant_path(const std::string &variant, const std::string &file = "") {
  return mote_test::golden_path("tiny_gpt2/" + variant + (file.empty() ? "" : "/" + file));
}

std::vector<int32_t> read_ids(const std::string &path) {
  std::istringstream in(mote_cli_test::slurp(path));
  std::vector<int32_t> ids;
  for (int32_t id; in >> id;) ids.push_back(id);
  return ids;
}

// A variant converted in memory (as `mote convert` does) and opened.
struct Gpt2Model {
  AlignedBuffer bytes{0};
  mote_model model{};
};

std::unique_ptr<Gpt2Model> convert_variant(const std::string &variant, mote::format::DType dtype) {
  mote::convert::SafetensorsOptions options;
  options.dtype = dtype;
  options.tokenizer_path = mote_test::golden_path("tiny_gpt2/tokenizer.json");
  mote::convert::ModelData data;
  std::string error;
  REQUIRE_MESSAGE(mote::convert::load_hf_checkpoint(variant_path(variant), options, &data, &error), error);
  auto m = std::make_unique<Gpt2Model>();
  m->bytes = AlignedBuffer::copy_of(mote::convert::serialize(data));
  char message[256] = "";
  REQUIRE_MESSAGE(mote_model_open(m->bytes.data.get(), m->bytes.size, &m->model, message, sizeof message) == MOTE_OK,
                  message);
  return m;
}

mote_session_options options_with(uint32_t bidirectional, uint32_t batch = 16) {
  mote_session_options o = mote_test::f32_kv_options();  // the references' precision
  o.bidirectional = bidirectional;
  o.batch_size = batch;
  return o;
}

// Logits at every position, decoding one token at a time.
std::vector<float> decode_all(const mote_model &model, const std::vector<int32_t> &tokens) {
  auto s = mote_test::open_session(model, options_with(0));
  std::vector<float> all;
  for (int32_t token : tokens) {
    const float *logits = nullptr;
    REQUIRE(mote_decode(&s->session, token, &logits) == MOTE_OK);
    all.insert(all.end(), logits, logits + kVocab);
  }
  return all;
}

float max_abs_diff(const float *a, const float *b, size_t n) {
  float worst = 0.0f;
  for (size_t i = 0; i < n; ++i) worst = std::fmax(worst, std::fabs(a[i] - b[i]));
  return worst;
}

size_t argmax(const float *x, size_t n) {
  size_t best = 0;
  for (size_t i = 1; i < n; ++i) best = x[i] > x[best] ? i : best;
  return best;
}

}  // namespace

TEST_CASE("gpt2: every variant matches the PyTorch reference at every position, f32 and f16 weights") {
  for (const char *variant : kVariants) {
    const std::vector<float> expected = mote_test::read_floats(variant_path(variant, "logits.bin"));
    REQUIRE(expected.size() == kTokens.size() * kVocab);
    const std::vector<int32_t> greedy = read_ids(variant_path(variant, "greedy.txt"));
    // The stored matrices are f16 values, so both conversions hold the reference's weights exactly.
    for (mote::format::DType dtype : {mote::format::DType::f32, mote::format::DType::f16}) {
      const std::string name = variant;
      CAPTURE(name);
      CAPTURE(static_cast<int>(dtype));
      auto m = convert_variant(variant, dtype);
      const std::vector<float> logits = decode_all(m->model, kTokens);
      MESSAGE(std::string(variant) << (dtype == mote::format::DType::f32 ? " f32" : " f16") << ": max |logit error| "
                                   << max_abs_diff(logits.data(), expected.data(), logits.size()));
      // transformers' GPT2LMHeadModel itself, where it can express the variant.
      const std::vector<float> hf = mote_test::read_floats(variant_path(variant, "hf_logits.bin"));
      if (!hf.empty()) CHECK(max_abs_diff(logits.data(), hf.data(), logits.size()) <= 1e-4f);
      CHECK(hf.empty() == (std::string(variant) == "postnorm_sinusoidal"));
      for (size_t p = 0; p < kTokens.size(); ++p) {
        CAPTURE(p);
        CHECK(max_abs_diff(&logits[p * kVocab], &expected[p * kVocab], kVocab) <= 1e-4f);
        CHECK(argmax(&logits[p * kVocab], kVocab) == argmax(&expected[p * kVocab], kVocab));
      }

      // Prefill of the whole sequence gives the last position's logits bit for bit.
      auto s = mote_test::open_session(m->model, options_with(0, 5));
      REQUIRE(mote_prefill(&s->session, kTokens.data(), kTokens.size()) == MOTE_OK);
      const float *last = mote_logits(&s->session);
      REQUIRE(last != nullptr);
      CHECK(std::memcmp(last, &logits[(kTokens.size() - 1) * kVocab], kVocab * sizeof(float)) == 0);

      // Greedy continuation of the prompt: the reference's ids.
      mote_session_reset(&s->session);
      REQUIRE(mote_prefill(&s->session, kTokens.data(), kPrompt) == MOTE_OK);
      std::vector<int32_t> ids;
      for (size_t step = 0; step < greedy.size(); ++step) {
        const int32_t next = static_cast<int32_t>(argmax(mote_logits(&s->session), kVocab));
        ids.push_back(next);
        REQUIRE(mote_decode(&s->session, next, nullptr) == MOTE_OK);
      }
      CHECK(ids == greedy);
    }
  }
}

TEST_CASE("gpt2: a GGUF of architecture gpt2 (llama.cpp's layout) gives the same logits and tokens") {
  mote::convert::GgufOptions options;  // the stored types: F16 matrices, F32 vectors
  mote::convert::ModelData data;
  std::string error;
  REQUIRE_MESSAGE(
      mote::convert::load_gguf(mote_test::golden_path("tiny_gpt2/prenorm_gelu_tanh.gguf"), options, &data, &error),
      error);
  CHECK(data.config.family == mote::format::Family::gpt2);
  CHECK(data.tokenizer.flags == mote::format::kTokNoDigitSplit);  // tokenizer.ggml.pre "gpt2"
  Gpt2Model m;
  m.bytes = AlignedBuffer::copy_of(mote::convert::serialize(data));
  char message[256] = "";
  REQUIRE_MESSAGE(mote_model_open(m.bytes.data.get(), m.bytes.size, &m.model, message, sizeof message) == MOTE_OK,
                  message);
  const std::vector<float> expected = mote_test::read_floats(variant_path("prenorm_gelu_tanh", "logits.bin"));
  const std::vector<float> logits = decode_all(m.model, kTokens);
  CHECK(max_abs_diff(logits.data(), expected.data(), logits.size()) <= 1e-4f);
  const std::string text = "in 2026 there were  1234567 tokens,  42x and 3.14";
  std::vector<int32_t> ids(text.size() + 2);
  size_t n = 0;
  REQUIRE(mote_tokenize(&m.model, text.data(), text.size(), 0, ids.data(), ids.size(), &n) == MOTE_OK);
  ids.resize(n);
  CHECK(ids == read_ids(mote_test::golden_path("tiny_gpt2/digits.txt")));
}

TEST_CASE("gpt2: quantized weights (x8 interleaved, fused QKV split at row groups) stay close to the reference") {
  for (mote::format::DType dtype : {mote::format::DType::q8_0, mote::format::DType::q4_0}) {
    auto m = convert_variant("prenorm_gelu_erf", dtype);
    const std::vector<float> expected = mote_test::read_floats(variant_path("prenorm_gelu_erf", "logits.bin"));
    const std::vector<float> logits = decode_all(m->model, kTokens);
    const float error = max_abs_diff(logits.data(), expected.data(), logits.size());
    MESSAGE("prenorm_gelu_erf " << (dtype == mote::format::DType::q8_0 ? "q8_0" : "q4_0") << ": max |logit error| "
                                << error);
    // Logits span about +-5 here: a wrong row split or bias would miss by that much. Measured:
    // q8_0 0.09, q4_0 0.84 (one 32-element block per row: the 8-bit activations and the 4-bit
    // weights each take their whole error on every product).
    CHECK(error <= (dtype == mote::format::DType::q8_0 ? 0.2f : 1.5f));
    if (dtype == mote::format::DType::q8_0) {
      size_t same = 0;
      for (size_t p = 0; p < kTokens.size(); ++p)
        same += argmax(&logits[p * kVocab], kVocab) == argmax(&expected[p * kVocab], kVocab);
      CHECK(same >= kTokens.size() - 1);
    }
  }
}

TEST_CASE("gpt2: mote convert reads a GPT-2 checkpoint folder and mote run decodes it") {
  if (!mote_cli_test::have_cli()) return;
  using mote_cli_test::quote;
  const std::string out = mote_cli_test::workspace().path("gpt2.mote");
  auto r = mote_cli_test::run_cli("convert " + quote(variant_path("prenorm_gelu_tanh")) + " --tokenizer " +
                                  quote(mote_test::golden_path("tiny_gpt2/tokenizer.json")) + " -o " + quote(out) +
                                  " --dtype f32");
  INFO("stderr: " << r.err);
  REQUIRE(r.code == 0);
  r = mote_cli_test::run_cli("inspect " + quote(out));
  CHECK(r.out.find("family          gpt2") != std::string::npos);
  CHECK(r.out.find("layernorm with bias, eps 1e-05, pre-norm") != std::string::npos);
  CHECK(r.out.find("gelu (tanh approximation)") != std::string::npos);
  CHECK(r.out.find("blk.1.attn_qkv") != std::string::npos);
  CHECK(r.out.find("pos_embd") != std::string::npos);
  CHECK(r.out.find("runnable        no") == std::string::npos);

  // `mote embed` mean-pools the final LayerNorm's outputs as the reference does.
  const std::vector<float> expected = mote_test::read_floats(variant_path("prenorm_gelu_tanh", "embed_mean.bin"));
  REQUIRE(expected.size() == kDim);
  r = mote_cli_test::run_cli("embed -m " + quote(out) + " -p 'the quick brown fox jumps over the lazy dog'");
  REQUIRE(r.code == 0);
  std::istringstream lines(r.out);
  std::vector<float> got;
  for (float v; lines >> v;) got.push_back(v);
  REQUIRE(got.size() == kDim);
  CHECK(max_abs_diff(got.data(), expected.data(), kDim) <= 1e-5f);
  r = mote_cli_test::run_cli("embed -m " + quote(out) + " -p 'the quick brown fox' --json --normalize --pool last");
  REQUIRE(r.code == 0);
  CHECK(r.out.front() == '[');
  CHECK(r.out.find("]\n") != std::string::npos);
  mote_cli_test::expect_error("embed -m " + quote(out) + " -p x --pool max", 2, "--pool must be mean, last or cls");
}

TEST_CASE("gpt2: the causal mask hides later tokens; encoder mode does not") {
  auto m = convert_variant("prenorm_gelu_tanh", mote::format::DType::f32);
  std::vector<int32_t> changed = kTokens;
  changed[8] = 200;
  const std::vector<float> a = decode_all(m->model, kTokens), b = decode_all(m->model, changed);
  for (size_t p = 0; p < 8; ++p) CHECK(std::memcmp(&a[p * kVocab], &b[p * kVocab], kVocab * sizeof(float)) == 0);
  CHECK(max_abs_diff(&a[8 * kVocab], &b[8 * kVocab], kVocab) > 1e-3f);

  // The first token's hidden state (CLS pooling) sees token 8 only in encoder mode.
  auto cls = [&](uint32_t bidirectional, const std::vector<int32_t> &tokens) {
    auto s = mote_test::open_session(m->model, options_with(bidirectional));
    std::vector<float> v(kDim);
    REQUIRE(mote_embed(&s->session, tokens.data(), tokens.size(), MOTE_POOL_CLS, 0, v.data(), v.size()) == MOTE_OK);
    return v;
  };
  CHECK(cls(0, kTokens) == cls(0, changed));
  CHECK(max_abs_diff(cls(1, kTokens).data(), cls(1, changed).data(), kDim) > 1e-3f);

  // Encoder mode against the reference without a mask: the last position's logits and the mean.
  const std::vector<float> encoder_logits =
      mote_test::read_floats(variant_path("prenorm_gelu_tanh", "encoder_logits.bin"));
  const std::vector<float> encoder_mean = mote_test::read_floats(variant_path("prenorm_gelu_tanh", "encoder_mean.bin"));
  auto s = mote_test::open_session(m->model, options_with(1));
  REQUIRE(mote_prefill(&s->session, kTokens.data(), kTokens.size()) == MOTE_OK);
  CHECK(max_abs_diff(mote_logits(&s->session), &encoder_logits[(kTokens.size() - 1) * kVocab], kVocab) <= 1e-4f);
  std::vector<float> mean(kDim);
  REQUIRE(mote_embed(&s->session, kTokens.data(), kTokens.size(), MOTE_POOL_MEAN, 0, mean.data(), mean.size()) ==
          MOTE_OK);
  CHECK(max_abs_diff(mean.data(), encoder_mean.data(), kDim) <= 1e-5f);

  // Normalized: unit length, the same direction.
  std::vector<float> unit(kDim);
  REQUIRE(mote_embed(&s->session, kTokens.data(), kTokens.size(), MOTE_POOL_MEAN, 1, unit.data(), unit.size()) ==
          MOTE_OK);
  double length = 0, norm = 0;
  for (size_t i = 0; i < kDim; ++i) length += double(unit[i]) * unit[i], norm += double(mean[i]) * mean[i];
  CHECK(length == doctest::Approx(1.0).epsilon(1e-6));
  CHECK(unit[3] == doctest::Approx(mean[3] / std::sqrt(norm)).epsilon(1e-5));

  // Errors: a text longer than one step, a short buffer.
  auto small = mote_test::open_session(m->model, options_with(1, 4));
  CHECK(mote_embed(&small->session, kTokens.data(), kTokens.size(), MOTE_POOL_MEAN, 0, mean.data(), mean.size()) ==
        MOTE_ERR_INVALID_ARGUMENT);
  CHECK(std::string(mote_session_error(&small->session)).find("batch size 4") != std::string::npos);
  CHECK(mote_embed(&s->session, kTokens.data(), 3, MOTE_POOL_MEAN, 0, mean.data(), kDim - 1) ==
        MOTE_ERR_BUFFER_TOO_SMALL);
  mote_session_options bad = options_with(2);
  CHECK(mote_arena_size(&m->model, &bad) == 0);
}

TEST_CASE("gpt2: mote_embed_batch gives each text the bits it gets alone (causal and encoder, every pooling)") {
  // Three texts of different lengths in one step: each sees only itself, positions from 0.
  const std::vector<int32_t> tokens(kTokens.begin(), kTokens.begin() + 9);
  const uint32_t lengths[] = {4, 1, 4};
  for (const char *variant : {"prenorm_gelu_tanh", "postnorm_sinusoidal"}) {
    auto m = convert_variant(variant, mote::format::DType::f32);
    for (uint32_t bidirectional : {0u, 1u}) {
      for (mote_pool pool : {MOTE_POOL_MEAN, MOTE_POOL_LAST, MOTE_POOL_CLS}) {
        INFO(variant << " bidirectional " << bidirectional << " pool " << int(pool));
        auto s = mote_test::open_session(m->model, options_with(bidirectional));
        std::vector<float> batch(3 * kDim), alone(kDim);
        REQUIRE(mote_embed_batch(&s->session, tokens.data(), lengths, 3, pool, 1, batch.data(), batch.size()) ==
                MOTE_OK);
        size_t first = 0;
        for (size_t i = 0; i < 3; first += lengths[i], ++i) {
          REQUIRE(mote_embed(&s->session, &tokens[first], lengths[i], pool, 1, alone.data(), alone.size()) == MOTE_OK);
          CHECK(std::memcmp(alone.data(), &batch[i * kDim], kDim * sizeof(float)) == 0);
        }
      }
    }
    auto s = mote_test::open_session(m->model, options_with(1, 8));
    std::vector<float> out(3 * kDim);
    CHECK(mote_embed_batch(&s->session, tokens.data(), lengths, 3, MOTE_POOL_MEAN, 0, out.data(), out.size()) ==
          MOTE_ERR_INVALID_ARGUMENT);  // 9 tokens, a batch of 8
    const uint32_t with_empty[] = {4, 0, 4};
    CHECK(mote_embed_batch(&s->session, tokens.data(), with_empty, 3, MOTE_POOL_MEAN, 0, out.data(), out.size()) ==
          MOTE_ERR_INVALID_ARGUMENT);
    CHECK(std::string(mote_session_error(&s->session)) == "text 1 has no tokens");
    CHECK(mote_embed_batch(&s->session, tokens.data(), lengths, 2, MOTE_POOL_MEAN, 0, out.data(), 2 * kDim - 1) ==
          MOTE_ERR_BUFFER_TOO_SMALL);
  }
}

TEST_CASE("gpt2: the byte-level tokenizer keeps number runs whole, as GPT-2's pre-tokenizer does") {
  auto m = convert_variant("prenorm_gelu_tanh", mote::format::DType::f32);
  const std::string text = "in 2026 there were  1234567 tokens,  42x and 3.14";  // the generator's DIGIT_TEXT
  const std::vector<int32_t> expected = read_ids(mote_test::golden_path("tiny_gpt2/digits.txt"));
  std::vector<int32_t> ids(text.size() + 2);
  size_t n = 0;
  REQUIRE(mote_tokenize(&m->model, text.data(), text.size(), 0, ids.data(), ids.size(), &n) == MOTE_OK);
  ids.resize(n);
  CHECK(ids == expected);
  const mote::Model &model = *reinterpret_cast<const mote::Model *>(m->model.opaque_);
  CHECK_FALSE(model.view.tokenizer.split_digits);
}

TEST_CASE("gpt2: the importer rejects what the architecture has no place for") {
  const std::string dir = mote_cli_test::workspace().path("gpt2_broken");
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(variant_path("postnorm_sinusoidal", "model.safetensors"), dir + "/model.safetensors",
                             std::filesystem::copy_options::overwrite_existing);
  const std::string config = mote_cli_test::slurp(variant_path("postnorm_sinusoidal", "config.json"));
  mote::convert::SafetensorsOptions options;
  options.tokenizer_path = mote_test::golden_path("tiny_gpt2/tokenizer.json");
  mote::convert::ModelData data;
  std::string error;
  auto convert_with = [&](const std::string &text) {
    mote_cli_test::write_text(dir + "/config.json", text);
    error.clear();
    return mote::convert::load_hf_checkpoint(dir, options, &data, &error);
  };
  CHECK(convert_with(config));
  // Without the extension keys the file is a pre-norm, learned-position GPT-2: wpe and ln_f missing.
  std::string learned = config;
  learned.replace(learned.find("\"sinusoidal\""), 12, "\"learned\"");
  CHECK_FALSE(convert_with(learned));
  CHECK(error.find("is missing tensor 'transformer.wpe.weight'") != std::string::npos);
  std::string swish = config;
  swish.replace(swish.find("\"gelu_new\""), 10, "\"swish\"");
  CHECK_FALSE(convert_with(swish));
  CHECK(error.find("activation_function 'swish' is not supported") != std::string::npos);
}

TEST_CASE("multi-head attention alone matches torch.nn.MultiheadAttention, without and with biases") {
  // The forward pass's steps for one block's attention on the best kernels: the fused in_proj as
  // three row ranges, bias adds, causal attention per head over the sequence, the output projection.
  constexpr size_t T = 7, D = kDim, H = 4, HD = D / H;
  const std::vector<float> golden = mote_test::read_floats(mote_test::golden_path("tiny_gpt2/mha.bin"));
  const size_t per_case = 3 * D * D + 3 * D + D * D + D + 2 * T * D;
  REQUIRE(golden.size() == 2 * per_case);
  const mote::kernels::KernelTable &k = mote::kernels::best_kernels();
  for (int with_bias = 0; with_bias < 2; ++with_bias) {
    const float *in_w = golden.data() + with_bias * per_case, *in_b = in_w + 3 * D * D, *out_w = in_b + 3 * D,
                *out_b = out_w + D * D, *x = out_b + D, *expected = x + T * D;
    std::vector<float> qkv[3], heads(T * D), y(T * D), scores(T);
    for (int part = 0; part < 3; ++part) {
      qkv[part].resize(T * D);
      k.matmul_f32(qkv[part].data(), D, in_w + part * D * D, x, D, D, T);
      for (size_t t = 0; t < T; ++t) k.add(&qkv[part][t * D], in_b + part * D, D);
    }
    for (size_t t = 0; t < T; ++t) {
      for (size_t h = 0; h < H; ++h) {
        k.attention_f32(&heads[t * D + h * HD], scores.data(), &qkv[0][t * D + h * HD], &qkv[1][h * HD],
                        &qkv[2][h * HD], t + 1, HD, D, 1.0f / std::sqrt(static_cast<float>(HD)));
      }
    }
    k.matmul_f32(y.data(), D, out_w, heads.data(), D, D, T);
    for (size_t t = 0; t < T; ++t) k.add(&y[t * D], out_b, D);
    CAPTURE(with_bias);
    CHECK(max_abs_diff(y.data(), expected, T * D) <= 1e-5f);
  }
}

TEST_CASE("sinusoidal positions: the table lives in the arena, counted by mote_arena_size") {
  // The two variants have the same sizes; only the sinusoidal one holds a (context, dim) table.
  auto sinusoidal = convert_variant("postnorm_sinusoidal", mote::format::DType::f32);
  auto learned = convert_variant("prenorm_gelu_tanh", mote::format::DType::f32);
  auto arena = [](const mote_model &model, uint32_t context) {
    mote_session_options o = mote_session_options_default();
    o.context_length = context;
    return static_cast<long long>(mote_arena_size(&model, &o));
  };
  const long long growth_sinusoidal = arena(sinusoidal->model, 64) - arena(sinusoidal->model, 32);
  const long long growth_learned = arena(learned->model, 64) - arena(learned->model, 32);
  CHECK(growth_sinusoidal - growth_learned == 32 * static_cast<long long>(kDim) * 4);
}

TEST_CASE("sinusoidal positions: the formula, and a fixed rotation per offset") {
  constexpr size_t n_pos = 96, dim = 16;
  std::vector<float> table(n_pos * dim);
  mote::sinusoidal_positions(table.data(), n_pos, dim);
  for (size_t pos = 0; pos < n_pos; ++pos) {
    for (size_t i = 0; i < dim / 2; ++i) {
      const double angle = pos / std::pow(10000.0, 2.0 * i / dim);
      CHECK(std::fabs(table[pos * dim + 2 * i] - std::sin(angle)) <= 1e-6);
      CHECK(std::fabs(table[pos * dim + 2 * i + 1] - std::cos(angle)) <= 1e-6);
    }
  }
  // For each offset k, the block-diagonal rotation read off PE(k) (pair i: PE(0) = (0, 1) turns
  // into (sin, cos) of k w_i) maps PE(pos) to PE(pos + k) for every pos.
  for (size_t k = 1; k < 32; ++k) {
    float worst = 0.0f;
    for (size_t pos = 0; pos + k < n_pos; ++pos) {
      for (size_t i = 0; i < dim / 2; ++i) {
        const float s = table[k * dim + 2 * i], c = table[k * dim + 2 * i + 1];
        const float x0 = table[pos * dim + 2 * i], x1 = table[pos * dim + 2 * i + 1];
        worst = std::fmax(worst, std::fabs(c * x0 + s * x1 - table[(pos + k) * dim + 2 * i]));
        worst = std::fmax(worst, std::fabs(-s * x0 + c * x1 - table[(pos + k) * dim + 2 * i + 1]));
      }
    }
    CAPTURE(k);
    CHECK(worst <= 1e-5f);
  }
}

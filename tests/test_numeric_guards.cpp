// Non-finite numbers never become text: a NaN or inf logit is MOTE_ERR_NUMERIC (API and CLI),
// `mote convert` refuses non-finite weights and values that overflow their stored dtype, what it
// writes always opens, and `mote inspect --check` finds NaN in an existing file.
#include <cmath>
#include <cstring>

#include <random>

#include "cli_support.hpp"
#include "convert_support.hpp"
#include "dtype_policy.hpp"
#include "mote_writer.hpp"
#include "quant/dequant.hpp"
#include "quant/quantize.hpp"

namespace {

using mote::convert::ModelData;
using mote::format::DType;
using mote::format::Role;
using mote_cli_test::expect_error;
using mote_cli_test::quote;
using mote_cli_test::run_cli;
using mote_cli_test::workspace;

constexpr uint32_t kDim = 32, kVocab = 64;  // tiny_mha.bin: dim 32, vocab 64, tied embeddings

ModelData tiny_data() {
  mote::convert::Llama2cOptions options;
  options.dtype = DType::f32;
  ModelData data;
  std::string error;
  REQUIRE_MESSAGE(mote::convert::load_llama2c(mote_test::golden_path("tiny_mha.bin"),
                                              mote_test::golden_path("tiny_tok64.bin"), options, &data, &error),
                  error);
  REQUIRE(data.config.dim == kDim);
  REQUIRE(data.config.vocab_size == kVocab);
  REQUIRE((data.config.flags & mote::format::kFlagTiedEmbeddings) != 0);
  return data;
}

// Sets one f32 element of the tensor with this role (layer 0 for per-layer roles).
void poison(ModelData &m, Role role, size_t index, float value) {
  for (mote::convert::TensorData &t : m.tensors) {
    if (t.role != role || (t.layer != 0 && t.layer != mote::format::kNoLayer)) continue;
    REQUIRE(t.dtype == DType::f32);
    std::memcpy(t.bytes.data() + 4 * index, &value, 4);
    return;
  }
  FAIL("no such tensor");
}

std::string write_model(const ModelData &m, const std::string &name) {
  const std::string path = workspace().path(name);
  std::string error;
  const std::vector<uint8_t> bytes = mote::convert::serialize(m);
  REQUIRE_MESSAGE(mote::convert::write_file(path, bytes, &error), error);
  return path;
}

// A copy of a golden llama2.c file with the float at float_index (after the 28-byte header) set.
std::string checkpoint_with(const std::string &name, size_t float_index, float value) {
  std::string bytes = mote_cli_test::slurp(mote_test::golden_path("tiny_mha.bin"));
  REQUIRE(bytes.size() >= 28 + 4 * (float_index + 1));
  std::memcpy(&bytes[28 + 4 * float_index], &value, 4);
  const std::string path = workspace().path(name);
  mote_cli_test::write_text(path, bytes);
  return path;
}

std::string convert_args(const std::string &checkpoint, const std::string &extra = "") {
  return "convert " + quote(checkpoint) + " --tokenizer " + quote(mote_test::golden_path("tiny_tok64.bin")) + " -o " +
         quote(workspace().path("out.mote")) + (extra.empty() ? "" : " " + extra);
}

}  // namespace

TEST_CASE("a NaN logit (first, middle, last) is MOTE_ERR_NUMERIC naming the step, logit and position") {
  for (const uint32_t bad : {0u, kVocab / 2, kVocab - 1}) {
    // With tied embeddings, row `bad` of the embedding is the classifier row of logit `bad`.
    ModelData data = tiny_data();
    poison(data, Role::token_embedding, static_cast<size_t>(bad) * kDim, NAN);
    const mote_test::AlignedBuffer bytes = mote_test::AlignedBuffer::copy_of(mote::convert::serialize(data));
    mote_model model;
    REQUIRE(mote_model_open(bytes.data.get(), bytes.size, &model, nullptr, 0) == MOTE_OK);
    const int32_t prompt[] = {1, 5, 7};  // never the poisoned row
    for (const float temperature : {0.0f, 0.8f}) {
      CAPTURE(bad);
      CAPTURE(temperature);
      auto s = mote_test::open_session(model, mote_session_options_default());
      mote_sampler_options options = mote_sampler_options_default();
      options.temperature = temperature;
      uint32_t generated = 99;
      CHECK(mote_generate(&s->session, prompt, 3, 8, &options, nullptr, nullptr, &generated) == MOTE_ERR_NUMERIC);
      CHECK(generated == 0);
      const std::string message = mote_session_error(&s->session);
      CHECK(message.find("generation step 0") != std::string::npos);
      CHECK(message.find("logit " + std::to_string(bad) + " of 64 is nan after position 3") != std::string::npos);

      mote_session_reset(&s->session);
      REQUIRE(mote_prefill(&s->session, prompt, 2) == MOTE_OK);
      int32_t token = 0;
      CHECK(mote_sample(&s->session, &options, &token) == MOTE_ERR_NUMERIC);
      CHECK(std::string(mote_session_error(&s->session)).find("after position 2") != std::string::npos);
    }
  }
  CHECK(std::string(mote_status_name(MOTE_ERR_NUMERIC)) == "non-finite number");
}

TEST_CASE("mote run on a model with NaN weights exits 1 with one line; inspect --check names the tensor") {
  if (!mote_cli_test::have_cli()) return;
  ModelData data = tiny_data();
  poison(data, Role::output_norm, 3, NAN);
  const std::string nan_model = write_model(data, "nan.mote");
  expect_error("run -m " + quote(nan_model) + " -p hello -n 4 --temp 0", 1, "generation step 0: logit 0 of 64 is nan");
  expect_error("run -m " + quote(nan_model) + " -p hello -n 4 --temp 0.7 --seed 3", 1, "is nan");
  expect_error("inspect --check " + quote(nan_model), 1, "tensor 'output_norm' holds nan at index 3");

  ModelData inf_data = tiny_data();
  poison(inf_data, Role::attn_q, 40, -INFINITY);
  expect_error("inspect " + quote(write_model(inf_data, "inf.mote")) + " --check", 1,
               "tensor 'blk.0.attn_q' holds -inf at index 40");

  const mote_cli_test::Result good = run_cli("inspect --check " + quote(write_model(tiny_data(), "good.mote")));
  CHECK(good.code == 0);
  CHECK(good.out.find("all finite") != std::string::npos);
}

TEST_CASE("inspect --check finds a bad scale in quantized and interleaved tensors") {
  for (const DType dtype : {DType::q8_0, DType::q4_1}) {
    for (const bool interleaved : {false, true}) {
      mote::convert::Llama2cOptions options;
      options.dtype = dtype;
      options.layout = interleaved ? mote::convert::BlockLayout::interleaved : mote::convert::BlockLayout::gguf;
      ModelData q;
      std::string error;
      REQUIRE(mote::convert::load_llama2c(mote_test::golden_path("tiny_mha.bin"),
                                          mote_test::golden_path("tiny_tok64.bin"), options, &q, &error));
      // blk.0.attn_q (32 x 32): one block per row. Plain: row 9's block is block 9 at 9 * block
      // bytes. x8: rows 8..15 are group 1; row 9's scale is the second of that group block's.
      mote::convert::TensorData *t = nullptr;
      for (auto &candidate : q.tensors)
        if (candidate.role == Role::attn_q && candidate.layer == 0) t = &candidate;
      REQUIRE(t != nullptr);
      const uint32_t block_bytes = mote::format::dtype_traits(static_cast<uint32_t>(dtype))->block_bytes;
      const size_t at = interleaved ? 8 * block_bytes + 2 : 9 * block_bytes;
      REQUIRE((t->dtype != dtype) == interleaved);  // x8 twins when interleaved
      const uint16_t inf_half = 0x7C00;
      std::memcpy(t->bytes.data() + at, &inf_half, 2);
      const mote_test::AlignedBuffer bytes = mote_test::AlignedBuffer::copy_of(mote::convert::serialize(q));
      mote_model model;
      REQUIRE(mote_model_open(bytes.data.get(), bytes.size, &model, nullptr, 0) == MOTE_OK);
      char message[256] = "";
      CAPTURE(interleaved);
      CHECK(mote_model_check_values(&model, message, sizeof message) == MOTE_ERR_NUMERIC);
      CHECK(std::string(message) == "tensor 'blk.0.attn_q' has a block scale or minimum of inf at index 288");
    }
  }
  char message[64] = "";
  CHECK(mote_model_check_values(nullptr, message, sizeof message) == MOTE_ERR_INVALID_ARGUMENT);
}

TEST_CASE("convert refuses non-finite weights and norms, naming the tensor and the first bad index") {
  if (!mote_cli_test::have_cli()) return;
  // Floats in file order: token_embd (64 x 32), then blk.0.attn_norm (32), blk.1.attn_norm...
  expect_error(convert_args(checkpoint_with("nan.bin", 5, NAN)), 1, "tensor 'token_embd' holds nan at index 5");
  expect_error(convert_args(checkpoint_with("inf.bin", kVocab * kDim + 3, INFINITY)), 1,
               "tensor 'blk.0.attn_norm' holds inf at index 3");
  expect_error(convert_args(checkpoint_with("ninf.bin", kVocab * kDim - 1, -INFINITY), "--dtype q8_0"), 1,
               "tensor 'token_embd' holds -inf at index 2047");
  // Finite values that do not fit the target dtype: f16's largest is 65504; q8_0 keeps
  // max|x| / 127 as an f16 scale.
  const std::string big = checkpoint_with("big.bin", 7, 70000.0f);
  expect_error(convert_args(big, "--dtype f16"), 1,
               "tensor 'token_embd' does not fit f16: the value 70000 at index 7 is beyond f16's largest, 65504");
  CHECK(run_cli(convert_args(big)).code == 0);  // f32 holds it
  const std::string huge = checkpoint_with("huge.bin", 40, 1e7f);
  expect_error(convert_args(huge, "--dtype q8_0"), 1,
               "tensor 'token_embd' does not fit q8_0: the value 10000000 at index 40 needs a block scale beyond");
}

TEST_CASE("quantized sources are checked on their scales and minimums") {
  // A GGUF-style q4_1 matrix of 8 rows x 64: 16 blocks of 20 bytes (d, m, 16 quant bytes).
  std::vector<uint8_t> blocks(16 * 20, 0);
  const uint16_t one = 0x3C00, nan_half = 0x7E00;
  for (size_t b = 0; b < 16; ++b) std::memcpy(&blocks[b * 20], &one, 2);
  const mote::convert::TensorSlot slot{Role::attn_q, 0, 8, 64};
  const auto q4_1 = static_cast<uint32_t>(mote::convert::GgmlType::q4_1);
  for (const bool requantize : {false, true}) {
    std::vector<uint8_t> bad = blocks;
    std::memcpy(&bad[3 * 20 + 2], &nan_half, 2);  // block 3's minimum: elements 96..127
    ModelData m;
    std::string error;
    const std::optional<DType> dtype = requantize ? std::optional<DType>(DType::f16) : std::nullopt;
    CAPTURE(requantize);
    CHECK(!mote::convert::add_tensor(slot, {bad.data(), q4_1}, dtype, mote::convert::BlockLayout::gguf, &m, &error));
    CHECK(error == (requantize ? "tensor 'blk.0.attn_q' holds nan at index 96"
                               : "tensor 'blk.0.attn_q' has a block minimum of nan at index 96"));
    CHECK(mote::convert::add_tensor(slot, {blocks.data(), q4_1}, dtype, mote::convert::BlockLayout::gguf, &m, &error));
  }
}

TEST_CASE("what convert writes always opens: the reader's rules apply before writing") {
  if (!mote_cli_test::have_cli()) return;
  // A NaN score in tokenizer.bin (4-byte max_token_length, then per token: score, length, bytes).
  std::string tok = mote_cli_test::slurp(mote_test::golden_path("tiny_tok64.bin"));
  size_t at = 4;
  for (int i = 0; i < 5; ++i) {
    int32_t length = 0;
    std::memcpy(&length, &tok[at + 4], 4);
    at += 8 + static_cast<size_t>(length);
  }
  const float nan_score = NAN;
  std::memcpy(&tok[at], &nan_score, 4);
  const std::string tok_path = workspace().path("nan_score_tok.bin");
  mote_cli_test::write_text(tok_path, tok);
  const std::string out = workspace().path("kept.mote");
  mote_cli_test::write_text(out, "the previous file");
  expect_error("convert " + quote(mote_test::golden_path("tiny_mha.bin")) + " --tokenizer " + quote(tok_path) + " -o " +
                   quote(out),
               1, "tokenizer '" + tok_path + "' gives token 5 a non-finite score (nan)");
  CHECK(mote_cli_test::slurp(out) == "the previous file");  // a failed convert leaves OUT as it was
  expect_error(convert_args(checkpoint_with("nan2.bin", 0, NAN)) + " -o " + quote(out), 1, "holds nan");
  CHECK(mote_cli_test::slurp(out) == "the previous file");
}

TEST_CASE("q8_0 quantization of a block whose scale is subnormal stays in range (fuzz finding)") {
  // amax / 127 is a subnormal whose reciprocal overflows to inf: each x * (1 / d) was inf (or
  // NaN for 0), undefined to convert to int8. Now: +-127 for the largest, 0 for zeros.
  float block[32] = {};
  block[3] = 1e-39f;
  block[4] = -1e-39f;
  uint8_t out[34];
  mote::convert::quantize_q8_0(block, 1, out);
  CHECK(static_cast<int8_t>(out[2 + 3]) == 127);
  CHECK(static_cast<int8_t>(out[2 + 4]) == -127);
  CHECK(out[2] == 0);
}

TEST_CASE("every quantized dtype row: a non-finite scale field is found by --check at its index; finite ones decode") {
  // tiny_llama.gguf's blk.0.ffn_down is 32 rows of 256 values: whole blocks of every type. Its
  // bytes are replaced by random valid blocks of each dtype in turn (rows driven: a new type is
  // covered here without touching this test), then one fp16 field of row 9's second block by
  // inf or nan (x8 layouts: that row's entry in its group block's field array).
  ModelData base;
  REQUIRE(mote_convert_test::convert_gguf(mote_test::read_file(mote_test::golden_path("tiny_llama.gguf")), &base,
                                          DType::f16) == "");
  size_t down = base.tensors.size();
  for (size_t i = 0; i < base.tensors.size(); ++i)
    if (base.tensors[i].role == Role::ffn_down && base.tensors[i].layer == 0) down = i;
  REQUIRE(down < base.tensors.size());
  const size_t rows = base.tensors[down].rows, cols = base.tensors[down].cols;
  REQUIRE(rows == 32);
  REQUIRE(cols == 256);
  size_t covered = 0;
  for (uint32_t d = 0; d < mote::format::kDTypeCount; ++d) {
    const mote::format::DTypeTraits &row = mote::format::kDTypeTraits[d];
    if (row.scale_fields == 0) continue;  // floats: their values are checked one by one elsewhere
    CAPTURE(row.name);
    const size_t blocks_per_row = cols / row.block_elements, group = row.interleaved_rows;
    std::vector<uint8_t> bytes(rows * blocks_per_row * row.block_bytes);
    std::mt19937 rng(d);
    for (uint8_t &b : bytes) b = static_cast<uint8_t>(rng());
    // Field f of row r's block b: plain at the block's scale_offset, x8 at the group block's start.
    const auto field_at = [&](size_t r, size_t b, size_t f) {
      const size_t group_block = (r / group * blocks_per_row + b) * group * row.block_bytes;
      return group_block + row.scale_offset + 2 * (f * group + r % group);
    };
    const uint16_t small = mote::f32_to_fp16(0.01f);
    for (size_t r = 0; r < rows; ++r)
      for (size_t b = 0; b < blocks_per_row; ++b)
        for (size_t f = 0; f < row.scale_fields; ++f) std::memcpy(&bytes[field_at(r, b, f)], &small, 2);
    ModelData m = base;
    m.tensors[down].dtype = row.dtype;
    m.tensors[down].bytes = bytes;
    CHECK(mote_convert_test::open_and_decode(m) == "");  // every kernel table the CPU has runs it
    const size_t bad_block = blocks_per_row > 1 ? 1 : 0;
    for (size_t f = 0; f < row.scale_fields; ++f) {
      const uint16_t bad = f == 0 ? 0x7C00 : 0x7E00;  // inf d, nan minimum
      std::memcpy(&m.tensors[down].bytes[field_at(9, bad_block, f)], &bad, 2);
      const mote_test::AlignedBuffer file = mote_test::AlignedBuffer::copy_of(mote::convert::serialize(m));
      mote_model model;
      REQUIRE(mote_model_open(file.data.get(), file.size, &model, nullptr, 0) == MOTE_OK);
      char message[256] = "";
      CHECK(mote_model_check_values(&model, message, sizeof message) == MOTE_ERR_NUMERIC);
      const std::string want = std::string("tensor 'blk.0.ffn_down' has a block scale or minimum of ") +
                               (f == 0 ? "inf" : "nan") + " at index " +
                               std::to_string(9 * cols + bad_block * row.block_elements);
      CHECK(std::string(message) == want);
      std::memcpy(&m.tensors[down].bytes[field_at(9, bad_block, f)], &small, 2);
    }
    ++covered;
  }
  CHECK(covered == mote::format::kDTypeCount - 3);  // all but f32, f16, bf16
}

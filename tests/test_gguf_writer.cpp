// `mote convert SRC -o X.gguf` (models/convert/gguf/gguf_writer.*): the tiny models of every importer
// written as GGUF, then (1) read back by the `gguf` PyPI package (tests/gguf_writer_check.py: every
// tensor's bytes are mote's plain blocks, q/k rows of a split-half source permuted there with
// numpy as llama.cpp's converter does, every required key present with its value); (2) imported
// again by mote: the same config, tokenizer and tensors (bit-identical), the same logits; (3) a
// GGUF source's tensors come out byte for byte as the source holds them, and GGUF -> GGUF -> GGUF
// is byte-identical.
#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <random>

#include "cli_support.hpp"
#include "convert_support.hpp"
#include "core/fp16.hpp"
#include "gguf/gguf_writer.hpp"
#include "hf/hf.hpp"
#include "kernels/quant.hpp"
#include "llama2c/llama2c.hpp"
#include "quant/quantize_recipe.hpp"
#include "quant/repack.hpp"

using namespace mote_convert_test;
using mote::format::RopeLayout;

namespace {

Bytes write_gguf(const ModelData &model) {
  Bytes out;
  std::string error;
  REQUIRE_MESSAGE(mote::convert::serialize_gguf(model, &out, &error), error);
  return out;
}

// bytes imported by mote's GGUF importer with the CLI's defaults (types as stored, interleaved).
ModelData import_gguf(const Bytes &bytes) {
  GgufFile file;
  ModelData model;
  std::string error;
  REQUIRE_MESSAGE(mote::convert::parse_gguf(bytes.data(), bytes.size(), &file, &error), error);
  REQUIRE_MESSAGE(mote::convert::gguf_to_model(file, mote::convert::GgufOptions{}, &model, &error), error);
  return model;
}

ModelData load_file_gguf(const std::string &path) {
  ModelData model;
  std::string error;
  REQUIRE_MESSAGE(mote::convert::load_gguf(path, mote::convert::GgufOptions{}, &model, &error), error);
  return model;
}

ModelData load_hf(const std::string &path, DType dtype, const std::string &tokenizer = "") {
  mote::convert::SafetensorsOptions options;
  options.dtype = dtype;
  options.tokenizer_path = tokenizer;
  ModelData model;
  std::string error;
  REQUIRE_MESSAGE(mote::convert::load_hf_checkpoint(path, options, &model, &error), error);
  return model;
}

// The logits of four decoded tokens.
std::vector<float> logits_of(const ModelData &model) {
  const Aligned file(mote::convert::serialize(model));
  mote_model m{};
  char message[256] = "";
  REQUIRE_MESSAGE(mote_model_open(file.data.get(), file.size, &m, message, sizeof message) == MOTE_OK, message);
  auto s = mote_test::open_session(m, mote_session_options_default());
  std::vector<float> all;
  for (const int32_t token : {1, 7, 3, 11}) {
    const float *logits = nullptr;
    REQUIRE(mote_decode(&s->session, token, &logits) == MOTE_OK);
    all.insert(all.end(), logits, logits + model.config.vocab_size);
  }
  return all;
}

const TensorData *find_tensor(const ModelData &model, Role role, uint32_t layer) {
  for (const TensorData &t : model.tensors)
    if (t.role == role && t.layer == layer) return &t;
  return nullptr;
}

bool is_rope_rows(Role role) { return role == Role::attn_q || role == Role::attn_k; }

// llama.cpp's architecture (and key prefix) for a family: the family's own name.
std::string arch_of(const mote::format::ModelConfig &c) {
  static const char *const kArch[] = {"?", "llama", "gpt2", "qwen2", "gemma3", "qwen3", "phi3"};
  return kArch[static_cast<uint32_t>(c.family)];
}

// Only llama's q/k rows are permuted into adjacent RoPE pairs in GGUF; the other families keep halves.
bool permuted_rope_rows(const mote::format::ModelConfig &c) {
  return c.family == mote::format::Family::llama && c.rope_layout == RopeLayout::split_half;
}

// What mote imports back equals what was written: config (but the RoPE pair layout when the
// source's q/k rows were permuted into GGUF's), tokenizer, and every tensor (those permuted rows
// apart) bit for bit.
void check_same_model(const ModelData &source, const ModelData &back) {
  const bool permuted = permuted_rope_rows(source.config);
  mote::format::ModelConfig config = source.config;
  if (permuted) config.rope_layout = RopeLayout::interleaved;
  CHECK(std::memcmp(&config, &back.config, sizeof config) == 0);
  const auto &a = source.tokenizer, &b = back.tokenizer;
  CHECK(a.kind == b.kind);
  CHECK(a.flags == b.flags);
  CHECK(a.chat_template == b.chat_template);
  CHECK(a.bos_id == b.bos_id);
  CHECK(a.eos_id == b.eos_id);
  CHECK(a.unk_id == b.unk_id);
  CHECK(a.pieces == b.pieces);
  CHECK(a.scores == b.scores);
  CHECK(a.types == b.types);
  REQUIRE(a.merges.size() == b.merges.size());
  for (size_t i = 0; i < a.merges.size(); ++i) {
    CHECK(std::memcmp(&a.merges[i], &b.merges[i], sizeof a.merges[i]) == 0);
  }
  REQUIRE(source.tensors.size() == back.tensors.size());
  for (const TensorData &t : source.tensors) {
    const TensorData *u = find_tensor(back, t.role, t.layer);
    INFO("tensor " << gguf_name(t));
    REQUIRE(u != nullptr);
    CHECK(t.dtype == u->dtype);
    CHECK(t.rows == u->rows);
    CHECK(t.cols == u->cols);
    CHECK((t.bytes == u->bytes) != (permuted && is_rope_rows(t.role)));
  }
}

// llama.cpp's file type (LLAMA_FTYPE_*) of the most frequent matrix type, for the types these
// sources hold: f32 0, f16 1, q4_0 2, q4_1 3, q8_0 7.
int expected_file_type(const ModelData &model) {
  std::map<DType, int> count;
  for (const TensorData &t : model.tensors) count[mote::convert::plain_dtype(t.dtype)] += t.n_dims == 2;
  DType most = DType::f32;
  int best = 0;
  for (const auto &[dtype, n] : count) {
    if (n > best) most = dtype, best = n;
  }
  const std::map<DType, int> kFileType = {
      {DType::f32, 0}, {DType::f16, 1}, {DType::q4_0, 2}, {DType::q4_1, 3}, {DType::q8_0, 7}};
  REQUIRE(kFileType.count(most) == 1);
  return kFileType.at(most);
}

// Runs tests/gguf_writer_check.py over gguf with the expectations model implies; skips (saying
// so) where python3 or the gguf package is missing.
void check_with_gguf_package(const std::string &what, const ModelData &model, const Bytes &gguf) {
  const std::string python = mote_test::python_with("gguf, numpy");
  if (python.empty()) return;  // python_with skipped, saying why
  const std::string dir = mote_cli_test::workspace().path(what);
  std::filesystem::create_directories(dir);
  const std::string file = dir + "/model.gguf";
  std::ofstream(file, std::ios::binary).write(reinterpret_cast<const char *>(gguf.data()), gguf.size());
  const mote::format::ModelConfig &c = model.config;
  const bool gpt2 = c.family == mote::format::Family::gpt2;
  const std::string arch = arch_of(c);
  std::ostringstream keys;
  keys << "general.architecture\tstr\t" << arch << "\n";
  keys << arch << ".context_length\tint\t" << c.max_seq_len << "\n";
  keys << arch << ".embedding_length\tint\t" << c.dim << "\n";
  keys << arch << ".block_count\tint\t" << c.n_layers << "\n";
  keys << arch << ".feed_forward_length\tint\t" << c.ffn_dim << "\n";
  keys << arch << ".attention.head_count\tint\t" << c.n_heads << "\n";
  keys << arch << ".attention.head_count_kv\tint\t" << c.n_kv_heads << "\n";
  keys.precision(9);
  if (gpt2) {
    keys << "gpt2.attention.layer_norm_epsilon\tfloat\t" << c.norm_eps << "\n";
  } else {
    keys << arch << ".attention.layer_norm_rms_epsilon\tfloat\t" << c.norm_eps << "\n";
    keys << arch << ".rope.freq_base\tfloat\t" << c.rope_theta << "\n";
    keys << arch << ".rope.dimension_count\tint\t" << c.head_dim << "\n";
    if (c.sliding_window != 0) keys << arch << ".attention.sliding_window\tint\t" << c.sliding_window << "\n";
  }
  const auto &tok = model.tokenizer;
  const bool byte_level = tok.kind == mote::format::TokenizerKind::byte_level_bpe;
  keys << "tokenizer.ggml.model\tstr\t" << (byte_level ? "gpt2" : "llama") << "\n";
  keys << "tokenizer.ggml.tokens\tcount\t" << c.vocab_size << "\n";
  keys << "tokenizer.ggml.token_type\tcount\t" << c.vocab_size << "\n";
  if (byte_level) keys << "tokenizer.ggml.merges\tcount\t" << tok.merges.size() << "\n";
  if (!byte_level) keys << "tokenizer.ggml.scores\tcount\t" << c.vocab_size << "\n";
  if (tok.bos_id >= 0) keys << "tokenizer.ggml.bos_token_id\tint\t" << tok.bos_id << "\n";
  if (tok.eos_id >= 0) keys << "tokenizer.ggml.eos_token_id\tint\t" << tok.eos_id << "\n";
  keys << "tokenizer.ggml.add_bos_token\tbool\t" << ((tok.flags & mote::format::kTokAddBos) ? "true" : "false") << "\n";
  keys << "general.file_type\tint\t" << expected_file_type(model) << "\n";
  const std::string text = keys.str();
  mote_cli_test::write_text(dir + "/keys.txt", text);
  std::ostringstream tensors;
  for (const TensorData &t : model.tensors) {
    const std::string full = mote::convert::gguf_tensor_name(t.role, t.layer, mote::format::block_spec(model.config));
    const DType plain = mote::convert::plain_dtype(t.dtype);
    const uint64_t rows = t.n_dims == 1 ? 1 : t.rows, cols = t.n_dims == 1 ? t.rows : t.cols;
    const Bytes blocks = plain == t.dtype ? t.bytes : mote::convert::deinterleave_rows(t.bytes, plain, rows, cols);
    tensors << full << "\t" << mote::format::traits_of(plain).ggml_type << "\t" << cols
            << (t.n_dims == 2 ? "," + std::to_string(rows) : "") << "\n";
    std::ofstream(dir + "/" + full + ".bin", std::ios::binary)
        .write(reinterpret_cast<const char *>(blocks.data()), blocks.size());
  }
  mote_cli_test::write_text(dir + "/tensors.txt", tensors.str());
  if (permuted_rope_rows(c)) {
    mote_cli_test::write_text(dir + "/rope.txt", std::to_string(c.n_heads) + " " + std::to_string(c.n_kv_heads));
  }
  const std::string script = mote_test::golden_path("../gguf_writer_check.py");
  const std::string command = python + " " + mote_cli_test::quote(script) + " " + mote_cli_test::quote(file) + " " +
                              mote_cli_test::quote(dir) + " > " + mote_cli_test::quote(dir + "/check.txt") + " 2>&1";
  const int status = std::system(command.c_str());
  INFO(what << ": " << mote_cli_test::slurp(dir + "/check.txt"));
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

// All three checks for one converted source; logits bit-identical unless q/k rows were permuted
// (then the attention sums run in another order: within 1e-5).
void check_round_trip(const std::string &what, const ModelData &source) {
  const Bytes gguf = write_gguf(source);
  check_with_gguf_package(what, source, gguf);
  const ModelData back = import_gguf(gguf);
  check_same_model(source, back);
  const std::vector<float> want = logits_of(source), got = logits_of(back);
  REQUIRE(want.size() == got.size());
  if (permuted_rope_rows(source.config)) {
    float worst = 0;
    for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::fabs(want[i] - got[i]));
    CHECK(worst < 1e-5f);
  } else {
    CHECK(std::memcmp(want.data(), got.data(), want.size() * 4) == 0);
  }
  CHECK(write_gguf(back) == gguf);  // GGUF -> GGUF: byte-identical
}

// written (a GGUF mote wrote from the GGUF at path) holds every tensor of path's at 32-byte aligned
// offsets, byte for byte where mote keeps the type as stored.
void check_tensors_as_source(const std::string &path, const Bytes &written) {
  const Bytes original = mote_test::read_file(path);
  GgufFile a, b;
  std::string error;
  REQUIRE(mote::convert::parse_gguf(original.data(), original.size(), &a, &error));
  REQUIRE(mote::convert::parse_gguf(written.data(), written.size(), &b, &error));
  CHECK(b.alignment == 32);
  REQUIRE(a.tensors.size() == b.tensors.size());
  for (const auto &t : a.tensors) {
    INFO("tensor " << t.name);
    REQUIRE(b.tensor_index.count(t.name) == 1);
    const auto &u = b.tensors[b.tensor_index.at(t.name)];
    CHECK(std::memcmp(t.dims, u.dims, sizeof t.dims) == 0);
    CHECK(u.offset % 32 == 0);
    if (t.type != u.type) {  // a type mote does not keep as stored (BF16, ...) becomes f16
      CHECK(u.type == kGgmlF16);
      continue;
    }
    REQUIRE(t.n_bytes == u.n_bytes);
    CHECK(std::memcmp(original.data() + t.offset, written.data() + u.offset, t.n_bytes) == 0);
  }
}

}  // namespace

TEST_CASE("a GGUF source comes back with its own tensor bytes, and through mote unchanged") {
  for (const std::string name : {"tiny_llama.gguf", "tiny_gpt2/prenorm_gelu_tanh.gguf"}) {
    INFO(name);
    const std::string path = mote_test::golden_path(name);
    const ModelData source = load_file_gguf(path);  // quantized matrices interleaved (x8 types)
    check_round_trip(name.substr(0, name.find('.')), source);
    check_tensors_as_source(path, write_gguf(source));
  }
}

TEST_CASE("q3_kx8 and q2_kx8 matrices come back as GGUF's Q3_K and Q2_K") {
  // The Q2_K recipe gives tiny_llama's 256-value ffn_down rows q3_k (stored as q3_kx8); the same
  // rows then hold random q2_k blocks (finite d, dmin), interleaved as q2_kx8.
  const mote::convert::DTypeChoice *choice = mote::convert::find_dtype_choice("q2_k");
  REQUIRE(choice != nullptr);
  mote::convert::GgufOptions options;
  options.dtype = choice->base;
  options.mix = choice->mix;
  ModelData source;
  std::string error;
  REQUIRE_MESSAGE(mote::convert::load_gguf(mote_test::golden_path("tiny_llama.gguf"), options, &source, &error), error);
  size_t q3 = 0;
  for (const TensorData &t : source.tensors) q3 += t.dtype == DType::q3_kx8;
  CHECK(q3 > 0);
  check_round_trip("tiny_llama_q3_kx8", source);

  std::mt19937 rng(23);
  size_t q2 = 0;
  for (TensorData &t : source.tensors) {
    if (t.dtype != DType::q3_kx8) continue;
    Bytes blocks(t.rows * (t.cols / 256) * sizeof(mote::kernels::BlockQ2_K));
    for (uint8_t &byte : blocks) byte = static_cast<uint8_t>(rng());
    for (size_t b = 0; b < blocks.size(); b += sizeof(mote::kernels::BlockQ2_K)) {
      const uint16_t d = mote::f32_to_fp16(0.002f + 0.001f * static_cast<float>(rng() % 8));
      const uint16_t dmin = mote::f32_to_fp16(0.001f * static_cast<float>(rng() % 8));
      std::memcpy(&blocks[b + 80], &d, 2);  // q2_k keeps d, dmin after its scales and quants
      std::memcpy(&blocks[b + 82], &dmin, 2);
    }
    t.dtype = DType::q2_kx8;
    t.bytes = mote::convert::interleave_rows(blocks, DType::q2_k, t.rows, t.cols);
    ++q2;
  }
  CHECK(q2 == q3);
  check_round_trip("tiny_llama_q2_kx8", source);
}

TEST_CASE("every family's GGUF comes back with its architecture, keys and tensor bytes") {
  // The tiny random models of tests/golden/tiny_families (llama.cpp's names and keys for each).
  for (const std::string family : {"qwen2", "qwen3", "gemma3", "phi3", "llama3"}) {
    INFO(family);
    const std::string path = mote_test::golden_path("tiny_families/" + family + "/model.gguf");
    const ModelData source = load_file_gguf(path);
    check_round_trip(family, source);
    check_tensors_as_source(path, write_gguf(source));
  }
}

TEST_CASE("SmolLM2-135M-Instruct's GGUF comes back tensor for tensor") {
  const std::string path = mote_test::smollm2_gguf();
  if (path.empty()) return;
  const Bytes written = write_gguf(load_file_gguf(path));  // 210 q4_1x8 matrices de-interleaved
  check_tensors_as_source(path, written);
  CHECK(write_gguf(import_gguf(written)) == written);
}

TEST_CASE("a Hugging Face source's split-half q/k rows are permuted into GGUF's RoPE order") {
  const std::string path = mote_test::golden_path("tiny_hf");
  for (const DType dtype : {DType::f16, DType::q4_1}) {
    INFO(mote::format::traits_of(dtype).name);
    const ModelData source = load_hf(path, dtype);
    REQUIRE(source.config.rope_layout == RopeLayout::split_half);
    check_round_trip(std::string("tiny_hf_") + mote::format::traits_of(dtype).name, source);
  }
}

TEST_CASE("a llama2.c checkpoint (aidreams260K) as GGUF") {
  const std::string checkpoint = mote_test::shared_model("aidreams260K.bin");
  const std::string tokenizer = mote_test::shared_model("aidreams_tok512.bin");
  if (checkpoint.empty() || tokenizer.empty()) return;
  for (const DType dtype : {DType::f32, DType::q8_0}) {
    INFO(mote::format::traits_of(dtype).name);
    mote::convert::Llama2cOptions options;
    options.dtype = dtype;
    ModelData source;
    std::string error;
    REQUIRE_MESSAGE(mote::convert::load_llama2c(checkpoint, tokenizer, options, &source, &error), error);
    check_round_trip(std::string("aidreams_") + mote::format::traits_of(dtype).name, source);
  }
}

TEST_CASE("blocks llama.cpp would run as another model are refused in one line") {
  const ModelData model = load_hf(mote_test::golden_path("tiny_gpt2/prenorm_gelu_erf"), DType::f16,
                                  mote_test::golden_path("tiny_gpt2/tokenizer.json"));
  Bytes out;
  std::string error;
  CHECK_FALSE(mote::convert::serialize_gguf(model, &out, &error));
  CHECK(error.find("write a .mote file instead") != std::string::npos);
  CHECK(error.find('\n') == std::string::npos);
}

TEST_CASE("an embedder's GGUF output is refused in one line that says why") {
  const ModelData model = load_file_gguf(mote_test::golden_path("tiny_embedders/bert/model.gguf"));
  Bytes out;
  std::string error;
  CHECK_FALSE(mote::convert::serialize_gguf(model, &out, &error));
  CHECK(error == "GGUF output is written for decoder models only; write this embedder as a .mote file");
}

TEST_CASE("mote convert -o X.gguf writes GGUF; --help says so; a refusal leaves no file") {
  using mote_cli_test::quote;
  using mote_cli_test::run_cli;
  if (!mote_cli_test::have_cli()) return;
  const std::string out = mote_cli_test::workspace().path("cli.gguf");
  auto r = run_cli("convert " + quote(mote_test::golden_path("tiny_llama.gguf")) + " -o " + quote(out));
  INFO(r.err);
  CHECK(r.code == 0);
  const Bytes written = mote_test::read_file(out);
  REQUIRE(written.size() > 4);
  CHECK(std::memcmp(written.data(), "GGUF", 4) == 0);
  CHECK(written == write_gguf(load_file_gguf(mote_test::golden_path("tiny_llama.gguf"))));
  CHECK(run_cli("convert --help").out.find(".gguf") != std::string::npos);
  const std::string refused = mote_cli_test::workspace().path("erf.gguf");
  mote_cli_test::expect_error("convert " + quote(mote_test::golden_path("tiny_gpt2/prenorm_gelu_erf")) +
                                  " --tokenizer " + quote(mote_test::golden_path("tiny_gpt2/tokenizer.json")) + " -o " +
                                  quote(refused),
                              1, "write a .mote file instead");
  CHECK_FALSE(std::filesystem::exists(refused));
}

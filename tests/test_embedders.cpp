// Issue 23's embedders against independent oracles (tests/golden/embedders, made by
// tests/oracles/*.py; its README says how):
//  - all-MiniLM-L6-v2 (a Hugging Face BERT folder) against transformers' BertModel in float64 with
//    sentence-transformers' mean pooling and normalization, on 266 sentences: mote's ids equal the
//    Hugging Face tokenizer's, and its embeddings (f32) are within cosine 0.9999 of the oracle's;
//    f16 conversions within 0.9999, q8_0 within 0.997 (see kCosineQ8).
//  - nomic-embed-text-v1.5 (an F16 GGUF, nomic-bert) against a float64 numpy reference written from
//    the published model definition, on 16 prefixed texts: the same bounds.
//  - `mote embed`'s formats and --query ranking on MiniLM; on the tiny models, -f's texts past one
//    context and -p "" each embed as they do alone, and an overflowing embedding is one error line.
// The real models come from models/fetch_embedders.sh: these cases are named "real", have their
// own ctest entry (test_embedders_real, skipped, saying so, when a file was never fetched; failed
// instead with MOTE_REQUIRE_EMBEDDERS=1). The other cases check the importers' refusals.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "cli_support.hpp"
#include "hf/hf_family_configs.hpp"
#include "llama2c/llama2c.hpp"
#include "mote_writer.hpp"
#include "test_support.hpp"

using mote_cli_test::quote;
using mote_cli_test::run_cli;
using mote_test::AlignedBuffer;

namespace {

// f32 and f16 weights: the issue's 0.9999. q8_0: 0.997, under the issue's 0.999, which the type
// itself rules out: llama.cpp's own Q8_0 of the nomic GGUF (llama-quantize, llama-embedding) is at
// worst 0.99832 from the oracle on these texts, mote's 0.99836 (docs/USING.md, "Embeddings").
constexpr double kCosineF32 = 0.9999, kCosineF16 = 0.9999, kCosineQ8 = 0.997;

// IEEE half to float, written out (the oracle's file format; independent of mote's converter).
float half_to_float(uint16_t h) {
  const int sign = (h >> 15) & 1, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  double value = exponent == 0 ? std::ldexp(mantissa, -24) : std::ldexp(1024 + mantissa, exponent - 25);
  if (exponent == 31) value = mantissa == 0 ? INFINITY : NAN;
  return static_cast<float>(sign ? -value : value);
}

std::vector<float> read_halves(const std::string &path) {
  const std::vector<unsigned char> bytes = mote_test::read_file(path);
  std::vector<float> values(bytes.size() / 2);
  for (size_t i = 0; i < values.size(); ++i) values[i] = half_to_float(uint16_t(bytes[2 * i] | bytes[2 * i + 1] << 8));
  return values;
}

// Every line, as `mote embed -f` reads them (mote_test::read_lines drops '#' lines: one sentence
// is "#include <stdio.h>").
std::vector<std::string> read_all_lines(const std::string &path) {
  std::ifstream f(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(f, line);) lines.push_back(line);
  return lines;
}

std::vector<std::vector<int32_t>> read_id_lines(const std::string &path) {
  std::vector<std::vector<int32_t>> lines;
  for (const std::string &line : read_all_lines(path)) {
    std::istringstream in(line);
    lines.emplace_back();
    for (int32_t id; in >> id;) lines.back().push_back(id);
  }
  return lines;
}

double cosine(const float *a, const float *b, size_t n) {
  double dot = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < n; ++i) {
    dot += double(a[i]) * b[i];
    aa += double(a[i]) * a[i];
    bb += double(b[i]) * b[i];
  }
  return dot / std::sqrt(aa * bb);
}

// A cached model of models/fetch_embedders.sh, or "" (skipped, saying so) when never fetched.
std::string cached_embedder(const std::string &name) {
  if (const char *skip = std::getenv("MOTE_SKIP_REAL_MODELS")) {  // set by the emulated test presets
    MOTE_SKIP(name << ": " << std::string(skip));
    return "";
  }
  const char *cache = std::getenv("XDG_CACHE_HOME");
  const char *home = std::getenv("HOME");
  const std::string path =
      (cache != nullptr && cache[0] != '\0' ? std::string(cache) : std::string(home ? home : ".") + "/.cache") +
      "/mote/" + name;
  if (mote_test::file_exists(path)) return path;
  const char *require = std::getenv("MOTE_REQUIRE_EMBEDDERS");
  if (require != nullptr && std::string(require) == "1") {
    FAIL("required model missing: " << path << " (models/fetch_embedders.sh fetches it)");
  }
  MOTE_SKIP(path << " is absent: run models/fetch_embedders.sh to fetch it");
  return "";
}

struct OpenedModel {
  AlignedBuffer bytes{0};
  mote_model model{};
  std::string path;  // the .mote file, kept for the CLI cases
};

std::unique_ptr<OpenedModel> convert_with_cli(const std::string &source, const std::string &name,
                                              const std::string &args) {
  auto m = std::make_unique<OpenedModel>();
  m->path = mote_cli_test::workspace().path(name + ".mote");
  const mote_cli_test::Result r = run_cli("convert " + quote(source) + " -o " + quote(m->path) + " " + args);
  if (r.code != 0) {
    FAIL_CHECK("mote convert " << source << " " << args << " failed (" << r.code << "): " << r.err);
    return nullptr;
  }
  m->bytes = AlignedBuffer::copy_of(mote_test::read_file(m->path));
  char message[256] = "";
  if (mote_model_open(m->bytes.data.get(), m->bytes.size, &m->model, message, sizeof message) != MOTE_OK) {
    FAIL_CHECK("mote_model_open(" << name << "): " << message);
    return nullptr;
  }
  return m;
}

// Each id line embedded with the model's own pooling and normalization (or normalize forced off).
std::vector<float> embed_all(const mote_model &model, const std::vector<std::vector<int32_t>> &ids,
                             bool model_normalize = true) {
  mote_model_info info;
  mote_model_info_get(&model, &info);
  size_t longest = 1;
  for (const auto &line : ids) longest = std::max(longest, line.size());
  mote_session_options options = mote_test::f32_kv_options();  // the references' precision
  options.batch_size = options.context_length = static_cast<uint32_t>(longest);
  options.n_threads = 2;
  auto s = mote_test::open_session(model, options);
  std::vector<float> out(ids.size() * info.dim);
  for (size_t i = 0; i < ids.size(); ++i) {
    const int normalize = model_normalize ? int(info.normalize_embeddings) : 0;
    REQUIRE_MESSAGE(mote_embed(&s->session, ids[i].data(), ids[i].size(), mote_pool(info.pooling), normalize,
                               &out[i * info.dim], info.dim) == MOTE_OK,
                    mote_session_error(&s->session));
  }
  return out;
}

// The worst and mean cosine of mote's embeddings against the oracle's, row by row.
std::pair<double, double> compare(const std::vector<float> &mote, const std::vector<float> &oracle, size_t dim) {
  REQUIRE(mote.size() == oracle.size());
  double worst = 1, sum = 0;
  const size_t rows = oracle.size() / dim;
  for (size_t i = 0; i < rows; ++i) {
    const double c = cosine(&mote[i * dim], &oracle[i * dim], dim);
    worst = std::min(worst, c);
    sum += c;
  }
  return {worst, sum / double(rows)};
}

// mote_tokenize with [CLS] ... [SEP] (MOTE_TOKENIZE_ADD_BOS), truncated as the oracle was.
std::vector<int32_t> tokenize(const mote_model &model, const std::string &text, size_t limit) {
  std::vector<int32_t> ids(text.size() + 8);
  size_t n = 0;
  REQUIRE(mote_tokenize(&model, text.data(), text.size(), MOTE_TOKENIZE_ADD_BOS, ids.data(), ids.size(), &n) ==
          MOTE_OK);
  ids.resize(n);
  if (ids.size() > limit) {
    const int32_t last = ids.back();
    ids.resize(limit);
    ids.back() = last;
  }
  return ids;
}

void check_tokens(const mote_model &model, const std::vector<std::string> &texts,
                  const std::vector<std::vector<int32_t>> &expected, size_t limit) {
  REQUIRE(texts.size() == expected.size());
  size_t equal = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::vector<int32_t> got = tokenize(model, texts[i], limit);
    equal += got == expected[i];
    if (got != expected[i]) MESSAGE("text " << i + 1 << " tokenizes differently: '" << texts[i] << "'");
  }
  CHECK(equal == texts.size());
}

void check_variants(const std::string &source, const std::string &name, const std::vector<std::vector<int32_t>> &ids,
                    const std::vector<float> &oracle, size_t dim) {
  for (const char *dtype : {"f16", "q8_0"}) {
    auto m = convert_with_cli(source, name + "_" + dtype, std::string("--dtype ") + dtype);
    if (!m) continue;
    const auto [worst, mean] = compare(embed_all(m->model, ids), oracle, dim);
    MESSAGE(name << " " << std::string(dtype) << ": cosine to the oracle worst " << worst << ", mean " << mean);
    CHECK(worst >= (std::string(dtype) == "f16" ? kCosineF16 : kCosineQ8));
  }
}

}  // namespace

TEST_CASE("embedders: BERT config.json and sentence-transformers pooling, malformed ones refused") {
  using mote::convert::JsonValue;
  const mote::convert::FamilyRow *row = mote::convert::family_by_hf_type("bert");
  REQUIRE(row != nullptr);
  auto config = [&](const std::string &text, std::string *error) {
    JsonValue json;
    REQUIRE(mote::convert::parse_json(text.data(), text.size(), &json, error));
    mote::format::ModelConfig c{};
    return mote::convert::hf_bert_config(json, *row, &c, error) ? c.dim : 0u;
  };
  const std::string good =
      R"({"hidden_size": 64, "num_hidden_layers": 2, "intermediate_size": 128, "vocab_size": 100,
          "max_position_embeddings": 32)";
  std::string error;
  CHECK(config(good + R"(, "num_attention_heads": 4})", &error) == 64);
  const struct {
    const char *extra, *message;
  } bad[] = {
      {R"(, "num_attention_heads": 4, "hidden_act": "relu"})", "hidden_act 'relu' is not supported"},
      {R"(, "num_attention_heads": 4, "position_embedding_type": "relative_key"})",
       "position_embedding_type 'relative_key'"},
      {R"(, "num_attention_heads": 4, "layer_norm_eps": 0})", "layer_norm_eps 0 must be in (0, 1)"},
      {R"(, "num_attention_heads": 5})", "not a multiple of num_attention_heads 5"},
  };
  for (const auto &b : bad) {
    error.clear();
    CHECK(config(good + b.extra, &error) == 0);
    CHECK_MESSAGE(error.find(b.message) != std::string::npos, error);
  }

  auto pooling = [](const char *modules, const char *pool, mote::format::ModelConfig *c, std::string *error) {
    JsonValue m, p;
    if (modules) REQUIRE(mote::convert::parse_json(modules, std::strlen(modules), &m, error));
    if (pool) REQUIRE(mote::convert::parse_json(pool, std::strlen(pool), &p, error));
    return mote::convert::sentence_transformers_pooling(modules ? &m : nullptr, pool ? &p : nullptr, c, error);
  };
  mote::format::ModelConfig c{};
  CHECK(pooling(nullptr, nullptr, &c, &error));
  CHECK(c.pooling == mote::format::Pooling::mean);
  CHECK((c.flags & mote::format::kFlagNormalizeEmbeddings) == 0);
  CHECK(pooling(R"([{"type": "sentence_transformers.models.Normalize"}])", R"({"pooling_mode_cls_token": true})", &c,
                &error));
  CHECK(c.pooling == mote::format::Pooling::cls);
  CHECK((c.flags & mote::format::kFlagNormalizeEmbeddings) != 0);
  CHECK_FALSE(pooling(nullptr, R"({"pooling_mode_max_tokens": true})", &c, &error));
  CHECK(error.find("pooling_mode_max_tokens") != std::string::npos);
  CHECK_FALSE(pooling(nullptr, R"({"pooling_mode_cls_token": true, "pooling_mode_mean_tokens": true})", &c, &error));
  CHECK(error.find("more than one pooling mode") != std::string::npos);
}

TEST_CASE("embedders real: all-MiniLM-L6-v2 equals transformers' BertModel (ids, embeddings, formats)") {
  const std::string dir = cached_embedder("all-MiniLM-L6-v2/model.safetensors");
  if (dir.empty() || !mote_cli_test::have_cli()) return;
  const std::string folder = dir.substr(0, dir.rfind('/'));
  const std::vector<std::string> sentences = read_all_lines(mote_test::golden_path("embedders/sentences.txt"));
  const auto ids = read_id_lines(mote_test::golden_path("embedders/minilm_ids.txt"));
  const std::vector<float> oracle = read_halves(mote_test::golden_path("embedders/minilm_embeddings.f16"));
  constexpr size_t kDim = 384;
  REQUIRE(oracle.size() == sentences.size() * kDim);

  auto m = convert_with_cli(folder, "minilm_f32", "--dtype f32");
  REQUIRE(m != nullptr);
  mote_model_info info;
  mote_model_info_get(&m->model, &info);
  CHECK(std::string(info.family) == "bert");
  CHECK(info.pooling == MOTE_POOL_MEAN);
  CHECK(info.normalize_embeddings == 1);
  CHECK((info.block_flags & MOTE_BLOCK_ENCODER) != 0);
  check_tokens(m->model, sentences, ids, 256);

  const auto [worst, mean] = compare(embed_all(m->model, ids), oracle, kDim);
  MESSAGE("MiniLM f32: cosine to the oracle worst " << worst << ", mean " << mean);
  CHECK(worst >= kCosineF32);
  // Before normalization too: the mean-pooled vectors themselves.
  const std::vector<float> raw =
      mote_test::read_floats(mote_test::golden_path("embedders/minilm_unnormalized_first4.f32"));
  const std::vector<std::vector<int32_t>> first4(ids.begin(), ids.begin() + 4);
  const std::vector<float> mote_raw = embed_all(m->model, first4, false);
  REQUIRE(raw.size() == mote_raw.size());
  double worst_abs = 0;
  for (size_t i = 0; i < raw.size(); ++i) worst_abs = std::max(worst_abs, double(std::fabs(raw[i] - mote_raw[i])));
  CHECK(worst_abs <= 1e-4);

  // The encoder has no classifier: decoding is refused with one line.
  {
    auto s = mote_test::open_session(m->model, mote_session_options_default());
    const float *logits = nullptr;
    CHECK(mote_decode(&s->session, ids[0][0], &logits) == MOTE_ERR_UNSUPPORTED);
    CHECK(std::string(mote_session_error(&s->session)).find("embedder") != std::string::npos);
  }

  // `mote embed -f` end to end (the CLI tokenizes and truncates): raw f32, CSV and JSON lines agree.
  const std::string sentences_path = mote_test::golden_path("embedders/sentences.txt");
  mote_cli_test::Result r = run_cli("embed -m " + quote(m->path) + " -f " + quote(sentences_path) + " -o f32");
  REQUIRE_MESSAGE(r.code == 0, r.err);
  REQUIRE(r.out.size() == oracle.size() * sizeof(float));
  std::vector<float> cli(oracle.size());
  std::memcpy(cli.data(), r.out.data(), r.out.size());
  CHECK(compare(cli, oracle, kDim).first >= kCosineF32);
  r = run_cli("embed -m " + quote(m->path) + " -p " + quote(sentences[0]) + " -o csv");
  REQUIRE(r.code == 0);
  CHECK(std::count(r.out.begin(), r.out.end(), ',') == long(kDim - 1));
  r = run_cli("embed -m " + quote(m->path) + " -f " + quote(sentences_path) + " --query " +
              quote("Where is the cat lying?") + " --top 2");
  REQUIRE(r.code == 0);
  CHECK(mote_cli_test::count_newlines(r.out) == 2);
  CHECK(r.out.find(sentences[0]) != std::string::npos);  // "The cat sits on the mat."

  check_variants(folder, "minilm", ids, oracle, kDim);
}

TEST_CASE("embedders real: nomic-embed-text-v1.5 equals the float64 numpy reference") {
  const std::string gguf = cached_embedder("nomic-embed-text-v1.5.f16.gguf");
  if (gguf.empty() || !mote_cli_test::have_cli()) return;
  const std::vector<std::string> inputs = read_all_lines(mote_test::golden_path("embedders/nomic_inputs.txt"));
  const auto ids = read_id_lines(mote_test::golden_path("embedders/nomic_ids.txt"));
  const std::vector<float> oracle = mote_test::read_floats(mote_test::golden_path("embedders/nomic_embeddings.f32"));
  constexpr size_t kDim = 768;
  REQUIRE(oracle.size() == inputs.size() * kDim);

  auto m = convert_with_cli(gguf, "nomic_stored", "");  // the GGUF's f16 and f32 tensors as stored
  REQUIRE(m != nullptr);
  mote_model_info info;
  mote_model_info_get(&m->model, &info);
  CHECK(std::string(info.family) == "nomic-bert");
  CHECK(info.pooling == MOTE_POOL_MEAN);
  check_tokens(m->model, inputs, ids, 2048);
  const auto [worst, mean] = compare(embed_all(m->model, ids), oracle, kDim);
  MESSAGE("nomic as stored (f16): cosine to the oracle worst " << worst << ", mean " << mean);
  CHECK(worst >= kCosineF32);
  check_variants(gguf, "nomic", ids, oracle, kDim);
}

// ---- tiny random-weight embedders against the float64 oracle (no downloads) ------------------
// tests/golden/tiny_embedders (tests/golden/gen_tiny_embedders.py; its README says what each file
// is): a bert as a sentence-transformers folder and as a GGUF, a nomic-bert GGUF, each with the
// oracle's mean and [CLS] pooled final states (unnormalized) of four id sequences (1, 5, 17, 40
// tokens). The generator shows each feature (token types, embedding norm, post-norm order, erf
// GELU, learned positions, NeoX RoPE) moves the oracle's vectors by at least 70 times kTinyBound.

namespace {

constexpr double kTinyBound = 1e-4;  // of each oracle vector's max |x|: f32 accumulation over dim 32, ffn 48
constexpr size_t kTinyDim = 32;

// Per text: each mote_embed alone, then all of them in one mote_embed_batch call.
std::pair<std::vector<float>, std::vector<float>> embed_tiny(const mote_model &model,
                                                             const std::vector<std::vector<int32_t>> &ids,
                                                             mote_pool pool) {
  std::vector<int32_t> all;
  std::vector<uint32_t> lengths;
  for (const auto &line : ids) {
    all.insert(all.end(), line.begin(), line.end());
    lengths.push_back(static_cast<uint32_t>(line.size()));
  }
  mote_session_options options = mote_test::f32_kv_options();  // the oracle's precision
  options.batch_size = options.context_length = static_cast<uint32_t>(all.size());
  options.n_threads = 2;
  auto s = mote_test::open_session(model, options);
  std::vector<float> each(ids.size() * kTinyDim), batch(ids.size() * kTinyDim);
  for (size_t i = 0; i < ids.size(); ++i) {
    REQUIRE_MESSAGE(
        mote_embed(&s->session, ids[i].data(), ids[i].size(), pool, 0, &each[i * kTinyDim], kTinyDim) == MOTE_OK,
        mote_session_error(&s->session));
  }
  REQUIRE_MESSAGE(mote_embed_batch(&s->session, all.data(), lengths.data(), lengths.size(), pool, 0, batch.data(),
                                   batch.size()) == MOTE_OK,
                  mote_session_error(&s->session));
  return {each, batch};
}

// The worst over rows of max |got - want| / max |want|.
double worst_relative(const std::vector<float> &got, const std::vector<float> &want) {
  REQUIRE(got.size() == want.size());
  double worst = 0;
  for (size_t row = 0; row < want.size() / kTinyDim; ++row) {
    double diff = 0, scale = 0;
    for (size_t i = row * kTinyDim; i < (row + 1) * kTinyDim; ++i) {
      diff = std::max(diff, std::fabs(double(got[i]) - want[i]));
      scale = std::max(scale, std::fabs(double(want[i])));
    }
    worst = std::max(worst, diff / scale);
  }
  return worst;
}

// Converts source (f32), checks it is an encoder, compares both poolings with the oracle; returns
// the mean-pooled then the [CLS] vectors.
std::vector<float> check_tiny(const std::string &source, const std::string &name, const std::string &dir,
                              const char *family) {
  const auto ids = read_id_lines(mote_test::golden_path("tiny_embedders/" + dir + "/ids.txt"));
  REQUIRE(ids.size() == 4);
  auto m = convert_with_cli(mote_test::golden_path(source), name, "--dtype f32");
  REQUIRE(m != nullptr);
  mote_model_info info;
  mote_model_info_get(&m->model, &info);
  CHECK(std::string(info.family) == family);
  CHECK(info.dim == kTinyDim);
  CHECK(info.pooling == MOTE_POOL_MEAN);
  CHECK((info.block_flags & MOTE_BLOCK_ENCODER) != 0);
  const mote_cli_test::Result r = run_cli("inspect " + quote(m->path));
  CHECK(r.code == 0);
  CHECK_MESSAGE(r.out.find("encoder") != std::string::npos, r.out);
  std::vector<float> vectors;
  for (const auto &[pool, file] :
       {std::pair<mote_pool, const char *>{MOTE_POOL_MEAN, "mean"}, {MOTE_POOL_CLS, "cls"}}) {
    const std::vector<float> oracle =
        mote_test::read_floats(mote_test::golden_path("tiny_embedders/" + dir + "/" + file + ".f32"));
    REQUIRE(oracle.size() == ids.size() * kTinyDim);
    const auto [each, batch] = embed_tiny(m->model, ids, pool);
    const double worst = worst_relative(each, oracle);
    MESSAGE(name << " " << std::string(file) << " pooling: worst |mote - oracle| / max|oracle| " << worst);
    CHECK(worst <= kTinyBound);
    CHECK(each == batch);  // a text's vector does not depend on the texts beside it (DESIGN.md)
    vectors.insert(vectors.end(), each.begin(), each.end());
  }
  return vectors;
}

}  // namespace

TEST_CASE("embedders: tiny bert (folder and GGUF) and nomic-bert equal the float64 oracle, alone and batched") {
  if (!mote_cli_test::have_cli()) return;
  const std::vector<float> hf = check_tiny("tiny_embedders/bert/hf", "tiny_bert_hf", "bert", "bert");
  const std::vector<float> gguf = check_tiny("tiny_embedders/bert/model.gguf", "tiny_bert_gguf", "bert", "bert");
  CHECK(worst_relative(gguf, hf) <= 1e-5);  // the same weights through both importers
  check_tiny("tiny_embedders/nomic_bert/model.gguf", "tiny_nomic_bert", "nomic_bert", "nomic-bert");
}

namespace {

// A copy of the tiny bert folder in the workspace, with edit applied to its files.
std::string tiny_bert_folder(const std::string &name, const std::function<void(const std::string &dir)> &edit) {
  namespace fs = std::filesystem;
  const std::string dir = mote_cli_test::workspace().path(name);
  fs::remove_all(dir);
  fs::copy(mote_test::golden_path("tiny_embedders/bert/hf"), dir, fs::copy_options::recursive);
  if (edit != nullptr) edit(dir);
  return dir;
}

void replace_in(const std::string &path, const std::string &from, const std::string &to) {
  std::string text = mote_cli_test::slurp(path);
  const size_t at = text.find(from);
  REQUIRE_MESSAGE(at != std::string::npos, path << " has no " << from);
  text.replace(at, from.size(), to);
  std::ofstream(path, std::ios::binary) << text;
}

}  // namespace

TEST_CASE("embedders: every tiny conversion tokenizes as Hugging Face; the folder's refusals through mote convert") {
  if (!mote_cli_test::have_cli()) return;
  const std::vector<std::string> texts = read_all_lines(mote_test::golden_path("tiny_embedders/texts.txt"));
  const auto expected = read_id_lines(mote_test::golden_path("tiny_embedders/text_ids.txt"));
  const std::string vocab_only =  // BertTokenizer's files alone: vocab.txt and tokenizer_config.json
      tiny_bert_folder("tiny_bert_vocab_txt",
                       [](const std::string &dir) { std::filesystem::remove(dir + "/tokenizer.json"); });
  for (const std::string &source : {mote_test::golden_path("tiny_embedders/bert/hf"), vocab_only,
                                    mote_test::golden_path("tiny_embedders/bert/model.gguf"),
                                    mote_test::golden_path("tiny_embedders/nomic_bert/model.gguf")}) {
    INFO(source);
    auto m = convert_with_cli(source, "tiny_tokens", "--dtype f32");
    REQUIRE(m != nullptr);
    check_tokens(m->model, texts, expected, 64);
    mote_model_info info;
    mote_model_info_get(&m->model, &info);
    CHECK(info.normalize_embeddings == 1);  // modules.json's Normalize; llama.cpp's default for a GGUF
  }

  // sentence-transformers' pooling files decide the pooling and normalization.
  auto cls = convert_with_cli(
      tiny_bert_folder("tiny_bert_cls",
                       [](const std::string &dir) {
                         replace_in(dir + "/1_Pooling/config.json", "\"pooling_mode_cls_token\": false",
                                    "\"pooling_mode_cls_token\": true");
                         replace_in(dir + "/1_Pooling/config.json", "\"pooling_mode_mean_tokens\": true",
                                    "\"pooling_mode_mean_tokens\": false");
                         replace_in(dir + "/modules.json", "models.Normalize", "models.Dense");
                       }),
      "tiny_bert_cls", "--dtype f32");
  REQUIRE(cls != nullptr);
  mote_model_info info;
  mote_model_info_get(&cls->model, &info);
  CHECK(info.pooling == MOTE_POOL_CLS);
  CHECK(info.normalize_embeddings == 0);

  const struct {
    const char *name, *file, *from, *to, *message;
  } bad[] = {
      {"relu", "config.json", "\"hidden_act\": \"gelu\"", "\"hidden_act\": \"relu\"",
       "hidden_act 'relu' is not supported"},
      {"max_pool", "1_Pooling/config.json", "\"pooling_mode_max_tokens\": false", "\"pooling_mode_max_tokens\": true",
       "pooling_mode_max_tokens"},
      {"rotary", "config.json", "\"position_embedding_type\": \"absolute\"",
       "\"position_embedding_type\": \"relative_key_query\"", "position_embedding_type 'relative_key_query'"},
      {"few_positions", "config.json", "\"max_position_embeddings\": 64", "\"max_position_embeddings\": 32",
       "embeddings.position_embeddings.weight"},
      {"wide_vocab", "config.json", "\"vocab_size\": 108", "\"vocab_size\": 109", "word_embeddings"},
  };
  for (const auto &b : bad) {
    const std::string dir = tiny_bert_folder(std::string("tiny_bert_") + b.name,
                                             [&](const std::string &d) { replace_in(d + "/" + b.file, b.from, b.to); });
    const mote_cli_test::Result r = run_cli("convert " + quote(dir) + " -o " + quote(dir + ".mote"));
    INFO(b.name << ": " << r.err);
    CHECK(r.code != 0);
    CHECK(r.err.find(b.message) != std::string::npos);
    CHECK(mote_cli_test::count_newlines(r.err) == 1);
  }
}

namespace {

// The floats `mote embed -o lines` printed, in order.
std::vector<float> printed_floats(const std::string &out) {
  std::istringstream in(out);
  std::vector<float> values;
  for (float v; in >> v;) values.push_back(v);
  return values;
}

}  // namespace

TEST_CASE("embed -f: every text that fits embeds, whatever the texts hold together; an empty text is a text") {
  if (!mote_cli_test::have_cli()) return;
  auto bert = convert_with_cli(mote_test::golden_path("tiny_embedders/bert/model.gguf"), "tiny_bert_lines", "");
  auto phi3 = convert_with_cli(mote_test::golden_path("tiny_families/phi3/model.gguf"), "tiny_phi3_lines", "");
  REQUIRE(bert != nullptr);
  REQUIRE(phi3 != nullptr);
  // The tiny llama's context is 32 tokens, the tiny bert's 64, the tiny Phi-3's 128 (windows of
  // 12: one text per step): twelve lines of a few words each hold more than any of them, each
  // line far less. An empty line (and -p "") is a text: [BOS], or [CLS] [SEP]; the Phi-3 adds no
  // BOS, so there an empty text is refused, saying so.
  // No structured binding: doctest's capturing macros below cannot name one in C++17.
  for (const auto &model_case :
       {std::pair{mote_cli_test::tiny_model(), true}, {bert->path, true}, {phi3->path, false}}) {
    const std::string model = model_case.first;
    const bool with_empty = model_case.second;
    INFO(model);
    std::vector<std::string> lines;
    std::string file_text;
    for (int i = 0; i < 12; ++i) {
      lines.push_back(i == 5 && with_empty ? "" : std::string("the quiet river moves") + (i % 2 ? " on" : ""));
      file_text += lines.back() + "\n";
    }
    const std::string file = mote_cli_test::workspace().path("twelve_lines.txt");
    mote_cli_test::write_text(file, file_text);
    const mote_cli_test::Result all = run_cli("embed -m " + quote(model) + " -f " + quote(file) + " -o lines");
    INFO("stderr: " << all.err);
    REQUIRE(all.code == 0);
    const std::vector<float> batched = printed_floats(all.out);
    REQUIRE(batched.size() == lines.size() * kTinyDim);
    for (size_t i = 0; i < lines.size(); ++i) {
      const mote_cli_test::Result alone = run_cli("embed -m " + quote(model) + " -p " + quote(lines[i]));
      INFO("line " << i + 1 << " '" << lines[i] << "': " << alone.err);
      REQUIRE(alone.code == 0);
      const std::vector<float> vector = printed_floats(alone.out);
      REQUIRE(vector.size() == kTinyDim);
      CHECK(worst_relative(vector, std::vector<float>(batched.begin() + i * kTinyDim,
                                                      batched.begin() + (i + 1) * kTinyDim)) <= 1e-6);
    }
    if (!with_empty) {
      const mote_cli_test::Result empty = run_cli("embed -m " + quote(model) + " -p ''");
      CHECK(empty.code == 2);
      CHECK(empty.err == "mote embed: text 1 is empty and this model has no BOS token\n");
    }
  }
}

TEST_CASE("embed: an embedding that overflows is MOTE_ERR_NUMERIC; mote embed prints one line and no vector") {
  // A finite output norm weight of 3e38 turns every hidden value past 1.13 into inf.
  mote::convert::Llama2cOptions options;
  options.dtype = mote::format::DType::f32;
  mote::convert::ModelData data;
  std::string error;
  REQUIRE_MESSAGE(mote::convert::load_llama2c(mote_test::golden_path("tiny_mha.bin"),
                                              mote_test::golden_path("tiny_tok64.bin"), options, &data, &error),
                  error);
  bool found = false;
  for (mote::convert::TensorData &t : data.tensors) {
    if (t.role != mote::format::Role::output_norm) continue;
    const float huge = 3e38f;
    for (size_t at = 0; at + 4 <= t.bytes.size(); at += 4) std::memcpy(t.bytes.data() + at, &huge, 4);
    found = true;
  }
  REQUIRE(found);
  const std::vector<uint8_t> bytes = mote::convert::serialize(data);
  const AlignedBuffer aligned = AlignedBuffer::copy_of(bytes);
  mote_model model;
  REQUIRE(mote_model_open(aligned.data.get(), aligned.size, &model, nullptr, 0) == MOTE_OK);
  mote_session_options session_options = mote_session_options_default();
  session_options.context_length = session_options.batch_size = 8;
  auto s = mote_test::open_session(model, session_options);
  const int32_t tokens[] = {1, 5, 7, 9};
  const uint32_t lengths[] = {2, 2};
  for (const mote_pool pool : {MOTE_POOL_MEAN, MOTE_POOL_LAST, MOTE_POOL_CLS}) {
    for (const int normalize : {0, 1}) {
      CAPTURE(pool);
      CAPTURE(normalize);
      float out[2 * kTinyDim];
      CHECK(mote_embed(&s->session, tokens, 4, pool, normalize, out, kTinyDim) == MOTE_ERR_NUMERIC);
      const std::string message = mote_session_error(&s->session);
      CHECK_MESSAGE((message.find("inf") != std::string::npos || message.find("nan") != std::string::npos), message);
      CHECK(mote_embed_batch(&s->session, tokens, lengths, 2, pool, normalize, out, 2 * kTinyDim) == MOTE_ERR_NUMERIC);
    }
  }

  if (!mote_cli_test::have_cli()) return;
  const std::string path = mote_cli_test::workspace().path("huge_norm.mote");
  REQUIRE_MESSAGE(mote::convert::write_file(path, bytes, &error), error);
  const std::string file = mote_cli_test::workspace().path("two_lines.txt");
  mote_cli_test::write_text(file, "the river\nthe moon\n");
  for (const std::string &text :
       {std::string("-p 'the river'"), "-f " + quote(file), "-f " + quote(file) + " --query moon"}) {
    for (const char *output : {"json", "csv", "lines", "f32"}) {
      const mote_cli_test::Result r = run_cli("embed -m " + quote(path) + " " + text + " -o " + output);
      INFO(text << " -o " << std::string(output) << ": " << r.err);
      CHECK(r.code == 1);
      CHECK(r.out.empty());
      CHECK(r.err.find("mote embed: ") == 0);
      CHECK(mote_cli_test::count_newlines(r.err) == 1);
    }
  }
}

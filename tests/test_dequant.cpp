// ggml block dequantization against an independent oracle, and the GGUF import of every block
// type a llama-quantize mix (Q4_K_M: Q4_K/Q6_K with Q5_0, Q8_0, IQ4_NL where rows are not whole
// super-blocks) holds.
//
// tests/golden/dequant_blocks.{bin,txt} (gen_dequant_goldens.py) hold, per type, blocks of
// pseudo-random bytes with finite fp16 scales and what gguf.quants.dequantize (ggml's reference
// in numpy) makes of them: mote's dequantization must equal it bit for bit, and a GGUF built
// from those blocks must convert to f16 weights equal to the golden values rounded to f16.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cli_support.hpp"
#include "convert_support.hpp"
#include "core/fp16.hpp"
#include "format/format.hpp"
#include "gguf/gguf.hpp"
#include "model_data.hpp"
#include "quant/dequant.hpp"
#include "quant/repack.hpp"
#include "test_support.hpp"

using namespace mote_convert_test;
using mote::convert::ggml_type_info;
using mote::convert::GgmlTypeInfo;

namespace {

// One type's golden blocks and the oracle's floats for them.
struct GoldenBlocks {
  std::string name;
  uint32_t type = 0;
  Bytes bytes;
  std::vector<float> values;

  size_t block_count() const { return values.size() / ggml_type_info(type)->block_elements; }
};

std::map<std::string, GoldenBlocks> load_goldens() {
  const Bytes data = mote_test::read_file(mote_test::golden_path("dequant_blocks.bin"));
  REQUIRE(!data.empty());
  std::map<std::string, GoldenBlocks> out;
  for (const std::string &line : mote_test::read_lines(mote_test::golden_path("dequant_blocks.txt"))) {
    GoldenBlocks g;
    g.name = mote_test::manifest_value(line, "name");
    g.type = static_cast<uint32_t>(std::stoul(mote_test::manifest_value(line, "id")));
    const size_t at = std::stoul(mote_test::manifest_value(line, "bytes"));
    const size_t n_bytes = std::stoul(mote_test::manifest_value(line, "n_bytes"));
    const size_t values_at = std::stoul(mote_test::manifest_value(line, "values"));
    const size_t elements = std::stoul(mote_test::manifest_value(line, "elements"));
    REQUIRE(at + n_bytes <= data.size());
    REQUIRE(values_at + elements * 4 <= data.size());
    g.bytes.assign(data.begin() + static_cast<long>(at), data.begin() + static_cast<long>(at + n_bytes));
    g.values.resize(elements);
    std::memcpy(g.values.data(), data.data() + values_at, elements * 4);
    out[g.name] = std::move(g);
  }
  return out;
}

// A tensor of n_blocks blocks cycling through the golden ones: its bytes and expected floats.
struct Tiled {
  Bytes bytes;
  std::vector<float> values;
};
Tiled tile(const GoldenBlocks &g, size_t n_blocks) {
  const GgmlTypeInfo *info = ggml_type_info(g.type);
  Tiled t;
  for (size_t b = 0; b < n_blocks; ++b) {
    const size_t source = b % g.block_count();
    const auto bytes = g.bytes.begin() + static_cast<long>(source * info->block_bytes);
    t.bytes.insert(t.bytes.end(), bytes, bytes + info->block_bytes);
    const auto values = g.values.begin() + static_cast<long>(source * info->block_elements);
    t.values.insert(t.values.end(), values, values + info->block_elements);
  }
  return t;
}

constexpr uint32_t kWide = 256;   // the mixed model's width: rows of whole 256-element super-blocks
constexpr uint32_t kVocab = 262;  // valid_gguf's vocabulary

// valid_gguf()'s metadata and tokenizer with 256-wide matrices, each of its own block type (the
// norms f32); expected[name] is what each matrix dequantizes to.
Gguf mixed_gguf(const std::map<std::string, GoldenBlocks> &goldens, std::map<std::string, Tiled> *expected) {
  Gguf g = valid_gguf();
  g.set_u32("llama.embedding_length", kWide);
  g.set_u32("llama.feed_forward_length", kWide);
  g.tensors.clear();
  struct Matrix {
    const char *name;
    uint64_t rows;
    const char *type;
  };
  const uint64_t kv_rows = kWide / kHeads * kKvHeads;
  const Matrix matrices[] = {
      {"token_embd.weight", kVocab, "Q2_K"},       {"blk.0.attn_q.weight", kWide, "Q4_K"},
      {"blk.0.attn_k.weight", kv_rows, "Q5_0"},    {"blk.0.attn_v.weight", kv_rows, "Q3_K"},
      {"blk.0.attn_output.weight", kWide, "Q5_1"}, {"blk.0.ffn_gate.weight", kWide, "IQ4_NL"},
      {"blk.0.ffn_down.weight", kWide, "IQ4_XS"},  {"blk.0.ffn_up.weight", kWide, "Q5_K"},
      {"output.weight", kVocab, "Q6_K"},
  };
  for (const Matrix &m : matrices) {
    const GoldenBlocks &golden = goldens.at(m.type);
    const Tiled t = tile(golden, kWide * m.rows / ggml_type_info(golden.type)->block_elements);
    g.tensors.push_back({m.name, {kWide, m.rows}, golden.type, t.bytes});
    (*expected)[m.name] = t;
  }
  const std::vector<float> ones(kWide, 1.0f);
  for (const char *norm : {"blk.0.attn_norm.weight", "blk.0.ffn_norm.weight", "output_norm.weight"})
    g.tensors.push_back({norm, {kWide}, kGgmlF32, f32_bytes(ones)});
  return g;
}

// Parses and converts with the default options (every matrix as stored, or f16); "" on success.
std::string convert_as_stored(const Bytes &bytes, ModelData *out) {
  GgufFile file;
  std::string error;
  if (!mote::convert::parse_gguf(bytes.data(), bytes.size(), &file, &error)) return error;
  if (!mote::convert::gguf_to_model(file, mote::convert::GgufOptions{}, out, &error)) return error;
  return "";
}

// valid with a NaN d in the third Q4_K super-block of attn_q (its values 512..767).
Gguf with_nan_q4_k_scale(Gguf valid) {
  const uint16_t nan = 0x7E00;
  std::memcpy(valid.tensor("blk.0.attn_q.weight")->data.data() + 2 * 144, &nan, 2);
  return valid;
}

void write_bytes(const std::string &path, const Bytes &bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char *>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

void expect_one_line_error(const std::string &error, const std::string &needle) {
  INFO("got: " << (error.empty() ? std::string("success") : error));
  CHECK(error.find(needle) != std::string::npos);
  CHECK(error.find('\n') == std::string::npos);
}

}  // namespace

TEST_CASE("dequant: every block type equals gguf.quants.dequantize bit for bit") {
  const std::map<std::string, GoldenBlocks> goldens = load_goldens();
  // Every quantized type the importer reads has goldens, so a new one cannot go untested.
  std::set<std::string> readable;
  for (uint32_t type = 0; type < 64; ++type) {
    const GgmlTypeInfo *info = ggml_type_info(type);
    if (info != nullptr && info->to_float != nullptr && info->block_elements > 1) readable.insert(info->name);
  }
  std::set<std::string> golden_names;
  for (const auto &entry : goldens) golden_names.insert(entry.first);
  CHECK(readable == golden_names);
  CHECK(readable.size() == 12);

  for (const auto &entry : goldens) {
    const GoldenBlocks &g = entry.second;
    INFO("type " << g.name);
    const GgmlTypeInfo *info = ggml_type_info(g.type);
    REQUIRE(info != nullptr);
    CHECK(std::string(info->name) == g.name);
    // The block size the oracle used (gguf's GGML_QUANT_SIZES) is the table's.
    CHECK(g.bytes.size() == g.block_count() * info->block_bytes);
    std::vector<float> got(g.values.size(), -1.0f);
    REQUIRE(mote::convert::dequantize_ggml(g.type, g.bytes.data(), got.size(), got.data()));
    size_t differ = 0, first = SIZE_MAX;
    for (size_t i = 0; i < got.size(); ++i) {
      if (std::memcmp(&got[i], &g.values[i], 4) != 0) {
        ++differ;
        if (first == SIZE_MAX) first = i;
      }
    }
    INFO("first difference at " << first << ": " << (first == SIZE_MAX ? 0.0f : got[first]) << " vs "
                                << (first == SIZE_MAX ? 0.0f : g.values[first]));
    CHECK(differ == 0);
    // Only whole blocks; the table's to_float itself decodes the whole ones of a count that is not.
    CHECK(!mote::convert::dequantize_ggml(g.type, g.bytes.data(), got.size() - 1, got.data()));
    std::vector<float> whole(got.size(), -1.0f);
    info->to_float(g.bytes.data(), got.size() - 1, whole.data());
    CHECK(std::memcmp(whole.data(), got.data(), (got.size() - info->block_elements) * sizeof(float)) == 0);
  }
}

TEST_CASE(
    "gguf import: a Q4_K_M-style mix keeps every type mote runs as stored, the rest as f16 equal to the oracle, and "
    "runs") {
  const std::map<std::string, GoldenBlocks> goldens = load_goldens();
  std::map<std::string, Tiled> expected;
  Gguf gguf = mixed_gguf(goldens, &expected);
  const Bytes bytes = gguf.build();
  ModelData m;
  REQUIRE(convert_as_stored(bytes, &m) == "");
  CHECK(m.config.dim == kWide);
  size_t matrices = 0, kept = 0;
  for (const TensorData &t : m.tensors) {
    if (t.n_dims != 2) continue;
    const std::string name = gguf_name(t);
    INFO("tensor " << name << " stored as " << mote::format::traits_of(t.dtype).name);
    REQUIRE(expected.count(name) == 1);
    const uint32_t source_type = gguf.tensor(name)->type;
    const DType plain = mote::convert::plain_dtype(t.dtype);
    // The default layout: every type with an x8 twin (iq4_nl too) interleaves rows of 8.
    if (t.rows % 8 == 0) CHECK(t.dtype == mote::format::traits_of(plain).twin);
    if (mote::format::traits_of(plain).ggml_type == source_type) {
      // The GGUF's own blocks (x8 layouts: the same bytes, 8 rows interleaved).
      const Bytes stored =
          t.dtype == plain ? t.bytes : mote::convert::deinterleave_rows(t.bytes, plain, t.rows, t.cols);
      CHECK(stored == expected.at(name).bytes);
      ++kept;
    } else {
      // A type mote does not run (IQ4_XS): dequantized as the oracle does, stored as f16.
      CHECK(std::string(ggml_type_info(source_type)->name) == "IQ4_XS");
      const std::vector<float> &want = expected.at(name).values;
      CHECK(t.dtype == DType::f16);
      REQUIRE(t.bytes.size() == want.size() * 2);
      size_t differ = 0;
      for (size_t i = 0; i < want.size(); ++i) {
        uint16_t got;
        std::memcpy(&got, t.bytes.data() + 2 * i, 2);
        if (got != mote::f32_to_fp16(want[i])) ++differ;
      }
      CHECK(differ == 0);
    }
    ++matrices;
  }
  CHECK(matrices == expected.size());
  CHECK(kept == expected.size() - 1);  // all but IQ4_XS
  CHECK(open_and_decode(m) == "");
}

TEST_CASE("gguf import: non-finite scales and partial super-blocks are refused in one line") {
  const std::map<std::string, GoldenBlocks> goldens = load_goldens();
  std::map<std::string, Tiled> expected;
  const Gguf valid = mixed_gguf(goldens, &expected);
  ModelData m;
  // A NaN super-block scale d (Q4_K's first field) in the third block of attn_q.
  {
    expect_one_line_error(convert_as_stored(with_nan_q4_k_scale(valid).build(), &m),
                          "tensor 'blk.0.attn_q' has a block scale of nan at index 512");
  }
  // An infinite dmin in Q2_K (bytes 82..83 of its 84-byte block).
  {
    Gguf g = valid;
    const uint16_t inf = 0x7C00;
    std::memcpy(g.tensor("token_embd.weight")->data.data() + 82, &inf, 2);
    expect_one_line_error(convert_as_stored(g.build(), &m),
                          "tensor 'token_embd' has a block minimum of inf at index 0");
  }
  // A NaN Q5_0 scale.
  {
    Gguf g = valid;
    const uint16_t nan = 0xFE00;
    std::memcpy(g.tensor("blk.0.attn_k.weight")->data.data() + 22, &nan, 2);
    expect_one_line_error(convert_as_stored(g.build(), &m),
                          "tensor 'blk.0.attn_k' has a block scale of nan at index 32");
  }
  // Rows of 576 values (SmolLM2's width) are not whole Q4_K super-blocks.
  {
    Gguf g = valid;
    g.tensor("blk.0.attn_q.weight")->dims = {576, kWide};
    expect_one_line_error(convert_as_stored(g.build(), &m),
                          "GGUF tensor 'blk.0.attn_q.weight' rows of 576 elements are not a whole number of Q4_K "
                          "blocks (256 elements)");
  }
}

TEST_CASE("cli: mote run takes the mixed GGUF directly; a NaN scale stops convert in one line") {
  using namespace mote_cli_test;
  if (!have_cli()) return;
  const std::map<std::string, GoldenBlocks> goldens = load_goldens();
  std::map<std::string, Tiled> expected;
  const Gguf valid = mixed_gguf(goldens, &expected);
  const std::string model = workspace().path("mixed-Q4_K_M.gguf"), bad = workspace().path("nan-scale.gguf");
  write_bytes(model, valid.build());
  write_bytes(bad, with_nan_q4_k_scale(valid).build());
  setenv("XDG_CACHE_HOME", workspace().dir.c_str(), 1);  // run converts into the cache first
  const Result r = run_cli("run -m " + quote(model) + " -p hi -n 2");
  INFO("stderr: " << r.err);
  CHECK(r.code == 0);
  CHECK(r.err.find("cannot import") == std::string::npos);
  expect_error("convert " + quote(bad) + " -o " + quote(workspace().path("out.mote")), 1,
               "tensor 'blk.0.attn_q' has a block scale of nan at index 512");
}

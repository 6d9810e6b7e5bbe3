// The GGUF and Hugging Face importers (models/convert/gguf, safetensors, json, dequant):
// - GGUF files built in memory by a small writer here: a valid tiny llama converts and opens;
//   each malformed variant is rejected with its own one-line message (asserted by a distinctive
//   substring); a randomized loop of byte flips, field overwrites and truncations never crashes
//   (run it under the asan preset: inputs sit in buffers of exactly their size).
// - Oracles from Python: tests/golden/tiny_llama.gguf written by the `gguf` package, every tensor
//   compared with gguf.quants.dequantize (all nine imported types, K-quants included), plus the
//   config, raw-byte pieces, merges and chat template; tests/golden/tiny_hf/ written by
//   transformers/tokenizers/safetensors, compared the same way, and malformed variants of it.
// - The real SmolLM2-135M-Instruct Q4_1 GGUF when present ($MOTE_SMOLLM2_GGUF or
//   ~/.cache/mote/SmolLM2-135M-Instruct.Q4_1.gguf), skipped with a message otherwise.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/fp16.hpp"
#include "dequant.hpp"
#include "format/format.hpp"
#include "gguf.hpp"
#include "json.hpp"
#include "mote/mote.h"
#include "mote_writer.hpp"
#include "safetensors.hpp"
#include "test_support.hpp"
#include "text/tokenizer.hpp"

namespace {

namespace fs = std::filesystem;
using mote::convert::GgufFile;
using mote::convert::ModelData;
using mote::convert::TensorData;
using mote::format::DType;
using mote::format::Role;
using Bytes = std::vector<uint8_t>;

// ---- a GGUF writer ---------------------------------------------------------------------------

enum : uint32_t { kU8 = 0, kI8, kU16, kI16, kU32, kI32, kF32, kBool, kString, kArray, kU64, kI64, kF64 };
enum : uint32_t { kGgmlF32 = 0, kGgmlF16 = 1, kGgmlQ4_0 = 2, kGgmlQ4_1 = 3, kGgmlQ5_0 = 6, kGgmlQ8_0 = 8 };

template <typename T>
void put(Bytes &out, T value) {
  const size_t at = out.size();
  out.resize(at + sizeof value);
  std::memcpy(out.data() + at, &value, sizeof value);
}
void put_string(Bytes &out, const std::string &s) {
  put<uint64_t>(out, s.size());
  out.insert(out.end(), s.begin(), s.end());
}

struct Kv {
  std::string key;
  uint32_t type;
  Bytes payload;  // the encoded value (after the type)
};
struct Tensor {
  std::string name;
  std::vector<uint64_t> dims;  // innermost first
  uint32_t type;
  Bytes data;
  int64_t offset = -1;  // relative to the data section; -1: the next aligned position
};

// A GGUF file as parts; build() lays it out (header, keys, tensor infos, aligned data).
struct Gguf {
  uint32_t version = 3;
  std::vector<Kv> kvs;
  std::vector<Tensor> tensors;
  uint64_t alignment = 32;
  int64_t tensor_count = -1, kv_count = -1;  // overrides of the header counts

  Kv *find(const std::string &key) {
    for (Kv &kv : kvs)
      if (kv.key == key) return &kv;
    return nullptr;
  }
  void set(const std::string &key, uint32_t type, Bytes payload) {
    if (Kv *kv = find(key)) {
      kv->type = type;
      kv->payload = std::move(payload);
    } else {
      kvs.push_back({key, type, std::move(payload)});
    }
  }
  void erase(const std::string &key) {
    for (size_t i = 0; i < kvs.size(); ++i)
      if (kvs[i].key == key) kvs.erase(kvs.begin() + static_cast<long>(i));
  }
  void set_u32(const std::string &key, uint32_t v) {
    Bytes b;
    put(b, v);
    set(key, kU32, b);
  }
  void set_f32(const std::string &key, float v) {
    Bytes b;
    put(b, v);
    set(key, kF32, b);
  }
  void set_bool(const std::string &key, bool v) { set(key, kBool, Bytes{static_cast<uint8_t>(v)}); }
  void set_string(const std::string &key, const std::string &v) {
    Bytes b;
    put_string(b, v);
    set(key, kString, b);
  }
  void set_strings(const std::string &key, const std::vector<std::string> &v) {
    Bytes b;
    put<uint32_t>(b, kString);
    put<uint64_t>(b, v.size());
    for (const std::string &s : v) put_string(b, s);
    set(key, kArray, b);
  }
  void set_i32s(const std::string &key, const std::vector<int32_t> &v) {
    Bytes b;
    put<uint32_t>(b, kI32);
    put<uint64_t>(b, v.size());
    for (int32_t x : v) put(b, x);
    set(key, kArray, b);
  }
  void set_f32s(const std::string &key, const std::vector<float> &v) {
    Bytes b;
    put<uint32_t>(b, kF32);
    put<uint64_t>(b, v.size());
    for (float x : v) put(b, x);
    set(key, kArray, b);
  }
  Tensor *tensor(const std::string &name) {
    for (Tensor &t : tensors)
      if (t.name == name) return &t;
    return nullptr;
  }

  Bytes build() const {
    Bytes out;
    put<uint32_t>(out, 0x46554747u);  // "GGUF"
    put(out, version);
    put<uint64_t>(out, tensor_count >= 0 ? static_cast<uint64_t>(tensor_count) : tensors.size());
    put<uint64_t>(out, kv_count >= 0 ? static_cast<uint64_t>(kv_count) : kvs.size());
    for (const Kv &kv : kvs) {
      put_string(out, kv.key);
      put(out, kv.type);
      out.insert(out.end(), kv.payload.begin(), kv.payload.end());
    }
    std::vector<uint64_t> offsets;
    uint64_t at = 0;
    for (const Tensor &t : tensors) {
      const uint64_t offset = t.offset >= 0 ? static_cast<uint64_t>(t.offset) : at;
      offsets.push_back(offset);
      put_string(out, t.name);
      put<uint32_t>(out, static_cast<uint32_t>(t.dims.size()));
      for (uint64_t d : t.dims) put(out, d);
      put(out, t.type);
      put(out, offset);
      at = std::max(at, (offset + t.data.size() + alignment - 1) / alignment * alignment);
    }
    const size_t data_start = (out.size() + alignment - 1) / alignment * alignment;
    out.resize(data_start, 0);
    for (size_t i = 0; i < tensors.size(); ++i) {
      const size_t begin = data_start + offsets[i];
      if (offsets[i] > (1u << 24)) continue;  // a deliberately wild offset: no data there
      if (out.size() < begin + tensors[i].data.size()) out.resize(begin + tensors[i].data.size(), 0);
      std::memcpy(out.data() + begin, tensors[i].data.data(), tensors[i].data.size());
    }
    return out;
  }
};

// GPT-2's byte-to-unicode mapping, written independently of the converter's.
std::string gpt2_char(int byte) {
  int cp = byte;
  if (!((byte >= 0x21 && byte <= 0x7E) || (byte >= 0xA1 && byte <= 0xAC) || (byte >= 0xAE && byte <= 0xFF))) {
    int n = 0;
    for (int b = 0; b < byte; ++b)
      if (!((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF))) ++n;
    cp = 256 + n;
  }
  std::string out;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return out;
}

Bytes f32_bytes(const std::vector<float> &v) {
  Bytes b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// Q8_0 blocks of the given floats (scale = max|x| / 127).
Bytes q8_0_bytes(const std::vector<float> &v) {
  Bytes b;
  for (size_t i = 0; i < v.size(); i += 32) {
    float amax = 0;
    for (size_t j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(v[i + j]));
    const float d = amax / 127;
    put<uint16_t>(b, mote::f32_to_fp16(d));
    for (size_t j = 0; j < 32; ++j)
      b.push_back(static_cast<uint8_t>(static_cast<int8_t>(d == 0 ? 0 : std::lround(v[i + j] / d))));
  }
  return b;
}

constexpr uint32_t kDim = 32, kLayers = 1, kHeads = 2, kKvHeads = 1, kFfn = 64;

// A valid tiny llama GGUF: 3 control tokens, the 256 bytes, 3 merges; f32 / f16 / q8_0 tensors.
Gguf valid_gguf() {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-0.5f, 0.5f);
  Gguf g;
  g.set_string("general.architecture", "llama");
  g.set_string("general.name", "tiny");
  g.set_u32("llama.block_count", kLayers);
  g.set_u32("llama.embedding_length", kDim);
  g.set_u32("llama.feed_forward_length", kFfn);
  g.set_u32("llama.attention.head_count", kHeads);
  g.set_u32("llama.attention.head_count_kv", kKvHeads);
  g.set_u32("llama.context_length", 64);
  g.set_f32("llama.rope.freq_base", 10000.0f);
  g.set_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  std::vector<std::string> tokens = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
  std::vector<int32_t> types = {3, 3, 3};
  for (int b = 0; b < 256; ++b) {
    tokens.push_back(gpt2_char(b));
    types.push_back(1);
  }
  tokens.push_back("\xC4\xA0t");  // "Ġt"
  tokens.push_back("he");
  tokens.push_back("\xC4\xA0the");
  types.insert(types.end(), {1, 1, 1});
  g.set_string("tokenizer.ggml.model", "gpt2");
  g.set_strings("tokenizer.ggml.tokens", tokens);
  g.set_i32s("tokenizer.ggml.token_type", types);
  g.set_strings("tokenizer.ggml.merges", {"\xC4\xA0 t", "h e", "\xC4\xA0t he"});
  g.set_u32("tokenizer.ggml.bos_token_id", 1);
  g.set_u32("tokenizer.ggml.eos_token_id", 2);
  g.set_string("tokenizer.chat_template", "{{ '<|im_start|>' }}");
  const uint32_t vocab = static_cast<uint32_t>(tokens.size());
  auto values = [&](size_t n) {
    std::vector<float> v(n);
    for (float &x : v) x = dist(rng);
    return v;
  };
  auto f16 = [&](size_t n) {
    Bytes b;
    for (float x : values(n)) put<uint16_t>(b, mote::f32_to_fp16(x));
    return b;
  };
  const uint64_t q = kHeads * (kDim / kHeads), kv = kKvHeads * (kDim / kHeads);
  g.tensors.push_back({"token_embd.weight", {kDim, vocab}, kGgmlQ8_0, q8_0_bytes(values(kDim * vocab))});
  g.tensors.push_back({"blk.0.attn_norm.weight", {kDim}, kGgmlF32, f32_bytes(values(kDim))});
  g.tensors.push_back({"blk.0.attn_q.weight", {kDim, q}, kGgmlF16, f16(kDim * q)});
  g.tensors.push_back({"blk.0.attn_k.weight", {kDim, kv}, kGgmlF32, f32_bytes(values(kDim * kv))});
  g.tensors.push_back({"blk.0.attn_v.weight", {kDim, kv}, kGgmlQ8_0, q8_0_bytes(values(kDim * kv))});
  g.tensors.push_back({"blk.0.attn_output.weight", {q, kDim}, kGgmlF32, f32_bytes(values(kDim * q))});
  g.tensors.push_back({"blk.0.ffn_norm.weight", {kDim}, kGgmlF32, f32_bytes(values(kDim))});
  g.tensors.push_back({"blk.0.ffn_gate.weight", {kDim, kFfn}, kGgmlF16, f16(kDim * kFfn)});
  g.tensors.push_back({"blk.0.ffn_down.weight", {kFfn, kDim}, kGgmlQ8_0, q8_0_bytes(values(kDim * kFfn))});
  g.tensors.push_back({"blk.0.ffn_up.weight", {kDim, kFfn}, kGgmlF32, f32_bytes(values(kDim * kFfn))});
  g.tensors.push_back({"output_norm.weight", {kDim}, kGgmlF32, f32_bytes(values(kDim))});
  return g;
}

// Parses and converts bytes held in a buffer of exactly their size; "" on success.
std::string convert_gguf(const Bytes &bytes, ModelData *out = nullptr, DType dtype = DType::f32) {
  std::unique_ptr<uint8_t[]> exact(new uint8_t[bytes.size() + 1]);  // +1: never a zero-size array
  if (!bytes.empty()) std::memcpy(exact.get(), bytes.data(), bytes.size());
  GgufFile file;
  std::string error;
  ModelData scratch;
  mote::convert::GgufOptions options;
  options.dtype = dtype;
  if (!mote::convert::parse_gguf(exact.get(), bytes.size(), &file, &error)) return error;
  if (!mote::convert::gguf_to_model(file, options, out != nullptr ? out : &scratch, &error)) return error;
  return "";
}

void expect_gguf_error(const Bytes &bytes, const std::string &needle) {
  const std::string error = convert_gguf(bytes);
  INFO("expected an error containing: " << needle);
  INFO("got: " << (error.empty() ? std::string("success") : error));
  CHECK(!error.empty());
  CHECK(error.find(needle) != std::string::npos);
  CHECK(error.find('\n') == std::string::npos);
}
void expect_gguf_error(const Gguf &g, const std::string &needle) { expect_gguf_error(g.build(), needle); }

// A 64-byte aligned copy (the runtime reads models only at that alignment).
struct Aligned {
  struct Free {
    void operator()(void *p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t, Free> data;
  size_t size = 0;
  explicit Aligned(const Bytes &bytes) : size(bytes.size()) {
    data.reset(static_cast<uint8_t *>(std::aligned_alloc(64, (bytes.size() + 63) / 64 * 64 + 64)));
    std::memcpy(data.get(), bytes.data(), bytes.size());
  }
};

// Serializes model and opens it with the runtime; "" when it opens.
std::string open_error(const ModelData &model) {
  const Aligned file(mote::convert::serialize(model));
  mote_model m{};
  char message[256] = "";
  return mote_model_open(file.data.get(), file.size, &m, message, sizeof message) == MOTE_OK ? "" : message;
}

std::vector<float> floats_of(const TensorData &t) {
  const size_t n = static_cast<size_t>(t.rows) * t.cols;
  std::vector<float> v(n);
  if (t.dtype == DType::f32) {
    REQUIRE(t.bytes.size() == n * 4);
    std::memcpy(v.data(), t.bytes.data(), n * 4);
  } else {
    REQUIRE(t.dtype == DType::f16);
    REQUIRE(t.bytes.size() == n * 2);
    mote::convert::dequantize_f16(t.bytes.data(), n, v.data());
  }
  return v;
}

std::string gguf_name(const TensorData &t) {
  mote::format::TensorEntry e{};
  e.role = static_cast<uint32_t>(t.role);
  e.layer = t.layer;
  char name[64];
  mote::format::tensor_name(e, name, sizeof name);
  return std::string(name) + ".weight";
}

std::string hex_of(const std::string &s) {
  static const char *const kHex = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

// Compares values with goldens: exact, or within 1e-6.
void compare_values(const std::string &name, const std::vector<float> &got, const float *want, size_t n) {
  INFO("tensor " << name);
  REQUIRE(got.size() == n);
  size_t inexact = 0, far = 0;
  for (size_t i = 0; i < n; ++i) {
    if (std::memcmp(&got[i], &want[i], 4) != 0) ++inexact;
    if (!(std::fabs(got[i] - want[i]) <= 1e-6f)) ++far;
  }
  CHECK(far == 0);
  if (inexact != 0) MESSAGE(name << ": " << inexact << " values differ from the golden in the last bits");
}

}  // namespace

// ---- GGUF: the valid file and the parser ---------------------------------------------------------

TEST_CASE("gguf: a valid tiny llama converts and opens") {
  ModelData m;
  REQUIRE(convert_gguf(valid_gguf().build(), &m) == "");
  CHECK(m.config.dim == kDim);
  CHECK(m.config.n_layers == kLayers);
  CHECK(m.config.n_heads == kHeads);
  CHECK(m.config.n_kv_heads == kKvHeads);
  CHECK(m.config.head_dim == kDim / kHeads);
  CHECK(m.config.ffn_dim == kFfn);
  CHECK(m.config.vocab_size == 262);
  CHECK(m.config.max_seq_len == 64);
  CHECK(m.config.rope_layout == mote::format::RopeLayout::interleaved);
  CHECK((m.config.flags & mote::format::kFlagTiedEmbeddings) != 0);
  CHECK(m.tensors.size() == 11);
  CHECK(m.tokenizer.kind == mote::format::TokenizerKind::byte_level_bpe);
  CHECK(m.tokenizer.flags == 0);
  CHECK(m.tokenizer.chat_template == mote::format::ChatTemplate::chatml);
  CHECK(m.tokenizer.pieces[3 + 0x20] == " ");
  CHECK(m.tokenizer.pieces[3 + 0x0A] == "\n");
  CHECK(m.tokenizer.pieces[3 + 0xFF] == "\xFF");
  CHECK(m.tokenizer.pieces[261] == " the");
  CHECK(m.tokenizer.pieces[1] == "<|im_start|>");
  REQUIRE(m.tokenizer.merges.size() == 3);
  CHECK(m.tokenizer.merges[2].left == 259);
  CHECK(m.tokenizer.merges[2].right == 260);
  CHECK(m.tokenizer.merges[2].result == 261);
  CHECK(m.config.bos_id == 1);
  CHECK(m.config.eos_id == 2);
  CHECK(open_error(m) == "");
  // llama.cpp's "gpt2" pre-tokenizer keeps number runs whole (no digit split).
  Gguf pre = valid_gguf();
  pre.set_string("tokenizer.ggml.pre", "gpt2");
  REQUIRE(convert_gguf(pre.build(), &m) == "");
  CHECK(m.tokenizer.flags == mote::format::kTokNoDigitSplit);
  // With a separate classifier and f16 storage.
  Gguf g = valid_gguf();
  g.tensors.push_back({"output.weight", {kDim, 262}, kGgmlQ4_0, Bytes(262 * 18, 0x11)});
  REQUIRE(convert_gguf(g.build(), &m, DType::f16) == "");
  CHECK((m.config.flags & mote::format::kFlagTiedEmbeddings) == 0);
  CHECK(m.tensors.back().role == Role::output);
  CHECK(m.tensors.back().dtype == DType::f16);
  CHECK(m.tensors[1].dtype == DType::f32);  // norms stay f32
  CHECK(open_error(m) == "");
}

TEST_CASE("gguf: a SentencePiece (llama) vocabulary") {
  Gguf g = valid_gguf();
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<int32_t> types = {2, 3, 3};
  std::vector<float> scores = {0, 0, 0};
  for (int b = 0; b < 256; ++b) {
    char piece[8];
    std::snprintf(piece, sizeof piece, "<0x%02X>", b);
    tokens.push_back(piece);
    types.push_back(6);
    scores.push_back(0);
  }
  tokens.insert(tokens.end(), {"\xE2\x96\x81the", "he", "\xE2\x96\x81"});
  types.insert(types.end(), {1, 1, 1});
  scores.insert(scores.end(), {-1, -2, -3});
  g.set_string("tokenizer.ggml.model", "llama");
  g.set_strings("tokenizer.ggml.tokens", tokens);
  g.set_i32s("tokenizer.ggml.token_type", types);
  g.set_f32s("tokenizer.ggml.scores", scores);
  g.erase("tokenizer.ggml.merges");
  g.set_u32("tokenizer.ggml.unknown_token_id", 0);
  g.set_string("tokenizer.chat_template", "[INST] {{ m }} [/INST]");
  ModelData m;
  REQUIRE(convert_gguf(g.build(), &m) == "");
  CHECK(m.tokenizer.kind == mote::format::TokenizerKind::sentencepiece_bpe);
  CHECK(m.tokenizer.flags == (mote::format::kTokAddSpacePrefix | mote::format::kTokAddBos));
  CHECK(m.tokenizer.pieces[259] == " the");
  CHECK(m.tokenizer.pieces[261] == " ");
  CHECK(m.tokenizer.pieces[3 + 10] == "<0x0A>");
  CHECK(m.tokenizer.scores[260] == -2.0f);
  CHECK(m.tokenizer.unk_id == 0);
  CHECK(m.tokenizer.merges.empty());
  CHECK(m.tokenizer.chat_template == mote::format::ChatTemplate::llama2);
  CHECK(open_error(m) == "");
  g.set_bool("tokenizer.ggml.add_space_prefix", false);
  g.set_bool("tokenizer.ggml.add_bos_token", false);
  g.erase("tokenizer.chat_template");
  REQUIRE(convert_gguf(g.build(), &m) == "");
  CHECK(m.tokenizer.flags == 0);
  CHECK(m.tokenizer.chat_template == mote::format::ChatTemplate::none);
}

TEST_CASE("gguf: metadata of every value type, version 2, a custom alignment") {
  Gguf g = valid_gguf();
  g.version = 2;
  g.set("t.u8", kU8, {200});
  g.set("t.i8", kI8, {0x9C});
  g.set("t.u16", kU16, {1, 2});
  g.set("t.i16", kI16, {1, 0x80});
  g.set("t.i32", kI32, {1, 2, 3, 0x80});
  Bytes b;
  put<uint64_t>(b, 1ull << 40);
  g.set("t.u64", kU64, b);
  g.set("t.i64", kI64, b);
  b.clear();
  put<double>(b, 2.5);
  g.set("t.f64", kF64, b);
  // [[1, 2], []] as an array of arrays of u16.
  b.clear();
  put<uint32_t>(b, kArray);
  put<uint64_t>(b, 2);
  put<uint32_t>(b, kU16);
  put<uint64_t>(b, 2);
  put<uint16_t>(b, 1);
  put<uint16_t>(b, 2);
  put<uint32_t>(b, kU16);
  put<uint64_t>(b, 0);
  g.set("t.nested", kArray, b);
  g.set_u32("general.alignment", 64);
  g.alignment = 64;
  const Bytes bytes = g.build();
  GgufFile file;
  std::string error;
  REQUIRE(mote::convert::parse_gguf(bytes.data(), bytes.size(), &file, &error));
  CHECK(file.version == 2);
  CHECK(file.alignment == 64);
  CHECK(file.data_offset % 64 == 0);
  CHECK(file.find("t.u8")->u == 200);
  CHECK(file.find("t.i8")->i == -100);
  CHECK(file.find("t.u16")->u == 0x0201);
  CHECK(file.find("t.i16")->i == -32767);
  CHECK(file.find("t.u64")->u == (1ull << 40));
  CHECK(file.find("t.i64")->i == (1ll << 40));
  CHECK(file.find("t.f64")->f == 2.5);
  CHECK(file.find("t.nested")->array_count == 2);
  CHECK(file.keys.front() == "general.architecture");
  std::vector<int64_t> types;
  REQUIRE(file.integers("tokenizer.ggml.token_type", &types, &error));
  CHECK(types[0] == 3);
  ModelData m;
  CHECK(convert_gguf(bytes, &m) == "");
}

TEST_CASE("gguf: malformed containers are rejected with their own message") {
  const Gguf valid = valid_gguf();
  REQUIRE(convert_gguf(valid.build()) == "");
  {
    Bytes b = valid.build();
    b[0] = 'X';
    expect_gguf_error(b, "bad magic");
    expect_gguf_error(Bytes{'G', 'G'}, "bad magic");
  }
  for (uint32_t version : {0u, 1u, 4u, 0xFFFFFFFFu}) {
    Gguf g = valid;
    g.version = version;
    expect_gguf_error(g, "GGUF version " + std::to_string(version) + " is not supported");
  }
  {
    Gguf g = valid;
    g.tensor_count = int64_t{1} << 40;
    expect_gguf_error(g, "tensors, more than the file");
    g = valid;
    g.kv_count = int64_t{1} << 40;
    expect_gguf_error(g, "metadata keys, more than the file");
    g = valid;
    g.kv_count = static_cast<int64_t>(valid.kvs.size()) + 1;  // one more key than there is
    expect_gguf_error(g, "GGUF file is truncated in ");       // where depends on what the tensor infos read as
  }
  {
    Gguf g = valid;
    Bytes payload;
    put<uint64_t>(payload, 1ull << 50);  // a string longer than the file
    g.set("general.name", kString, payload);
    expect_gguf_error(g, "truncated in metadata 'general.name'");
  }
  {
    Gguf g = valid;
    g.set("t.bad", 13, {0});
    expect_gguf_error(g, "'t.bad' has unknown value type 13");
  }
  {
    Gguf g = valid;
    Bytes b;
    put<uint32_t>(b, 99);
    put<uint64_t>(b, 1);
    g.set("t.array", kArray, b);
    expect_gguf_error(g, "'t.array' is an array of unknown value type 99");
  }
  {
    // An array of arrays whose inner length is larger than the rest of the file.
    Gguf g = valid;
    Bytes b;
    put<uint32_t>(b, kArray);
    put<uint64_t>(b, 1);
    put<uint32_t>(b, kU32);
    put<uint64_t>(b, 1ull << 61);
    g.set("t.nested", kArray, b);
    expect_gguf_error(g, "'t.nested' is an array of 2305843009213693952 elements, more than the rest");
    // Outer count too large for the file.
    b.clear();
    put<uint32_t>(b, kString);
    put<uint64_t>(b, ~0ull);
    g.set("t.nested", kArray, b);
    expect_gguf_error(g, "is an array of 18446744073709551615 elements");
    // Nested too deep.
    b.clear();
    for (int d = 0; d < 20; ++d) {
      put<uint32_t>(b, kArray);
      put<uint64_t>(b, 1);
    }
    put<uint32_t>(b, kU8);
    put<uint64_t>(b, 0);
    g.set("t.nested", kArray, b);
    expect_gguf_error(g, "nests arrays deeper than 8 levels");
  }
  {
    Gguf g = valid;
    g.set("t.bool", kBool, {2});
    expect_gguf_error(g, "'t.bool' is a bool with value 2");
  }
  {
    Gguf g = valid;
    g.kvs.push_back(g.kvs[1]);
    expect_gguf_error(g, "metadata key 'general.name' appears twice");
  }
  for (uint32_t alignment : {0u, 3u, 48u, 1u << 30}) {
    Gguf g = valid;
    g.set_u32("general.alignment", alignment);
    expect_gguf_error(g, "general.alignment " + std::to_string(alignment) + " is not a power of two");
  }
  {
    Gguf g = valid;
    g.set_string("general.alignment", "32");
    expect_gguf_error(g, "general.alignment has type string, expected an integer");
  }
  {
    Gguf g = valid;
    g.tensors[2].dims = {32, 32, 1, 1, 1};
    expect_gguf_error(g, "'blk.0.attn_q.weight' has 5 dimensions (1 to 4 allowed)");
    g.tensors[2].dims = {};
    expect_gguf_error(g, "'blk.0.attn_q.weight' has 0 dimensions");
  }
  {
    Gguf g = valid;
    g.tensors[2].dims = {1ull << 32, 1ull << 32, 1ull << 32};
    expect_gguf_error(g, "'blk.0.attn_q.weight' has too many elements (the product of its dimensions overflows)");
    g.tensors[2].dims = {32, 0};
    expect_gguf_error(g, "'blk.0.attn_q.weight' has a dimension of size 0");
  }
  for (uint32_t type : {4u, 5u, 34u, 99u, 0xFFFFFFFFu}) {
    Gguf g = valid;
    g.tensors[3].type = type;
    expect_gguf_error(g, "'blk.0.attn_k.weight' has unknown ggml type " + std::to_string(type));
  }
  {
    Gguf g = valid;
    g.tensors[2].dims = {48, 16};  // 48 is not a whole number of Q8_0 blocks
    g.tensors[2].type = kGgmlQ8_0;
    expect_gguf_error(g, "rows of 48 elements are not a whole number of Q8_0 blocks (32 elements)");
  }
  {
    Gguf g = valid;
    g.tensors[4].offset = 16;
    expect_gguf_error(g, "'blk.0.attn_v.weight' offset 16 is not a multiple of the alignment (32)");
  }
  {
    Gguf g = valid;
    g.tensors[4].offset = int64_t{1} << 40;
    expect_gguf_error(g, "GGUF tensor 'blk.0.attn_v.weight' data [");
    expect_gguf_error(g, "runs past the end of the file (");
    Bytes b = valid.build();
    b.resize(b.size() - 1);  // the last tensor loses its last byte
    expect_gguf_error(b, "GGUF tensor 'output_norm.weight' data [");
  }
  {
    Gguf g = valid;
    g.tensors[5].name = g.tensors[4].name;
    expect_gguf_error(g, "GGUF tensor 'blk.0.attn_v.weight' appears twice");
  }
  {
    // Cut inside each section: every cut fails, and the message names the section.
    const Bytes full = valid.build();
    GgufFile file;
    std::string error;
    REQUIRE(mote::convert::parse_gguf(full.data(), full.size(), &file, &error));
    for (size_t cut = 0; cut < full.size(); cut += (cut < 4096 ? 1 : 97)) {
      const std::string e = convert_gguf(Bytes(full.begin(), full.begin() + static_cast<long>(cut)));
      INFO("cut at " << cut << ": " << e);
      REQUIRE(!e.empty());
      if (cut >= 4 && cut < 24) CHECK(e.find("truncated in the header") != std::string::npos);
      // (Below ~400 bytes the key and tensor counts are already more than the rest can hold.)
      if (cut >= 400 && cut < 1000) {
        CHECK((e.find("truncated in metadata") != std::string::npos ||
               e.find("elements, more than the rest of the file") != std::string::npos));
      }
    }
    // Inside the tensor infos: find where the first one starts (after the last key).
    const size_t infos = file.data_offset - 200;
    CHECK(convert_gguf(Bytes(full.begin(), full.begin() + static_cast<long>(infos))).find("truncated in tensor info") !=
          std::string::npos);
  }
}

TEST_CASE("gguf: llama files that do not fit the architecture") {
  const Gguf valid = valid_gguf();
  for (const char *key : {"llama.block_count", "llama.embedding_length", "llama.feed_forward_length",
                          "llama.attention.head_count", "llama.context_length", "general.architecture"}) {
    Gguf g = valid;
    g.erase(key);
    expect_gguf_error(g, std::string("GGUF is missing the required key '") + key + "'");
  }
  {
    Gguf g = valid;
    g.set_string("general.architecture", "qwen2");
    expect_gguf_error(g, "GGUF architecture 'qwen2' is not supported (only llama and gpt2)");
    g = valid;
    g.set_string("llama.block_count", "one");
    expect_gguf_error(g, "'llama.block_count' has type string, expected an integer");
    g = valid;
    g.set_u32("llama.block_count", 0);
    expect_gguf_error(g, "'llama.block_count' is 0, outside [1, 1024]");
  }
  {
    Gguf g = valid;
    g.set_u32("llama.attention.head_count", 3);
    expect_gguf_error(g, "llama.embedding_length 32 is not divisible by llama.attention.head_count 3");
    g = valid;
    g.set_u32("llama.attention.head_count", 4);
    g.set_u32("llama.attention.head_count_kv", 3);
    expect_gguf_error(g, "llama.attention.head_count 4 is not a multiple of head_count_kv 3");
    g = valid;
    g.set_u32("llama.rope.dimension_count", 8);
    expect_gguf_error(g, "llama.rope.dimension_count 8 differs from the head dimension 16");
    g = valid;
    g.set_f32("llama.attention.layer_norm_rms_epsilon", 0.0f);
    expect_gguf_error(g, "layer_norm_rms_epsilon");
  }
  {
    Gguf g = valid;
    g.tensors[2].dims = {32, 16};
    g.tensors[2].data.resize(32 * 16 * 2);
    expect_gguf_error(g,
                      "GGUF tensor 'blk.0.attn_q.weight' has shape [32, 16] (innermost first); the "
                      "hyperparameters need [32, 32]");
    g = valid;
    g.tensors[1].dims = {16, 2};
    expect_gguf_error(g, "'blk.0.attn_norm.weight' has shape [16, 2]");
  }
  {
    Gguf g = valid;
    g.tensors.pop_back();
    expect_gguf_error(g, "GGUF is missing tensor 'output_norm.weight'");
    g = valid;
    g.tensors[9].name = "blk.0.ffn_upp.weight";
    expect_gguf_error(g, "GGUF tensor 'blk.0.ffn_upp.weight' is not part of the llama architecture");
    g = valid;
    g.tensors[9].name = "rope_freqs.weight";
    expect_gguf_error(g, "'rope_freqs.weight' is not part of the llama architecture");
    g = valid;
    g.tensors[9].name = "blk.1.ffn_up.weight";
    expect_gguf_error(g, "'blk.1.ffn_up.weight' is for layer 1 but llama.block_count is 1");
    g = valid;
    g.tensors[9].name = "blk.00.ffn_up.weight";
    expect_gguf_error(g, "'blk.00.ffn_up.weight' is not part of the llama architecture");
  }
  {
    Gguf g = valid;
    g.tensors[3].type = kGgmlQ5_0;
    g.tensors[3].data.assign(16 * 22, 0);
    expect_gguf_error(g, "'blk.0.attn_k.weight' has type Q5_0, which mote convert cannot import");
  }
  {
    Gguf g = valid;
    g.set_strings("tokenizer.ggml.merges", {"\xC4\xA0 t", "h x\xC4\xA0"});
    expect_gguf_error(g, "GGUF merge 1 'h x\xC4\xA0': token 'x\xC4\xA0' is not in the vocabulary");
    g.set_strings("tokenizer.ggml.merges", {"t h"});
    expect_gguf_error(g, "GGUF merge 0 't h': token 'th' is not in the vocabulary");
    g.set_strings("tokenizer.ggml.merges", {"the"});
    expect_gguf_error(g, "GGUF merge 0 'the' is not two tokens split by one space");
  }
  {
    Gguf g = valid;
    std::vector<std::string> tokens;
    // U+20AC is not in GPT-2's byte map.
    for (int i = 0; i < 262; ++i) tokens.push_back(i == 100 ? "\xE2\x82\xAC" : "<" + std::to_string(i) + ">");
    g.set_strings("tokenizer.ggml.tokens", tokens);
    g.erase("tokenizer.ggml.merges");
    expect_gguf_error(g, "GGUF token 100 '\xE2\x82\xAC' is a normal token but not in GPT-2's byte-to-unicode form");
  }
  {
    Gguf g = valid;
    g.set_strings("tokenizer.ggml.tokens", {"a", "b"});
    g.set_u32("llama.vocab_size", 262);
    expect_gguf_error(g, "tokenizer.ggml.tokens has 2 tokens but the model's vocabulary is 262");
    g = valid;
    g.set_u32("llama.vocab_size", 300);
    expect_gguf_error(g, "tokenizer.ggml.tokens has 262 tokens but the model's vocabulary is 300");
    g = valid;
    g.set_u32("tokenizer.ggml.bos_token_id", 262);
    expect_gguf_error(g, "'tokenizer.ggml.bos_token_id' is 262, outside [-1, 261]");
    g = valid;
    g.set_string("tokenizer.ggml.model", "bert");
    expect_gguf_error(g, "GGUF tokenizer model 'bert' is not supported");
    g = valid;
    g.erase("tokenizer.ggml.tokens");
    expect_gguf_error(g, "GGUF has no tokenizer");
    g = valid;
    std::vector<int32_t> types(262, 1);
    types[7] = 9;
    g.set_i32s("tokenizer.ggml.token_type", types);
    expect_gguf_error(g, "tokenizer.ggml.token_type[7] is 9");
  }
}

TEST_CASE("gguf: randomized corruption never crashes") {
  const char *iterations_env = std::getenv("MOTE_FUZZ_ITERATIONS");
  const char *seed_env = std::getenv("MOTE_FUZZ_SEED");
  const int iterations = iterations_env != nullptr ? std::atoi(iterations_env) : 500;
  const uint32_t seed = seed_env != nullptr ? static_cast<uint32_t>(std::strtoul(seed_env, nullptr, 10)) : 12345u;
  std::mt19937 rng(seed);
  const Bytes valid = valid_gguf().build();
  GgufFile file;
  std::string error;
  REQUIRE(mote::convert::parse_gguf(valid.data(), valid.size(), &file, &error));
  const size_t metadata_end = file.data_offset;  // most mutations aim at the structure
  size_t converted = 0, opened = 0;
  const uint64_t kBig[] = {0, 1, 2, 31, 32, 33, 255, 0x7FFFFFFF, 0xFFFFFFFF, 1ull << 32, 1ull << 62, ~0ull};
  for (int it = 0; it < iterations; ++it) {
    Bytes b = valid;
    const int mutations = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < mutations; ++k) {
      const size_t at = rng() % 4 != 0 ? rng() % metadata_end : rng() % b.size();
      switch (rng() % 4) {
        case 0:
          b[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
          break;
        case 1:
          b[at] = static_cast<uint8_t>(rng());
          break;
        case 2: {
          const uint64_t v = kBig[rng() % (sizeof kBig / sizeof kBig[0])];
          std::memcpy(b.data() + at, &v, std::min<size_t>(8, b.size() - at));
          break;
        }
        default:
          b.resize(at);
          break;
      }
      if (b.empty()) break;
    }
    ModelData m;
    const std::string e = convert_gguf(b, &m);
    if (e.empty()) {
      ++converted;
      if (open_error(m).empty()) ++opened;
    } else {
      CHECK(e.find('\n') == std::string::npos);
    }
  }
  MESSAGE(iterations << " corrupted GGUF files: " << converted << " still converted, " << opened << " opened");
}

// ---- dequantization ---------------------------------------------------------------------------------

TEST_CASE("dequant: hand-made blocks") {
  using namespace mote::convert;
  // Q4_0: d = 0.5; byte j = (j % 16) | (15 - j % 16) << 4.
  Bytes q40(18);
  const uint16_t half = mote::f32_to_fp16(0.5f);
  std::memcpy(q40.data(), &half, 2);
  for (int j = 0; j < 16; ++j) q40[2 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  float out[256];
  REQUIRE(dequantize_ggml(kGgmlQ4_0, q40.data(), 32, out));
  for (int j = 0; j < 16; ++j) {
    CHECK(out[j] == 0.5f * static_cast<float>(j - 8));
    CHECK(out[j + 16] == 0.5f * static_cast<float>(7 - j));
  }
  // Q4_1: d = 0.5, m = -1.
  Bytes q41(20);
  const uint16_t minus_one = mote::f32_to_fp16(-1.0f);
  std::memcpy(q41.data(), &half, 2);
  std::memcpy(q41.data() + 2, &minus_one, 2);
  for (int j = 0; j < 16; ++j) q41[4 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  REQUIRE(dequantize_ggml(kGgmlQ4_1, q41.data(), 32, out));
  CHECK(out[3] == 0.5f);
  CHECK(out[16] == 6.5f);
  // Q8_0: d = 0.5, q = j - 16.
  Bytes q80(34);
  std::memcpy(q80.data(), &half, 2);
  for (int j = 0; j < 32; ++j) q80[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(j - 16));
  REQUIRE(dequantize_ggml(kGgmlQ8_0, q80.data(), 32, out));
  CHECK(out[0] == -8.0f);
  CHECK(out[31] == 7.5f);
  // BF16 is the upper half of an f32.
  const uint8_t bf16[2] = {0x80, 0x3F};
  REQUIRE(dequantize_ggml(30, bf16, 1, out));
  CHECK(out[0] == 1.0f);
  // Wrong counts and unsupported types are refused.
  CHECK(!dequantize_ggml(kGgmlQ8_0, q80.data(), 31, out));
  CHECK(!dequantize_ggml(kGgmlQ5_0, q80.data(), 32, out));
  CHECK(!dequantize_ggml(99, q80.data(), 32, out));
  CHECK(ggml_type_info(4) == nullptr);
  CHECK(std::string(ggml_type_info(12)->name) == "Q4_K");
  CHECK(ggml_type_info(14)->block_bytes == 210);
}

// ---- GGUF oracle: the gguf Python package --------------------------------------------------------

TEST_CASE("gguf golden: tiny_llama.gguf against gguf.quants.dequantize") {
  const std::string path = mote_test::golden_path("tiny_llama.gguf");
  const std::vector<std::string> lines = mote_test::read_lines(mote_test::golden_path("gguf_tiny_llama.txt"));
  const std::vector<float> goldens = mote_test::read_floats(mote_test::golden_path("gguf_tiny_llama.bin"));
  REQUIRE(!lines.empty());
  REQUIRE(!goldens.empty());
  mote::convert::GgufOptions options;
  options.dtype = DType::f32;
  std::vector<size_t> progress;
  options.progress = [&](size_t done, size_t total) { progress.push_back(done * 1000 + total); };
  ModelData m;
  std::string error;
  REQUIRE_MESSAGE(mote::convert::load_gguf(path, options, &m, &error), error);

  const std::string config = lines[0];
  REQUIRE(config.rfind("config ", 0) == 0);
  auto value = [&](const char *key) { return std::stoll(mote_test::manifest_value(config, key)); };
  const mote::format::ModelConfig &c = m.config;
  CHECK(c.dim == value("dim"));
  CHECK(c.n_layers == value("layers"));
  CHECK(c.n_heads == value("heads"));
  CHECK(c.n_kv_heads == value("kv_heads"));
  CHECK(c.head_dim == value("head_dim"));
  CHECK(c.ffn_dim == value("ffn"));
  CHECK(c.vocab_size == value("vocab"));
  CHECK(c.max_seq_len == value("ctx"));
  CHECK(c.rope_theta == 50000.0f);
  CHECK(c.norm_eps == 1e-6f);
  CHECK(c.rope_layout == mote::format::RopeLayout::interleaved);
  CHECK(((c.flags & mote::format::kFlagTiedEmbeddings) != 0) == (value("tied") != 0));
  CHECK(c.bos_id == value("bos"));
  CHECK(c.eos_id == value("eos"));
  CHECK(m.tokenizer.unk_id == value("unk"));
  CHECK(static_cast<int>(m.tokenizer.chat_template) == value("chat"));
  CHECK(m.tokenizer.kind == mote::format::TokenizerKind::byte_level_bpe);
  CHECK(m.tokenizer.flags == 0);
  CHECK(m.tensors.size() == static_cast<size_t>(value("tensors")));
  REQUIRE(progress.size() == m.tensors.size());
  CHECK(progress.back() == m.tensors.size() * 1001);

  std::map<std::string, const TensorData *> by_name;
  for (const TensorData &t : m.tensors) by_name[gguf_name(t)] = &t;
  std::map<std::string, std::string> types;
  size_t tensors = 0, pieces = 0;
  std::vector<mote::format::BpeMerge> merges;
  for (const std::string &line : lines) {
    if (line.rfind("tensor ", 0) == 0) {
      const std::string name = mote_test::manifest_value(line, "name");
      const size_t count = std::stoul(mote_test::manifest_value(line, "count"));
      const size_t at = std::stoul(mote_test::manifest_value(line, "at"));
      types[mote_test::manifest_value(line, "type")] = name;
      REQUIRE_MESSAGE(by_name.count(name) == 1, name);
      REQUIRE(at + count <= goldens.size());
      compare_values(name, floats_of(*by_name[name]), goldens.data() + at, count);
      ++tensors;
    } else if (line.rfind("piece ", 0) == 0) {
      const size_t id = std::stoul(mote_test::manifest_value(line, "id"));
      REQUIRE(id < m.tokenizer.pieces.size());
      CHECK_MESSAGE(hex_of(m.tokenizer.pieces[id]) == mote_test::manifest_value(line, "hex"), "token " << id);
      ++pieces;
    } else if (line.rfind("merge ", 0) == 0) {
      merges.push_back({static_cast<uint32_t>(std::stoul(mote_test::manifest_value(line, "left"))),
                        static_cast<uint32_t>(std::stoul(mote_test::manifest_value(line, "right"))),
                        static_cast<uint32_t>(std::stoul(mote_test::manifest_value(line, "result"))), 0});
    }
  }
  CHECK(tensors == m.tensors.size());
  CHECK(pieces == c.vocab_size);
  // Every imported type is covered by the golden file.
  for (const char *type : {"F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q4_K", "Q5_K", "Q6_K"}) {
    CHECK_MESSAGE(types.count(type) == 1, "no tensor of type " << type);
  }
  REQUIRE(merges.size() == static_cast<size_t>(value("merges")));
  REQUIRE(m.tokenizer.merges.size() == merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    CHECK(m.tokenizer.merges[i].left == merges[i].left);
    CHECK(m.tokenizer.merges[i].right == merges[i].right);
    CHECK(m.tokenizer.merges[i].result == merges[i].result);
  }
  // "Ġthe" became " the".
  bool found = false;
  for (const std::string &p : m.tokenizer.pieces) found = found || p == " the";
  CHECK(found);
  CHECK(open_error(m) == "");

  // Stored as f16, the matrices are the goldens rounded to half.
  ModelData h;
  options.dtype = DType::f16;
  options.progress = nullptr;
  REQUIRE(mote::convert::load_gguf(path, options, &h, &error));
  for (const std::string &line : lines) {
    if (line.rfind("tensor ", 0) != 0) continue;
    const std::string name = mote_test::manifest_value(line, "name");
    const size_t count = std::stoul(mote_test::manifest_value(line, "count"));
    const size_t at = std::stoul(mote_test::manifest_value(line, "at"));
    for (const TensorData &t : h.tensors) {
      if (gguf_name(t) != name) continue;
      const DType want = t.n_dims == 1 ? DType::f32 : DType::f16;
      CHECK(t.dtype == want);
      CHECK_MESSAGE(t.bytes == mote::convert::encode_floats(goldens.data() + at, count, want), name);
    }
  }
  CHECK(open_error(h) == "");
}

// ---- Hugging Face safetensors ---------------------------------------------------------------------

namespace {

// The HF name of a converted tensor.
std::string hf_name(const TensorData &t) {
  static const std::map<Role, std::string> kNames = {
      {Role::token_embedding, "model.embed_tokens.weight"},
      {Role::output_norm, "model.norm.weight"},
      {Role::output, "lm_head.weight"},
      {Role::attn_norm, "input_layernorm.weight"},
      {Role::attn_q, "self_attn.q_proj.weight"},
      {Role::attn_k, "self_attn.k_proj.weight"},
      {Role::attn_v, "self_attn.v_proj.weight"},
      {Role::attn_output, "self_attn.o_proj.weight"},
      {Role::ffn_norm, "post_attention_layernorm.weight"},
      {Role::ffn_gate, "mlp.gate_proj.weight"},
      {Role::ffn_up, "mlp.up_proj.weight"},
      {Role::ffn_down, "mlp.down_proj.weight"},
  };
  const std::string &base = kNames.at(t.role);
  return t.layer == mote::format::kNoLayer ? base : "model.layers." + std::to_string(t.layer) + "." + base;
}

std::string slurp(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}
void write_text(const std::string &path, const std::string &text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
}

// A scratch copy of tests/golden/tiny_hf that a test may break.
struct HfCopy {
  std::string dir;
  HfCopy() {
    char pattern[] = "/tmp/mote_test_convert_XXXXXX";
    REQUIRE(mkdtemp(pattern) != nullptr);
    dir = pattern;
    for (const char *f : {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"}) {
      fs::copy_file(mote_test::golden_path(std::string("tiny_hf/") + f), dir + "/" + f);
    }
  }
  ~HfCopy() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string path(const char *f) const { return dir + "/" + f; }
  // Replaces the first occurrence of from with to in file f.
  void edit(const char *f, const std::string &from, const std::string &to) const {
    std::string text = slurp(path(f));
    const size_t at = text.find(from);
    REQUIRE_MESSAGE(at != std::string::npos, from);
    text.replace(at, from.size(), to);
    write_text(path(f), text);
  }
  std::string convert(ModelData *out = nullptr) const {
    ModelData scratch;
    std::string error;
    mote::convert::SafetensorsOptions options;
    options.dtype = DType::f32;
    return mote::convert::load_hf_checkpoint(dir, options, out != nullptr ? out : &scratch, &error) ? "" : error;
  }
};

void expect_hf_error(const HfCopy &copy, const std::string &needle) {
  const std::string error = copy.convert();
  INFO("expected an error containing: " << needle);
  INFO("got: " << (error.empty() ? std::string("success") : error));
  CHECK(error.find(needle) != std::string::npos);
  CHECK(error.find('\n') == std::string::npos);
}

Bytes safetensors_file(const std::string &header, size_t data_bytes) {
  Bytes b;
  put<uint64_t>(b, header.size());
  b.insert(b.end(), header.begin(), header.end());
  b.resize(b.size() + data_bytes, 0);
  return b;
}
std::string safetensors_error(const Bytes &b) {
  std::unique_ptr<uint8_t[]> exact(new uint8_t[b.size() + 1]);
  if (!b.empty()) std::memcpy(exact.get(), b.data(), b.size());
  std::vector<mote::convert::SafetensorsTensor> tensors;
  std::string error;
  return mote::convert::parse_safetensors(exact.get(), b.size(), &tensors, &error) ? "" : error;
}

}  // namespace

TEST_CASE("safetensors golden: tiny_hf against transformers and tokenizers") {
  const std::string dir = mote_test::golden_path("tiny_hf");
  const std::vector<std::string> lines = mote_test::read_lines(dir + "/golden.txt");
  const std::vector<float> goldens = mote_test::read_floats(dir + "/golden.bin");
  REQUIRE(!lines.empty());
  mote::convert::SafetensorsOptions options;
  options.dtype = DType::f32;
  size_t calls = 0;
  options.progress = [&](size_t, size_t) { ++calls; };
  ModelData m;
  std::string error;
  REQUIRE_MESSAGE(mote::convert::load_hf_checkpoint(dir, options, &m, &error), error);
  const mote::format::ModelConfig &c = m.config;
  CHECK(c.dim == 32);
  CHECK(c.n_layers == 2);
  CHECK(c.n_heads == 4);
  CHECK(c.n_kv_heads == 2);
  CHECK(c.head_dim == 8);
  CHECK(c.ffn_dim == 64);
  CHECK(c.vocab_size == 304);
  CHECK(c.max_seq_len == 128);
  CHECK(c.norm_eps == 1e-5f);
  CHECK(c.rope_theta == 20000.0f);
  CHECK(c.rope_layout == mote::format::RopeLayout::split_half);
  CHECK((c.flags & mote::format::kFlagTiedEmbeddings) == 0);
  CHECK(c.bos_id == 1);
  CHECK(c.eos_id == 2);
  CHECK(calls == m.tensors.size());
  const mote::convert::TokenizerData &tok = m.tokenizer;
  CHECK(tok.kind == mote::format::TokenizerKind::byte_level_bpe);
  CHECK(tok.flags == mote::format::kTokNoDigitSplit);  // a plain ByteLevel pre-tokenizer: GPT-2's
  CHECK(tok.chat_template == mote::format::ChatTemplate::chatml);
  CHECK(tok.pieces.size() == 304);
  CHECK(tok.types[0] == mote::kTokenControl);
  CHECK(tok.types[1] == mote::kTokenControl);
  CHECK(tok.types[299] == mote::kTokenUserDefined);
  CHECK(tok.pieces[299] == "<tool>");
  for (uint32_t id = 300; id < 304; ++id) {  // padding rows of the embedding
    CHECK(tok.types[id] == mote::kTokenUnused);
    CHECK(tok.pieces[id].empty());
  }

  std::map<std::string, const TensorData *> by_name;
  for (const TensorData &t : m.tensors) by_name[hf_name(t)] = &t;
  size_t tensors = 0;
  std::vector<mote::format::BpeMerge> merges;
  for (const std::string &line : lines) {
    if (line.rfind("tensor ", 0) == 0) {
      const std::string name = mote_test::manifest_value(line, "name");
      const size_t count = std::stoul(mote_test::manifest_value(line, "count"));
      const size_t at = std::stoul(mote_test::manifest_value(line, "at"));
      REQUIRE_MESSAGE(by_name.count(name) == 1, name);
      REQUIRE(at + count <= goldens.size());
      compare_values(name, floats_of(*by_name[name]), goldens.data() + at, count);
      ++tensors;
    } else if (line.rfind("piece ", 0) == 0) {
      const size_t id = std::stoul(mote_test::manifest_value(line, "id"));
      REQUIRE(id < tok.pieces.size());
      CHECK_MESSAGE(hex_of(tok.pieces[id]) == mote_test::manifest_value(line, "hex"), "token " << id);
    } else if (line.rfind("merge ", 0) == 0) {
      merges.push_back({static_cast<uint32_t>(std::stoul(mote_test::manifest_value(line, "left"))),
                        static_cast<uint32_t>(std::stoul(mote_test::manifest_value(line, "right"))),
                        static_cast<uint32_t>(std::stoul(mote_test::manifest_value(line, "result"))), 0});
    }
  }
  CHECK(tensors == m.tensors.size());
  REQUIRE(tok.merges.size() == merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    CHECK(tok.merges[i].left == merges[i].left);
    CHECK(tok.merges[i].right == merges[i].right);
    CHECK(tok.merges[i].result == merges[i].result);
  }
  CHECK(open_error(m) == "");

  // The same checkpoint named by its config.json or its weights file, stored as f16.
  options.dtype = DType::f16;
  options.progress = nullptr;
  ModelData h;
  REQUIRE_MESSAGE(mote::convert::load_hf_checkpoint(dir + "/config.json", options, &h, &error), error);
  CHECK(h.tensors.size() == m.tensors.size());
  CHECK(h.tensors[1].dtype == DType::f32);  // attn_norm
  CHECK(h.tensors[2].dtype == DType::f16);  // attn_q
  REQUIRE_MESSAGE(mote::convert::load_hf_checkpoint(dir + "/model.safetensors", options, &h, &error), error);
  CHECK(open_error(h) == "");
}

TEST_CASE("safetensors: tied embeddings and malformed checkpoints") {
  {
    HfCopy copy;
    copy.edit("config.json", "\"tie_word_embeddings\": false", "\"tie_word_embeddings\": true");
    ModelData m;
    REQUIRE(copy.convert(&m) == "");
    CHECK((m.config.flags & mote::format::kFlagTiedEmbeddings) != 0);
    CHECK(m.tensors.back().role == Role::output_norm);  // lm_head, a copy, is dropped
    CHECK(open_error(m) == "");
  }
  {
    HfCopy copy;
    copy.edit("config.json", "\"rope_scaling\": null", "\"rope_scaling\": {\"type\": \"linear\", \"factor\": 2.0}");
    expect_hf_error(copy, "config.json rope_scaling is set");
  }
  {
    HfCopy copy;
    copy.edit("config.json", "\"attention_bias\": false", "\"attention_bias\": true");
    expect_hf_error(copy, "config.json attention_bias is true");
  }
  {
    HfCopy copy;
    copy.edit("config.json", "\"silu\"", "\"gelu\"");
    expect_hf_error(copy, "config.json hidden_act 'gelu' is not supported (only silu)");
  }
  {
    HfCopy copy;
    copy.edit("config.json", "\"hidden_size\"", "\"hidden_sizes\"");
    expect_hf_error(copy, "config.json is missing 'hidden_size'");
  }
  {
    HfCopy copy;
    copy.edit("config.json", "\"num_attention_heads\": 4", "\"num_attention_heads\": 3");
    expect_hf_error(copy, "do not divide evenly");
  }
  {
    HfCopy copy;
    copy.edit("config.json", "\"intermediate_size\": 64", "\"intermediate_size\": 65");
    expect_hf_error(copy,
                    "tensor 'model.layers.0.mlp.gate_proj.weight' has shape [64, 32]; config.json needs [65, 32]");
  }
  {
    HfCopy copy;
    copy.edit("config.json", "\"vocab_size\": 304", "\"vocab_size\": 299");
    expect_hf_error(copy, "has id 299, outside the model's vocabulary of 299");
  }
  {
    HfCopy copy;
    write_text(copy.path("config.json"), slurp(copy.path("config.json")).substr(0, 100));
    expect_hf_error(copy, "config.json': JSON error at byte");
  }
  {
    HfCopy copy;
    fs::remove(copy.path("tokenizer.json"));
    expect_hf_error(copy, "has no tokenizer.json");
  }
  {
    HfCopy copy;
    copy.edit("tokenizer.json", "\"ByteLevel\"", "\"Metaspace\"");
    expect_hf_error(copy, "no ByteLevel pre-tokenizer");
  }
  {
    HfCopy copy;
    copy.edit("tokenizer.json", "\"type\": \"BPE\"", "\"type\": \"Unigram\"");
    expect_hf_error(copy, "model type 'Unigram' is not supported");
  }
  {
    HfCopy copy;
    fs::remove(copy.path("model.safetensors"));
    expect_hf_error(copy, "has neither model.safetensors nor model.safetensors.index.json");
  }
  {
    HfCopy copy;
    std::string weights = slurp(copy.path("model.safetensors"));
    write_text(copy.path("model.safetensors"), weights.substr(0, weights.size() - 10));
    expect_hf_error(copy, "runs past the end of the file");
  }
  {
    HfCopy copy;
    std::string weights = slurp(copy.path("model.safetensors"));
    const uint64_t huge = 1ull << 40;
    std::memcpy(&weights[0], &huge, 8);
    write_text(copy.path("model.safetensors"), weights);
    expect_hf_error(copy, "safetensors header length 1099511627776 runs past the end of the file");
  }
  {
    HfCopy copy;
    copy.edit("model.safetensors", "model.norm.weight", "model.norm.weigh_");
    expect_hf_error(copy, "tensor 'model.norm.weigh_' is not part of a Llama model");
  }
  // Sharded: the same weights as one shard named by an index.
  {
    HfCopy copy;
    fs::rename(copy.path("model.safetensors"), copy.path("model-00001-of-00001.safetensors"));
    write_text(copy.path("model.safetensors.index.json"),
               "{\"metadata\": {}, \"weight_map\": {\"model.norm.weight\": \"model-00001-of-00001.safetensors\"}}");
    CHECK(copy.convert() == "");
    write_text(copy.path("model.safetensors.index.json"), "{\"weight_map\": {\"a\": \"../x.safetensors\"}}");
    expect_hf_error(copy, "maps 'a' to an invalid file name");
  }
}

TEST_CASE("safetensors: header validation") {
  CHECK(safetensors_error(Bytes{1, 2, 3}).find("shorter than its 8-byte header length") != std::string::npos);
  CHECK(safetensors_error(
            safetensors_file("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}}", 8)) == "");
  CHECK(
      safetensors_error(safetensors_file("{\"a\": {\"dtype\": \"I64\", \"shape\": [1], \"data_offsets\": [0, 8]}}", 8))
          .find("dtype 'I64' (only F32, F16 and BF16 are supported)") != std::string::npos);
  CHECK(
      safetensors_error(safetensors_file("{\"a\": {\"dtype\": \"F32\", \"shape\": [3], \"data_offsets\": [0, 8]}}", 8))
          .find("hold 8 bytes but its shape and dtype need 12") != std::string::npos);
  CHECK(
      safetensors_error(safetensors_file("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [8, 16]}}", 8))
          .find("runs past the end of the file") != std::string::npos);
  CHECK(
      safetensors_error(safetensors_file("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [8, 0]}}", 8))
          .find("0 <= begin <= end") != std::string::npos);
  CHECK(safetensors_error(safetensors_file("{\"a\": {\"dtype\": \"F16\", \"shape\": [4294967296, 4294967296, 65536], "
                                           "\"data_offsets\": [0, 8]}}",
                                           8))
            .find("product of its shape overflows") != std::string::npos);
  CHECK(safetensors_error(safetensors_file("{\"a\": {\"dtype\": \"F32\"}}", 0)).find("lacks") != std::string::npos);
  CHECK(safetensors_error(safetensors_file("[1, 2]", 0)).find("not a JSON object") != std::string::npos);
  CHECK(safetensors_error(safetensors_file("{\"a\": 1,}", 0)).find("JSON error at byte") != std::string::npos);
}

TEST_CASE("json: the parser") {
  using mote::convert::JsonValue;
  JsonValue v;
  std::string error;
  const std::string text =
      " {\"a\": [1, -2.5e3, true, false, null], \"s\": \"x\\n\\u00e9\\ud83d\\ude00\\\"\\\\\\/\", \"o\": {}} ";
  REQUIRE(mote::convert::parse_json(text.data(), text.size(), &v, &error));
  CHECK(v.get("a")->items.size() == 5);
  CHECK(v.get("a")->items[0].integral);
  CHECK(v.get("a")->items[0].integer == 1);
  CHECK(v.get("a")->items[1].number == -2500.0);
  CHECK(!v.get("a")->items[1].integral);
  CHECK(v.get("a")->items[2].boolean);
  CHECK(v.get("a")->items[4].is_null());
  CHECK(v.get("s")->text == "x\n\xC3\xA9\xF0\x9F\x98\x80\"\\/");
  CHECK(v.get("o")->members.empty());
  CHECK(v.get("missing") == nullptr);
  const struct {
    const char *text;
    const char *needle;
  } bad[] = {
      {"", "unexpected end of input"},
      {"{\"a\": 1, \"a\": 2}", "duplicate key 'a'"},
      {"\"\\ud800\"", "lone high surrogate"},
      {"\"\\udc00\"", "lone low surrogate"},
      {"\"a\nb\"", "raw control character"},
      {"[1, 2", "unterminated array"},
      {"{\"a\" 1}", "expected ':'"},
      {"01", "leading zero"},
      {"1.", "bad number"},
      {"[1] x", "trailing characters"},
      {"\"\\q\"", "bad escape"},
      {"tru", "unexpected character"},
      {"\"abc", "unterminated string"},
  };
  for (const auto &b : bad) {
    INFO(b.text);
    CHECK(!mote::convert::parse_json(b.text, std::strlen(b.text), &v, &error));
    CHECK(error.find(b.needle) != std::string::npos);
  }
  const std::string deep(100, '[');
  CHECK(!mote::convert::parse_json(deep.data(), deep.size(), &v, &error));
  CHECK(error.find("nesting deeper than 64") != std::string::npos);
  // Random corruption of a real header never crashes.
  std::mt19937 rng(99);
  const std::string tokenizer = slurp(mote_test::golden_path("tiny_hf/tokenizer.json"));
  for (int it = 0; it < 200; ++it) {
    std::string t = tokenizer;
    for (int k = 0; k < 3; ++k) t[rng() % t.size()] = static_cast<char>(rng());
    if (rng() % 4 == 0) t.resize(rng() % t.size());
    std::unique_ptr<char[]> exact(new char[t.size() + 1]);
    if (!t.empty()) std::memcpy(exact.get(), t.data(), t.size());
    mote::convert::parse_json(exact.get(), t.size(), &v, &error);
  }
}

// ---- the CLI -----------------------------------------------------------------------------------------

namespace {

struct CliResult {
  int code = -1;
  std::string err;
};

CliResult run_cli(const std::string &args) {
  char pattern[] = "/tmp/mote_test_convert_err_XXXXXX";
  const int fd = mkstemp(pattern);
  REQUIRE(fd >= 0);
  close(fd);
  const std::string command = std::string(MOTE_CLI_EMULATOR) + " '" + MOTE_CLI_PATH + "' " + args + " 2>" + pattern;
  const int status = std::system(command.c_str());
  CliResult r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = slurp(pattern);
  std::remove(pattern);
  return r;
}

}  // namespace

TEST_CASE("cli: mote convert picks the importer by content") {
  if (std::string(MOTE_CLI_PATH).empty() || !mote_test::file_exists(MOTE_CLI_PATH)) {
    MOTE_SKIP("the mote CLI is not part of this build (or not built yet)");
    return;
  }
  char pattern[] = "/tmp/mote_test_convert_cli_XXXXXX";
  REQUIRE(mkdtemp(pattern) != nullptr);
  const std::string dir = pattern, out = dir + "/out.mote";
  const std::string gguf = "'" + mote_test::golden_path("tiny_llama.gguf") + "'";
  CliResult r = run_cli("convert " + gguf + " -o '" + out + "'");
  CHECK(r.code == 0);
  CHECK(r.err.find("wrote") != std::string::npos);
  // GGUF's default keeps each tensor's blocks, 8 rows interleaved where the rows allow it.
  CHECK(r.err.find("tensors: 10 f32, 9 f16, 1 q8_0, 1 q4_1, 3 q8_0x8, 3 q4_0x8, 3 q4_1x8)") != std::string::npos);
  CHECK(r.err.find("converting tensors") == std::string::npos);  // stderr is not a terminal
  CHECK(mote_test::file_exists(out));
  r = run_cli("convert '" + mote_test::golden_path("tiny_hf") + "' -o '" + out + "' --dtype f32");
  CHECK(r.code == 0);
  CHECK(r.err.find("f32") != std::string::npos);
  r = run_cli("convert " + gguf + " -o '" + out + "' --dtype q4_0");
  CHECK(r.code == 0);
  // Norms stay f32; the embedding and the classifier stay 8-bit (q8_0: their rows are not 8k).
  CHECK(r.err.find("tensors: 7 f32, 2 q8_0, 21 q4_0x8)") != std::string::npos);
  r = run_cli("convert " + gguf + " -o '" + out + "' --dtype q4_0 --layout gguf");
  CHECK(r.code == 0);
  CHECK(r.err.find("tensors: 7 f32, 2 q8_0, 21 q4_0)") != std::string::npos);
  r = run_cli("convert " + gguf + " -o '" + out + "' --layout ggml");
  CHECK(r.code == 2);
  CHECK(r.err.find("--layout must be interleaved or gguf") != std::string::npos);
  r = run_cli("convert " + gguf + " -o '" + out + "' --dtype q5_0");
  CHECK(r.code == 2);
  CHECK(r.err.find("--dtype must be f32, f16, q8_0, q4_0 or q4_1") != std::string::npos);
  // Rows that are not whole 32-element blocks fall back to f16: tiny_odd's dim is 40.
  r = run_cli("convert '" + mote_test::golden_path("tiny_odd.bin") + "' --tokenizer '" +
              mote_test::golden_path("tiny_tok67.bin") + "' -o '" + out + "' --dtype q8_0");
  CHECK(r.code == 0);
  CHECK(r.err.find("20 tensors: 5 f32, 15 f16)") != std::string::npos);
  r = run_cli("convert " + gguf + " -o '" + out + "' --tokenizer x.bin");
  CHECK(r.code == 2);
  CHECK(r.err.find("carries its own tokenizer") != std::string::npos);
  r = run_cli("convert " + gguf + " -o '" + out + "' --rope split");
  CHECK(r.code == 2);
  // A corrupt GGUF: exit 1, one line.
  Bytes bad = valid_gguf().build();
  bad.resize(bad.size() - 1);
  {
    std::ofstream f(dir + "/bad.gguf", std::ios::binary);
    f.write(reinterpret_cast<const char *>(bad.data()), static_cast<std::streamsize>(bad.size()));
  }
  r = run_cli("convert '" + dir + "/bad.gguf' -o '" + out + "'");
  CHECK(r.code == 1);
  CHECK(r.err.find("runs past the end of the file") != std::string::npos);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  std::error_code ec;
  fs::remove_all(dir, ec);
}

// ---- the real model ----------------------------------------------------------------------------------

TEST_CASE("gguf real: SmolLM2-135M-Instruct Q4_1") {
  const std::string path = mote_test::smollm2_gguf();
  if (path.empty()) return;
  mote::convert::GgufOptions options;
  options.dtype = DType::f16;
  ModelData m;
  std::string error;
  REQUIRE_MESSAGE(mote::convert::load_gguf(path, options, &m, &error), error);
  const mote::format::ModelConfig &c = m.config;
  CHECK(c.n_layers == 30);
  CHECK(c.dim == 576);
  CHECK(c.ffn_dim == 1536);
  CHECK(c.n_heads == 9);
  CHECK(c.n_kv_heads == 3);
  CHECK(c.head_dim == 64);
  CHECK(c.vocab_size == 49152);
  CHECK(c.rope_theta == 100000.0f);
  CHECK((c.flags & mote::format::kFlagTiedEmbeddings) != 0);
  CHECK(c.bos_id == 1);
  CHECK(c.eos_id == 2);
  CHECK(m.tensors.size() == 272);
  CHECK(m.tokenizer.kind == mote::format::TokenizerKind::byte_level_bpe);
  CHECK(m.tokenizer.merges.size() == 48900);
  CHECK(m.tokenizer.chat_template == mote::format::ChatTemplate::chatml);
  CHECK(m.tokenizer.pieces[1] == "<|im_start|>");
  CHECK(m.tokenizer.types[1] == mote::kTokenControl);
  size_t the = 0;
  for (const std::string &p : m.tokenizer.pieces) the += p == " the";
  CHECK(the == 1);
  CHECK(open_error(m) == "");
}

// ---- convert ok => open ok (issue: hardening) -------------------------------------------------

TEST_CASE(
    "property: a randomized extreme GGUF either converts to a file that opens and runs, or is refused in one line") {
  std::mt19937 rng(20261201);
  const double eps_values[] = {1e-50, 1e-46, 1e-30, 1e-12, 1e-5, 0.5, 0.999, 1.0, 2.0, 1e300};
  const double theta_values[] = {0.5, 1.0, 1.0001, 100.0, 1e6, 3e38, 1e39};
  const uint64_t context_values[] = {1, 2, 64, 1u << 20, (1u << 20) + 1, 1ull << 40};
  const uint32_t head_values[] = {1, 2, 4, 8, 16, 32};  // head_dim 32 .. 1 (odd at 1)
  int converted = 0, refused = 0;
  for (int round = 0; round < 60; ++round) {
    Gguf g = valid_gguf();
    const double eps = eps_values[rng() % std::size(eps_values)];
    const double theta = theta_values[rng() % std::size(theta_values)];
    const uint64_t context = context_values[rng() % std::size(context_values)];
    const uint32_t heads = head_values[rng() % std::size(head_values)];
    Bytes b;
    put(b, eps);
    g.set("llama.attention.layer_norm_rms_epsilon", kF64, b);
    b.clear();
    put(b, theta);
    g.set("llama.rope.freq_base", kF64, b);
    b.clear();
    put(b, context);
    g.set("llama.context_length", kU64, b);
    // Multi-head attention with `heads` heads: k and v become (dim, dim).
    g.set_u32("llama.attention.head_count", heads);
    g.set_u32("llama.attention.head_count_kv", heads);
    for (const char *name : {"blk.0.attn_k.weight", "blk.0.attn_v.weight"}) {
      Tensor *t = g.tensor(name);
      t->dims = {kDim, kDim};
      t->type = kGgmlF32;
      t->data = f32_bytes(std::vector<float>(kDim * kDim, 0.01f));
    }
    ModelData model;
    const std::string error = convert_gguf(g.build(), &model);
    std::string refusal = error;
    if (error.empty()) {
      const Bytes bytes = mote::convert::serialize(model);
      if (mote::convert::check_opens(bytes, &refusal)) {
        // Convert ok: the file opens, and a session runs a token.
        const Aligned file(bytes);
        mote_model m{};
        REQUIRE(mote_model_open(file.data.get(), file.size, &m, nullptr, 0) == MOTE_OK);
        auto s = mote_test::open_session(m, mote_session_options_default());
        const float *logits = nullptr;
        CHECK(mote_decode(&s->session, 1, &logits) == MOTE_OK);
        ++converted;
        continue;
      }
    }
    INFO("eps " << eps << ", theta " << theta << ", context " << context << ", heads " << heads);
    CHECK(!refusal.empty());
    CHECK(refusal.find('\n') == std::string::npos);
    ++refused;
  }
  MESSAGE(converted << " converted and opened, " << refused << " refused");
  CHECK(converted > 0);
  CHECK(refused > 0);
}

// Fixtures shared by the converter tests (test_convert_*.cpp): a GGUF writer and the valid tiny
// llama GGUF built with it, conversion and opening helpers, and comparisons against goldens.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/fp16.hpp"
#include "format/format.hpp"
#include "gguf/gguf.hpp"
#include "mote/mote.h"
#include "mote_writer.hpp"
#include "quant/dequant.hpp"
#include "test_support.hpp"

namespace mote_convert_test {

using mote::convert::GgufFile;
using mote::convert::ModelData;
using mote::convert::TensorData;
using mote::format::DType;
using mote::format::Role;
using Bytes = std::vector<uint8_t>;

// ---- a GGUF writer ---------------------------------------------------------------------------

enum : uint32_t { kU8 = 0, kI8, kU16, kI16, kU32, kI32, kF32, kBool, kString, kArray, kU64, kI64, kF64 };
enum : uint32_t { kGgmlF32 = 0, kGgmlF16 = 1, kGgmlQ4_0 = 2, kGgmlQ4_1 = 3, kGgmlQ5_0 = 6, kGgmlQ8_0 = 8, kGgmlQ8_1 = 9 };

template <typename T>
void put(Bytes &out, T value) {
  const size_t at = out.size();
  out.resize(at + sizeof value);
  std::memcpy(out.data() + at, &value, sizeof value);
}
inline void put_string(Bytes &out, const std::string &s) {
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
inline std::string gpt2_char(int byte) {
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

inline Bytes f32_bytes(const std::vector<float> &v) {
  Bytes b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// Q8_0 blocks of the given floats (scale = max|x| / 127).
inline Bytes q8_0_bytes(const std::vector<float> &v) {
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
inline Gguf valid_gguf() {
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
inline std::string convert_gguf(const Bytes &bytes, ModelData *out = nullptr, DType dtype = DType::f32) {
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
inline std::string open_error(const ModelData &model) {
  const Aligned file(mote::convert::serialize(model));
  mote_model m{};
  char message[256] = "";
  return mote_model_open(file.data.get(), file.size, &m, message, sizeof message) == MOTE_OK ? "" : message;
}

inline std::vector<float> floats_of(const TensorData &t) {
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

// The GGUF name of a converted matrix ("blk.0.attn_q.weight").
inline std::string gguf_name(const TensorData &t) {
  mote::format::TensorEntry e{};
  e.role = static_cast<uint32_t>(t.role);
  e.layer = t.layer;
  char name[64];
  mote::format::tensor_name(e, name, sizeof name);
  return std::string(name) + ".weight";
}

inline std::string hex_of(const std::string &s) {
  static const char *const kHex = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

// Compares values with goldens: exact, or within 1e-6.
inline void compare_values(const std::string &name, const std::vector<float> &got, const float *want, size_t n) {
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

inline std::string slurp(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// The extreme-value property's check of a converted model: "" when its bytes open by the
// reader's rules and a session decodes a token, otherwise the reader's refusal.
inline std::string open_and_decode(const ModelData &model) {
  const Bytes bytes = mote::convert::serialize(model);
  std::string refusal;
  if (!mote::convert::check_opens(bytes, &refusal)) return refusal;
  const Aligned file(bytes);
  mote_model m{};
  REQUIRE(mote_model_open(file.data.get(), file.size, &m, nullptr, 0) == MOTE_OK);
  auto s = mote_test::open_session(m, mote_session_options_default());
  const float *logits = nullptr;
  CHECK(mote_decode(&s->session, 1, &logits) == MOTE_OK);
  return "";
}

// The extreme-value property's tally: each case either converts to a model that opens and
// decodes, or is refused in one line; both outcomes must occur over the run.
struct ExtremeValueTally {
  int converted = 0, refused = 0;

  // convert_error: the converter's ("" when it converted model); the_case names the inputs.
  void record(const std::string &convert_error, const ModelData &model, const std::string &the_case) {
    const std::string refusal = convert_error.empty() ? open_and_decode(model) : convert_error;
    if (refusal.empty()) {
      ++converted;
      return;
    }
    INFO(the_case);
    CHECK(!refusal.empty());
    CHECK(refusal.find('\n') == std::string::npos);
    ++refused;
  }

  void check() const {
    MESSAGE(converted << " converted and opened, " << refused << " refused");
    CHECK(converted > 0);
    CHECK(refused > 0);
  }
};

}  // namespace mote_convert_test

#include "gguf.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <unordered_set>

#include "dequant.hpp"
#include "file_map.hpp"
#include "text/tokenizer.hpp"

namespace mote::convert {
namespace {

using format::DType;
using format::Role;

constexpr int kMaxArrayDepth = 8;  // arrays of arrays, nested at most this deep
constexpr uint64_t kMaxAlignment = 1u << 20;
constexpr uint64_t kMaxElements = 1ull << 56;  // per tensor; keeps byte counts far from overflow

std::string num(uint64_t v) { return std::to_string(v); }

// ---- the byte reader -------------------------------------------------------------------------

// Reads little-endian values from [0, size), never past the end. `context` names what is being
// read, so a truncation says where ("in tensor info 3 ('blk.0.attn_q.weight')").
struct Reader {
  const uint8_t *bytes;
  size_t size;
  size_t pos = 0;
  std::string context;
  std::string *error;

  bool need(uint64_t n) {
    if (n <= size - pos) return true;
    *error = "GGUF file is truncated in " + context + ": " + num(n) + " bytes needed at offset " + num(pos) +
             ", the file has " + num(size) + " bytes";
    return false;
  }
  template <typename T>
  bool read(T *out) {
    if (!need(sizeof(T))) return false;
    std::memcpy(out, bytes + pos, sizeof(T));
    pos += sizeof(T);
    return true;
  }
  bool skip(uint64_t n) {
    if (!need(n)) return false;
    pos += static_cast<size_t>(n);
    return true;
  }
  bool string(std::string *out) {
    uint64_t n = 0;
    if (!read(&n) || !need(n)) return false;
    if (out != nullptr) out->assign(reinterpret_cast<const char *>(bytes + pos), static_cast<size_t>(n));
    pos += static_cast<size_t>(n);
    return true;
  }
  size_t remaining() const { return size - pos; }
};

// Bytes one element of a type takes at least (its exact size for fixed-size types); 0 for an
// unknown type.
uint64_t min_element_bytes(uint32_t type) {
  switch (static_cast<GgufType>(type)) {
    case GgufType::u8:
    case GgufType::i8:
    case GgufType::boolean:
      return 1;
    case GgufType::u16:
    case GgufType::i16:
      return 2;
    case GgufType::u32:
    case GgufType::i32:
    case GgufType::f32:
      return 4;
    case GgufType::u64:
    case GgufType::i64:
    case GgufType::f64:
      return 8;
    case GgufType::string:
      return 8;  // the length
    case GgufType::array:
      return 12;  // element type and count
  }
  return 0;
}
bool fixed_size(uint32_t type) { return type != 8 && type != 9; }

bool read_value(Reader &r, uint32_t type, const std::string &key, int depth, GgufValue *out);

// Validates an array value (its elements are skipped, not decoded) and records where it is.
bool read_array(Reader &r, const std::string &key, int depth, GgufValue *out) {
  uint32_t element_type = 0;
  uint64_t count = 0;
  if (!r.read(&element_type)) return false;
  const uint64_t element_bytes = min_element_bytes(element_type);
  if (element_bytes == 0) {
    *r.error = "GGUF metadata '" + printable(key) + "' is an array of unknown value type " + num(element_type);
    return false;
  }
  if (!r.read(&count)) return false;
  if (count > r.remaining() / element_bytes) {
    *r.error = "GGUF metadata '" + printable(key) + "' is an array of " + num(count) +
               " elements, more than the rest of the file (" + num(r.remaining()) + " bytes) can hold";
    return false;
  }
  if (element_type == static_cast<uint32_t>(GgufType::array) && depth + 1 >= kMaxArrayDepth) {
    *r.error = "GGUF metadata '" + printable(key) + "' nests arrays deeper than " + num(kMaxArrayDepth) + " levels";
    return false;
  }
  if (out != nullptr) {
    out->array_type = static_cast<GgufType>(element_type);
    out->array_count = count;
    out->array_offset = r.pos;
  }
  if (fixed_size(element_type)) return r.skip(count * element_bytes);
  for (uint64_t i = 0; i < count; ++i) {
    if (!read_value(r, element_type, key, depth + 1, nullptr)) return false;
  }
  return true;
}

// Reads (or, with out null, skips) one value of a known type.
bool read_value(Reader &r, uint32_t type, const std::string &key, int depth, GgufValue *out) {
  GgufValue scratch;
  GgufValue &v = out != nullptr ? *out : scratch;
  v.type = static_cast<GgufType>(type);
  switch (v.type) {
    case GgufType::u8: {
      uint8_t x;
      if (!r.read(&x)) return false;
      v.u = x;
      return true;
    }
    case GgufType::i8: {
      int8_t x;
      if (!r.read(&x)) return false;
      v.i = x;
      return true;
    }
    case GgufType::u16: {
      uint16_t x;
      if (!r.read(&x)) return false;
      v.u = x;
      return true;
    }
    case GgufType::i16: {
      int16_t x;
      if (!r.read(&x)) return false;
      v.i = x;
      return true;
    }
    case GgufType::u32: {
      uint32_t x;
      if (!r.read(&x)) return false;
      v.u = x;
      return true;
    }
    case GgufType::i32: {
      int32_t x;
      if (!r.read(&x)) return false;
      v.i = x;
      return true;
    }
    case GgufType::u64:
      return r.read(&v.u);
    case GgufType::i64:
      return r.read(&v.i);
    case GgufType::f32: {
      float x;
      if (!r.read(&x)) return false;
      v.f = x;
      return true;
    }
    case GgufType::f64:
      return r.read(&v.f);
    case GgufType::boolean: {
      uint8_t x;
      if (!r.read(&x)) return false;
      if (x > 1 && out != nullptr) {
        *r.error = "GGUF metadata '" + printable(key) + "' is a bool with value " + num(x) + " (not 0 or 1)";
        return false;
      }
      v.u = x;
      return true;
    }
    case GgufType::string:
      return r.string(out != nullptr ? &v.s : nullptr);
    case GgufType::array:
      return read_array(r, key, depth, out);
  }
  *r.error = "GGUF metadata '" + printable(key) + "' has unknown value type " + num(type);
  return false;
}

bool is_power_of_two(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

}  // namespace

const char *gguf_type_name(GgufType type) {
  static const char *const kNames[] = {"uint8", "int8",   "uint16", "int16",  "uint32", "int32",  "float32",
                                       "bool",  "string", "array",  "uint64", "int64",  "float64"};
  const uint32_t t = static_cast<uint32_t>(type);
  return t < sizeof kNames / sizeof kNames[0] ? kNames[t] : "unknown";
}

bool GgufValue::is_integer() const {
  switch (type) {
    case GgufType::u8:
    case GgufType::i8:
    case GgufType::u16:
    case GgufType::i16:
    case GgufType::u32:
    case GgufType::i32:
    case GgufType::u64:
    case GgufType::i64:
      return true;
    default:
      return false;
  }
}

std::string printable(const std::string &text, size_t max) {
  std::string out;
  for (size_t i = 0; i < text.size() && i < max; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7F || c == '\\') {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (text.size() > max) out += "...";
  return out;
}

const GgufValue *GgufFile::find(const std::string &key) const {
  const auto it = values.find(key);
  return it == values.end() ? nullptr : &it->second;
}

bool GgufFile::strings(const std::string &key, std::vector<std::string> *out, std::string *error) const {
  const GgufValue *v = find(key);
  if (v == nullptr || v->type != GgufType::array || v->array_type != GgufType::string) {
    *error = "GGUF key '" + key + "' is " + (v == nullptr ? "missing" : "not an array of strings");
    return false;
  }
  out->clear();
  out->reserve(static_cast<size_t>(v->array_count));
  size_t at = v->array_offset;  // validated by parse_gguf: every string lies inside the file
  for (uint64_t i = 0; i < v->array_count; ++i) {
    uint64_t n = 0;
    std::memcpy(&n, bytes + at, 8);
    out->emplace_back(reinterpret_cast<const char *>(bytes + at + 8), static_cast<size_t>(n));
    at += 8 + static_cast<size_t>(n);
  }
  return true;
}

bool GgufFile::floats(const std::string &key, std::vector<float> *out, std::string *error) const {
  const GgufValue *v = find(key);
  if (v == nullptr || v->type != GgufType::array ||
      (v->array_type != GgufType::f32 && v->array_type != GgufType::f64)) {
    *error = "GGUF key '" + key + "' is " + (v == nullptr ? "missing" : "not an array of floats");
    return false;
  }
  out->resize(static_cast<size_t>(v->array_count));
  const uint8_t *p = bytes + v->array_offset;
  for (size_t i = 0; i < out->size(); ++i) {
    if (v->array_type == GgufType::f32) {
      std::memcpy(&(*out)[i], p + 4 * i, 4);
    } else {
      double d;
      std::memcpy(&d, p + 8 * i, 8);
      (*out)[i] = static_cast<float>(d);
    }
  }
  return true;
}

bool GgufFile::integers(const std::string &key, std::vector<int64_t> *out, std::string *error) const {
  const GgufValue *v = find(key);
  const uint64_t size = v == nullptr ? 0 : min_element_bytes(static_cast<uint32_t>(v->array_type));
  GgufValue probe;
  probe.type = v == nullptr ? GgufType::string : v->array_type;
  if (v == nullptr || v->type != GgufType::array || !probe.is_integer()) {
    *error = "GGUF key '" + key + "' is " + (v == nullptr ? "missing" : "not an array of integers");
    return false;
  }
  const bool is_signed = v->array_type == GgufType::i8 || v->array_type == GgufType::i16 ||
                         v->array_type == GgufType::i32 || v->array_type == GgufType::i64;
  out->resize(static_cast<size_t>(v->array_count));
  const uint8_t *p = bytes + v->array_offset;
  for (size_t i = 0; i < out->size(); ++i) {
    uint64_t raw = 0;
    std::memcpy(&raw, p + size * i, static_cast<size_t>(size));                            // little-endian host
    if (is_signed && size < 8 && (raw >> (8 * size - 1)) & 1) raw |= ~0ull << (8 * size);  // sign-extend
    (*out)[i] = static_cast<int64_t>(raw);
  }
  return true;
}

bool parse_gguf(const uint8_t *bytes, size_t n, GgufFile *out, std::string *error) {
  GgufFile &f = *out;
  f = GgufFile{};
  f.bytes = bytes;
  f.size = n;
  Reader r{bytes, n, 0, "the header", error};
  if (n < 4 || std::memcmp(bytes, "GGUF", 4) != 0) {
    *error = "not a GGUF file: bad magic (the file does not start with 'GGUF')";
    return false;
  }
  r.pos = 4;
  uint64_t tensor_count = 0, kv_count = 0;
  if (!r.read(&f.version)) return false;
  if (f.version != 2 && f.version != 3) {
    *error = "GGUF version " + num(f.version) + " is not supported (only versions 2 and 3)";
    return false;
  }
  if (!r.read(&tensor_count) || !r.read(&kv_count)) return false;
  // The smallest key takes 13 bytes (length, type, one byte) and the smallest tensor info 32
  // (name length, n_dims, one dim, type, offset): bound the counts before any allocation.
  if (kv_count > r.remaining() / 13) {
    *error =
        "GGUF header claims " + num(kv_count) + " metadata keys, more than the file (" + num(n) + " bytes) can hold";
    return false;
  }
  if (tensor_count > r.remaining() / 32) {
    *error = "GGUF header claims " + num(tensor_count) + " tensors, more than the file (" + num(n) + " bytes) can hold";
    return false;
  }

  for (uint64_t i = 0; i < kv_count; ++i) {
    std::string key;
    r.context = "metadata key " + num(i);
    if (!r.string(&key)) return false;
    r.context = "metadata '" + printable(key) + "'";
    if (f.values.count(key) != 0) {
      *error = "GGUF metadata key '" + printable(key) + "' appears twice";
      return false;
    }
    uint32_t type = 0;
    if (!r.read(&type)) return false;
    if (min_element_bytes(type) == 0) {
      *error = "GGUF metadata '" + printable(key) + "' has unknown value type " + num(type);
      return false;
    }
    GgufValue value;
    if (!read_value(r, type, key, 0, &value)) return false;
    f.keys.push_back(key);
    f.values.emplace(std::move(key), std::move(value));
  }

  if (const GgufValue *a = f.find("general.alignment")) {
    if (!a->is_integer()) {
      *error = std::string("GGUF general.alignment has type ") + gguf_type_name(a->type) + ", expected an integer";
      return false;
    }
    const bool negative =
        (a->type == GgufType::i8 || a->type == GgufType::i16 || a->type == GgufType::i32 || a->type == GgufType::i64) &&
        a->i < 0;
    const uint64_t alignment = a->u != 0 ? a->u : static_cast<uint64_t>(a->i);
    if (negative || !is_power_of_two(alignment) || alignment > kMaxAlignment) {
      *error = "GGUF general.alignment " + (negative ? std::to_string(a->i) : num(alignment)) +
               " is not a power of two in [1, " + num(kMaxAlignment) + "]";
      return false;
    }
    f.alignment = alignment;
  }

  f.tensors.reserve(static_cast<size_t>(tensor_count));
  for (uint64_t i = 0; i < tensor_count; ++i) {
    GgufTensorInfo t;
    r.context = "tensor info " + num(i);
    if (!r.string(&t.name)) return false;
    const std::string name = "GGUF tensor '" + printable(t.name) + "'";
    r.context = "tensor info " + num(i) + " ('" + printable(t.name) + "')";
    if (f.tensor_index.count(t.name) != 0) {
      *error = name + " appears twice";
      return false;
    }
    if (!r.read(&t.n_dims)) return false;
    if (t.n_dims < 1 || t.n_dims > 4) {
      *error = name + " has " + num(t.n_dims) + " dimensions (1 to 4 allowed)";
      return false;
    }
    t.n_elements = 1;
    for (uint32_t d = 0; d < t.n_dims; ++d) {
      if (!r.read(&t.dims[d])) return false;
      if (t.dims[d] == 0) {
        *error = name + " has a dimension of size 0";
        return false;
      }
      if (t.dims[d] > kMaxElements / t.n_elements) {
        *error = name + " has too many elements (the product of its dimensions overflows)";
        return false;
      }
      t.n_elements *= t.dims[d];
    }
    if (!r.read(&t.type) || !r.read(&t.offset)) return false;
    const GgmlTypeInfo *info = ggml_type_info(t.type);
    if (info == nullptr) {
      *error = name + " has unknown ggml type " + num(t.type);
      return false;
    }
    if (t.dims[0] % info->block_elements != 0) {
      *error = name + " rows of " + num(t.dims[0]) + " elements are not a whole number of " + info->name + " blocks (" +
               num(info->block_elements) + " elements)";
      return false;
    }
    if (t.offset % f.alignment != 0) {
      *error = name + " offset " + num(t.offset) + " is not a multiple of the alignment (" + num(f.alignment) + ")";
      return false;
    }
    t.n_bytes = t.n_elements / info->block_elements * info->block_bytes;  // < 2^56 * 292 / 1: fits
    f.tensor_index.emplace(t.name, f.tensors.size());
    f.tensors.push_back(std::move(t));
  }

  // The data section starts at the next multiple of the alignment after the tensor infos.
  f.data_offset = (static_cast<uint64_t>(r.pos) + f.alignment - 1) / f.alignment * f.alignment;
  if (!f.tensors.empty() && f.data_offset > n) {
    *error =
        "GGUF data section starts at byte " + num(f.data_offset) + ", past the end of the file (" + num(n) + " bytes)";
    return false;
  }
  for (GgufTensorInfo &t : f.tensors) {
    const uint64_t room = n - f.data_offset;
    if (t.offset > room || t.n_bytes > room - t.offset) {
      *error = "GGUF tensor '" + printable(t.name) + "' data [" + num(f.data_offset + t.offset) + ", +" +
               num(t.n_bytes) + ") runs past the end of the file (" + num(n) + " bytes)";
      return false;
    }
    t.offset += f.data_offset;
  }
  return true;
}

// ---- byte-level vocabularies ---------------------------------------------------------------------

namespace {

// Code point -> byte for GPT-2's byte-to-unicode table (-1 where no byte maps there).
struct Gpt2Table {
  int16_t byte_of[324];
  Gpt2Table() {
    for (int16_t &b : byte_of) b = -1;
    int extra = 0;
    for (int b = 0; b < 256; ++b) {
      const bool self = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      byte_of[self ? b : 256 + extra++] = static_cast<int16_t>(b);
    }
  }
};

// Next code point of s at *at (strict UTF-8); -1 when malformed.
int32_t next_code_point(const std::string &s, size_t *at) {
  const unsigned char c = static_cast<unsigned char>(s[*at]);
  int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
  if (n == 0 || s.size() - *at < static_cast<size_t>(n)) return -1;
  int32_t cp = n == 1 ? c : c & (0x7F >> n);
  for (int k = 1; k < n; ++k) {
    const unsigned char cc = static_cast<unsigned char>(s[*at + k]);
    if ((cc & 0xC0) != 0x80) return -1;
    cp = (cp << 6) | (cc & 0x3F);
  }
  static const int32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return -1;
  *at += static_cast<size_t>(n);
  return cp;
}

}  // namespace

bool gpt2_unicode_to_bytes(const std::string &mapped, std::string *raw) {
  static const Gpt2Table table;
  raw->clear();
  size_t at = 0;
  while (at < mapped.size()) {
    const int32_t cp = next_code_point(mapped, &at);
    if (cp < 0 || cp >= 324 || table.byte_of[cp] < 0) return false;
    raw->push_back(static_cast<char>(table.byte_of[cp]));
  }
  return true;
}

bool build_byte_level_vocab(const std::vector<std::string> &mapped_tokens, const std::vector<uint8_t> &types,
                            const std::vector<std::pair<std::string, std::string>> &merges, const char *source,
                            TokenizerData *tok, std::string *error) {
  const size_t n = mapped_tokens.size();
  tok->kind = format::TokenizerKind::byte_level_bpe;
  tok->pieces.assign(n, std::string());
  tok->types = types;
  tok->scores.assign(n, 0.0f);
  tok->merges.clear();
  std::unordered_map<std::string, uint32_t> id_of;  // mapped spelling -> first id
  id_of.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    id_of.emplace(mapped_tokens[i], static_cast<uint32_t>(i));
    if (types[i] != kTokenNormal) {
      tok->pieces[i] = mapped_tokens[i];
    } else if (!gpt2_unicode_to_bytes(mapped_tokens[i], &tok->pieces[i])) {
      *error = std::string(source) + " token " + num(i) + " '" + printable(mapped_tokens[i]) +
               "' is a normal token but not in GPT-2's byte-to-unicode form";
      return false;
    }
  }
  std::unordered_set<uint64_t> seen;
  seen.reserve(merges.size());
  tok->merges.reserve(merges.size());
  for (size_t m = 0; m < merges.size(); ++m) {
    const std::string &a = merges[m].first, &b = merges[m].second;
    const std::string what = std::string(source) + " merge " + num(m) + " '" + printable(a + " " + b) + "'";
    const auto left = id_of.find(a), right = id_of.find(b), result = id_of.find(a + b);
    if (left == id_of.end() || right == id_of.end() || result == id_of.end()) {
      const std::string &missing = left == id_of.end() ? a : right == id_of.end() ? b : a + b;
      *error = what + ": token '" + printable(missing) + "' is not in the vocabulary";
      return false;
    }
    if (tok->pieces[result->second] != tok->pieces[left->second] + tok->pieces[right->second]) {
      *error = what + ": the result's bytes are not the left's followed by the right's";
      return false;
    }
    const uint64_t pair = static_cast<uint64_t>(left->second) << 32 | right->second;
    if (!seen.insert(pair).second) continue;  // a duplicate: the first keeps its rank
    tok->merges.push_back(format::BpeMerge{left->second, right->second, result->second, 0});
  }
  return true;
}

format::ChatTemplate detect_chat_template(const std::string &jinja) {
  if (jinja.find("<|im_start|>") != std::string::npos) return format::ChatTemplate::chatml;
  if (jinja.find("[INST]") != std::string::npos) return format::ChatTemplate::llama2;
  return format::ChatTemplate::none;
}

// ---- the llama mapping ---------------------------------------------------------------------------

namespace {

// Typed access to metadata, with messages naming the key.
struct Meta {
  const GgufFile &file;
  std::string *error;

  bool missing(const std::string &key) {
    *error = "GGUF is missing the required key '" + key + "'";
    return false;
  }
  bool wrong_type(const std::string &key, const GgufValue &v, const char *expected) {
    *error = "GGUF key '" + key + "' has type " + gguf_type_name(v.type) + ", expected " + expected;
    return false;
  }
  // An integer in [lo, hi]; when absent, fallback (or an error if required).
  bool integer(const std::string &key, bool required, int64_t fallback, int64_t lo, int64_t hi, int64_t *out) {
    const GgufValue *v = file.find(key);
    if (v == nullptr) {
      if (required) return missing(key);
      *out = fallback;
      return true;
    }
    if (!v->is_integer()) return wrong_type(key, *v, "an integer");
    const bool is_unsigned =
        v->type == GgufType::u8 || v->type == GgufType::u16 || v->type == GgufType::u32 || v->type == GgufType::u64;
    if ((is_unsigned && v->u > static_cast<uint64_t>(hi)) || (!is_unsigned && (v->i < lo || v->i > hi)) ||
        (is_unsigned && static_cast<int64_t>(v->u) < lo)) {
      *error = "GGUF key '" + key + "' is " + (is_unsigned ? num(v->u) : std::to_string(v->i)) + ", outside [" +
               std::to_string(lo) + ", " + std::to_string(hi) + "]";
      return false;
    }
    *out = is_unsigned ? static_cast<int64_t>(v->u) : v->i;
    return true;
  }
  bool real(const std::string &key, double fallback, bool required, double *out) {
    const GgufValue *v = file.find(key);
    if (v == nullptr) {
      if (required) return missing(key);
      *out = fallback;
      return true;
    }
    if (v->type == GgufType::f32 || v->type == GgufType::f64)
      *out = v->f;
    else if (v->is_integer())
      *out = v->type == GgufType::u8 || v->type == GgufType::u16 || v->type == GgufType::u32 || v->type == GgufType::u64
                 ? static_cast<double>(v->u)
                 : static_cast<double>(v->i);
    else
      return wrong_type(key, *v, "a number");
    return true;
  }
  bool boolean(const std::string &key, bool fallback, bool *out) {
    const GgufValue *v = file.find(key);
    if (v == nullptr) {
      *out = fallback;
      return true;
    }
    if (v->type != GgufType::boolean) return wrong_type(key, *v, "a bool");
    *out = v->u != 0;
    return true;
  }
  bool string(const std::string &key, bool required, std::string *out) {
    const GgufValue *v = file.find(key);
    if (v == nullptr) {
      if (required) return missing(key);
      out->clear();
      return true;
    }
    if (v->type != GgufType::string) return wrong_type(key, *v, "a string");
    *out = v->s;
    return true;
  }
};

// The tensors of the llama and gpt2 architectures, by their GGUF names (stem, then ".weight" or
// ".bias"); which of them a file must hold is the block spec's business (format::role_needed).
struct RoleName {
  const char *name;
  Role role;
  bool per_layer;
  bool bias;  // ".bias" rather than ".weight"
};
const RoleName kRoleNames[] = {
    {"token_embd", Role::token_embedding, false, false},
    {"position_embd", Role::pos_embd, false, false},
    {"output_norm", Role::output_norm, false, false},
    {"output_norm", Role::output_norm_bias, false, true},
    {"output", Role::output, false, false},
    {"attn_norm", Role::attn_norm, true, false},
    {"attn_norm", Role::attn_norm_bias, true, true},
    {"attn_q", Role::attn_q, true, false},
    {"attn_k", Role::attn_k, true, false},
    {"attn_v", Role::attn_v, true, false},
    {"attn_qkv", Role::attn_qkv, true, false},
    {"attn_qkv", Role::attn_qkv_bias, true, true},
    {"attn_output", Role::attn_output, true, false},
    {"attn_output", Role::attn_output_bias, true, true},
    {"ffn_norm", Role::ffn_norm, true, false},
    {"ffn_norm", Role::ffn_norm_bias, true, true},
    {"ffn_gate", Role::ffn_gate, true, false},
    {"ffn_down", Role::ffn_down, true, false},
    {"ffn_down", Role::ffn_down_bias, true, true},
    {"ffn_up", Role::ffn_up, true, false},
    {"ffn_up", Role::ffn_up_bias, true, true},
};

std::string gguf_tensor_name(Role role, uint32_t layer) {
  for (const RoleName &r : kRoleNames) {
    if (r.role == role)
      return (r.per_layer ? "blk." + num(layer) + "." : std::string()) + r.name + (r.bias ? ".bias" : ".weight");
  }
  return "?";
}

// Parses "token_embd.weight" / "blk.12.attn_q.weight" / "blk.0.attn_qkv.bias"; false for any
// other name.
bool parse_tensor_name(const std::string &name, Role *role, uint32_t *layer) {
  const std::string weight = ".weight", bias = ".bias";
  auto ends_with = [&](const std::string &suffix) {
    return name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  const bool is_bias = ends_with(bias);
  if (!is_bias && !ends_with(weight)) return false;
  std::string stem = name.substr(0, name.size() - (is_bias ? bias : weight).size());
  bool per_layer = false;
  *layer = format::kNoLayer;
  if (stem.compare(0, 4, "blk.") == 0) {
    size_t at = 4, digits = 0;
    uint64_t value = 0;
    while (at < stem.size() && stem[at] >= '0' && stem[at] <= '9' && digits < 9) {
      value = value * 10 + static_cast<uint64_t>(stem[at] - '0');
      ++at;
      ++digits;
    }
    // No empty, over-long or zero-padded layer numbers, so each tensor has one spelling.
    if (digits == 0 || at >= stem.size() || stem[at] != '.' || (digits > 1 && stem[4] == '0')) return false;
    *layer = static_cast<uint32_t>(value);
    stem = stem.substr(at + 1);
    per_layer = true;
  }
  for (const RoleName &r : kRoleNames) {
    if (r.per_layer == per_layer && r.bias == is_bias && stem == r.name) {
      *role = r.role;
      return true;
    }
  }
  return false;
}

bool map_tokenizer(const GgufFile &file, Meta &meta, uint32_t vocab, ModelData *m, std::string *error) {
  TokenizerData &tok = m->tokenizer;
  std::string model;
  if (file.find("tokenizer.ggml.tokens") == nullptr) {
    *error = "GGUF has no tokenizer (no tokenizer.ggml.tokens): mote needs one in the model file";
    return false;
  }
  if (!meta.string("tokenizer.ggml.model", true, &model)) return false;
  std::vector<std::string> tokens;
  if (!file.strings("tokenizer.ggml.tokens", &tokens, error)) return false;
  if (tokens.size() != vocab) {
    *error =
        "GGUF tokenizer.ggml.tokens has " + num(tokens.size()) + " tokens but the model's vocabulary is " + num(vocab);
    return false;
  }
  std::vector<uint8_t> types(vocab, kTokenNormal);
  if (file.find("tokenizer.ggml.token_type") != nullptr) {
    std::vector<int64_t> raw;
    if (!file.integers("tokenizer.ggml.token_type", &raw, error)) return false;
    if (raw.size() != vocab) {
      *error = "GGUF tokenizer.ggml.token_type has " + num(raw.size()) + " entries for " + num(vocab) + " tokens";
      return false;
    }
    for (size_t i = 0; i < vocab; ++i) {
      if (raw[i] < 0 || raw[i] > 6) {
        *error = "GGUF tokenizer.ggml.token_type[" + num(i) + "] is " + std::to_string(raw[i]) + " (expected 1 to 6)";
        return false;
      }
      types[i] =
          raw[i] == 0 ? static_cast<uint8_t>(kTokenNormal) : static_cast<uint8_t>(raw[i]);  // 0: ggml's "undefined"
    }
  }
  bool add_bos = false, add_space_prefix = true;
  if (model == "llama") {
    // SentencePiece: "▁" (U+2581) stands for a space; mote's pieces hold the space itself.
    tok.kind = format::TokenizerKind::sentencepiece_bpe;
    tok.pieces = std::move(tokens);
    for (std::string &piece : tok.pieces) {
      for (size_t at = 0; (at = piece.find("\xE2\x96\x81", at)) != std::string::npos;) piece.replace(at, 3, " ");
    }
    tok.types = types;
    tok.scores.assign(vocab, 0.0f);
    if (file.find("tokenizer.ggml.scores") != nullptr) {
      if (!file.floats("tokenizer.ggml.scores", &tok.scores, error)) return false;
      if (tok.scores.size() != vocab) {
        *error = "GGUF tokenizer.ggml.scores has " + num(tok.scores.size()) + " entries for " + num(vocab) + " tokens";
        return false;
      }
      for (size_t i = 0; i < vocab; ++i) {
        if (!std::isfinite(tok.scores[i])) {
          *error = "GGUF tokenizer.ggml.scores[" + num(i) + "] is not finite";
          return false;
        }
      }
    }
    if (!meta.boolean("tokenizer.ggml.add_bos_token", true, &add_bos) ||
        !meta.boolean("tokenizer.ggml.add_space_prefix", true, &add_space_prefix))
      return false;
    tok.flags =
        (add_space_prefix ? uint32_t{format::kTokAddSpacePrefix} : 0u) | (add_bos ? uint32_t{format::kTokAddBos} : 0u);
  } else if (model == "gpt2") {
    std::vector<std::pair<std::string, std::string>> merges;
    if (file.find("tokenizer.ggml.merges") != nullptr) {
      std::vector<std::string> lines;
      if (!file.strings("tokenizer.ggml.merges", &lines, error)) return false;
      merges.reserve(lines.size());
      for (size_t i = 0; i < lines.size(); ++i) {
        const size_t space = lines[i].find(' ');
        if (space == std::string::npos || space == 0 || space + 1 == lines[i].size() ||
            lines[i].find(' ', space + 1) != std::string::npos) {
          *error = "GGUF merge " + num(i) + " '" + printable(lines[i]) + "' is not two tokens split by one space";
          return false;
        }
        merges.emplace_back(lines[i].substr(0, space), lines[i].substr(space + 1));
      }
    }
    if (!build_byte_level_vocab(tokens, types, merges, "GGUF", &tok, error)) return false;
    std::string pre;
    if (!meta.boolean("tokenizer.ggml.add_bos_token", false, &add_bos) ||
        !meta.string("tokenizer.ggml.pre", false, &pre))
      return false;
    // llama.cpp's "gpt2" pre-tokenizer is GPT-2's regex alone; the others mote reads split digits.
    tok.flags = (add_bos ? uint32_t{format::kTokAddBos} : 0u) | (pre == "gpt2" ? uint32_t{format::kTokNoDigitSplit} : 0u);
  } else {
    *error = "GGUF tokenizer model '" + printable(model) + "' is not supported (only llama and gpt2)";
    return false;
  }
  int64_t bos = -1, eos = -1, unk = -1;
  const int64_t last = static_cast<int64_t>(vocab) - 1;
  if (!meta.integer("tokenizer.ggml.bos_token_id", false, -1, -1, last, &bos) ||
      !meta.integer("tokenizer.ggml.eos_token_id", false, -1, -1, last, &eos) ||
      !meta.integer("tokenizer.ggml.unknown_token_id", false, -1, -1, last, &unk))
    return false;
  tok.bos_id = static_cast<int32_t>(bos);
  tok.eos_id = static_cast<int32_t>(eos);
  tok.unk_id = static_cast<int32_t>(unk);
  m->config.bos_id = tok.bos_id;
  m->config.eos_id = tok.eos_id;
  std::string chat;
  if (!meta.string("tokenizer.chat_template", false, &chat)) return false;
  tok.chat_template = detect_chat_template(chat);
  return true;
}

}  // namespace

bool import_tensors(const GgufFile &file, const GgufOptions &options, const std::string &arch, ModelData *out,
                    std::string *error);

// GPT-2 (llama.cpp's convert_hf_to_gguf layout: Linear-shaped matrices, fused attn_qkv, biases,
// LayerNorm with bias, learned positions, GELU with the tanh approximation).
bool gguf_gpt2_to_model(const GgufFile &file, const GgufOptions &options, ModelData *out, std::string *error) {
  Meta meta{file, error};
  int64_t layers = 0, dim = 0, ffn = 0, heads = 1, context = 0;
  double eps = 0;
  if (!meta.integer("gpt2.block_count", true, 0, 1, 1024, &layers) ||
      !meta.integer("gpt2.embedding_length", true, 0, 1, 65536, &dim) ||
      !meta.integer("gpt2.feed_forward_length", true, 0, 1, 1 << 18, &ffn) ||
      !meta.integer("gpt2.attention.head_count", true, 0, 1, 1024, &heads) ||
      !meta.integer("gpt2.context_length", true, 0, 1, 1 << 20, &context) ||
      !meta.real("gpt2.attention.layer_norm_epsilon", 1e-5, false, &eps))
    return false;
  const GgufValue *tokens = file.find("tokenizer.ggml.tokens");
  if (tokens == nullptr || tokens->type != GgufType::array || tokens->array_count < 1 ||
      tokens->array_count > (1u << 24)) {
    *error = "GGUF has no tokenizer (no tokenizer.ggml.tokens): mote needs one in the model file";
    return false;
  }
  if (dim % heads != 0 || !(eps > 0 && eps < 1)) {
    *error = "GGUF gpt2.embedding_length " + num(dim) + " does not divide into " + num(heads) +
             " heads, or the LayerNorm epsilon is not in (0, 1)";
    return false;
  }
  ModelData &m = *out;
  m = ModelData{};
  format::ModelConfig &c = m.config;
  const int64_t vocab = static_cast<int64_t>(tokens->array_count);
  c = gpt2_config({dim, layers, heads, heads, dim / heads, ffn, vocab, context}, eps);
  if (!map_tokenizer(file, meta, c.vocab_size, &m, error)) return false;
  return import_tensors(file, options, "gpt2", &m, error);
}

bool gguf_to_model(const GgufFile &file, const GgufOptions &options, ModelData *out, std::string *error) {
  if (options.dtype && !check_matrix_dtype(*options.dtype, error)) return false;
  Meta meta{file, error};
  std::string arch;
  if (!meta.string("general.architecture", true, &arch)) return false;
  if (arch == "gpt2") return gguf_gpt2_to_model(file, options, out, error);
  if (arch != "llama") {
    *error = "GGUF architecture '" + printable(arch) + "' is not supported (only llama and gpt2)";
    return false;
  }
  int64_t layers, dim, ffn, heads, kv_heads, context, rope_dims, key_length;
  double theta, eps;
  if (!meta.integer("llama.block_count", true, 0, 1, 1024, &layers) ||
      !meta.integer("llama.embedding_length", true, 0, 1, 65536, &dim) ||
      !meta.integer("llama.feed_forward_length", true, 0, 1, 1 << 18, &ffn) ||
      !meta.integer("llama.attention.head_count", true, 0, 1, 1024, &heads) ||
      !meta.integer("llama.attention.head_count_kv", false, heads, 1, 1024, &kv_heads) ||
      !meta.integer("llama.context_length", true, 0, 1, 1 << 20, &context) ||
      !meta.real("llama.rope.freq_base", 10000.0, false, &theta) ||
      !meta.real("llama.attention.layer_norm_rms_epsilon", 1e-5, false, &eps))
    return false;
  if (dim % heads != 0) {
    *error =
        "GGUF llama.embedding_length " + num(dim) + " is not divisible by llama.attention.head_count " + num(heads);
    return false;
  }
  if (heads % kv_heads != 0) {
    *error = "GGUF llama.attention.head_count " + num(heads) + " is not a multiple of head_count_kv " + num(kv_heads);
    return false;
  }
  const int64_t head_dim = dim / heads;
  if (head_dim % 2 != 0 || head_dim > 4096) {
    *error = "GGUF head dimension " + num(head_dim) + " (embedding_length / head_count) must be even and at most 4096";
    return false;
  }
  if (!meta.integer("llama.rope.dimension_count", false, head_dim, 0, INT64_MAX, &rope_dims) ||
      !meta.integer("llama.attention.key_length", false, head_dim, 0, INT64_MAX, &key_length))
    return false;
  if (rope_dims != head_dim) {
    *error = "GGUF llama.rope.dimension_count " + num(rope_dims) + " differs from the head dimension " + num(head_dim) +
             " (partial rotary embeddings are not supported)";
    return false;
  }
  if (key_length != head_dim) {
    *error = "GGUF llama.attention.key_length " + num(key_length) + " differs from embedding_length / head_count (" +
             num(head_dim) + ")";
    return false;
  }
  if (!std::isfinite(theta) || theta <= 1 || theta > 3.0e38) {
    *error = "GGUF llama.rope.freq_base " + std::to_string(theta) + " must be finite and > 1";
    return false;
  }
  if (!(eps > 0 && eps < 1)) {
    *error = "GGUF llama.attention.layer_norm_rms_epsilon " + std::to_string(eps) + " must be in (0, 1)";
    return false;
  }
  if (file.find("llama.rope.scaling.type") != nullptr) {
    std::string scaling;
    if (!meta.string("llama.rope.scaling.type", false, &scaling)) return false;
    if (scaling != "none") {
      *error = "GGUF llama.rope.scaling.type '" + printable(scaling) + "' is not supported";
      return false;
    }
  }
  // The vocabulary: llama.vocab_size when present, else the token count; both must agree.
  int64_t vocab = -1;
  const GgufValue *tokens = file.find("tokenizer.ggml.tokens");
  const int64_t token_count =
      tokens != nullptr && tokens->type == GgufType::array ? static_cast<int64_t>(tokens->array_count) : -1;
  if (!meta.integer("llama.vocab_size", false, token_count, 0, 1 << 24, &vocab)) return false;
  if (vocab < 0) {
    *error = "GGUF has no tokenizer (no tokenizer.ggml.tokens): mote needs one in the model file";
    return false;
  }
  if (vocab < 1 || vocab > (1 << 24)) {
    *error = "GGUF vocabulary size " + std::to_string(vocab) + " is outside [1, 2^24]";
    return false;
  }

  ModelData &m = *out;
  m = ModelData{};
  format::ModelConfig &c = m.config;
  c = llama_config({dim, layers, heads, kv_heads, head_dim, ffn, vocab, context});
  c.norm_eps = static_cast<float>(eps);
  c.rope_theta = static_cast<float>(theta);
  c.rope_layout = format::RopeLayout::interleaved;

  if (!map_tokenizer(file, meta, c.vocab_size, &m, error)) return false;
  return import_tensors(file, options, arch, &m, error);
}

// The file's tensors for m's config (tokenizer and hyperparameters already mapped); the
// embeddings are tied when the file has no output tensor.
bool import_tensors(const GgufFile &file, const GgufOptions &options, const std::string &arch, ModelData *out,
                    std::string *error) {
  ModelData &m = *out;
  format::ModelConfig &c = m.config;
  // Which file tensor plays each (role, layer).
  const uint32_t L = c.n_layers;
  std::vector<size_t> slot((L + 1) * format::kRoleCount, SIZE_MAX);
  auto slot_of = [&](Role role, uint32_t layer) -> size_t & {
    return slot[(layer == format::kNoLayer ? L : layer) * format::kRoleCount + static_cast<uint32_t>(role)];
  };
  for (size_t i = 0; i < file.tensors.size(); ++i) {
    const GgufTensorInfo &t = file.tensors[i];
    Role role = Role::token_embedding;
    uint32_t layer = format::kNoLayer;
    if (!parse_tensor_name(t.name, &role, &layer)) {
      *error = "GGUF tensor '" + printable(t.name) + "' is not part of the " + arch + " architecture as mote knows it";
      return false;
    }
    if (layer != format::kNoLayer && layer >= L) {
      *error = "GGUF tensor '" + printable(t.name) + "' is for layer " + num(layer) + " but " + arch +
               ".block_count is " + num(L);
      return false;
    }
    size_t &s = slot_of(role, layer);
    if (s != SIZE_MAX) {
      *error = "GGUF tensor '" + printable(t.name) + "' duplicates '" + file.tensors[s].name + "'";
      return false;
    }
    s = i;
  }
  const bool tied = slot_of(Role::output, format::kNoLayer) == SIZE_MAX;
  c.flags |= tied ? static_cast<uint32_t>(format::kFlagTiedEmbeddings) : 0u;
  const format::BlockSpec spec = format::block_spec(c);
  for (uint32_t role = 1; role < format::kRoleCount; ++role) {
    for (uint32_t layer = 0; layer <= L; ++layer) {
      const size_t at = slot_of(static_cast<Role>(role), layer == L ? format::kNoLayer : layer);
      if (at != SIZE_MAX && !format::role_needed(spec, static_cast<Role>(role))) {
        *error = "GGUF tensor '" + printable(file.tensors[at].name) + "' has no place in the " + arch + " architecture";
        return false;
      }
    }
  }

  const std::vector<TensorSlot> wanted = tensor_slots(c);

  for (const TensorSlot &w : wanted) {
    if (slot_of(w.role, w.layer) == SIZE_MAX) {
      *error = "GGUF is missing tensor '" + gguf_tensor_name(w.role, w.layer) + "'";
      return false;
    }
  }
  m.tensors.reserve(wanted.size());
  for (size_t k = 0; k < wanted.size(); ++k) {
    const TensorSlot &w = wanted[k];
    const GgufTensorInfo &t = file.tensors[slot_of(w.role, w.layer)];
    const bool vector = w.cols == 0;
    // GGUF dims are innermost first: a matrix is [cols, rows], a vector [n].
    const uint64_t expect[4] = {vector ? w.rows : w.cols, vector ? 1 : w.rows, 1, 1};
    if (std::memcmp(t.dims, expect, sizeof expect) != 0) {
      std::string got, need;
      for (uint32_t d = 0; d < t.n_dims; ++d) got += (d ? ", " : "") + num(t.dims[d]);
      need = vector ? num(w.rows) : num(w.cols) + ", " + num(w.rows);
      *error = "GGUF tensor '" + printable(t.name) + "' has shape [" + got +
               "] (innermost first); the hyperparameters need [" + need + "]";
      return false;
    }
    const GgmlTypeInfo *info = ggml_type_info(t.type);
    if (!info->dequantizable) {
      *error = "GGUF tensor '" + printable(t.name) + "' has type " + info->name +
               ", which mote convert cannot import (supported: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q4_K, Q5_K, Q6_K)";
      return false;
    }
    if (!add_tensor(w, {file.bytes + t.offset, t.type}, options.dtype, options.layout, &m, error)) return false;
    if (options.progress) options.progress(k + 1, wanted.size());
  }
  return true;
}

bool is_gguf_file(const std::string &path) {
  uint64_t size = 0;
  std::string ignored;
  const int fd = posix::open_regular_file(path, &size, &ignored);  // never blocks on a FIFO
  if (fd < 0) return false;
  char magic[4] = {};
  const bool ok = size >= 4 && ::read(fd, magic, 4) == 4 && std::memcmp(magic, "GGUF", 4) == 0;
  ::close(fd);
  return ok;
}

bool load_gguf(const std::string &path, const GgufOptions &options, ModelData *out, std::string *error) {
  // Mapped, not read: only the header, the metadata and the tensors converted are ever loaded.
  posix::FileMap bytes;
  if (!bytes.open(path, error)) return false;
  GgufFile file;
  if (!parse_gguf(bytes.bytes(), bytes.size(), &file, error) || !gguf_to_model(file, options, out, error)) {
    *error = "'" + path + "': " + *error;
    return false;
  }
  return true;
}

}  // namespace mote::convert

// The GGUF container parser (versions 2 and 3): every key, array and tensor of a hostile file
// is validated before use; also the file-level entry points (magic check, load_gguf).
#include "gguf/gguf.hpp"

#include <unistd.h>

#include <cstring>

#include "io/file_map.hpp"
#include "message_text.hpp"
#include "quant/dequant.hpp"

namespace mote::convert {
namespace {

constexpr int kMaxArrayDepth = 8;  // arrays of arrays, nested at most this deep
constexpr uint64_t kMaxAlignment = 1u << 20;
constexpr uint64_t kMaxElements = 1ull << 56;  // per tensor; keeps byte counts far from overflow

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

namespace {

// Magic, version and the two counts, each bounded by what the rest of the file can hold.
bool parse_header(Reader &r, GgufFile &f, uint64_t *tensor_count, uint64_t *kv_count) {
  std::string *error = r.error;
  if (f.size < 4 || std::memcmp(f.bytes, "GGUF", 4) != 0) {
    *error = "not a GGUF file: bad magic (the file does not start with 'GGUF')";
    return false;
  }
  r.pos = 4;
  if (!r.read(&f.version)) return false;
  if (f.version != 2 && f.version != 3) {
    *error = "GGUF version " + num(f.version) + " is not supported (only versions 2 and 3)";
    return false;
  }
  if (!r.read(tensor_count) || !r.read(kv_count)) return false;
  // The smallest key takes 13 bytes (length, type, one byte) and the smallest tensor info 32
  // (name length, n_dims, one dim, type, offset): bound the counts before any allocation.
  if (*kv_count > r.remaining() / 13) {
    *error = "GGUF header claims " + num(*kv_count) + " metadata keys, more than the file (" + num(f.size) +
             " bytes) can hold";
    return false;
  }
  if (*tensor_count > r.remaining() / 32) {
    *error = "GGUF header claims " + num(*tensor_count) + " tensors, more than the file (" + num(f.size) +
             " bytes) can hold";
    return false;
  }
  return true;
}

bool parse_metadata(Reader &r, GgufFile &f, uint64_t kv_count) {
  std::string *error = r.error;
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
  return true;
}

// general.alignment, when present: a power of two up to kMaxAlignment.
bool parse_alignment(GgufFile &f, std::string *error) {
  const GgufValue *a = f.find("general.alignment");
  if (a == nullptr) return true;
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
  return true;
}

// One tensor info: name, dimensions (overflow-checked), ggml type, offset in the data section.
bool parse_tensor_info(Reader &r, const GgufFile &f, uint64_t i, GgufTensorInfo *out) {
  std::string *error = r.error;
  GgufTensorInfo &t = *out;
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
  return true;
}

// The data section starts at the next multiple of the alignment after the tensor infos; every
// tensor's bytes must lie inside the file. Offsets become file offsets.
bool place_tensor_data(GgufFile &f, size_t infos_end, std::string *error) {
  const uint64_t n = f.size;
  f.data_offset = (static_cast<uint64_t>(infos_end) + f.alignment - 1) / f.alignment * f.alignment;
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

}  // namespace

bool parse_gguf(const uint8_t *bytes, size_t n, GgufFile *out, std::string *error) {
  GgufFile &f = *out;
  f = GgufFile{};
  f.bytes = bytes;
  f.size = n;
  Reader r{bytes, n, 0, "the header", error};
  uint64_t tensor_count = 0, kv_count = 0;
  if (!parse_header(r, f, &tensor_count, &kv_count)) return false;
  if (!parse_metadata(r, f, kv_count)) return false;
  if (!parse_alignment(f, error)) return false;
  f.tensors.reserve(static_cast<size_t>(tensor_count));
  for (uint64_t i = 0; i < tensor_count; ++i) {
    GgufTensorInfo t;
    if (!parse_tensor_info(r, f, i, &t)) return false;
    f.tensor_index.emplace(t.name, f.tensors.size());
    f.tensors.push_back(std::move(t));
  }
  return place_tensor_data(f, r.pos, error);
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
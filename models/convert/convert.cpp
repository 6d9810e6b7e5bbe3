// convert_model: picks the importer for the input's kind, applies the request's dtype, layout
// and RoPE choices, and serializes the result as .mote (checked by the runtime's loader) or GGUF.
#include "convert.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <optional>

#include "gguf/gguf.hpp"
#include "gguf/gguf_writer.hpp"
#include "hf/hf.hpp"
#include "io/file_map.hpp"
#include "llama2c/llama2c.hpp"
#include "llama2c/llama2c_header.hpp"
#include "mote_writer.hpp"
#include "quant/repack.hpp"

namespace mote::convert {
namespace {

enum class InputKind { gguf, hugging_face, llama2c };

bool ends_with(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

InputKind input_kind(const std::string &path) {
  struct stat st;
  if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return InputKind::hugging_face;
  if (ends_with(path, "config.json") || ends_with(path, ".safetensors")) return InputKind::hugging_face;
  if (is_gguf_file(path)) return InputKind::gguf;
  return InputKind::llama2c;
}

// Why INPUT, neither GGUF nor Hugging Face, cannot be a llama2.c checkpoint: it is no regular
// file ("'/dev/zero' is not a regular file (it is a device)"), or its first bytes are no known
// format; "" when its header could be a checkpoint's.
std::string not_a_checkpoint(const std::string &path) {
  std::string error;
  uint64_t size = 0;
  const int fd = posix::open_regular_file(path, &size, &error);  // never blocks on a FIFO
  if (fd < 0) return error;
  uint8_t head[28] = {};
  const ssize_t got = size >= sizeof head ? ::read(fd, head, sizeof head) : 0;
  ::close(fd);
  if (got == static_cast<ssize_t>(sizeof head) && looks_like_llama2c_header(head, sizeof head)) return "";
  return "'" + path + "' is not a GGUF file, a Hugging Face folder or a llama2.c checkpoint (its first bytes are " +
         "none of theirs)";
}

// "61 f32, 1 q8_0x8, 210 q4_1x8": how many tensors the file holds in each dtype; a GGUF holds the
// plain blocks of the interleaved ones ("1 q8_0, 210 q4_1"; serialize_gguf).
std::string dtype_counts(const ModelData &model, bool gguf_output) {
  std::map<uint32_t, size_t> counts;
  for (const TensorData &t : model.tensors)
    ++counts[static_cast<uint32_t>(gguf_output ? plain_dtype(t.dtype) : t.dtype)];
  std::string text;
  for (const auto &[dtype, count] : counts) {
    text += (text.empty() ? "" : ", ") + std::to_string(count) + " " + format::dtype_traits(dtype)->name;
  }
  return text;
}

// The request's choices, checked: what the importers take.
struct Choices {
  std::optional<format::DType> stored;  // --dtype's base type; none: the source's default
  Mix mix = Mix::none;
  BlockLayout layout = BlockLayout::interleaved;
  format::RopeLayout rope = format::RopeLayout::interleaved;
};

bool read_choices(const ConvertRequest &request, InputKind kind, Choices *c, std::string *error) {
  if (!request.dtype.empty()) {
    const DTypeChoice *choice = find_dtype_choice(request.dtype);
    if (choice == nullptr) {
      *error = "--dtype must be " + dtype_choice_list();
      return false;
    }
    c->stored = choice->base;
    c->mix = choice->mix;
  }
  if (request.layout == "gguf") {
    c->layout = BlockLayout::gguf;
  } else if (!request.layout.empty() && request.layout != "interleaved") {
    *error = "--layout must be interleaved or gguf";
    return false;
  }
  if (!request.rope.empty() && kind != InputKind::llama2c) {
    *error = "--rope applies to llama2.c checkpoints only (GGUF and Hugging Face files say theirs)";
    return false;
  }
  if (request.rope == "split") {
    c->rope = format::RopeLayout::split_half;
  } else if (!request.rope.empty() && request.rope != "interleaved") {
    *error = "--rope must be interleaved or split";
    return false;
  }
  if (kind == InputKind::gguf && !request.tokenizer.empty()) {
    *error = "a GGUF file carries its own tokenizer: drop --tokenizer";
    return false;
  }
  return true;
}

}  // namespace

ConvertResult convert_model(const ConvertRequest &request, Converted *out, std::string *error) {
  *out = Converted{};
  const InputKind kind = input_kind(request.input);
  Choices c;
  if (!read_choices(request, kind, &c, error)) return ConvertResult::usage_error;
  // With no --dtype, GGUF matrices keep their stored blocks (interleaved unless --layout gguf),
  // Hugging Face ones become f16 (their weights are 16-bit) and llama2.c's floats stay f32.
  const format::DType non_gguf_default = kind == InputKind::llama2c ? format::DType::f32 : format::DType::f16;
  ModelData model;
  bool ok = false;
  if (kind == InputKind::gguf) {
    GgufOptions options;
    options.dtype = c.stored;
    options.mix = c.mix;
    options.layout = c.layout;
    options.progress = request.progress;
    ok = load_gguf(request.input, options, &model, error);
  } else if (kind == InputKind::hugging_face) {
    SafetensorsOptions options;
    options.dtype = c.stored.value_or(non_gguf_default);
    options.mix = c.mix;
    options.layout = c.layout;
    options.tokenizer_path = request.tokenizer;
    options.progress = request.progress;
    ok = load_hf_checkpoint(request.input, options, &model, error);
  } else {
    if (request.tokenizer.empty()) {
      *error = not_a_checkpoint(request.input);
      if (!error->empty()) return ConvertResult::failed;
      *error = "'" + request.input + "' looks like a llama2.c checkpoint: those need --tokenizer tokenizer.bin";
      return ConvertResult::usage_error;
    }
    Llama2cOptions options;
    options.dtype = c.stored.value_or(non_gguf_default);
    options.mix = c.mix;
    options.layout = c.layout;
    options.rope_layout = c.rope;
    ok = load_llama2c(request.input, request.tokenizer, options, &model, error);
  }
  if (!ok) return ConvertResult::failed;
  if (request.gguf_output) {
    ok = serialize_gguf(model, &out->bytes, error);
  } else {
    out->bytes = serialize(model);
    ok = check_opens(out->bytes, error);
  }
  if (!ok) return ConvertResult::failed;
  out->n_tensors = model.tensors.size();
  out->dtype_counts = dtype_counts(model, request.gguf_output);
  out->notes = model.notes;
  return ConvertResult::ok;
}

}  // namespace mote::convert

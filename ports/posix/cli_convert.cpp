// `mote convert`: GGUF files, Hugging Face Llama checkpoints (safetensors) and llama2.c
// checkpoints (+ tokenizer.bin) into one .mote file. The importer is chosen by content: the GGUF
// magic, a directory / config.json / *.safetensors path, else a llama2.c checkpoint.
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <optional>

#include "cli_common.hpp"
#include "file_map.hpp"
#include "gguf.hpp"
#include "gguf_writer.hpp"
#include "host_types.hpp"
#include "llama2c.hpp"
#include "llama2c_header.hpp"
#include "safetensors.hpp"

namespace mote::cli {
namespace {

enum class InputKind { gguf, hugging_face, llama2c };

bool ends_with(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

InputKind input_kind(const std::string &path) {
  struct stat st;
  if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return InputKind::hugging_face;
  if (ends_with(path, "config.json") || ends_with(path, ".safetensors")) return InputKind::hugging_face;
  if (convert::is_gguf_file(path)) return InputKind::gguf;
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
  if (got == static_cast<ssize_t>(sizeof head) && convert::looks_like_llama2c_header(head, sizeof head)) return "";
  return "'" + path + "' is not a GGUF file, a Hugging Face folder or a llama2.c checkpoint (its first bytes are " +
         "none of theirs)";
}

// "61 f32, 1 q8_0x8, 210 q4_1x8": how many tensors the file holds in each dtype.
std::string dtype_counts(const convert::ModelData &model) {
  std::map<uint32_t, size_t> counts;
  for (const convert::TensorData &t : model.tensors) ++counts[static_cast<uint32_t>(t.dtype)];
  std::string text;
  for (const auto &[dtype, count] : counts) {
    text += (text.empty() ? "" : ", ") + std::to_string(count) + " " + format::dtype_traits(dtype)->name;
  }
  return text;
}

// "\rconverting tensors 37/272" on a terminal, finished with a newline; nothing otherwise.
std::function<void(size_t, size_t)> progress_printer() {
  if (isatty(2) == 0) return nullptr;
  return [](size_t done, size_t total) {
    std::fprintf(stderr, "\rconverting tensors %zu/%zu", done, total);
    if (done == total) std::fputc('\n', stderr);
    std::fflush(stderr);
  };
}

}  // namespace

int command_convert(int argc, char **argv) {
  std::string output, tokenizer, dtype, rope, layout;
  bool rope_given = false;
  const std::string dtype_help = "re-quantize the matrices: " + convert::dtype_choice_list() +
                                 " (llama-quantize's per-tensor recipe for its types and mixes)";
  CommandHelp command{
      "convert",
      "INPUT -o OUTPUT [OPTIONS]",
      "Convert a GGUF file, a Hugging Face checkpoint folder (safetensors) or a llama2.c checkpoint\n"
      "(with --tokenizer) into a .mote file. Quantized matrices of 8k rows are stored 8 rows\n"
      "interleaved (q4_1x8, ...) unless --layout gguf keeps GGUF's block order.\n"
      "An OUTPUT ending in .gguf is written as a GGUF file instead, for llama.cpp: the same blocks\n"
      "(GGUF's plain order), llama.cpp's names and metadata for llama and gpt2 models.",
      {
          {"-o|--output", Option::kString, &output, "FILE", "the file to write: .mote, or GGUF if it ends in .gguf"},
          {"--tokenizer", Option::kString, &tokenizer, "FILE", "a llama2.c checkpoint's tokenizer.bin"},
          {"--dtype", Option::kString, &dtype, "TYPE", dtype_help.c_str(), nullptr,
           "GGUF: as stored; Hugging Face: f16; llama2.c: f32"},
          {"--rope", Option::kString, &rope, "LAYOUT", "a llama2.c checkpoint's RoPE pairs: interleaved or split",
           &rope_given, "interleaved"},
          {"--layout", Option::kString, &layout, "LAYOUT", "quantized blocks: interleaved or gguf", nullptr,
           "interleaved"},
      }};
  std::vector<std::string> positional;
  const int parsed = parse_command(command, argc, argv, &positional);
  if (parsed != kParsed) return parsed;
  std::string error;
  if (positional.size() != 1) return report("convert", "give exactly one input checkpoint", kExitUsage);
  if (output.empty()) return report("convert", "no output file given (-o OUTPUT)", kExitUsage);
  const std::string &input = positional[0];
  const InputKind kind = input_kind(input);

  // With no --dtype, GGUF matrices keep their stored blocks (Q8_0/Q4_0/Q4_1 copied, then
  // interleaved unless --layout gguf), Hugging Face ones become f16 (their weights are 16-bit) and llama2.c's floats
  // stay f32.
  // A --dtype name is a row of quantize_recipe.hpp's table: a base type and its recipe.
  std::optional<format::DType> stored;
  convert::Mix mix = convert::Mix::none;
  if (!dtype.empty()) {
    const convert::DTypeChoice *choice = convert::find_dtype_choice(dtype);
    if (choice == nullptr) {
      return report("convert", "--dtype must be " + convert::dtype_choice_list(), kExitUsage);
    }
    stored = choice->base;
    mix = choice->mix;
  }
  // Interleaved unless asked otherwise: quantized matrices of 8k rows become x8 types.
  convert::BlockLayout block_layout = convert::BlockLayout::interleaved;
  if (layout == "gguf") {
    block_layout = convert::BlockLayout::gguf;
  } else if (!layout.empty() && layout != "interleaved") {
    return report("convert", "--layout must be interleaved or gguf", kExitUsage);
  }
  const format::DType non_gguf_default = kind == InputKind::llama2c ? format::DType::f32 : format::DType::f16;
  if (rope_given && kind != InputKind::llama2c) {
    return report("convert", "--rope applies to llama2.c checkpoints only (GGUF and Hugging Face files say theirs)",
                  kExitUsage);
  }

  convert::ModelData model;
  bool ok = false;
  if (kind == InputKind::gguf) {
    if (!tokenizer.empty()) {
      return report("convert", "a GGUF file carries its own tokenizer: drop --tokenizer", kExitUsage);
    }
    convert::GgufOptions gguf_options;
    gguf_options.dtype = stored;
    gguf_options.mix = mix;
    gguf_options.layout = block_layout;
    gguf_options.progress = progress_printer();
    ok = convert::load_gguf(input, gguf_options, &model, &error);
  } else if (kind == InputKind::hugging_face) {
    convert::SafetensorsOptions hf_options;
    hf_options.dtype = stored.value_or(non_gguf_default);
    hf_options.mix = mix;
    hf_options.layout = block_layout;
    hf_options.tokenizer_path = tokenizer;
    hf_options.progress = progress_printer();
    ok = convert::load_hf_checkpoint(input, hf_options, &model, &error);
  } else {
    if (tokenizer.empty()) {
      const std::string reason = not_a_checkpoint(input);
      if (!reason.empty()) return report("convert", reason, kExitError);
      return report("convert", "'" + input + "' looks like a llama2.c checkpoint: those need --tokenizer tokenizer.bin",
                    kExitUsage);
    }
    convert::Llama2cOptions llama2c_options;
    llama2c_options.dtype = stored.value_or(non_gguf_default);
    llama2c_options.mix = mix;
    llama2c_options.layout = block_layout;
    if (rope == "split")
      llama2c_options.rope_layout = format::RopeLayout::split_half;
    else if (!rope.empty() && rope != "interleaved")
      return report("convert", "--rope must be interleaved or split", kExitUsage);
    ok = convert::load_llama2c(input, tokenizer, llama2c_options, &model, &error);
  }
  if (!ok) return report("convert", error, kExitError);
  // OUTPUT.gguf: the same blocks as a GGUF for llama.cpp (gguf_writer.hpp), else a .mote file.
  const bool to_gguf = ends_with(output, ".gguf");
  std::vector<uint8_t> bytes;
  if (to_gguf) {
    ok = convert::serialize_gguf(model, &bytes, &error);
  } else {
    bytes = convert::serialize(model);
    ok = convert::check_opens(bytes, &error);
  }
  if (!ok || !convert::write_file(output, bytes, &error)) return report("convert", error, kExitError);
  std::fprintf(stderr, "mote convert: wrote %s (%zu bytes, %zu tensors: %s)\n", output.c_str(), bytes.size(),
               model.tensors.size(), dtype_counts(model).c_str());
  return 0;
}

}  // namespace mote::cli

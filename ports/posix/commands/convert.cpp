// `mote convert`: GGUF files, Hugging Face checkpoints (safetensors) and llama2.c checkpoints
// (+ tokenizer.bin) into one .mote file, through the converter's front door (convert.hpp). The
// importer is chosen by content: the GGUF magic, a directory / config.json / *.safetensors path,
// else a llama2.c checkpoint.
#include "convert.hpp"

#include <unistd.h>

#include <cctype>

#include "cli_options.hpp"
#include "commands.hpp"

namespace mote::cli {
namespace {

// "x.gguf", "x.GGUF", "x.Gguf": a name llama.cpp's users would give a GGUF.
bool names_gguf(const std::string &path) {
  const std::string suffix = ".gguf";
  if (path.size() < suffix.size()) return false;
  const size_t at = path.size() - suffix.size();
  for (size_t i = 0; i < suffix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(path[at + i])) != suffix[i]) return false;
  }
  return true;
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
  std::string output;
  convert::ConvertRequest request;
  const std::string dtype_help = "re-quantize the matrices: " + convert::dtype_choice_list() +
                                 " (llama-quantize's per-tensor recipe for its types and mixes)";
  CommandHelp command{
      "convert",
      "INPUT -o OUTPUT [OPTIONS]",
      "Convert a GGUF file, a Hugging Face checkpoint folder (safetensors) or a llama2.c checkpoint\n"
      "(with --tokenizer) into a .mote file. Quantized matrices of 8k rows are stored 8 rows\n"
      "interleaved (q4_1x8, ...) unless --layout gguf keeps GGUF's block order.\n"
      "An OUTPUT ending in .gguf (any case) is written as a GGUF file instead, for llama.cpp: the\n"
      "same blocks (GGUF's plain order), llama.cpp's names and metadata for llama and gpt2 models.",
      {
          {"-o|--output", Option::kString, &output, "FILE",
           "the file to write: .mote, or GGUF if it ends in .gguf (any case)"},
          {"--tokenizer", Option::kString, &request.tokenizer, "FILE", "a llama2.c checkpoint's tokenizer.bin"},
          {"--dtype", Option::kString, &request.dtype, "TYPE", dtype_help.c_str(), nullptr,
           "GGUF: as stored; Hugging Face: f16; llama2.c: f32"},
          {"--rope", Option::kString, &request.rope, "LAYOUT",
           "a llama2.c checkpoint's RoPE pairs: interleaved or split", nullptr, "interleaved"},
          {"--layout", Option::kString, &request.layout, "LAYOUT", "quantized blocks: interleaved or gguf", nullptr,
           "interleaved"},
      }};
  std::vector<std::string> positional;
  const int parsed = parse_command(command, argc, argv, &positional);
  if (parsed != kParsed) return parsed;
  if (positional.size() != 1) return report("convert", "give exactly one input checkpoint", kExitUsage);
  if (output.empty()) return report("convert", "no output file given (-o OUTPUT)", kExitUsage);
  request.input = positional[0];
  // OUTPUT.gguf: the same blocks as a GGUF for llama.cpp (gguf_writer.hpp), else a .mote file.
  request.gguf_output = names_gguf(output);
  request.progress = progress_printer();
  convert::Converted converted;
  std::string error;
  const convert::ConvertResult result = convert::convert_model(request, &converted, &error);
  if (result == convert::ConvertResult::usage_error) return report("convert", error, kExitUsage);
  if (result != convert::ConvertResult::ok || !convert::write_file(output, converted.bytes, &error))
    return report("convert", error, kExitError);
  for (const std::string &note : converted.notes) std::fprintf(stderr, "mote convert: note: %s\n", note.c_str());
  std::fprintf(stderr, "mote convert: wrote %s (%zu bytes, %zu tensors: %s)\n", output.c_str(), converted.bytes.size(),
               converted.n_tensors, converted.dtype_counts.c_str());
  return 0;
}

}  // namespace mote::cli

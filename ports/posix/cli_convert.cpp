// `mote convert`: llama2.c checkpoints (+ tokenizer.bin) into one .mote file.
#include "cli_common.hpp"
#include "llama2c.hpp"

namespace mote::cli {

int command_convert(int argc, char **argv) {
  std::string output, tokenizer, dtype = "f32", rope = "interleaved";
  const std::vector<Option> options = {
      {"--output", "-o", Option::kString, &output},
      {"--tokenizer", nullptr, Option::kString, &tokenizer},
      {"--dtype", nullptr, Option::kString, &dtype},
      {"--rope", nullptr, Option::kString, &rope},
  };
  std::vector<std::string> positional;
  std::string error;
  if (!parse_options(argc, argv, 2, options, &positional, &error)) return report("convert", error, kExitUsage);
  if (positional.size() != 1) return report("convert", "give exactly one input checkpoint", kExitUsage);
  if (output.empty()) return report("convert", "no output file given (-o OUTPUT)", kExitUsage);
  if (tokenizer.empty()) return report("convert", "llama2.c checkpoints need --tokenizer tokenizer.bin", kExitUsage);
  convert::Llama2cOptions convert_options;
  if (dtype == "f16")
    convert_options.dtype = format::DType::f16;
  else if (dtype != "f32")
    return report("convert", "--dtype must be f32 or f16", kExitUsage);
  if (rope == "split")
    convert_options.rope_layout = format::RopeLayout::split_half;
  else if (rope != "interleaved")
    return report("convert", "--rope must be interleaved or split", kExitUsage);

  convert::ModelData model;
  if (!convert::load_llama2c(positional[0], tokenizer, convert_options, &model, &error)) {
    return report("convert", error, kExitError);
  }
  const std::vector<uint8_t> bytes = convert::serialize(model);
  if (!convert::write_file(output, bytes, &error)) return report("convert", error, kExitError);
  std::fprintf(stderr, "mote convert: wrote %s (%zu bytes, %zu tensors, %s)\n", output.c_str(), bytes.size(),
               model.tensors.size(), dtype.c_str());
  return 0;
}

}  // namespace mote::cli

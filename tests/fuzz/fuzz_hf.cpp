// Hugging Face folder import: config.json, tokenizer.json and model.safetensors (three parts of
// the input, see split_parts) written to a scratch folder and converted as `mote convert` does.
#include <filesystem>

#include "fuzz_support.hpp"
#include "hf/hf.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::vector<std::string> parts = mote_fuzz::split_parts(data, size, 3);
  static const std::string dir = mote_fuzz::scratch_path("hf");
  std::filesystem::create_directories(dir);
  mote_fuzz::write_whole(dir + "/config.json", parts[0]);
  mote_fuzz::write_whole(dir + "/tokenizer.json", parts[1]);
  mote_fuzz::write_whole(dir + "/model.safetensors", parts[2]);
  mote::convert::SafetensorsOptions options;
  options.dtype = mote::format::DType::f32;
  mote::convert::ModelData model;
  std::string error;
  if (!mote::convert::load_hf_checkpoint(dir, options, &model, &error)) {
    FUZZ_CHECK(!error.empty() && error.find('\n') == std::string::npos);
    return 0;
  }
  mote_fuzz::check_converted(model);
  return 0;
}

// llama2.c import: a checkpoint and a tokenizer.bin (two parts of the input, see split_parts).
#include "fuzz_support.hpp"
#include "llama2c/llama2c.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::vector<std::string> parts = mote_fuzz::split_parts(data, size, 2);
  static const std::string checkpoint = mote_fuzz::scratch_path("model.bin");
  static const std::string tokenizer = mote_fuzz::scratch_path("tokenizer.bin");
  mote_fuzz::write_whole(checkpoint, parts[0]);
  mote_fuzz::write_whole(tokenizer, parts[1]);
  mote::convert::Llama2cOptions options;
  options.rope_layout = size % 2 == 0 ? mote::format::RopeLayout::interleaved : mote::format::RopeLayout::split_half;
  mote::convert::ModelData model;
  std::string error;
  if (!mote::convert::load_llama2c(checkpoint, tokenizer, options, &model, &error)) {
    FUZZ_CHECK(!error.empty() && error.find('\n') == std::string::npos);
    return 0;
  }
  mote_fuzz::check_converted(model);
  return 0;
}

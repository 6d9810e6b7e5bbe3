// GGUF import -> write -> open -> generate, in memory.
#include "fuzz_support.hpp"
#include "gguf/gguf.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mote::convert::GgufFile file;
  mote::convert::ModelData model;
  std::string error;
  mote::convert::GgufOptions options;
  options.dtype = size % 2 == 0 ? std::nullopt : std::optional<mote::format::DType>(mote::format::DType::q8_0);
  if (!mote::convert::parse_gguf(data, size, &file, &error) ||
      !mote::convert::gguf_to_model(file, options, &model, &error)) {
    FUZZ_CHECK(!error.empty() && error.find('\n') == std::string::npos);
    return 0;
  }
  mote_fuzz::check_converted(model);
  return 0;
}

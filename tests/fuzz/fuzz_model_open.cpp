// .mote open + generate. The harness rewrites the payload checksum of each mutant, so mutations
// reach the checks behind it (config, tensor table, tokenizer tables) instead of all failing at
// the checksum.
#include "format/format.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  const size_t header = sizeof(mote::format::FileHeader);
  if (size >= header && (size - header) % 8 == 0) {
    mote::format::FileHeader h;
    std::memcpy(&h, bytes.data(), header);
    h.payload_checksum = mote::format::payload_checksum(bytes.data() + header, size - header);
    std::memcpy(bytes.data(), &h, header);
  }
  mote_fuzz::exercise_model(bytes.data(), bytes.size());
  return 0;
}

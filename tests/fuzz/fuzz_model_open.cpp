// .mote open + generate. The harness rewrites the payload checksum of each mutant, so mutations
// reach the checks behind it (config, tensor table, tokenizer tables) instead of all failing at
// the checksum.
#include "format/format.hpp"
#include "fuzz_support.hpp"

namespace {

// format::payload_checksum (FORMAT.md: FNV-1a 64 over little-endian u64 words) without coverage
// instrumentation: the library's copy traces a comparison per word, and the harness's rewrite of
// every mutant's checksum was about 15% of this target's time. The reader still runs the
// instrumented one; the first inputs of each process check that the two agree.
#if defined(__clang__)
#define MOTE_UNTRACED __attribute__((no_sanitize("coverage")))
#else
#define MOTE_UNTRACED  // GCC (the replay build in ctest) has no coverage tracing to skip
#endif
MOTE_UNTRACED uint64_t checksum_untraced(const uint8_t *bytes, size_t n) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (size_t i = 0; i + 8 <= n; i += 8) {
    uint64_t word = 0;
    for (int b = 7; b >= 0; --b) word = (word << 8) | bytes[i + b];
    hash ^= word;
    hash *= 0x100000001b3ull;
  }
  return hash;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  const size_t header = sizeof(mote::format::FileHeader);
  if (size >= header && (size - header) % 8 == 0) {
    mote::format::FileHeader h;
    std::memcpy(&h, bytes.data(), header);
    h.payload_checksum = checksum_untraced(bytes.data() + header, size - header);
    static int compared = 0;
    if (compared < 16) {
      ++compared;
      FUZZ_CHECK(h.payload_checksum == mote::format::payload_checksum(bytes.data() + header, size - header));
    }
    std::memcpy(bytes.data(), &h, header);
  }
  mote_fuzz::exercise_model(bytes.data(), bytes.size());
  return 0;
}

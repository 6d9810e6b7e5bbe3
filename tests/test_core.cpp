// core/: fp16 conversion, the arena planner, the payload checksum and error-message numbers,
// each against values computed independently (numpy's float16, FNV-1a by hand in Python).
#include <cmath>
#include <cstring>
#include <string>

#include "core/arena.hpp"
#include "core/fp16.hpp"
#include "core/status.hpp"
#include "format/format.hpp"
#include "test_support.hpp"

TEST_CASE("f32 -> fp16 rounds to nearest even, as numpy's float16 does") {
  struct Case {
    float value;
    uint16_t bits;
  };
  // Expected bits from numpy: np.float32(v).astype(np.float16).view(np.uint16).
  const Case cases[] = {{1.0f, 0x3c00}, {65504.0f, 0x7bff}, {65520.0f, 0x7c00}, {1e-8f, 0x0000},  {5.96e-8f, 0x0001},
                        {0.1f, 0x2e66}, {-2.5f, 0xc100},    {2049.0f, 0x6800},  {2051.0f, 0x6802}};
  for (const Case &c : cases) {
    CAPTURE(c.value);
    CHECK(mote::f32_to_fp16(c.value) == c.bits);
  }
}

TEST_CASE("fp16 -> f32 -> fp16 is the identity for every non-NaN half") {
  int mismatches = 0;
  for (uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    const float f = mote::fp16_to_f32(static_cast<uint16_t>(bits));
    if (std::isnan(f)) continue;
    mismatches += mote::f32_to_fp16(f) != bits;
  }
  CHECK(mismatches == 0);
  CHECK(mote::fp16_to_f32(0x0001) == std::ldexp(1.0f, -24));  // smallest subnormal
  CHECK(std::isinf(mote::fp16_to_f32(0x7c00)));
}

TEST_CASE("the arena planner aligns, counts exactly and refuses sizes past the address space") {
  mote::ArenaPlanner plan(nullptr, 0);
  CHECK(plan.take<float>(3) == nullptr);  // planning only
  CHECK(plan.used() == 12);
  plan.take<uint8_t>(1);
  CHECK(plan.used() == 65);  // the second piece starts on the next 64-byte boundary
  CHECK(!plan.overflowed());
  plan.take<float>(UINT64_MAX / 2);  // 2^65 bytes: beyond any size_t
  CHECK(plan.overflowed());

  alignas(64) static unsigned char buffer[256];
  mote::ArenaPlanner real(buffer, sizeof buffer);
  float *a = real.take<float>(10);
  double *b = real.take<double>(2);
  CHECK(reinterpret_cast<unsigned char *>(a) == buffer);
  CHECK(reinterpret_cast<unsigned char *>(b) == buffer + 64);
  CHECK(real.take<uint8_t>(200) == nullptr);  // past the capacity
}

TEST_CASE("payload checksum is FNV-1a 64 over little-endian words") {
  const unsigned char bytes[16] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8};
  // Python: h = 0xcbf29ce484222325; for w in (0, 0x0807060504030201): h = ((h ^ w) * 0x100000001b3) % 2**64
  CHECK(mote::format::payload_checksum(bytes, sizeof bytes) == 0x72e01be7ea9b083aull);
}

TEST_CASE("float_text writes plain decimals without printf's %g") {
  char out[40];
  CHECK(std::string(mote::float_text(1e-5f, out, sizeof out)) == "0.00001");
  CHECK(std::string(mote::float_text(100000.0f, out, sizeof out)) == "100000");
  CHECK(std::string(mote::float_text(-2.5f, out, sizeof out)) == "-2.5");
  CHECK(std::string(mote::float_text(NAN, out, sizeof out)) == "nan");
  CHECK(std::string(mote::float_text(-INFINITY, out, sizeof out)) == "-inf");
  CHECK(std::string(mote::float_text(1e30f, out, sizeof out)) == "huge");
}

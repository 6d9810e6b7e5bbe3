// Binary search over the generated runs (about 1500 entries, 6 KB of flash), with ASCII
// answered without it.
#include "text/unicode_classes.hpp"

#include <cstddef>

namespace mote {
namespace {

const uint32_t kRuns[] = {
#include "text/unicode_classes.inc"
};
constexpr size_t kNumRuns = sizeof kRuns / sizeof kRuns[0];

UnicodeClass ascii_class(uint32_t c) {
  if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') return UnicodeClass::letter;
  if (c >= '0' && c <= '9') return UnicodeClass::number;
  if (c == ' ' || (c >= 0x09 && c <= 0x0D)) return UnicodeClass::space;
  return UnicodeClass::other;
}

}  // namespace

UnicodeClass unicode_class(uint32_t cp) {
  if (cp < 0x80) return ascii_class(cp);
  if (cp > 0x10FFFF) return UnicodeClass::other;
  // The last run whose first code point is <= cp (kRuns[0] starts at U+0000).
  const uint32_t key = (cp << 2) | 3u;
  size_t low = 0;
  size_t high = kNumRuns;  // invariant: kRuns[low] <= key < kRuns[high]
  while (high - low > 1) {
    const size_t mid = low + (high - low) / 2;
    if (kRuns[mid] <= key) {
      low = mid;
    } else {
      high = mid;
    }
  }
  return static_cast<UnicodeClass>(kRuns[low] & 3u);
}

const char *unicode_classes_version() { return MOTE_UNICODE_VERSION; }

}  // namespace mote

// Binary searches over the generated tables (wordpiece_tables.inc, about 14 KB of flash), with
// ASCII answered without them.
#include "text/wordpiece_unicode.hpp"

namespace mote {
namespace {

#include "text/wordpiece_tables.inc"

constexpr size_t kNumClassRuns = sizeof kBertClassRuns / sizeof kBertClassRuns[0];
constexpr size_t kNumStripPairs = sizeof kStripPairs / sizeof kStripPairs[0] / 2;
constexpr size_t kNumLowerRuns = sizeof kLowerRuns / sizeof kLowerRuns[0] / 2;
constexpr size_t kNumLowerSequences = sizeof kLowerSequences / sizeof kLowerSequences[0];
constexpr uint32_t kSequenceBase = 0x110000;  // a kStripPairs target at or above it is a sequence

// Hangul syllables (Unicode's conjoining jamo algorithm, chapter 3.12).
constexpr uint32_t kHangulFirst = 0xAC00, kLeadFirst = 0x1100, kVowelFirst = 0x1161, kTrailFirst = 0x11A7;
constexpr uint32_t kVowelCount = 21, kTrailCount = 28, kSyllableCount = 19 * kVowelCount * kTrailCount;

BertClass ascii_class(uint32_t c) {
  if (c == '\t' || c == '\n' || c == '\r' || c == ' ') return BertClass::space;
  if (c == 0x0B || c == 0x0C) return BertClass::control_space;
  if (c < 0x20 || c == 0x7F) return BertClass::control;
  const bool alnum = (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
  return alnum ? BertClass::other : BertClass::punct;
}

// Index of the last entry of a sorted table whose key is <= key (entry 0's key must be).
template <typename KeyOf>
size_t last_not_above(size_t n, uint32_t key, KeyOf key_of) {
  size_t low = 0;
  size_t high = n;  // invariant: key_of(low) <= key < key_of(high)
  while (high - low > 1) {
    const size_t mid = low + (high - low) / 2;
    if (key_of(mid) <= key) {
      low = mid;
    } else {
      high = mid;
    }
  }
  return low;
}

}  // namespace

BertClass bert_class(uint32_t cp) {
  if (cp < 0x80) return ascii_class(cp);
  if (cp > 0x10FFFF) return BertClass::other;
  const size_t i = last_not_above(kNumClassRuns, (cp << 3) | 7u, [](size_t j) { return kBertClassRuns[j]; });
  return static_cast<BertClass>(kBertClassRuns[i] & 7u);
}

size_t strip_accents(uint32_t cp, uint32_t out[kMaxMappedCodePoints]) {
  if (cp >= kHangulFirst && cp < kHangulFirst + kSyllableCount) {
    const uint32_t s = cp - kHangulFirst;
    out[0] = kLeadFirst + s / (kVowelCount * kTrailCount);
    out[1] = kVowelFirst + (s % (kVowelCount * kTrailCount)) / kTrailCount;
    out[2] = kTrailFirst + s % kTrailCount;
    return s % kTrailCount == 0 ? 2 : 3;
  }
  if (cp >= 0x80 && bert_class(cp) == BertClass::mark) return 0;
  out[0] = cp;
  if (cp < 0xC0 || cp < kStripPairs[0]) return 1;
  const size_t i = last_not_above(kNumStripPairs, cp, [](size_t j) { return kStripPairs[2 * j]; });
  if (kStripPairs[2 * i] != cp) return 1;
  const uint32_t target = kStripPairs[2 * i + 1];
  if (target < kSequenceBase) {
    out[0] = target;
    return 1;
  }
  const uint32_t *sequence = kStripSequences + (target - kSequenceBase);
  const size_t n = sequence[0];  // the generator keeps it <= cp's UTF-8 bytes <= 4
  for (size_t k = 0; k < n; ++k) out[k] = sequence[1 + k];
  return n;
}

size_t to_lowercase(uint32_t cp, uint32_t out[kMaxMappedCodePoints]) {
  out[0] = cp;
  if (cp < 0x80) {
    if (cp >= 'A' && cp <= 'Z') out[0] = cp + 32;
    return 1;
  }
  for (size_t i = 0; i < kNumLowerSequences; i += 2 + kLowerSequences[i + 1]) {
    if (kLowerSequences[i] != cp) continue;
    const size_t n = kLowerSequences[i + 1];
    for (size_t k = 0; k < n; ++k) out[k] = kLowerSequences[i + 2 + k];
    return n;
  }
  if (cp < (kLowerRuns[0] >> 11)) return 1;
  const size_t i = last_not_above(kNumLowerRuns, cp, [](size_t j) { return kLowerRuns[2 * j] >> 11; });
  const uint32_t first = kLowerRuns[2 * i] >> 11;
  const uint32_t count = ((kLowerRuns[2 * i] >> 1) & 0x3FFu) + 1;
  const uint32_t stride = (kLowerRuns[2 * i] & 1u) + 1;
  const uint32_t offset = cp - first;
  if (offset % stride == 0 && offset / stride < count) out[0] = cp + kLowerRuns[2 * i + 1];  // delta mod 2^32
  return 1;
}

const char *wordpiece_unicode_version() { return MOTE_WORDPIECE_UNICODE_VERSION; }

}  // namespace mote

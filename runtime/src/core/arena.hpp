// The arena planner: hands out 64-byte aligned pieces of the caller's buffer in order. Run over
// a null base it only counts, which is how mote_arena_size() gets the exact byte count from
// the same code that later carves the real arena (TFLite Micro's recording allocator idea).
#pragma once

#include <cstddef>
#include <cstdint>

namespace mote {

constexpr size_t kArenaAlignment = 64;

class ArenaPlanner {
 public:
  ArenaPlanner(void *base, size_t capacity) : base_(static_cast<uint8_t *>(base)), capacity_(capacity) {}

  // count elements of T, aligned; null when only planning, or once the arena has overflowed.
  // count is 64-bit so callers multiply sizes without wrapping on 32-bit targets; a total
  // beyond the address space marks the plan overflowed.
  template <typename T>
  T *take(uint64_t count) {
    const size_t offset = (used_ + kArenaAlignment - 1) & ~(kArenaAlignment - 1);
    if (overflowed_ || offset < used_ || count > (SIZE_MAX - offset) / sizeof(T)) {
      overflowed_ = true;
      return nullptr;
    }
    used_ = offset + static_cast<size_t>(count) * sizeof(T);
    if (base_ == nullptr || used_ > capacity_) return nullptr;
    return reinterpret_cast<T *>(base_ + offset);
  }

  size_t used() const { return used_; }
  bool overflowed() const { return overflowed_; }

 private:
  uint8_t *base_;
  size_t capacity_;
  size_t used_ = 0;
  bool overflowed_ = false;
};

}  // namespace mote

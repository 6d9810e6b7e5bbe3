// A GBNF grammar compiled through the C API into an arena of exactly the bytes
// mote_grammar_arena_size promised, followed by a guard that must stay untouched, with the
// matching questions the grammar tests ask of it (test_grammar, test_grammar_reference).
#pragma once

#include <cstdlib>
#include <cstring>
#include <string>

#include "mote/mote.h"

namespace mote_test {

constexpr size_t kGuard = 4096;
constexpr unsigned char kGuardByte = 0xA5;

// A grammar compiled into an arena of exactly mote_grammar_arena_size's bytes, followed by a guard.
struct Compiled {
  mote_grammar grammar{};
  unsigned char *arena = nullptr;
  size_t bytes = 0;
  mote_status status = MOTE_OK;
  char error[256] = "";

  explicit Compiled(const std::string &text) {
    status = mote_grammar_arena_size(text.data(), text.size(), &bytes, error, sizeof error);
    if (status != MOTE_OK) return;
    arena = static_cast<unsigned char *>(std::aligned_alloc(MOTE_ARENA_ALIGNMENT, (bytes + kGuard + 63) / 64 * 64));
    std::memset(arena + bytes, kGuardByte, kGuard);
    status = mote_grammar_init(&grammar, nullptr, text.data(), text.size(), arena, bytes, error, sizeof error);
  }
  ~Compiled() { std::free(arena); }
  Compiled(const Compiled &) = delete;
  Compiled &operator=(const Compiled &) = delete;

  bool guard_intact() const {
    for (size_t i = 0; i < kGuard; ++i) {
      if (arena[bytes + i] != kGuardByte) return false;
    }
    return true;
  }
  bool accepts(const std::string &text) {
    mote_grammar_reset(&grammar);
    if (mote_grammar_accept_bytes(&grammar, text.data(), text.size(), nullptr, 0) != MOTE_OK) return false;
    return (mote_grammar_state(&grammar) & MOTE_GRAMMAR_COMPLETE) != 0;
  }
  bool continues(const std::string &text) {
    mote_grammar_reset(&grammar);
    return mote_grammar_accept_bytes(&grammar, text.data(), text.size(), nullptr, 0) == MOTE_OK;
  }
};

}  // namespace mote_test

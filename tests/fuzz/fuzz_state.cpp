// mote_session_state_load on arbitrary bytes against a tiny model's session (tiny_mha, context
// 16, 5 tokens in the cache). A refused state gets one line and leaves the session exactly as it
// was (position, tokens, logits); an accepted one is a session that decodes and samples without a
// crash, whose size field is the size its position needs. mote_session_state_check_header (the
// header alone, as a file reader asks first) agrees: what it refuses the load refuses, what the
// load accepts it accepts with that size. The first byte picks how the rest reaches the loader:
//   even: the bytes as they are (a file from anywhere);
//   odd:  a valid state of the session with the rest XORed into it from offset 8 * (byte >> 1),
//         its checksum then made right again, so the checks behind the checksum (model, shape,
//         position, size, tokens) meet the mutations instead of stopping at it.
#include <cstring>
#include <vector>

#include "format/format.hpp"
#include "fuzz_models.hpp"

namespace {

constexpr size_t kChecksumOffset = 16, kChecksummedFrom = 24, kTotalSizeOffset = 32;  // models/FORMAT.md

struct FuzzSession {
  std::unique_ptr<mote_fuzz::AlignedBytes> arena;
  mote_session session{};
  std::vector<uint8_t> valid_state;  // after the prefix below
  std::vector<float> logits;         // the session's logits there
  std::vector<int32_t> tokens;
  uint32_t vocab = 0;
};

FuzzSession &fuzz_session() {
  static FuzzSession f = [] {
    FuzzSession s;
    const mote_model &model = mote_fuzz::sentencepiece_model();
    mote_session_options options = mote_session_options_default();
    options.context_length = 16;
    const size_t arena_n = mote_arena_size(&model, &options);
    FUZZ_CHECK(arena_n > 0);
    std::vector<uint8_t> zeros(arena_n);
    s.arena = std::make_unique<mote_fuzz::AlignedBytes>(zeros.data(), zeros.size());
    FUZZ_CHECK(mote_session_init(&s.session, &model, &options, s.arena->data.get(), arena_n, nullptr, 0) == MOTE_OK);
    mote_model_info info;
    mote_model_info_get(&model, &info);
    s.vocab = info.vocab_size;
    s.tokens = {1, 5, 9, 17, 3};
    FUZZ_CHECK(mote_prefill(&s.session, s.tokens.data(), s.tokens.size()) == MOTE_OK);
    s.logits.assign(mote_logits(&s.session), mote_logits(&s.session) + s.vocab);
    s.valid_state.resize(mote_session_state_size(&s.session));
    FUZZ_CHECK(mote_session_state_save(&s.session, s.valid_state.data(), s.valid_state.size(), nullptr) == MOTE_OK);
    return s;
  }();
  return f;
}

uint64_t read_u64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// The valid state with mutation XORed in from offset, its checksum recomputed where its total
// size (perhaps mutated too) lies within the bytes.
std::vector<uint8_t> mutated_state(const std::vector<uint8_t> &valid, size_t offset, const uint8_t *mutation,
                                   size_t n) {
  std::vector<uint8_t> state = valid;
  for (size_t i = 0; i < n && offset + i < state.size(); ++i) state[offset + i] ^= mutation[i];
  const uint64_t total = read_u64(state.data() + kTotalSizeOffset);
  if (total >= kChecksummedFrom && total <= state.size()) {
    const uint64_t checksum =
        mote::format::payload_checksum(state.data() + kChecksummedFrom, static_cast<size_t>(total) - kChecksummedFrom);
    for (int i = 0; i < 8; ++i) state[kChecksumOffset + i] = static_cast<uint8_t>(checksum >> (8 * i));
  }
  return state;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  FuzzSession &f = fuzz_session();
  // Every input starts from the same session: the valid state restored.
  FUZZ_CHECK(mote_session_state_load(&f.session, f.valid_state.data(), f.valid_state.size(), nullptr, 0) == MOTE_OK);
  const std::vector<uint8_t> state = (data[0] & 1) == 0
                                         ? std::vector<uint8_t>(data + 1, data + size)
                                         : mutated_state(f.valid_state, size_t{8} * (data[0] >> 1), data + 1, size - 1);
  uint64_t header_total = 0;
  char message[256] = "";
  const mote_status header_status =
      mote_session_state_check_header(&f.session, state.data(), state.size(), &header_total, message, sizeof message);
  FUZZ_CHECK(header_status == MOTE_OK ? header_total > 0 : std::strchr(message, '\n') == nullptr && header_total == 0);
  const mote_status status = mote_session_state_load(&f.session, state.data(), state.size(), message, sizeof message);
  FUZZ_CHECK(header_status == MOTE_OK || status != MOTE_OK);
  if (status != MOTE_OK) {
    FUZZ_CHECK(std::strlen(message) > 0 && std::strchr(message, '\n') == nullptr);  // one line, always
    FUZZ_CHECK(mote_session_position(&f.session) == f.tokens.size());
    std::vector<int32_t> tokens(16);
    size_t n = 0;
    FUZZ_CHECK(mote_session_tokens(&f.session, tokens.data(), tokens.size(), &n) == MOTE_OK);
    FUZZ_CHECK(std::vector<int32_t>(tokens.begin(), tokens.begin() + n) == f.tokens);
    const float *logits = mote_logits(&f.session);
    FUZZ_CHECK(logits != nullptr && std::memcmp(logits, f.logits.data(), f.vocab * sizeof(float)) == 0);
    return 0;
  }
  // Accepted: whatever it holds is a session within its bounds that runs, and its size field
  // is the size of the state it became.
  FUZZ_CHECK(header_status == MOTE_OK && header_total <= state.size());
  FUZZ_CHECK(header_total == mote_session_state_size(&f.session));
  const uint32_t position = mote_session_position(&f.session);
  FUZZ_CHECK(position <= mote_session_context_length(&f.session));
  std::vector<int32_t> tokens(16);
  size_t n = 0;
  FUZZ_CHECK(mote_session_tokens(&f.session, tokens.data(), tokens.size(), &n) == MOTE_OK && n == position);
  for (size_t i = 0; i < n; ++i) FUZZ_CHECK(tokens[i] >= 0 && static_cast<uint32_t>(tokens[i]) < f.vocab);
  mote_sampler_options sampler = mote_sampler_options_default();
  int32_t token = 0;
  if (mote_logits(&f.session) != nullptr) {
    const mote_status sampled = mote_sample(&f.session, &sampler, &token);
    FUZZ_CHECK(sampled == MOTE_OK || sampled == MOTE_ERR_NUMERIC);  // saved logits may hold anything
  }
  const mote_status decoded = mote_decode(&f.session, 2, nullptr);
  FUZZ_CHECK(decoded == (position < 16 ? MOTE_OK : MOTE_ERR_CONTEXT_FULL));
  return 0;
}

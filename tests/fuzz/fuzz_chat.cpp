// Chat templates: up to 8 messages (a role byte, then a length-prefixed content) through both
// models' templates, in every model variant (each chat template, fuzz_models.hpp), opening or
// continuing a conversation (the last part's first byte). A too-small buffer must report a capacity with which a second
// call succeeds (the tokens before merging: at least the final count).
#include "fuzz_models.hpp"

namespace {

void check_chat(const mote_model &model, const std::vector<mote_chat_message> &messages, uint32_t flags) {
  const size_t n_messages = messages.size();
  size_t needed = 0;
  const mote_status first = mote_chat_tokenize(&model, messages.data(), n_messages, flags, nullptr, 0, &needed);
  if (first != MOTE_ERR_BUFFER_TOO_SMALL && first != MOTE_OK) return;  // unsupported, a bad role
  std::vector<int32_t> tokens(needed);
  size_t n = 0;
  FUZZ_CHECK(mote_chat_tokenize(&model, messages.data(), n_messages, flags, tokens.data(), tokens.size(), &n) ==
             MOTE_OK);
  FUZZ_CHECK(n <= needed);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  const uint32_t flags = data[0] & 1u;
  const size_t n_messages = (data[0] >> 1) % 9;
  const std::vector<std::string> parts = mote_fuzz::split_parts(data + 1, size - 1, n_messages + 1);
  std::vector<mote_chat_message> messages(n_messages);
  for (size_t i = 0; i < n_messages; ++i) {
    const uint32_t role = parts[i].empty() ? 0u : static_cast<uint8_t>(parts[i][0]) % 4;  // 3: out of range
    std::memcpy(&messages[i].role, &role, sizeof role);
    messages[i].content = parts[i].empty() ? "" : parts[i].data() + 1;
    messages[i].content_n = parts[i].empty() ? 0 : parts[i].size() - 1;
  }
  const std::string &last = parts[n_messages];
  const uint32_t flags_all = flags | (!last.empty() && (last[0] & 1) ? uint32_t{MOTE_CHAT_CONTINUE} : 0u);
  for (uint32_t variant = 0; variant < mote_fuzz::kModelVariants; ++variant) {
    for (const mote_model *model : {&mote_fuzz::byte_level_model(variant), &mote_fuzz::sentencepiece_model(variant)}) {
      check_chat(*model, messages, flags_all);
    }
  }
  return 0;
}

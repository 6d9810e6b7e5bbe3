// The three tokenizers on arbitrary bytes. Byte-level BPE must round-trip exactly (detokenizing the
// tokens gives the input back) whenever it accepts the text; SentencePiece must give ids inside
// the vocabulary that each detokenize. The first byte picks the flags and (bits 2-4) the model
// variant: another pre-tokenizer, added control and user-defined tokens (fuzz_models.hpp).
// WordPiece must accept any bytes, fit in text_n + 2 ids with [CLS] and [SEP], and detokenize.
#include "fuzz_models.hpp"

namespace {

std::vector<int32_t> encode(const mote_model &model, const char *text, size_t n, uint32_t flags, mote_status *status) {
  std::vector<int32_t> tokens(n + 2);
  size_t count = 0;
  *status = mote_tokenize(&model, text, n, flags, tokens.data(), tokens.size(), &count);
  FUZZ_CHECK(*status != MOTE_ERR_BUFFER_TOO_SMALL);  // text_n + 2 always suffices
  tokens.resize(*status == MOTE_OK ? count : 0);
  return tokens;
}

std::string decode(const mote_model &model, const std::vector<int32_t> &tokens) {
  std::string out;
  char piece[512];
  for (size_t i = 0; i < tokens.size(); ++i) {
    size_t n = 0;
    FUZZ_CHECK(mote_detokenize(&model, i == 0 ? -1 : tokens[i - 1], tokens[i], piece, sizeof piece, &n) == MOTE_OK);
    out.append(piece, n);
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  const uint32_t flags = data[0] & (MOTE_TOKENIZE_SPECIAL);  // BOS would not round-trip as text
  const uint32_t variant = (data[0] >> 2) % mote_fuzz::kModelVariants;
  const char *text = reinterpret_cast<const char *>(data + 1);
  const size_t n = size - 1;
  mote_status status;
  const std::vector<int32_t> bpe = encode(mote_fuzz::byte_level_model(variant), text, n, flags, &status);
  FUZZ_CHECK(status == MOTE_OK || status == MOTE_ERR_UNSUPPORTED);
  if (status == MOTE_OK) FUZZ_CHECK(decode(mote_fuzz::byte_level_model(variant), bpe) == std::string(text, n));
  const std::vector<int32_t> sp =
      encode(mote_fuzz::sentencepiece_model(variant), text, n, MOTE_TOKENIZE_ADD_BOS, &status);
  FUZZ_CHECK(status == MOTE_OK || status == MOTE_ERR_UNSUPPORTED);
  decode(mote_fuzz::sentencepiece_model(variant), sp);
  // WordPiece: the normalizer options from the first byte's high bits; [CLS] ... [SEP] fit too.
  const mote_model &wordpiece = mote_fuzz::wordpiece_model(data[0] >> 2);
  const std::vector<int32_t> wp = encode(wordpiece, text, n, MOTE_TOKENIZE_ADD_BOS | flags, &status);
  FUZZ_CHECK(status == MOTE_OK);
  decode(wordpiece, wp);
  return 0;
}

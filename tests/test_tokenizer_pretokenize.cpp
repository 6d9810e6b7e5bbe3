// Where the byte-level pre-tokenizers cut a text into words (before any merge), against the
// regexes themselves: the expected words below are what Python's `regex` module finds with
// Llama 3's tokenizer.json pattern
//   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// and with GPT-2's 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// (regex.findall). Llama 3's contractions match in any case ("DON'T" is "DON" "'T", "'TIS" is
// "'T" "IS"); GPT-2's in lower case only ("DON'T" is "DON" "'" "T"). No vocabulary is needed: a
// byte-level vocabulary of the 256 bytes, with no merges.
#include <string>
#include <vector>

#include "text/byte_level_bpe.hpp"
#include "tokenizer_support.hpp"

namespace {

using mote::format::PreTokenizer;

std::unique_ptr<mote_test::TinyModel> bytes_only(PreTokenizer pre_tokenizer) {
  mote::convert::TokenizerData t;
  t.kind = mote::format::TokenizerKind::byte_level_bpe;
  // GPT-2's regex sees digits (no Digits pre-tokenizer before it); Llama 3's must not be flagged.
  t.flags = pre_tokenizer == PreTokenizer::gpt2 ? uint32_t{mote::format::kTokNoDigitSplit} : 0u;
  t.pre_tokenizer = pre_tokenizer;
  for (int b = 0; b < 256; ++b) {
    t.pieces.push_back(std::string(1, static_cast<char>(b)));
    t.scores.push_back(0.0f);
    t.types.push_back(1);  // normal
  }
  return mote_test::open_tiny_model(t);
}

std::vector<std::string> words(const mote_test::TinyModel &tiny, const std::string &text) {
  std::vector<size_t> ends(text.size() + 1);
  const size_t n = mote::byte_level_words(tiny.view.tokenizer, text.data(), text.size(), ends.data(), ends.size());
  REQUIRE(n <= ends.size());
  std::vector<std::string> out;
  for (size_t i = 0, begin = 0; i < n; begin = ends[i++]) out.push_back(text.substr(begin, ends[i] - begin));
  return out;
}

struct Case {
  const char *text;
  std::vector<std::string> llama3, gpt2;
};

const Case kCases[] = {
    {"DON'T", {"DON", "'T"}, {"DON", "'", "T"}},
    {"I'LL", {"I", "'LL"}, {"I", "'", "LL"}},
    {"HE'S", {"HE", "'S"}, {"HE", "'", "S"}},
    {"don't", {"don", "'t"}, {"don", "'t"}},
    {"YOU'RE", {"YOU", "'RE"}, {"YOU", "'", "RE"}},
    {"WE'VE", {"WE", "'VE"}, {"WE", "'", "VE"}},
    {"SHE'D", {"SHE", "'D"}, {"SHE", "'", "D"}},
    {"I'M", {"I", "'M"}, {"I", "'", "M"}},
    {"'TIS", {"'T", "IS"}, {"'", "TIS"}},
    {"'Twas", {"'T", "was"}, {"'", "Twas"}},
    {"O'DONNELL", {"O", "'D", "ONNELL"}, {"O", "'", "DONNELL"}},
    {"HE'SAID", {"HE", "'S", "AID"}, {"HE", "'", "SAID"}},
    {"I'Ll it'S", {"I", "'Ll", " it", "'S"}, {"I", "'", "Ll", " it", "'", "S"}},
    {"I'LL SAY 'TIS O'DONNELL'S; DON'T!",
     {"I", "'LL", " SAY", " '", "TIS", " O", "'D", "ONNELL", "'S", ";", " DON", "'T", "!"},
     {"I", "'", "LL", " SAY", " '", "TIS", " O", "'", "DONNELL", "'", "S", ";", " DON", "'", "T", "!"}},
};

}  // namespace

TEST_CASE("pre-tokenizer: Llama 3's contractions match in any case, GPT-2's in lower case only") {
  const auto llama3 = bytes_only(PreTokenizer::llama3);
  const auto gpt2 = bytes_only(PreTokenizer::gpt2);
  for (const Case &c : kCases) {
    INFO(std::string(c.text));
    CHECK(words(*llama3, c.text) == c.llama3);
    CHECK(words(*gpt2, c.text) == c.gpt2);
  }
  CHECK(words(*llama3, "").empty());
}

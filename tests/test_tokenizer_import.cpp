// The tokenizer side of GGUF / tokenizer.json import: llama.cpp's pre-tokenizer names and the
// Hugging Face Split regexes map to mote's stored pre-tokenizer by one table each, unknown ones
// are refused at convert time naming them, and tokenizer.ggml.eot_token_id ends generation.
#include <string>

#include "convert_support.hpp"
#include "vocab/byte_level_vocab.hpp"

namespace {

using mote::convert::PreTokenizerChoice;
using mote::format::PreTokenizer;
using mote_convert_test::convert_gguf;
using mote_convert_test::Gguf;
using mote_convert_test::valid_gguf;

PreTokenizerChoice from_gguf(const std::string &name) {
  PreTokenizerChoice c;
  std::string error;
  REQUIRE_MESSAGE(mote::convert::pre_tokenizer_from_gguf(name, &c, &error), error);
  return c;
}

}  // namespace

TEST_CASE("pre-tokenizer: llama.cpp's tokenizer.ggml.pre names") {
  CHECK(from_gguf("llama-bpe").kind == PreTokenizer::llama3);
  CHECK(from_gguf("llama3").kind == PreTokenizer::llama3);
  CHECK(from_gguf("qwen2").kind == PreTokenizer::qwen2);
  CHECK(from_gguf("gpt-2").kind == PreTokenizer::gpt2);
  CHECK(from_gguf("gpt-2").flags == mote::format::kTokNoDigitSplit);
  CHECK(from_gguf("gpt2").flags == mote::format::kTokNoDigitSplit);
  CHECK(from_gguf("smollm").flags == 0u);  // digits split first
  CHECK(from_gguf("").flags == 0u);        // no key: what mote always read it as
  CHECK(from_gguf("default").flags == 0u);
  PreTokenizerChoice c;
  std::string error;
  CHECK_FALSE(mote::convert::pre_tokenizer_from_gguf("deepseek-llm", &c, &error));
  CHECK(error.find("'deepseek-llm'") != std::string::npos);
  CHECK(error.find('\n') == std::string::npos);
}

TEST_CASE("pre-tokenizer: tokenizer.json Split regexes (Llama 3's, Qwen2's)") {
  PreTokenizerChoice c;
  std::string error;
  const std::string llama3 =
      "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
      "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
  REQUIRE(mote::convert::pre_tokenizer_from_regex(llama3, &c, &error));
  CHECK(c.kind == PreTokenizer::llama3);
  std::string qwen2 = llama3;
  qwen2.replace(qwen2.find("\\p{N}{1,3}"), 10, "\\p{N}");
  REQUIRE(mote::convert::pre_tokenizer_from_regex(qwen2, &c, &error));
  CHECK(c.kind == PreTokenizer::qwen2);
  CHECK_FALSE(mote::convert::pre_tokenizer_from_regex("\\p{N}{1,2}", &c, &error));
  CHECK(error.find("is not supported") != std::string::npos);
}

TEST_CASE("pre-tokenizer: stored in the converted file; an unknown one refused by mote convert") {
  mote::convert::ModelData m;
  Gguf g = valid_gguf();
  g.set_string("tokenizer.ggml.pre", "qwen2");
  REQUIRE(convert_gguf(g.build(), &m) == "");
  CHECK(m.tokenizer.pre_tokenizer == PreTokenizer::qwen2);
  CHECK(m.tokenizer.flags == 0u);
  g.set_string("tokenizer.ggml.pre", "chameleon");
  CHECK(convert_gguf(g.build(), &m).find("GGUF pre-tokenizer 'chameleon' (tokenizer.ggml.pre) is not supported") !=
        std::string::npos);
}

TEST_CASE("tokenizer.ggml.eot_token_id: the end-of-turn token ends generation even when eos is another") {
  mote::convert::ModelData m;
  Gguf g = valid_gguf();
  g.set_u32("tokenizer.ggml.eot_token_id", 261);  // a normal token here, " the"
  REQUIRE(convert_gguf(g.build(), &m) == "");
  CHECK(m.tokenizer.types[261] == mote::format::kTokenControl);
  CHECK(m.tokenizer.eos_id == 2);
}

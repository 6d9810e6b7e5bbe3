// load_llama2c, the library function: a tokenizer.bin it cannot trust is refused with one line.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "llama2c/llama2c.hpp"
#include "test_support.hpp"

namespace {

// Byte offset of token index's score in a llama2.c tokenizer.bin: the int32 max_token_length,
// then per token a float score, an int32 length and that many bytes (llama2.c's run.c layout).
size_t score_offset(const std::vector<unsigned char> &file, uint32_t index) {
  size_t at = 4;
  for (uint32_t i = 0; i < index; ++i) {
    int32_t length = 0;
    std::memcpy(&length, file.data() + at + 4, 4);
    at += 8 + static_cast<size_t>(length);
  }
  return at;
}

std::string write_temp(const std::string &name, const std::vector<unsigned char> &bytes) {
  const std::string path = std::string(P_tmpdir) + "/mote_test_llama2c_" + name;
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char *>(bytes.data()), bytes.size());
  return path;
}

}  // namespace

TEST_CASE("a tokenizer score that is NaN or inf is refused by load_llama2c itself, naming the token") {
  const std::string checkpoint = mote_test::golden_path("tiny_mha.bin");
  const std::vector<unsigned char> tokenizer = mote_test::read_file(mote_test::golden_path("tiny_tok64.bin"));
  mote::convert::Llama2cOptions options;
  mote::convert::ModelData data;
  std::string error;
  REQUIRE_MESSAGE(mote::convert::load_llama2c(checkpoint, write_temp("ok.bin", tokenizer), options, &data, &error),
                  error);

  const struct {
    float score;
    const char *text;
  } cases[] = {{NAN, "nan"}, {INFINITY, "inf"}, {-INFINITY, "-inf"}};
  for (const uint32_t token : {0u, 5u, 63u}) {
    for (const auto &c : cases) {
      std::vector<unsigned char> bad = tokenizer;
      std::memcpy(bad.data() + score_offset(bad, token), &c.score, 4);
      const std::string path = write_temp("bad.bin", bad);
      CAPTURE(token);
      CAPTURE(c.text);
      error.clear();
      CHECK_FALSE(mote::convert::load_llama2c(checkpoint, path, options, &data, &error));
      CHECK(error ==
            "tokenizer '" + path + "' gives token " + std::to_string(token) + " a non-finite score (" + c.text + ")");
      std::remove(path.c_str());
    }
  }
}

// `mote convert` as a user runs it: the importer picked by content (GGUF, Hugging Face,
// llama2.c), --dtype / --layout / --tokenizer handling, and a corrupt GGUF refused in one line.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "convert_support.hpp"
#include "test_support.hpp"

using namespace mote_convert_test;

namespace {

namespace fs = std::filesystem;

struct CliResult {
  int code = -1;
  std::string err;
};

CliResult run_cli(const std::string &args) {
  char pattern[] = "/tmp/mote_test_convert_err_XXXXXX";
  const int fd = mkstemp(pattern);
  REQUIRE(fd >= 0);
  close(fd);
  const std::string command = std::string(MOTE_CLI_EMULATOR) + " '" + MOTE_CLI_PATH + "' " + args + " 2>" + pattern;
  const int status = std::system(command.c_str());
  CliResult r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = slurp(pattern);
  std::remove(pattern);
  return r;
}

// A scratch folder for one test case, removed at its end; none (dir empty: the case returns,
// skipped) when the mote CLI is not part of this build.
struct CliScratch {
  std::string dir;
  CliScratch() {
    if (std::string(MOTE_CLI_PATH).empty() || !mote_test::file_exists(MOTE_CLI_PATH)) {
      MOTE_SKIP("the mote CLI is not part of this build (or not built yet)");
      return;
    }
    char pattern[] = "/tmp/mote_test_convert_cli_XXXXXX";
    REQUIRE(mkdtemp(pattern) != nullptr);
    dir = pattern;
  }
  ~CliScratch() {
    std::error_code ec;
    if (!dir.empty()) fs::remove_all(dir, ec);
  }
};

}  // namespace

TEST_CASE("cli: mote convert picks the importer by content") {
  const CliScratch scratch;
  if (scratch.dir.empty()) return;
  const std::string &dir = scratch.dir;
  const std::string out = dir + "/out.mote";
  const std::string gguf = "'" + mote_test::golden_path("tiny_llama.gguf") + "'";
  CliResult r = run_cli("convert " + gguf + " -o '" + out + "'");
  CHECK(r.code == 0);
  CHECK(r.err.find("wrote") != std::string::npos);
  // GGUF's default keeps each tensor's blocks, 8 rows interleaved where the rows allow it.
  CHECK(r.err.find(
            "tensors: 10 f32, 6 f16, 1 q8_0, 1 q4_1, 3 q8_0x8, 3 q4_0x8, 3 q4_1x8, 1 q4_kx8, 1 q5_kx8, 1 q6_kx8)") !=
        std::string::npos);
  CHECK(r.err.find("converting tensors") == std::string::npos);  // stderr is not a terminal
  CHECK(mote_test::file_exists(out));
  r = run_cli("convert '" + mote_test::golden_path("tiny_hf") + "' -o '" + out + "' --dtype f32");
  CHECK(r.code == 0);
  CHECK(r.err.find("f32") != std::string::npos);
  r = run_cli("convert " + gguf + " -o '" + out + "' --dtype q4_0");
  CHECK(r.code == 0);
  // Norms stay f32; the embedding and the classifier stay 8-bit (q8_0: their rows are not 8k).
  CHECK(r.err.find("tensors: 7 f32, 2 q8_0, 21 q4_0x8)") != std::string::npos);
  r = run_cli("convert " + gguf + " -o '" + out + "' --dtype q4_0 --layout gguf");
  CHECK(r.code == 0);
  CHECK(r.err.find("tensors: 7 f32, 2 q8_0, 21 q4_0)") != std::string::npos);
  // llama-quantize's Q2_K mix gives the 256-value ffn_down rows q3_k: q3_kx8, plain with gguf.
  r = run_cli("convert " + gguf + " -o '" + out + "' --dtype q2_k");
  CHECK(r.code == 0);
  CHECK(r.err.find("tensors: 7 f32, 1 q8_0, 1 q4_0, 18 q4_0x8, 3 q3_kx8)") != std::string::npos);
  r = run_cli("convert " + gguf + " -o '" + out + "' --dtype q2_k --layout gguf");
  CHECK(r.code == 0);
  CHECK(r.err.find("tensors: 7 f32, 1 q8_0, 19 q4_0, 3 q3_k)") != std::string::npos);
  r = run_cli("convert " + gguf + " -o '" + out + "' --layout ggml");
  CHECK(r.code == 2);
  CHECK(r.err.find("--layout must be interleaved or gguf") != std::string::npos);
  r = run_cli("convert " + gguf + " -o '" + out + "' --dtype q4_k_l");
  CHECK(r.code == 2);
  CHECK(r.err.find("--dtype must be f32, f16, q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl, q6_k, q2_k, q3_k_s") !=
        std::string::npos);
  // Rows that are not whole 32-element blocks fall back to f16: tiny_odd's dim is 40.
  r = run_cli("convert '" + mote_test::golden_path("tiny_odd.bin") + "' --tokenizer '" +
              mote_test::golden_path("tiny_tok67.bin") + "' -o '" + out + "' --dtype q8_0");
  CHECK(r.code == 0);
  CHECK(r.err.find("20 tensors: 5 f32, 15 f16)") != std::string::npos);
  r = run_cli("convert " + gguf + " -o '" + out + "' --tokenizer x.bin");
  CHECK(r.code == 2);
  CHECK(r.err.find("carries its own tokenizer") != std::string::npos);
  r = run_cli("convert " + gguf + " -o '" + out + "' --rope split");
  CHECK(r.code == 2);
  // A corrupt GGUF: exit 1, one line.
  Bytes bad = valid_gguf().build();
  bad.resize(bad.size() - 1);
  {
    std::ofstream f(dir + "/bad.gguf", std::ios::binary);
    f.write(reinterpret_cast<const char *>(bad.data()), static_cast<std::streamsize>(bad.size()));
  }
  r = run_cli("convert '" + dir + "/bad.gguf' -o '" + out + "'");
  CHECK(r.code == 1);
  CHECK(r.err.find("runs past the end of the file") != std::string::npos);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
}

TEST_CASE("cli: a NaN in an F32 GGUF tensor is named as a value, with the path once") {
  const CliScratch scratch;
  if (scratch.dir.empty()) return;
  const std::string &dir = scratch.dir;
  const std::string path = dir + "/nan.gguf";
  Gguf g = valid_gguf();
  const float nan = NAN;
  std::memcpy(g.tensor("blk.0.attn_k.weight")->data.data() + 4 * 5, &nan, 4);  // F32, element 5
  const Bytes bytes = g.build();
  {
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char *>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  const std::string refusal = "'" + path + "': tensor 'blk.0.attn_k' holds nan at index 5\n";
  for (const char *dtype : {"", " --dtype f16", " --dtype q8_0", " --dtype q4_1 --layout gguf"}) {
    const CliResult r = run_cli("convert '" + path + "' -o '" + dir + "/out.mote'" + dtype);
    CAPTURE(dtype);
    CHECK(r.code == 1);
    CHECK(r.err == "mote convert: " + refusal);
  }
  // Run directly, the GGUF is converted into the cache first: the same line, the path once.
  setenv("XDG_CACHE_HOME", dir.c_str(), 1);
  const CliResult r = run_cli("run -m '" + path + "' -p hi -n 1");
  CHECK(r.code == 1);
  CHECK(r.err.find("mote run: " + refusal) != std::string::npos);
  CHECK(std::count(r.err.begin(), r.err.end(), '\'') == 4);  // two quoted names: the path and the tensor
}

TEST_CASE("cli: an input of no known kind is named for what it is, not asked for a tokenizer") {
  const CliScratch scratch;
  if (scratch.dir.empty()) return;
  const std::string &dir = scratch.dir;
  const std::string out = " -o '" + dir + "/out.mote'";
  const std::string fifo = dir + "/pipe", text = dir + "/notes.txt", short_file = dir + "/short.bin";
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  std::ofstream(text) << "these are notes, not weights: a text file of no model format at all\n";
  std::ofstream(short_file) << "tiny";
  const struct {
    std::string input;
    int code;
    std::string message;
  } cases[] = {
      {fifo, 1, "'" + fifo + "' is not a regular file (it is a FIFO)"},
      {"/dev/zero", 1, "'/dev/zero' is not a regular file (it is a device)"},
      {text, 1, "'" + text + "' is not a GGUF file, a Hugging Face folder or a llama2.c checkpoint"},
      {short_file, 1, "'" + short_file + "' is not a GGUF file, a Hugging Face folder or a llama2.c checkpoint"},
      {dir + "/missing.bin", 1, "cannot open '" + dir + "/missing.bin': No such file or directory"},
      // A real checkpoint without its tokenizer: the one case that asks for --tokenizer.
      {mote_test::golden_path("tiny_mha.bin"), 2,
       "'" + mote_test::golden_path("tiny_mha.bin") + "' looks like a llama2.c checkpoint: those need --tokenizer"},
  };
  for (const auto &c : cases) {
    const CliResult r = run_cli("convert '" + c.input + "'" + out);
    CAPTURE(c.input);
    CHECK(r.code == c.code);
    CHECK(r.err.find("mote convert: " + c.message) == 0);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK((r.err.find("--tokenizer") != std::string::npos) == (c.code == 2));
  }
}

TEST_CASE("cli: an OUTPUT ending in .gguf, in any case, is written as a GGUF; any other as .mote") {
  const CliScratch scratch;
  if (scratch.dir.empty()) return;
  const std::string gguf = "'" + mote_test::golden_path("tiny_llama.gguf") + "'";
  const struct {
    const char *name, *magic;
  } outputs[] = {{"x.gguf", "GGUF"}, {"x.GGUF", "GGUF"},      {"x.Gguf", "GGUF"},
                 {"x.mote", "MOTE"}, {"x.gguf.mote", "MOTE"}, {"x_gguf", "MOTE"}};
  for (const auto &o : outputs) {
    const std::string out = scratch.dir + "/" + o.name;
    const CliResult r = run_cli("convert " + gguf + " -o '" + out + "'");
    INFO(std::string(o.name) << ": " << r.err);
    REQUIRE(r.code == 0);
    CHECK(slurp(out).substr(0, 4) == o.magic);
  }
}

TEST_CASE("cli: what the importer ignores on purpose is one note line on stderr") {
  const CliScratch scratch;
  if (scratch.dir.empty()) return;
  Gguf g = valid_gguf();
  g.set_u32("llama.attention.sliding_window", 16);
  const Bytes bytes = g.build();
  const std::string gguf = scratch.dir + "/windowed.gguf";
  std::ofstream(gguf, std::ios::binary)
      .write(reinterpret_cast<const char *>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  const CliResult r = run_cli("convert '" + gguf + "' -o '" + scratch.dir + "/windowed.mote'");
  INFO(r.err);
  CHECK(r.code == 0);
  CHECK(r.err.find("mote convert: note: GGUF llama.attention.sliding_window is ignored, as llama.cpp ignores it for "
                   "llama: every layer attends to the whole context\nmote convert: wrote ") == 0);
}

namespace {

// llama.cpp's names of the ggml type ids (ggml.h), lower-cased as mote names its dtypes.
const char *ggml_type_name(uint32_t id) {
  switch (id) {
    case 0:
      return "f32";
    case 1:
      return "f16";
    case 2:
      return "q4_0";
    case 3:
      return "q4_1";
    case 6:
      return "q5_0";
    case 7:
      return "q5_1";
    case 8:
      return "q8_0";
    case 10:
      return "q2_k";
    case 11:
      return "q3_k";
    case 12:
      return "q4_k";
    case 13:
      return "q5_k";
    case 14:
      return "q6_k";
    case 20:
      return "iq4_nl";
    case 23:
      return "iq4_xs";
    case 30:
      return "bf16";
    default:
      return "?";
  }
}

// "N type" for each type of the file's tensors, as the report's "(..., 21 tensors: 5 f32, 16 q8_0)".
std::map<std::string, size_t> report_counts(const std::string &err) {
  std::map<std::string, size_t> counts;
  const size_t from = err.find("tensors: "), to = err.find(')', from);
  REQUIRE(from != std::string::npos);
  std::istringstream list(err.substr(from + 9, to - from - 9));
  size_t n = 0;
  std::string name;
  while (list >> n >> name) counts[name.substr(0, name.find(','))] += n;
  return counts;
}

}  // namespace

TEST_CASE("cli: convert to GGUF reports the types the GGUF holds (plain blocks), not mote's interleaved ones") {
  const CliScratch scratch;
  if (scratch.dir.empty()) return;
  for (const char *dtype : {"q4_k_m", "q4_0", "q8_0"}) {
    const std::string out = scratch.dir + "/tiny_" + dtype + ".gguf";
    const CliResult r =
        run_cli("convert '" + mote_test::golden_path("tiny_hf") + "' --dtype " + dtype + " -o '" + out + "'");
    INFO(std::string(dtype) << ": " << r.err);
    REQUIRE(r.code == 0);
    const std::string bytes = slurp(out);
    mote::convert::GgufFile file;
    std::string error;
    REQUIRE(mote::convert::parse_gguf(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size(), &file, &error));
    std::map<std::string, size_t> held;
    for (const auto &t : file.tensors) ++held[ggml_type_name(t.type)];
    CHECK(report_counts(r.err) == held);
    CHECK(r.err.find("x8") == std::string::npos);
  }
}

// `mote perplexity`, run as a user runs it: the value and its standard error against an
// independent PyTorch oracle (tests/golden/gen_perplexity_goldens.py over aidreams260K and
// perplexity_text.txt), results that do not depend on threads or batch size, and one-line
// errors. The oracle case needs ../shared/models and is its own ctest entry
// (test_perplexity_oracle), reported as skipped when the models are absent.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "cli_support.hpp"

using namespace mote_cli_test;

namespace {

// "perplexity: P +/- S (W windows of N tokens, C scored tokens)" on stdout.
struct Printed {
  double ppl = 0, se = 0;
  unsigned windows = 0, window = 0, scored = 0;
};

Printed parse_result(const std::string &out) {
  Printed p;
  const int fields = std::sscanf(out.c_str(), "perplexity: %lf +/- %lf (%u windows of %u tokens, %u scored tokens)",
                                 &p.ppl, &p.se, &p.windows, &p.window, &p.scored);
  INFO("stdout: " << out);
  REQUIRE(fields == 5);
  return p;
}

// The running values "[1]12.3456,[2]..." on stderr.
std::vector<double> parse_running(const std::string &err) {
  std::vector<double> values;
  for (size_t at = err.find("[1]"); at != std::string::npos; at = err.find('[', at + 1)) {
    const size_t close = err.find(']', at);
    if (close == std::string::npos) break;
    values.push_back(std::stod(err.substr(close + 1)));
  }
  return values;
}

bool close_relative(double got, double want, double tolerance) {
  return std::fabs(got - want) <= tolerance * std::fabs(want);
}

// Lowercase words: text the tiny model's 64-token vocabulary spells letter by letter.
std::string tiny_text(size_t words) {
  const char *pool[] = {"the", "quiet", "river", "moves", "under", "a", "pale", "moon", "and", "sings"};
  std::string text;
  for (size_t i = 0; i < words; ++i) text += std::string(i ? " " : "") + pool[(i * 7 + i / 3) % 10];
  return text;
}

}  // namespace

TEST_CASE("perplexity: aidreams260K agrees with the PyTorch oracle") {
  if (!have_cli()) return;
  const std::string checkpoint = mote_test::shared_model("aidreams260K.bin");
  const std::string tokenizer = mote_test::shared_model("aidreams_tok512.bin");
  if (checkpoint.empty() || tokenizer.empty()) return;
  const std::string model = workspace().path("aidreams.mote");
  const Result converted =
      run_cli("convert " + quote(checkpoint) + " --tokenizer " + quote(tokenizer) + " -o " + quote(model));
  INFO("convert stderr: " << converted.err);
  REQUIRE(converted.code == 0);

  const std::vector<std::string> cases = mote_test::read_lines(mote_test::golden_path("perplexity.txt"));
  REQUIRE(cases.size() >= 2);
  for (const std::string &line : cases) {
    INFO("oracle: " << line);
    using mote_test::manifest_value;
    // --kv f32: the oracle's precision (the default cache is f16).
    std::string args = "perplexity -m " + quote(model) + " --kv f32 -f " +
                       quote(mote_test::golden_path(manifest_value(line, "text")));
    if (manifest_value(line, "ctx") != "0") args += " --ctx " + manifest_value(line, "ctx");
    if (manifest_value(line, "chunks") != "0") args += " --chunks " + manifest_value(line, "chunks");
    const Result r = run_cli(args + " -t 1");
    INFO("stderr: " << r.err);
    REQUIRE(r.code == 0);
    const Printed p = parse_result(r.out);
    CHECK(p.windows == std::stoul(manifest_value(line, "windows")));
    CHECK(p.window == std::stoul(manifest_value(line, "window")));
    CHECK(p.scored == std::stoul(manifest_value(line, "scored")));
    CHECK(r.err.find("perplexity over " + manifest_value(line, "tokens") + " tokens") != std::string::npos);
    const double ppl = std::stod(manifest_value(line, "ppl")), se = std::stod(manifest_value(line, "se"));
    CHECK_MESSAGE(close_relative(p.ppl, ppl, 1e-3), "mote " << p.ppl << ", PyTorch " << ppl);
    CHECK_MESSAGE(close_relative(p.se, se, 1e-3), "mote " << p.se << ", PyTorch " << se);
    // The running value after each window, as llama.cpp prints it.
    const std::string expected_csv = manifest_value(line, "running");
    std::vector<double> expected;
    for (size_t at = 0; at < expected_csv.size();) {
      size_t end = expected_csv.find(',', at);
      if (end == std::string::npos) end = expected_csv.size();
      expected.push_back(std::stod(expected_csv.substr(at, end - at)));
      at = end + 1;
    }
    const std::vector<double> running = parse_running(r.err);
    REQUIRE(running.size() == expected.size());
    for (size_t i = 0; i < running.size(); ++i) CHECK(close_relative(running[i], expected[i], 1e-3));

    // Two threads print exactly the same result.
    const Result two = run_cli(args + " -t 2");
    CHECK(two.code == 0);
    CHECK(two.out == r.out);
  }

  // Streaming: from a file of 1 MiB and more, perplexity reads and tokenizes only a prefix (the
  // whole file's tokens up to a word boundary); its windows are the short text's, so the output
  // is identical. The same for the text without spaces: one endless word, cut anywhere.
  std::string text = slurp(mote_test::golden_path("perplexity_text.txt")), squeezed;
  for (char c : text) squeezed += c == ' ' || c == '\n' ? "" : std::string(1, c);
  for (const std::string &short_text : {text, squeezed}) {
    std::string long_text;
    while (long_text.size() < (1u << 20)) long_text += short_text;
    write_text(workspace().path("short.txt"), short_text);
    write_text(workspace().path("long.txt"), long_text);
    for (const char *windows : {" --chunks 4", " --ctx 51 --chunks 3"}) {
      const std::string args = "perplexity -m " + quote(model) + windows + " -t 1 -f ";
      const Result whole = run_cli(args + quote(workspace().path("short.txt")));
      const Result streamed = run_cli(args + quote(workspace().path("long.txt")));
      INFO("stderr: " << streamed.err);
      REQUIRE(whole.code == 0);
      CHECK(streamed.err.find("perplexity over the first ") != std::string::npos);
      CHECK(streamed.out == whole.out);
    }
  }
}

TEST_CASE("perplexity: threads, batch size and KV cache type") {
  if (!have_cli()) return;
  const std::string model = quote(tiny_model());
  const std::string text = workspace().path("tiny_text.txt");
  write_text(text, tiny_text(200));
  const std::string args = "perplexity -m " + model + " -f " + quote(text) + " --ctx 24";
  const Result one = run_cli(args + " -t 1");
  INFO("stderr: " << one.err);
  REQUIRE(one.code == 0);
  const Printed p = parse_result(one.out);
  CHECK(p.window == 24);
  CHECK(p.scored == p.windows * (24 - 1 - 12));  // llama.cpp scores N-1-N/2 tokens per window
  CHECK(std::isfinite(p.ppl));
  CHECK(p.ppl > 1.0);
  CHECK(p.se > 0.0);
  CHECK(parse_running(one.err).size() == p.windows);
  CHECK(run_cli(args + " -t 2").out == one.out);  // thread count does not change results
  CHECK(run_cli(args + " -t 2 -b 1").out == one.out);
  CHECK(run_cli(args + " -b 5").out == one.out);  // nor does the prefill batch size
  const Result limited = run_cli(args + " --chunks 2");
  CHECK(limited.code == 0);
  CHECK(parse_result(limited.out).windows == 2);
  CHECK(run_cli(args + " --kv f16").out == one.out);  // f16 is the default
  const Result f32 = run_cli(args + " --kv f32");
  CHECK(f32.code == 0);
  CHECK(close_relative(parse_result(f32.out).ppl, p.ppl, 1e-2));
}

TEST_CASE("perplexity: errors are one line") {
  if (!have_cli()) return;
  Workspace &w = workspace();
  const std::string model = quote(tiny_model());
  const std::string text = w.path("errors_text.txt");
  write_text(text, tiny_text(200));
  const std::string good = "perplexity -m " + model + " -f " + quote(text);
  expect_error("perplexity -f " + quote(text), 2, "no model given (-m MODEL)");
  expect_error("perplexity -m " + model, 2, "no text file given (-f TEXT)");
  expect_error(good + " --bogus", 2, "unknown option '--bogus'");
  expect_error(good + " stray", 2, "unexpected argument 'stray'");
  expect_error(good + " --ctx", 2, "needs a value");
  expect_error(good + " --ctx -3", 2, "invalid value '-3' for --ctx");
  expect_error(good + " --ctx 0", 2, "--ctx must be in [4, ");
  expect_error(good + " --ctx 3", 2, "--ctx must be in [4, ");
  expect_error(good + " --ctx 100000", 2, "(the model's context)");
  expect_error(good + " --chunks 0", 2, "--chunks must be at least 1");
  expect_error(good + " --kv f8", 2, "--kv must be f32, f16 or q8_0");
  expect_error(good + " -t 0", 2, "--threads must be in [1, 1024]");
  expect_error("perplexity -m " + quote(w.path("no_such.mote")) + " -f " + quote(text), 1, "cannot open");
  expect_error("perplexity -m " + model + " -f " + quote(w.path("no_such.txt")), 1, "cannot open");
  expect_error("perplexity -m " + model + " -f " + quote(w.dir), 1, "is not a regular file");
  write_text(w.path("empty.txt"), "");
  expect_error("perplexity -m " + model + " -f " + quote(w.path("empty.txt")), 1, "is empty");
  write_text(w.path("short.txt"), "the moon");
  expect_error("perplexity -m " + model + " -f " + quote(w.path("short.txt")) + " --ctx 24", 1,
               "tokens; one window needs 24 (use a longer text or a smaller --ctx)");
}

TEST_CASE("perplexity: SmolLM2 quantized within tolerance of f16 on a slice of the GPL-3 text") {
  // On the first 4 windows of 256 tokens (508 scored) of a text every Debian machine has. All
  // four come from the fetched Q4_1 GGUF: f16 is its dequantized weights (the baseline), q4_1
  // the tensors as stored, q8_0 and q4_0 re-quantized from them (the embedding/classifier kept
  // in q8_0 for q4_0). The 0.5% for q8_0 holds over the whole text (bench/README.md, 2026-12-01: +0.35% with
  // AVX-512, +0.05% with AVX2), but on 508 tokens the kernel table alone moves q8_0 by tenths of
  // a percent (the float steps differ in the last bit between ISAs and the 8-bit rounding of the
  // next product spreads it: -0.56% scalar, -0.45% AVX2, -0.57% AVX-512 against f16; single float
  // kernels swapped for their twins gave -1.1% to -0.2%), so the slice checks 1.5% and q4_1 8%.
  // q4_0 cannot meet 8% from this source: rounding Q4_1's asymmetric blocks again onto Q4_0's symmetric grid costs
  // +17% here (measured 22.63 vs 19.27; +26% over the whole text, where llama-quantize's own
  // Q4_0 of the same GGUF scores the same in mote), so its bound is 20%, a regression guard.
  // Full-text values are in bench/README.md's measurement log (2026-12-01).
  if (!have_cli()) return;
  const std::string gguf = mote_test::smollm2_gguf();
  if (gguf.empty()) return;
  const std::string text = "/usr/share/common-licenses/GPL-3";
  if (slurp(text).empty()) {
    MOTE_SKIP(text << " is absent (Debian's base-files ships it)");
    return;
  }
  const auto perplexity = [&](const std::string &dtype) {
    const std::string model = workspace().path("smollm2_" + dtype + ".mote");
    const std::string dtype_flag = dtype == "q4_1" ? "" : " --dtype " + dtype;
    REQUIRE(run_cli("convert " + quote(gguf) + " -o " + quote(model) + dtype_flag).code == 0);
    // --kv f32: the cache the bounds were measured with (the default is f16).
    const Result r =
        run_cli("perplexity -m " + quote(model) + " -f " + quote(text) + " --ctx 256 --chunks 4 -t 2 --kv f32");
    INFO("stderr: " << r.err);
    REQUIRE(r.code == 0);
    const Printed p = parse_result(r.out);
    CHECK(p.scored == 4 * (256 - 1 - 128));
    MESSAGE(dtype << ": " << p.ppl << " +/- " << p.se);
    return p.ppl;
  };
  const double f16 = perplexity("f16");
  CHECK(close_relative(perplexity("q8_0"), f16, 0.015));
  CHECK(close_relative(perplexity("q4_0"), f16, 0.20));
  CHECK(close_relative(perplexity("q4_1"), f16, 0.08));
  // The GGUF mixes, quantized by mote as llama-quantize does (byte-identical; their agreement with
  // llama.cpp on the same files is bench/README.md's accuracy table, bench/quality.py). Re-quantizing
  // Q4_1's weights costs each its own amount; measured on this slice (AVX-512): q6_k +0.1%,
  // q4_k_m +1.6%, q5_0 +3.5%, q5_k_m +13%, iq4_nl +15%, q3_k_m +19%, q2_k +29%. The bounds are
  // regression guards with room for the kernel tables' spread.
  CHECK(close_relative(perplexity("q6_k"), f16, 0.015));
  CHECK(close_relative(perplexity("q4_k_m"), f16, 0.04));
  CHECK(close_relative(perplexity("q5_0"), f16, 0.06));
  CHECK(close_relative(perplexity("q5_k_m"), f16, 0.18));
  CHECK(close_relative(perplexity("iq4_nl"), f16, 0.20));
  CHECK(close_relative(perplexity("q3_k_m"), f16, 0.25));
  CHECK(close_relative(perplexity("q2_k"), f16, 0.35));
}

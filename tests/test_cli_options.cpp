// The `mote` command line a llama.cpp or llama2.c user expects: --help on every command lists
// every option its parser accepts, --version, llama.cpp's spellings give what the long names give,
// prompts from files and stdin, stop strings, bench's lists and output formats, and GGUF models
// run directly (converted once into the cache, reused, reconverted when the file changes).
#include <chrono>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>

#include "cli_support.hpp"

using namespace mote_cli_test;

namespace {

const char *const kCommandNames[] = {"run", "chat", "bench", "inspect", "convert", "perplexity", "embed"};

// Every spelling on the help page's option lines ("  -n, --n-predict, --tokens N   ...").
// (No std::regex: GCC 12's <regex> trips -Werror=maybe-uninitialized in the asan build.)
std::vector<std::string> help_spellings(const std::string &help) {
  std::vector<std::string> names;
  std::istringstream in(help);
  for (std::string text; std::getline(in, text);) {
    if (text.rfind("  -", 0) != 0) continue;
    for (size_t begin = 2;;) {
      const size_t end = text.find_first_of(", ", begin);
      names.push_back(text.substr(begin, end - begin));
      if (end == std::string::npos || text.compare(end, 3, ", -") != 0) break;
      begin = end + 2;
    }
  }
  return names;
}

// The generated text of `mote run ARGS` (stdout), checked to succeed.
std::string run_text(const std::string &args, const std::string &stdin_path = "/dev/null") {
  const Result r = run_cli("run " + args, stdin_path);
  INFO("mote run " << args << "\nstderr: " << r.err);
  CHECK(r.code == 0);
  return r.out;
}

}  // namespace

TEST_CASE("cli: every command's --help lists its options with defaults, and each one parses") {
  if (!have_cli()) return;
  for (const char *name : kCommandNames) {
    INFO("command " << name);
    const Result help = run_cli(std::string(name) + " --help");
    CHECK(help.code == 0);
    CHECK(help.err.empty());
    CHECK(help.out.find(std::string("usage: mote ") + name) != std::string::npos);
    CHECK(run_cli(std::string("help ") + name).out == help.out);
    CHECK(run_cli(std::string(name) + " -h").out == help.out);
    const std::vector<std::string> spellings = help_spellings(help.out);
    CHECK(spellings.size() > 3);
    for (const std::string &spelling : spellings) {
      if (spelling == "-h" || spelling == "--help") continue;
      // The parser stops at --help after the option: "1" is a valid value of every kind.
      INFO("option " << spelling);
      const bool with_value = run_cli(std::string(name) + " " + spelling + " 1 --help").code == 0;
      CHECK((with_value || run_cli(std::string(name) + " " + spelling + " --help").code == 0));
    }
    expect_error(std::string(name) + " --no-such-option", 2,
                 std::string("unknown option '--no-such-option'; see 'mote ") + name + " --help'");
  }
  // The defaults a user asks about are on the page.
  const std::string run_help = run_cli("run --help").out;
  for (const char *needle : {"--n-predict", "(default: 256)", "--ctx-size", "--temp", "(default: 0.8)", "--top-p",
                             "--top-k", "--min-p", "--threads", "--batch-size", "--kv", "(default: f16)"}) {
    CHECK_MESSAGE(run_help.find(needle) != std::string::npos, needle);
  }
  CHECK(run_cli("chat --help").out.find("(default: 0.2)") != std::string::npos);
  const Result list = run_cli("help");
  CHECK(list.code == 0);
  for (const char *name : kCommandNames) CHECK(list.out.find(std::string("  ") + name) != std::string::npos);
  expect_error("help nosuch", 2, "unknown command 'nosuch'");
}

TEST_CASE("cli: --version") {
  if (!have_cli()) return;
  for (const char *spelling : {"--version", "version"}) {
    const Result r = run_cli(spelling);
    CHECK(r.code == 0);
    CHECK(r.out.rfind("mote 0.", 0) == 0);
    CHECK(r.out.find("kernels: ") != std::string::npos);
    CHECK(r.out.find("openmp: o") != std::string::npos);
  }
}

TEST_CASE("cli: llama.cpp's spellings give what the long names give") {
  if (!have_cli()) return;
  const std::string model = "-m " + quote(tiny_model()) + " -p 'a b' --temp 1 ";
  const std::pair<const char *, const char *> pairs[] = {
      {"-n 7", "--tokens 7"},          {"--n-predict 7", "--tokens 7"},   {"-s 5", "--seed 5"},
      {"-c 32", "--ctx 32"},           {"--ctx-size 32", "--ctx 32"},     {"-b 3", "--batch 3"},
      {"--batch-size 3", "--batch 3"}, {"-ctk f16 -ctv f16", "--kv f16"}, {"--cache-type-k f16", "--kv f16"},
  };
  for (const auto &pair : pairs) {
    const char *alias = pair.first, *long_form = pair.second;  // INFO's lambda cannot capture a binding (C++17)
    INFO(alias << " vs " << long_form);
    const std::string defaults =
        std::string(alias).find("-n") == std::string::npos && std::string(alias).find("predict") == std::string::npos
            ? "-n 7 "
            : "";
    const std::string seed = std::string(alias).find("-s ") == std::string::npos ? "--seed 5 " : "";
    CHECK(run_text(model + seed + defaults + alias) == run_text(model + seed + defaults + long_form));
  }
  expect_error("run " + model + "-ctk f16 -ctv f32", 2, "mote keeps K and V in one type");
  expect_error("run -m " + quote(tiny_model()), 2, "a prompt is required (-p TEXT or -f FILE)");

  // -n -1: until the context is full (or the end of the text).
  const Result endless = run_cli("run -m " + quote(tiny_model()) + " -p a -n -1 --ctx 12 --temp 0 --ignore-eos");
  CHECK(endless.code == 0);
  CHECK(endless.err.find("the context of 12 tokens is full") != std::string::npos);

  // --no-display-prompt: the generated text alone.
  const std::string greedy = "-m " + quote(tiny_model()) + " -p 'a b' -n 8 --temp 0";
  const std::string full = run_text(greedy);
  const std::string generated = run_text(greedy + " --no-display-prompt");
  REQUIRE(full.size() > generated.size());
  CHECK(full.substr(full.size() - generated.size()) == generated);
  const std::string prompt_part = full.substr(0, full.size() - generated.size());

  // With stdout and stderr in one log, the statistics line starts a line of its own (the piped
  // reply does not end with a newline).
  const std::string log = workspace().path("shared_log.txt");
  REQUIRE(std::system((cli_invocation() + " run " + greedy + " >" + quote(log) + " 2>&1 </dev/null").c_str()) == 0);
  CHECK(slurp(log).find(full + "\nprompt: ") == 0);

  // -f FILE and -f - read the prompt.
  write_text(workspace().path("prompt.txt"), "a b");
  const std::string from_file = "-m " + quote(tiny_model()) + " -n 8 --temp 0 -f ";
  CHECK(run_text(from_file + quote(workspace().path("prompt.txt"))) == full);
  CHECK(run_text(from_file + "-", workspace().path("prompt.txt")) == full);
  expect_error("run " + greedy + " -f " + quote(workspace().path("prompt.txt")), 2, "give -p or -f, not both");

  // -r STOP: generation stops at the stop string, which is not printed.
  REQUIRE(generated.size() >= 4);
  const std::string stop = generated.substr(generated.size() / 2, 2);
  const std::string stopped = run_text(greedy + " -r " + quote(stop));
  CHECK(stopped == prompt_part + generated.substr(0, generated.find(stop)));
}

TEST_CASE("cli: bench takes comma lists and prints md, csv or one JSON array") {
  if (!have_cli()) return;
  const std::string bench = "bench -m " + quote(tiny_model()) + " -p 4 -n 2 -r 1 ";
  const Result md = run_cli(bench + "-t 1,2");
  INFO("stderr: " << md.err);
  CHECK(md.code == 0);
  CHECK(md.out.find("| threads |") != std::string::npos);
  CHECK(md.out.find(" ± ") != std::string::npos);
  CHECK(md.out.find("| pp4 |") != std::string::npos);
  CHECK(md.out.find("| tg2 |") != std::string::npos);
  const Result json = run_cli(bench + "-t 1,2 -p 4,8 -o json");
  CHECK(json.code == 0);
  CHECK(json.out.front() == '[');
  CHECK(json.out.find("]\n") == json.out.size() - 2);
  size_t objects = 0;
  for (size_t at = 0; (at = json.out.find("\"decode_tokens_per_s\"", at)) != std::string::npos; ++at) ++objects;
  CHECK(objects == 4);
  CHECK(json.out.find("\"open_to_first_token_s\"") != std::string::npos);
  CHECK(run_cli(bench + "--json").out.front() == '[');
  const Result csv = run_cli(bench + "-o csv");
  CHECK(csv.out.rfind("model,backend,isa,threads,test,tokens_per_s,stddev\n", 0) == 0);
  // MOTE_ISA picks a kernel table this CPU runs (the scalar twins run everywhere); a name it does
  // not run is ignored.
  setenv("MOTE_ISA", "scalar", 1);
  CHECK(run_cli(bench + "-o csv").out.find(",scalar,") != std::string::npos);
  setenv("MOTE_ISA", "no_such_isa", 1);
  const Result ignored = run_cli(bench + "-o csv");
  unsetenv("MOTE_ISA");
  CHECK(ignored.code == 0);
  CHECK(ignored.out.find("," + std::string(mote_isa_name()) + ",") != std::string::npos);
  // --check times the prompt as a speculative check: every position's logits (checkN, "check": true).
  const Result check = run_cli(bench + "-t 1 --check -o csv");
  CHECK(check.code == 0);
  CHECK(check.out.find(",check4,") != std::string::npos);
  CHECK(check.out.find(",pp4,") == std::string::npos);
  CHECK(run_cli(bench + "-t 1 --check -o json").out.find("\"check\": true") != std::string::npos);
  CHECK(json.out.find("\"check\": false") != std::string::npos);
  expect_error(bench + "-o yaml", 2, "-o must be md, csv or json");
  expect_error(bench + "-t 1,x", 2, "invalid value '1,x' for --threads");
}

TEST_CASE("cli: bench -d fills the KV cache to a depth before each test, as llama-bench's -d") {
  if (!have_cli()) return;
  const std::string bench = "bench -m " + quote(tiny_model()) + " -r 1 -t 1 ";
  CHECK(run_cli("bench --help").out.find("-d, --n-depth") != std::string::npos);
  const Result md = run_cli(bench + "-p 4 -n 2 -d 0,3");
  INFO("stderr: " << md.err);
  CHECK(md.code == 0);
  for (const char *test : {"| pp4 |", "| tg2 |", "| pp4 @ d3 |", "| tg2 @ d3 |"}) {
    CHECK_MESSAGE(md.out.find(test) != std::string::npos, test);
  }
  const Result json = run_cli(bench + "-p 4 -n 2 --n-depth 3 -o json");
  CHECK(json.out.find("\"depth\": 3,") != std::string::npos);
  // -p 0 times decode alone (at the depth), as llama-bench -p 0 -n N -d D.
  const Result decode_only = run_cli(bench + "-p 0 -n 2 -d 5 -o csv");
  CHECK(decode_only.code == 0);
  CHECK(decode_only.out.find(",tg2 @ d5,") != std::string::npos);
  CHECK(decode_only.out.find(",pp") == std::string::npos);
  expect_error(bench + "-p 0 -n 0", 2, "prompt or generated tokens must be at least 1");
  // The depth and the timed tokens together must fit the context.
  const uint32_t context = 32;  // tiny_mha.bin's (mote inspect: max context)
  expect_error(bench + "-p 4 -n 2 -d " + std::to_string(context - 5), 2,
               "depth " + std::to_string(context - 5) + " + 4 + 2 tokens exceed the model's context of " +
                   std::to_string(context));
  CHECK(run_cli(bench + "-p 4 -n 2 -d " + std::to_string(context - 6)).code == 0);
}

TEST_CASE("cli: a GGUF model runs directly, converted once into the cache") {
  if (!have_cli()) return;
  Workspace &w = workspace();
  const std::string cache = w.path("gguf_cache");
  setenv("XDG_CACHE_HOME", cache.c_str(), 1);
  const std::string gguf = w.path("tiny.gguf");
  std::filesystem::copy_file(mote_test::golden_path("tiny_llama.gguf"), gguf,
                             std::filesystem::copy_options::overwrite_existing);
  const std::string converted = w.path("tiny_llama.mote");
  REQUIRE(run_cli("convert " + quote(gguf) + " -o " + quote(converted)).code == 0);
  const std::string args = " -p 'a b' -n 6 --temp 0";
  const std::string expected = run_text("-m " + quote(converted) + args);

  const Result first = run_cli("run -m " + quote(gguf) + args);
  INFO("stderr: " << first.err);
  CHECK(first.code == 0);
  CHECK(first.out == expected);
  CHECK(first.err.find("converting " + gguf + " once into " + cache + "/mote/tiny-") != std::string::npos);
  const Result second = run_cli("run -m " + quote(gguf) + args);
  CHECK(second.out == expected);
  CHECK(second.err.find("using cached " + cache + "/mote/tiny-") != std::string::npos);
  CHECK(second.err.find("converting") == std::string::npos);
  CHECK(run_cli("inspect " + quote(gguf)).code == 0);
  CHECK(run_cli("bench -m " + quote(gguf) + " -p 4 -n 2 -r 1 -t 1").code == 0);

  // A new mtime over the same bytes is hashed again and still cached (test_cli_file_changes.cpp
  // covers changed bytes and the stale entry's removal).
  const auto count_cached = [&] {
    size_t n = 0;
    for (const auto &entry : std::filesystem::directory_iterator(cache + "/mote"))
      n += entry.path().extension() == ".mote";
    return n;
  };
  CHECK(count_cached() == 1);
  std::filesystem::last_write_time(gguf, std::filesystem::last_write_time(gguf) + std::chrono::seconds(5));
  const Result changed = run_cli("run -m " + quote(gguf) + args);
  CHECK(changed.out == expected);
  CHECK(changed.err.find("using cached") != std::string::npos);
  CHECK(count_cached() == 1);

  // An entry an earlier mote wrote (its name lacks this build's TOOLKEY, the last "-XXXXXXXX") is
  // converted again by this one, and removed.
  std::string entry;
  for (const auto &e : std::filesystem::directory_iterator(cache + "/mote"))
    if (e.path().extension() == ".mote") entry = e.path().string();
  const std::string older = entry.substr(0, entry.size() - std::string("-12345678.mote").size()) + ".mote";
  std::filesystem::rename(entry, older);
  const Result upgraded = run_cli("run -m " + quote(gguf) + args);
  CHECK(upgraded.out == expected);
  CHECK(upgraded.err.find("converting") != std::string::npos);
  CHECK(std::filesystem::exists(entry));
  CHECK_FALSE(std::filesystem::exists(older));
  CHECK(count_cached() == 1);
  unsetenv("XDG_CACHE_HOME");

  // The tiny GGUF has a ChatML template: -sys is --system.
  const std::string chat = "run --chat -m " + quote(converted) + " -p hi -n 6 --temp 0 ";
  CHECK(run_text(chat.substr(4) + "-sys 'be brief'") == run_text(chat.substr(4) + "--system 'be brief'"));
  CHECK(run_text(chat.substr(4) + "--system-prompt 'be brief'") == run_text(chat.substr(4) + "--system 'be brief'"));

  // A reply cut by -n never ends inside a UTF-8 character: the random byte-level model emits
  // bytes >= 0x80 freely, so some of these cuts fall inside a character that the longer run of
  // the same seed completes (the cut run's text is a prefix of the longer run's).
  for (int seed = 1; seed <= 12; ++seed) {
    INFO("seed " << seed);
    const std::string common =
        "-m " + quote(converted) + " -p a --no-display-prompt --temp 1.5 -s " + std::to_string(seed);
    const std::string longer = run_text(common + " -n 8");
    const std::string cut = run_text(common + " -n " + std::to_string(seed % 5 + 1));
    REQUIRE(longer.compare(0, cut.size(), cut) == 0);
    for (size_t back = 1; back <= 3 && back <= cut.size(); ++back) {
      const auto lead = static_cast<unsigned char>(cut[cut.size() - back]);
      if ((lead & 0xC0) == 0x80) continue;
      const size_t length = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
      bool completed_later = length > back && longer.size() >= cut.size() + (length - back);
      for (size_t i = cut.size(); completed_later && i < cut.size() + (length - back); ++i) {
        completed_later = (static_cast<unsigned char>(longer[i]) & 0xC0) == 0x80;
      }
      CHECK_FALSE(completed_later);
      break;
    }
  }

  // Formats mote converts from but does not open name `mote convert`.
  expect_error("run -m " + quote(mote_test::golden_path("tiny_mha.bin")) + " -p hi", 1,
               "a llama2.c checkpoint, not a .mote file: convert it with 'mote convert");
}

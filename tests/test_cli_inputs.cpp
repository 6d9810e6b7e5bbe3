// Inputs without end, run as a user runs the CLI: /dev/zero as standard input for `mote chat`,
// `mote run -f -` and `mote embed -f -`, a FIFO or a folder as `mote embed -f`, perplexity over a
// sparse file of several GiB and over a large text with --chunks 1, and prompts far longer than
// the context. Each ends within a time and memory bound with one error line or a result (a
// watchdog kills a run that outgrows the bound, so the suite survives a regression).
// Perplexity's streaming reader scores exactly the tokens of the whole file, and chat's /export
// never replaces a file silently.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <thread>

#include "cli_support.hpp"

using namespace mote_cli_test;

namespace {

constexpr double kMaxSeconds = 10;         // every run here takes well under a second when bounded
constexpr long kMaxRssKib = 300 * 1024;    // what a bounded run may touch (the tiny models are KiB)
constexpr long kWatchdogRssKib = 1 << 20;  // an unbounded reader is killed here, not by the OOM killer

struct Bounded {
  Result result;
  double seconds = 0;
  long max_rss_kib = 0;
  bool killed = false;  // outgrew the watchdog's time or memory
};

long resident_kib(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.compare(0, 6, "VmRSS:") == 0) return std::atol(line.c_str() + 6);
  }
  return 0;
}

// Runs `mote ARGS` as run_cli does, but as a child it watches: killed past twice kMaxSeconds or
// kWatchdogRssKib; its peak resident memory comes from wait4.
Bounded run_bounded(const std::string &args, const std::string &stdin_path) {
  Workspace &w = workspace();
  const std::string out = w.path("bounded_out.txt"), err = w.path("bounded_err.txt");
  const std::string command =
      "exec " + cli_invocation() + " " + args + " >" + quote(out) + " 2>" + quote(err) + " <" + quote(stdin_path);
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char *>(nullptr));
    _exit(127);
  }
  Bounded b;
  int status = 0;
  rusage usage{};
  for (;;) {
    const pid_t done = wait4(pid, &status, WNOHANG, &usage);
    REQUIRE(done >= 0);
    if (done == pid) break;
    b.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!b.killed && (b.seconds > 2 * kMaxSeconds || resident_kib(pid) > kWatchdogRssKib)) {
      kill(pid, SIGKILL);
      b.killed = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  b.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  b.max_rss_kib = usage.ru_maxrss;
  b.result.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  b.result.out = slurp(out);
  b.result.err = slurp(err);
  return b;
}

// Within the bounds, exiting with code, and with one error line holding needle (none for "").
void expect_bounded(const std::string &args, const std::string &stdin_path, const std::string &needle, int code = 1) {
  const Bounded b = run_bounded(args, stdin_path);
  INFO("mote " << args << " <" << stdin_path);
  INFO("stderr: " << b.result.err.substr(0, 400));
  INFO(b.seconds << " s, " << b.max_rss_kib / 1024 << " MiB resident at most");
  CHECK_FALSE(b.killed);
  CHECK(b.seconds < kMaxSeconds);
  CHECK(b.max_rss_kib < kMaxRssKib);
  CHECK(b.result.code == code);
  if (needle.empty()) return;
  CHECK(b.result.err.find(needle) != std::string::npos);
  CHECK(count_newlines(b.result.err) == 1);
}

// A file of `bytes` zero bytes that takes no disk (a hole).
std::string sparse_file(const std::string &name, off_t bytes) {
  const std::string path = workspace().path(name);
  const int fd = open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(ftruncate(fd, bytes) == 0);
  close(fd);
  return path;
}

// Lowercase words the tiny model's 64-token vocabulary spells letter by letter, `bytes` long.
std::string tiny_words(size_t bytes) {
  const char *pool[] = {"the", "quiet", "river", "moves", "under", "a", "pale", "moon", "and", "sings"};
  std::string text;
  for (size_t i = 0; text.size() < bytes; ++i) text += std::string(i ? " " : "") + pool[(i * 7 + i / 3) % 10];
  text.resize(bytes);
  return text;
}

// A file of `mib` MiB of those words, written a MiB at a time: this process stays small, so a
// child's peak resident memory (which counts what it shared with this process at fork) is its own.
std::string words_file(const std::string &name, size_t mib) {
  const std::string path = workspace().path(name);
  const std::string piece = tiny_words((1u << 20) - 1) + " ";
  std::ofstream f(path, std::ios::binary);
  for (size_t i = 0; i < mib; ++i) f << piece;
  return path;
}

// The tiny GGUF (ChatML template, byte-level BPE) converted once: the chat model here.
const std::string &tiny_chat_model() {
  static std::string model;
  if (model.empty()) {
    model = workspace().path("tiny_chat.mote");
    const Result r = run_cli("convert " + quote(mote_test::golden_path("tiny_llama.gguf")) + " -o " + quote(model));
    INFO("convert stderr: " << r.err);
    REQUIRE(r.code == 0);
  }
  return model;
}

}  // namespace

TEST_CASE("inputs: /dev/zero as standard input is capped, not read forever") {
  if (!have_cli()) return;
  expect_bounded("run -m " + quote(tiny_model()) + " -f - -n 1", "/dev/zero",
                 "standard input holds more than the 64 MiB a prompt may hold");
  expect_bounded("chat -m " + quote(tiny_chat_model()) + " -n 1", "/dev/zero",
                 "a line of standard input is longer than the 1 MiB a message may hold");
}

TEST_CASE("inputs: embed -f takes a regular file or standard input, nothing that blocks or reads as empty") {
  if (!have_cli()) return;
  Workspace &w = workspace();
  const std::string fifo = w.path("texts.fifo"), folder = w.path("texts_folder");
  unlink(fifo.c_str());
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);  // no writer: a blocking open never returns
  std::filesystem::create_directories(folder);
  const std::string embed = "embed -m " + quote(tiny_model()) + " -f ";
  expect_bounded(embed + quote(fifo), "/dev/null", "is not a regular file (it is a FIFO)");
  expect_bounded(embed + quote(folder), "/dev/null", "is not a regular file (it is a directory)");
  expect_bounded(embed + "/dev/zero", "/dev/null", "is not a regular file");
  expect_bounded(embed + "-", "/dev/zero", "standard input holds more than the 64 MiB a prompt may hold");
}

TEST_CASE("inputs: a prompt that cannot fit is refused before it is tokenized") {
  if (!have_cli()) return;
  // 48 MiB of words: at most 24 tokens fit, so the bytes alone say no (before: tokenized whole).
  const std::string prompt = words_file("huge_prompt.txt", 48);
  expect_bounded("run -m " + quote(tiny_model()) + " --ctx 24 -n 1 -f " + quote(prompt), "/dev/null",
                 "cannot fit the context of 24 tokens");
  expect_bounded("run -m " + quote(tiny_model()) + " --ctx 24 -n 1 -f -", prompt,
                 "cannot fit the context of 24 tokens");
  expect_bounded("run --chat -m " + quote(tiny_chat_model()) + " --ctx 24 -n 1 -f " + quote(prompt), "/dev/null",
                 "does not fit the context of 24 tokens");
  // Just over the context, where the bytes could fit: tokenized and refused by its count, as before.
  write_text(prompt, tiny_words(30));
  expect_error("run -m " + quote(tiny_model()) + " --ctx 24 -n 1 -f " + quote(prompt), 1,
               "tokens; the context holds 24");
}

TEST_CASE("inputs: perplexity reads only what the windows need") {
  if (!have_cli()) return;
  const std::string model = quote(tiny_model());
  const std::string zeros = sparse_file("sparse.txt", off_t{4} << 30);
  // All windows of 4 GiB: refused by the file's size at once. One window: only its first bytes
  // are read (zero bytes are byte tokens here).
  expect_bounded("perplexity -m " + model + " -f " + quote(zeros), "/dev/null", "perplexity reads at most 64 MiB");
  expect_bounded("perplexity -m " + model + " -f " + quote(zeros) + " --chunks 1", "/dev/null", "", 0);
  // 48 MiB of text, one window: a result as fast as for a short text.
  const std::string text = words_file("large_text.txt", 48);
  expect_bounded("perplexity -m " + model + " -f " + quote(text) + " --ctx 24 --chunks 1", "/dev/null", "", 0);
}

TEST_CASE("inputs: streamed perplexity equals the whole file's") {
  if (!have_cli()) return;
  // The large file is read in pieces; the short one (a prefix of it) whole, in one piece. The
  // windows of both are the same tokens, so the printed results are identical, whatever the cut.
  // Words, and one line of letters without a space (where no word boundary is near the cut),
  // through SentencePiece (tiny_tok64) and byte-level BPE with merges (the tiny GGUF's);
  // test_perplexity's oracle case does the same with aidreams' 512 pieces.
  Workspace &w = workspace();
  std::string letters;
  const std::string alphabet = "thequirvmosndaplg";  // letters the tiny vocabulary has
  for (size_t i = 0; letters.size() < (1u << 20); ++i) letters += alphabet[(i * 7 + i / 5) % alphabet.size()];
  for (const std::string &text : {tiny_words(1u << 20), letters})
    for (const std::string &model : {quote(tiny_model()), quote(tiny_chat_model())}) {
      write_text(w.path("long.txt"), text);
      write_text(w.path("prefix.txt"), text.substr(0, 6000));
      for (const auto &[window, chunks] : {std::pair{24, 9}, std::pair{32, 30}}) {
        const std::string windows = " --ctx " + std::to_string(window) + " --chunks " + std::to_string(chunks);
        INFO(windows << (text == letters ? ", one line of letters" : ", words"));
        const Result streamed = run_cli("perplexity -m " + model + " -f " + quote(w.path("long.txt")) + windows);
        const Result whole = run_cli("perplexity -m " + model + " -f " + quote(w.path("prefix.txt")) + windows);
        INFO("stderr: " << streamed.err);
        REQUIRE(streamed.code == 0);
        REQUIRE(whole.code == 0);
        CHECK(streamed.out == whole.out);
        CHECK(streamed.out.find(" (" + std::to_string(chunks) + " windows") != std::string::npos);
      }
    }
}

TEST_CASE("inputs: chat's over-long messages get the real reason alone") {
  if (!have_cli()) return;
  Workspace &w = workspace();
  const std::string model = quote(tiny_chat_model());
  // A message that fits, one that fits no conversation (the first one's turn stays), another
  // that fits: one stderr line naming the reason, and both short messages answered.
  const std::string input = w.path("chat_long.txt");
  write_text(input, "hi\n" + std::string(200, 'x') + "\nhi again\n/export " + w.path("kept.txt") + "\n");
  const Result r = run_cli("chat -m " + model + " --ctx 64 -n 2 --temp 0", input);
  INFO("stderr: " << r.err);
  CHECK(r.code == 0);
  CHECK(r.err.find("mote chat: this message does not fit the context of 64 tokens (use --ctx)\n") == 0);
  CHECK(r.err.find("starting a new conversation") == std::string::npos);
  CHECK(count_newlines(r.out) == 2);
  CHECK(slurp(w.path("kept.txt")).find("user: hi\nassistant: ") == 0);  // the conversation went on
  CHECK(slurp(w.path("kept.txt")).find("user: hi again\n") != std::string::npos);

  // A line longer than any context of this model holds: refused by its bytes, quickly.
  write_text(input, "hi\n" + std::string(900u << 10, 'x') + "\n");
  expect_bounded("chat -m " + model + " -n 2 --temp 0", input, "this message does not fit the context of 96 tokens", 0);
}

TEST_CASE("inputs: chat's /export asks before replacing a file and says what it wrote") {
  if (!have_cli()) return;
  Workspace &w = workspace();
  const std::string saved = w.path("conversation.txt");
  std::filesystem::remove(saved);
  const std::string input = w.path("chat_save.txt");
  write_text(input,
             "hi\n/export " + saved + "\n/export " + saved + "\n/export\n/export!\nhello\n/export! " + saved + "\n");
  const Result r = run_cli("chat -m " + quote(tiny_chat_model()) + " -n 3 --temp 0", input);
  INFO("stderr: " << r.err);
  REQUIRE(r.code == 0);
  const std::string text = slurp(saved);
  REQUIRE(text.find("user: hi\nassistant: ") == 0);
  CHECK(text.find("user: hello\nassistant: ") != std::string::npos);  // the second /export! replaced it
  // The first save, the refusal, the usage line twice, the replacement: one line each.
  const std::string wrote_first =
      "mote chat: wrote " + std::to_string(text.find("user: hello")) + " bytes to '" + saved;
  CHECK(r.err.find(wrote_first) == 0);
  CHECK(r.err.find("'" + saved + "' exists; /export! " + saved + " replaces it") != std::string::npos);
  const size_t usage = r.err.find("mote chat: usage: /export FILE");
  CHECK(usage != std::string::npos);
  CHECK(r.err.find("mote chat: usage: /export FILE", usage + 1) != std::string::npos);
  CHECK(r.err.find("wrote " + std::to_string(text.size()) + " bytes to '" + saved) != std::string::npos);
  CHECK(count_newlines(r.err) == 5);
}

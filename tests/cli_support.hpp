// Helpers for tests that run the `mote` command-line tool as a user runs it: a temporary
// workspace, running the CLI with stdout and stderr captured, the tiny model converted by the
// CLI itself, and the one-line error check. Shared by test_cli.cpp and test_perplexity.cpp.
#pragma once

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace mote_cli_test {

inline const std::string kCli = MOTE_CLI_PATH;

inline bool have_cli() {
  if (!kCli.empty()) return true;
  MOTE_SKIP("the mote CLI is not part of this build (MOTE_CLI_PATH is empty)");
  return false;
}

inline std::string quote(const std::string &s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

inline std::string slurp(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

inline void write_text(const std::string &path, const std::string &text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
}

inline size_t count_newlines(const std::string &s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

// A temporary directory for the whole file, holding the converted tiny model.
struct Workspace {
  std::string dir;
  std::string model;  // tiny_mha converted by `mote convert`
  bool ready = false;

  Workspace() {
    char pattern[] = "/tmp/mote_test_cli_XXXXXX";
    if (mkdtemp(pattern) != nullptr) dir = pattern;
  }
  ~Workspace() {
    if (!dir.empty()) {
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    }
  }
  std::string path(const std::string &name) const { return dir + "/" + name; }
};

inline Workspace &workspace() {
  static Workspace w;
  return w;
}

struct Result {
  int code = -1;
  std::string out, err;
};

// The shell words that start the CLI: cross builds run it under the emulator ctest uses (its
// words are not quoted).
inline std::string cli_invocation() {
  const std::string emulator = MOTE_CLI_EMULATOR;
  return (emulator.empty() ? "" : emulator + " ") + quote(kCli);
}

// Runs `mote ARGS` through the shell with stdout and stderr captured in files.
inline Result run_cli(const std::string &args, const std::string &stdin_path = "/dev/null") {
  Workspace &w = workspace();
  REQUIRE(!w.dir.empty());
  const std::string out = w.path("stdout.txt"), err = w.path("stderr.txt");
  const std::string command =
      cli_invocation() + " " + args + " >" + quote(out) + " 2>" + quote(err) + " <" + quote(stdin_path);
  const int status = std::system(command.c_str());
  Result r;
  REQUIRE(status != -1);
  REQUIRE_MESSAGE(WIFEXITED(status), "the CLI did not exit normally (signal?): " << command);
  r.code = WEXITSTATUS(status);
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

// Runs `mote ARGS` with stdout and stderr on one pseudo-terminal, as a user at a terminal sees
// it: out holds what the terminal received (its output processing makes each "\n" "\r\n").
inline Result run_cli_on_terminal(const std::string &args) {
  const int terminal = posix_openpt(O_RDWR | O_NOCTTY);
  REQUIRE(terminal >= 0);
  REQUIRE(grantpt(terminal) == 0);
  REQUIRE(unlockpt(terminal) == 0);
  const std::string device = ptsname(terminal);
  const std::string command = "exec " + cli_invocation() + " " + args + " </dev/null";
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    const int side = open(device.c_str(), O_RDWR | O_NOCTTY);
    dup2(side, 1);
    dup2(side, 2);
    close(side);
    close(terminal);
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char *>(nullptr));
    _exit(127);
  }
  Result r;
  char buffer[4096];
  for (ssize_t n; (n = read(terminal, buffer, sizeof buffer)) != 0;) {  // EIO once the CLI closed its side
    if (n > 0) r.out.append(buffer, static_cast<size_t>(n));
    if (n < 0 && errno != EINTR) break;
  }
  close(terminal);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE_MESSAGE(WIFEXITED(status), "the CLI did not exit normally (signal?): " << command);
  r.code = WEXITSTATUS(status);
  return r;
}

// The converted tiny model (converted once, by the CLI under test).
inline const std::string &tiny_model() {
  Workspace &w = workspace();
  if (!w.ready) {
    w.model = w.path("tiny.mote");
    const Result r = run_cli("convert " + quote(mote_test::golden_path("tiny_mha.bin")) + " --tokenizer " +
                             quote(mote_test::golden_path("tiny_tok64.bin")) + " -o " + quote(w.model));
    INFO("stderr: " << r.err);
    REQUIRE(r.code == 0);
    REQUIRE(r.err.find("wrote") != std::string::npos);
    w.ready = true;
  }
  return w.model;
}

// An error: the expected exit code, the needle, and exactly one line on stderr.
inline void expect_error(const std::string &args, int code, const std::string &needle) {
  const Result r = run_cli(args);
  INFO("mote " << args);
  INFO("stderr: " << r.err);
  CHECK(r.code == code);
  CHECK(r.err.find(needle) != std::string::npos);
  CHECK(count_newlines(r.err) == 1);
  CHECK((!r.err.empty() && r.err.back() == '\n'));
}

}  // namespace mote_cli_test

// Paths and files are hostile too: FIFOs, devices and directories are refused at once (never a
// read that blocks), huge sparse inputs are refused or read only as far as needed (never loaded
// whole), `mote convert -o` replaces regular files only and atomically, and a model truncated
// while mapped is a message, not "Bus error".
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstring>

#include "cli_support.hpp"
#include "io/file_map.hpp"

namespace {

namespace fs = std::filesystem;
using mote_cli_test::expect_error;
using mote_cli_test::quote;
using mote_cli_test::run_cli;
using mote_cli_test::workspace;

constexpr uint64_t kSparseBytes = 8ull << 30;  // 8 GiB, no blocks allocated

std::string fifo(const std::string &name) {
  const std::string path = workspace().path(name);
  REQUIRE(mkfifo(path.c_str(), 0600) == 0);
  return path;
}

// A copy of src grown (sparse) to 8 GiB.
std::string sparse_copy(const std::string &src, const std::string &name) {
  const std::string path = workspace().path(name);
  fs::copy_file(src, path, fs::copy_options::overwrite_existing);
  REQUIRE(truncate(path.c_str(), static_cast<off_t>(kSparseBytes)) == 0);
  return path;
}

// The largest resident set of any child process so far, in MiB.
long children_peak_mib() {
  struct rusage usage {};
  getrusage(RUSAGE_CHILDREN, &usage);
  return usage.ru_maxrss / 1024;
}

std::string tok64() { return quote(mote_test::golden_path("tiny_tok64.bin")); }
std::string mha() { return quote(mote_test::golden_path("tiny_mha.bin")); }

}  // namespace

TEST_CASE("FIFOs, devices and directories are refused at once, never read") {
  if (!mote_cli_test::have_cli()) return;
  const std::string pipe = quote(fifo("model.fifo"));
  const std::string out = quote(workspace().path("fifo_out.mote"));
  expect_error("inspect " + pipe, 1, "is not a regular file (it is a FIFO)");
  expect_error("run -m " + pipe + " -p hi", 1, "is not a regular file (it is a FIFO)");
  expect_error("convert " + pipe + " --tokenizer " + tok64() + " -o " + out, 1, "is not a regular file (it is a FIFO)");
  expect_error("convert " + mha() + " --tokenizer " + pipe + " -o " + out, 1, "is not a regular file (it is a FIFO)");
  expect_error("convert /dev/zero --tokenizer " + tok64() + " -o " + out, 1,
               "'/dev/zero' is not a regular file (it is a device)");
  expect_error("inspect /dev/zero", 1, "is not a regular file (it is a device)");

  // Hugging Face folders: the tokenizer, config and weights are each opened the same way.
  const std::string hf = workspace().path("hf_fifo");
  fs::copy(mote_test::golden_path("tiny_hf"), hf, fs::copy_options::recursive);
  expect_error("convert " + quote(hf) + " --tokenizer /dev/zero -o " + out, 1,
               "is not a regular file (it is a device)");
  fs::remove(hf + "/model.safetensors");
  REQUIRE(mkfifo((hf + "/model.safetensors").c_str(), 0600) == 0);
  expect_error("convert " + quote(hf) + " -o " + out, 1, "model.safetensors' is not a regular file (it is a FIFO)");
  fs::remove(hf + "/config.json");
  REQUIRE(mkfifo((hf + "/config.json").c_str(), 0600) == 0);
  expect_error("convert " + quote(hf) + " -o " + out, 1, "config.json' is not a regular file (it is a FIFO)");
  CHECK(!mote_test::file_exists(workspace().path("fifo_out.mote")));
}

TEST_CASE("huge sparse inputs are refused by their size or read only as far as needed") {
  if (!mote_cli_test::have_cli()) return;
  const std::string out = quote(workspace().path("sparse_out.mote"));
  // Mapped files: an 8 GiB file does not fit a 32-bit address space, which is said at once.
  const bool wide = sizeof(size_t) >= 8;
  const auto expect_mapped = [&](const std::string &command, const char *message_64bit) {
    if (!wide) {
      expect_error(command, 1, "is too large to map in this address space");
    } else if (message_64bit != nullptr) {
      expect_error(command, 1, message_64bit);
    } else {
      CHECK(run_cli(command).code == 0);
    }
  };
  // A llama2.c checkpoint's size follows from its header: checked before any weight is read.
  const std::string big_checkpoint = sparse_copy(mote_test::golden_path("tiny_mha.bin"), "big.bin");
  expect_mapped("convert " + quote(big_checkpoint) + " --tokenizer " + tok64() + " -o " + out,
                "is 8589934592 bytes; its header implies");
  // tokenizer.bin: only the vocabulary's entries are read; the 8 GiB of zeros after them are not.
  const std::string big_tok = sparse_copy(mote_test::golden_path("tiny_tok64.bin"), "big_tok.bin");
  expect_mapped("convert " + mha() + " --tokenizer " + quote(big_tok) + " -o " + out, nullptr);
  // GGUF: mapped; only the header, metadata and tensors are touched, whatever follows them.
  const std::string big_gguf = sparse_copy(mote_test::golden_path("tiny_llama.gguf"), "big.gguf");
  expect_mapped("convert " + quote(big_gguf) + " -o " + out, nullptr);
  // Hugging Face: tokenizer.json is capped; model.safetensors is mapped and its header checked.
  const std::string hf = workspace().path("hf_sparse");
  fs::copy(mote_test::golden_path("tiny_hf"), hf, fs::copy_options::recursive);
  REQUIRE(truncate((hf + "/tokenizer.json").c_str(), static_cast<off_t>(kSparseBytes)) == 0);
  expect_error("convert " + quote(hf) + " -o " + out, 1,
               "tokenizer.json' is 8589934592 bytes; files of its kind may hold at most 268435456");
  fs::copy_file(mote_test::golden_path("tiny_hf/tokenizer.json"), hf + "/tokenizer.json",
                fs::copy_options::overwrite_existing);
  REQUIRE(truncate((hf + "/config.json").c_str(), static_cast<off_t>(kSparseBytes)) == 0);
  expect_error("convert " + quote(hf) + " -o " + out, 1, "config.json' is 8589934592 bytes");
  fs::copy_file(mote_test::golden_path("tiny_hf/config.json"), hf + "/config.json",
                fs::copy_options::overwrite_existing);
  REQUIRE(truncate((hf + "/model.safetensors").c_str(), static_cast<off_t>(kSparseBytes)) == 0);
  expect_mapped("convert " + quote(hf) + " -o " + out,
                "bytes past its last tensor's data (the safetensors format allows none)");
  // None of it loaded the 8 GiB: every child stayed small.
  CHECK(children_peak_mib() < 256);
}

TEST_CASE("convert -o replaces regular files only, atomically") {
  if (!mote_cli_test::have_cli()) return;
  const std::string convert = "convert " + mha() + " --tokenizer " + tok64() + " -o ";
  expect_error(convert + "/dev/null", 1, "'/dev/null' exists and is not a regular file (it is a device)");
  expect_error(convert + quote(fifo("out.fifo")), 1, "exists and is not a regular file (it is a FIFO)");
  const std::string dir = workspace().path("out_dir");
  fs::create_directory(dir);
  expect_error(convert + quote(dir), 1, "exists and is not a regular file (it is a directory)");
  const std::string link = workspace().path("link_to_dir");
  fs::create_directory_symlink(dir, link);
  expect_error(convert + quote(link), 1, "exists and is not a regular file (it is a directory)");
  // A regular file is replaced whole, with the usual permissions, and no temporary is left.
  const std::string out = workspace().path("replaced.mote");
  mote_cli_test::write_text(out, "old");
  const mote_cli_test::Result r = run_cli(convert + quote(out));
  REQUIRE(r.code == 0);
  CHECK(mote_cli_test::slurp(out).size() > 4096);
  struct stat st {};
  REQUIRE(stat(out.c_str(), &st) == 0);
  CHECK((st.st_mode & 0044) != 0);  // readable by others under the usual umask 022
  for (const auto &entry : fs::directory_iterator(workspace().dir)) {
    CHECK(entry.path().filename().string().find("replaced.mote.") == std::string::npos);
  }
}

TEST_CASE("a model file truncated while mapped is a one-line error and exit 1, not SIGBUS") {
  const std::string path = workspace().path("truncated.bin");
  mote_cli_test::write_text(path, std::string(1 << 16, 'x'));
  int err_pipe[2];
  REQUIRE(pipe(err_pipe) == 0);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    dup2(err_pipe[1], 2);
    mote::posix::FileMap map;
    std::string error;
    if (!map.open(path, &error) || !map.exit_on_truncation("model file '" + path + "' changed while running")) _exit(3);
    if (truncate(path.c_str(), 0) != 0) _exit(4);
    volatile uint8_t sink = map.bytes()[40000];  // past the new end: SIGBUS
    (void)sink;
    _exit(5);
  }
  close(err_pipe[1]);
  char buffer[512] = "";
  const ssize_t n = read(err_pipe[0], buffer, sizeof buffer - 1);
  close(err_pipe[0]);
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));  // not killed by a signal
  CHECK(WEXITSTATUS(status) == 1);
  const std::string message(buffer, n > 0 ? static_cast<size_t>(n) : 0);
  CHECK(message == "model file '" + path + "' changed while running\n");
}

TEST_CASE("a fault outside the guarded mappings keeps its default action") {
  const std::string path = workspace().path("unguarded.bin");
  mote_cli_test::write_text(path, std::string(1 << 16, 'x'));
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    mote::posix::FileMap guarded, unguarded;
    std::string error;
    const std::string other = path + ".2";
    mote_cli_test::write_text(other, std::string(1 << 16, 'y'));
    if (!guarded.open(other, &error) || !guarded.exit_on_truncation("guarded") || !unguarded.open(path, &error)) {
      _exit(3);
    }
    if (truncate(path.c_str(), 0) != 0) _exit(4);
    volatile uint8_t sink = unguarded.bytes()[40000];
    (void)sink;
    _exit(5);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGBUS);
}

TEST_CASE("read_small_file states its cap; open_regular_file names what a path is") {
  std::vector<uint8_t> bytes;
  std::string error;
  const std::string path = workspace().path("small.json");
  mote_cli_test::write_text(path, "{\"a\": 1}");
  CHECK(mote::posix::read_small_file(path, 8, &bytes, &error));
  CHECK(bytes.size() == 8);
  CHECK(!mote::posix::read_small_file(path, 7, &bytes, &error));
  CHECK(error == "'" + path + "' is 8 bytes; files of its kind may hold at most 7");
  uint64_t size = 0;
  CHECK(mote::posix::open_regular_file(workspace().dir, &size, &error) == -1);
  CHECK(error == "'" + workspace().dir + "' is not a regular file (it is a directory)");
}

// Files that change under the `mote` CLI, run as a user runs it:
// - a model file written in place while `mote run` uses it (MAP_PRIVATE does not keep another
//   process's writes out of pages this process never wrote): exit 1 with one line, and nothing
//   printed that came from the changed file;
// - the GGUF cache: a GGUF whose tensors change past its first MiB with its mtime restored, a
//   truncated, replaced or damaged cache entry, an unwritable cache folder, and one GGUF named
//   by an absolute and by a relative path;
// - a Hugging Face folder given to -m: converted into the cache as a GGUF is, again when a file
//   its conversion reads changes.
// A deterministic hook puts the write where it must land: the CLI's stdout is a one-page pipe
// already (nearly) full, so the CLI blocks in write() at a known point (the prompt's echo, before
// the first token; or a few bytes into the reply); the test writes the model file while it waits
// there (seen in /proc/PID/wchan), then drains the pipe.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include "cli_support.hpp"
#include "convert_support.hpp"
#include "io/file_map.hpp"

namespace fs = std::filesystem;
using mote_cli_test::quote;
using mote_cli_test::Result;
using mote_cli_test::run_cli;
using mote_cli_test::slurp;
using mote_cli_test::workspace;

namespace {

constexpr size_t kPipeBytes = 4096;  // one page: the smallest pipe Linux makes

// Overwrites n bytes at offset of path in place (same inode, same size), as dd conv=notrunc.
void overwrite_in_place(const std::string &path, uint64_t offset, size_t n, uint8_t value) {
  const int fd = open(path.c_str(), O_WRONLY);
  REQUIRE(fd >= 0);
  const std::vector<uint8_t> bytes(n, value);
  REQUIRE(pwrite(fd, bytes.data(), n, static_cast<off_t>(offset)) == static_cast<ssize_t>(n));
  close(fd);
}

// A .mote's data section offset (FileHeader byte 72).
uint64_t data_offset(const std::string &path) {
  const std::string bytes = slurp(path);
  REQUIRE(bytes.size() >= 128);
  uint64_t offset = 0;
  std::memcpy(&offset, bytes.data() + 72, 8);
  return offset;
}

// Waits until process pid sleeps writing to a pipe (/proc/PID/wchan), or 3 s where wchan says
// nothing (a kernel without it): long past the few milliseconds the tiny model takes to block.
void wait_until_blocked_on_pipe(pid_t pid) {
  const std::string wchan = "/proc/" + std::to_string(pid) + "/wchan";
  for (int i = 0; i < 300; ++i) {
    if (slurp(wchan).find("pipe_write") != std::string::npos) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// Runs `mote ARGS` with stdout into a one-page pipe holding all but `room` bytes, calls
// while_blocked once the CLI waits writing to it, then drains it; stdout excludes the filler.
template <class F>
Result run_with_stdout_blocked(const std::string &args, size_t room, F while_blocked) {
  const std::string err = workspace().path("blocked_stderr.txt");
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  REQUIRE(fcntl(fds[1], F_SETPIPE_SZ, static_cast<int>(kPipeBytes)) == static_cast<int>(kPipeBytes));
  const std::string filler(kPipeBytes - room, '#');
  REQUIRE(write(fds[1], filler.data(), filler.size()) == static_cast<ssize_t>(filler.size()));
  const std::string command =
      "exec " + mote_cli_test::cli_invocation() + " " + args + " 2>" + quote(err) + " </dev/null";
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char *>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  wait_until_blocked_on_pipe(pid);
  while_blocked();
  std::string out;
  char buffer[4096];
  for (ssize_t n; (n = read(fds[0], buffer, sizeof buffer)) != 0;) {
    if (n > 0) out.append(buffer, static_cast<size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE_MESSAGE(WIFEXITED(status), "the CLI did not exit normally (signal?): " << command);
  REQUIRE(out.compare(0, filler.size(), filler) == 0);
  return Result{WEXITSTATUS(status), out.substr(filler.size()), slurp(err)};
}

// A fresh copy of the tiny model, so a test's writes harm no other test.
std::string tiny_copy(const std::string &name) {
  const std::string path = workspace().path(name);
  fs::copy_file(mote_cli_test::tiny_model(), path, fs::copy_options::overwrite_existing);
  return path;
}

// `mote run` of model with a greedy reply of (up to) 40 tokens, without the prompt's echo.
std::string reply_args(const std::string &model) {
  return "run -m " + quote(model) + " -p hello -n 40 --temp 0 --ignore-eos --no-display-prompt";
}

// The run stopped with exit 1 and exactly the one line.
void expect_stopped(const Result &r, const std::string &model) {
  INFO("stderr: " << r.err);
  CHECK(r.code == 1);
  CHECK(r.err == "mote: model file '" + model + "' changed while running (written in place?); stopping\n");
}

}  // namespace

TEST_CASE("a model file written in place between open and the first token stops the run before any token") {
  if (!mote_cli_test::have_cli()) return;
  const std::string model = tiny_copy("written_before_first.mote");
  const std::string args = "run -m " + quote(model) + " -p hello -n 20 --temp 0 --ignore-eos";
  const Result prompt_only = run_cli("run -m " + quote(model) + " -p hello -n 0");
  REQUIRE(prompt_only.code == 0);
  // No room at all: the CLI blocks echoing the prompt, after loading and before prefilling.
  const Result r = run_with_stdout_blocked(args, 0, [&] { overwrite_in_place(model, data_offset(model), 512, 0x3f); });
  expect_stopped(r, model);
  CHECK(r.out == prompt_only.out);  // the prompt, and not one generated byte
}

TEST_CASE("a model file written in place while generating stops the reply where the change landed") {
  if (!mote_cli_test::have_cli()) return;
  const std::string model = tiny_copy("written_mid_stream.mote");
  const std::string args = reply_args(model);
  const Result whole = run_cli(args);
  REQUIRE(whole.code == 0);
  constexpr size_t kRoom = 8;  // the reply gets this far, then the CLI blocks writing it
  REQUIRE(whole.out.size() > 2 * kRoom);
  const Result r =
      run_with_stdout_blocked(args, kRoom, [&] { overwrite_in_place(model, data_offset(model), 512, 0x3f); });
  INFO("reply: " << r.out);
  expect_stopped(r, model);
  // What was printed is the unchanged model's reply, cut short: nothing from the written file.
  CHECK(r.out.size() >= kRoom / 2);
  CHECK(r.out.size() < whole.out.size());
  CHECK(whole.out.compare(0, r.out.size(), r.out) == 0);
}

TEST_CASE("a draft model file written in place while generating stops the reply in one line") {
  if (!mote_cli_test::have_cli()) return;
  const std::string model = tiny_copy("draft_target.mote"), draft = tiny_copy("draft_written.mote");
  const std::string args = reply_args(model) + " --draft model -md " + quote(draft);
  const Result whole = run_cli(args);
  REQUIRE(whole.code == 0);
  CHECK(whole.out == run_cli(reply_args(model) + " --draft none").out);  // drafting changes no byte
  CHECK(whole.err.find("drafts: ") != std::string::npos);
  const Result r = run_with_stdout_blocked(args, 8, [&] { overwrite_in_place(draft, data_offset(draft), 512, 0x3f); });
  INFO("reply: " << r.out);
  expect_stopped(r, draft);
  CHECK(whole.out.compare(0, r.out.size(), r.out) == 0);
}

TEST_CASE("a write in place with the mtime set back (rsync --inplace -a) still stops the run") {
  if (!mote_cli_test::have_cli()) return;
  const std::string model = tiny_copy("written_mtime_restored.mote");
  const std::string args = reply_args(model);
  struct stat before {};
  REQUIRE(stat(model.c_str(), &before) == 0);
  const Result r = run_with_stdout_blocked(args, 8, [&] {
    overwrite_in_place(model, data_offset(model), 512, 0x3f);
    const timespec times[2] = {before.st_atim, before.st_mtim};
    REQUIRE(utimensat(AT_FDCWD, model.c_str(), times, 0) == 0);
  });
  expect_stopped(r, model);
}

TEST_CASE("a model file replaced by a rename or chmod-ed while running is no change: the reply goes on") {
  if (!mote_cli_test::have_cli()) return;
  const std::string model = tiny_copy("replaced_by_rename.mote");
  const std::string args = reply_args(model);
  const Result whole = run_cli(args);
  REQUIRE(whole.code == 0);
  const Result r = run_with_stdout_blocked(args, 8, [&] {
    REQUIRE(chmod(model.c_str(), 0600) == 0);
    const std::string other = tiny_copy("replacement.mote");
    overwrite_in_place(other, data_offset(other), 512, 0x3f);  // a different model under the old name
    fs::rename(other, model);
  });
  INFO("stderr: " << r.err);
  CHECK(r.code == 0);
  CHECK(r.out == whole.out);  // the mapping kept the old file's bytes
}

namespace {

// A cache folder of one test's own ($XDG_CACHE_HOME for the CLIs it runs).
struct CacheHome {
  std::string dir;
  explicit CacheHome(const std::string &name) : dir(workspace().path(name)) {
    fs::remove_all(dir);
    setenv("XDG_CACHE_HOME", dir.c_str(), 1);
  }
  ~CacheHome() { unsetenv("XDG_CACHE_HOME"); }
  // The one .mote entry in the cache.
  std::string entry() const {
    std::vector<std::string> found;
    for (const auto &e : fs::directory_iterator(dir + "/mote"))
      if (e.path().extension() == ".mote") found.push_back(e.path().string());
    REQUIRE(found.size() == 1);
    return found[0];
  }
};

const std::string kRunArgs = " -p hello -n 16 --temp 0 --ignore-eos --no-display-prompt";

// The reply of the GGUF converted by `mote convert` (the independent reference).
std::string reference_reply(const std::string &gguf) {
  const std::string mote = gguf + ".reference.mote";
  REQUIRE(run_cli("convert " + quote(gguf) + " -o " + quote(mote)).code == 0);
  const Result r = run_cli("run -m " + quote(mote) + kRunArgs);
  REQUIRE(r.code == 0);
  return r.out;
}

// Runs the GGUF, requires exit 0 and the reference reply, returns stderr.
std::string run_gguf(const std::string &gguf, const std::string &reference) {
  const Result r = run_cli("run -m " + quote(gguf) + kRunArgs);
  INFO("stderr: " << r.err);
  CHECK(r.code == 0);
  CHECK(r.out == reference);
  return r.err;
}

bool has(const std::string &text, const std::string &needle) { return text.find(needle) != std::string::npos; }

void set_times(const std::string &path, const struct stat &from) {
  const timespec times[2] = {from.st_atim, from.st_mtim};
  REQUIRE(utimensat(AT_FDCWD, path.c_str(), times, 0) == 0);
}

}  // namespace

TEST_CASE("the GGUF cache sees tensors changed past the first MiB with the mtime restored") {
  if (!mote_cli_test::have_cli()) return;
  CacheHome cache("cache_big");
  mote_convert_test::Gguf g = mote_convert_test::valid_gguf();
  g.set_string("general.description", std::string(1200 * 1024, 'd'));  // the tensors start past 1 MiB
  const std::string gguf = workspace().path("big.gguf");
  const mote_convert_test::Bytes bytes = g.build();
  REQUIRE(bytes.size() > (1u << 20) + 4096);
  mote_cli_test::write_text(gguf, std::string(bytes.begin(), bytes.end()));
  const std::string before = reference_reply(gguf);
  CHECK(has(run_gguf(gguf, before), "mote: converting"));
  CHECK(has(run_gguf(gguf, before), "mote: using cached"));

  // output_norm, the last tensor, ends the file: new weights there, then the old mtime back.
  struct stat st {};
  REQUIRE(stat(gguf.c_str(), &st) == 0);
  overwrite_in_place(gguf, bytes.size() - 4 * mote_convert_test::kDim, 4 * mote_convert_test::kDim, 0x41);
  set_times(gguf, st);
  const std::string after = reference_reply(gguf);
  REQUIRE(after != before);  // the edit matters to the reply
  const std::string err = run_gguf(gguf, after);
  CHECK(has(err, "mote: converting"));
  CHECK(!has(err, "using cached"));
  CHECK(cache.entry() != "");  // one entry: the stale conversion was removed
  // Only the times touched (touch -r, cp -p of the same bytes): hashed again, still cached.
  REQUIRE(stat(gguf.c_str(), &st) == 0);
  st.st_mtim.tv_sec -= 3600;
  set_times(gguf, st);
  CHECK(has(run_gguf(gguf, after), "mote: using cached"));
}

TEST_CASE("a damaged or foreign GGUF cache entry is converted again, with a line naming it") {
  if (!mote_cli_test::have_cli()) return;
  CacheHome cache("cache_damaged");
  const std::string gguf = workspace().path("entry.gguf");
  fs::copy_file(mote_test::golden_path("tiny_llama.gguf"), gguf, fs::copy_options::overwrite_existing);
  const std::string reference = reference_reply(gguf);
  CHECK(has(run_gguf(gguf, reference), "mote: converting"));
  const std::string entry = cache.entry();
  const uint64_t size = fs::file_size(entry);

  SUBCASE("truncated") { fs::resize_file(entry, size / 2); }
  SUBCASE("replaced by another valid .mote") {
    fs::copy_file(mote_cli_test::tiny_model(), entry, fs::copy_options::overwrite_existing);
  }
  SUBCASE("a byte changed past the header") { overwrite_in_place(entry, size / 2, 1, 0x5a); }
  const std::string err = run_gguf(gguf, reference);
  CHECK(has(err, "mote: cache file " + entry));
  CHECK(has(err, "mote: converting"));
  CHECK(has(run_gguf(gguf, reference), "mote: using cached " + entry));  // rebuilt for good
}

TEST_CASE("a GGUF runs when the cache folder cannot be written, converted in memory, with a hint") {
  if (!mote_cli_test::have_cli()) return;
  const std::string not_a_folder = workspace().path("cache_is_a_file");
  mote_cli_test::write_text(not_a_folder, "x");
  const std::string gguf = workspace().path("in_memory.gguf");
  fs::copy_file(mote_test::golden_path("tiny_llama.gguf"), gguf, fs::copy_options::overwrite_existing);
  const std::string reference = reference_reply(gguf);
  setenv("XDG_CACHE_HOME", not_a_folder.c_str(), 1);
  const std::string err = run_gguf(gguf, reference);
  unsetenv("XDG_CACHE_HOME");
  CHECK(has(err, "cannot keep the conversion in " + not_a_folder + "/mote"));
  CHECK(has(err, "XDG_CACHE_HOME"));
}

TEST_CASE("one GGUF named by an absolute and by a relative path shares one cache entry") {
  if (!mote_cli_test::have_cli()) return;
  CacheHome cache("cache_paths");
  const std::string folder = workspace().path("relative");
  fs::create_directories(folder);
  const std::string gguf = folder + "/model.gguf";
  fs::copy_file(mote_test::golden_path("tiny_llama.gguf"), gguf, fs::copy_options::overwrite_existing);
  const std::string reference = reference_reply(gguf);
  CHECK(has(run_gguf(gguf, reference), "mote: converting"));
  const fs::path before = fs::current_path();
  fs::current_path(workspace().dir);
  const std::string err = run_gguf("./relative/../relative/model.gguf", reference);
  fs::current_path(before);
  CHECK(has(err, "mote: using cached"));
}

TEST_CASE("FileMap::change tells a write in place and a truncation from a rename over the path") {
  using Change = mote::posix::FileMap::Change;
  const std::string path = workspace().path("watched.bin");
  mote_cli_test::write_text(path, std::string(8192, 'a'));
  mote::posix::FileMap map;
  std::string error;
  REQUIRE(map.open(path, &error));
  CHECK(map.change() == Change::kNone);
  // Another file renamed over the path unlinks this one (its ctime moves); its bytes stay.
  const std::string other = path + ".new";
  mote_cli_test::write_text(other, std::string(8192, 'b'));
  REQUIRE(std::rename(other.c_str(), path.c_str()) == 0);
  CHECK(map.change() == Change::kMetadata);
  CHECK(map.bytes()[0] == 'a');
  map.accept_current();
  CHECK(map.change() == Change::kNone);

  mote::posix::FileMap written, truncated;
  REQUIRE(written.open(path, &error));
  overwrite_in_place(path, 4096, 1, 'c');  // one byte, the size kept
  CHECK(written.change() == Change::kContent);
  CHECK(written.bytes()[4096] == 'c');  // MAP_PRIVATE let it through: why the check exists
  REQUIRE(truncated.open(path, &error));
  fs::resize_file(path, 4096);
  CHECK(truncated.change() == Change::kContent);
}

namespace {

// A copy of a Hugging Face folder of tests/golden in the workspace (a trailing '/' kept off).
std::string folder_copy(const std::string &golden, const std::string &name) {
  const std::string dir = workspace().path(name);
  fs::remove_all(dir);
  fs::copy(mote_test::golden_path(golden), dir, fs::copy_options::recursive);
  return dir;
}

}  // namespace

TEST_CASE("a Hugging Face folder runs directly for every command, converted once into the cache") {
  if (!mote_cli_test::have_cli()) return;
  CacheHome cache("cache_folder");
  const std::string dir = folder_copy("tiny_hf", "tiny_hf_folder");
  const std::string reference = reference_reply(dir);
  // As a shell completes it: with the trailing '/'.
  std::string err = run_gguf(dir + "/", reference);
  CHECK(has(err, "mote: converting " + dir + "/ once into " + cache.dir + "/mote/tiny_hf_folder-"));
  CHECK(has(run_gguf(dir, reference), "mote: using cached " + cache.entry()));
  CHECK(run_cli("inspect " + quote(dir)).code == 0);
  CHECK(run_cli("bench -m " + quote(dir) + " -p 4 -n 2 -r 1 -t 1").code == 0);

  // Files the conversion does not read (a README) change nothing; a changed config.json converts
  // again and the stale entry goes.
  mote_cli_test::write_text(dir + "/README.md", "a model card\n");
  CHECK(has(run_gguf(dir, reference), "mote: using cached"));
  const std::string entry = cache.entry();
  std::string config = slurp(dir + "/config.json");
  config.insert(config.rfind('}'), " ");  // the same model, other bytes
  mote_cli_test::write_text(dir + "/config.json", config);
  err = run_gguf(dir, reference);
  CHECK(has(err, "mote: converting"));
  CHECK(cache.entry() != entry);
  CHECK(has(run_gguf(dir, reference), "mote: using cached"));

  // An embedder's folder (1_Pooling/config.json below it) embeds as its `mote convert` output does.
  const std::string bert = folder_copy("tiny_embedders/bert/hf", "tiny_bert_folder");
  const std::string bert_mote = workspace().path("tiny_bert_folder.mote");
  REQUIRE(run_cli("convert " + quote(bert) + " -o " + quote(bert_mote)).code == 0);
  const Result expected = run_cli("embed -m " + quote(bert_mote) + " -p 'the cat'");
  REQUIRE(expected.code == 0);
  const Result embedded = run_cli("embed -m " + quote(bert + "/") + " -p 'the cat'");
  INFO("stderr: " << embedded.err);
  CHECK(embedded.code == 0);
  CHECK(embedded.out == expected.out);
  CHECK(has(embedded.err, "mote: converting"));

  // A folder that is no model is refused in one line, before anything is converted.
  const std::string empty = workspace().path("not_a_model_folder");
  fs::create_directories(empty);
  mote_cli_test::expect_error("run -m " + quote(empty) + " -p hi", 1,
                              "'" + empty + "' is a folder without config.json");
}

// The CLI's session state and interrupts: run's and chat's --prompt-cache (the text equals a run
// without the cache; a corrupt cache is one warning and is ignored; a file that is not a state of
// this model and session shape is never replaced without --prompt-cache-force, nor read past its
// header), the files' modes, chat's /save, /load, /export and /regenerate, and Ctrl-C (SIGINT)
// stopping `mote run` in its prompt or its reply with exit code 130 (SmolLM2, a prompt long
// enough to interrupt).
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "cli_support.hpp"
#include "io/file_map.hpp"

using namespace mote_cli_test;

namespace {

// tiny_llama.gguf (byte-level BPE, ChatML) converted by the CLI: chat needs a template.
const std::string &chat_model() {
  static std::string model;
  if (model.empty()) {
    model = workspace().path("state_chat.mote");
    const Result r = run_cli("convert " + quote(mote_test::golden_path("tiny_llama.gguf")) + " -o " + quote(model));
    INFO("convert stderr: " << r.err);
    REQUIRE(r.code == 0);
  }
  return model;
}

size_t count(const std::string &text, const std::string &needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

unsigned mode_of(const std::string &path) {
  struct stat st {};
  REQUIRE(stat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

// What identifies a file's bytes without reading gigabytes: size, blocks, mtime, first 4 KiB.
std::string fingerprint(const std::string &path) {
  struct stat st {};
  REQUIRE(stat(path.c_str(), &st) == 0);
  std::string head(4096, '\0');
  FILE *f = std::fopen(path.c_str(), "rb");
  REQUIRE(f != nullptr);
  head.resize(std::fread(head.data(), 1, head.size(), f));
  std::fclose(f);
  return std::to_string(st.st_size) + " " + std::to_string(st.st_blocks) + " " + std::to_string(st.st_mtim.tv_sec) +
         "." + std::to_string(st.st_mtim.tv_nsec) + " " + head;
}

// The largest resident set of any child this process has waited for, in bytes.
uint64_t children_peak_rss() {
  struct rusage usage {};
  getrusage(RUSAGE_CHILDREN, &usage);
  return static_cast<uint64_t>(usage.ru_maxrss) * 1024;
}

// Runs the umask given for the life of the object (the CLI's children inherit it).
struct Umask {
  explicit Umask(mode_t mask) : saved(umask(mask)) {}
  ~Umask() { umask(saved); }
  mode_t saved;
};

}  // namespace

TEST_CASE("run --prompt-cache: later runs reuse the common prefix and print what a run without it prints") {
  if (!have_cli()) return;
  Workspace &w = workspace();
  const std::string model = quote(tiny_model()), cache = w.path("run.cache");
  std::filesystem::remove(cache);
  const std::string prompt = "-p 'the dog'", longer = "-p 'the dog ran'";  // 13 tokens of this vocabulary
  const std::string common = "run -m " + model + " -n 8 --temp 0 --ctx 32 ";
  const Result plain = run_cli(common + prompt), plain_longer = run_cli(common + longer);
  REQUIRE(plain.code == 0);

  const Result first = run_cli(common + prompt + " --prompt-cache " + quote(cache));
  INFO("stderr: " << first.err);
  CHECK(first.code == 0);
  CHECK(first.out == plain.out);
  CHECK(first.err.find("reused") == std::string::npos);  // nothing to reuse yet
  REQUIRE(std::filesystem::exists(cache));

  const Result again = run_cli(common + prompt + " --prompt-cache " + quote(cache));
  INFO("stderr: " << again.err);
  CHECK(again.out == plain.out);
  CHECK(again.err.find("prompt cache: ") != std::string::npos);  // all but the last token reused
  const Result extended = run_cli(common + longer + " --prompt-cache-ro --prompt-cache " + quote(cache));
  INFO("stderr: " << extended.err);
  CHECK(extended.out == plain_longer.out);
  CHECK(extended.err.find("prompt cache: ") != std::string::npos);

  // --prompt-cache-ro never writes: the file is the first prompt's state still.
  const std::string before = slurp(cache);
  CHECK(run_cli(common + "-p 'a different start' --prompt-cache-ro --prompt-cache " + quote(cache)).code == 0);
  CHECK(slurp(cache) == before);
  expect_error(common + prompt + " --prompt-cache-ro", 2, "--prompt-cache-ro needs --prompt-cache FILE");
}

TEST_CASE("run --prompt-cache: a corrupt or mismatched cache file is one warning and is ignored") {
  if (!have_cli()) return;
  Workspace &w = workspace();
  const std::string model = quote(tiny_model()), cache = w.path("bad.cache");
  const std::string common = "run -m " + model + " -n 6 --temp 0 -p 'the dog ran' ";
  const Result plain = run_cli(common + "--ctx 32");

  write_text(cache, std::string(200, 'x'));  // past the header's size: the magic is wrong
  Result r = run_cli(common + "--ctx 32 --prompt-cache-force --prompt-cache " + quote(cache));
  INFO("stderr: " << r.err);
  CHECK(r.code == 0);
  CHECK(r.out == plain.out);
  CHECK(count(r.err, "warning: ignoring the prompt cache") == 1);
  CHECK(r.err.find("not a mote session state") != std::string::npos);
  // It was replaced by a valid state, which the same session shape reuses ...
  r = run_cli(common + "--ctx 32 --prompt-cache " + quote(cache));
  CHECK(r.err.find("warning") == std::string::npos);
  CHECK(r.err.find("prompt cache: ") != std::string::npos);
  // ... and another context length, reading only, ignores it (one line naming why), the text unchanged.
  r = run_cli(common + "--ctx 24 --prompt-cache-ro --prompt-cache " + quote(cache));
  CHECK(r.code == 0);
  CHECK(r.out == plain.out);
  CHECK(count(r.err, "warning: ignoring the prompt cache") == 1);
  CHECK(r.err.find("context length 32 is not this session's 24") != std::string::npos);
  // A truncated state of this session's kind: the same, and it is replaced.
  const std::string valid = slurp(cache);
  write_text(cache, valid.substr(0, valid.size() / 2));
  r = run_cli(common + "--ctx 32 --prompt-cache " + quote(cache));
  CHECK(r.code == 0);
  CHECK(r.out == plain.out);
  CHECK(r.err.find("session state is truncated: " + std::to_string(valid.size() / 2) + " bytes of the " +
                   std::to_string(valid.size())) != std::string::npos);
  CHECK(slurp(cache) == valid);
  // Its size field alone changed (8 bytes more): the header disagrees with the position.
  std::string longer = valid;
  const uint64_t said = valid.size() + 8;
  for (int i = 0; i < 8; ++i) longer[32 + i] = static_cast<char>(said >> (8 * i));  // FORMAT.md: total size at 32
  write_text(cache, longer);
  r = run_cli(common + "--ctx 32 --prompt-cache-ro --prompt-cache " + quote(cache));
  CHECK(r.err.find("session state's size field says " + std::to_string(valid.size() + 8) + " bytes") !=
        std::string::npos);
}

TEST_CASE("run --prompt-cache never replaces a file that is not this session's state, unless forced") {
  if (!have_cli()) return;
  Workspace &w = workspace();
  const std::string model = quote(tiny_model()), notes = w.path("notes.txt"), cache = w.path("shaped.cache");
  const std::string common = "run -m " + model + " -n 6 --temp 0 -p 'the dog ran' ";
  const Result plain = run_cli(common + "--ctx 32");
  const std::string text = "my notes, which a wrong path must not destroy\n";
  write_text(notes, text);
  Result r = run_cli(common + "--ctx 32 --prompt-cache " + quote(notes));
  INFO("stderr: " << r.err);
  CHECK(r.code == 1);
  CHECK(r.out.empty());  // refused before the prompt is printed
  CHECK(r.err.find("'" + notes + "': not a mote session state (bad magic)") != std::string::npos);
  CHECK(r.err.find("--prompt-cache-force") != std::string::npos);
  CHECK(count_newlines(r.err) == 1);
  CHECK(slurp(notes) == text);
  // Reading only, it is ignored as before; an empty file says it is empty.
  r = run_cli(common + "--ctx 32 --prompt-cache-ro --prompt-cache " + quote(notes));
  CHECK(r.code == 0);
  CHECK(r.out == plain.out);
  CHECK(slurp(notes) == text);
  write_text(w.path("empty.cache"), "");
  r = run_cli(common + "--ctx 32 --prompt-cache-ro --prompt-cache " + quote(w.path("empty.cache")));
  CHECK(r.err.find("session state is empty (0 bytes)") != std::string::npos);

  // A state of another session shape: refused the same way.
  std::filesystem::remove(cache);
  REQUIRE(run_cli(common + "--ctx 32 --prompt-cache " + quote(cache)).code == 0);
  const std::string state = slurp(cache);
  r = run_cli(common + "--ctx 24 --prompt-cache " + quote(cache));
  CHECK(r.code == 1);
  CHECK(r.err.find("context length 32 is not this session's 24") != std::string::npos);
  CHECK(slurp(cache) == state);

  // --prompt-cache-force replaces either.
  r = run_cli(common + "--ctx 24 --prompt-cache-force --prompt-cache " + quote(cache));
  CHECK(r.code == 0);
  CHECK(r.out == run_cli(common + "--ctx 24").out);
  CHECK(slurp(cache) != state);
  r = run_cli(common + "--ctx 32 --prompt-cache-force --prompt-cache " + quote(notes));
  CHECK(r.code == 0);
  CHECK(r.out == plain.out);
  CHECK(count(r.err, "warning: ignoring the prompt cache") == 1);
  CHECK(slurp(notes) == state);  // the ctx-32 state of the same prompt
  expect_error(common + "--prompt-cache-force", 2, "--prompt-cache-force needs --prompt-cache FILE");
  expect_error(common + "--prompt-cache-force --prompt-cache-ro --prompt-cache x", 2,
               "--prompt-cache-force and --prompt-cache-ro contradict");
  CHECK(run_cli("help run").out.find("--prompt-cache-force") != std::string::npos);
  CHECK(run_cli("help chat").out.find("--prompt-cache-force") != std::string::npos);
}

TEST_CASE("run --prompt-cache reads a file's header, not the whole file: a sparse 6 GiB file is refused at once") {
  if (!have_cli()) return;
  Workspace &w = workspace();
  const std::string model = quote(tiny_model()), image = w.path("disk.img"), cache = w.path("huge.cache");
  const std::string common = "run -m " + model + " -n 2 --temp 0 -p 'the dog ran' --ctx 32 ";
  constexpr off_t kSparse = off_t{6} << 30;
  const auto sparse = [&](const std::string &path, const std::string &start) {
    write_text(path, start);
    REQUIRE(truncate(path.c_str(), kSparse) == 0);
    return fingerprint(path);
  };
  std::filesystem::remove(cache);
  REQUIRE(run_cli(common + "--prompt-cache " + quote(cache)).code == 0);
  const std::string header = slurp(cache).substr(0, MOTE_SESSION_STATE_HEADER_SIZE);
  const struct {
    std::string path, start, message;
    int code;
  } cases[] = {
      {image, std::string(512, '\0'), "not a mote session state (bad magic)", 1},
      // A header this session accepts, on a file of another size: ignored unread, and replaced.
      {cache, header, "is " + std::to_string(kSparse) + " bytes; its header says", 0},
  };
  for (const auto &c : cases) {
    INFO(c.path);
    const std::string before = sparse(c.path, c.start);
    const auto start = std::chrono::steady_clock::now();
    const Result r = run_cli(common + "--prompt-cache-ro --prompt-cache " + quote(c.path));
    const Result written = run_cli(common + "--prompt-cache " + quote(c.path));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    INFO("stderr: " << r.err << written.err);
    CHECK(r.code == 0);
    CHECK(r.err.find(c.message) != std::string::npos);
    CHECK(written.code == c.code);
    CHECK(written.err.find(c.message) != std::string::npos);
    CHECK(seconds < 20);                               // reading 6 GiB is not what takes the time
    CHECK(children_peak_rss() < (uint64_t{1} << 30));  // nor is it held in memory
    if (c.code != 0) CHECK(fingerprint(c.path) == before);
  }
  CHECK(std::filesystem::file_size(cache) < 100000);  // the state replaced the sparse file
}

TEST_CASE("state files are created 0600; a replaced file keeps its mode") {
  if (!have_cli()) return;
  Workspace &w = workspace();
  const Umask umask_022(022);
  const std::string model = quote(tiny_model()), cache = w.path("private.cache");
  const std::string common = "run -m " + model + " -n 2 --temp 0 -p 'the dog ran' --ctx 32 --prompt-cache ";
  std::filesystem::remove(cache);
  REQUIRE(run_cli(common + quote(cache)).code == 0);
  CHECK(mode_of(cache) == 0600);
  REQUIRE(chmod(cache.c_str(), 0640) == 0);
  REQUIRE(run_cli(common + quote(cache)).code == 0);
  CHECK(mode_of(cache) == 0640);

  // chat's /save and /export: new files 0600 (both hold the conversation), /save! keeps the mode.
  const std::string state = w.path("private.state"), text = w.path("private.txt"), input = w.path("private_in.txt");
  std::filesystem::remove(state);
  std::filesystem::remove(text);
  write_text(input, "hi\n/save " + state + "\n/export " + text + "\n");
  REQUIRE(run_cli("chat -m " + quote(chat_model()) + " -n 3 --temp 0 --ctx 96", input).code == 0);
  CHECK(mode_of(state) == 0600);
  CHECK(mode_of(text) == 0600);
  REQUIRE(chmod(state.c_str(), 0604) == 0);
  write_text(input, "/save! " + state + "\n");
  REQUIRE(run_cli("chat -m " + quote(chat_model()) + " -n 3 --temp 0 --ctx 96", input).code == 0);
  CHECK(mode_of(state) == 0604);

  // The writer itself, for every caller: a new file gets the mode asked for (less the umask), a
  // replaced one (also through a symlink) keeps its own.
  const std::string plain = w.path("written.bin"), link = w.path("written.link");
  std::filesystem::remove(plain);
  std::filesystem::remove(link);
  std::string error;
  REQUIRE(mote::posix::write_file_atomically(plain, "a", 1, &error));
  CHECK(mode_of(plain) == 0644);
  REQUIRE(chmod(plain.c_str(), 0600) == 0);
  REQUIRE(mote::posix::write_file_atomically(plain, "b", 1, &error));
  CHECK(mode_of(plain) == 0600);
  REQUIRE(symlink(plain.c_str(), link.c_str()) == 0);
  REQUIRE(mote::posix::write_file_atomically(link, "c", 1, &error, 0644));
  CHECK(mode_of(plain) == 0600);
  CHECK(slurp(plain) == "c");
  std::filesystem::remove(plain);
  REQUIRE(mote::posix::write_file_atomically(plain, "d", 1, &error, 0600));
  CHECK(mode_of(plain) == 0600);
}

TEST_CASE("chat: /save and /load carry the conversation to another process; /export writes the text") {
  if (!have_cli()) return;
  Workspace &w = workspace();
  const std::string model = quote(chat_model()), state = w.path("chat.state"), text = w.path("chat.txt");
  std::filesystem::remove(state);
  std::filesystem::remove(text);
  const std::string input = w.path("chat_state_in.txt");
  write_text(input, "hi\n/save " + state + "\n/save " + state + "\nhow are you\n/export " + text + "\n");
  const Result whole = run_cli("chat -m " + model + " -n 5 --temp 0 --ctx 96", input);
  INFO("stderr: " << whole.err);
  REQUIRE(whole.code == 0);
  CHECK(whole.err.find("saved the session (") != std::string::npos);
  CHECK(whole.err.find("exists; /save! " + state + " replaces it") != std::string::npos);
  CHECK(slurp(text).find("user: hi\nassistant: ") == 0);
  CHECK(slurp(text).find("user: how are you\nassistant: ") != std::string::npos);

  // A new process loads the state and answers the second message as the first process did.
  write_text(input, "/load  " + state + "  \nhow are you\n");  // the spaces around the name are not the name
  const Result resumed = run_cli("chat -m " + model + " -n 5 --temp 0 --ctx 96", input);
  INFO("resumed stderr: " << resumed.err);
  CHECK(resumed.code == 0);
  CHECK(resumed.err.find("loaded '" + state + "'") != std::string::npos);
  REQUIRE(!resumed.out.empty());
  CHECK(whole.out.size() > resumed.out.size());
  CHECK(whole.out.compare(whole.out.size() - resumed.out.size(), resumed.out.size(), resumed.out) == 0);

  // Another shape or a broken file: one line, and the conversation goes on as if never asked.
  write_text(w.path("empty.state"), "");
  write_text(input, "/load " + state + "\n/load " + w.path("missing.state") + "\n/load\n/load " +
                        w.path("empty.state") + "\nhi\n");
  const Result refused = run_cli("chat -m " + model + " -n 5 --temp 0 --ctx 80", input);
  INFO("refused stderr: " << refused.err);
  CHECK(refused.code == 0);
  CHECK(refused.err.find("context length 96 is not this session's 80 (the conversation is unchanged)") !=
        std::string::npos);
  CHECK(refused.err.find("missing.state") != std::string::npos);
  CHECK(refused.err.find("usage: /load FILE") != std::string::npos);
  CHECK(refused.err.find("empty.state': session state is empty (0 bytes)") != std::string::npos);
  CHECK(count_newlines(refused.err) == 4);
  CHECK(refused.out == whole.out.substr(0, whole.out.find('\n') + 1));  // "hi" answered as at the start
}

TEST_CASE("chat: /regenerate replaces the last reply; with nothing to redo it says so") {
  if (!have_cli()) return;
  Workspace &w = workspace();
  const std::string text = w.path("regenerated.txt"), input = w.path("chat_regen_in.txt");
  std::filesystem::remove(text);
  write_text(input, "/regenerate\nhi\n/regenerate\n/export " + text + "\n");
  const Result r = run_cli("chat -m " + quote(chat_model()) + " -n 5 --temp 0 --ctx 96", input);
  INFO("stderr: " << r.err);
  REQUIRE(r.code == 0);
  CHECK(r.err.find("mote chat: no reply to regenerate\n") == 0);
  // Greedy: the regenerated reply is the first one again, and the transcript holds it once.
  const std::string reply = r.out.substr(0, r.out.find('\n') + 1);
  CHECK(r.out == reply + reply);
  CHECK(slurp(text) == "user: hi\nassistant: " + reply);
}

TEST_CASE("chat --prompt-cache: the first turn reuses the saved state") {
  if (!have_cli()) return;
  Workspace &w = workspace();
  const std::string cache = w.path("chat.cache"), input = w.path("chat_cache_in.txt");
  std::filesystem::remove(cache);
  write_text(input, "hi\nhow are you\n");
  const std::string command = "chat -m " + quote(chat_model()) + " -n 5 --temp 0 --ctx 96 --verbose";
  const Result plain = run_cli(command, input);
  const Result first = run_cli(command + " --prompt-cache " + quote(cache), input);
  const Result second = run_cli(command + " --prompt-cache " + quote(cache), input);
  INFO("stderr: " << second.err);
  CHECK(first.out == plain.out);
  CHECK(second.out == plain.out);
  CHECK(std::filesystem::exists(cache));
  // --verbose counts the prompt tokens run: the second process ran one for its first turn.
  CHECK(second.err.find("prompt 1 tokens") != std::string::npos);
  CHECK(first.err.find("prompt 1 tokens") == std::string::npos);

  // chat and run --chat refuse a file that is not this session's state too, before the first turn.
  const std::string notes = w.path("chat_notes.txt");
  write_text(notes, "notes\n");
  for (const std::string &refused :
       {command + " --prompt-cache " + quote(notes),
        "run --chat -m " + quote(chat_model()) + " -p hi -n 3 --prompt-cache " + quote(notes)}) {
    const Result r = run_cli(refused, input);
    INFO(refused << "\nstderr: " << r.err);
    CHECK(r.code == 1);
    CHECK(r.out.empty());
    CHECK(r.err.find("not a mote session state (bad magic) (--prompt-cache-force replaces it)") != std::string::npos);
    CHECK(slurp(notes) == "notes\n");
  }
}

TEST_CASE("SmolLM2: Ctrl-C stops `mote run` in its prompt or its reply, exit code 130") {
  if (!have_cli()) return;
  const std::string gguf = mote_test::smollm2_gguf();
  if (gguf.empty()) return;
  Workspace &w = workspace();
  const std::string model = w.path("smollm2_state.mote");
  if (!std::filesystem::exists(model)) REQUIRE(run_cli("convert " + quote(gguf) + " -o " + quote(model)).code == 0);
  // SIGINT after a second: `timeout --preserve-status` passes on the command's own exit code.
  const auto interrupted_run = [&](const std::string &args) {
    const std::string out = w.path("int_out.txt"), err = w.path("int_err.txt");
    const auto start = std::chrono::steady_clock::now();
    const int status = std::system(("timeout --preserve-status -s INT 1 " + cli_invocation() + " run -m " +
                                    quote(model) + " " + args + " >" + quote(out) + " 2>" + quote(err))
                                       .c_str());
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    Result r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = slurp(out);
    r.err = slurp(err);
    return std::make_pair(r, seconds);
  };
  // A prompt of ~7,600 tokens takes many seconds to prefill: the abort comes at the next batch.
  // (Not structured bindings: INFO's lambda cannot capture them in C++17.)
  const auto prompt_run =
      interrupted_run("-f /usr/share/common-licenses/GPL-3 -n 4 -t 1 --ctx 8192 --no-display-prompt");
  const Result &prompt = prompt_run.first;
  const double prompt_seconds = prompt_run.second;
  INFO("stderr: " << prompt.err);
  CHECK(prompt.code == 130);
  CHECK(prompt.err.find("mote run: interrupted") != std::string::npos);
  CHECK(prompt.out.empty());
  CHECK(prompt_seconds < 6);
  // A reply without end: stopped after what it printed.
  const auto reply_run = interrupted_run("-p 'Once upon a time' -n -1 --ignore-eos --ctx 4096 -t 1");
  const Result &reply = reply_run.first;
  const double reply_seconds = reply_run.second;
  INFO("stderr: " << reply.err);
  CHECK(reply.code == 130);
  CHECK(reply.out.size() > std::string("Once upon a time").size());
  CHECK(reply.err.find("decode: ") != std::string::npos);  // the statistics of what ran
  CHECK(reply_seconds < 6);
}

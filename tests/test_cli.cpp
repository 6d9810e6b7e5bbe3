// The `mote` command-line tool, run as a user runs it: exit codes (0 success, 1 the command
// failed, 2 the command line was wrong), messages on stderr that are exactly one line, and the
// run / inspect / convert paths over the tiny golden checkpoint converted by the CLI itself.
// Skipped (saying so) when the build has no CLI (MOTE_BUILD_TOOLS=OFF).
#include <string>

#include "cli_support.hpp"

using namespace mote_cli_test;

TEST_CASE("cli: usage errors exit 2") {
  if (!have_cli()) return;
  const Result none = run_cli("");
  CHECK(none.code == 2);
  CHECK(none.err.find("usage: mote") != std::string::npos);
  CHECK(none.out.empty());
  const Result help = run_cli("--help");
  CHECK(help.code == 0);
  CHECK(help.out.find("usage: mote") != std::string::npos);
  CHECK(help.out.find("convert") != std::string::npos);

  const std::string model = quote(tiny_model());
  expect_error("frobnicate", 2, "unknown command 'frobnicate'");
  // Without -m the default model is used; with an empty cache it is missing.
  const std::string empty_cache = workspace().path("empty_cache");
  setenv("XDG_CACHE_HOME", empty_cache.c_str(), 1);
  expect_error("run -p hello", 1,
               "no model given (-m MODEL) and the default model " + empty_cache +
                   "/mote/SmolLM2-135M-Instruct.mote is not installed");
  expect_error("chat", 1, "is not installed: run models/fetch_smollm2.sh");
  expect_error("bench -r 1", 1, "is not installed: run models/fetch_smollm2.sh");
  unsetenv("XDG_CACHE_HOME");
  expect_error("run -m " + model + " -p hi --system 'be brief'", 2, "--system needs --chat");
  expect_error("chat -m " + model + " extra", 2, "unexpected argument 'extra'");
  expect_error("chat -m " + model, 1, "has no chat template: use mote run");
  expect_error("run --chat -m " + model + " -p hi", 1, "has no chat template");
  expect_error("run -m " + model + " --bogus", 2, "unknown option '--bogus'");
  expect_error("run -m " + model + " -n abc", 2, "invalid value 'abc'");
  expect_error("run -m " + model + " -n -5", 2, "invalid value '-5'");
  expect_error("run -m " + model + " -n 99999999999", 2, "invalid value");
  expect_error("run -m " + model + " --temp nan", 2, "invalid value 'nan' for --temp");
  expect_error("run -m " + model + " --top-k 1.5", 2, "invalid value '1.5' for --top-k");
  expect_error("run -m " + model + " --seed x7", 2, "invalid value 'x7' for --seed");
  expect_error("run -m", 2, "needs a value");
  expect_error("run -m " + model + " -p", 2, "needs a value");
  expect_error("run -m " + model + " --kv f8", 2, "--kv must be f32, f16 or q8_0");
  expect_error("run -m " + model + " -t 0", 2, "--threads must be in [1, 1024]");
  expect_error("run -m " + model + " -t 5000", 2, "--threads must be in [1, 1024]");
  // Sampler options are checked before anything is printed or computed.
  expect_error("run -m " + model + " -p hi --top-p 0", 2, "top-p must be in (0, 1]");
  expect_error("run -m " + model + " -p hi --temp -1", 2, "temperature must be");
  expect_error("run -m " + model + " -p hi --min-p 2", 2, "min-p must be in [0, 1]");
  expect_error("run -m " + model + " stray", 2, "unexpected argument 'stray'");
  expect_error("inspect", 2, "give exactly one model file");
  expect_error("inspect " + model + " " + model, 2, "give exactly one model file");
  expect_error("inspect " + model + " --ctx 100000", 2, "invalid --ctx");
  expect_error("convert", 2, "give exactly one input checkpoint");
  expect_error("convert " + quote(mote_test::golden_path("tiny_mha.bin")) + " --tokenizer " +
                   quote(mote_test::golden_path("tiny_tok64.bin")),
               2, "no output file given");
  // A missing tokenizer (none given).
  expect_error(
      "convert " + quote(mote_test::golden_path("tiny_mha.bin")) + " -o " + quote(workspace().path("no_tok.mote")), 2,
      "need --tokenizer");
  expect_error("convert " + quote(mote_test::golden_path("tiny_mha.bin")) + " -o " + quote(workspace().path("x.mote")) +
                   " --tokenizer " + quote(mote_test::golden_path("tiny_tok64.bin")) + " --dtype q9",
               2, "--dtype must be f32, f16, q8_0, q4_0, q4_1, q5_0");
  expect_error("convert " + quote(mote_test::golden_path("tiny_mha.bin")) + " -o " + quote(workspace().path("x.mote")) +
                   " --tokenizer " + quote(mote_test::golden_path("tiny_tok64.bin")) + " --layout rows",
               2, "--layout must be interleaved or gguf");
  CHECK(!mote_test::file_exists(workspace().path("no_tok.mote")));
  CHECK(!mote_test::file_exists(workspace().path("x.mote")));
}

TEST_CASE("cli: bad model files exit 1 with one line") {
  if (!have_cli()) return;
  Workspace &w = workspace();
  expect_error("run -m " + quote(w.path("does_not_exist.mote")) + " -p hi", 1, "cannot open");
  expect_error("inspect " + quote(w.path("does_not_exist.mote")), 1, "cannot open");
  expect_error("run -m " + quote(w.dir) + " -p hi", 1, "is a folder without config.json");
  write_text(w.path("empty.mote"), "");
  expect_error("inspect " + quote(w.path("empty.mote")), 1, "is empty");

  // A text file: long enough for a header, so the magic is what fails.
  std::string text;
  while (text.size() < 300) text += "This is a plain text file, not a model.\n";
  write_text(w.path("notes.txt"), text);
  expect_error("run -m " + quote(w.path("notes.txt")) + " -p hi", 1, "bad magic");
  expect_error("inspect " + quote(w.path("notes.txt")), 1, "bad magic");
  write_text(w.path("short.txt"), "hello\n");
  expect_error("inspect " + quote(w.path("short.txt")), 1, "shorter than the 128-byte header");

  // A truncated .mote (a short download).
  const std::string good = slurp(tiny_model());
  REQUIRE(good.size() > 4096);
  for (size_t cut : {static_cast<size_t>(64), static_cast<size_t>(1000), good.size() / 2, good.size() - 64}) {
    INFO("cut at " << cut);
    write_text(w.path("cut.mote"), good.substr(0, cut));
    const std::string needle = cut < 128 ? "shorter than the 128-byte header" : "truncated";
    expect_error("run -m " + quote(w.path("cut.mote")) + " -p hi", 1, needle);
    expect_error("inspect " + quote(w.path("cut.mote")), 1, needle);
  }
  // One flipped byte in the weights.
  std::string flipped = good;
  flipped[flipped.size() - 100] ^= 0x40;
  write_text(w.path("flipped.mote"), flipped);
  expect_error("inspect " + quote(w.path("flipped.mote")), 1, "payload checksum");
}

TEST_CASE("cli: convert failures") {
  if (!have_cli()) return;
  Workspace &w = workspace();
  const std::string tok = quote(mote_test::golden_path("tiny_tok64.bin"));
  expect_error("convert " + quote(mote_test::golden_path("tiny_mha.bin")) + " --tokenizer " +
                   quote(w.path("no_such_tokenizer.bin")) + " -o " + quote(w.path("a.mote")),
               1, "cannot open");
  expect_error("convert " + quote(w.path("no_such.bin")) + " --tokenizer " + tok + " -o " + quote(w.path("a.mote")), 1,
               "cannot open");
  // A checkpoint whose size disagrees with its header.
  const std::string checkpoint = slurp(mote_test::golden_path("tiny_mha.bin"));
  REQUIRE(checkpoint.size() > 1000);
  write_text(w.path("short.bin"), checkpoint.substr(0, checkpoint.size() - 100));
  expect_error("convert " + quote(w.path("short.bin")) + " --tokenizer " + tok + " -o " + quote(w.path("a.mote")), 1,
               "implies");
  write_text(w.path("tiny_header.bin"), checkpoint.substr(0, 10));
  expect_error("convert " + quote(w.path("tiny_header.bin")) + " --tokenizer " + tok + " -o " + quote(w.path("a.mote")),
               1, "too short for a llama2.c checkpoint header");
  // A tokenizer that does not belong to the checkpoint (too few tokens).
  write_text(w.path("tok_short.bin"), slurp(mote_test::golden_path("tiny_tok64.bin")).substr(0, 100));
  expect_error("convert " + quote(mote_test::golden_path("tiny_mha.bin")) + " --tokenizer " +
                   quote(w.path("tok_short.bin")) + " -o " + quote(w.path("a.mote")),
               1, "is corrupt at token");
  CHECK(!mote_test::file_exists(w.path("a.mote")));
  // An output path that cannot be created.
  expect_error("convert " + quote(mote_test::golden_path("tiny_mha.bin")) + " --tokenizer " + tok + " -o " +
                   quote(w.path("no/such/dir/a.mote")),
               1, "cannot create");
}

TEST_CASE("cli: inspect a good model") {
  if (!have_cli()) return;
  const Result r = run_cli("inspect " + quote(tiny_model()));
  INFO("stderr: " << r.err);
  CHECK(r.code == 0);
  CHECK(r.err.empty());
  CHECK(r.out.find("arena bytes") != std::string::npos);
  CHECK(r.out.find("blk.0.attn_q") != std::string::npos);
  CHECK(r.out.find("blk.1.ffn_down") != std::string::npos);
  CHECK(r.out.find("token_embd") != std::string::npos);
  CHECK(r.out.find("runnable        no") == std::string::npos);
  const Result small = run_cli("inspect " + quote(tiny_model()) + " --ctx 4");
  CHECK(small.code == 0);
  CHECK(small.out.find("(context 4, f32 KV cache, prefill batch 64)") != std::string::npos);
}

TEST_CASE("cli: run") {
  if (!have_cli()) return;
  const std::string model = quote(tiny_model());
  expect_error("run -m " + model + " --ctx 4 -p 'a b c d e f g h'", 1, "context holds 4");
  expect_error("run -m " + model + " --ctx 1000 -p hi", 1, "exceeds the model's maximum");

  const Result r = run_cli("run -m " + model + " -p 'a b' -n 5 --temp 0");
  INFO("stderr: " << r.err);
  CHECK(r.code == 0);
  CHECK(!r.out.empty());
  CHECK(r.out.find("tok/s") == std::string::npos);  // stats go to stderr only
  CHECK(r.err.find("tok/s") != std::string::npos);
  CHECK(r.err.find("decode: 5 tokens") != std::string::npos);
  // Greedy decoding is deterministic.
  const Result again = run_cli("run -m " + model + " -p 'a b' -n 5 --temp 0");
  CHECK(again.out == r.out);

  // A seeded sampler gives the same text every time, with f16 (the default) and f32 caches and more threads.
  const std::string sampled = "run -m " + model + " -p 'a b' -n 12 --seed 7 --temp 1";
  const Result first = run_cli(sampled);
  const Result second = run_cli(sampled);
  CHECK(first.code == 0);
  CHECK(second.code == 0);
  CHECK(!first.out.empty());
  CHECK(first.out == second.out);
  const Result threaded = run_cli(sampled + " -t 3");
  CHECK(threaded.code == 0);
  CHECK(threaded.out == first.out);  // thread count does not change results
  const Result f32 = run_cli(sampled + " --kv f32");
  CHECK(f32.code == 0);
  CHECK(!f32.out.empty());
  // --no-mmap reads the same bytes into memory: the same text; bench and perplexity take it too.
  const Result copied = run_cli(sampled + " --no-mmap");
  CHECK(copied.code == 0);
  CHECK(copied.out == first.out);
  CHECK(run_cli("bench -m " + model + " -p 4 -n 2 -r 1 -t 1 --no-mmap").code == 0);

  // More tokens than the context holds: stops, says so, and still succeeds.
  const Result full = run_cli("run -m " + model + " -p 'a' -n 100 --ctx 8 --temp 0");
  INFO("stderr: " << full.err);
  CHECK(full.code == 0);
  if (full.err.find("is full") == std::string::npos) {
    // Generation may also have stopped at EOS before filling the context.
    CHECK(full.err.find("decode:") != std::string::npos);
  }
  // An empty prompt runs from BOS alone.
  const Result empty = run_cli("run -m " + model + " -p '' -n 3 --temp 0");
  CHECK(empty.code == 0);
}

TEST_CASE("cli: on a terminal the text ends its line before the statistics, however it ends") {
  if (!have_cli()) return;
  const std::string run = "run -m " + quote(tiny_model()) + " -p hello --temp 0 --ignore-eos ";
  // The prompt alone (-n 0), a reply cut by -n, and the reply alone.
  for (const std::string &args : {run + "-n 0", run + "-n 3", run + "-n 3 --no-display-prompt"}) {
    INFO("mote " << args);
    const Result terminal = run_cli_on_terminal(args);
    CHECK(terminal.code == 0);
    const size_t stats = terminal.out.find("prompt: ");
    REQUIRE(stats != std::string::npos);
    REQUIRE(stats >= 2);
    CHECK(terminal.out.compare(stats - 2, 2, "\r\n") == 0);
    CHECK(count_newlines(terminal.out) == 2);  // one line of text, one of statistics
    // Piped, stdout stays exactly the text.
    const Result piped = run_cli(args);
    CHECK(piped.code == 0);
    CHECK(piped.out == terminal.out.substr(0, stats - 2));
  }
}

TEST_CASE("cli: SmolLM2-135M-Instruct chat (run --chat and mote chat)") {
  if (!have_cli()) return;
  const std::string gguf = mote_test::smollm2_gguf();
  if (gguf.empty()) return;
  const std::string model = workspace().path("smollm2.mote");
  // The default model: Q4_1 and Q8_0 as stored, interleaved.
  const Result converted = run_cli("convert " + quote(gguf) + " -o " + quote(model));
  INFO("convert stderr: " << converted.err);
  REQUIRE(converted.code == 0);

  // One turn: stdout is the reply alone (no prompt, no template tokens), greedy and factual.
  const Result reply = run_cli("run --chat -m " + quote(model) + " -p 'What is the capital of France?' -n 12 --temp 0");
  INFO("stderr: " << reply.err);
  CHECK(reply.code == 0);
  CHECK(reply.out.find("Paris") != std::string::npos);
  CHECK(reply.out.find("capital of France?") == std::string::npos);
  CHECK(reply.out.find("<|im") == std::string::npos);
  CHECK(count_newlines(reply.err) == 1);  // the statistics line

  // Two turns over one KV cache from piped stdin; a message the vocabulary cannot hold gets a
  // one-line error and the conversation goes on; EOF ends it with status 0.
  const std::string input = workspace().path("chat_input.txt");
  write_text(input, "Name a color.\nbad \xff byte\nAnd a fruit?\n");
  const Result chat = run_cli("chat -m " + quote(model) + " -n 16 --temp 0", input);
  INFO("chat stderr: " << chat.err);
  CHECK(chat.code == 0);
  CHECK(count_newlines(chat.out) == 2);  // one line per answered turn
  CHECK(chat.err.find("cannot represent") != std::string::npos);
  CHECK(count_newlines(chat.err) == 1);

  // /undo rewinds the cache to before the last exchange: the same message then gets the same
  // reply at the same context position; with nothing to undo, the user is told.
  write_text(input, "/undo\nName a color.\n/undo\nName a color.\n");
  const Result undo = run_cli("chat -m " + quote(model) + " -n 16 --temp 0 --verbose", input);
  INFO("undo stderr: " << undo.err);
  CHECK(undo.code == 0);
  CHECK(undo.err.find("mote chat: nothing to undo\n") != std::string::npos);
  CHECK(undo.err.find("mote chat: last exchange dropped\n") != std::string::npos);
  const size_t first_end = undo.out.find('\n');
  REQUIRE(first_end != std::string::npos);
  CHECK(undo.out == undo.out.substr(0, first_end + 1) + undo.out.substr(0, first_end + 1));
  const size_t first_context = undo.err.find("; context "), second_context = undo.err.rfind("; context ");
  REQUIRE(first_context != second_context);
  CHECK(undo.err.substr(first_context, undo.err.find('\n', first_context) - first_context) ==
        undo.err.substr(second_context, undo.err.find('\n', second_context) - second_context));

  // A context that fills up: the user is told, and the conversation starts over.
  write_text(input, "Tell me a long story about a dragon.\nAnd another one, please.\nOne more.\n");
  const Result full = run_cli("chat -m " + quote(model) + " --ctx 64 -n 48 --temp 0", input);
  INFO("full stderr: " << full.err);
  CHECK(full.code == 0);
  CHECK(full.err.find("the context of 64 tokens is full; starting a new conversation") != std::string::npos);

  // As a user types in a terminal: Ctrl-C mid-reply returns to the prompt and the next turn still
  // sees the earlier ones; /clear empties the cache; Ctrl-D ends (tests/chat_pty.py, stdlib only).
  if (std::system("command -v python3 >/dev/null") != 0) {
    MOTE_SKIP("python3 is absent: the pseudo-terminal chat test needs it");
    return;
  }
  const std::string script = std::string(MOTE_TEST_DATA_DIR) + "/../chat_pty.py";
  const int status = std::system(("python3 " + quote(script) + " " + quote(kCli) + " " + quote(model)).c_str());
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

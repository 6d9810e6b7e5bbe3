// The backend seam on every build: the CPU is the default and takes no device memory; asking for
// CUDA where the build (MOTE_CUDA=OFF) or the machine (no GPU) has none is a clear one-line
// error from the C API and from the CLI (exit 1), never a crash or a silent CPU run.
#include <cstring>
#include <string>

#include "cli_support.hpp"
#include "test_support.hpp"

using namespace mote_test;
using namespace mote_cli_test;

namespace {

bool cuda_built() { return mote_backend_name(MOTE_BACKEND_CUDA) != nullptr; }

}  // namespace

TEST_CASE("backend: the CPU is the default and takes no device memory") {
  auto m = convert_and_open(golden_path("tiny_mha.bin"), golden_path("tiny_tok64.bin"));
  const mote_session_options o = mote_session_options_default();
  CHECK(o.backend == MOTE_BACKEND_CPU);
  CHECK(o.device_model == nullptr);
  CHECK(std::string(mote_backend_name(MOTE_BACKEND_CPU)) == "cpu");
  uint64_t weights = 1, session = 1;
  char message[256] = "";
  CHECK(mote_backend_memory(&m->model, &o, &weights, &session, message, sizeof message) == MOTE_OK);
  CHECK(weights == 0);
  CHECK(session == 0);
  auto s = open_session(m->model, o);
  CHECK(mote_decode(&s->session, 1, nullptr) == MOTE_OK);
  mote_session_release(&s->session);  // nothing outside the arena: the session just ends
  CHECK(s->session.impl_ == nullptr);
  CHECK(mote_decode(&s->session, 1, nullptr) == MOTE_ERR_INVALID_ARGUMENT);
}

TEST_CASE("backend: an unknown backend is an invalid argument") {
  auto m = convert_and_open(golden_path("tiny_mha.bin"), golden_path("tiny_tok64.bin"));
  mote_session_options o = mote_session_options_default();
  const uint32_t unknown = 7;  // stored as a C caller would: loading it as the C++ enum is undefined
  std::memcpy(&o.backend, &unknown, sizeof unknown);
  CHECK(mote_arena_size(&m->model, &o) == 0);
  const auto backend_name_of_int = reinterpret_cast<const char *(*)(uint32_t)>(&mote_backend_name);
  CHECK(backend_name_of_int(unknown) == nullptr);
  mote_session session{};
  char message[256] = "";
  alignas(64) static unsigned char arena[64];
  CHECK(mote_session_init(&session, &m->model, &o, arena, sizeof arena, message, sizeof message) ==
        MOTE_ERR_INVALID_ARGUMENT);
  CHECK(std::string(message) == "unknown backend 7");
}

TEST_CASE("backend: CUDA on a build without it says how to get it") {
  if (cuda_built()) {
    MOTE_SKIP("this build has the CUDA backend (tests/cuda covers it)");
    return;
  }
  auto m = convert_and_open(golden_path("tiny_mha.bin"), golden_path("tiny_tok64.bin"));
  mote_session_options o = mote_session_options_default();
  o.backend = MOTE_BACKEND_CUDA;
  CHECK(mote_arena_size(&m->model, &o) == 0);
  uint64_t weights = 0, session_bytes = 0;
  char message[256] = "";
  CHECK(mote_backend_memory(&m->model, &o, &weights, &session_bytes, message, sizeof message) == MOTE_ERR_UNSUPPORTED);
  CHECK(std::string(message) == "this build has no CUDA backend (configure with -DMOTE_CUDA=ON)");
  mote_session session{};
  alignas(64) static unsigned char arena[1 << 16];
  message[0] = '\0';
  CHECK(mote_session_init(&session, &m->model, &o, arena, sizeof arena, message, sizeof message) ==
        MOTE_ERR_UNSUPPORTED);
  CHECK(std::string(message) == "this build has no CUDA backend (configure with -DMOTE_CUDA=ON)");
  CHECK(session.impl_ == nullptr);
}

TEST_CASE("cli: --backend cuda without CUDA is one line on stderr and exit 1") {
  if (!have_cli()) return;
  const std::string model = quote(tiny_model());
  const std::string commands[] = {
      "run -m " + model + " -p 'a b' -n 3 --temp 0 --backend cuda",
      "run -m " + model + " -p 'a b' -n 3 --temp 0 --gpu",
      "bench -m " + model + " -p 4 -n 4 -r 1 --backend cuda",
      "inspect " + model + " --backend cuda",
  };
  for (const std::string &args : commands) {
    const Result r = run_cli(args);
    INFO(args << "\nstderr: " << r.err);
    if (cuda_built() && r.code == 0) continue;  // a CUDA build on a machine with a GPU runs it
    CHECK(r.code == 1);
    CHECK(count_newlines(r.err) == 1);
    CHECK(r.err.find("CUDA") != std::string::npos);
    CHECK(r.out.empty());
  }
  const Result wrong = run_cli("run -m " + model + " -p a -n 1 --backend tpu");
  CHECK(wrong.code == 2);
  CHECK(wrong.err.find("--backend must be cpu or cuda") != std::string::npos);
  const Result cpu = run_cli("run -m " + model + " -p 'a b' -n 3 --temp 0 --backend cpu");
  const Result plain = run_cli("run -m " + model + " -p 'a b' -n 3 --temp 0");
  CHECK(cpu.code == 0);
  CHECK(cpu.out == plain.out);
}

// Constrained generation with SmolLM2-135M-Instruct: every output of sampled runs (several
// schemas, temperatures and seeds) parses with Python's json and validates with jsonschema (the
// oracle); and the per-token cost of masking, measured against unconstrained sampling.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "mote/mote.h"
#include "test_support.hpp"

namespace {

const char *const kSchemas[] = {
    R"({"type":"object","properties":{"name":{"type":"string","maxLength":24},"age":{"type":"integer"},
        "email":{"type":"string","maxLength":32}},"required":["name","age"]})",
    R"({"type":"array","items":{"type":"integer"},"minItems":2,"maxItems":5})",
    R"({"type":"object","properties":{"color":{"enum":["red","green","blue"]},"bright":{"type":"boolean"},
        "rgb":{"type":"array","items":{"type":"number"},"minItems":3,"maxItems":3},"note":{"type":"null"}},
        "required":["color","rgb"]})",
    R"({"$defs":{"item":{"type":"object","properties":{"id":{"type":"integer"},"ok":{"type":"boolean"}},
        "required":["id","ok"]}},"type":"object","properties":{"items":{"type":"array","items":{"$ref":"#/$defs/item"},
        "maxItems":3}},"required":["items"]})",
};
const char *const kRequests[] = {"a person", "a list of small numbers", "a color", "a list of items"};


std::vector<int32_t> chat_prompt(const mote_model &model, const std::string &request) {
  return mote_test::chat_tokens(model, "Reply with JSON only: " + request + ".");
}

int append_piece(void *user, int32_t, const char *piece, size_t n) {
  static_cast<std::string *>(user)->append(piece, n);
  return 0;
}

std::string json_string(const std::string &text) {
  std::string out = "\"";
  for (const char c : text) {
    char escaped[8];
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace

TEST_CASE("smollm2: every constrained output is valid JSON for its schema (json + jsonschema)") {
  const mote_test::ConvertedModel *m = mote_test::smollm2_model(std::nullopt);
  if (m == nullptr) return;
  const std::string python = mote_test::python_with("json, jsonschema");
  mote_session_options options = mote_session_options_default();
  options.context_length = 320;
  options.n_threads = 2;
  auto s = mote_test::open_session(m->model, options);
  std::string pairs = "[";
  int runs = 0;
  for (size_t k = 0; k < sizeof kSchemas / sizeof kSchemas[0]; ++k) {
    auto g = mote_test::compile_schema(m->model, kSchemas[k]);
    const std::vector<int32_t> prompt = chat_prompt(m->model, kRequests[k]);
    for (const float temperature : {0.0f, 0.8f, 1.2f}) {
      for (const uint64_t seed : {1u, 2u}) {
        if (temperature == 0.0f && seed > 1) continue;  // greedy takes no random numbers
        mote_sampler_options sampler = mote_sampler_options_default();
        sampler.temperature = temperature;
        sampler.top_k = temperature > 1.0f ? 0 : 40;  // the whole vocabulary once: every token checked
        sampler.seed = seed;
        REQUIRE(mote_session_reset(&s->session) == MOTE_OK);
        REQUIRE(mote_grammar_reset(&g->grammar) == MOTE_OK);
        std::string output;
        uint32_t n = 0;
        const mote_status status = mote_generate_constrained(&s->session, prompt.data(), prompt.size(), 160, &sampler,
                                                             &g->grammar, append_piece, &output, &n);
        REQUIRE_MESSAGE(status == MOTE_OK, mote_session_error(&s->session));
        CHECK_MESSAGE((mote_grammar_state(&g->grammar) & MOTE_GRAMMAR_COMPLETE) != 0, output);
        MESSAGE("schema " << k << " T=" << temperature << " seed " << seed << ": " << output);
        pairs += (runs++ > 0 ? ",[" : "[") + json_string(kSchemas[k]) + "," + json_string(output) + "]";
      }
    }
  }
  pairs += "]";
  CHECK(runs == 20);
  if (python.empty()) return;
  // In a scratch folder of its own: a test never writes into the folder it runs from.
  char scratch[] = "/tmp/mote_grammar_oracle_XXXXXX";
  REQUIRE(mkdtemp(scratch) != nullptr);
  const std::string dir = scratch, path = dir + "/outputs.json", oracle = dir + "/oracle.py";
  std::ofstream(path) << pairs;
  const std::string script =
      "import json, jsonschema, sys\n"
      "bad = 0\n"
      "for schema, doc in json.load(open(sys.argv[1])):\n"
      "    try:\n"
      "        jsonschema.validate(json.loads(doc), json.loads(schema))\n"
      "    except Exception as e:\n"
      "        bad += 1; print('INVALID:', repr(doc), str(e).splitlines()[0])\n"
      "sys.exit(1 if bad else 0)\n";
  std::ofstream(oracle) << script;
  CHECK(std::system((python + " " + oracle + " " + path).c_str()) == 0);
  std::filesystem::remove_all(dir);
}

TEST_CASE("smollm2: the per-token cost of the grammar's mask against unconstrained sampling") {
  const mote_test::ConvertedModel *m = mote_test::smollm2_model(std::nullopt);
  if (m == nullptr) return;
  mote_session_options options = mote_session_options_default();
  options.context_length = 256;
  auto s = mote_test::open_session(m->model, options);
  auto g = mote_test::compile_schema(m->model, "{}");
  mote_model_info info;
  mote_model_info_get(&m->model, &info);
  const std::vector<int32_t> prompt = chat_prompt(m->model, "a small list of people with names and ages");
  using clock = std::chrono::steady_clock;
  for (const int top_k : {1, 40, 0}) {  // 1: greedy (temperature 0); 0: the whole vocabulary
    mote_sampler_options sampler = mote_sampler_options_default();
    sampler.temperature = top_k == 1 ? 0.0f : 0.8f;
    sampler.top_k = top_k == 1 ? 40 : top_k;
    REQUIRE(mote_session_reset(&s->session) == MOTE_OK);
    REQUIRE(mote_grammar_reset(&g->grammar) == MOTE_OK);
    REQUIRE(mote_prefill(&s->session, prompt.data(), prompt.size()) == MOTE_OK);
    std::vector<float> saved(info.vocab_size);
    double plain = 0, constrained = 0;
    int steps = 0;
    for (; steps < 48 && (mote_grammar_state(&g->grammar) & MOTE_GRAMMAR_CAN_CONTINUE) != 0; ++steps) {
      float *logits = const_cast<float *>(mote_logits(&s->session));  // both samplers modify them
      std::copy(logits, logits + info.vocab_size, saved.begin());
      int32_t unconstrained = 0, token = 0;
      const auto t0 = clock::now();
      REQUIRE(mote_sample(&s->session, &sampler, &unconstrained) == MOTE_OK);
      const auto t1 = clock::now();
      std::copy(saved.begin(), saved.end(), logits);
      REQUIRE(mote_sample_grammar(&s->session, &sampler, &g->grammar, &token) == MOTE_OK);
      const auto t2 = clock::now();
      plain += std::chrono::duration<double>(t1 - t0).count();
      constrained += std::chrono::duration<double>(t2 - t1).count();
      if (mote_token_ends_generation(&m->model, token)) break;
      const float *next = nullptr;
      REQUIRE(mote_decode(&s->session, token, &next) == MOTE_OK);
    }
    REQUIRE(steps > 0);
    const std::string mode = top_k == 1 ? "greedy" : top_k == 40 ? "top-k 40" : "whole vocabulary";
    MESSAGE("grammar overhead (" << mode << ", " << steps << " tokens): unconstrained " << plain / steps * 1e6
                                 << " us/token, constrained " << constrained / steps * 1e6 << " us/token");
    // Reported, not asserted (timings belong to benchmarks): docs/USING.md, "Constrained output".
  }
}

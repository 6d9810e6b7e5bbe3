// `mote bench`: prompt and decode throughput, mean ± standard deviation over repetitions, for
// every combination of the comma lists given (llama-bench's -t 1,2 -p 128,512 -n 128 -d 0,4096).
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "cli_generate.hpp"
#include "cli_grammar.hpp"
#include "cli_model.hpp"
#include "cli_options.hpp"
#include "cli_terminal.hpp"
#include "commands.hpp"

namespace mote::cli {
namespace {

struct Spread {
  double mean = 0, stddev = 0;
};

Spread spread(const std::vector<double> &values) {
  Spread s;
  if (values.empty()) return s;
  for (double v : values) s.mean += v / static_cast<double>(values.size());
  double squares = 0;
  for (double v : values) squares += (v - s.mean) * (v - s.mean);
  s.stddev = values.size() > 1 ? std::sqrt(squares / static_cast<double>(values.size() - 1)) : 0.0;
  return s;
}

struct BenchResult {
  uint32_t threads = 0, prompt_tokens = 0, gen_tokens = 0, depth = 0, batch = 0;
  bool check = false;  // the prompt's pass wrote every position's logits (a speculative check)
  Spread prompt_rate, decode_rate;
  // A reply test (-f): the drafter, and the tokens one forward pass yielded (1 without drafting).
  std::string draft;  // empty: a prompt/decode test
  double tokens_per_pass = 1.0;
  double first_token_s = 0;
  size_t arena_bytes = 0;
};

// A fixed pseudo-random prompt that avoids BOS and EOS where the vocabulary allows.
std::vector<int32_t> bench_prompt(const mote_model_info &info, uint32_t n) {
  std::vector<int32_t> prompt(n);
  for (uint32_t i = 0, id = 0; i < n; ++i) {
    for (uint32_t tries = 0; tries < 3; ++tries) {
      id = (id + 7919u) % info.vocab_size;
      if (static_cast<int32_t>(id) != info.bos_id && static_cast<int32_t>(id) != info.eos_id) break;
    }
    prompt[i] = static_cast<int32_t>(id);
  }
  return prompt;
}

// One combination (t threads, d tokens already in the KV cache, a p-token prompt, n decoded
// tokens), reps times: its rates. The depth is filled once, untimed, and each repetition truncates
// back to it (llama-bench's -d).
bool measure(const mote_model &model, const mote_model_info &info, const mote_session_options &options, uint32_t reps,
             double open_start, BenchResult *result, std::string *error) {
  auto holder = open_session(model, options, error);
  if (!holder) return false;
  mote_session *session = &holder->session;
  const uint32_t p = result->prompt_tokens, n = result->gen_tokens, d = result->depth;
  const std::vector<int32_t> filler = bench_prompt(info, d + p);
  const std::vector<int32_t> prompt(filler.begin() + d, filler.end());
  result->arena_bytes = holder->arena_bytes;
  const auto failed = [&] {
    *error = mote_session_error(session);
    return false;
  };
  if (d > 0 && mote_prefill(session, filler.data(), d) != MOTE_OK) return failed();
  std::vector<double> prompt_rates, decode_rates;
  std::vector<float> every_logit(result->check ? static_cast<size_t>(p) * info.vocab_size : 0);
  const auto run_prompt = [&] {
    if (result->check) {
      return mote_prefill_logits(session, prompt.data(), p, 0, every_logit.data(), every_logit.size());
    }
    return mote_prefill(session, prompt.data(), p);
  };
  for (uint32_t r = 0; r < reps; ++r) {
    if (mote_session_truncate(session, d) != MOTE_OK) return failed();
    const double t0 = now_seconds();
    if (p > 0 && run_prompt() != MOTE_OK) return failed();
    const double t1 = now_seconds();
    if (r == 0) result->first_token_s = t1 - open_start;
    const float *logits = p > 0 ? mote_logits(session) : nullptr;
    for (uint32_t i = 0; i < n; ++i) {
      // Greedy without the sampler, so decode time is the forward pass alone (with no timed
      // prompt, the first decoded token is the filler's first).
      const int32_t next = logits ? static_cast<int32_t>(std::max_element(logits, logits + info.vocab_size) - logits)
                                  : bench_prompt(info, 1)[0];
      if (mote_decode(session, next, &logits) != MOTE_OK) {
        *error = mote_session_error(session);
        return false;
      }
    }
    const double t2 = now_seconds();
    if (p > 0) prompt_rates.push_back(p / (t1 - t0));
    if (n > 0) decode_rates.push_back(n / (t2 - t1));
  }
  result->prompt_rate = spread(prompt_rates);
  result->decode_rate = spread(decode_rates);
  return true;
}

// A reply test (-f FILE): the file's text as one chat turn, prefilled untimed, then a greedy reply
// of at most n tokens through mote_generate with the drafter asked for (draft_session: -md's),
// reps times; the decode rate is the reply's tokens over its time, whatever drafting did.
bool measure_reply(const mote_model &model, const std::vector<int32_t> &prompt, const mote_session_options &options,
                   mote_draft_kind kind, mote_session *draft_session, mote_grammar *grammar, uint32_t reps,
                   BenchResult *result, std::string *error) {
  auto holder = open_session(model, options, error);
  if (!holder) return false;
  mote_session *session = &holder->session;
  result->arena_bytes = holder->arena_bytes;
  mote_sampler_options sampler = mote_sampler_options_default();
  sampler.temperature = 0.0f;
  sampler.draft = kind;
  sampler.draft_session = kind == MOTE_DRAFT_NONE || kind == MOTE_DRAFT_LOOKUP ? nullptr : draft_session;
  std::vector<double> rates;
  double tokens = 0, passes = 0;
  // The prompt runs once; each repetition truncates to it less its last token and decodes that
  // again (untimed), which gives the same logits as the whole prompt.
  const auto failed = [&] {
    *error = mote_session_error(session);
    return false;
  };
  if (mote_prefill(session, prompt.data(), prompt.size() - 1) != MOTE_OK) return failed();
  const uint32_t kept = mote_session_position(session);
  // The draft model reads the prompt untimed too (a chat keeps it in step turn after turn); each
  // reply then runs from what it holds, as mote_generate keeps it in step by common prefix.
  if (sampler.draft_session != nullptr && (mote_session_reset(draft_session) != MOTE_OK ||
                                           mote_prefill(draft_session, prompt.data(), prompt.size()) != MOTE_OK)) {
    *error = mote_session_error(draft_session);
    return false;
  }
  for (uint32_t r = 0; r < reps; ++r) {
    if (mote_session_truncate(session, kept) != MOTE_OK || mote_decode(session, prompt.back(), nullptr) != MOTE_OK)
      return failed();
    uint32_t generated = 0;
    if (grammar != nullptr) mote_grammar_reset(grammar);
    const double t0 = now_seconds();
    if (mote_generate_constrained(session, nullptr, 0, result->gen_tokens, &sampler, grammar, nullptr, nullptr,
                                  &generated) != MOTE_OK) {
      *error = mote_session_error(session);
      return false;
    }
    const double t1 = now_seconds();
    mote_generation_stats stats{};
    mote_generate_stats(session, &stats);
    if (generated > 0) rates.push_back(generated / (t1 - t0));
    tokens += static_cast<double>(stats.generated);
    passes += static_cast<double>(stats.passes);
  }
  result->decode_rate = spread(rates);
  result->tokens_per_pass = passes > 0 ? tokens / passes : 1.0;
  return true;
}

// llama-bench's test names: pp512, tg64, and "tg64 @ d4096" at a depth; a reply test names its
// drafter and the tokens per pass.
std::string test_name(const char *kind, uint32_t tokens, uint32_t depth, const BenchResult *reply = nullptr) {
  if (reply != nullptr && !reply->draft.empty()) {
    char text[96];
    std::snprintf(text, sizeof text, "reply%u draft=%s (%.2f tokens/pass)", static_cast<unsigned>(tokens),
                  reply->draft.c_str(), reply->tokens_per_pass);
    return text;
  }
  std::string name = kind + std::to_string(tokens);
  return depth > 0 ? name + " @ d" + std::to_string(depth) : name;
}

const char *kv_name(mote_kv_dtype kv) { return kv == MOTE_KV_F32 ? "f32" : kv == MOTE_KV_F16 ? "f16" : "q8_0"; }

// The weight bytes one decoding step reads: every tensor, but a single row of a token embedding
// table that is not also the classifier (a separate "output") and of learned positions.
uint64_t decode_weight_bytes(const mote_model &model, const mote_model_info &info) {
  uint64_t bytes = info.weight_bytes, embedding_rest = 0;
  bool separate_classifier = false;
  for (uint32_t i = 0; i < info.n_tensors; ++i) {
    mote_tensor_info t;
    if (mote_model_tensor(&model, i, &t) != MOTE_OK || t.n_dims != 2 || t.shape[0] == 0) continue;
    const uint64_t all_but_a_row = t.size - t.size / t.shape[0];
    if (std::strcmp(t.name, "output") == 0) separate_classifier = true;
    if (std::strcmp(t.name, "token_embd") == 0) embedding_rest = all_but_a_row;
    if (std::strcmp(t.name, "position_embd") == 0) bytes -= all_but_a_row;
  }
  return separate_classifier ? bytes - embedding_rest : bytes;
}

// The results as -o asks: one JSON array, CSV rows, or a markdown table with a summary line.
// decode_bytes: decode_weight_bytes(), what the summary's GB/s count.
void print_results(const std::string &output, const std::string &model_path, mote_backend backend,
                   const mote_model_info &info, uint64_t decode_bytes, mote_kv_dtype kv, uint32_t reps,
                   const std::vector<BenchResult> &results) {
  const char *backend_label = mote_backend_name(backend);
  const double weight_mb = info.weight_bytes / 1e6;
  if (output == "json") {
    std::printf("[\n");
    for (size_t i = 0; i < results.size(); ++i) {
      const BenchResult &r = results[i];
      std::printf(
          "  {\"model\": \"%s\", \"backend\": \"%s\", \"isa\": \"%s\", \"threads\": %u, \"prompt_tokens\": %u, "
          "\"gen_tokens\": %u, \"depth\": %u, \"reps\": %u, \"batch_size\": %u, \"kv\": \"%s\", "
          "\"prompt_tokens_per_s\": %.3f, "
          "\"prompt_tokens_per_s_stddev\": %.3f, \"decode_tokens_per_s\": %.3f, \"decode_tokens_per_s_stddev\": %.3f, "
          "\"weight_bytes\": %llu, \"arena_bytes\": %zu, \"decode_weight_gb_per_s\": %.3f, "
          "\"open_to_first_token_s\": %.4f, \"draft\": \"%s\", \"tokens_per_pass\": %.3f, \"check\": %s}%s\n",
          model_path.c_str(), backend_label, mote_isa_name(), r.threads, r.prompt_tokens, r.gen_tokens, r.depth, reps,
          r.batch, kv_name(kv), r.prompt_rate.mean, r.prompt_rate.stddev, r.decode_rate.mean, r.decode_rate.stddev,
          static_cast<unsigned long long>(info.weight_bytes), r.arena_bytes,
          r.decode_rate.mean * static_cast<double>(decode_bytes) / 1e9, r.first_token_s, r.draft.c_str(),
          r.tokens_per_pass, r.check ? "true" : "false", i + 1 < results.size() ? "," : "");
    }
    std::printf("]\n");
  } else if (output == "csv") {
    std::printf("model,backend,isa,threads,test,tokens_per_s,stddev\n");
    for (const BenchResult &r : results) {
      const auto row = [&](const char *kind, uint32_t tokens, const Spread &rate) {
        if (tokens == 0) return;
        std::printf("%s,%s,%s,%u,%s,%.3f,%.3f\n", model_path.c_str(), backend_label, mote_isa_name(), r.threads,
                    test_name(kind, tokens, r.depth, &r).c_str(), rate.mean, rate.stddev);
      };
      row(r.check ? "check" : "pp", r.prompt_tokens, r.prompt_rate);
      row("tg", r.gen_tokens, r.decode_rate);
    }
  } else {
    std::printf("| model | weights | backend | isa | threads | test | t/s |\n");
    std::printf("| --- | ---: | --- | --- | ---: | ---: | ---: |\n");
    for (const BenchResult &r : results) {
      const auto row = [&](const char *kind, uint32_t tokens, const Spread &rate) {
        if (tokens == 0) return;
        std::printf("| %s | %.1f MB | %s | %s | %u | %s | %.1f ± %.1f |\n", model_path.c_str(), weight_mb,
                    backend_label, mote_isa_name(), r.threads, test_name(kind, tokens, r.depth, &r).c_str(), rate.mean,
                    rate.stddev);
      };
      row(r.check ? "check" : "pp", r.prompt_tokens, r.prompt_rate);
      row("tg", r.gen_tokens, r.decode_rate);
    }
    std::printf("\nmodel open to first token: %.3f s; decode reads %.2f GB/s of weights (first row; %.1f MB a token)\n",
                results.front().first_token_s,
                results.front().decode_rate.mean * static_cast<double>(decode_bytes) / 1e9,
                static_cast<double>(decode_bytes) / 1e6);
  }
}

// The reply tests of -f: every thread count x drafter, one row each.
bool run_reply_tests(const LoadedModel &loaded, const mote_model_info &info, const std::string &file,
                     const std::string &draft_list, const std::string &draft_model_path, const GrammarOptions &grammar,
                     const std::vector<uint32_t> &threads, const std::vector<uint32_t> &gen_tokens, uint32_t batch,
                     mote_kv_dtype kv, uint32_t reps, std::vector<BenchResult> *results, std::string *error) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    *error = "cannot read '" + file + "'";
    return false;
  }
  std::stringstream text;
  text << in.rdbuf();
  const std::string request = text.str();
  const mote_chat_message message{MOTE_ROLE_USER, request.data(), request.size()};
  std::vector<int32_t> prompt(request.size() + 256);
  size_t n_prompt = 0;
  if (mote_chat_tokenize(&loaded.model, &message, 1, MOTE_CHAT_ADD_ASSISTANT_PROMPT, prompt.data(), prompt.size(),
                         &n_prompt) != MOTE_OK) {
    *error = "'" + file + "' does not fit the model's chat template";
    return false;
  }
  prompt.resize(n_prompt);
  std::unique_ptr<LoadedModel> draft_model;
  if (!draft_model_path.empty()) {
    draft_model = load_model(draft_model_path, error);
    if (!draft_model) return false;
    if (mote_models_share_vocabulary(&loaded.model, &draft_model->model) == 0) {
      *error = "the draft model '" + draft_model_path + "' has another vocabulary: it cannot draft for this model";
      return false;
    }
  }
  std::shared_ptr<GrammarHolder> compiled;
  if (grammar.given() && !compile_grammar(grammar, loaded.model, &compiled, error)) return false;
  const uint32_t n = gen_tokens.front();
  for (uint32_t t : threads) {
    mote_session_options options = mote_session_options_default();
    options.context_length = static_cast<uint32_t>(std::min<uint64_t>(info.max_seq_len, prompt.size() + n + 16));
    options.n_threads = t;
    options.batch_size = batch;
    options.kv_dtype = kv;
    std::unique_ptr<SessionHolder> draft_session;
    if (draft_model) {
      mote_session_options draft_options = options;
      draft_options.draft_capacity = 0;
      draft_session = open_session(draft_model->model, draft_options, error);
      if (!draft_session) return false;
    }
    std::stringstream names(draft_list);
    std::string name;
    while (std::getline(names, name, ',')) {
      mote_draft_kind kind = MOTE_DRAFT_NONE;
      if (!parse_draft_kind(name, &kind)) {
        *error = "--draft: unknown drafter '" + name + "' (none, auto, lookup or model)";
        return false;
      }
      if (kind == MOTE_DRAFT_MODEL && !draft_session) {
        *error = "--draft model needs a draft model (-md FILE)";
        return false;
      }
      BenchResult result;
      result.threads = t;
      result.gen_tokens = n;
      result.batch = batch;
      result.draft = name;
      if (!measure_reply(loaded.model, prompt, options, kind, draft_session ? &draft_session->session : nullptr,
                         compiled ? &compiled->grammar : nullptr, reps, &result, error))
        return false;
      results->push_back(result);
    }
  }
  return true;
}

}  // namespace

int command_bench(int argc, char **argv) {
  std::string model_path, backend_name = "cpu", output = "md", reply_file, draft_model_path, draft_list = "none,auto";
  KvCacheOptions kv;
  ModelLoadOptions load;
  GrammarOptions grammar;  // -f: the reply's grammar or JSON schema
  bool gpu = false, json = false, check = false;
  std::vector<uint32_t> threads = {available_cpus()}, prompt_tokens = {128}, gen_tokens = {64}, depths = {0};
  uint32_t reps = 3, batch = mote_session_options_default().batch_size;
  CommandHelp command{
      "bench",
      "[-m MODEL] [-t N[,N...]] [-p N[,N...]] [-n N[,N...]] [-d N[,N...]] [OPTIONS]",
      "Measure prompt (prefill) and decode tokens per second, mean ± standard deviation over the\n"
      "repetitions, for every combination of the lists (decode is greedy, after the prompt; -p 0 or\n"
      "-n 0 leaves that test out). At a depth d the KV cache already holds d tokens (filled untimed).\n"
      "-o json prints one JSON array with an object per combination.",
      {
          {"-m|--model", Option::kString, &model_path, "FILE",
           "the model (.mote, or a GGUF or Hugging Face folder converted once into the cache)", nullptr,
           "SmolLM2-135M-Instruct from ~/.cache/mote"},
          {"-t|--threads", Option::kU32List, &threads, "N,...", "thread counts"},
          {"-p|--n-prompt|--prompt-tokens", Option::kU32List, &prompt_tokens, "N,...", "prompt lengths in tokens"},
          {"-n|--n-gen|--gen-tokens", Option::kU32List, &gen_tokens, "N,...", "generated tokens"},
          {"-d|--n-depth", Option::kU32List, &depths, "N,...", "tokens already in the KV cache before each test"},
          {"-r|--repetitions|--reps", Option::kU32, &reps, "N", "repetitions of each combination"},
          {"-b|--batch-size|--batch", Option::kU32, &batch, "N", "prompt tokens per forward pass"},
          {"--check", Option::kSwitch, &check, nullptr,
           "the prompt's pass also writes every position's logits, as a speculative check of -p tokens does "
           "(mote_prefill_logits; tests named checkN)"},
          {"-o|--output", Option::kString, &output, "FORMAT", "md (a markdown table), csv or json"},
          {"--json", Option::kSwitch, &json, nullptr, "the same as -o json"},
          {"--backend", Option::kString, &backend_name, "NAME", "cpu or cuda"},
          {"--gpu", Option::kSwitch, &gpu, nullptr, "the same as --backend cuda"},
          {"-f|--file", Option::kString, &reply_file, "FILE",
           "time a greedy chat reply (at most -n tokens) to the text of FILE instead, for each --draft"},
          {"--draft", Option::kString, &draft_list, "LIST", "with -f: drafters to compare (none,auto,lookup,model)"},
          {"-md|--model-draft", Option::kString, &draft_model_path, "FILE", "with -f: a draft model"},
      }};
  kv.add_options(&command.options);
  load.add_options(&command.options);
  // The reply's grammar options, but not their --json: here it is -o json, as in llama-bench.
  std::vector<Option> grammar_options;
  grammar.add_options(&grammar_options);
  for (const Option &o : grammar_options) {
    if (std::string(o.names) != "--json") command.options.push_back(o);
  }
  std::vector<std::string> positional;
  const int parsed = parse_command(command, argc, argv, &positional);
  if (parsed != kParsed) return parsed;
  std::string error;
  if (!positional.empty()) return report("bench", "unexpected argument '" + positional[0] + "'", kExitUsage);
  if (json) output = "json";
  if (output != "md" && output != "csv" && output != "json")
    return report("bench", "-o must be md, csv or json", kExitUsage);
  const auto all_positive = [](const std::vector<uint32_t> &v) {
    return std::all_of(v.begin(), v.end(), [](uint32_t x) { return x > 0; });
  };
  const bool threads_ok = std::all_of(threads.begin(), threads.end(), [](uint32_t t) { return t <= kMaxThreads; });
  if (!threads_ok || !all_positive(threads) || reps == 0) {
    return report("bench", "threads (at most " + std::to_string(kMaxThreads) + ") and reps must be at least 1",
                  kExitUsage);
  }
  const auto all_zero = [](const std::vector<uint32_t> &v) {
    return std::all_of(v.begin(), v.end(), [](uint32_t x) { return x == 0; });
  };
  if (all_zero(prompt_tokens) && all_zero(gen_tokens))
    return report("bench", "prompt or generated tokens must be at least 1", kExitUsage);
  if (!kv.finish(&error)) return report("bench", error, kExitUsage);
  if (!grammar.check(&error)) return report("bench", error, kExitUsage);
  if (grammar.given() && reply_file.empty())
    return report("bench", "a grammar needs a reply test (-f FILE)", kExitUsage);
  mote_backend backend = MOTE_BACKEND_CPU;
  if (!parse_backend(backend_name, gpu, &backend, &error)) return report("bench", error, kExitUsage);
  if (model_path.empty()) {
    model_path = default_model_path();
    if (access(model_path.c_str(), R_OK) != 0) {
      return report("bench",
                    "no model given (-m MODEL) and the default model " + model_path +
                        " is not installed: run models/fetch_smollm2.sh",
                    kExitError);
    }
  }

  const double open_start = now_seconds();  // model open to first token: mapping, upload, first prefill
  auto loaded = load_model(model_path, &error, load.load());
  if (!loaded) return report("bench", error, kExitError);
  mote_model_info info;
  mote_model_info_get(&loaded->model, &info);
  const uint64_t decode_bytes = decode_weight_bytes(loaded->model, info);
  std::vector<BenchResult> results;
  if (!reply_file.empty()) {
    if (!run_reply_tests(*loaded, info, reply_file, draft_list, draft_model_path, grammar, threads, gen_tokens, batch,
                         kv.dtype, reps, &results, &error))
      return report("bench", error, kExitError);
    loaded->exit_if_changed();
    print_results(output, model_path, backend, info, decode_bytes, kv.dtype, reps, results);
    return 0;
  }
  for (uint32_t t : threads) {
    for (uint32_t p : prompt_tokens) {
      for (uint32_t n : gen_tokens) {
        for (uint32_t d : depths) {
          if (p + n == 0) continue;
          if (static_cast<uint64_t>(d) + p + n > info.max_seq_len) {
            return report("bench",
                          "depth " + std::to_string(d) + " + " + std::to_string(p) + " + " + std::to_string(n) +
                              " tokens exceed the model's context of " + std::to_string(info.max_seq_len),
                          kExitUsage);
          }
          mote_session_options session_options = mote_session_options_default();
          session_options.context_length = d + p + n;
          session_options.n_threads = t;
          session_options.batch_size = batch;
          session_options.kv_dtype = kv.dtype;
          session_options.backend = backend;
          BenchResult result;
          result.threads = t;
          result.prompt_tokens = p;
          result.gen_tokens = n;
          result.depth = d;
          result.batch = batch;
          result.check = check;
          if (!measure(loaded->model, info, session_options, reps, open_start, &result, &error))
            return report("bench", error, kExitError);
          results.push_back(result);
        }
      }
    }
  }

  loaded->exit_if_changed();  // rates measured on a model written in place would mislead
  print_results(output, model_path, backend, info, decode_bytes, kv.dtype, reps, results);
  return 0;
}

}  // namespace mote::cli

// `mote bench`: prompt and decode throughput, medians over repetitions.
#include <algorithm>
#include <cstdio>

#include "cli_common.hpp"

namespace mote::cli {
namespace {

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

}  // namespace

int command_bench(int argc, char **argv) {
  std::string model_path, kv = "f32", backend_name = "cpu";
  bool gpu = false;
  uint32_t threads = 1, prompt_tokens = 128, gen_tokens = 64, reps = 3, batch = 0;
  bool json = false;
  const std::vector<Option> options = {
      {"--model", "-m", Option::kString, &model_path},
      {"--threads", "-t", Option::kU32, &threads},
      {"--prompt-tokens", "-p", Option::kU32, &prompt_tokens},
      {"--gen-tokens", "-n", Option::kU32, &gen_tokens},
      {"--reps", "-r", Option::kU32, &reps},
      {"--json", nullptr, Option::kSwitch, &json},
      {"--kv", nullptr, Option::kString, &kv},
      {"--batch", "-b", Option::kU32, &batch},
      {"--backend", nullptr, Option::kString, &backend_name},
      {"--gpu", nullptr, Option::kSwitch, &gpu},
  };
  std::vector<std::string> positional;
  std::string error;
  if (!parse_options(argc, argv, 2, options, &positional, &error)) return report("bench", error, kExitUsage);
  if (!positional.empty()) return report("bench", "unexpected argument '" + positional[0] + "'", kExitUsage);
  if (model_path.empty()) return report("bench", "no model given (-m MODEL)", kExitUsage);
  if (threads == 0 || threads > kMaxThreads || reps == 0 || prompt_tokens == 0 || gen_tokens == 0) {
    return report(
        "bench",
        "threads (at most " + std::to_string(kMaxThreads) + "), reps, prompt and generated tokens must be at least 1",
        kExitUsage);
  }
  mote_kv_dtype kv_dtype = MOTE_KV_F32;
  if (!parse_kv_dtype(kv, &kv_dtype, &error)) return report("bench", error, kExitUsage);
  mote_backend backend = MOTE_BACKEND_CPU;
  if (!parse_backend(backend_name, gpu, &backend, &error)) return report("bench", error, kExitUsage);

  const double open_start = now_seconds();  // model open to first token: mapping, upload, first prefill
  auto loaded = load_model(model_path, &error);
  if (!loaded) return report("bench", error, kExitError);
  mote_model_info info;
  mote_model_info_get(&loaded->model, &info);
  if (static_cast<uint64_t>(prompt_tokens) + gen_tokens > info.max_seq_len) {
    return report("bench",
                  std::to_string(prompt_tokens) + " + " + std::to_string(gen_tokens) +
                      " tokens exceed the model's context of " + std::to_string(info.max_seq_len),
                  kExitUsage);
  }
  mote_session_options session_options = mote_session_options_default();
  session_options.context_length = prompt_tokens + gen_tokens;
  session_options.n_threads = threads;
  session_options.batch_size = batch;
  session_options.kv_dtype = kv_dtype;
  session_options.backend = backend;
  auto holder = open_session(loaded->model, session_options, &error);
  if (!holder) return report("bench", error, kExitError);
  mote_session *session = &holder->session;

  // A fixed pseudo-random prompt that avoids BOS and EOS where the vocabulary allows.
  std::vector<int32_t> prompt(prompt_tokens);
  for (uint32_t i = 0, id = 0; i < prompt_tokens; ++i) {
    for (uint32_t tries = 0; tries < 3; ++tries) {
      id = (id + 7919u) % info.vocab_size;
      if (static_cast<int32_t>(id) != info.bos_id && static_cast<int32_t>(id) != info.eos_id) break;
    }
    prompt[i] = static_cast<int32_t>(id);
  }

  std::vector<double> prompt_rates, decode_rates;
  double first_token_s = 0.0;
  for (uint32_t r = 0; r < reps; ++r) {
    mote_session_reset(session);
    const double t0 = now_seconds();
    if (mote_prefill(session, prompt.data(), prompt.size()) != MOTE_OK)
      return report("bench", mote_session_error(session), kExitError);
    const double t1 = now_seconds();
    if (r == 0) first_token_s = t1 - open_start;
    const float *logits = mote_logits(session);
    for (uint32_t i = 0; i < gen_tokens; ++i) {
      // Greedy without the sampler, so decode time is the forward pass alone.
      const int32_t next = static_cast<int32_t>(std::max_element(logits, logits + info.vocab_size) - logits);
      if (mote_decode(session, next, &logits) != MOTE_OK)
        return report("bench", mote_session_error(session), kExitError);
    }
    const double t2 = now_seconds();
    prompt_rates.push_back(prompt_tokens / (t1 - t0));
    decode_rates.push_back(gen_tokens / (t2 - t1));
  }
  const double prompt_rate = median(prompt_rates), decode_rate = median(decode_rates);
  const double decode_gbps = decode_rate * static_cast<double>(info.weight_bytes) / 1e9;
  if (json) {
    std::printf(
        "{\"model\": \"%s\", \"backend\": \"%s\", \"isa\": \"%s\", \"threads\": %u, \"prompt_tokens\": %u, "
        "\"gen_tokens\": %u, "
        "\"reps\": %u, \"batch_size\": %u, \"prompt_tokens_per_s\": %.3f, \"decode_tokens_per_s\": %.3f, "
        "\"weight_bytes\": %llu, "
        "\"arena_bytes\": %zu, \"decode_weight_gb_per_s\": %.3f, \"open_to_first_token_s\": %.4f}\n",
        model_path.c_str(), mote_backend_name(backend), mote_isa_name(), threads, prompt_tokens, gen_tokens, reps,
        batch == 0 ? mote_session_options_default().batch_size : batch, prompt_rate, decode_rate,
        static_cast<unsigned long long>(info.weight_bytes), holder->arena_bytes, decode_gbps, first_token_s);
  } else {
    std::printf("model %s | backend %s | isa %s | threads %u | weights %.1f MB | arena %.1f MB\n", model_path.c_str(),
                mote_backend_name(backend), mote_isa_name(), threads, info.weight_bytes / 1e6,
                holder->arena_bytes / 1e6);
    std::printf("prompt  %u tokens: %.1f tok/s (median of %u)\n", prompt_tokens, prompt_rate, reps);
    std::printf("decode  %u tokens: %.1f tok/s (median of %u), %.2f GB/s of weights\n", gen_tokens, decode_rate, reps,
                decode_gbps);
    std::printf("model open to first token: %.3f s\n", first_token_s);
  }
  return 0;
}

}  // namespace mote::cli

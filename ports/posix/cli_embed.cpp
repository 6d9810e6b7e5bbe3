// `mote embed`: a text's pooled hidden states, one float per line or a JSON array.
#include <cstdio>

#include "cli_common.hpp"

namespace mote::cli {

int command_embed(int argc, char **argv) {
  std::string model_path, prompt, pool_name = "mean";
  bool normalize = false, json = false, bidirectional = false;
  uint32_t threads = 1;
  CommandHelp command{
      "embed",
      "-m MODEL -p TEXT [OPTIONS]",
      "Print TEXT's final hidden states pooled into one vector, one float per line (--json: an\n"
      "array).",
      {
          {"-m|--model", Option::kString, &model_path, "FILE", "the model"},
          {"-p|--prompt", Option::kString, &prompt, "TEXT", "the text"},
          {"--pool", Option::kString, &pool_name, "KIND", "mean, last or cls"},
          {"--normalize", Option::kSwitch, &normalize, nullptr, "L2-normalize the vector"},
          {"--json", Option::kSwitch, &json, nullptr, "print a JSON array"},
          {"--bidirectional", Option::kSwitch, &bidirectional, nullptr, "drop the causal mask (encoder mode)"},
          {"-t|--threads", Option::kU32, &threads, "N", "threads"},
      }};
  std::vector<std::string> positional;
  const int parsed = parse_command(command, argc, argv, &positional);
  if (parsed != kParsed) return parsed;
  std::string error;
  if (!positional.empty()) return report("embed", "unexpected argument '" + positional[0] + "'", kExitUsage);
  if (model_path.empty()) return report("embed", "give the model with -m MODEL", kExitUsage);
  mote_pool pool = MOTE_POOL_MEAN;
  if (pool_name == "last") {
    pool = MOTE_POOL_LAST;
  } else if (pool_name == "cls") {
    pool = MOTE_POOL_CLS;
  } else if (pool_name != "mean") {
    return report("embed", "--pool must be mean, last or cls", kExitUsage);
  }
  if (threads == 0 || threads > kMaxThreads)
    return report("embed", "-t must be 1.." + std::to_string(kMaxThreads), kExitUsage);

  auto loaded = load_model(model_path, &error);
  if (!loaded) return report("embed", error, kExitError);
  std::vector<int32_t> tokens;
  if (!tokenize(loaded->model, prompt, &tokens, &error)) return report("embed", error, kExitError);
  if (tokens.empty()) return report("embed", "the text is empty and this model has no BOS token", kExitUsage);
  if (tokens.size() > MOTE_MAX_BATCH) {
    return report("embed",
                  "the text is " + std::to_string(tokens.size()) + " tokens; one step takes at most " +
                      std::to_string(MOTE_MAX_BATCH),
                  kExitError);
  }
  // One step holds the whole text, so in bidirectional mode every token sees all the others.
  mote_session_options session_options = mote_session_options_default();
  session_options.batch_size = static_cast<uint32_t>(tokens.size());
  session_options.context_length = static_cast<uint32_t>(tokens.size());
  session_options.n_threads = threads;
  session_options.bidirectional = bidirectional ? 1 : 0;
  auto holder = open_session(loaded->model, session_options, &error);
  if (!holder) return report("embed", error, kExitError);
  mote_model_info info;
  mote_model_info_get(&loaded->model, &info);
  std::vector<float> vector(info.dim);
  if (mote_embed(&holder->session, tokens.data(), tokens.size(), pool, normalize ? 1 : 0, vector.data(),
                 vector.size()) != MOTE_OK) {
    return report("embed", mote_session_error(&holder->session), kExitError);
  }
  loaded->exit_if_changed();  // never print a vector computed from weights written in place
  if (json) std::fputc('[', stdout);
  for (size_t i = 0; i < vector.size(); ++i) {
    if (json) {
      std::printf("%s%.9g", i == 0 ? "" : ", ", static_cast<double>(vector[i]));
    } else {
      std::printf("%.9g\n", static_cast<double>(vector[i]));
    }
  }
  if (json) std::printf("]\n");
  return 0;
}

}  // namespace mote::cli

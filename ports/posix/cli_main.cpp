// `mote`: run, chat, inspect, convert and benchmark models from the command line.
#include <cstdio>
#include <cstring>

#include "cli_options.hpp"
#include "commands/commands.hpp"
#include "mote_version.h"

namespace {

struct Command {
  const char *name;
  int (*run)(int argc, char **argv);
  const char *summary;
};

// Dispatch, `mote help` and `mote help COMMAND` all read this table.
const Command kCommands[] = {
    {"run", mote::cli::command_run, "print a prompt and the text the model continues it with"},
    {"chat", mote::cli::command_chat, "talk with an instruct model, one message per line"},
    {"bench", mote::cli::command_bench, "measure prompt and decode tokens per second"},
    {"inspect", mote::cli::command_inspect, "print a model's config, tensor table and arena size"},
    {"convert", mote::cli::command_convert, "convert a GGUF, Hugging Face or llama2.c model into a .mote file"},
    {"perplexity", mote::cli::command_perplexity,
     "the perplexity of a text file (llama.cpp's windows); KL divergence against a base's logits"},
    {"embed", mote::cli::command_embed, "a text's pooled hidden states"},
};

const Command *find_command(const char *name) {
  for (const Command &c : kCommands) {
    if (std::strcmp(c.name, name) == 0) return &c;
  }
  return nullptr;
}

void print_usage(FILE *out) {
  std::fputs("usage: mote COMMAND [OPTIONS]\n\ncommands:\n", out);
  for (const Command &c : kCommands) std::fprintf(out, "  %-11s %s\n", c.name, c.summary);
  std::fputs(
      "  help       print this list, or 'mote help COMMAND': that command's options and defaults\n"
      "  version    print the version and how this build was made (also --version)\n"
      "\n"
      "Without -m, run, chat and bench use SmolLM2-135M-Instruct from ~/.cache/mote (models/fetch_smollm2.sh).\n"
      "A GGUF model or Hugging Face folder is converted once into ~/.cache/mote and reused.\n"
      "'mote COMMAND --help' lists its options.\n",
      out);
}

int print_version() {
  std::printf("mote %s (%s, %s build)\nkernels: %s (chosen for this CPU at run time)\nopenmp: %s\n", MOTE_VERSION,
              MOTE_GIT_DESCRIBE, MOTE_BUILD_TYPE, mote_isa_name(), mote_openmp_enabled() ? "on" : "off");
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    print_usage(stderr);
    return mote::cli::kExitUsage;
  }
  const char *name = argv[1];
  if (std::strcmp(name, "-h") == 0 || std::strcmp(name, "--help") == 0 ||
      (std::strcmp(name, "help") == 0 && argc == 2)) {
    print_usage(stdout);
    return 0;
  }
  if (std::strcmp(name, "--version") == 0 || std::strcmp(name, "version") == 0) return print_version();
  if (std::strcmp(name, "help") == 0) {  // mote help COMMAND: the command's own --help
    const Command *command = find_command(argv[2]);
    if (command == nullptr) {
      std::fprintf(stderr, "mote: unknown command '%s' (try 'mote help')\n", argv[2]);
      return mote::cli::kExitUsage;
    }
    char help[] = "--help";
    char *help_argv[] = {argv[0], argv[2], help, nullptr};
    return command->run(3, help_argv);
  }
  const Command *command = find_command(name);
  if (command == nullptr) {
    std::fprintf(stderr, "mote: unknown command '%s' (try 'mote help')\n", name);
    return mote::cli::kExitUsage;
  }
  return command->run(argc, argv);
}

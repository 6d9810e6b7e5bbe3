// The `mote` tool's commands, one file each in this folder; cli_main.cpp dispatches to them.
#pragma once

#include <string>

namespace mote::cli {

// The subcommands; argv[1] is the command name.
int command_run(int argc, char **argv);
int command_inspect(int argc, char **argv);
int command_convert(int argc, char **argv);
int command_bench(int argc, char **argv);
int command_chat(int argc, char **argv);
int command_perplexity(int argc, char **argv);
int command_embed(int argc, char **argv);

// One chat turn for `mote run --chat`: the reply alone goes to stdout.
struct GenerationSettings;
struct PromptCache;
int run_chat_turn(GenerationSettings &settings, const PromptCache &cache, const std::string &system,
                  const std::string &prompt);

}  // namespace mote::cli

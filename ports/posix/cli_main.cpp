// `mote`: run, inspect, convert and benchmark models from the command line.
#include <cstdio>
#include <cstring>

#include "cli_common.hpp"

namespace {

const char kUsage[] =
    "usage: mote COMMAND [OPTIONS]\n"
    "\n"
    "Without -m, run and chat use SmolLM2-135M-Instruct from ~/.cache/mote (models/fetch_smollm2.sh).\n"
    "\n"
    "commands:\n"
    "  run      [-m MODEL] -p PROMPT [--chat [--system TEXT]] [-n N] [--temp T] [--top-k K] [--top-p P]\n"
    "           [--min-p P] [--repeat-penalty R] [--seed S] [-t THREADS] [--ctx N] [--kv f32|f16|q8_0] [-b BATCH]\n"
    "           print the prompt and N generated tokens (stats on stderr; -t defaults to all cores);\n"
    "           --chat: send PROMPT as a user message through the chat template, print the reply only\n"
    "  chat     [-m MODEL] [--system TEXT] [same options as run]\n"
    "           talk with an instruct model, one message per line; Ctrl-D ends (temp 0.2, top-p 0.9)\n"
    "  inspect  MODEL [--ctx N] [--check]   print the config, the tensor table and the arena size;\n"
    "           --check: also scan every weight for NaN or inf (exit 1 naming the first)\n"
    "           --arena-bytes [--ctx N] [-b BATCH] [--kv f32|f16|q8_0]: print only the session's arena bytes\n"
    "  convert  INPUT -o OUTPUT [--dtype f32|f16|q8_0|q4_0|q4_1] [--layout interleaved|gguf] [--tokenizer FILE]\n"
    "           [--rope interleaved|split]\n"
    "           convert a GGUF file, a Hugging Face checkpoint folder (safetensors) or a llama2.c\n"
    "           checkpoint (with --tokenizer) into a .mote file; quantized matrices of 8k rows are stored\n"
    "           8 rows interleaved (q4_1x8, ...) unless --layout gguf keeps GGUF's block order\n"
    "  bench    -m MODEL [-t N] [-p PROMPT_TOKENS] [-n GEN_TOKENS] [-r REPS] [-b BATCH] [--kv f32|f16|q8_0] [--json]\n"
    "           measure prompt and decode tokens per second (medians)\n"
    "  perplexity -m MODEL -f TEXT [--ctx N] [-t THREADS] [-b BATCH] [--kv f32|f16|q8_0] [--chunks K]\n"
    "           perplexity of TEXT in windows of N tokens (default: the model's context, at most 512),\n"
    "           scoring the second half of each as llama.cpp does; running values on stderr\n"
    "  embed    -m MODEL -p TEXT [--pool mean|last|cls] [--normalize] [--bidirectional] [--json] [-t THREADS]\n"
    "           print TEXT's final hidden states pooled into one vector, one float per line (--json: an\n"
    "           array); --bidirectional drops the causal mask (encoder mode)\n"
    "\n"
    "run, chat, bench and inspect take --backend cpu|cuda (--gpu: cuda): cuda needs a -DMOTE_CUDA=ON build and\n"
    "an NVIDIA GPU (inspect then prints the device memory a session takes).\n";

}  // namespace

int main(int argc, char **argv) {
  if (argc < 2 || std::strcmp(argv[1], "-h") == 0 || std::strcmp(argv[1], "--help") == 0) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? mote::cli::kExitUsage : 0;
  }
  const char *command = argv[1];
  if (std::strcmp(command, "run") == 0) return mote::cli::command_run(argc, argv);
  if (std::strcmp(command, "inspect") == 0) return mote::cli::command_inspect(argc, argv);
  if (std::strcmp(command, "convert") == 0) return mote::cli::command_convert(argc, argv);
  if (std::strcmp(command, "bench") == 0) return mote::cli::command_bench(argc, argv);
  if (std::strcmp(command, "chat") == 0) return mote::cli::command_chat(argc, argv);
  if (std::strcmp(command, "perplexity") == 0) return mote::cli::command_perplexity(argc, argv);
  if (std::strcmp(command, "embed") == 0) return mote::cli::command_embed(argc, argv);
  std::fprintf(stderr, "mote: unknown command '%s' (try 'mote --help')\n", command);
  return mote::cli::kExitUsage;
}

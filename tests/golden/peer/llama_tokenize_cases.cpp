// Prints llama.cpp's token ids for each case of a file (cases separated by "\n__case__\n"): the peer
// behind gen_gemma_tokenizer_golden.py. Usage: llama_tokenize_cases VOCAB.gguf CASES ADD_SPECIAL(0/1)
// PARSE_SPECIAL(0/1)
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "llama.h"
int main(int argc, char **argv) {
  llama_backend_init();
  auto p = llama_model_default_params();
  p.vocab_only = true;
  llama_model *m = llama_model_load_from_file(argv[1], p);
  const llama_vocab *v = llama_model_get_vocab(m);
  const bool add_special = argv[3][0] == '1', parse_special = argv[4][0] == '1';
  std::ifstream f(argv[2], std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string raw = ss.str(), sep = "\n__case__\n";
  size_t pos = 0;
  while (pos <= raw.size()) {
    size_t next = raw.find(sep, pos);
    std::string s = raw.substr(pos, next == std::string::npos ? std::string::npos : next - pos);
    std::vector<llama_token> t(s.size() + 16);
    int n = llama_tokenize(v, s.data(), s.size(), t.data(), t.size(), add_special, parse_special);
    for (int i = 0; i < n; ++i) printf("%s%d", i ? "," : "", t[i]);
    printf("\n");
    if (next == std::string::npos) break;
    pos = next + sep.size();
  }
}

// --grammar, --grammar-file, --json-schema and --json (cli_grammar.cpp).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "cli_options.hpp"
#include "mote/mote.h"

namespace mote::cli {

struct GrammarOptions {
  std::string gbnf, file, schema;
  bool json = false;

  bool given() const;
  void add_options(std::vector<Option> *options);
  bool check(std::string *error) const;  // at most one of them
};

// A compiled grammar and the arena it lives in.
struct GrammarHolder {
  mote_grammar grammar{};
  std::unique_ptr<uint8_t, void (*)(void *)> arena{nullptr, std::free};
};

// Compiles the grammar the options name for model's vocabulary; false with a one-line reason.
bool compile_grammar(const GrammarOptions &options, const mote_model &model, std::shared_ptr<GrammarHolder> *out,
                     std::string *error);

}  // namespace mote::cli

// --grammar, --grammar-file, --json-schema and --json: the grammar that constrains generation,
// compiled through mote.h into an arena of its own.
#include "cli_grammar.hpp"

#include <cstdlib>
#include <cstring>

#include "io/file_map.hpp"

namespace mote::cli {
namespace {

constexpr uint64_t kMaxGrammarFileBytes = 16ull << 20;  // the grammar's own bounds refuse far less

bool read_text_file(const std::string &path, std::string *text, std::string *error) {
  std::vector<uint8_t> bytes;
  if (!posix::read_small_file(path, kMaxGrammarFileBytes, &bytes, error)) return false;
  text->assign(bytes.begin(), bytes.end());
  return true;
}

bool schema_to_grammar(const std::string &schema, std::string *grammar, std::string *error) {
  char message[256] = "";
  size_t needed = 0;
  mote_status status =
      mote_grammar_from_json_schema(schema.data(), schema.size(), nullptr, 0, &needed, message, sizeof message);
  if (status == MOTE_ERR_BUFFER_TOO_SMALL) {
    std::vector<char> text(needed + 1);
    status = mote_grammar_from_json_schema(schema.data(), schema.size(), text.data(), text.size(), &needed, message,
                                           sizeof message);
    grammar->assign(text.data(), needed);
  }
  if (status != MOTE_OK) *error = message;
  return status == MOTE_OK;
}

// The GBNF text the options ask for.
bool grammar_text(const GrammarOptions &options, std::string *text, std::string *error) {
  if (options.json) return schema_to_grammar("{}", text, error);
  if (!options.gbnf.empty()) {
    *text = options.gbnf;
    return true;
  }
  if (!options.file.empty()) return read_text_file(options.file, text, error);
  std::string schema = options.schema;
  const size_t first = schema.find_first_not_of(" \t\r\n");
  if (first == std::string::npos || schema[first] != '{') {  // not inline JSON: a file name
    if (!read_text_file(options.schema, &schema, error)) return false;
  }
  return schema_to_grammar(schema, text, error);
}

}  // namespace

bool GrammarOptions::given() const { return !gbnf.empty() || !file.empty() || !schema.empty() || json; }

void GrammarOptions::add_options(std::vector<Option> *options) {
  const std::vector<Option> mine = {
      {"--grammar", Option::kString, &gbnf, "GBNF", "constrain the output to a GBNF grammar (llama.cpp's format)"},
      {"--grammar-file", Option::kString, &file, "FILE", "constrain the output to the GBNF grammar in FILE"},
      {"--json-schema|-j", Option::kString, &schema, "SCHEMA",
       "constrain the output to JSON valid for a JSON schema (inline, or a FILE)"},
      {"--json", Option::kSwitch, &json, nullptr, "constrain the output to one JSON value"},
  };
  options->insert(options->end(), mine.begin(), mine.end());
}

bool GrammarOptions::check(std::string *error) const {
  const int given = !gbnf.empty() + !file.empty() + !schema.empty() + json;
  if (given > 1) *error = "give one of --grammar, --grammar-file, --json-schema and --json";
  return given <= 1;
}

bool compile_grammar(const GrammarOptions &options, const mote_model &model, std::shared_ptr<GrammarHolder> *out,
                     std::string *error) {
  std::string text;
  if (!grammar_text(options, &text, error)) return false;
  char message[256] = "";
  size_t bytes = 0;
  if (mote_grammar_arena_size(text.data(), text.size(), &bytes, message, sizeof message) != MOTE_OK) {
    *error = message;
    return false;
  }
  auto holder = std::make_shared<GrammarHolder>();
  holder->arena.reset(static_cast<uint8_t *>(std::aligned_alloc(MOTE_ARENA_ALIGNMENT, (bytes + 63) / 64 * 64)));
  if (!holder->arena) {
    *error = "cannot allocate the grammar's " + std::to_string(bytes) + " bytes";
    return false;
  }
  if (mote_grammar_init(&holder->grammar, &model, text.data(), text.size(), holder->arena.get(), bytes, message,
                        sizeof message) != MOTE_OK) {
    *error = message;
    return false;
  }
  *out = std::move(holder);
  return true;
}

}  // namespace mote::cli

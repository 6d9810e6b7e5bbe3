#include "cli_input.hpp"

#include <cerrno>
#include <cstring>
#include <vector>

#include "io/file_map.hpp"

namespace mote::cli {

std::string mib_text(uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

ReadResult read_capped(FILE *stream, int delimiter, size_t max_bytes, std::string *text) {
  text->clear();
  for (int c; (c = getc_unlocked(stream)) != EOF;) {
    if (c == delimiter) return ReadResult::kRead;
    if (text->size() == max_bytes) return ReadResult::kTooLong;
    text->push_back(static_cast<char>(c));
  }
  return text->empty() ? ReadResult::kEnd : ReadResult::kRead;
}

bool read_prompt_file(const std::string &path, std::string *text, std::string *error) {
  if (path == "-") {
    if (read_capped(stdin, EOF, kMaxPromptBytes, text) == ReadResult::kTooLong) {
      *error = "standard input holds more than the " + mib_text(kMaxPromptBytes) + " a prompt may hold";
      return false;
    }
    if (std::ferror(stdin)) {
      *error = std::string("cannot read standard input: ") + std::strerror(errno);
      return false;
    }
    return true;
  }
  std::vector<uint8_t> bytes;
  if (!posix::read_small_file(path, kMaxPromptBytes, &bytes, error)) return false;
  text->assign(bytes.begin(), bytes.end());
  return true;
}

}  // namespace mote::cli

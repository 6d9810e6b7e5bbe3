// Helpers shared by the tests: locating test data and the real models in ../shared/models.
#pragma once

#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace mote_test {

inline std::string golden_path(const std::string &name) {
  return std::string(MOTE_TEST_DATA_DIR) + "/" + name;
}

inline bool file_exists(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  return f.good();
}

inline std::vector<unsigned char> read_file(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<unsigned char>(std::istreambuf_iterator<char>(f), {});
}

// Path of a real model in ../shared/models, or "" when the folder is absent (a user's fresh
// clone): the caller then skips, saying so. With MOTE_REQUIRE_SHARED_MODELS=1 (set by .ci/run)
// absence is a failure, so nothing skips silently in CI.
inline std::string shared_model(const std::string &name) {
  const std::string path = std::string(MOTE_SHARED_MODELS_DIR) + "/" + name;
  if (file_exists(path)) return path;
  const char *require = std::getenv("MOTE_REQUIRE_SHARED_MODELS");
  if (require != nullptr && std::string(require) == "1") {
    FAIL("required test model missing: " << path);
  }
  MESSAGE("SKIPPED: " << path << " is absent (set MOTE_SHARED_MODELS_DIR at configure time)");
  return "";
}

}  // namespace mote_test

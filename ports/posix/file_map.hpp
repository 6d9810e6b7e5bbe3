// Read-only memory mapping of a model file: the runtime uses the mapping in place (zero-copy).
#pragma once

#include <cstddef>
#include <string>

namespace mote::posix {

class FileMap {
 public:
  FileMap() = default;
  FileMap(const FileMap &) = delete;
  FileMap &operator=(const FileMap &) = delete;
  ~FileMap();

  // Maps path read-only; on failure returns false with a one-line reason in *error.
  bool open(const std::string &path, std::string *error);
  const void *data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void *data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace mote::posix

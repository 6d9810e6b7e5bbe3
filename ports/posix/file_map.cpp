#include "file_map.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace mote::posix {

FileMap::~FileMap() {
  if (data_ != nullptr) munmap(data_, size_);
}

bool FileMap::open(const std::string &path, std::string *error) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) {
    *error = "cannot open '" + path + "': " + std::strerror(errno);
    return false;
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    *error = "'" + path + "' is not a regular file";
    ::close(fd);
    return false;
  }
  if (st.st_size == 0) {
    *error = "'" + path + "' is empty";
    ::close(fd);
    return false;
  }
  void *data = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);  // the mapping keeps the file alive
  if (data == MAP_FAILED) {
    *error = "cannot map '" + path + "': " + std::strerror(errno);
    return false;
  }
  data_ = data;
  size_ = static_cast<size_t>(st.st_size);
  return true;
}

}  // namespace mote::posix

#include "io/file_map.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace mote::posix {
namespace {

// The mappings exit_on_truncation guards, read by the SIGBUS handler (async-signal-safe: plain
// loads of lock-free atomics, write(2) and _exit).
struct GuardedRange {
  std::atomic<uintptr_t> begin{0}, end{0};
  char message[512] = "";
  size_t message_n = 0;
};
constexpr int kMaxGuarded = 8;
GuardedRange g_guarded[kMaxGuarded];
// int, not bool: a word-sized exchange is lock-free without libatomic on every target (riscv64 has
// no byte-sized atomic exchange and would need it).
std::atomic<int> g_handler_installed{0};

void on_sigbus(int signal, siginfo_t *info, void *) {
  const uintptr_t address = reinterpret_cast<uintptr_t>(info->si_addr);
  for (GuardedRange &range : g_guarded) {
    if (address >= range.begin.load() && address < range.end.load()) {
      ssize_t ignored = write(2, range.message, range.message_n);
      (void)ignored;
      _exit(1);
    }
  }
  // Not ours: the default action (the fault repeats on return and kills the process).
  struct sigaction fallback {};
  fallback.sa_handler = SIG_DFL;
  sigemptyset(&fallback.sa_mask);
  sigaction(signal, &fallback, nullptr);
}

std::string kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  return "not a plain file";
}

// path with its symlinks followed to the name the data lives at (which may not exist yet: a
// dangling link); false on a loop or an unreadable link. A relative link target is relative to
// the folder holding the link, as the kernel resolves it.
bool follow_links(const std::string &path, std::string *final, std::string *error) {
  constexpr int kMaxHops = 40;  // Linux's own limit (ELOOP)
  std::string at = path;
  for (int hop = 0; hop <= kMaxHops; ++hop) {
    struct stat st {};
    if (lstat(at.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) {
      *final = at;
      return true;
    }
    std::string target(4096, '\0');
    const ssize_t n = readlink(at.c_str(), target.data(), target.size());
    if (n <= 0 || static_cast<size_t>(n) >= target.size()) {
      *error = "cannot read the symlink '" + at + "': " + (n < 0 ? std::strerror(errno) : "target too long");
      return false;
    }
    target.resize(static_cast<size_t>(n));
    const size_t slash = at.rfind('/');
    at = target[0] == '/' || slash == std::string::npos ? target : at.substr(0, slash + 1) + target;
  }
  *error = "'" + path + "' is a loop of symlinks (more than 40 hops): not writing it";
  return false;
}

int64_t nanoseconds(const timespec &t) { return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec; }

}  // namespace

int open_regular_file(const std::string &path, uint64_t *size, std::string *error) {
  // O_NONBLOCK: opening a FIFO with no writer (or a device) returns at once instead of waiting.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    *error = "cannot open '" + path + "': " + std::strerror(errno);
    return -1;
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    *error = "'" + path + "' is not a regular file (it is " + kind_of(st.st_mode) + ")";
    ::close(fd);
    return -1;
  }
  *size = static_cast<uint64_t>(st.st_size);
  return fd;
}

bool read_exactly(int fd, void *out, size_t n) {
  uint8_t *bytes = static_cast<uint8_t *>(out);
  size_t done = 0;
  while (done < n) {
    const ssize_t got = ::read(fd, bytes + done, n - done);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;  // an error, or the file shrank while being read
    done += static_cast<size_t>(got);
  }
  return true;
}

bool read_small_file(const std::string &path, uint64_t max_bytes, std::vector<uint8_t> *bytes, std::string *error) {
  uint64_t size = 0;
  const int fd = open_regular_file(path, &size, error);
  if (fd < 0) return false;
  if (size > max_bytes) {
    *error = "'" + path + "' is " + std::to_string(size) + " bytes; files of its kind may hold at most " +
             std::to_string(max_bytes);
    ::close(fd);
    return false;
  }
  bytes->resize(static_cast<size_t>(size));
  const bool read = read_exactly(fd, bytes->data(), bytes->size());
  ::close(fd);
  if (!read) {
    *error = "cannot read '" + path + "' (it changed while being read?)";
    return false;
  }
  return true;
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!temporary_.empty()) ::unlink(temporary_.c_str());
}

bool AtomicFileWriter::open(const std::string &requested, std::string *error, mode_t new_file_mode) {
  requested_ = requested;
  // Through a symlink to its target: renaming over the link itself would turn it into a regular
  // file and leave the target (which the user meant) untouched.
  if (!follow_links(requested, &path_, error)) return false;
  struct stat st {};
  const bool replacing = stat(path_.c_str(), &st) == 0;
  if (replacing && !S_ISREG(st.st_mode)) {
    *error = "'" + path_ + "' exists and is not a regular file (it is " + kind_of(st.st_mode) + "): not replacing it";
    return false;
  }
  std::string temporary = path_ + ".XXXXXX";
  fd_ = mkstemp(temporary.data());
  if (fd_ < 0) {
    *error = "cannot create a temporary file next to '" + path_ + "': " + std::strerror(errno) + via_link();
    return false;
  }
  temporary_ = temporary;
  // Not mkstemp's 0600 for everything (every model would be private), nor the umask's mode for a
  // file someone made private: the replaced file's permissions, else the caller's less the umask.
  const mode_t mask = umask(0);
  umask(mask);
  if (fchmod(fd_, replacing ? st.st_mode & 0777 : new_file_mode & ~mask) != 0) return fail(errno, error);
  return true;
}

bool AtomicFileWriter::write(const void *data, size_t n, std::string *error) {
  const uint8_t *bytes = static_cast<const uint8_t *>(data);
  for (size_t done = 0; done < n;) {
    const ssize_t written = ::write(fd_, bytes + done, n - done);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return fail(written < 0 ? errno : ENOSPC, error);
    done += static_cast<size_t>(written);
  }
  return true;
}

bool AtomicFileWriter::commit(std::string *error) {
  if (fsync(fd_) != 0) return fail(errno, error);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0 || std::rename(temporary_.c_str(), path_.c_str()) != 0) return fail(errno, error);
  temporary_.clear();
  return true;
}

bool AtomicFileWriter::fail(int code, std::string *error) {
  *error = "cannot write '" + path_ + "': " + std::strerror(code) + via_link();
  return false;
}

std::string AtomicFileWriter::via_link() const {
  return path_ != requested_ ? " (the target of the symlink '" + requested_ + "')" : "";
}

bool write_file_atomically(const std::string &path, const void *data, size_t n, std::string *error,
                           mode_t new_file_mode) {
  AtomicFileWriter file;
  return file.open(path, error, new_file_mode) && file.write(data, n, error) && file.commit(error);
}

FileMap::~FileMap() {
  if (guard_slot_ >= 0) {
    g_guarded[guard_slot_].end.store(0);
    g_guarded[guard_slot_].begin.store(0);
  }
  if (data_ != nullptr) munmap(data_, mapped_);
  if (fd_ >= 0) ::close(fd_);
}

namespace {

constexpr size_t kHugePage = size_t{2} << 20;

// The size bytes of fd (at offset 0) read into anonymous memory at a 2 MiB boundary, advised into
// huge pages and then made read-only; its mapping's length in *mapped. Null with errno on failure.
void *read_into_huge_pages(int fd, size_t size, size_t *mapped) {
  const size_t rounded = (size + kHugePage - 1) / kHugePage * kHugePage;
  if (rounded < size || rounded > SIZE_MAX - kHugePage) {
    errno = ENOMEM;
    return nullptr;
  }
  void *raw = mmap(nullptr, rounded + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  // Keep the 2 MiB-aligned part: the pages before and after it go back.
  const uintptr_t begin = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t start = (begin + kHugePage - 1) / kHugePage * kHugePage;
  if (start > begin) munmap(raw, start - begin);
  if (begin + kHugePage > start) munmap(reinterpret_cast<void *>(start + rounded), begin + kHugePage - start);
  void *data = reinterpret_cast<void *>(start);
  madvise(data, rounded, MADV_HUGEPAGE);  // refused without THP: small pages then, still a copy
  if (!read_exactly(fd, data, size) || mprotect(data, rounded, PROT_READ) != 0) {
    const int code = errno != 0 ? errno : EIO;
    munmap(data, rounded);
    errno = code;
    return nullptr;
  }
  // The copy is the one this process reads: the page cache's may go (a device with little RAM
  // would otherwise hold the model twice; advice only, for pages nobody else holds).
  posix_fadvise(fd, 0, static_cast<off_t>(size), POSIX_FADV_DONTNEED);
  *mapped = rounded;
  return data;
}

}  // namespace

bool FileMap::open(const std::string &path, std::string *error, Load load) {
  uint64_t size = 0;
  const int fd = open_regular_file(path, &size, error);
  if (fd < 0) return false;
  if (size == 0) {
    *error = "'" + path + "' is empty";
    ::close(fd);
    return false;
  }
  if (size > SIZE_MAX) {
    *error = "'" + path + "' is too large to map in this address space";
    ::close(fd);
    return false;
  }
  // The identity first, before a byte is mapped or read: a write from here on moves ctime.
  struct stat st {};
  fstat(fd, &st);
  // MAP_PRIVATE only keeps this process's own writes private; others' writes show through in
  // pages this process never wrote (see change()).
  size_t mapped = static_cast<size_t>(size);
  void *data = nullptr;
  if (load == Load::kCopy) {
    errno = 0;
    data = read_into_huge_pages(fd, static_cast<size_t>(size), &mapped);
    if (data == nullptr) {
      *error = "cannot read '" + path + "' into memory: " + std::strerror(errno != 0 ? errno : EIO);
      ::close(fd);
      return false;
    }
  } else {
    data = mmap(nullptr, static_cast<size_t>(size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (data == MAP_FAILED) {
      *error = "cannot map '" + path + "': " + std::strerror(errno);
      ::close(fd);
      return false;
    }
  }
  data_ = data;
  size_ = static_cast<size_t>(size);
  mapped_ = mapped;
  fd_ = fd;  // kept for change(): one fstat, no path lookup
  mtime_ns_ = nanoseconds(st.st_mtim);
  ctime_ns_ = nanoseconds(st.st_ctim);
  return true;
}

FileMap::Change FileMap::change() const {
  if (fd_ < 0) return Change::kNone;  // nothing mapped
  struct stat st {};
  if (fstat(fd_, &st) != 0) return Change::kContent;
  if (static_cast<uint64_t>(st.st_size) != size_ || nanoseconds(st.st_mtim) != mtime_ns_) return Change::kContent;
  return nanoseconds(st.st_ctim) != ctime_ns_ ? Change::kMetadata : Change::kNone;
}

void FileMap::accept_current() {
  struct stat st {};
  if (fd_ < 0 || fstat(fd_, &st) != 0) return;
  mtime_ns_ = nanoseconds(st.st_mtim);
  ctime_ns_ = nanoseconds(st.st_ctim);
}

bool FileMap::exit_on_truncation(const std::string &message) {
  if (data_ == nullptr || guard_slot_ >= 0) return guard_slot_ >= 0;
  for (int i = 0; i < kMaxGuarded; ++i) {
    GuardedRange &range = g_guarded[i];
    if (range.end.load() != 0) continue;
    const std::string line = message + "\n";
    range.message_n = std::min(line.size(), sizeof range.message);
    std::memcpy(range.message, line.data(), range.message_n);
    range.begin.store(reinterpret_cast<uintptr_t>(data_));
    range.end.store(reinterpret_cast<uintptr_t>(data_) + size_);
    guard_slot_ = i;
    if (g_handler_installed.exchange(1) == 0) {
      struct sigaction action {};
      action.sa_sigaction = on_sigbus;
      action.sa_flags = SA_SIGINFO;
      sigemptyset(&action.sa_mask);
      sigaction(SIGBUS, &action, nullptr);
    }
    return true;
  }
  return false;
}

}  // namespace mote::posix

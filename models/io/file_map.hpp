// Opening input files without trusting them: a path may name a FIFO, a socket, a device or a
// directory, a file may be sparse and huge, and a mapped file may be truncated while in use.
//
// Every file is opened with O_NONBLOCK and checked with fstat before anything is read, so a FIFO
// or a device is "not a regular file" at once instead of a read that never returns. Binary
// inputs (models, checkpoints, safetensors shards) are mapped, never read whole: only the pages
// a parser touches are loaded. Text inputs are read whole only under a stated size cap.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace mote::posix {

class FileMap {
 public:
  FileMap() = default;
  FileMap(const FileMap &) = delete;
  FileMap &operator=(const FileMap &) = delete;
  ~FileMap();

  // How open() gives the file's bytes. kMap: mapped read-only (MAP_PRIVATE), pages loaded as
  // they are touched and shared with the page cache. kCopy: read whole into anonymous memory
  // aligned to 2 MiB and advised into transparent huge pages (where the kernel gives them): a
  // copy, but a decode that streams every weight then walks one page table entry per 2 MiB, not
  // per 4 KiB (the CLI's --no-mmap).
  enum class Load { kMap, kCopy };
  // Opens path read-only as load says; on failure returns false with a one-line reason in *error.
  // The descriptor stays open and the file's identity is taken with fstat before a byte is
  // mapped or read, so a write that lands while a loader reads the bytes is seen by change().
  bool open(const std::string &path, std::string *error, Load load = Load::kMap);
  const void *data() const { return data_; }
  const uint8_t *bytes() const { return static_cast<const uint8_t *>(data_); }
  size_t size() const { return size_; }

  // A file truncated while mapped makes the next read of a page past its new end raise SIGBUS.
  // After this call such a fault inside this mapping prints "message" (one line, on stderr) and
  // exits with status 1 instead of dying with "Bus error"; a fault anywhere else keeps its
  // default action. Process-wide (a signal handler), so for programs that own the process, like
  // the CLI; at most 8 mappings are guarded at once (false when full).
  bool exit_on_truncation(const std::string &message);

  // What happened to the mapped file since open() (or the last accept_current()), by one fstat
  // (0.6 µs) on the descriptor kept open:
  //   kContent:  its size or mtime moved (written in place, truncated, extended);
  //   kMetadata: only its ctime moved: a chmod, a rename, a link or an unlink (a rename over the
  //              path unlinks this file: the mapping keeps its bytes), or a write whose mtime was
  //              set back (rsync --inplace -a, touch -r): the caller must check the bytes.
  // MAP_PRIVATE does not protect the mapping: on Linux a page this process never wrote is the
  // page cache's page, so another process's write() shows through. A write moves mtime and
  // ctime before its data lands (file_modified() precedes the copy), so a byte that changed
  // under the mapping implies a moved ctime by the time change() runs. What it cannot see: a
  // write within the same timestamp tick as the file's change just before open(), on a kernel or
  // file system without fine-grained ("multigrain", Linux 6.13+ ext4/xfs/btrfs/tmpfs)
  // timestamps; stores through another process's shared writable mapping into a page already
  // dirty (timestamps move on the first store to a clean page only); writes to the block device
  // beneath the file system.
  enum class Change { kNone, kMetadata, kContent };
  Change change() const;
  // The file's present times become the baseline (after the caller found the bytes intact).
  void accept_current();

 private:
  void *data_ = nullptr;
  size_t size_ = 0, mapped_ = 0;  // mapped_: the mapping's length (a copy's is whole 2 MiB pages)
  int fd_ = -1;
  int64_t mtime_ns_ = 0, ctime_ns_ = 0;
  int guard_slot_ = -1;
};

// Opens path read-only without blocking and checks it is a regular file; returns the descriptor
// (its size in *size), or -1 with a one-line reason in *error.
int open_regular_file(const std::string &path, uint64_t *size, std::string *error);

// Reads n bytes from fd's offset into out; false on an error or an end before n.
bool read_exactly(int fd, void *out, size_t n);

// Reads a whole text file (a JSON config, a prompt) of at most max_bytes; a larger file is an
// error that names both sizes, before anything is read.
bool read_small_file(const std::string &path, uint64_t max_bytes, std::vector<uint8_t> *bytes, std::string *error);

// New files that hold a conversation (session states, transcripts): the owner's alone.
constexpr mode_t kPrivateFileMode = 0600;

// Writes n bytes to path as a regular file, atomically: into a new temporary file in the same
// folder, fsynced, then renamed over path. An existing path that is not a regular file (a
// directory, FIFO, device, or a symlink to one) is an error; any failure leaves path untouched.
// A symlink is written through, as `>` in a shell does: the link (or chain of links, at most
// 40) is followed to its final target, which is replaced atomically by a temporary file in the
// target's folder, and the links stay links. A dangling link creates its target (its folder
// must exist). A loop of links is an error naming the path. A replaced file keeps its permission
// bits (a private file stays private); a new one gets new_file_mode less the umask (0600 for
// what holds a conversation).
bool write_file_atomically(const std::string &path, const void *data, size_t n, std::string *error,
                           mode_t new_file_mode = 0666);

// A file written in pieces (too large to hold in memory) and put in place as write_file_atomically
// does, by commit(); destroyed before commit, it removes its temporary file and path is untouched.
class AtomicFileWriter {
 public:
  AtomicFileWriter() = default;
  AtomicFileWriter(const AtomicFileWriter &) = delete;
  AtomicFileWriter &operator=(const AtomicFileWriter &) = delete;
  ~AtomicFileWriter();

  bool open(const std::string &path, std::string *error, mode_t new_file_mode = 0666);
  bool write(const void *data, size_t n, std::string *error);
  bool commit(std::string *error);

 private:
  bool fail(int code, std::string *error);
  std::string via_link() const;
  std::string requested_, path_, temporary_;
  int fd_ = -1;
};

}  // namespace mote::posix

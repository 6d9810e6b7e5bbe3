// GGUF files and Hugging Face folders run directly: the CLI converts one once into the cache and
// opens the .mote; files in other formats mote converts from get a message naming `mote convert`.
//
// A GGUF's entry is STEM-PATHKEY-CONTENTKEY-TOOLKEY.mote in cache_dir(): PATHKEY hashes the GGUF's
// canonical path (so "m.gguf", "./m.gguf" and "/abs/m.gguf" share one entry, and two models with
// one file name do not evict each other), CONTENTKEY hashes the GGUF's whole content, TOOLKEY
// this build's version and git describe (a newer mote converts again: its converter may write
// what an older one did not, such as a chat template it has learned to recognize). Beside it,
// STEM-PATHKEY.source, one line of text written atomically after the entry, records:
//   - the GGUF's identity when it was last hashed: st_dev, st_ino, size, mtime and ctime, and the
//     time of that fstat; the content hash; and
//   - the entry's own identity: its size and the payload checksum in its header.
// A run hashes the GGUF again only when its identity differs from the record: cp -p, rsync -a,
// tar x and touch -r restore mtime but not ctime (nobody sets ctime but the kernel) and most
// also give a new inode. A record taken less than kRacySeconds after the GGUF's last change is
// not trusted ("racily clean", as git's index): a write within one timestamp tick of that change
// would keep ctime, so the next run hashes again (and, once the file is older, records it).
// The entry is used only when its size and header checksum are the recorded ones, so a truncated
// entry or another valid .mote copied over it is converted again, with a line naming the cache
// file; an entry whose header is intact but whose bytes are damaged fails the loader's checksum
// and load_model converts again (also with a line). A cache folder that cannot be written is no
// obstacle: the conversion is used from memory for this run, with a one-line hint.
//
// Why a record beside the entry, not inside it: FORMAT.md's reserved header bytes are "written as
// zero", the entry stays byte-identical to `mote convert`'s output, and after a re-hash that finds
// the same content (a touched or copied GGUF) only the small record is rewritten.
//
// A folder is keyed as a GGUF is, over the files its conversion reads (source_files: its .json,
// .safetensors and .txt files, sub-folders included, hidden ones not): its identity is the
// folder's device, a hash of those files' names and inodes, their total size and their latest
// mtime and ctime; its content key hashes their names and contents. A README changed beside the
// weights converts nothing again; any of those files written, added, removed or renamed does.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>

#include "cli_model.hpp"
#include "convert.hpp"
#include "llama2c/llama2c_header.hpp"
#include "mote_version.h"

namespace mote::cli {
namespace {

constexpr int64_t kRacySeconds = 3;  // above the coarsest timestamps in use (FAT: 2 s)

uint64_t rotl(uint64_t v, int r) { return (v << r) | (v >> (64 - r)); }

// FNV-1a, 64-bit: the path key, not a defence against an adversary (the loader validates).
uint64_t fnv1a(const std::string &text) {
  uint64_t h = 1469598103934665603ull;
  for (char c : text) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  return h;
}

// The content key: four 64-bit lanes of multiply-rotate rounds over 32-byte stripes, as xxHash64
// (its primes and round, not its exact output). Unlike FNV over 64-bit words, a round carries
// every input bit into every hash bit, so two flipped sign bits cannot cancel out.
class ContentHash {
 public:
  void add(const uint8_t *p, size_t n) {  // n a multiple of 32 except in the last call
    for (; n >= 32; p += 32, n -= 32) {
      for (int lane = 0; lane < 4; ++lane) {
        uint64_t word;
        std::memcpy(&word, p + 8 * lane, 8);
        lanes_[lane] = rotl(lanes_[lane] + word * kP2, 31) * kP1;
      }
      length_ += 32;
    }
    if (n > 0) {  // the tail, zero-padded to a stripe; the length tells it from real zeros
      uint8_t stripe[32] = {};
      std::memcpy(stripe, p, n);
      add(stripe, 32);
      length_ -= 32 - n;
    }
  }
  uint64_t value() const {
    uint64_t h = rotl(lanes_[0], 1) + rotl(lanes_[1], 7) + rotl(lanes_[2], 12) + rotl(lanes_[3], 18) + length_;
    h = (h ^ (h >> 33)) * kP2;
    h = (h ^ (h >> 29)) * 0x165667B19E3779F9ull;
    return h ^ (h >> 32);
  }

 private:
  static constexpr uint64_t kP1 = 0x9E3779B185EBCA87ull, kP2 = 0xC2B2AE3D27D4EB4Full;
  uint64_t lanes_[4] = {kP1 + kP2, kP2, 0, 0 - kP1};
  uint64_t length_ = 0;
};

std::string hex(uint64_t v, int digits) {
  char text[17];
  std::snprintf(text, sizeof text, "%0*llx", digits, static_cast<unsigned long long>(v) >> (64 - 4 * digits));
  return text;
}

int64_t nanoseconds(const timespec &t) { return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec; }

// What identifies a file's content without reading it (ctime moves on every change).
struct FileIdentity {
  uint64_t dev = 0, ino = 0, size = 0;
  int64_t mtime_ns = 0, ctime_ns = 0;
  bool operator==(const FileIdentity &o) const {
    return dev == o.dev && ino == o.ino && size == o.size && mtime_ns == o.mtime_ns && ctime_ns == o.ctime_ns;
  }
};

FileIdentity identity_of(const struct stat &st) {
  return {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino), static_cast<uint64_t>(st.st_size),
          nanoseconds(st.st_mtim), nanoseconds(st.st_ctim)};
}

FileIdentity identity_of(int fd) {
  struct stat st {};
  fstat(fd, &st);
  return identity_of(st);
}

// The .source record (see the top of the file).
struct Record {
  FileIdentity source;
  int64_t recorded_ns = 0;  // when source was taken (CLOCK_REALTIME, the clock ctime uses)
  uint64_t content = 0;
  uint64_t entry_size = 0, entry_checksum = 0;
};
// One format for printf and scanf: glibc spells SCN and PRI of the 64-bit types alike.
constexpr const char *kRecordFormat =
    "mote-cache-record 1 dev %" SCNu64 " ino %" SCNu64 " size %" SCNu64 " mtime %" SCNd64 " ctime %" SCNd64
    " recorded %" SCNd64 " content %" SCNx64 " entry-size %" SCNu64 " entry-checksum %" SCNx64 "\n";

bool read_record(const std::string &path, Record *r) {
  std::vector<uint8_t> bytes;
  std::string ignored;
  if (!posix::read_small_file(path, 1024, &bytes, &ignored)) return false;
  const std::string text(bytes.begin(), bytes.end());
  FileIdentity &s = r->source;
  return std::sscanf(text.c_str(), kRecordFormat, &s.dev, &s.ino, &s.size, &s.mtime_ns, &s.ctime_ns, &r->recorded_ns,
                     &r->content, &r->entry_size, &r->entry_checksum) == 9;
}

bool write_record(const std::string &path, const Record &r, std::string *error) {
  char text[512];
  const FileIdentity &s = r.source;
  const int n = std::snprintf(text, sizeof text, kRecordFormat, s.dev, s.ino, s.size, s.mtime_ns, s.ctime_ns,
                              r.recorded_ns, r.content, r.entry_size, r.entry_checksum);
  return posix::write_file_atomically(path, text, static_cast<size_t>(n), error);
}

int64_t now_ns() {
  timespec t{};
  clock_gettime(CLOCK_REALTIME, &t);
  return nanoseconds(t);
}

// The content key of the open file fd (its size given); false when a read fails.
bool hash_content(int fd, uint64_t size, uint64_t *key) {
  constexpr size_t kChunk = 1 << 20;  // a multiple of the 32-byte stripe
  std::vector<uint8_t> chunk(kChunk);
  ContentHash hash;
  for (uint64_t at = 0; at < size;) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(kChunk, size - at));
    size_t got = 0;
    while (got < want) {
      const ssize_t r = pread(fd, chunk.data() + got, want - got, static_cast<off_t>(at + got));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return false;
      got += static_cast<size_t>(r);
    }
    hash.add(chunk.data(), want);
    at += want;
  }
  *key = hash.value();
  return true;
}

bool is_folder(const std::string &path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The files of a Hugging Face folder its conversion reads, by name relative to it, sorted: the
// .json (config.json, the tokenizer's, 1_Pooling/config.json), .safetensors and .txt (vocab.txt)
// files in it and its sub-folders; hidden ones (.git, huggingface-cli's .cache) left out.
std::vector<std::string> source_files(const std::string &folder) {
  namespace fs = std::filesystem;
  std::vector<std::string> names;
  std::error_code ec;
  fs::recursive_directory_iterator it(folder, fs::directory_options::follow_directory_symlink, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const fs::path &path = it->path();
    if (path.filename().string().front() == '.') {
      it.disable_recursion_pending();
      continue;
    }
    const std::string extension = path.extension().string();
    if ((extension == ".json" || extension == ".safetensors" || extension == ".txt") && it->is_regular_file(ec))
      names.push_back(path.lexically_relative(folder).string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// A folder's identity over its source files (see the top of the file); false with a reason when
// one cannot be read.
bool folder_identity(const std::string &folder, const std::vector<std::string> &files, FileIdentity *id,
                     std::string *error) {
  struct stat st {};
  if (stat(folder.c_str(), &st) != 0) {
    *error = "cannot read '" + folder + "': " + std::strerror(errno);
    return false;
  }
  *id = FileIdentity{};
  id->dev = static_cast<uint64_t>(st.st_dev);
  std::string inodes;
  for (const std::string &name : files) {
    const std::string path = folder + "/" + name;
    if (stat(path.c_str(), &st) != 0) {
      *error = "cannot read '" + path + "': " + std::strerror(errno);
      return false;
    }
    const FileIdentity file = identity_of(st);
    inodes += name + " " + std::to_string(file.dev) + " " + std::to_string(file.ino) + "\n";
    id->size += file.size;
    id->mtime_ns = std::max(id->mtime_ns, file.mtime_ns);
    id->ctime_ns = std::max(id->ctime_ns, file.ctime_ns);
  }
  id->ino = fnv1a(inodes);
  return true;
}

// A folder's content key: its source files' names and content keys; false when a read fails.
bool hash_folder(const std::string &folder, const std::vector<std::string> &files, uint64_t *key) {
  std::string keys;
  for (const std::string &name : files) {
    std::string ignored;
    uint64_t size = 0, file_key = 0;
    const int fd = posix::open_regular_file(folder + "/" + name, &size, &ignored);
    if (fd < 0) return false;
    const bool hashed = hash_content(fd, size, &file_key);
    close(fd);
    if (!hashed) return false;
    keys += name + " " + hex(file_key, 16) + "\n";
  }
  *key = fnv1a(keys);
  return true;
}

// What a model source (a GGUF file or a Hugging Face folder) is now: its identity, and its
// content key once hashed.
class Source {
 public:
  Source(const std::string &path, bool folder) : path_(path), folder_(folder) {
    if (folder) files_ = source_files(path);
  }
  // The identity now; false with a reason when the source cannot be read.
  bool identity(FileIdentity *id, std::string *error) const {
    if (folder_) return folder_identity(path_, files_, id, error);
    uint64_t size = 0;
    const int fd = posix::open_regular_file(path_, &size, error);
    if (fd < 0) return false;
    *id = identity_of(fd);
    close(fd);
    return true;
  }
  // The content key; false when a read fails.
  bool hash(uint64_t *key) const {
    if (folder_) return hash_folder(path_, files_, key);
    std::string ignored;
    uint64_t size = 0;
    const int fd = posix::open_regular_file(path_, &size, &ignored);
    if (fd < 0) return false;
    const bool hashed = hash_content(fd, size, key);
    close(fd);
    return hashed;
  }

 private:
  std::string path_;
  bool folder_;
  std::vector<std::string> files_;
};

// The entry's size and header checksum (the .mote header: file_size at byte 8, checksum at 16).
bool entry_identity(const std::vector<uint8_t> &bytes, uint64_t *size, uint64_t *checksum) {
  if (bytes.size() < 24) return false;
  *size = bytes.size();
  std::memcpy(checksum, bytes.data() + 16, 8);
  return true;
}

// Why the entry at path is not the one the record describes ("" when it is; "missing" when
// there is none, which needs no note).
std::string entry_mismatch(const std::string &path, const Record &record) {
  std::string error;
  uint64_t size = 0;
  const int fd = posix::open_regular_file(path, &size, &error);
  if (fd < 0) return access(path.c_str(), F_OK) == 0 ? "cannot be opened" : "missing";
  uint8_t header[24] = {};
  const bool read = pread(fd, header, sizeof header, 0) == static_cast<ssize_t>(sizeof header);
  close(fd);
  uint64_t file_size = 0, checksum = 0;
  std::memcpy(&file_size, header + 8, 8);
  std::memcpy(&checksum, header + 16, 8);
  if (size != record.entry_size) {
    return "is " + std::to_string(size) + " bytes, not the " + std::to_string(record.entry_size) +
           " written (truncated?)";
  }
  if (!read || std::memcmp(header, "MOTE", 4) != 0 || file_size != size || checksum != record.entry_checksum) {
    return "is not the conversion recorded for this GGUF (replaced?)";
  }
  return "";
}

bool convert_source(const std::string &source, std::vector<uint8_t> *bytes, std::string *error) {
  convert::ConvertRequest request;  // quantized tensors kept as stored, as `mote convert` does
  request.input = source;
  convert::Converted converted;
  if (convert::convert_model(request, &converted, error) != convert::ConvertResult::ok) {
    if (error->find(source) == std::string::npos) *error = "'" + source + "': " + *error;  // the loader's words
    return false;
  }
  for (const std::string &note : converted.notes) std::fprintf(stderr, "mote: note: %s\n", note.c_str());
  *bytes = std::move(converted.bytes);
  return true;
}

// The first n bytes of path (fewer for a shorter file); empty when it cannot be read.
std::string first_bytes(const std::string &path, size_t n) {
  std::string error;
  uint64_t size = 0;
  const int fd = posix::open_regular_file(path, &size, &error);
  if (fd < 0) return "";
  std::string bytes(static_cast<size_t>(std::min<uint64_t>(size, n)), '\0');
  size_t got = 0;
  while (got < bytes.size()) {
    const ssize_t r = pread(fd, &bytes[got], bytes.size() - got, static_cast<off_t>(got));
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  close(fd);
  bytes.resize(got);
  return bytes;
}

// Removes the other entries of one GGUF path (its older conversions, and entries of the
// previous naming scheme), keeping `keep` (std::filesystem, not readdir: readdir's 32-bit build
// failed on armhf's 64-bit inode numbers).
void remove_stale_entries(const std::string &dir, const std::string &prefix, const std::string &keep) {
  std::error_code ec;
  for (const auto &entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const size_t keys = name.size() - std::min(name.size(), prefix.size() + 5);  // 16 hex, then "-" and 8 (TOOLKEY)
    if (name.compare(0, prefix.size(), prefix) == 0 && (keys == 16 || keys == 16 + 1 + 8) &&
        entry.path().extension() == ".mote" && entry.path().string() != keep) {
      std::filesystem::remove(entry.path(), ec);
    }
  }
}

// Converts source into entry (and its record), or into memory when the cache cannot be written.
bool convert_into_cache(const std::string &source, const std::string &entry, const std::string &record_path,
                        Record record, ModelFile *file, std::string *error) {
  std::fprintf(stderr, "mote: converting %s once into %s\n", source.c_str(), entry.c_str());
  if (!convert_source(source, &file->converted, error)) return false;
  entry_identity(file->converted, &record.entry_size, &record.entry_checksum);
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(entry).parent_path(), ec);
  std::string why = ec ? ec.message() : "";
  if (why.empty() && convert::write_file(entry, file->converted, &why) && write_record(record_path, record, &why)) {
    file->converted.clear();
    file->converted.shrink_to_fit();
    file->path = entry;
    file->cache_entry = true;
    return true;
  }
  std::fprintf(stderr,
               "mote: cannot keep the conversion in %s (%s); using it from memory this run (set XDG_CACHE_HOME to a "
               "writable folder to keep it)\n",
               std::filesystem::path(entry).parent_path().c_str(), why.c_str());
  file->path = source;
  return true;
}

}  // namespace

bool resolve_model_file(const std::string &path, bool rebuild, ModelFile *file, std::string *error) {
  *file = ModelFile{};
  file->path = path;
  // The magic first: a .mote (every run of the default model) costs 4 bytes read.
  const bool folder = is_folder(path);
  if (!folder && first_bytes(path, 4) != "GGUF") return true;  // not GGUF: the loader says what it is
  if (folder && access((path + "/config.json").c_str(), F_OK) != 0) {
    *error = "'" + path + "' is a folder without config.json: a model is a .mote or GGUF file or a Hugging Face folder";
    return false;
  }
  std::error_code ec;
  std::filesystem::path canonical = std::filesystem::canonical(path, ec);
  if (ec) canonical = std::filesystem::absolute(path, ec).lexically_normal();
  const std::string stem = (folder ? canonical.filename() : std::filesystem::path(path).stem()).string();
  const std::string dir = cache_dir();
  const std::string prefix = stem + "-" + hex(fnv1a(canonical.string()), 8);
  const std::string record_path = dir + "/" + prefix + ".source";

  const Source source(path, folder);
  Record record, recorded;
  if (!source.identity(&record.source, error)) return false;
  record.recorded_ns = now_ns();
  const bool have_record = read_record(record_path, &recorded);
  const bool trusted = have_record && recorded.source == record.source &&
                       recorded.recorded_ns - recorded.source.ctime_ns >= kRacySeconds * 1000000000;
  bool hashed = trusted || source.hash(&record.content);
  if (trusted) record.content = recorded.content;
  FileIdentity after;
  hashed = hashed && source.identity(&after, error) && after == record.source;  // not written while being hashed
  if (!hashed) {
    *error = "'" + path + "' changed (or could not be read) while mote hashed it; try again";
    return false;
  }
  const std::string tool_key = hex(fnv1a(MOTE_VERSION " " MOTE_GIT_DESCRIBE), 8);
  const std::string entry = dir + "/" + prefix + "-" + hex(record.content, 16) + "-" + tool_key + ".mote";
  if (!rebuild && have_record && recorded.content == record.content) {
    const std::string mismatch = entry_mismatch(entry, recorded);
    if (mismatch.empty()) {
      record.entry_size = recorded.entry_size;
      record.entry_checksum = recorded.entry_checksum;
      std::string ignored;  // an unwritable record only costs the next run a hash
      if (!trusted) write_record(record_path, record, &ignored);
      std::fprintf(stderr, "mote: using cached %s\n", entry.c_str());
      file->path = entry;
      file->cache_entry = true;
      return true;
    }
    if (mismatch != "missing")
      std::fprintf(stderr, "mote: cache file %s %s; converting again\n", entry.c_str(), mismatch.c_str());
  }
  remove_stale_entries(dir, prefix + "-", entry);
  return convert_into_cache(path, entry, record_path, record, file, error);
}

std::string foreign_format_hint(const std::string &path) {
  const std::string head = first_bytes(path, 64);
  if (head.size() >= 9 && head[8] == '{') {  // safetensors: a u64 header length, then JSON
    return "a safetensors file, not a .mote file: convert its folder with 'mote convert FOLDER -o model.mote'";
  }
  if (convert::looks_like_llama2c_header(head.data(), head.size())) {
    return "a llama2.c checkpoint, not a .mote file: convert it with 'mote convert " + path +
           " --tokenizer tokenizer.bin -o model.mote'";
  }
  return "";
}

}  // namespace mote::cli

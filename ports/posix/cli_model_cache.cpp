// GGUF files run directly: the CLI converts one once into the cache and opens the .mote; files
// in other formats mote converts from get a message naming `mote convert`.
//
// A cached file is named STEM-PATHKEY-CONTENTKEY.mote: PATHKEY hashes the GGUF's absolute path
// (two models with one file name do not evict each other), CONTENTKEY its size, mtime and first
// bytes (the header, metadata and tensor table of a GGUF; a rewritten file changes at least one).
// When the content key changes, the older files of the same STEM-PATHKEY are removed.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>

#include "cli_common.hpp"
#include "gguf.hpp"
#include "llama2c_header.hpp"
#include "mote_writer.hpp"

namespace mote::cli {
namespace {

constexpr size_t kHashedBytes = 1 << 20;  // covers a GGUF's header, metadata and tensor table

// FNV-1a, 64-bit: a cache key, not a defence against an adversary (the loader validates).
struct Fnv {
  uint64_t h = 1469598103934665603ull;
  void add(const void *data, size_t n) {
    const auto *p = static_cast<const uint8_t *>(data);
    for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  }
  template <class T>
  void add_value(const T &v) {
    add(&v, sizeof v);
  }
};

std::string hex(uint64_t v, int digits) {
  char text[17];
  std::snprintf(text, sizeof text, "%0*llx", digits, static_cast<unsigned long long>(v) >> (64 - 4 * digits));
  return text;
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

bool convert_gguf(const std::string &gguf, const std::string &output, std::string *error) {
  convert::GgufOptions options;  // quantized tensors kept as stored, as `mote convert` does
  convert::ModelData model;
  if (!convert::load_gguf(gguf, options, &model, error)) return false;  // its errors name the GGUF
  const std::vector<uint8_t> bytes = convert::serialize(model);
  if (!convert::check_opens(bytes, error)) {
    *error = "'" + gguf + "': " + *error;
    return false;
  }
  return convert::write_file(output, bytes, error);  // names the cached file
}

}  // namespace

std::string cached_model_path(const std::string &path, std::string *error) {
  // The magic first: a .mote (every run of the default model) costs 4 bytes read, not 1 MiB.
  if (first_bytes(path, 4) != "GGUF") return path;  // not GGUF: the loader says what it is
  const std::string head = first_bytes(path, kHashedBytes);
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return path;
  std::error_code ec;
  const std::filesystem::path absolute = std::filesystem::absolute(path, ec);
  Fnv path_key, content_key;
  path_key.add(absolute.c_str(), std::strlen(absolute.c_str()));
  content_key.add_value(static_cast<uint64_t>(st.st_size));
  content_key.add_value(static_cast<int64_t>(st.st_mtim.tv_sec));
  content_key.add_value(static_cast<int64_t>(st.st_mtim.tv_nsec));
  content_key.add(head.data(), head.size());

  const std::string dir = cache_dir();
  const std::string prefix = absolute.stem().string() + "-" + hex(path_key.h, 8) + "-";
  const std::string cached = dir + "/" + prefix + hex(content_key.h, 16) + ".mote";
  if (access(cached.c_str(), R_OK) == 0) {
    std::fprintf(stderr, "mote: using cached %s\n", cached.c_str());
    return cached;
  }
  std::filesystem::create_directories(dir, ec);
  // A changed GGUF: its older conversions are stale (std::filesystem, not readdir: readdir's
  // 32-bit build failed on armhf's 64-bit inode numbers).
  for (const auto &entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.compare(0, prefix.size(), prefix) == 0 && name.size() == prefix.size() + 16 + 5 &&
        entry.path().extension() == ".mote") {
      std::filesystem::remove(entry.path(), ec);
    }
  }
  std::fprintf(stderr, "mote: converting %s once into %s\n", path.c_str(), cached.c_str());
  if (!convert_gguf(path, cached, error)) return "";
  return cached;
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

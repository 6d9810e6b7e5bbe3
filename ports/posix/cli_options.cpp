#include "cli_options.hpp"

#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace mote::cli {

namespace {

// "-n|--n-predict|--tokens" -> {"-n", "--n-predict", "--tokens"}.
std::vector<std::string> spellings(const Option &o) {
  std::vector<std::string> names;
  std::string rest = o.names;
  for (size_t bar; (bar = rest.find('|')) != std::string::npos; rest.erase(0, bar + 1))
    names.push_back(rest.substr(0, bar));
  names.push_back(rest);
  return names;
}

// The name messages use: the first long spelling ("--n-predict"), else the only one.
std::string option_name(const Option &o) {
  for (const std::string &name : spellings(o)) {
    if (name.compare(0, 2, "--") == 0) return name;
  }
  return spellings(o).front();
}

bool parse_u32(const std::string &text, uint32_t *value) {
  char *end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || text[0] == '-' || errno != 0 || *end != '\0' || v > UINT32_MAX) return false;
  *value = static_cast<uint32_t>(v);
  return true;
}

bool parse_value(const Option &o, const std::string &text, std::string *error) {
  const char *s = text.c_str();
  char *end = nullptr;
  errno = 0;
  bool ok = !text.empty();
  switch (o.kind) {
    case Option::kString:
      *static_cast<std::string *>(o.target) = text;
      return true;
    case Option::kCount:
      if (text == "-1") {
        *static_cast<uint32_t *>(o.target) = UINT32_MAX;
        return true;
      }
      [[fallthrough]];
    case Option::kU32:
      ok = parse_u32(text, static_cast<uint32_t *>(o.target));
      break;
    case Option::kU64: {
      const unsigned long long v = std::strtoull(s, &end, 10);
      ok = ok && text[0] != '-' && errno == 0 && *end == '\0';
      if (ok) *static_cast<uint64_t *>(o.target) = v;
      break;
    }
    case Option::kI32: {
      const long v = std::strtol(s, &end, 10);
      ok = ok && errno == 0 && *end == '\0' && v >= INT32_MIN && v <= INT32_MAX;
      if (ok) *static_cast<int32_t *>(o.target) = static_cast<int32_t>(v);
      break;
    }
    case Option::kF32: {
      const float v = std::strtof(s, &end);
      ok = ok && errno == 0 && *end == '\0' && std::isfinite(v);
      if (ok) *static_cast<float *>(o.target) = v;
      break;
    }
    case Option::kU32List: {
      std::vector<uint32_t> values;
      std::string rest = text + ",";
      for (size_t comma; ok && (comma = rest.find(',')) != std::string::npos; rest.erase(0, comma + 1)) {
        uint32_t v = 0;
        ok = parse_u32(rest.substr(0, comma), &v);
        values.push_back(v);
      }
      if (ok) *static_cast<std::vector<uint32_t> *>(o.target) = values;
      break;
    }
    case Option::kSwitch:
      break;
  }
  if (!ok) *error = "invalid value '" + text + "' for " + option_name(o);
  return ok;
}

// The option's value as the help page shows it ("" for none).
std::string value_text(const Option &o) {
  char number[32] = "";
  switch (o.kind) {
    case Option::kString:
      return *static_cast<const std::string *>(o.target);
    case Option::kCount:
      if (*static_cast<const uint32_t *>(o.target) == UINT32_MAX) return "-1";
      [[fallthrough]];
    case Option::kU32:
      return std::to_string(*static_cast<const uint32_t *>(o.target));
    case Option::kI32:
      return std::to_string(*static_cast<const int32_t *>(o.target));
    case Option::kU64:
      return std::to_string(*static_cast<const uint64_t *>(o.target));
    case Option::kF32:
      std::snprintf(number, sizeof number, "%g", static_cast<double>(*static_cast<const float *>(o.target)));
      return number;
    case Option::kU32List: {
      std::string text;
      for (uint32_t v : *static_cast<const std::vector<uint32_t> *>(o.target)) {
        text += (text.empty() ? "" : ",") + std::to_string(v);
      }
      return text;
    }
    case Option::kSwitch:
      break;
  }
  return "";
}

}  // namespace

void print_help(const CommandHelp &command, const std::vector<std::string> &defaults, FILE *out) {
  std::fprintf(out, "usage: mote %s %s\n\n%s\n\noptions:\n", command.name, command.usage, command.summary);
  for (size_t i = 0; i < command.options.size(); ++i) {
    const Option &o = command.options[i];
    std::string left;
    for (const std::string &name : spellings(o)) left += (left.empty() ? "" : ", ") + name;
    if (o.value_name != nullptr) left += std::string(" ") + o.value_name;
    if (left.size() > 34) left += "\n" + std::string(2 + 34, ' ');  // a long spelling list gets its own line
    std::fprintf(out, "  %-34s %s", left.c_str(), o.help);
    if (!defaults[i].empty()) std::fprintf(out, " (default: %s)", defaults[i].c_str());
    std::fputc('\n', out);
  }
  std::fprintf(out, "  %-34s %s\n", "-h, --help", "print this help and exit");
}

int parse_command(const CommandHelp &command, int argc, char **argv, std::vector<std::string> *positional) {
  // The defaults are the targets' values before anything is parsed.
  std::vector<std::string> defaults;
  for (const Option &o : command.options)
    defaults.push_back(o.default_text != nullptr ? o.default_text : value_text(o));
  const std::string see_help = std::string("; see 'mote ") + command.name + " --help'";
  for (int i = 2; i < argc; ++i) {
    const std::string word = argv[i];
    if (word == "-h" || word == "--help") {
      print_help(command, defaults, stdout);
      return 0;
    }
    if (word.size() < 2 || word[0] != '-') {
      positional->push_back(word);
      continue;
    }
    const Option *match = nullptr;
    for (const Option &o : command.options) {
      for (const std::string &name : spellings(o)) {
        if (word == name) match = &o;
      }
    }
    if (match == nullptr) return report(command.name, "unknown option '" + word + "'" + see_help, kExitUsage);
    if (match->seen != nullptr) *match->seen = true;
    if (match->kind == Option::kSwitch) {
      *static_cast<bool *>(match->target) = true;
      continue;
    }
    if (i + 1 >= argc) return report(command.name, "option " + word + " needs a value", kExitUsage);
    std::string error;
    if (!parse_value(*match, argv[++i], &error)) return report(command.name, error, kExitUsage);
  }
  return kParsed;
}

int report(const char *command, const std::string &message, int code) {
  std::fprintf(stderr, "mote %s: %s\n", command, message.c_str());
  return code;
}

void KvCacheOptions::add_options(std::vector<Option> *options) {
  const std::vector<Option> mine = {
      {"--kv", Option::kString, &kv, "TYPE", "KV cache type: f32, f16 or q8_0"},
      {"-ctk|--cache-type-k", Option::kString, &k, "TYPE", "llama.cpp's spelling of --kv", nullptr, "--kv"},
      {"-ctv|--cache-type-v", Option::kString, &v, "TYPE", "llama.cpp's spelling of --kv (must equal -ctk)", nullptr,
       "--kv"},
  };
  options->insert(options->end(), mine.begin(), mine.end());
}

void ModelLoadOptions::add_options(std::vector<Option> *options) {
  options->push_back({"--no-mmap", Option::kSwitch, &no_mmap, nullptr,
                      "read the model into memory (2 MiB pages) instead of mapping it: a copy, fewer TLB misses"});
}

bool KvCacheOptions::finish(std::string *error) {
  // mote keeps K and V in one type: llama.cpp's separate spellings must agree with each other.
  if (!k.empty() && !v.empty() && k != v) {
    *error = "-ctk " + k + " and -ctv " + v + " differ: mote keeps K and V in one type (give the same one, or --kv)";
    return false;
  }
  const std::string &name = !k.empty() ? k : !v.empty() ? v : kv;
  return parse_kv_dtype(name, &dtype, error);
}

bool parse_kv_dtype(const std::string &name, mote_kv_dtype *dtype, std::string *error) {
  if (name == "f32" || name == "f16" || name == "q8_0") {
    *dtype = name == "f32" ? MOTE_KV_F32 : name == "f16" ? MOTE_KV_F16 : MOTE_KV_Q8_0;
    return true;
  }
  *error = "--kv must be f32, f16 or q8_0";
  return false;
}

bool parse_backend(const std::string &name, bool gpu, mote_backend *backend, std::string *error) {
  if (name != "cpu" && name != "cuda") {
    *error = "--backend must be cpu or cuda";
    return false;
  }
  *backend = gpu || name == "cuda" ? MOTE_BACKEND_CUDA : MOTE_BACKEND_CPU;
  return true;
}

uint32_t available_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  const int count = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
  return std::clamp<uint32_t>(static_cast<uint32_t>(count), 1, kMaxThreads);
}

}  // namespace mote::cli

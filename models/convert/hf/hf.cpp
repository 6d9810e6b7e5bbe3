#include "hf/hf.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <set>

#include "hf/hf_config.hpp"
#include "hf/hf_families.hpp"
#include "hf/hf_family_configs.hpp"
#include "hf/hf_tokenizer.hpp"
#include "hf/json.hpp"
#include "hf/safetensors.hpp"
#include "io/file_map.hpp"
#include "message_text.hpp"
#include "quant/dequant.hpp"
#include "text/tokenizer.hpp"
#include "vocab/byte_level_vocab.hpp"

namespace mote::convert {
namespace {

using format::DType;
using format::Role;

// JSON files are read whole, under these caps (real ones are far smaller: SmolLM2's tokenizer.json
// is 2 MB, the largest common ones about 35 MB).
constexpr uint64_t kMaxTokenizerJsonBytes = 256ull << 20;
constexpr uint64_t kMaxConfigJsonBytes = 16ull << 20;

bool read_whole_file(const std::string &path, std::vector<uint8_t> *bytes, std::string *error,
                     uint64_t max_bytes = kMaxConfigJsonBytes) {
  return posix::read_small_file(path, max_bytes, bytes, error);
}

bool read_json_file(const std::string &path, JsonValue *out, std::string *error) {
  std::vector<uint8_t> bytes;
  if (!read_whole_file(path, &bytes, error)) return false;
  if (!parse_json(reinterpret_cast<const char *>(bytes.data()), bytes.size(), out, error)) {
    *error = "'" + path + "': " + *error;
    return false;
  }
  return true;
}

// The values of slot w as the model uses them: a Gemma norm's w as 1 + w, a Conv1D weight (in,
// out) as its (out, in) rows; otherwise stored as they are. *scratch holds any values made here.
SourceTensor as_used(const TensorSlot &w, const SourceTensor &stored, bool adds_one, bool transposed,
                     std::vector<float> *scratch) {
  if (!adds_one && !transposed) return stored;
  std::vector<float> values(w.cols == 0 ? w.rows : w.rows * w.cols);
  dequantize_ggml(stored.ggml_type, stored.bytes, values.size(), values.data());
  if (adds_one) {
    for (float &v : values) v += 1.0f;
    *scratch = std::move(values);
  } else {
    scratch->resize(values.size());
    for (uint64_t r = 0; r < w.rows; ++r) {
      for (uint64_t col = 0; col < w.cols; ++col) (*scratch)[r * w.cols + col] = values[col * w.rows + r];
    }
  }
  return {reinterpret_cast<const uint8_t *>(scratch->data()), static_cast<uint32_t>(GgmlType::f32)};
}

bool ends_with(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

namespace fs = std::filesystem;

// The tokenizer (tokenizer.json, and tokenizer_config.json when present), before the slow weights;
// it may correct config.json's bos and eos ids.
bool load_hf_tokenizer(const fs::path &dir, const SafetensorsOptions &options, ModelData *m, std::string *error) {
  std::error_code ec;
  format::ModelConfig &c = m->config;
  const std::string tokenizer_path =
      options.tokenizer_path.empty() ? (dir / "tokenizer.json").string() : options.tokenizer_path;
  std::vector<uint8_t> tokenizer_bytes, tokenizer_config_bytes;
  // A BERT checkpoint may carry only vocab.txt (WordPiece).
  const std::string vocab_txt_path = (dir / "vocab.txt").string();
  const bool vocab_txt =
      options.tokenizer_path.empty() && !fs::exists(tokenizer_path, ec) && fs::exists(vocab_txt_path, ec);
  if (!vocab_txt && !fs::exists(tokenizer_path, ec)) {
    *error = "'" + dir.string() +
             "' has no tokenizer.json: mote needs a byte-level BPE or WordPiece tokenizer.json, a BERT vocab.txt, "
             "or --tokenizer FILE";
    return false;
  }
  const std::string source = vocab_txt ? vocab_txt_path : tokenizer_path;
  if (!read_whole_file(source, &tokenizer_bytes, error, kMaxTokenizerJsonBytes)) return false;
  const std::string tokenizer_config_path = (dir / "tokenizer_config.json").string();
  if (fs::exists(tokenizer_config_path, ec) && !read_whole_file(tokenizer_config_path, &tokenizer_config_bytes, error))
    return false;
  m->tokenizer.bos_id = c.bos_id;
  m->tokenizer.eos_id = c.eos_id;
  const std::string text(tokenizer_bytes.begin(), tokenizer_bytes.end());
  const std::string config_text(tokenizer_config_bytes.begin(), tokenizer_config_bytes.end());
  if (!(vocab_txt ? hf_vocab_txt_tokenizer(text, config_text, c.vocab_size, &m->tokenizer, error)
                  : hf_tokenizer(text, config_text, c.vocab_size, &m->tokenizer, error))) {
    *error = "'" + source + "': " + *error;
    return false;
  }
  c.bos_id = m->tokenizer.bos_id;
  c.eos_id = m->tokenizer.eos_id;
  return true;
}

// The weight files: model.safetensors, or the shards model.safetensors.index.json names.
bool weight_files(const fs::path &dir, std::vector<std::string> *files, std::string *error) {
  std::error_code ec;
  if (fs::exists(dir / "model.safetensors", ec)) {
    files->push_back("model.safetensors");
    return true;
  }
  if (!fs::exists(dir / "model.safetensors.index.json", ec)) {
    *error = "'" + dir.string() + "' has neither model.safetensors nor model.safetensors.index.json";
    return false;
  }
  JsonValue index;
  if (!read_json_file((dir / "model.safetensors.index.json").string(), &index, error)) return false;
  const JsonValue *map = index.get("weight_map");
  if (map == nullptr || map->kind != JsonValue::Kind::object) {
    *error = "model.safetensors.index.json has no weight_map object";
    return false;
  }
  std::set<std::string> names;
  for (const auto &member : map->members) {
    const std::string &file = member.second.text;
    if (!member.second.is_string() || file.empty() || file.find('/') != std::string::npos ||
        file.find('\\') != std::string::npos || file == "." || file == "..") {
      *error = "model.safetensors.index.json maps '" + printable(member.first) + "' to an invalid file name";
      return false;
    }
    names.insert(file);
  }
  files->assign(names.begin(), names.end());
  return true;
}

struct Located {
  size_t file;
  SafetensorsTensor tensor;
};

// Every tensor of every shard by name. Shards are mapped, not read: only the headers and the
// tensors converted are ever loaded.
bool map_shards(const fs::path &dir, const std::vector<std::string> &files,
                std::vector<std::unique_ptr<posix::FileMap>> *contents, std::map<std::string, Located> *by_name,
                std::string *error) {
  contents->resize(files.size());
  for (size_t f = 0; f < files.size(); ++f) {
    const std::string file_path = (dir / files[f]).string();
    std::vector<SafetensorsTensor> tensors;
    (*contents)[f] = std::make_unique<posix::FileMap>();
    if (!(*contents)[f]->open(file_path, error)) return false;
    if (!parse_safetensors((*contents)[f]->bytes(), (*contents)[f]->size(), &tensors, error)) {
      *error = "'" + file_path + "': " + *error;
      return false;
    }
    for (SafetensorsTensor &t : tensors) {
      if (by_name->count(t.name) != 0) {
        *error = "'" + file_path + "': tensor '" + printable(t.name) + "' also appears in another shard";
        return false;
      }
      const std::string name = t.name;
      by_name->emplace(name, Located{f, std::move(t)});
    }
  }
  return true;
}

// Which tensor plays each (role, layer): slots[layer * kRoleCount + role], globals at layer L.
class RoleSlots {
 public:
  explicit RoleSlots(uint32_t n_layers) : n_layers_(n_layers), slots_((n_layers + 1) * format::kRoleCount) {}
  const Located *&at(Role role, uint32_t layer) {
    return slots_[(layer == format::kNoLayer ? n_layers_ : layer) * format::kRoleCount + static_cast<uint32_t>(role)];
  }

 private:
  uint32_t n_layers_;
  std::vector<const Located *> slots_;
};

// Places each checkpoint tensor in its slot; refuses names the family does not have, layers past
// the config's and tensors the architecture has no place for; then any tensor that is missing.
// Whether a checkpoint name is one the family leaves out (HfNames::ignored).
bool is_ignored(const HfNames &family, const std::string &name) {
  const std::string strip = family.strip_prefix;
  const std::string bare =
      !strip.empty() && name.compare(0, strip.size(), strip) == 0 ? name.substr(strip.size()) : name;
  for (const char *pattern : family.ignored) {
    if (pattern == nullptr) continue;
    const std::string p = pattern;
    if (!p.empty() && p.back() == '*' ? bare.compare(0, p.size() - 1, p, 0, p.size() - 1) == 0 : ends_with(name, p))
      return true;
  }
  return false;
}

bool assign_roles(const std::string &where, const HfConfig &hf, const std::map<std::string, Located> &by_name,
                  RoleSlots *slots, std::string *error) {
  const HfNames &family = *hf.names;
  const format::ModelConfig &c = hf.config;
  const uint32_t L = c.n_layers;
  for (const auto &entry : by_name) {
    Role role = Role::token_embedding;
    uint32_t layer = format::kNoLayer;
    if (is_ignored(family, entry.first)) continue;  // derived data (RoPE frequencies, causal masks) or a head
    if (!parse_hf_tensor_name(family, entry.first, &role, &layer)) {
      *error = "'" + where + "': tensor '" + printable(entry.first) + "' is not part of " + family.what +
               " as mote knows it";
      return false;
    }
    if (layer != format::kNoLayer && layer >= L) {
      *error = "'" + where + "': tensor '" + printable(entry.first) + "' is for layer " + num(layer) +
               " but num_hidden_layers is " + num(L);
      return false;
    }
    if (role == Role::output && hf.tied) continue;  // a copy of the embedding
    if (!format::role_needed(format::block_spec(c), role)) {
      *error = "'" + where + "': tensor '" + printable(entry.first) +
               "' has no place in the architecture config.json describes";
      return false;
    }
    slots->at(role, layer) = &entry.second;
  }
  for (const TensorSlot &w : tensor_slots(c)) {
    if (slots->at(w.role, w.layer) == nullptr && w.role != Role::rope_freqs) {
      *error = "'" + where + "' is missing tensor '" + hf_tensor_name(family, w.role, w.layer) + "'" +
               (w.role == Role::output ? " (config.json says the embeddings are not tied)" : "");
      return false;
    }
  }
  return true;
}

// An encoder's pooling and normalization from the sentence-transformers files beside it.
bool read_pooling(const fs::path &dir, format::ModelConfig *c, std::string *error) {
  JsonValue modules, pooling;
  std::error_code ec;
  const fs::path modules_path = dir / "modules.json", pooling_path = dir / "1_Pooling" / "config.json";
  const bool has_modules = fs::exists(modules_path, ec), has_pooling = fs::exists(pooling_path, ec);
  if ((has_modules && !read_json_file(modules_path.string(), &modules, error)) ||
      (has_pooling && !read_json_file(pooling_path.string(), &pooling, error)))
    return false;
  return sentence_transformers_pooling(has_modules ? &modules : nullptr, has_pooling ? &pooling : nullptr, c, error);
}

// One checkpoint tensor, shape-checked, as the converter uses it (transposed, Gemma's 1 + w).
bool convert_hf_tensor(const std::string &where, const HfConfig &hf, const TensorSlot &w, const Located &at,
                       const posix::FileMap &content, const SafetensorsOptions &options, ModelData *m,
                       std::string *error) {
  const HfNames &family = *hf.names;
  const SafetensorsTensor &t = at.tensor;
  const bool vector = w.cols == 0;
  const bool transposed = find_hf_name(family, w.role)->transposed;
  std::vector<uint64_t> expect = vector       ? std::vector<uint64_t>{w.rows}
                                 : transposed ? std::vector<uint64_t>{w.cols, w.rows}
                                              : std::vector<uint64_t>{w.rows, w.cols};
  // BERT's token types hold a row per segment type; every text is segment 0, the first row.
  if (w.role == Role::token_types && t.shape.size() == 2 && t.shape[0] >= 1) expect = {t.shape[0], w.rows};
  if (t.shape != expect) {
    std::string got, need;
    for (size_t d = 0; d < t.shape.size(); ++d) got += (d ? ", " : "") + num(t.shape[d]);
    for (size_t d = 0; d < expect.size(); ++d) need += (d ? ", " : "") + num(expect[d]);
    *error =
        "'" + where + "': tensor '" + printable(t.name) + "' has shape [" + got + "]; config.json needs [" + need + "]";
    return false;
  }
  if (t.dtype != "F32" && t.dtype != "F16" && t.dtype != "BF16") {
    *error = "'" + where + "': tensor '" + printable(t.name) + "' has dtype '" + printable(t.dtype) +
             "' (only F32, F16 and BF16 weights are supported)";
    return false;
  }
  const GgmlType type = t.dtype == "F32" ? GgmlType::f32 : t.dtype == "F16" ? GgmlType::f16 : GgmlType::bf16;
  std::vector<float> scratch;
  const bool adds_one = hf.row->hf_norm_adds_one && is_norm_weight(w.role);  // Gemma stores w of its (1 + w) norms
  const SourceTensor source =
      as_used(w, {content.bytes() + t.offset, static_cast<uint32_t>(type)}, adds_one, transposed, &scratch);
  if (!add_tensor(w, source, options.dtype, options.layout, m, error, options.mix)) {
    *error = "'" + where + "': " + *error;
    return false;
  }
  return true;
}

}  // namespace

bool load_hf_checkpoint(const std::string &path, const SafetensorsOptions &options, ModelData *out,
                        std::string *error) {
  std::error_code ec;
  fs::path dir = path;
  if (!fs::is_directory(dir, ec)) {
    dir = dir.parent_path();
    if (dir.empty()) dir = ".";
  }
  if (!check_matrix_dtype(options.dtype, error)) return false;
  const std::string where = dir.string();
  JsonValue config;
  if (!read_json_file((dir / "config.json").string(), &config, error)) return false;
  ModelData &m = *out;
  m = ModelData{};
  HfConfig hf;
  if (!hf_config(config, &hf, error)) {
    *error = "'" + where + "': " + *error;
    return false;
  }
  if ((hf.config.flags & format::kFlagEncoder) != 0 && !read_pooling(dir, &hf.config, error)) {
    *error = "'" + where + "': " + *error;
    return false;
  }
  m.config = hf.config;
  if (!load_hf_tokenizer(dir, options, &m, error)) return false;
  hf.config = m.config;  // with the tokenizer's bos and eos

  std::vector<std::string> files;
  std::vector<std::unique_ptr<posix::FileMap>> contents;
  std::map<std::string, Located> by_name;
  RoleSlots slots(m.config.n_layers);
  if (!weight_files(dir, &files, error) || !map_shards(dir, files, &contents, &by_name, error) ||
      !assign_roles(where, hf, by_name, &slots, error))
    return false;

  const std::vector<TensorSlot> wanted = tensor_slots(m.config);
  for (size_t k = 0; k < wanted.size(); ++k) {
    const TensorSlot &w = wanted[k];
    if (w.role == Role::rope_freqs) {  // computed from config.json's rope_scaling, as llama.cpp stores them
      const SourceTensor factors = {reinterpret_cast<const uint8_t *>(hf.rope_factors.data()),
                                    static_cast<uint32_t>(GgmlType::f32)};
      if (!add_tensor(w, factors, options.dtype, options.layout, &m, error, options.mix)) return false;
      continue;
    }
    const Located &at = *slots.at(w.role, w.layer);
    if (!convert_hf_tensor(where, hf, w, at, *contents[at.file], options, &m, error)) return false;
    if (options.progress) options.progress(k + 1, wanted.size());
  }
  return true;
}

}  // namespace mote::convert

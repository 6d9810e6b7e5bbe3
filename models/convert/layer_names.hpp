// Tensor names that carry a layer number ("blk.12.attn_q", "model.layers.12.mlp.up_proj"),
// shared by the GGUF and Hugging Face importers (host side).
#pragma once

#include <cstdint>
#include <string>

namespace mote::convert {

enum class LayerPrefix { absent, found, malformed };

// name = prefix + digits + "." + rest: *layer and *rest set, found. Empty, over-long (more than 9
// digits) or zero-padded numbers are malformed, so each tensor has one spelling; a name without
// the prefix is absent.
inline LayerPrefix split_layer_prefix(const std::string &name, const std::string &prefix, uint32_t *layer,
                                      std::string *rest) {
  if (name.compare(0, prefix.size(), prefix) != 0) return LayerPrefix::absent;
  size_t at = prefix.size(), digits = 0;
  uint64_t value = 0;
  while (at < name.size() && name[at] >= '0' && name[at] <= '9' && digits < 9) {
    value = value * 10 + static_cast<uint64_t>(name[at] - '0');
    ++at;
    ++digits;
  }
  if (digits == 0 || at >= name.size() || name[at] != '.' || (digits > 1 && name[prefix.size()] == '0')) {
    return LayerPrefix::malformed;
  }
  *layer = static_cast<uint32_t>(value);
  *rest = name.substr(at + 1);
  return LayerPrefix::found;
}

}  // namespace mote::convert

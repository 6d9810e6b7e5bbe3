#include "model_data.hpp"

#include <algorithm>
#include <iterator>

#include "format/reader.hpp"

namespace mote::convert {

std::vector<TensorSlot> tensor_slots(const format::ModelConfig &c) {
  using format::Role;
  // File order: the token embedding, the other global inputs in role order, each layer's tensors
  // in role order, the head.
  static const Role kLast[] = {Role::output_norm, Role::output_norm_bias, Role::output};
  std::vector<Role> first = {Role::token_embedding};
  for (uint32_t role = 1; role < format::kRoleCount; ++role) {
    const Role r = static_cast<Role>(role);
    if (!format::role_info(role)->per_layer && r != Role::token_embedding &&
        std::find(std::begin(kLast), std::end(kLast), r) == std::end(kLast))
      first.push_back(r);
  }
  const format::BlockSpec spec = format::block_spec(c);
  std::vector<TensorSlot> slots;
  auto add = [&](Role role, uint32_t layer) {
    if (!format::role_needed(spec, role)) return;
    uint32_t n_dims = 0, rows = 0, cols = 0;
    format::expected_shape(c, role, &n_dims, &rows, &cols);
    slots.push_back({role, layer, rows, n_dims == 2 ? cols : 0});
  };
  for (Role role : first) add(role, format::kNoLayer);
  for (uint32_t l = 0; l < c.n_layers; ++l) {
    for (uint32_t role = 1; role < format::kRoleCount; ++role) {
      if (format::role_info(role)->per_layer) add(static_cast<Role>(role), l);
    }
  }
  for (Role role : kLast) add(role, format::kNoLayer);
  return slots;
}

}  // namespace mote::convert

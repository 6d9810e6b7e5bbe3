// The kernel dispatch table: one row of function pointers per instruction set, chosen once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/attention_query.hpp"
#include "kernels/quant.hpp"

namespace mote::kernels {

enum class Isa {
#define MOTE_ISA(name) name,
#include "kernels/isa_list.inc"
#undef MOTE_ISA
};

// Every Isa, fastest first.
inline constexpr Isa kIsasFastestFirst[] = {
#define MOTE_ISA(name) Isa::name,
#include "kernels/isa_list.inc"
#undef MOTE_ISA
};

struct KernelTable {
  Isa isa;
  const char *isa_name;
#define MOTE_KERNEL(name, type) std::add_pointer_t<type> name;
#include "kernels/kernel_list.inc"
#undef MOTE_KERNEL
};

// The scalar reference twins (kernels/*_ref.cpp): always available.
const KernelTable &scalar_kernels();
// The table for isa, or null when this build or this CPU lacks it.
const KernelTable *kernels_for(Isa isa);
// The fastest table this CPU supports, resolved on first use (never in a hot loop).
const KernelTable &best_kernels();

}  // namespace mote::kernels

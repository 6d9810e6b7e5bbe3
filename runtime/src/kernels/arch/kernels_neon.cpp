// The NEON kernels: neon64 on aarch64, neon on 32-bit ARM built with NEON (chosen at compile
// time; the whole build shares the same flags there).
#include "kernels/arch/arch_tables.hpp"
#include "kernels/arch/simd_table.hpp"

namespace mote::kernels {

namespace {
#if defined(__aarch64__)
using NeonArch = xsimd::neon64;
#else
using NeonArch = xsimd::neon;
#endif
constexpr KernelTable kNeonTable = make_simd_table<NeonArch>(Isa::neon, "neon");
}  // namespace

const KernelTable &neon_kernels() { return kNeonTable; }

}  // namespace mote::kernels

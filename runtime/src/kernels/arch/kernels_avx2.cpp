// The AVX2 + FMA + F16C kernels (built with -mavx2 -mfma -mf16c; chosen only when the CPU has
// all three). xsimd 8.1 names this arch fma3<avx2>; using it rather than plain avx2 also keeps
// its symbols apart from the avx2 helpers the AVX-512 TU instantiates for its own reductions.
#include "kernels/arch/arch_tables.hpp"
#include "kernels/arch/simd_table.hpp"

namespace mote::kernels {

namespace {
constexpr KernelTable kAvx2Table = make_simd_table<xsimd::fma3<xsimd::avx2>>(Isa::avx2, "avx2");
}  // namespace

const KernelTable &avx2_kernels() { return kAvx2Table; }

}  // namespace mote::kernels

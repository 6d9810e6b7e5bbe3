// The AVX-512 kernels (built with -mavx512f -mavx512dq -mavx512bw -mavx512vl plus the AVX2 set;
// chosen only when the CPU has F, DQ, BW and VL). xsimd 8.1's float horizontal sum uses DQ.
// GCC 12 warns falsely about _mm512_undefined_ps() inside its own AVX-512 intrinsics
// (GCC bug 105593, fixed in 12.3 and 13) wherever xsimd inlines them; -O0 and sanitizer builds
// report it as -Wuninitialized.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ == 12
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"  // the same false alarm under sanitizers
#endif

#include "kernels/arch/arch_tables.hpp"
#include "kernels/arch/simd_table.hpp"

namespace mote::kernels {

namespace {
constexpr KernelTable kAvx512Table = make_simd_table<xsimd::avx512bw>(Isa::avx512, "avx512");
}  // namespace

const KernelTable &avx512_kernels() { return kAvx512Table; }

}  // namespace mote::kernels

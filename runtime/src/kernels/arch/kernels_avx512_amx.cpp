// The avx512_vnni table with the x8 layouts' prefill products on AMX tiles (not yet q3_kx8, q2_kx8) (built with the
// avx512 flags plus -mavx512vnni -mamx-tile -mamx-int8; chosen only when the CPU has AMX-INT8
// and the OS grants the tile state: dispatch.cpp). Every result is bit-identical to the
// avx512_vnni table's (kernels/matmul_amx.hpp).
// GCC 12's false -Wmaybe-uninitialized inside its own AVX-512 intrinsics (bug 105593): see
// kernels_avx512.cpp.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ == 12
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include "kernels/arch/arch_tables.hpp"
#include "kernels/matmul_amx.hpp"

namespace mote::kernels {

namespace {
struct Avx512Amx {};  // this TU's own instantiations of the quantized kernels
}  // namespace

const KernelTable &avx512_amx_kernels() {
  static const KernelTable table = [] {
    KernelTable amx = avx512_vnni_kernels();
    amx.isa = Isa::avx512_amx;
    amx.isa_name = "avx512_amx";
    amx.matmul_q8_0x8 = &simd::amx_matmul<Avx512Amx, BlockQ8_0x8>;
    amx.matmul_iq4_nlx8 = &simd::amx_matmul<Avx512Amx, BlockIQ4_NLx8>;
    amx.matmul_q4_0x8 = &simd::amx_matmul<Avx512Amx, BlockQ4_0x8>;
    amx.matmul_q4_1x8 = &simd::amx_matmul<Avx512Amx, BlockQ4_1x8>;
    amx.matmul_q5_0x8 = &simd::amx_matmul<Avx512Amx, BlockQ5_0x8>;
    amx.matmul_q5_1x8 = &simd::amx_matmul<Avx512Amx, BlockQ5_1x8>;
    amx.matmul_q4_kx8 = &simd::amx_matmul<Avx512Amx, BlockQ4_Kx8>;
    amx.matmul_q5_kx8 = &simd::amx_matmul<Avx512Amx, BlockQ5_Kx8>;
    amx.matmul_q6_kx8 = &simd::amx_matmul<Avx512Amx, BlockQ6_Kx8>;
    return amx;
  }();
  return table;
}

}  // namespace mote::kernels

// The avx512 table with its 8-bit products on AVX-512 VNNI's vpdpbusd (built with the avx512
// flags plus -mavx512vnni; chosen only when the CPU has AVX512_VNNI). vpdpbusd adds four
// unsigned x signed byte products straight into an int32 lane: the same exact sums the
// vpmaddubsw + vpmaddwd pair makes, so every result is bit-identical to the avx512 table's.
// GCC 12's false -Wmaybe-uninitialized inside its own AVX-512 intrinsics (bug 105593): see
// kernels_avx512.cpp; the 16-row interleaved tiles inline them here too.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ == 12
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include "kernels/arch/arch_tables.hpp"
#include "kernels/arch/simd_table.hpp"

namespace mote::kernels {

namespace {
struct Avx512Vnni {};  // this TU's own instantiations of the quantized kernels
// avx512_vnni_ymm's x8 products: the K types decoding one sub-block per ymm (Rows8) instead of two
// per zmm, and every x8 layout's one-token tiles asking for their weights twice
// (matmul_interleaved_lanes.hpp's DecodesInYmm, SecondPrefetch); the same bits. Its other kernels
// are avx512_vnni's.
struct Avx512VnniYmm {
  static constexpr bool kDecodeInYmm = true;
  static constexpr bool kSecondPrefetch = true;
};
}  // namespace

const KernelTable &avx512_vnni_kernels() {
  static const KernelTable table = with_quant_products<Avx512Vnni>(avx512_kernels(), Isa::avx512_vnni, "avx512_vnni");
  return table;
}

const KernelTable &avx512_vnni_ymm_kernels() {
  static const KernelTable table = [] {
    KernelTable ymm = avx512_vnni_kernels();
    ymm.isa = Isa::avx512_vnni_ymm;
    ymm.isa_name = "avx512_vnni_ymm";
    ymm.matmul_q4_kx8 = &simd::matmul_q4_kx8<Avx512VnniYmm>;
    ymm.matmul_q5_kx8 = &simd::matmul_q5_kx8<Avx512VnniYmm>;
    ymm.matmul_q6_kx8 = &simd::matmul_q6_kx8<Avx512VnniYmm>;
    ymm.matmul_q3_kx8 = &simd::matmul_q3_kx8<Avx512VnniYmm>;
    ymm.matmul_q2_kx8 = &simd::matmul_q2_kx8<Avx512VnniYmm>;
    ymm.matmul_q8_0x8 = &simd::matmul_q8_0x8<Avx512VnniYmm>;
    ymm.matmul_q4_0x8 = &simd::matmul_q4_0x8<Avx512VnniYmm>;
    ymm.matmul_q4_1x8 = &simd::matmul_q4_1x8<Avx512VnniYmm>;
    ymm.matmul_q5_0x8 = &simd::matmul_q5_0x8<Avx512VnniYmm>;
    ymm.matmul_q5_1x8 = &simd::matmul_q5_1x8<Avx512VnniYmm>;
    ymm.matmul_iq4_nlx8 = &simd::matmul_iq4_nlx8<Avx512VnniYmm>;
    return ymm;
  }();
  return table;
}

}  // namespace mote::kernels

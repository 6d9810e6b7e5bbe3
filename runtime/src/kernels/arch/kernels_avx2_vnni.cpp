// The avx2 table with its 8-bit products on AVX-VNNI's vpdpbusd (built with the avx2 flags plus
// -mavxvnni; chosen only when the CPU has AVX-VNNI). vpdpbusd adds four unsigned x signed byte
// products straight into an int32 lane: the same exact sums the vpmaddubsw + vpmaddwd pair
// makes, so every result is bit-identical to the avx2 table's.
#include "kernels/arch/arch_tables.hpp"
#include "kernels/arch/simd_table.hpp"

namespace mote::kernels {

namespace {
struct Avx2Vnni {};  // this TU's own instantiations of the quantized kernels
}  // namespace

const KernelTable &avx2_vnni_kernels() {
  static const KernelTable table = with_quant_products<Avx2Vnni>(avx2_kernels(), Isa::avx2_vnni, "avx2_vnni");
  return table;
}

}  // namespace mote::kernels

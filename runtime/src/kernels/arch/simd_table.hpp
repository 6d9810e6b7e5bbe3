// Builds the kernel table of one xsimd arch by expanding the kernel list: each arch TU calls
// this once, which instantiates every kernel template for that arch in that TU alone (the role
// `extern template` plays in xsimd's documented pattern), and a kernel missing from the op
// headers is a compile error rather than a hole in the table.
#pragma once

#include "kernels/attention.hpp"
#include "kernels/elementwise.hpp"
#include "kernels/kernels.hpp"
#include "kernels/matmul.hpp"
#include "kernels/matmul_interleaved.hpp"
#include "kernels/matmul_interleaved_k.hpp"
#include "kernels/matmul_quant.hpp"
#include "kernels/matvec.hpp"
#include "kernels/norm.hpp"
#include "kernels/rope.hpp"
#include "kernels/softmax.hpp"

namespace mote::kernels {

template <class Arch>
constexpr KernelTable make_simd_table(Isa isa, const char *isa_name) {
  return KernelTable{
      isa,
      isa_name,
#define MOTE_KERNEL(name, type) &simd::name<Arch>,
#include "kernels/kernel_list.inc"
#undef MOTE_KERNEL
  };
}

// A table that differs from base only in its 8-bit products: those are instantiated for Tag in
// the calling TU, whose flags (e.g. -mavx512vnni) pick the integer dot-product instructions.
// Tag must be a type of that TU alone (an anonymous-namespace struct): the quantized kernels use
// their Arch parameter only to keep symbols apart, never as an xsimd arch on x86.
template <class Tag>
KernelTable with_quant_products(KernelTable base, Isa isa, const char *isa_name) {
  base.isa = isa;
  base.isa_name = isa_name;
#define MOTE_KERNEL(name, type)
#define MOTE_QUANT_KERNEL(name, type) base.name = &simd::name<Tag>;
#include "kernels/kernel_list.inc"
#undef MOTE_QUANT_KERNEL
#undef MOTE_KERNEL
  return base;
}

}  // namespace mote::kernels

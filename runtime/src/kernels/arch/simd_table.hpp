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

}  // namespace mote::kernels

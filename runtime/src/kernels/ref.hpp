// The scalar reference twins: plain loops that define what every kernel computes. They are the
// table on targets without SIMD and the oracle the SIMD kernels are tested against.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/quant.hpp"

namespace mote::kernels::ref {

// Declares one function per kernel with exactly the type kernel_list.inc gives it
// (`Function<void(int)> f;` declares `void f(int);`).
template <class Signature>
using Function = Signature;

#define MOTE_KERNEL(name, type) Function<type> name;
#include "kernels/kernel_list.inc"
#undef MOTE_KERNEL

}  // namespace mote::kernels::ref

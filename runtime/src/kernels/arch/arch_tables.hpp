// The per-ISA kernel tables, each defined in its own translation unit compiled with that ISA's
// flags (kernels_avx2.cpp, kernels_avx512.cpp, their _vnni variants, kernels_neon.cpp,
// kernels_mve.cpp). Only
// dispatch.cpp calls these, and only after checking that the CPU can run them. Deliberately free
// of xsimd.
#pragma once

#include "kernels/kernels.hpp"

namespace mote::kernels {

#if defined(MOTE_HAVE_AVX2)
const KernelTable &avx2_kernels();
#endif
#if defined(MOTE_HAVE_AVX512)
const KernelTable &avx512_kernels();
#endif
#if defined(MOTE_HAVE_AVX2_VNNI)
const KernelTable &avx2_vnni_kernels();  // kernels_avx2_vnni.cpp: avx2's table, VNNI products
#endif
#if defined(MOTE_HAVE_AVX512_VNNI)
const KernelTable &avx512_vnni_kernels();      // kernels_avx512_vnni.cpp: avx512's, VNNI products
const KernelTable &avx512_vnni_ymm_kernels();  // the same, K decode in ymm (512-bit halves)
#endif
#if defined(MOTE_HAVE_AVX512_AMX)
const KernelTable &avx512_amx_kernels();  // kernels_avx512_amx.cpp: avx512_vnni's, AMX prefill
#endif
#if defined(MOTE_HAVE_NEON)
const KernelTable &neon_kernels();
#endif
#if defined(MOTE_HAVE_MVE)
const KernelTable &mve_kernels();
#endif

}  // namespace mote::kernels

// Chooses a kernel table: x86 asks the CPU once at run time, ARM decides at compile time (NEON;
// Helium on a Cortex-M55), and everything else (e.g. a Cortex-M4) runs the scalar twins.
#include "kernels/arch/arch_tables.hpp"
#include "kernels/kernels.hpp"
#include "kernels/ref.hpp"

// Run-time detection only where x86 SIMD kernels were built (MOTE_SIMD=OFF builds have none).
#if defined(MOTE_HAVE_AVX2) || defined(MOTE_HAVE_AVX512)
#define MOTE_DETECT_X86 1
#include <cpuid.h>
#endif

namespace mote::kernels {
namespace {

constexpr KernelTable kScalarTable = {
    Isa::scalar,
    "scalar",
#define MOTE_KERNEL(name, type) &ref::name,
#include "kernels/kernel_list.inc"
#undef MOTE_KERNEL
};

#if defined(MOTE_DETECT_X86)
struct X86Features {
  bool avx2 = false;
  bool avx512 = false;
};

// Asked of cpuid directly: clang 14's __builtin_cpu_supports does not know "f16c".
bool cpu_has_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
}

X86Features detect_x86_features() {
  __builtin_cpu_init();  // may run before libgcc's own constructor has filled the answers
  X86Features features;
  // The AVX2 kernels also use FMA and F16C (half loads); the AVX-512 ones xsimd's avx512bw arch,
  // whose float horizontal sum needs DQ.
  features.avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c();
  features.avx512 = features.avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                    __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
  return features;
}

const X86Features &x86_features() {
  static const X86Features features = detect_x86_features();
  return features;
}
#endif

}  // namespace

const KernelTable &scalar_kernels() { return kScalarTable; }

const KernelTable *kernels_for(Isa isa) {
  switch (isa) {
    case Isa::scalar:
      return &kScalarTable;
    case Isa::avx2:
#if defined(MOTE_HAVE_AVX2)
      if (x86_features().avx2) return &avx2_kernels();
#endif
      return nullptr;
    case Isa::avx512:
#if defined(MOTE_HAVE_AVX512)
      if (x86_features().avx512) return &avx512_kernels();
#endif
      return nullptr;
    case Isa::neon:
#if defined(MOTE_HAVE_NEON)
      return &neon_kernels();
#else
      return nullptr;
#endif
    case Isa::mve:
#if defined(MOTE_HAVE_MVE)
      return &mve_kernels();
#else
      return nullptr;
#endif
  }
  return nullptr;
}

const KernelTable &best_kernels() {
  static const KernelTable *const best = [] {
    constexpr Isa kFastestFirst[] = {Isa::avx512, Isa::avx2, Isa::neon, Isa::mve};
    for (Isa isa : kFastestFirst) {
      if (const KernelTable *table = kernels_for(isa)) return table;
    }
    return &kScalarTable;
  }();
  return *best;
}

}  // namespace mote::kernels

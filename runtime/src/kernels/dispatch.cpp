// Chooses a kernel table: x86 asks the CPU once at run time, ARM decides at compile time (NEON;
// Helium on a Cortex-M55), and everything else (e.g. a Cortex-M4) runs the scalar twins.
#include <cstdlib>
#include <cstring>

#include "kernels/arch/arch_tables.hpp"
#include "kernels/kernels.hpp"
#include "kernels/ref.hpp"

// Run-time detection only where x86 SIMD kernels were built (MOTE_SIMD=OFF builds have none).
#if defined(MOTE_HAVE_AVX2)  // every x86 table needs AVX2
#define MOTE_DETECT_X86 1
#include <cpuid.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif
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
  bool avx2_vnni = false;      // AVX-VNNI (VEX vpdpbusd)
  bool avx512_vnni = false;    // AVX-512 VNNI (EVEX vpdpbusd, its 256-bit form through VL)
  bool avx512_amx = false;     // and AMX-TILE, AMX-INT8 with the tile state granted by the OS
  bool zmm_in_halves = false;  // 512-bit operations run as two 256-bit halves (AMD Zen 4)
};

// Asked of cpuid directly: clang 14's __builtin_cpu_supports knows neither "f16c" nor "avxvnni".
bool cpuid_bit(unsigned leaf, unsigned subleaf, int reg, unsigned bit) {
  unsigned r[4] = {0, 0, 0, 0};  // eax, ebx, ecx, edx
  if (__get_cpuid_count(leaf, subleaf, &r[0], &r[1], &r[2], &r[3]) == 0) return false;
  return (r[reg] & bit) != 0;
}
constexpr int kEax = 0, kEcx = 2, kEdx = 3;

// AMX's 8 KB of tile data is saved by the OS only for a process that asks (Linux 5.16+:
// arch_prctl ARCH_REQ_XCOMP_PERM for XTILEDATA, once, for every thread); a tile instruction
// without it faults. XCR0 bits 17-18 say the OS manages the tile state at all.
bool amx_granted() {
#if defined(__linux__) && defined(SYS_arch_prctl)
  unsigned xcr0_low = 0, xcr0_high = 0;
  __asm__("xgetbv" : "=a"(xcr0_low), "=d"(xcr0_high) : "c"(0));
  constexpr unsigned kTileState = 3u << 17, kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  if ((xcr0_low & kTileState) != kTileState) return false;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

// AMD family 19h: Zen 3 and Zen 4, of which Zen 4 alone has AVX-512, and runs each 512-bit
// operation as two 256-bit halves (its vpdpbusd and vpermd on zmm one per cycle, on ymm two).
bool amd_family_19h() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0, &a, &b, &c, &d) == 0) return false;
  const bool amd = b == 0x68747541u && d == 0x69746e65u && c == 0x444d4163u;  // "Auth" "enti" "cAMD"
  if (!amd || __get_cpuid(1, &a, &b, &c, &d) == 0) return false;
  const unsigned base = (a >> 8) & 0xFu, extended = (a >> 20) & 0xFFu;
  return (base == 0xFu ? base + extended : base) == 0x19u;
}

X86Features detect_x86_features() {
  __builtin_cpu_init();  // may run before libgcc's own constructor has filled the answers
  X86Features features;
  // The AVX2 kernels also use FMA and F16C (half loads); the AVX-512 ones xsimd's avx512bw arch,
  // whose float horizontal sum needs DQ. "avx2" and "avx512f" also mean the OS saves the state.
  features.avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpuid_bit(1, 0, kEcx, bit_F16C);
  features.avx512 = features.avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                    __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
  features.avx2_vnni = features.avx2 && cpuid_bit(7, 1, kEax, 1u << 4);             // CPUID.(7,1):EAX AVX-VNNI
  features.avx512_vnni = features.avx512 && cpuid_bit(7, 0, kEcx, 1u << 11);        // CPUID.(7,0):ECX AVX512_VNNI
  features.avx512_amx = features.avx512_vnni && cpuid_bit(7, 0, kEdx, 1u << 24) &&  // CPUID.(7,0):EDX AMX-TILE
                        cpuid_bit(7, 0, kEdx, 1u << 25) && amx_granted();           // and AMX-INT8
  features.zmm_in_halves = features.avx512 && amd_family_19h();
  return features;
}

const X86Features &x86_features() {
  static const X86Features features = detect_x86_features();
  return features;
}
#endif

}  // namespace

const KernelTable &scalar_kernels() { return kScalarTable; }

#if defined(MOTE_DETECT_X86) || defined(MOTE_HAVE_NEON)  // the builds that read MOTE_ISA
namespace {
// The table named `name` when this build and CPU have it, else null.
const KernelTable *kernels_for_name(const char *name) {
  for (Isa isa : kIsasFastestFirst) {
    const KernelTable *table = kernels_for(isa);
    if (table != nullptr && std::strcmp(table->isa_name, name) == 0) return table;
  }
  return nullptr;
}
}  // namespace
#endif

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
    case Isa::avx2_vnni:
#if defined(MOTE_HAVE_AVX2_VNNI)
      if (x86_features().avx2_vnni) return &avx2_vnni_kernels();
#endif
      return nullptr;
    case Isa::avx512_amx:
#if defined(MOTE_HAVE_AVX512_AMX)
      if (x86_features().avx512_amx) return &avx512_amx_kernels();
#endif
      return nullptr;
    case Isa::avx512_vnni:
#if defined(MOTE_HAVE_AVX512_VNNI)
      if (x86_features().avx512_vnni) return &avx512_vnni_kernels();
#endif
      return nullptr;
    case Isa::avx512_vnni_ymm:
#if defined(MOTE_HAVE_AVX512_VNNI)
      if (x86_features().avx512_vnni) return &avx512_vnni_ymm_kernels();
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

namespace {
// Tables MOTE_ISA may name that the automatic choice passes over on this CPU: avx512_vnni where
// 512-bit operations run as halves (there avx512_vnni_ymm decodes faster: isa_list.inc), and
// avx512_vnni_ymm everywhere else.
bool passed_over([[maybe_unused]] Isa isa) {
#if defined(MOTE_DETECT_X86)
  if (isa == Isa::avx512_vnni) return x86_features().zmm_in_halves;
  if (isa == Isa::avx512_vnni_ymm) return !x86_features().zmm_in_halves;
#endif
  return false;
}
}  // namespace

const KernelTable &best_kernels() {
  static const KernelTable *const best = [] {
  // MOTE_ISA=name (a table of isa_list.inc this CPU runs) picks that table, e.g. to compare
  // avx512_amx with avx512_vnni on one machine; an unknown or unavailable name is ignored.
#if defined(MOTE_DETECT_X86) || defined(MOTE_HAVE_NEON)
    if (const char *name = std::getenv("MOTE_ISA")) {
      if (const KernelTable *table = kernels_for_name(name)) return table;
    }
#endif
    for (Isa isa : kIsasFastestFirst) {
      if (passed_over(isa)) continue;
      if (const KernelTable *table = kernels_for(isa)) return table;
    }
    return &kScalarTable;
  }();
  return *best;
}

}  // namespace mote::kernels

// Shared SIMD building blocks for the kernel headers: batch aliases, the horizontal sum, and
// IEEE half loads (xsimd 8.1 has no half type, so each ISA gets a few intrinsics here).
//
// Only the per-ISA translation units in kernels/arch/ include this (it pulls in xsimd).
// Everything here is a template or overload on the xsimd arch, so two TUs built with different
// flags never emit the same symbol and the linker cannot swap an AVX-512 copy into the AVX2
// path. For the same reason kernel code calls __builtin_* math rather than the inline std::
// wrappers, and uses core/fp16.hpp only on 32-bit ARM, which has a single NEON TU (no other
// flags to collide with).
#pragma once

#include <cstddef>
#include <cstdint>
#include <xsimd/xsimd.hpp>

#if defined(__F16C__) || defined(__AVX512F__)
#include <immintrin.h>
#endif
#if defined(__ARM_NEON)
#include <arm_neon.h>
#if !defined(__aarch64__) && !(defined(__ARM_FP) && (__ARM_FP & 2))
#include "core/fp16.hpp"  // 32-bit ARM without half conversions; no per-TU flags there
#endif
#endif

namespace mote::kernels::simd {

// Where the x8 layouts' weight prefetch (prefetch_ahead) puts its lines: __builtin_prefetch's
// locality 2 is prefetcht1 on x86 (into L2), 3 is prefetcht0 (into L1 too). x86 takes L2: with
// prefetcht0 an AMD Zen 4 core read q6_kx8 from DRAM at 11 GB/s (bench_matvec 151936x1536), with
// prefetcht1 at 23, and the 1.5B decoded at 15.7-15.9 -> 23.0-23.7 tok/s (bench/README.md log,
// 2026-12-07 "a Zen 4 host"); on Zen 5 an earlier try measured no difference. ARM keeps L1 (not
// measured), and so do the plain layouts' row tiles (matmul_quant.hpp: with L2, Zen 4's plain
// q4_k fell from 13.5 to 7 GB/s).
#if defined(__x86_64__) || defined(__i386__)
constexpr int kWeightPrefetchLocality = 2;
#else
constexpr int kWeightPrefetchLocality = 3;
#endif

template <class Arch>
using Floats = xsimd::batch<float, Arch>;

// Sum of all lanes (xsimd 8.1 calls it hadd, later versions reduce_add).
template <class Arch>
inline float reduce_sum(Floats<Arch> v) {
  return xsimd::hadd(v);
}

// out[j] = the sum of rows[j]'s lanes, for all Floats<Arch>::size rows at once (a transposing
// reduction: a few instructions a row instead of a horizontal sum each).
template <class Arch>
inline void sum_rows(const Floats<Arch> *rows, float *out) {
  xsimd::haddp(rows).store_unaligned(out);
}

// The rows one reduction takes at the least: sum_group_rows sums that many (fewer than a batch
// width where the ISA sums a smaller group for less work), each in sum_rows' very order.
template <class Arch>
constexpr size_t sum_group() {
  return Floats<Arch>::size;
}
template <class Arch>
inline void sum_group_rows(const Floats<Arch> *rows, float *out) {
  sum_rows<Arch>(rows, out);
}

#if XSIMD_WITH_AVX512BW
// xsimd 8.1's AVX-512 haddp returns its lanes permuted (2-5 and 10-13 swapped in pairs; the AVX,
// SSE and NEON ones are right): fold each row to 256 bits, then an AVX haddp per 8 rows. Plain
// avx2 arch here, so these instantiations never share a symbol with the AVX2 TU's (fma3<avx2>).
inline void sum_8_rows(const Floats<xsimd::avx512bw> *rows, float *out) {
  using Half = Floats<xsimd::avx2>;
  Half folded[8];
  for (size_t j = 0; j < 8; ++j) {
    const __m512 row = rows[j];
    folded[j] = _mm256_add_ps(_mm512_castps512_ps256(row), _mm512_extractf32x8_ps(row, 1));
  }
  xsimd::haddp(folded).store_unaligned(out);
}
template <>
inline void sum_rows<xsimd::avx512bw>(const Floats<xsimd::avx512bw> *rows, float *out) {
  sum_8_rows(rows, out);
  sum_8_rows(rows + 8, out + 8);
}
// A tile's 24 sums are 3 groups of 8, not 2 of 16 with 8 rows of zeros (the same sums).
template <>
constexpr size_t sum_group<xsimd::avx512bw>() {
  return 8;
}
template <>
inline void sum_group_rows<xsimd::avx512bw>(const Floats<xsimd::avx512bw> *rows, float *out) {
  sum_8_rows(rows, out);
}
#endif

// Largest lane.
template <class Arch>
inline float reduce_max(Floats<Arch> v) {
  alignas(64) float lanes[Floats<Arch>::size];
  v.store_aligned(lanes);
  float max = lanes[0];
  for (size_t i = 1; i < Floats<Arch>::size; ++i) max = lanes[i] > max ? lanes[i] : max;
  return max;
}

// --- IEEE half: load_halves(arch, p) reads one batch of halves as floats, half_to_float(arch, h)
// converts one (for scalar tails). Both conversions are exact.
#if XSIMD_WITH_FMA3_AVX2 && defined(__F16C__)
inline Floats<xsimd::fma3<xsimd::avx2>> load_halves(xsimd::fma3<xsimd::avx2>, const uint16_t *p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
}
inline float half_to_float(xsimd::fma3<xsimd::avx2>, uint16_t h) { return _cvtsh_ss(h); }
#endif

#if XSIMD_WITH_AVX512BW && defined(__F16C__)
inline Floats<xsimd::avx512bw> load_halves(xsimd::avx512bw, const uint16_t *p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)));
}
inline float half_to_float(xsimd::avx512bw, uint16_t h) { return _cvtsh_ss(h); }
#endif

#if XSIMD_WITH_NEON64
inline Floats<xsimd::neon64> load_halves(xsimd::neon64, const uint16_t *p) {
  return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p)));
}
inline float half_to_float(xsimd::neon64, uint16_t h) {
  return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0);
}
#elif XSIMD_WITH_NEON
#if defined(__ARM_FP) && (__ARM_FP & 2)
inline Floats<xsimd::neon> load_halves(xsimd::neon, const uint16_t *p) {
  return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p)));
}
inline float half_to_float(xsimd::neon, uint16_t h) {
  return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0);
}
#else
inline float half_to_float(xsimd::neon, uint16_t h) { return fp16_to_f32(h); }
inline Floats<xsimd::neon> load_halves(xsimd::neon, const uint16_t *p) {
  alignas(16) float lanes[4];
  for (size_t i = 0; i < 4; ++i) lanes[i] = fp16_to_f32(p[i]);
  return Floats<xsimd::neon>::load_aligned(lanes);
}
#endif
#endif

// --- int8: load_int8s(arch, p) reads exactly one batch of int8 values as floats (8-bit KV cache).
#if XSIMD_WITH_FMA3_AVX2
inline Floats<xsimd::fma3<xsimd::avx2>> load_int8s(xsimd::fma3<xsimd::avx2>, const int8_t *p) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(p))));
}
#endif
#if XSIMD_WITH_AVX512BW
inline Floats<xsimd::avx512bw> load_int8s(xsimd::avx512bw, const int8_t *p) {
  return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p))));
}
#endif
#if XSIMD_WITH_NEON64 || XSIMD_WITH_NEON
// Four bytes, no more (a wider load could run past the cache's end).
template <class Arch>
inline Floats<Arch> load_int8s_neon(const int8_t *p) {
  int32_t word;
  __builtin_memcpy(&word, p, sizeof word);
  const int8x8_t bytes = vreinterpret_s8_s32(vdup_n_s32(word));
  return vcvtq_f32_s32(vmovl_s16(vget_low_s16(vmovl_s8(bytes))));
}
#if XSIMD_WITH_NEON64
inline Floats<xsimd::neon64> load_int8s(xsimd::neon64, const int8_t *p) { return load_int8s_neon<xsimd::neon64>(p); }
#else
inline Floats<xsimd::neon> load_int8s(xsimd::neon, const int8_t *p) { return load_int8s_neon<xsimd::neon>(p); }
#endif
#endif

// Weight loads over any element type, so one kernel body serves f32, f16 and int8 elements.
template <class Arch>
inline Floats<Arch> load_floats(const float *p) {
  return Floats<Arch>::load_unaligned(p);
}
template <class Arch>
inline Floats<Arch> load_floats(const uint16_t *p) {
  return load_halves(Arch{}, p);
}
template <class Arch>
inline Floats<Arch> load_floats(const int8_t *p) {
  return load_int8s(Arch{}, p);
}
template <class Arch>
inline float to_float(int8_t value) {
  return static_cast<float>(value);
}
template <class Arch>
inline float to_float(float value) {
  return value;
}
template <class Arch>
inline float to_float(uint16_t half) {
  return half_to_float(Arch{}, half);
}

}  // namespace mote::kernels::simd

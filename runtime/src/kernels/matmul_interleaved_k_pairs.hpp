// The K types' sub-block pairs on AVX-512 VNNI (matmul_interleaved_k.hpp's super_block_paired):
// two sub-blocks of one group side by side in a zmm, with their unpacking and activation helpers.
#pragma once

#include <cstddef>

#include "kernels/matmul_interleaved.hpp"
#include "kernels/matmul_quant.hpp"
#include "kernels/quant.hpp"

namespace mote::kernels::simd {

// log2 of a power of two (the code offsets of the types scaled per 16 values).
constexpr int log2_exact(int n) { return n <= 1 ? 0 : 1 + log2_exact(n / 2); }

#if defined(__AVX512BW__) && defined(__AVX512VNNI__)
// Decoding (one token) on AVX-512 VNNI, two sub-blocks of one group side by side in a zmm (rows
// 0-7 of each in a half), as BlockPairs does for two blocks: sub-blocks that share their bytes are
// read once into both halves (a 256-bit broadcast load) and unpacked by per-half shifts and masks,
// so each unpack and dot serves two sub-blocks over one weight stream. The exact int32 sums then
// take their float steps on the 8 rows in sub-block order: Rows8's bits.
inline __m512i zmm_halves(__m256i low, __m256i high) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(low), high, 1);
}
inline __m512i zmm_halves16(int low, int high) {
  return zmm_halves(_mm256_set1_epi16(static_cast<int16_t>(low)), _mm256_set1_epi16(static_cast<int16_t>(high)));
}
// The 32-byte quad `quad` of a group block in both halves.
inline __m512i broadcast_quad(const void *block, size_t at) {
  return _mm512_broadcast_i64x4(
      _mm256_loadu_si256(reinterpret_cast<const __m256i *>(static_cast<const char *>(block) + at)));
}
// Activation blocks xb_low and xb_high in the halves (quad k of each: BlockPairs::quad).
inline __m512i activation_halves(const Q8Activations &x, size_t xb_low, size_t xb_high) {
  return zmm_halves(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(x.q + xb_low * kQuantBlock)),
                    _mm256_loadu_si256(reinterpret_cast<const __m256i *>(x.q + xb_high * kQuantBlock)));
}

// The activation sums of 16-value half e of blocks xb_low and xb_high, in the halves.
inline __m512i half_sums(const Q8Activations &x, size_t xb_low, size_t xb_high, size_t e) {
  return zmm_halves(_mm256_set1_epi32(x.half_sum[2 * xb_low + e]), _mm256_set1_epi32(x.half_sum[2 * xb_high + e]));
}

// Types scaled per 16 values (q6_k, q3_k, q2_k), sub-blocks in the halves at activation blocks
// xb_low[t] and xb_low[t] + xb_step of K tokens: sums[t] per row sc0 * h0 + sc1 * h1, h the dot of
// (code - kOffset) with each 16-value half's activations (fold_sixteen's integers); codes(k)
// unpacks quad k once for every token (each as its dots need it).
template <class Arch, int kOffset, size_t K, class Codes>
inline void paired_sixteen(__m512i *sums, Codes codes, __m512i sc0, __m512i sc1, const Q8Activations &x,
                           const size_t *xb_low, size_t xb_step) {
  __m512i xs[K], h[K][2];
#pragma GCC unroll 4
  for (size_t t = 0; t < K; ++t) {
    xs[t] = activation_halves(x, xb_low[t], xb_low[t] + xb_step);
    h[t][0] = h[t][1] = _mm512_setzero_si512();
  }
#pragma GCC unroll 8
  for (size_t k = 0; k < 8; ++k) {
    const __m512i c = codes(k);
#pragma GCC unroll 4
    for (size_t t = 0; t < K; ++t) h[t][k / 4] = _mm512_dpbusd_epi32(h[t][k / 4], c, BlockPairs<Arch>::quad(xs[t], k));
  }
#pragma GCC unroll 4
  for (size_t t = 0; t < K; ++t) {
    if constexpr (kOffset != 0) {
#pragma GCC unroll 2
      for (size_t e = 0; e < 2; ++e) {
        const __m512i offsets = half_sums(x, xb_low[t], xb_low[t] + xb_step, e);
        h[t][e] = _mm512_sub_epi32(h[t][e], _mm512_slli_epi32(offsets, log2_exact(kOffset)));
      }
    }
    sums[t] = _mm512_add_epi32(_mm512_mullo_epi32(sc0, h[t][0]), _mm512_mullo_epi32(sc1, h[t][1]));
  }
}

// acc + sums * d * d_x of sub-block s's activation block, Rows8's float step on half `half`.
template <class W>
inline typename W::Floats add_paired_rows(typename W::Floats acc, __m512i sums, size_t half, typename W::Floats d,
                                          const Q8Activations &x, size_t xb) {
  const __m256i rows = half == 0 ? _mm512_castsi512_si256(sums) : _mm512_extracti64x4_epi64(sums, 1);
  return W::fma(W::to_float(rows), W::mul(d, W::splat(x.scale[xb])), acc);
}
#endif

}  // namespace mote::kernels::simd

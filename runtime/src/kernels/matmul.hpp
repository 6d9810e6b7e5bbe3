// Batched matrix-vector products over xsimd batches: prompt prefill multiplies several tokens
// by each weight matrix, so a tile of rows x tokens shares every weight load (and f16
// conversion) across its tokens and every x load across its rows.
//
// Each (row, token) result follows matvec.hpp's fixed order exactly: one accumulator takes the
// SIMD blocks in order, it is reduced (reduce_rows), then the tail columns are added in order
// (finish_row). So it is bit-identical to matvec's result for that row and token, whatever the tile, the row
// split or the number of tokens.
#pragma once

#include "kernels/matvec.hpp"
#include "kernels/simd.hpp"

namespace mote::kernels::simd {

// Vector registers a tile may fill: 32 on AVX-512 (64-byte batches) and AArch64, 16 on AVX2
// and 32-bit ARM NEON.
template <class Arch>
constexpr size_t vector_registers() {
#if defined(__aarch64__)
  return 32;
#else
  return Floats<Arch>::size * sizeof(float) == 64 ? 32 : 16;
#endif
}

// Registers a tile of r rows x k tokens needs: r * k accumulators, plus r weight batches and
// one spare on x86 (the x load folds into the FMA), plus the r + k operands on ARM (no memory
// operands).
template <class Arch>
constexpr size_t tile_registers(size_t r, size_t k) {
#if defined(__x86_64__) || defined(__i386__)
  return r * k + r + 1;
#else
  return r * k + r + k;
#endif
}

// Rows per tile of k tokens: as many as fit, up to 4 (matvec's dot_4_rows when k is 1).
// AVX2: 4 x 1..2, 3 x 3..4; AVX-512: 4 x 1..6; AArch64: 4 x 1..5; 32-bit ARM: 4 x 1..2, 3 x 3.
template <class Arch>
constexpr size_t tile_rows(size_t k_tokens) {
  size_t r = 4;
  while (r > 1 && tile_registers<Arch>(r, k_tokens) > vector_registers<Arch>()) --r;
  return r;
}

// Tokens per full tile: each weight batch loaded (and converted, for f16) serves this many.
// AVX2 3 x 4 fills its 16 registers; 32-register ISAs take 4 x 6; 32-bit ARM 3 x 3.
template <class Arch>
constexpr size_t tile_tokens() {
#if defined(__x86_64__) || defined(__i386__)
  return vector_registers<Arch>() >= 32 ? 6 : 4;
#else
  return vector_registers<Arch>() >= 32 ? 5 : 3;
#endif
}

// The weight rows one pass over a token tile keeps hot in L2 (they are reread once per tile
// while its x rows stay in L1), so the weights come from memory once per call.
constexpr size_t kRowBlockBytes = 128 * 1024;

// Weight tiles a first pass fetches ahead (see dot_tile's kPrefetch).
constexpr size_t kPrefetchTilesAhead = 2;

// out[t * out_stride + r] = dot(w + r * row_stride, x + t * cols) for r < R, t < T.
// kPrefetch: this pass reads the rows from memory (the first token tile over a row block), so
// it prefetches the rows kPrefetchTilesAhead tiles below at its own pace: those R rows are one
// contiguous run (rows are row_stride == cols apart), consumed R times as fast as one row. The
// hardware prefetcher alone leaves the FMAs waiting on the weight loads (perf: most samples on
// them). A prefetch past the matrix's end is harmless (it never faults).
template <class Arch, size_t R, size_t T, bool kPrefetch, class Weight>
inline void dot_tile(float *out, size_t out_stride, const Weight *w, size_t row_stride, const float *x, size_t cols) {
  using Batch = Floats<Arch>;
  constexpr size_t width = Batch::size;
  const size_t simd_end = cols - cols % width;
  const char *ahead_rows = reinterpret_cast<const char *>(w + kPrefetchTilesAhead * R * row_stride);
  constexpr size_t kStepBytes = R * width * sizeof(Weight);
  Batch acc[R][T], weights[R];
#pragma GCC unroll 16
  for (size_t r = 0; r < R; ++r) {
#pragma GCC unroll 16
    for (size_t t = 0; t < T; ++t) acc[r][t] = Batch(0.0f);
  }
  // acc[r][t] += weights[r] * x[t][c .. c + width), each weight block loaded once for T tokens.
  for (size_t c = 0; c < simd_end; c += width) {
    if constexpr (kPrefetch) {
      const char *ahead = ahead_rows + R * c * sizeof(Weight);
#pragma GCC unroll 16
      for (size_t b = 0; b < kStepBytes; b += 64) __builtin_prefetch(ahead + b);
    }
#pragma GCC unroll 16
    for (size_t r = 0; r < R; ++r) weights[r] = load_floats<Arch>(w + r * row_stride + c);
#pragma GCC unroll 16
    for (size_t t = 0; t < T; ++t) {
      const Batch xt = Batch::load_unaligned(x + t * cols + c);
#pragma GCC unroll 16
      for (size_t r = 0; r < R; ++r) acc[r][t] = xsimd::fma(weights[r], xt, acc[r][t]);
    }
  }
  float sums[R][T];
  reduce_rows<Arch>(&acc[0][0], R * T, &sums[0][0]);
#pragma GCC unroll 16
  for (size_t r = 0; r < R; ++r) {
#pragma GCC unroll 16
    for (size_t t = 0; t < T; ++t) {
      out[t * out_stride + r] = finish_row<Arch>(sums[r][t], w + r * row_stride, x + t * cols, simd_end, cols);
    }
  }
}

// Every row of a block against K tokens: tiles of tile_rows(K) rows, then single rows.
template <class Arch, size_t K, bool kPrefetch, class Weight>
inline void dot_token_tile(float *out, size_t out_stride, const Weight *w, const float *x, size_t rows, size_t cols) {
  constexpr size_t R = tile_rows<Arch>(K);
  size_t r = 0;
  for (; r + R <= rows; r += R) {
    dot_tile<Arch, R, K, kPrefetch>(out + r, out_stride, w + r * cols, cols, x, cols);
  }
  if constexpr (R > 1) {
    for (; r < rows; ++r) dot_tile<Arch, 1, K, false>(out + r, out_stride, w + r * cols, cols, x, cols);
  }
}

// The last n_tokens < tile_tokens() tokens as one tile of exactly that many (K counts down).
template <class Arch, size_t K, bool kPrefetch, class Weight>
inline void dot_token_rest(float *out, size_t out_stride, const Weight *w, const float *x, size_t rows, size_t cols,
                           size_t n_tokens) {
  if (n_tokens == K) {
    dot_token_tile<Arch, K, kPrefetch>(out, out_stride, w, x, rows, cols);
  } else if constexpr (K > 1) {
    dot_token_rest<Arch, K - 1, kPrefetch>(out, out_stride, w, x, rows, cols, n_tokens);
  }
}

template <class Arch, class Weight>
inline void matmul(float *out, size_t out_stride, const Weight *w, const float *x, size_t rows, size_t cols,
                   size_t n_tokens) {
  constexpr size_t T = tile_tokens<Arch>();
  // Blocks of whole tiles: a leftover row per block would run as a 1-row tile, 3-4x slower.
  constexpr size_t R = tile_rows<Arch>(T);
  const size_t row_bytes = cols * sizeof(Weight);
  const size_t block_rows = row_bytes < kRowBlockBytes / R ? kRowBlockBytes / row_bytes / R * R : R;
  for (size_t r0 = 0; r0 < rows; r0 += block_rows) {
    const size_t n_rows = rows - r0 < block_rows ? rows - r0 : block_rows;
    float *block_out = out + r0;
    const Weight *block_w = w + r0 * cols;
    // The first token tile streams the block's rows in from memory; later ones find them cached.
    size_t t = 0;
    if (n_tokens >= T) {
      dot_token_tile<Arch, T, true>(block_out, out_stride, block_w, x, n_rows, cols);
      t = T;
    } else {
      dot_token_rest<Arch, T - 1, true>(block_out, out_stride, block_w, x, n_rows, cols, n_tokens);
      t = n_tokens;
    }
    for (; t + T <= n_tokens; t += T) {
      dot_token_tile<Arch, T, false>(block_out + t * out_stride, out_stride, block_w, x + t * cols, n_rows, cols);
    }
    if (t < n_tokens) {
      dot_token_rest<Arch, T - 1, false>(block_out + t * out_stride, out_stride, block_w, x + t * cols, n_rows, cols,
                                         n_tokens - t);
    }
  }
}

template <class Arch>
void matmul_f32(float *out, size_t out_stride, const float *w, const float *x, size_t rows, size_t cols,
                size_t n_tokens) {
  matmul<Arch>(out, out_stride, w, x, rows, cols, n_tokens);
}

template <class Arch>
void matmul_f16(float *out, size_t out_stride, const uint16_t *w, const float *x, size_t rows, size_t cols,
                size_t n_tokens) {
  matmul<Arch>(out, out_stride, w, x, rows, cols, n_tokens);
}

}  // namespace mote::kernels::simd

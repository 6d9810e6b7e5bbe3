// The K types' x8 super-block steps on NEON (KGroupOps for NeonRows8): a part of
// matmul_interleaved_k.hpp, included by it where these steps belong (after the primary template
// and the shared helpers, before the tiles that use them); not a header of its own.
#pragma once

namespace mote::kernels::simd {

#if defined(__ARM_NEON)
// NEON: a q register holds 4 bytes of each of 4 rows, so every 32-byte row register is two
// halves (rows 0-3, rows 4-7) and each row sum an int32x4_t pair. A sub-block's 32 activation
// bytes are two registers, loaded once and shared by both halves; dot_lane takes each 4-byte quad
// from them by lane (sdot by element). The super-block is unrolled whole, so its scale vectors
// and constants are made once per super-block, and each code register is made with one to three
// instructions (bit-select and shift-insert put the high bits in place).
// (row_bytes, word_byte, shift_bytes, crumb, mls_lane, block_bytes, step_fence: matmul_interleaved.hpp.)
// x86's fold_sixteen on 4 rows: sum = sc0 * h0 + sc1 * h1 with the halves' exact dots of the
// unsigned codes, less the offset times sc * each half's activation sum (offsets: super_half_sums).
template <class Arch>
inline void fold_sixteen(float32x4_t &lanes, const int8x16_t *codes, int32x4_t sc0, int32x4_t sc1, float32x4_t d,
                         const BlockBytes &xs, const int32x4_t *offsets, size_t s, float d_x) {
  int32x4_t sums =
      vmlaq_s32(vmulq_s32(sc0, row_dots<Arch, 4>(codes, xs.q)), sc1, row_dots<Arch, 4, 4>(codes + 4, xs.q));
  if (offsets != nullptr) {
    sums = mls_lane(sums, sc0, offsets[s / 2], (2 * s) % 4);
    sums = mls_lane(sums, sc1, offsets[s / 2], (2 * s + 1) % 4);
  }
  lanes = QuantIsa<Arch>::fma(lanes, vcvtq_f32_s32(sums), vmulq_n_f32(d, d_x));
}

// fold_sixteen of sub-block s for K tokens on one half's rows (q6_k, q3_k: each token's offsets
// from its half sums).
template <class Arch, size_t K>
inline void fold_sixteen_tokens(NeonLanes *acc, size_t half, const int8x16_t *codes, int32x4_t sc0, int32x4_t sc1,
                                float32x4_t d, const Q8Activations &x, const int32x4_t (*offsets)[4], const size_t *xb0,
                                size_t s) {
#pragma GCC unroll 8
  for (size_t t = 0; t < K; ++t) {
    const size_t xb = xb0[t] + s;
    fold_sixteen<Arch>(half == 0 ? acc[t].lo : acc[t].hi, codes, sc0, sc1, d, block_bytes(x, xb), offsets[t], s,
                       x.scale[xb]);
  }
}

// One group's 8 rows as two q registers' lanes.
template <class Arch>
struct NeonRows8 {
  using Floats = NeonLanes;
  static constexpr size_t kGroups = 1;
  static Floats fzero() { return QuantIsa<Arch>::zero(); }
};

template <class Arch, class Group, class W>
struct KMinGroupOps {
  using Isa = QuantIsa<Arch>;
  static constexpr bool kFifthBit = std::is_same_v<Group, BlockQ5_Kx8>;
  static constexpr size_t kQsAt = kFifthBit ? 12 * 8 + 32 * 8 : 12 * 8;

  // Sub-blocks 2p (low nibbles, lo) and 2p + 1 (high nibbles, hi) of one half's 4 rows, quad k
  // in register k; q5's fifth bit (bit s of qh) moved to bit 4 and bit-selected in.
  static void pair_codes(int8x16_t *lo, int8x16_t *hi, const Group &g, size_t p, size_t half) {
#pragma GCC unroll 8
    for (size_t k = 0; k < 8; ++k) {
      const uint8x16_t v = row_bytes(g.rest + kQsAt + 256 * p + 32 * k, half);
      uint8x16_t low = vandq_u8(v, vdupq_n_u8(0x0F)), high = vshrq_n_u8(v, 4);
      if constexpr (kFifthBit) {
        const uint8x16_t qh = row_bytes(g.rest + 96 + 32 * k, half), bit4 = vdupq_n_u8(0x10);
        low = vbslq_u8(bit4, shift_bytes(qh, 4 - 2 * static_cast<int>(p)), low);
        high = vbslq_u8(bit4, shift_bytes(qh, 3 - 2 * static_cast<int>(p)), high);
      }
      lo[k] = vreinterpretq_s8_u8(low);
      hi[k] = vreinterpretq_s8_u8(high);
    }
  }

  template <size_t K>
  static void super_block(NeonLanes *acc, NeonLanes *acc_mins, const Group &g, size_t, const Q8Activations &x_in,
                          const size_t *xb0) {
    const Q8Activations x = x_in;  // its pointers in registers over the step fences
    // -dmin * m is -(dmin * m) to the bit (rounding is symmetric), so dmin is negated once.
    float32x4_t d[2], negative_dmin[2];
    load_scales8<Arch, Group>(g.fields, d);
    load_scales8<Arch, Group>(g.fields + 8, negative_dmin);
    // One half after the other: what stays live across a half (its scales, factors and
    // accumulators) then fits the 32 registers with the codes of a sub-block pair.
#pragma GCC unroll 2
    for (size_t half = 0; half < 2; ++half) {
      const float32x4_t negative_dmin_half = vnegq_f32(negative_dmin[half]);
      // k_scales_mins on 4 rows' words at once, as the x86 kernel does on 8.
      const uint32x4_t a = row_words(g.rest, half), b = row_words(g.rest + 32, half), c = row_words(g.rest + 64, half);
      const uint32x4_t six = vdupq_n_u32(0x3F3F3F3Fu), four = vdupq_n_u32(0x0F0F0F0Fu), top = vdupq_n_u32(0x30303030u);
      const uint32x4_t scales[2] = {vandq_u32(a, six),
                                    vorrq_u32(vandq_u32(c, four), vandq_u32(vshrq_n_u32(a, 2), top))};
      const uint32x4_t mins[2] = {vandq_u32(b, six),
                                  vorrq_u32(vandq_u32(vshrq_n_u32(c, 4), four), vandq_u32(vshrq_n_u32(b, 2), top))};
#pragma GCC unroll 4
      for (size_t p = 0; p < 4; ++p) {
        step_fence();
        int8x16_t codes[2][8];
        pair_codes(codes[0], codes[1], g, p, half);
#pragma GCC unroll 2
        for (size_t i = 0; i < 2; ++i) {
          const size_t s = 2 * p + i;
          const float32x4_t d_sub = vmulq_f32(d[half], word_byte(scales[s / 4], s % 4));
          const float32x4_t m_sub = vmulq_f32(negative_dmin_half, word_byte(mins[s / 4], s % 4));
#pragma GCC unroll 8
          for (size_t t = 0; t < K; ++t) {
            const size_t xb = xb0[t] + s;
            const int32x4_t sums = row_dots<Arch, 8>(codes[i], block_bytes(x, xb).q);
            float32x4_t &lanes = half == 0 ? acc[t].lo : acc[t].hi;
            float32x4_t &min_lanes = half == 0 ? acc_mins[t].lo : acc_mins[t].hi;
            lanes = Isa::fma(lanes, vcvtq_f32_s32(sums), vmulq_n_f32(d_sub, x.scale[xb]));
            min_lanes = Isa::fma(min_lanes, m_sub, vdupq_n_f32(x.scaled_sum[xb]));
          }
        }
      }
    }
  }
};

template <class Arch, class W>
struct KGroupOps<Arch, BlockQ6_Kx8, W> {
  // Sub-block 4 hh + j of one half's 4 rows: unsigned 6-bit codes (the offset 32 is taken off
  // through the half sums), the ql nibble and qh bits 2j, 2j + 1 put together by one
  // shift-insert (sli keeps the low nibble, sri the bits above it).
  static void sub_block_codes(int8x16_t *codes, const BlockQ6_Kx8 &g, size_t hh, size_t j, size_t half) {
#pragma GCC unroll 8
    for (size_t k = 0; k < 8; ++k) {
      const uint8x16_t ql = row_bytes(g.rest + 32 * (16 * hh + 8 * (j % 2) + k), half);
      const uint8x16_t qh = row_bytes(g.rest + 1024 + 32 * (8 * hh + k), half);
      uint8x16_t code;
      if (j < 2) {
        code = vsliq_n_u8(ql, crumb(qh, j), 4);
      } else {
        // qh bits 2j, 2j + 1 at bits 4, 5 and nothing above, then ql's high nibble below them.
        code = vsriq_n_u8(j == 2 ? vandq_u8(qh, vdupq_n_u8(0x30)) : vshrq_n_u8(qh, 2), ql, 4);
      }
      codes[k] = vreinterpretq_s8_u8(code);
    }
  }

  template <size_t K>
  static void super_block(NeonLanes *acc, NeonLanes *, const BlockQ6_Kx8 &g, size_t, const Q8Activations &x_in,
                          const size_t *xb0) {
    const Q8Activations x = x_in;  // its pointers in registers over the step fences
    float32x4_t d[2];
    load_scales8<Arch, BlockQ6_Kx8>(g.fields, d);
    int32x4_t offsets[K][4];
    for (size_t t = 0; t < K; ++t) super_half_sums<5>(offsets[t], x, xb0[t]);
#pragma GCC unroll 2
    for (size_t half = 0; half < 2; ++half) {
      int32x4_t words[4];  // the int8 scale of 16-value sub-block i: byte i % 4 of words[i / 4]
      for (size_t i = 0; i < 4; ++i) words[i] = vreinterpretq_s32_u32(row_words(g.rest + 1536 + 32 * i, half));
#pragma GCC unroll 8
      for (size_t s = 0; s < kSubBlocks; ++s) {
        step_fence();
        int8x16_t codes[8];
        sub_block_codes(codes, g, s / 4, s % 4, half);
        const int32x4_t sc0 = word_byte_signed(words[s / 2], (2 * s) % 4);
        const int32x4_t sc1 = word_byte_signed(words[s / 2], (2 * s + 1) % 4);
        fold_sixteen_tokens<Arch, K>(acc, half, codes, sc0, sc1, d[half], x, offsets, xb0, s);
      }
    }
  }
};

template <class Arch, class W>
struct KGroupOps<Arch, BlockQ3_Kx8, W> {
  // Sub-block s of one half's 4 rows: unsigned 3-bit codes (the offset 4 is taken off through the
  // half sums), 2 bits of qs and bit s of hmask moved to bit 2 and bit-selected in.
  static void sub_block_codes(int8x16_t *codes, const BlockQ3_Kx8 &g, size_t s, size_t half) {
#pragma GCC unroll 8
    for (size_t k = 0; k < 8; ++k) {
      const uint8x16_t qs = row_bytes(g.rest + 256 + 256 * (s / 4) + 32 * k, half);
      const uint8x16_t hm = row_bytes(g.rest + 32 * k, half);
      const uint8x16_t low = crumb(qs, s % 4);
      codes[k] = vreinterpretq_s8_u8(vbslq_u8(vdupq_n_u8(0x04), shift_bytes(hm, 2 - static_cast<int>(s)), low));
    }
  }

  template <size_t K>
  static void super_block(NeonLanes *acc, NeonLanes *, const BlockQ3_Kx8 &g, size_t, const Q8Activations &x_in,
                          const size_t *xb0) {
    const Q8Activations x = x_in;  // its pointers in registers over the step fences
    float32x4_t d[2];
    load_scales8<Arch, BlockQ3_Kx8>(g.fields, d);
    int32x4_t offsets[K][4];
    for (size_t t = 0; t < K; ++t) super_half_sums<2>(offsets[t], x, xb0[t]);
#pragma GCC unroll 2
    for (size_t half = 0; half < 2; ++half) {
      // q3_k_scale_words on 4 rows' words at once, as the x86 kernel does on 8.
      const uint32x4_t a = row_words(g.rest + 768, half), b = row_words(g.rest + 800, half),
                       c = row_words(g.rest + 832, half);
      const uint32x4_t four = vdupq_n_u32(0x0F0F0F0Fu), two = vdupq_n_u32(0x03030303u);
      const uint32x4_t scale_words[4] = {
          vorrq_u32(vandq_u32(a, four), vshlq_n_u32(vandq_u32(c, two), 4)),
          vorrq_u32(vandq_u32(b, four), vshlq_n_u32(vandq_u32(vshrq_n_u32(c, 2), two), 4)),
          vorrq_u32(vandq_u32(vshrq_n_u32(a, 4), four), vshlq_n_u32(vandq_u32(vshrq_n_u32(c, 4), two), 4)),
          vorrq_u32(vandq_u32(vshrq_n_u32(b, 4), four), vshlq_n_u32(vandq_u32(vshrq_n_u32(c, 6), two), 4))};
#pragma GCC unroll 8
      for (size_t s = 0; s < kSubBlocks; ++s) {
        step_fence();
        int8x16_t codes[8];
        sub_block_codes(codes, g, s, half);
        const int32x4_t sc0 = vsubq_s32(word_byte_ints(scale_words[s / 2], (2 * s) % 4), vdupq_n_s32(32));
        const int32x4_t sc1 = vsubq_s32(word_byte_ints(scale_words[s / 2], (2 * s + 1) % 4), vdupq_n_s32(32));
        fold_sixteen_tokens<Arch, K>(acc, half, codes, sc0, sc1, d[half], x, offsets, xb0, s);
      }
    }
  }
};

template <class Arch, class W>
struct KGroupOps<Arch, BlockQ2_Kx8, W> {
  using Isa = QuantIsa<Arch>;
  template <size_t K>
  static void super_block(NeonLanes *acc, NeonLanes *acc_mins, const BlockQ2_Kx8 &g, size_t, const Q8Activations &x_in,
                          const size_t *xb0) {
    const Q8Activations x = x_in;  // its pointers in registers over the step fences
    // -(dmin * d_x) is (-dmin) * d_x to the bit, so dmin is negated once.
    float32x4_t d[2], negative_dmin[2];
    load_scales8<Arch, BlockQ2_Kx8>(g.fields, d);
    load_scales8<Arch, BlockQ2_Kx8>(g.fields + 8, negative_dmin);
    int32x4_t half_sums[K][4];
    for (size_t t = 0; t < K; ++t) super_half_sums<0>(half_sums[t], x, xb0[t]);
#pragma GCC unroll 2
    for (size_t half = 0; half < 2; ++half) {
      negative_dmin[half] = vnegq_f32(negative_dmin[half]);
#pragma GCC unroll 8
      for (size_t s = 0; s < kSubBlocks; ++s) {
        step_fence();
        int8x16_t codes[8];
#pragma GCC unroll 8
        for (size_t k = 0; k < 8; ++k)
          codes[k] = vreinterpretq_s8_u8(crumb(row_bytes(g.rest + 128 + 256 * (s / 4) + 32 * k, half), s % 4));
        // Scale bytes 2s and 2s + 1: each 16-value half's scale (low nibble) and min (high).
        const uint32x4_t word = row_words(g.rest + 32 * (s / 2), half);
        const uint32x4_t byte0 = word_byte_u32(word, (2 * s) % 4), byte1 = word_byte_u32(word, (2 * s + 1) % 4);
        const int32x4_t sc0 = vreinterpretq_s32_u32(vandq_u32(byte0, vdupq_n_u32(0x0F)));
        const int32x4_t sc1 = vreinterpretq_s32_u32(vandq_u32(byte1, vdupq_n_u32(0x0F)));
        const int32x4_t mn0 = vreinterpretq_s32_u32(vshrq_n_u32(byte0, 4));
        const int32x4_t mn1 = vreinterpretq_s32_u32(vshrq_n_u32(byte1, 4));
#pragma GCC unroll 8
        for (size_t t = 0; t < K; ++t) {
          const size_t xb = xb0[t] + s;
          fold_sixteen<Arch>(half == 0 ? acc[t].lo : acc[t].hi, codes, sc0, sc1, d[half], block_bytes(x, xb), nullptr,
                             s, x.scale[xb]);
          const int32x4_t m =
              mla_lane(mul_lane(mn0, half_sums[t][s / 2], (2 * s) % 4), mn1, half_sums[t][s / 2], (2 * s + 1) % 4);
          float32x4_t &min_lanes = half == 0 ? acc_mins[t].lo : acc_mins[t].hi;
          min_lanes = Isa::fma(min_lanes, vcvtq_f32_s32(m), vmulq_n_f32(negative_dmin[half], x.scale[xb]));
        }
      }
    }
  }
};

template <class W>
inline void store_rows(float *out, NeonLanes acc, NeonLanes mins) {
  vst1q_f32(out, vaddq_f32(acc.lo, mins.lo));
  vst1q_f32(out + 4, vaddq_f32(acc.hi, mins.hi));
}
#endif  // __ARM_NEON

}  // namespace mote::kernels::simd

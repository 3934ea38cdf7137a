// What the CUDA kernels know of each GGUF weight type: one QuantTraits<T> per type (F32, F16, BF16, Q8_0, Q2_K..Q6_K,
// IQ4_NL, IQ4_XS; the grid IQ types and the one-scale types in quant_traits_grid.cuh and quant_traits_legacy.cuh,
// included at the end).
//
// Kernels are templates on the type and take every type-specific fact from
// here, so a new type is one specialisation below plus its place in the
// path lists of type_paths.h. A type without a specialisation fails to
// compile where a kernel is instantiated for it.
//
// Every type:
//   kBytes256       bytes of 256 consecutive values of a row: one K-quant
//                   super-block, eight Q8_0 blocks, 256 floats or halves;
//                   kernels step along K in these groups
//   value(row, i)   element i of a row as F32, with the F32 operations of
//                   core::dequantize_row in its order (explicit _rn
//                   intrinsics, so nvcc cannot contract them): embed
// Float types: f32(bits) for 16-bit ones, wf8 (eight
// weights as F32: mmvq, mmq_float).
// Quantized types: B points at a 256-value group of a row and j (0..7) picks
// one of its eight 32-value Q8A blocks (a Q4_K/Q5_K sub-block, two 16-value
// sub-blocks of Q2_K, Q3_K or Q6_K, a Q8_0 or IQ4_NL block, an IQ4_XS group):
//   w4, w8, w4_pair, quant_pairs  the quants as packed signed or unsigned
//                   bytes: dp4a operands (mmvq) and what the tensor-core
//                   kernels decode to F16 (f16_decode.cuh)
//   row_head, row_scale, term     the weight scales and the F32 term of one
//                   block exactly as core::vec_dot forms it (mmvq)
//   scale_entry(_pair)            F16 (scale, -min) entries of the tensor-core
//                   GEMMs' prep tables and of the F16 decode: of block j, or
//                   with kHalfEntries of 16-value half k (0..15)
//   kSigned         the quants are two's complement bytes (Q3_K, Q6_K, Q8_0,
//                   and the IQ4 codebook values)
//   kSplitHalves    a block's two 16-value halves have their own scales (Q2_K,
//                   Q3_K, Q6_K): one entry holds both scales (Q3_K, Q6_K), or
//   kHalfEntries    each half has its own entry (scale, -min) (Q2_K, whose
//                   halves have mins too; where absent, false)
//   kHalfSums       term() takes the halves' activation sums (Q2_K; where
//                   absent, false)
//   kChunkDelta     wgmma_layout.h's chunk order: 8-value chunks between an
//                   instruction's two core matrices (8 for Q6_K, else 4)
//   kWgCols         the warpgroup GEMM's positions per block (128 where two
//                   stages of them fit beside 256 weight rows, else 64)
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "core/quant/quant.h"
#include "core/quant/quant_blocks.h"
#include "core/quant/quant_tables.h"
#include "cuda/gemm/gemm_device.cuh"
#include "cuda/gemm/mma_ops.cuh"
#include "cuda/gemm/wgmma_layout.h"

namespace strata::cuda {

using core::GgmlType;

// False for every T: the static_assert on it fires only when a kernel is
// instantiated for a type with no specialisation.
template <GgmlType T>
inline constexpr bool kNoDeviceKernel = false;

template <GgmlType T>
struct QuantTraits {
  static_assert(kNoDeviceKernel<T>, "QuantTraits: a type without CUDA kernels (cuda/gemm/quant_traits.cuh)");
};

// The super-block scales of a group (K-quants): d, and dmin for Q4_K/Q5_K.
// Q8_0 keeps its scale per 32-value block (row_scale reads it).
struct RowHead {
  float d;
  float dmin;
};

// The weight-side scales of Q8A block j of a group.
struct RowScale {
  float a;  // Q4_K/Q5_K: d * sc_j; Q2_K, Q3_K, Q6_K, Q8_0: d
  float b;  // Q4_K/Q5_K: dmin * m_j; Q2_K: dmin
  int s0;   // Q2_K, Q3_K, Q6_K: scale of the first 16 values (Q2_K: with its min)
  int s1;   // the same for the last 16 values
};

// One Q8A activation block as term() takes it: d, the sum of its 32 quants,
// and the sums of its two 16-value halves (formed only for a type whose
// traits set kHalfSums: Q2_K's mins).
struct ActBlock {
  float d;
  float sum;
  int sum_lo;
  int sum_hi;
};

template <class Q>
constexpr bool needs_half_sums() {
  if constexpr (requires { Q::kHalfSums; }) {
    return Q::kHalfSums;
  } else {
    return false;
  }
}

// Scale entries per 32-value block: two for a type whose traits set
// kHalfEntries (one per 16-value half), else one.
template <class Q>
constexpr int entries_per_block() {
  if constexpr (requires { Q::kHalfEntries; }) {
    return Q::kHalfEntries ? 2 : 1;
  } else {
    return 1;
  }
}

namespace quant_detail {

using gemm_detail::i2f_small;
using gemm_detail::ld_half;
using gemm_detail::ld_u32;

__device__ __forceinline__ float half_bits_to_float(uint16_t h) { return __half2float(__ushort_as_half(h)); }

// ---- float types -----------------------------------------------------------

// F16 and BF16: Bits::f32 turns the low 16 bits of a word into F32.
template <class Bits>
struct Float16 {
  static constexpr int kBytes256 = 512;

  __device__ __forceinline__ static float f32(uint32_t b) { return Bits::f32(b); }

  __device__ __forceinline__ static float value(const void* row, int64_t i) {
    return Bits::f32(static_cast<const uint16_t*>(row)[i]);
  }

  // Eight weights starting at P (16-byte aligned).
  __device__ __forceinline__ static void wf8(const uint8_t* P, float (&w)[8]) {
    const uint4 q = *reinterpret_cast<const uint4*>(P);
    const uint32_t h[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      w[2 * i] = Bits::f32(h[i] & 0xffffu);
      w[2 * i + 1] = Bits::f32(h[i] >> 16);
    }
  }
};

struct HalfBits {
  __device__ __forceinline__ static float f32(uint32_t b) {
    return __half2float(__ushort_as_half(static_cast<unsigned short>(b)));
  }
};

struct Bf16Bits {
  __device__ __forceinline__ static float f32(uint32_t b) { return __uint_as_float(b << 16); }
};

}  // namespace quant_detail

template <>
struct QuantTraits<GgmlType::F32> {
  static constexpr int kBytes256 = 1024;

  __device__ __forceinline__ static float value(const void* row, int64_t i) { return static_cast<const float*>(row)[i]; }

  // Eight weights starting at P (16-byte aligned).
  __device__ __forceinline__ static void wf8(const uint8_t* P, float (&w)[8]) {
    const float4 u = reinterpret_cast<const float4*>(P)[0];
    const float4 v = reinterpret_cast<const float4*>(P)[1];
    w[0] = u.x, w[1] = u.y, w[2] = u.z, w[3] = u.w, w[4] = v.x, w[5] = v.y, w[6] = v.z, w[7] = v.w;
  }
};

template <>
struct QuantTraits<GgmlType::F16> : quant_detail::Float16<quant_detail::HalfBits> {};

template <>
struct QuantTraits<GgmlType::BF16> : quant_detail::Float16<quant_detail::Bf16Bits> {};


// ---- quantized types -------------------------------------------------------

namespace quant_detail {

// Sub-block j (0..7) of a Q4_K/Q5_K scale array, as core::unpack_scale_min_k4.
__device__ __forceinline__ void unpack_scale_min_k4_dev(const uint8_t* bytes, int j, int& sc, int& m) {
  if (j < 4) {
    sc = bytes[j] & 63;
    m = bytes[j + 4] & 63;
  } else {
    sc = (bytes[j + 4] & 0x0f) | ((bytes[j - 4] >> 6) << 4);
    m = (bytes[j + 4] >> 4) | ((bytes[j] >> 6) << 4);
  }
}

// Sub-blocks j and j + 4 (j < 4) of a Q4_K/Q5_K scale array at once: bytes
// j, j + 4 and j + 8 hold both (unpack_scale_min_k4_dev of j and of j + 4).
__device__ __forceinline__ void unpack_scale_min_k4_pair_dev(const uint8_t* bytes, int j, int& sc0, int& m0, int& sc1,
                                                             int& m1) {
  const int a = bytes[j], b = bytes[j + 4], c = bytes[j + 8];
  sc0 = a & 63;
  m0 = b & 63;
  sc1 = (c & 0x0f) | ((a >> 6) << 4);
  m1 = (c >> 4) | ((b >> 6) << 4);
}

// (d * sc_j) * q - dmin * m_j for a Q4_K/Q5_K value q of sub-block j.
__device__ __forceinline__ float dequant_minmax(uint16_t d16, uint16_t dmin16, const uint8_t* scales, int j, int q) {
  int sc, m;
  unpack_scale_min_k4_dev(scales, j, sc, m);
  const float ws = __fmul_rn(half_bits_to_float(d16), static_cast<float>(sc));
  const float wm = __fmul_rn(half_bits_to_float(dmin16), static_cast<float>(m));
  return __fsub_rn(__fmul_rn(ws, static_cast<float>(q)), wm);
}

// A Q4_K/Q5_K entry from a block's 6-bit scale and min: (d * sc, -(dmin *
// m)), both exact in F32, rounded to F16.
__device__ __forceinline__ uint32_t k4_entry(const RowHead& head, int sc, int m) {
  return mma::pack_half2(__fmul_rn(head.d, i2f_small(sc)), -__fmul_rn(head.dmin, i2f_small(m)));
}

// Q4_K and Q5_K: d and dmin (halves), 12 bytes of 6-bit scales and mins
// (kScales), 4-bit quants at kQs (group j/2 of 32 bytes, low nibbles for even
// j, high for odd); Q5_K's fifth bits at kQh (bit j of byte l for value
// 32j + l).
template <int kQs, bool kFifthBit>
struct MinMaxK {
  static constexpr bool kSigned = false;
  static constexpr bool kSplitHalves = false;
  static constexpr int kChunkDelta = 4;
  // Field offsets, the same in both blocks.
  static constexpr int kDmin = offsetof(core::BlockQ4_K, dmin), kScales = offsetof(core::BlockQ4_K, scales),
                       kQh = offsetof(core::BlockQ5_K, qh);
  static_assert(offsetof(core::BlockQ5_K, dmin) == kDmin && offsetof(core::BlockQ5_K, scales) == kScales);

  // Values 4 k4 .. 4 k4 + 3 of block j as four bytes.
  __device__ __forceinline__ static int w4(const uint8_t* B, int j, int k4) {
    const uint32_t lo = (ld_u32(B + kQs + 32 * (j >> 1) + 4 * k4) >> (4 * (j & 1))) & 0x0F0F0F0Fu;
    if constexpr (kFifthBit) {
      const uint32_t hi = ((ld_u32(B + kQh + 4 * k4) >> j) & 0x01010101u) << 4;
      return static_cast<int>(lo | hi);
    } else {
      return static_cast<int>(lo);
    }
  }

  // All eight words of block j (w4 for k4 = 0..7) with 16-byte loads: the
  // groups start 16-byte aligned (B must then be).
  __device__ __forceinline__ static void w8(const uint8_t* B, int j, int (&w)[8]) {
    const auto* q = reinterpret_cast<const uint4*>(B + kQs + 32 * (j >> 1));
    const uint4 q0 = q[0], q1 = q[1];
    const uint32_t v[8] = {q0.x, q0.y, q0.z, q0.w, q1.x, q1.y, q1.z, q1.w};
    uint32_t h[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    if constexpr (kFifthBit) {
      const auto* qh = reinterpret_cast<const uint4*>(B + kQh);
      const uint4 h0 = qh[0], h1 = qh[1];
      const uint32_t hv[8] = {h0.x, h0.y, h0.z, h0.w, h1.x, h1.y, h1.z, h1.w};
#pragma unroll
      for (int i = 0; i < 8; ++i) h[i] = ((hv[i] >> j) & 0x01010101u) << 4;
    }
#pragma unroll
    for (int i = 0; i < 8; ++i) w[i] = static_cast<int>(((v[i] >> (4 * (j & 1))) & 0x0F0F0F0Fu) | h[i]);
  }

  // w4's words 2t and 2t + 1 of block j (lane t of a quad: values 8t ..
  // 8t + 7) with one 8-byte load (8t is 8-byte aligned in the group; with
  // the mma.sync GEMM's row stride the 16 lanes of a half warp hit distinct
  // banks).
  __device__ __forceinline__ static void w4_pair(const uint8_t* B, int j, int t, uint32_t (&w)[2]) {
    const uint2 q = *reinterpret_cast<const uint2*>(B + kQs + 32 * (j >> 1) + 8 * t);
    const int shift = 4 * (j & 1);
    w[0] = (q.x >> shift) & 0x0F0F0F0Fu;
    w[1] = (q.y >> shift) & 0x0F0F0F0Fu;
    if constexpr (kFifthBit) {
      const uint2 h = *reinterpret_cast<const uint2*>(B + kQh + 8 * t);  // fifth bits: bit j of each byte
      w[0] |= ((h.x >> j) & 0x01010101u) << 4;
      w[1] |= ((h.y >> j) & 0x01010101u) << 4;
    }
  }

  // Lane t's quants of warpgroup instruction i (wgmma_layout.h): values 64p
  // + l (low nibbles) and 64p + 32 + l (high) share qs[32p + l]; (v | v <<
  // 12) puts the high nibbles of bytes 0, 1 at bits 16, 24. The fifth bit
  // of value 32j + l is bit j of qh[l]: bit 2p of each byte to bit 4 of
  // bytes 0, 1, bit 2p + 1 to bit 4 of bytes 2, 3.
  STRATA_HD static uint32_t quant_pairs(const uint8_t* B, int i, int t) {
    const int p = i >> 2, l = 8 * (i & 3) + 2 * t;
    const uint32_t v = wgmma::ld16(B + kQs + 32 * p + l);
    uint32_t u = (v | (v << 12)) & 0x0F0F0F0Fu;
    if constexpr (kFifthBit) {
      const uint32_t h = wgmma::ld16(B + kQh + l) >> (2 * p);
      u |= ((h & 0x0101u) << 4) | ((h & 0x0202u) << 19);
    }
    return u;
  }

  __device__ __forceinline__ static RowHead row_head(const uint8_t* B) {
    return RowHead{ld_half(B), ld_half(B + kDmin)};
  }

  // d * sc_j and dmin * m_j (core::unpack_scale_min_k4 over the bytes at 4).
  __device__ __forceinline__ static RowScale row_scale(const uint8_t* B, const RowHead& head, int j) {
    RowScale rs{0.0f, 0.0f, 0, 0};
    int sc, m;
    unpack_scale_min_k4_dev(B + kScales, j, sc, m);
    rs.a = __fmul_rn(head.d, i2f_small(sc));
    rs.b = __fmul_rn(head.dmin, i2f_small(m));
    return rs;
  }

  // The F32 term of one block as core::vec_dot forms it: lo and hi are the
  // exact integer dots of its first and last 16 values, x the activation
  // block: x.d * (ws * isum - wm * x.sum).
  __device__ __forceinline__ static float term(const RowScale& rs, int lo, int hi, const ActBlock& x) {
    return __fmul_rn(x.d, __fsub_rn(__fmul_rn(rs.a, i2f_small(lo + hi)), __fmul_rn(rs.b, x.sum)));
  }

  // The F16 pair (d * sc_j, -(dmin * m_j)).
  __device__ __forceinline__ static uint32_t scale_entry(const uint8_t* B, const RowHead& head, int j) {
    int sc, m;
    unpack_scale_min_k4_dev(B + kScales, j, sc, m);
    return k4_entry(head, sc, m);
  }

  // The entries of blocks j and j + 4 (j < 4) from the three scale bytes
  // they share, with no branch on j (lanes taking different j run the same
  // instructions).
  __device__ __forceinline__ static void scale_entry_pair(const uint8_t* B, const RowHead& head, int j, uint32_t& lo,
                                                          uint32_t& hi) {
    int sc0, m0, sc1, m1;
    unpack_scale_min_k4_pair_dev(B + kScales, j, sc0, m0, sc1, m1);
    lo = k4_entry(head, sc0, m0);
    hi = k4_entry(head, sc1, m1);
  }
};

// Q6_K and Q8_0: w8, w4_pair and scale_entry_pair from Q's w4 and
// scale_entry (their blocks are only 2-byte aligned: no wide loads).
template <class Q>
struct WordQuants {
  __device__ __forceinline__ static void w8(const uint8_t* B, int j, int (&w)[8]) {
#pragma unroll
    for (int k4 = 0; k4 < 8; ++k4) w[k4] = Q::w4(B, j, k4);
  }

  __device__ __forceinline__ static void w4_pair(const uint8_t* B, int j, int t, uint32_t (&w)[2]) {
    w[0] = static_cast<uint32_t>(Q::w4(B, j, 2 * t));
    w[1] = static_cast<uint32_t>(Q::w4(B, j, 2 * t + 1));
  }

  __device__ __forceinline__ static void scale_entry_pair(const uint8_t* B, const RowHead& head, int j, uint32_t& lo,
                                                          uint32_t& hi) {
    lo = Q::scale_entry(B, head, j);
    hi = Q::scale_entry(B, head, j + 4);
  }
};

// The entry of a block whose 16-value halves have signed scales s0, s1 and
// no mins (Q3_K, Q6_K: row_scale): (d * s0, d * s1), exact in F32, rounded
// to F16.
__device__ __forceinline__ uint32_t split_scales_entry(const RowScale& rs, const RowHead& head) {
  return mma::pack_half2(__fmul_rn(head.d, static_cast<float>(rs.s0)), __fmul_rn(head.d, static_cast<float>(rs.s1)));
}

// Scale k (0..15) of a Q3_K block's 12 scale bytes S, less 32: as
// core::unpack_scale_q3_k.
__device__ __forceinline__ int q3_k_scale(const uint8_t* S, int k) {
  const int low = (S[k & 7] >> (4 * (k >> 3))) & 0x0f;
  const int high = (S[8 + (k & 3)] >> (2 * (k >> 2))) & 3;
  return (low | (high << 4)) - 32;
}

// Lane t's 2-bit quants of warpgroup instruction i (i = 4p + w: blocks 2p
// and 2p + 1) from Q2_K's and Q3_K's qs (bits 4(p & 1) and 4(p & 1) + 2 of
// qs[32(p / 2) + l]): (v | v << 14) puts the second pair of bytes 0, 1 at
// bits 16, 24.
STRATA_HD inline uint32_t low2_quant_pairs(const uint8_t* qs, int i, int t) {
  const int p = i >> 2, l = 8 * (i & 3) + 2 * t;
  const uint32_t v = wgmma::ld16(qs + 32 * (p >> 1) + l) >> (4 * (p & 1));
  return (v | (v << 14)) & 0x03030303u;
}

}  // namespace quant_detail

// Q2_K: 84-byte super-blocks (4-byte aligned), 16 bytes of 4-bit scales (low
// nibble) and mins (high), 2-bit quants at 16, d and dmin at 80. Block j =
// 4h + s holds values 128h + 32s + l: bits 2s, 2s + 1 of qs[32h + l].
template <>
struct QuantTraits<GgmlType::Q2_K> : quant_detail::WordQuants<QuantTraits<GgmlType::Q2_K>> {
  static constexpr int kBytes256 = sizeof(core::BlockQ2_K);
  static constexpr int kQs = offsetof(core::BlockQ2_K, qs), kD = offsetof(core::BlockQ2_K, d),
                       kDmin = offsetof(core::BlockQ2_K, dmin);
  static constexpr bool kHalfSums = true;  // term() takes the activation halves' sums
  static constexpr bool kSigned = false;
  static constexpr bool kSplitHalves = true;
  static constexpr bool kHalfEntries = true;
  static constexpr int kChunkDelta = 4;
  static constexpr int kWgCols = 128;

  __device__ __forceinline__ static int w4(const uint8_t* B, int j, int k4) {
    return static_cast<int>((gemm_detail::ld_u32(B + kQs + 32 * (j >> 2) + 4 * k4) >> (2 * (j & 3))) & 0x03030303u);
  }

  STRATA_HD static uint32_t quant_pairs(const uint8_t* B, int i, int t) {
    return quant_detail::low2_quant_pairs(B + kQs, i, t);
  }

  __device__ __forceinline__ static RowHead row_head(const uint8_t* B) {
    return RowHead{gemm_detail::ld_half(B + kD), gemm_detail::ld_half(B + kDmin)};
  }

  // The scale bytes of sub-blocks 2j and 2j + 1.
  __device__ __forceinline__ static RowScale row_scale(const uint8_t* B, const RowHead& head, int j) {
    return RowScale{head.d, head.dmin, B[2 * j], B[2 * j + 1]};
  }

  // x.d * (d * isum - dmin * msum): isum the halves' dots times their scales,
  // msum the halves' activation sums times their mins (both exact in int32
  // and in F32: |isum| < 2^18).
  __device__ __forceinline__ static float term(const RowScale& rs, int lo, int hi, const ActBlock& x) {
    const int isum = (rs.s0 & 0x0f) * lo + (rs.s1 & 0x0f) * hi;
    const int msum = (rs.s0 >> 4) * x.sum_lo + (rs.s1 >> 4) * x.sum_hi;
    return __fmul_rn(x.d, __fsub_rn(__fmul_rn(rs.a, gemm_detail::i2f_small(isum)),
                                    __fmul_rn(rs.b, gemm_detail::i2f_small(msum))));
  }

  // The entry of 16-value half k: (d * sc_k, -(dmin * m_k)), both exact in
  // F32, rounded to F16 (the scale bytes lie at 0).
  __device__ __forceinline__ static uint32_t scale_entry(const uint8_t* B, const RowHead& head, int k) {
    const int sm = B[k];
    return mma::pack_half2(__fmul_rn(head.d, gemm_detail::i2f_small(sm & 0x0f)),
                           -__fmul_rn(head.dmin, gemm_detail::i2f_small(sm >> 4)));
  }

  __device__ __forceinline__ static float value(const void* row, int64_t i) {
    return value(static_cast<const core::BlockQ2_K*>(row)[i / core::kQK_K], static_cast<int>(i % core::kQK_K));
  }

  // Value e of block b: (d * sc) * q - dmin * m.
  __device__ __forceinline__ static float value(const core::BlockQ2_K& b, int e) {
    const int q = (b.qs[32 * (e / 128) + e % 32] >> (2 * ((e / 32) % 4))) & 3;
    const int sm = b.scales[e / 16];
    const float ws = __fmul_rn(quant_detail::half_bits_to_float(b.d), static_cast<float>(sm & 0x0f));
    const float wm = __fmul_rn(quant_detail::half_bits_to_float(b.dmin), static_cast<float>(sm >> 4));
    return __fsub_rn(__fmul_rn(ws, static_cast<float>(q)), wm);
  }
};

// Q3_K: 110-byte super-blocks (2-byte aligned): high bits in hmask at 0, low
// 2 bits in qs at 32, 6-bit scales at 96, d at 108. Block j = 4h + s holds
// values 128h + 32s + l: low bits 2s, 2s + 1 of qs[32h + l], high bit j of
// hmask[l]; q = low - 4 where the high bit is clear, else low.
template <>
struct QuantTraits<GgmlType::Q3_K> : quant_detail::WordQuants<QuantTraits<GgmlType::Q3_K>> {
  static constexpr int kBytes256 = sizeof(core::BlockQ3_K);
  static constexpr int kQs = offsetof(core::BlockQ3_K, qs), kScales = offsetof(core::BlockQ3_K, scales),
                       kD = offsetof(core::BlockQ3_K, d);
  static constexpr bool kSigned = true;
  static constexpr bool kSplitHalves = true;
  static constexpr int kChunkDelta = 4;
  static constexpr int kWgCols = 128;

  __device__ __forceinline__ static int w4(const uint8_t* B, int j, int k4) {
    const uint32_t lo = (gemm_detail::ld_u32_a2(B + kQs + 32 * (j >> 2) + 4 * k4) >> (2 * (j & 3))) & 0x03030303u;
    const uint32_t hi = ((gemm_detail::ld_u32_a2(B + 4 * k4) >> j) & 0x01010101u) << 2;
    // u - 4 per byte for u = lo | hi in 0..7: bit 7 set first, so no borrow
    // crosses a byte (as Q6_K's q - 32).
    return static_cast<int>(((lo | hi | 0x80808080u) - 0x04040404u) ^ 0x80808080u);
  }

  // Instruction i = 4p + w takes blocks 2p and 2p + 1: low bits as Q2_K's,
  // high bits 2p and 2p + 1 of hmask[l] (to bit 2 of bytes 0, 1 and 2, 3).
  STRATA_HD static uint32_t quant_pairs(const uint8_t* B, int i, int t) {
    const int p = i >> 2, l = 8 * (i & 3) + 2 * t;
    const uint32_t h = wgmma::ld16(B + l) >> (2 * p);
    const uint32_t u = quant_detail::low2_quant_pairs(B + kQs, i, t) | ((h & 0x0101u) << 2) | ((h & 0x0202u) << 17);
    // u - 4 per byte: bit 7 set first, so no borrow crosses a byte.
    return ((u | 0x80808080u) - 0x04040404u) ^ 0x80808080u;
  }

  __device__ __forceinline__ static RowHead row_head(const uint8_t* B) { return RowHead{gemm_detail::ld_half(B + kD), 0.0f}; }

  __device__ __forceinline__ static RowScale row_scale(const uint8_t* B, const RowHead& head, int j) {
    const uint8_t* S = B + kScales;
    return RowScale{head.d, 0.0f, quant_detail::q3_k_scale(S, 2 * j), quant_detail::q3_k_scale(S, 2 * j + 1)};
  }

  // (d * x.d) * (sc_lo * isum_lo + sc_hi * isum_hi), as Q6_K.
  __device__ __forceinline__ static float term(const RowScale& rs, int lo, int hi, const ActBlock& x) {
    return __fmul_rn(__fmul_rn(rs.a, x.d), __int2float_rn(rs.s0 * lo + rs.s1 * hi));
  }

  __device__ __forceinline__ static uint32_t scale_entry(const uint8_t* B, const RowHead& head, int j) {
    return quant_detail::split_scales_entry(row_scale(B, head, j), head);
  }

  __device__ __forceinline__ static float value(const void* row, int64_t i) {
    return value(static_cast<const core::BlockQ3_K*>(row)[i / core::kQK_K], static_cast<int>(i % core::kQK_K));
  }

  // Value e of block b: (d * sc) * q.
  __device__ __forceinline__ static float value(const core::BlockQ3_K& b, int e) {
    const int low = (b.qs[32 * (e / 128) + e % 32] >> (2 * ((e / 32) % 4))) & 3;
    const int q = low - (((b.hmask[e % 32] >> (e / 32)) & 1) != 0 ? 0 : 4);
    const int sc = quant_detail::q3_k_scale(b.scales, e / 16);
    const float ws = __fmul_rn(quant_detail::half_bits_to_float(b.d), static_cast<float>(sc));
    return __fmul_rn(ws, static_cast<float>(q));
  }
};

// Q4_K: 144-byte super-blocks, quants at 16. The warpgroup GEMM takes 128
// positions per block: only these groups leave room for two stages of 128
// beside 256 weight rows.
template <>
struct QuantTraits<GgmlType::Q4_K> : quant_detail::MinMaxK<offsetof(core::BlockQ4_K, qs), false> {
  static constexpr int kBytes256 = sizeof(core::BlockQ4_K);
  static constexpr int kWgCols = 128;

  // Group g = e / 64 keeps its 64 values in qs[32g .. 32g+31]: the first 32
  // in the low nibbles, the next 32 in the high.
  __device__ __forceinline__ static float value(const void* row, int64_t i) {
    return value(static_cast<const core::BlockQ4_K*>(row)[i / core::kQK_K], static_cast<int>(i % core::kQK_K));
  }

  // Value e of block b.
  __device__ __forceinline__ static float value(const core::BlockQ4_K& b, int e) {
    const int g = e / 64, hi = (e / 32) % 2, l = e % 32;
    const int q = (b.qs[32 * g + l] >> (4 * hi)) & 0x0f;
    return quant_detail::dequant_minmax(b.d, b.dmin, b.scales, e / 32, q);
  }
};

// Q5_K: 176-byte super-blocks, fifth bits at 16, quants at 48.
template <>
struct QuantTraits<GgmlType::Q5_K> : quant_detail::MinMaxK<offsetof(core::BlockQ5_K, qs), true> {
  static constexpr int kBytes256 = sizeof(core::BlockQ5_K);
  static constexpr int kWgCols = 64;

  // The Q4_K nibble plus bit 2g (+1 for the high half of the group) of qh[l]
  // as bit 4.
  __device__ __forceinline__ static float value(const void* row, int64_t i) {
    return value(static_cast<const core::BlockQ5_K*>(row)[i / core::kQK_K], static_cast<int>(i % core::kQK_K));
  }

  // Value e of block b.
  __device__ __forceinline__ static float value(const core::BlockQ5_K& b, int e) {
    const int g = e / 64, hi = (e / 32) % 2, l = e % 32;
    const int q = ((b.qs[32 * g + l] >> (4 * hi)) & 0x0f) | (((b.qh[l] >> (2 * g + hi)) & 1) << 4);
    return quant_detail::dequant_minmax(b.d, b.dmin, b.scales, e / 32, q);
  }
};

// Q6_K: 210-byte super-blocks (2-byte aligned): low 4 bits in ql at 0, top 2
// bits in qh at 128, 16 signed 8-bit scales at 192, d at 208. Value 128h +
// 32k + l (block j = 4h + k) has its low bits in ql[64h + 32(k&1) + l] (high
// nibble for k >= 2) and its top bits at 2k of qh[32h + l].
template <>
struct QuantTraits<GgmlType::Q6_K> : quant_detail::WordQuants<QuantTraits<GgmlType::Q6_K>> {
  static constexpr int kBytes256 = sizeof(core::BlockQ6_K);
  static constexpr int kQh = offsetof(core::BlockQ6_K, qh), kScales = offsetof(core::BlockQ6_K, scales),
                       kD = offsetof(core::BlockQ6_K, d);
  static constexpr bool kSigned = true;
  static constexpr bool kSplitHalves = true;
  static constexpr int kChunkDelta = 8;  // the other nibble of a byte lies 64 values on
  static constexpr int kWgCols = 64;

  __device__ __forceinline__ static int w4(const uint8_t* B, int j, int k4) {
    const int h = j >> 2, k = j & 3;
    const uint32_t lo = (gemm_detail::ld_u32_a2(B + 64 * h + 32 * (k & 1) + 4 * k4) >> (4 * (k >> 1))) & 0x0F0F0F0Fu;
    const uint32_t hi = ((gemm_detail::ld_u32_a2(B + kQh + 32 * h + 4 * k4) >> (2 * k)) & 0x03030303u) << 4;
    // q - 32 in each byte. The bytes are 0..63, so with bit 7 set first no
    // subtraction borrows from its neighbour: three instructions where the
    // saturating __vsubss4 (never saturating here) is emulated in about twelve.
    return static_cast<int>(((lo | hi | 0x80808080u) - 0x20202020u) ^ 0x80808080u);
  }

  // Instruction i = 8h + 4k + w takes sub-blocks k and k + 2 of half h: low
  // 4 bits in the low and high nibbles of ql[64h + 32k + l], high 2 bits at
  // 2k and 2k + 4 of qh[32h + l].
  STRATA_HD static uint32_t quant_pairs(const uint8_t* B, int i, int t) {
    const int h = i >> 3, k = (i >> 2) & 1, l = 8 * (i & 3) + 2 * t;
    const uint32_t v = wgmma::ld16(B + 64 * h + 32 * k + l);
    const uint32_t q = wgmma::ld16(B + kQh + 32 * h + l) >> (2 * k);
    const uint32_t u = ((v | (v << 12)) & 0x0F0F0F0Fu) | ((q & 0x0303u) << 4) | ((q & 0x3030u) << 16);
    // q - 32 per byte: bit 7 set first, so no borrow crosses a byte.
    return ((u | 0x80808080u) - 0x20202020u) ^ 0x80808080u;
  }

  __device__ __forceinline__ static RowHead row_head(const uint8_t* B) { return RowHead{gemm_detail::ld_half(B + kD), 0.0f}; }

  __device__ __forceinline__ static RowScale row_scale(const uint8_t* B, const RowHead& head, int j) {
    RowScale rs{0.0f, 0.0f, 0, 0};
    rs.a = head.d;
    rs.s0 = static_cast<int8_t>(B[kScales + 2 * j]);
    rs.s1 = static_cast<int8_t>(B[kScales + 2 * j + 1]);
    return rs;
  }

  // (d * a.d) * (sc_lo * isum_lo + sc_hi * isum_hi); |isum| < 2^24, so exact.
  __device__ __forceinline__ static float term(const RowScale& rs, int lo, int hi, const ActBlock& x) {
    return __fmul_rn(__fmul_rn(rs.a, x.d), __int2float_rn(rs.s0 * lo + rs.s1 * hi));
  }

  // (d * sc_lo, d * sc_hi): the scales of the block's two 16-value halves.
  __device__ __forceinline__ static uint32_t scale_entry(const uint8_t* B, const RowHead& head, int j) {
    return quant_detail::split_scales_entry(row_scale(B, head, j), head);
  }

  // (d * scales[e / 16]) * (q - 32).
  __device__ __forceinline__ static float value(const void* row, int64_t i) {
    return value(static_cast<const core::BlockQ6_K*>(row)[i / core::kQK_K], static_cast<int>(i % core::kQK_K));
  }

  // Value e of block b.
  __device__ __forceinline__ static float value(const core::BlockQ6_K& b, int e) {
    const int h = e / 128, r = e % 128, k = r / 32, l = r % 32;
    const int lo = (b.ql[64 * h + l + 32 * (k & 1)] >> (4 * (k >> 1))) & 0x0f;
    const int hi2 = (b.qh[32 * h + l] >> (2 * k)) & 3;
    const int q = (lo | (hi2 << 4)) - 32;
    return __fmul_rn(__fmul_rn(quant_detail::half_bits_to_float(b.d), static_cast<float>(b.scales[e / 16])),
                     static_cast<float>(q));
  }
};

// Q8_0: eight 34-byte blocks (2-byte aligned), each a half scale d and 32
// signed quants.
template <>
struct QuantTraits<GgmlType::Q8_0> : quant_detail::WordQuants<QuantTraits<GgmlType::Q8_0>> {
  static constexpr int kBytes256 = core::kQK_K / core::kQK8_0 * sizeof(core::BlockQ8_0);
  static constexpr bool kSigned = true;
  static constexpr bool kSplitHalves = false;
  static constexpr int kChunkDelta = 4;
  static constexpr int kWgCols = 64;
  static constexpr int kBlock = sizeof(core::BlockQ8_0), kQs = offsetof(core::BlockQ8_0, qs);

  __device__ __forceinline__ static int w4(const uint8_t* B, int j, int k4) {
    return static_cast<int>(gemm_detail::ld_u32_a2(B + kBlock * j + kQs + 4 * k4));
  }

  // Instruction i = 4p + w takes blocks 2p and 2p + 1.
  STRATA_HD static uint32_t quant_pairs(const uint8_t* B, int i, int t) {
    const int p = i >> 2, l = 8 * (i & 3) + 2 * t;
    return wgmma::ld16(B + kBlock * (2 * p) + kQs + l) | (wgmma::ld16(B + kBlock * (2 * p + 1) + kQs + l) << 16);
  }

  // The scales are per block (row_scale).
  __device__ __forceinline__ static RowHead row_head(const uint8_t*) { return RowHead{0.0f, 0.0f}; }

  __device__ __forceinline__ static RowScale row_scale(const uint8_t* B, const RowHead&, int j) {
    RowScale rs{0.0f, 0.0f, 0, 0};
    rs.a = gemm_detail::ld_half(B + kBlock * j);
    return rs;
  }

  // (d_w * d_a) * isum.
  __device__ __forceinline__ static float term(const RowScale& rs, int lo, int hi, const ActBlock& x) {
    return __fmul_rn(__fmul_rn(rs.a, x.d), gemm_detail::i2f_small(lo + hi));
  }

  // (d, 0).
  __device__ __forceinline__ static uint32_t scale_entry(const uint8_t* B, const RowHead& head, int j) {
    return mma::pack_half2(row_scale(B, head, j).a, 0.0f);
  }

  // d * q.
  __device__ __forceinline__ static float value(const void* row, int64_t i) {
    return value(static_cast<const core::BlockQ8_0*>(row)[i / core::kQK8_0], static_cast<int>(i % core::kQK8_0));
  }

  // Value e of block b.
  __device__ __forceinline__ static float value(const core::BlockQ8_0& b, int e) {
    return __fmul_rn(quant_detail::half_bits_to_float(b.d), static_cast<float>(b.qs[e]));
  }
};

// ---- the IQ4 codebook types -----------------------------------------------

namespace quant_detail {

// Word W (0..3) of the IQ4 codebook (core::kIq4nlValues): entries 4W .. 4W + 3
// as bytes, lowest first.
template <int W>
inline constexpr uint32_t kIq4Word = static_cast<uint8_t>(core::kIq4nlValues[4 * W]) |
                                     static_cast<uint8_t>(core::kIq4nlValues[4 * W + 1]) << 8 |
                                     static_cast<uint8_t>(core::kIq4nlValues[4 * W + 2]) << 16 |
                                     static_cast<uint32_t>(static_cast<uint8_t>(core::kIq4nlValues[4 * W + 3])) << 24;

// The codebook values of four 4-bit indices, one in the low nibble of each
// byte of idx (the high nibbles clear), as signed bytes. On the device three
// byte permutes: index k into nibble k of a selector, its low 3 bits pick
// from entries 0..7 and from 8..15, its bit 3 picks between the two.
STRATA_HD inline uint32_t iq4_lookup(uint32_t idx) {
#if defined(__CUDA_ARCH__)
  const uint32_t t = idx | (idx >> 4);                        // byte 0: i0 | i1 << 4, byte 2: i2 | i3 << 4
  const uint32_t sel = (t & 0xffu) | ((t >> 8) & 0xff00u);   // index k in nibble k
  const uint32_t lo = __byte_perm(kIq4Word<0>, kIq4Word<1>, sel & 0x7777u);
  const uint32_t hi = __byte_perm(kIq4Word<2>, kIq4Word<3>, sel & 0x7777u);
  return __byte_perm(lo, hi, 0x3210u | ((sel & 0x8888u) >> 1));
#else
  uint32_t v = 0;
  for (int k = 0; k < 4; ++k) {
    v |= static_cast<uint32_t>(static_cast<uint8_t>(core::kIq4nlValues[(idx >> (8 * k)) & 15])) << (8 * k);
  }
  return v;
#endif
}

// The codebook words of a 32-value group's 16 index bytes qs (4-byte
// aligned where kAligned4, else 2): words 0..3 from the low nibbles (values
// 0..15), 4..7 from the high ones.
template <bool kAligned4>
__device__ __forceinline__ void iq4_group_words(const uint8_t* qs, int (&w)[8]) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const uint32_t v = kAligned4 ? ld_u32(qs + 4 * i) : gemm_detail::ld_u32_a2(qs + 4 * i);
    w[i] = static_cast<int>(iq4_lookup(v & 0x0F0F0F0Fu));
    w[i + 4] = static_cast<int>(iq4_lookup((v >> 4) & 0x0F0F0F0Fu));
  }
}

// Lane t's quants of warpgroup instruction i (wgmma_layout.h; i = 4p + w
// takes groups 2p and 2p + 1, as Q8_0's blocks): values l, l + 1 (l = 8(i &
// 3) + 2t) of the group at qs and of the one `next` bytes on.
STRATA_HD inline uint32_t iq4_quant_pairs(const uint8_t* qs, int next, int i, int t) {
  const int l = 8 * (i & 3) + 2 * t;
  const uint8_t* q = qs + (l & 15);
  return iq4_lookup(((wgmma::ld16(q) | (wgmma::ld16(q + next) << 16)) >> (4 * (l >> 4))) & 0x0F0F0F0Fu);
}

// Value l of a 32-value group's index bytes qs on the codebook.
__device__ __forceinline__ float iq4_value(const uint8_t* qs, int l) {
  return static_cast<float>(static_cast<int8_t>(iq4_lookup((qs[l & 15] >> (4 * (l >> 4))) & 0x0f)));
}

}  // namespace quant_detail

// IQ4_NL: eight 18-byte blocks (2-byte aligned), each a half scale d and 16
// bytes of codebook indices: value l < 16 in the low nibble of qs[l], value
// 16 + l in the high one. Read as Q8_0 is, through the codebook.
template <>
struct QuantTraits<GgmlType::IQ4_NL> : quant_detail::WordQuants<QuantTraits<GgmlType::IQ4_NL>> {
  static constexpr int kBytes256 = core::kQK_K / core::kQK4_NL * sizeof(core::BlockIQ4_NL);
  static constexpr bool kSigned = true;
  static constexpr bool kSplitHalves = false;
  static constexpr int kChunkDelta = 4;
  static constexpr int kWgCols = 128;
  static constexpr int kBlock = sizeof(core::BlockIQ4_NL), kQs = offsetof(core::BlockIQ4_NL, qs);

  __device__ __forceinline__ static int w4(const uint8_t* B, int j, int k4) {
    const uint32_t v = gemm_detail::ld_u32_a2(B + kBlock * j + kQs + 4 * (k4 & 3));
    return static_cast<int>(quant_detail::iq4_lookup((v >> (4 * (k4 >> 2))) & 0x0F0F0F0Fu));
  }

  __device__ __forceinline__ static void w8(const uint8_t* B, int j, int (&w)[8]) {
    quant_detail::iq4_group_words<false>(B + kBlock * j + kQs, w);
  }

  STRATA_HD static uint32_t quant_pairs(const uint8_t* B, int i, int t) {
    return quant_detail::iq4_quant_pairs(B + kBlock * 2 * (i >> 2) + kQs, kBlock, i, t);
  }

  // The scales are per block (row_scale).
  __device__ __forceinline__ static RowHead row_head(const uint8_t*) { return RowHead{0.0f, 0.0f}; }

  __device__ __forceinline__ static RowScale row_scale(const uint8_t* B, const RowHead&, int j) {
    return RowScale{gemm_detail::ld_half(B + kBlock * j), 0.0f, 0, 0};
  }

  // (d_w * d_a) * isum.
  __device__ __forceinline__ static float term(const RowScale& rs, int lo, int hi, const ActBlock& x) {
    return __fmul_rn(__fmul_rn(rs.a, x.d), gemm_detail::i2f_small(lo + hi));
  }

  // (d, 0).
  __device__ __forceinline__ static uint32_t scale_entry(const uint8_t* B, const RowHead& head, int j) {
    return mma::pack_half2(row_scale(B, head, j).a, 0.0f);
  }

  // d * value.
  __device__ __forceinline__ static float value(const void* row, int64_t i) {
    const auto& b = static_cast<const core::BlockIQ4_NL*>(row)[i / core::kQK4_NL];
    return __fmul_rn(quant_detail::half_bits_to_float(b.d),
                     quant_detail::iq4_value(b.qs, static_cast<int>(i % core::kQK4_NL)));
  }
};

// IQ4_XS: 136-byte super-blocks (8-byte aligned): d at 0, the high 2 bits of
// the eight 6-bit group scales at 2 (bits 2j, 2j + 1), their low nibbles at 4
// (nibble j % 2 of byte j / 2), then each group's 16 index bytes at 8 + 16j,
// laid out as an IQ4_NL block's. Group j's scale is d * (ls_j - 32).
template <>
struct QuantTraits<GgmlType::IQ4_XS> : quant_detail::WordQuants<QuantTraits<GgmlType::IQ4_XS>> {
  static constexpr int kBytes256 = sizeof(core::BlockIQ4_XS);
  static constexpr bool kSigned = true;
  static constexpr bool kSplitHalves = false;
  static constexpr int kChunkDelta = 4;
  static constexpr int kWgCols = 64;
  static constexpr int kScalesH = offsetof(core::BlockIQ4_XS, scales_h),
                       kScalesL = offsetof(core::BlockIQ4_XS, scales_l), kQs = offsetof(core::BlockIQ4_XS, qs);

  __device__ __forceinline__ static int w4(const uint8_t* B, int j, int k4) {
    const uint32_t v = gemm_detail::ld_u32(B + kQs + 16 * j + 4 * (k4 & 3));
    return static_cast<int>(quant_detail::iq4_lookup((v >> (4 * (k4 >> 2))) & 0x0F0F0F0Fu));
  }

  __device__ __forceinline__ static void w8(const uint8_t* B, int j, int (&w)[8]) {
    quant_detail::iq4_group_words<true>(B + kQs + 16 * j, w);
  }

  // Values 8t .. 8t + 7 of group j with one 8-byte load.
  __device__ __forceinline__ static void w4_pair(const uint8_t* B, int j, int t, uint32_t (&w)[2]) {
    const uint2 q = *reinterpret_cast<const uint2*>(B + kQs + 16 * j + 8 * (t & 1));
    const int shift = 4 * (t >> 1);
    w[0] = quant_detail::iq4_lookup((q.x >> shift) & 0x0F0F0F0Fu);
    w[1] = quant_detail::iq4_lookup((q.y >> shift) & 0x0F0F0F0Fu);
  }

  STRATA_HD static uint32_t quant_pairs(const uint8_t* B, int i, int t) {
    return quant_detail::iq4_quant_pairs(B + kQs + 32 * (i >> 2), 16, i, t);
  }

  __device__ __forceinline__ static RowHead row_head(const uint8_t* B) {
    return RowHead{gemm_detail::ld_half(B), 0.0f};
  }

  // ls_j - 32, as core::unpack_scale_iq4_xs less 32.
  __device__ __forceinline__ static int group_scale(const uint8_t* B, int j) {
    const int low = (B[kScalesL + (j >> 1)] >> (4 * (j & 1))) & 0x0f;
    const int high = (B[kScalesH + (j >> 2)] >> (2 * (j & 3))) & 3;
    return (low | (high << 4)) - 32;
  }

  __device__ __forceinline__ static RowScale row_scale(const uint8_t* B, const RowHead& head, int j) {
    return RowScale{head.d, 0.0f, group_scale(B, j), 0};
  }

  // (d * a.d) * ((ls_j - 32) * isum); |(ls_j - 32) * isum| < 2^24, so exact.
  __device__ __forceinline__ static float term(const RowScale& rs, int lo, int hi, const ActBlock& x) {
    return __fmul_rn(__fmul_rn(rs.a, x.d), __int2float_rn(rs.s0 * (lo + hi)));
  }

  // (d * (ls_j - 32), 0): exact in F32, rounded to F16.
  __device__ __forceinline__ static uint32_t scale_entry(const uint8_t* B, const RowHead& head, int j) {
    return mma::pack_half2(__fmul_rn(head.d, static_cast<float>(group_scale(B, j))), 0.0f);
  }

  // (d * (ls_j - 32)) * value.
  __device__ __forceinline__ static float value(const void* row, int64_t i) {
    const auto* B = reinterpret_cast<const uint8_t*>(static_cast<const core::BlockIQ4_XS*>(row) + i / core::kQK_K);
    const int e = static_cast<int>(i % core::kQK_K), j = e / 32;
    const float dl = __fmul_rn(gemm_detail::ld_half(B), static_cast<float>(group_scale(B, j)));
    return __fmul_rn(dl, quant_detail::iq4_value(B + kQs + 16 * j, e % 32));
  }
};

}  // namespace strata::cuda

// The grid IQ types (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S).
#include "cuda/gemm/quant_traits_grid.cuh"  // IWYU pragma: export
// The one-scale types (Q4_0, Q4_1, Q5_0, Q5_1, Q1_0, Q2_0).
#include "cuda/gemm/quant_traits_legacy.cuh"  // IWYU pragma: export

// The CUDA kernels' view of the five grid IQ types (IQ2_XXS, IQ2_XS, IQ2_S,
// IQ3_XXS, IQ3_S): QuantTraits for mmvq, the mma.sync and warpgroup GEMMs,
// the F16 decode, embed and, through them, the MoE and peer paths. Included
// by quant_traits.cuh, whose header comment names each member;
// core/quant/quant_blocks.h has the byte layouts.
//
// A grid type stores each 32-value group as grid points (one of 8 magnitudes
// or two of 4, from the tables of core/quant/quant_tables.h), a sign bit per
// value and a 4-bit scale s per 32 or per 16 values. The kernels see signed
// bytes: the magnitudes, negated where the sign bit is set. A span's weight
// scale is d * (2s + 1) / factor (factor 8, 4 or 1); mmvq forms core::vec_dot's
// term, ((d / factor) * a.d) * ((2 s_lo + 1) * isum_lo + (2 s_hi + 1) * isum_hi).
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "core/quant/quant_blocks.h"
#include "core/quant/quant_tables.h"
#include "cuda/gemm/gemm_device.cuh"
#include "cuda/gemm/mma_ops.cuh"

namespace strata::cuda {
namespace quant_detail {

// A host table copied into a device variable at compile time (each
// translation unit has its own copy; the largest, IQ2_S's grid, is 8 KiB).
template <class T, size_t N>
struct DeviceTable {
  T v[N];
};

template <class T, size_t N>
constexpr DeviceTable<T, N> device_table(const T (&a)[N]) {
  DeviceTable<T, N> t{};
  for (size_t i = 0; i < N; ++i) t.v[i] = a[i];
  return t;
}

// The device copy of layout L's grid (L::kGrid, core's table).
template <class L>
__device__ const auto kGridDev = device_table(L::kGrid);

// Word k of layout L's grid: the device copy in kernels, core's table on
// the host (quant_pairs_test calls quant_pairs there).
template <class L>
STRATA_HD auto grid_word(uint32_t k) {
#if defined(__CUDA_ARCH__)
  return kGridDev<L>.v[k];
#else
  return L::kGrid[k];
#endif
}

// The eight sign bits of a parity-packed 7-bit code: the code, and as bit 7
// its parity (core::kSignsIq2xs, computed instead of looked up).
STRATA_HD constexpr uint32_t parity_sign_bits(uint32_t code) {
  code &= 127u;
  uint32_t p = code ^ (code >> 4);
  p ^= p >> 2;
  p ^= p >> 1;
  return code | (p & 1u) << 7;
}

constexpr bool parity_signs_match_table() {
  for (uint32_t c = 0; c < 128; ++c) {
    if (parity_sign_bits(c) != core::kSignsIq2xs[c]) return false;
  }
  return true;
}
static_assert(parity_signs_match_table(), "parity_sign_bits equals core::kSignsIq2xs");

// Four magnitude bytes m, negated where bit k of the low nibble of bits is
// set (byte k): the mask spreads bit k to byte k as 0xff, and (m ^ mask) -
// mask per byte is m or -m.
STRATA_HD inline uint32_t apply_signs(uint32_t m, uint32_t bits) {
  const uint32_t mask = (((bits & 15u) * 0x00204081u) & 0x01010101u) * 0xffu;
#if defined(__CUDA_ARCH__)
  return __vsub4(m ^ mask, mask);
#else
  uint32_t r = 0;
  for (int k = 0; k < 4; ++k) r |= ((((m ^ mask) >> (8 * k)) - (mask >> (8 * k))) & 0xffu) << (8 * k);
  return r;
#endif
}

// Each type's bytes, with B at a super-block (2-byte aligned) and j the
// 32-value group: mag(B, j, k4) the magnitudes of values 4 k4 .. 4 k4 + 3
// as bytes, signs(B, j, l) the sign bits of 8-value group l, scale(B, j, h)
// the s of 16-value half h (the type's factor and scale span: core::kGridShape).
struct Iq2xxsLayout {
  using Block = core::BlockIQ2_XXS;
  static constexpr const auto& kGrid = core::kIq2xxsGrid;
  static constexpr int kQs = offsetof(Block, qs);
  STRATA_HD static uint32_t mag(const uint8_t* B, int j, int k4) {
    return static_cast<uint32_t>(grid_word<Iq2xxsLayout>(B[kQs + 8 * j + (k4 >> 1)]) >> (32 * (k4 & 1)));
  }
  STRATA_HD static uint32_t signs(const uint8_t* B, int j, int l) {
    return parity_sign_bits(gemm_detail::ld_u32_a2(B + kQs + 8 * j + 4) >> (7 * l));
  }
  __device__ __forceinline__ static int scale(const uint8_t* B, int j, int) {
    return static_cast<int>(gemm_detail::ld_u32_a2(B + kQs + 8 * j + 4) >> 28);
  }
};

struct Iq2xsLayout {
  using Block = core::BlockIQ2_XS;
  static constexpr const auto& kGrid = core::kIq2xsGrid;
  static constexpr int kQs = offsetof(Block, qs), kScales = offsetof(Block, scales);
  STRATA_HD static uint32_t code(const uint8_t* B, int j, int l) {
    return wgmma::ld16(B + kQs + 2 * (4 * j + l));
  }
  STRATA_HD static uint32_t mag(const uint8_t* B, int j, int k4) {
    return static_cast<uint32_t>(grid_word<Iq2xsLayout>(code(B, j, k4 >> 1) & 511u) >> (32 * (k4 & 1)));
  }
  STRATA_HD static uint32_t signs(const uint8_t* B, int j, int l) {
    return parity_sign_bits(code(B, j, l) >> 9);
  }
  __device__ __forceinline__ static int scale(const uint8_t* B, int j, int h) {
    return (B[kScales + j] >> (4 * h)) & 15;
  }
};

struct Iq2sLayout {
  using Block = core::BlockIQ2_S;
  static constexpr const auto& kGrid = core::kIq2sGrid;
  static constexpr int kQs = offsetof(Block, qs), kQh = offsetof(Block, qh), kScales = offsetof(Block, scales);
  STRATA_HD static uint32_t mag(const uint8_t* B, int j, int k4) {
    const int l = k4 >> 1;
    const uint32_t idx = B[kQs + 4 * j + l] | ((B[kQh + j] >> (2 * l)) & 3u) << 8;
    return static_cast<uint32_t>(grid_word<Iq2sLayout>(idx) >> (32 * (k4 & 1)));
  }
  STRATA_HD static uint32_t signs(const uint8_t* B, int j, int l) {
    return B[kQs + 32 + 4 * j + l];
  }
  __device__ __forceinline__ static int scale(const uint8_t* B, int j, int h) {
    return (B[kScales + j] >> (4 * h)) & 15;
  }
};

struct Iq3xxsLayout {
  using Block = core::BlockIQ3_XXS;
  static constexpr const auto& kGrid = core::kIq3xxsGrid;
  static constexpr int kQs = offsetof(Block, qs);
  STRATA_HD static uint32_t mag(const uint8_t* B, int j, int k4) {
    return grid_word<Iq3xxsLayout>(B[kQs + 8 * j + k4]);
  }
  STRATA_HD static uint32_t signs(const uint8_t* B, int j, int l) {
    return parity_sign_bits(gemm_detail::ld_u32_a2(B + kQs + 64 + 4 * j) >> (7 * l));
  }
  __device__ __forceinline__ static int scale(const uint8_t* B, int j, int) {
    return static_cast<int>(gemm_detail::ld_u32_a2(B + kQs + 64 + 4 * j) >> 28);
  }
};

struct Iq3sLayout {
  using Block = core::BlockIQ3_S;
  static constexpr const auto& kGrid = core::kIq3sGrid;
  static constexpr int kQs = offsetof(Block, qs), kQh = offsetof(Block, qh), kSigns = offsetof(Block, signs),
                       kScales = offsetof(Block, scales);
  STRATA_HD static uint32_t mag(const uint8_t* B, int j, int k4) {
    return grid_word<Iq3sLayout>(B[kQs + 8 * j + k4] | ((B[kQh + j] >> k4) & 1u) << 8);
  }
  STRATA_HD static uint32_t signs(const uint8_t* B, int j, int l) { return B[kSigns + 4 * j + l]; }
  __device__ __forceinline__ static int scale(const uint8_t* B, int j, int) {
    return (B[kScales + (j >> 1)] >> (4 * (j & 1))) & 15;
  }
};

// QuantTraits of a grid type from its layout L. Signed quants; a per-16 type
// keeps both halves' scales in one entry (kSplitHalves, as Q3_K).
template <class L>
struct GridQuants : WordQuants<GridQuants<L>> {
  static constexpr int kFactor = core::kGridShape<typename L::Block>.factor;
  static constexpr int kBytes256 = sizeof(typename L::Block);
  static constexpr bool kSigned = true;
  static constexpr bool kSplitHalves = core::kGridShape<typename L::Block>.per16;
  // Row strides of 32 or 96 mod 128 bytes (mmq_f16.cuh): 96 for the 66- to
  // 82-byte IQ2 groups (6 granules at most), 160 for IQ3's 98 and 110 bytes.

  static constexpr int kChunkDelta = 4;
  static constexpr int kWgCols = 128;

  STRATA_HD static int w4(const uint8_t* B, int j, int k4) {
    return static_cast<int>(apply_signs(L::mag(B, j, k4), L::signs(B, j, k4 >> 1) >> (4 * (k4 & 1))));
  }

  // Lane t's quants of warpgroup instruction i = 4p + w (wgmma_layout.h):
  // values 8w + 2t, 8w + 2t + 1 of blocks 2p (bytes 0, 1) and 2p + 1 (2, 3),
  // each pair half of one grid word. Lanes t and t ^ 1 want the same two
  // words: in a kernel (all 32 lanes calling) each decodes one, block
  // 2p + (t & 1), and they swap; the host (quant_pairs_test) decodes both.
  STRATA_HD static uint32_t quant_pairs(const uint8_t* B, int i, int t) {
    const int j = 2 * (i >> 2), k4 = 2 * (i & 3) + (t >> 1);
#if defined(__CUDA_ARCH__)
    const uint32_t mine = static_cast<uint32_t>(w4(B, j + (t & 1), k4));
    const uint32_t other = __shfl_xor_sync(0xffffffffu, mine, 1);
    return (t & 1) == 0 ? __byte_perm(mine, other, 0x5410) : __byte_perm(other, mine, 0x7632);
#else
    const int shift = 16 * (t & 1);
    const uint32_t lo = static_cast<uint32_t>(w4(B, j, k4)) >> shift;
    const uint32_t hi = static_cast<uint32_t>(w4(B, j + 1, k4)) >> shift;
    return (lo & 0xffffu) | hi << 16;
#endif
  }

  // d / factor (exact: a power of two).
  __device__ __forceinline__ static RowHead row_head(const uint8_t* B) {
    return RowHead{__fmul_rn(gemm_detail::ld_half(B), 1.0f / static_cast<float>(kFactor)), 0.0f};
  }

  // d / factor and the odd steps 2s + 1 of the two halves.
  __device__ __forceinline__ static RowScale row_scale(const uint8_t* B, const RowHead& head, int j) {
    return RowScale{head.d, 0.0f, 2 * L::scale(B, j, 0) + 1, 2 * L::scale(B, j, kSplitHalves ? 1 : 0) + 1};
  }

  // ((d / factor) * a.d) * ((2 s_lo + 1) * lo + (2 s_hi + 1) * hi): the
  // integer is below 2^24 (core/quant/quant.h), so exact in F32.
  __device__ __forceinline__ static float term(const RowScale& rs, int lo, int hi, const ActBlock& x) {
    return __fmul_rn(__fmul_rn(rs.a, x.d), __int2float_rn(rs.s0 * lo + rs.s1 * hi));
  }

  // (d / factor) * (2s + 1) per half (kSplitHalves) or (that, 0): exact in
  // F32 (11 + 5 significant bits), rounded to F16.
  __device__ __forceinline__ static uint32_t scale_entry(const uint8_t* B, const RowHead& head, int j) {
    const RowScale rs = row_scale(B, head, j);
    const float lo = __fmul_rn(head.d, static_cast<float>(rs.s0));
    return mma::pack_half2(lo, kSplitHalves ? __fmul_rn(head.d, static_cast<float>(rs.s1)) : 0.0f);
  }

  // As core's dequantize: (d * (0.5 + s) * (2 / factor)) * magnitude, negated
  // where its sign bit is set.
  __device__ __forceinline__ static float value(const void* row, int64_t i) {
    const auto* B = reinterpret_cast<const uint8_t*>(static_cast<const typename L::Block*>(row) + i / core::kQK_K);
    const int e = static_cast<int>(i % core::kQK_K), j = e / 32, l = e % 32;
    const float d = gemm_detail::ld_half(B);
    const float db = __fmul_rn(__fmul_rn(d, __fadd_rn(0.5f, static_cast<float>(L::scale(B, j, l / 16)))),
                               2.0f / static_cast<float>(kFactor));
    const float v = __fmul_rn(db, static_cast<float>((L::mag(B, j, l / 4) >> (8 * (l % 4))) & 0xffu));
    return ((L::signs(B, j, l / 8) >> (l % 8)) & 1u) != 0 ? -v : v;
  }
};

}  // namespace quant_detail

template <>
struct QuantTraits<GgmlType::IQ2_XXS> : quant_detail::GridQuants<quant_detail::Iq2xxsLayout> {};
template <>
struct QuantTraits<GgmlType::IQ2_XS> : quant_detail::GridQuants<quant_detail::Iq2xsLayout> {};
template <>
struct QuantTraits<GgmlType::IQ2_S> : quant_detail::GridQuants<quant_detail::Iq2sLayout> {};
template <>
struct QuantTraits<GgmlType::IQ3_XXS> : quant_detail::GridQuants<quant_detail::Iq3xxsLayout> {};
template <>
struct QuantTraits<GgmlType::IQ3_S> : quant_detail::GridQuants<quant_detail::Iq3sLayout> {};

}  // namespace strata::cuda

// The CUDA kernels' view of ggml's one-scale types (Q4_0, Q4_1, Q5_0, Q5_1,
// Q1_0, Q2_0): QuantTraits for mmvq, the mma.sync and warpgroup GEMMs, the
// F16 decode, embed and, through them, the MoE and peer paths. Included by
// quant_traits.cuh, whose header comment names each member;
// core/quant/quant_blocks.h has the byte layouts.
//
// Each block holds a half scale d, for Q4_1 and Q5_1 a half min m, and
// unsigned quants u: 32 values a block (Q4_*, Q5_*), 128 (Q1_0) or 64 (Q2_0).
// A value is d * (u - offset) for the signed types (offset 8, 16, 1, 1; Q1_0
// stores u / 2) and d * u + m for the others. The kernels see the signed
// types' u - offset as two's complement bytes. A 32-value Q8A block (j = 0..7
// of a 256-value group) lies in block j / kChunks, from value 32 (j %
// kChunks); mmvq forms core::vec_dot's term, (d * a.d) * isum, plus (m *
// a.d) * a.sum where the type has a min.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "core/quant/quant_blocks.h"
#include "cuda/gemm/gemm_device.cuh"
#include "cuda/gemm/mma_ops.cuh"
#include "cuda/gemm/wgmma_layout.h"

namespace strata::cuda {
namespace quant_detail {

// The layouts: a block's raw quants u of values e, e + 1 (e even) as bytes
// 0, 1 (pair) and of values e .. e + 3 (e % 4 == 0) as bytes 0 .. 3 (quad).

// Q4_0, Q4_1: value l < 16 in the low nibble of qs[l], 16 + l in the high one.
template <class Block>
struct NibbleLayout {
  static constexpr int kQs = offsetof(Block, qs);

  STRATA_HD static uint32_t pair(const uint8_t* b, int e) {
    return (wgmma::ld16(b + kQs + (e & 15)) >> (4 * (e >> 4))) & 0x0F0Fu;
  }
  STRATA_HD static uint32_t quad(const uint8_t* b, int e) {
    return (gemm_detail::ld_u32_a2(b + kQs + (e & 15)) >> (4 * (e >> 4))) & 0x0F0F0F0Fu;
  }
};

// Q5_0, Q5_1: the nibble of Q4_0 plus a fifth bit, bit e of the 4 bytes qh.
template <class Block>
struct FifthBitLayout {
  static constexpr int kQh = offsetof(Block, qh);

  STRATA_HD static uint32_t pair(const uint8_t* b, int e) {
    const uint32_t h = b[kQh + (e >> 3)] >> (e & 7);
    return NibbleLayout<Block>::pair(b, e) | (h & 1u) << 4 | (h & 2u) << 11;
  }
  STRATA_HD static uint32_t quad(const uint8_t* b, int e) {
    const uint32_t h = b[kQh + (e >> 3)] >> (e & 7);
    return NibbleLayout<Block>::quad(b, e) | (h & 1u) << 4 | (h & 2u) << 11 | (h & 4u) << 18 | (h & 8u) << 25;
  }
};

// Q1_0: bit e % 8 of qs[e / 8] is the sign, stored as u = 2 bit (offset 1).
struct SignBitLayout {
  static constexpr int kQs = offsetof(core::BlockQ1_0, qs);

  STRATA_HD static uint32_t pair(const uint8_t* b, int e) {
    const uint32_t s = b[kQs + (e >> 3)] >> (e & 7);
    return (s & 1u) << 1 | (s & 2u) << 8;
  }
  STRATA_HD static uint32_t quad(const uint8_t* b, int e) {
    const uint32_t s = b[kQs + (e >> 3)] >> (e & 7);
    return (s & 1u) << 1 | (s & 2u) << 8 | (s & 4u) << 15 | (s & 8u) << 22;
  }
};

// Q2_0: bits 2 (e % 4), 2 (e % 4) + 1 of qs[e / 4].
struct CrumbLayout {
  static constexpr int kQs = offsetof(core::BlockQ2_0, qs);

  STRATA_HD static uint32_t pair(const uint8_t* b, int e) {
    const uint32_t c = b[kQs + (e >> 2)] >> (2 * (e & 3));
    return (c & 3u) | (c & 0xcu) << 6;
  }
  STRATA_HD static uint32_t quad(const uint8_t* b, int e) {
    const uint32_t c = b[kQs + (e >> 2)];
    return (c & 3u) | (c & 0xcu) << 6 | (c & 0x30u) << 12 | (c & 0xc0u) << 18;
  }
};

// A one-scale type over Layout: offset kOffset (0 for the types with a min),
// kCols positions per warpgroup block.
template <class Block, class Layout, int kOffset, int kCols>
struct ScaleQuants : WordQuants<ScaleQuants<Block, Layout, kOffset, kCols>> {
  static constexpr int kChunks = core::kChunks<Block>;  // Q8A blocks per block
  static constexpr int kBlock = sizeof(Block);
  static constexpr int kBytes256 = 8 / kChunks * kBlock;
  static constexpr bool kMin = requires(const Block& b) { b.m; };
  static_assert(kMin == (kOffset == 0) && (!kMin || kBlock % 4 == 0), "a min type's (d, m) is one aligned word");
  static constexpr bool kSigned = !kMin;
  static constexpr bool kSplitHalves = false;
  static constexpr int kChunkDelta = 4;
  static constexpr int kWgCols = kCols;

  // Block of Q8A block j, and the first of its values that block j takes.
  STRATA_HD static const uint8_t* block(const uint8_t* B, int j) { return B + kBlock * (j / kChunks); }
  STRATA_HD static int first(int j) { return 32 * (j % kChunks); }

  // The raw bytes u as the kernels' quants: (u - kOffset) in two's complement
  // for a signed type (u + 128 - kOffset never carries out of its byte).
  STRATA_HD static uint32_t quants(uint32_t u) {
    if constexpr (kSigned) {
      return (u + (0x80u - kOffset) * 0x01010101u) ^ 0x80808080u;
    } else {
      return u;
    }
  }

  // Host-callable, as quant_pairs (tests/unit/quant_pairs_test.cpp checks both).
  STRATA_HD static int w4(const uint8_t* B, int j, int k4) {
    return static_cast<int>(quants(Layout::quad(block(B, j), first(j) + 4 * k4)));
  }

  // Instruction i = 4p + w takes Q8A blocks 2p and 2p + 1 (as Q8_0's).
  STRATA_HD static uint32_t quant_pairs(const uint8_t* B, int i, int t) {
    const int p = i >> 2, l = 8 * (i & 3) + 2 * t;
    return quants(Layout::pair(block(B, 2 * p), first(2 * p) + l) |
                  Layout::pair(block(B, 2 * p + 1), first(2 * p + 1) + l) << 16);
  }

  // The scales are per block (row_scale).
  __device__ __forceinline__ static RowHead row_head(const uint8_t*) { return RowHead{0.0f, 0.0f}; }

  // d and (where the type has one) m of Q8A block j's block.
  __device__ __forceinline__ static RowScale row_scale(const uint8_t* B, const RowHead&, int j) {
    const uint8_t* b = block(B, j);
    return RowScale{gemm_detail::ld_half(b), kMin ? gemm_detail::ld_half(b + 2) : 0.0f, 0, 0};
  }

  // (d * a.d) * isum, plus (m * a.d) * a.sum for a min type.
  __device__ __forceinline__ static float term(const RowScale& rs, int lo, int hi, const ActBlock& x) {
    const float t = __fmul_rn(__fmul_rn(rs.a, x.d), gemm_detail::i2f_small(lo + hi));
    if constexpr (kMin) {
      return __fadd_rn(t, __fmul_rn(__fmul_rn(rs.b, x.d), x.sum));
    } else {
      return t;
    }
  }

  // The F16 pair (d, m) of a min type is the block's first word; (d, 0) else.
  __device__ __forceinline__ static uint32_t scale_entry(const uint8_t* B, const RowHead&, int j) {
    const uint8_t* b = block(B, j);
    return kMin ? gemm_detail::ld_u32(b) : wgmma::ld16(b);
  }

  // d * (u - kOffset), or d * u + m.
  __device__ __forceinline__ static float value(const void* row, int64_t i) {
    constexpr int kValues = 32 * kChunks;
    const uint8_t* b = static_cast<const uint8_t*>(row) + kBlock * (i / kValues);
    const int e = static_cast<int>(i % kValues);
    const int u = static_cast<int>((Layout::pair(b, e & ~1) >> (8 * (e & 1))) & 0xffu);
    const float v = __fmul_rn(gemm_detail::ld_half(b), static_cast<float>(u - kOffset));
    if constexpr (kMin) {
      return __fadd_rn(v, gemm_detail::ld_half(b + 2));
    } else {
      return v;
    }
  }
};

}  // namespace quant_detail

template <>
struct QuantTraits<GgmlType::Q4_0>
    : quant_detail::ScaleQuants<core::BlockQ4_0, quant_detail::NibbleLayout<core::BlockQ4_0>, 8, 128> {};
template <>
struct QuantTraits<GgmlType::Q4_1>
    : quant_detail::ScaleQuants<core::BlockQ4_1, quant_detail::NibbleLayout<core::BlockQ4_1>, 0, 64> {};
template <>
struct QuantTraits<GgmlType::Q5_0>
    : quant_detail::ScaleQuants<core::BlockQ5_0, quant_detail::FifthBitLayout<core::BlockQ5_0>, 16, 64> {};
template <>
struct QuantTraits<GgmlType::Q5_1>
    : quant_detail::ScaleQuants<core::BlockQ5_1, quant_detail::FifthBitLayout<core::BlockQ5_1>, 0, 64> {};
template <>
struct QuantTraits<GgmlType::Q1_0> : quant_detail::ScaleQuants<core::BlockQ1_0, quant_detail::SignBitLayout, 1, 128> {};
template <>
struct QuantTraits<GgmlType::Q2_0> : quant_detail::ScaleQuants<core::BlockQ2_0, quant_detail::CrumbLayout, 1, 128> {};

}  // namespace strata::cuda

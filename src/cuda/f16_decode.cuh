// GGUF quants to F16 weights in registers, shared by the tensor-core GEMMs (mmq_f16.cuh, mmq_wgmma.cuh): byte pairs to F16 pairs, q * scale - min rounded once.
//
// 0x64 above a byte b is the F16 1024 + b (its ulp is 1 there), so a byte
// permute turns two quant bytes into two F16s exactly, one subtraction makes
// them q, and one F16 FMA (or multiply) applies the block's scale and min.
// The quants are unsigned for Q4_K/Q5_K and signed for Q6_K/Q8_0; signed
// bytes are biased by 128 first (bias_quants), so every byte is a valid
// unsigned one. tests/ops/gemm_ref.h rebuilds these weights on the CPU.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>

#include "core/quant.h"
#include "cuda/gemm_device.cuh"
#include "cuda/mma_ops.cuh"

namespace strata::cuda::gemm_detail {

using core::GgmlType;

constexpr bool signed_quants(GgmlType t) { return t == GgmlType::Q6_K || t == GgmlType::Q8_0; }

__device__ __forceinline__ __half2 half2_of(uint32_t u) {
  __half2 h;
  memcpy(&h, &u, sizeof h);
  return h;
}

// Four quant bytes as decode_pair wants them.
template <GgmlType T>
__device__ __forceinline__ uint32_t bias_quants(uint32_t q) {
  return signed_quants(T) ? q ^ 0x80808080u : q;
}

// Bytes 0, 1 (kHigh false) or 2, 3 (true) of the biased quants q as an F16
// pair of weights (lower byte in the low half): q * scale + neg_min for
// Q4_K/Q5_K, q * scale for Q6_K/Q8_0, each rounded once.
template <GgmlType T, bool kHigh>
__device__ __forceinline__ uint32_t decode_pair(uint32_t q, __half2 scale, __half2 neg_min) {
  const __half2 off = half2_of(signed_quants(T) ? 0x64806480u : 0x64006400u);  // F16 1152 or 1024, twice
  const __half2 v = __hsub2(half2_of(__byte_perm(q, 0x64646464u, kHigh ? 0x4342 : 0x4140)), off);
  if constexpr (signed_quants(T)) {
    return mma::half2_bits(__hmul2(v, scale));
  } else {
    return mma::half2_bits(__hfma2(v, scale, neg_min));
  }
}

// A Q4_K/Q5_K entry from a block's 6-bit scale and min: (d * sc, -(dmin *
// m)), both exact in F32, rounded to F16.
__device__ __forceinline__ uint32_t k4_entry(const RowHead& head, int sc, int m) {
  return mma::pack_half2(__fmul_rn(head.d, i2f_small(sc)), -__fmul_rn(head.dmin, i2f_small(m)));
}

// The prep table's entries for 32-value blocks j and j + 4 (j < 4) of the
// group at B (head its row_head): F16 pairs (scale, -min) for Q4_K/Q5_K, from
// the three scale bytes the two blocks share and with no branch on j (lanes
// taking different j run the same instructions); (d * sc_lo, d * sc_hi) for
// Q6_K's two 16-value halves; (d, 0) for Q8_0.
template <GgmlType T>
__device__ __forceinline__ void scale_entry_pair(const uint8_t* B, const RowHead& head, int j, uint32_t& lo,
                                                 uint32_t& hi) {
  if constexpr (T == GgmlType::Q4_K || T == GgmlType::Q5_K) {
    int sc0, m0, sc1, m1;
    unpack_scale_min_k4_pair_dev(B + 4, j, sc0, m0, sc1, m1);
    lo = k4_entry(head, sc0, m0);
    hi = k4_entry(head, sc1, m1);
  } else {
    auto entry = [&](int jj) {
      const RowScale rs = row_scale<T>(B, head, jj);
      if constexpr (T == GgmlType::Q6_K) {
        return mma::pack_half2(__fmul_rn(head.d, static_cast<float>(rs.s0)), __fmul_rn(head.d, static_cast<float>(rs.s1)));
      } else {
        return mma::pack_half2(rs.a, 0.0f);
      }
    };
    lo = entry(j);
    hi = entry(j + 4);
  }
}

// An entry's scale (for Q6_K that of the block's first or second 16 values)
// and min as the broadcast pairs decode_pair takes.
template <GgmlType T>
__device__ __forceinline__ __half2 entry_scale(uint32_t e, bool second_half) {
  const __half2 h = half2_of(e);
  return T == GgmlType::Q6_K && second_half ? __high2half2(h) : __low2half2(h);
}
__device__ __forceinline__ __half2 entry_neg_min(uint32_t e) { return __high2half2(half2_of(e)); }

}  // namespace strata::cuda::gemm_detail

// GGUF quants to F16 weights in registers, shared by the tensor-core GEMMs (mmq_f16.cuh, mmq_wgmma.cuh): byte pairs to F16 pairs, q * scale - min rounded once.
//
// 0x64 above a byte b is the F16 1024 + b (its ulp is 1 there), so a byte
// permute turns two quant bytes into two F16s exactly, one subtraction makes
// them q, and one F16 FMA (or multiply) applies the block's scale and min.
// The quants are unsigned for Q2_K/Q4_K/Q5_K and signed for Q3_K/Q6_K/Q8_0
// (QuantTraits::kSigned); signed bytes are biased by 128 first
// (bias_quants), so every byte is a valid unsigned one. tests/ops/gemm_ref.h
// rebuilds these weights on the CPU.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>

#include "core/quant/quant.h"
#include "cuda/gemm/mma_ops.cuh"
#include "cuda/gemm/quant_traits.cuh"

namespace strata::cuda::gemm_detail {

using core::GgmlType;

__device__ __forceinline__ __half2 half2_of(uint32_t u) {
  __half2 h;
  memcpy(&h, &u, sizeof h);
  return h;
}

// Four quant bytes as decode_pair wants them.
template <GgmlType T>
__device__ __forceinline__ uint32_t bias_quants(uint32_t q) {
  return QuantTraits<T>::kSigned ? q ^ 0x80808080u : q;
}

// Bytes 0, 1 (kHigh false) or 2, 3 (true) of the biased quants q as an F16
// pair of weights (lower byte in the low half): q * scale + neg_min for
// Q2_K/Q4_K/Q5_K, q * scale for Q3_K/Q6_K/Q8_0, each rounded once.
template <GgmlType T, bool kHigh>
__device__ __forceinline__ uint32_t decode_pair(uint32_t q, __half2 scale, __half2 neg_min) {
  const __half2 off = half2_of(QuantTraits<T>::kSigned ? 0x64806480u : 0x64006400u);  // F16 1152 or 1024, twice
  const __half2 v = __hsub2(half2_of(__byte_perm(q, 0x64646464u, kHigh ? 0x4342 : 0x4140)), off);
  if constexpr (QuantTraits<T>::kSigned) {
    return mma::half2_bits(__hmul2(v, scale));
  } else {
    return mma::half2_bits(__hfma2(v, scale, neg_min));
  }
}

// An entry's scale (for Q3_K and Q6_K that of the block's first or second 16
// values; a Q2_K entry is its half's own) and min as the broadcast pairs
// decode_pair takes.
template <GgmlType T>
__device__ __forceinline__ __half2 entry_scale(uint32_t e, bool second_half) {
  constexpr bool kBoth = QuantTraits<T>::kSplitHalves && entries_per_block<QuantTraits<T>>() == 1;
  const __half2 h = half2_of(e);
  return kBoth && second_half ? __high2half2(h) : __low2half2(h);
}
__device__ __forceinline__ __half2 entry_neg_min(uint32_t e) { return __high2half2(half2_of(e)); }

}  // namespace strata::cuda::gemm_detail

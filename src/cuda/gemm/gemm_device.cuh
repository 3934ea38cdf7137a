// Device helpers of the matrix kernels: loads of GGUF bytes, async copies, exact integer-to-float conversion, silu.
//
// Weights are decoded from the GGUF bytes where they sit (global or shared
// memory), each type as its QuantTraits says (quant_traits.cuh). The kernels
// form F32 results with the CPU's operations in the CPU's order (quant.h:
// no contraction), so they differ from it only in how they sum terms.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/gemm/gemm_host.h"
#include "cuda/gemm/wgmma_layout.h"

namespace strata::cuda::gemm_detail {

// ---- loads -----------------------------------------------------------------

__device__ __forceinline__ uint32_t ld_u32(const uint8_t* p) { return *reinterpret_cast<const uint32_t*>(p); }

// Q6_K (210-byte) and Q8_0 (34-byte) blocks are only 2-byte aligned. Host
// code calls it too (the grid types' quant_pairs in quant_pairs_test).
STRATA_HD __forceinline__ uint32_t ld_u32_a2(const uint8_t* p) { return wgmma::ld16(p) | wgmma::ld16(p + 2) << 16; }

__device__ __forceinline__ float ld_half(const uint8_t* p) {
  return __half2float(__ushort_as_half(*reinterpret_cast<const uint16_t*>(p)));
}

// ---- asynchronous copies (sm_80+) ------------------------------------------

__device__ __forceinline__ void cp_async_16(void* smem, const void* gmem) {
  const auto s = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem) : "memory");
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// Where the byte at src lands when its piece is staged by stage_piece.
__device__ __forceinline__ int piece_offset(const uint8_t* src) {
  return static_cast<int>(reinterpret_cast<uintptr_t>(src) & 15);
}

// Starts copies of bytes [src, src + len) to dst (16-byte aligned shared
// memory) as whole aligned 16-byte granules, spread over nlanes threads of
// which this is `lane`: the byte at src lands at dst + piece_offset(src), and
// dst needs len + 30 bytes at most. Reading whole granules keeps every copy
// 16 bytes wide whatever the block alignment (Q6_K, Q8_0).
__device__ __forceinline__ void stage_piece(uint8_t* dst, const uint8_t* src, int len, int lane, int nlanes) {
  const uintptr_t first = reinterpret_cast<uintptr_t>(src) & ~static_cast<uintptr_t>(15);
  const int n = static_cast<int>((reinterpret_cast<uintptr_t>(src) + static_cast<uintptr_t>(len) + 15 - first) >> 4);
  for (int c = lane; c < n; c += nlanes) cp_async_16(dst + 16 * c, reinterpret_cast<const void*>(first + 16u * c));
}

// ---- exact conversions and the CPU's F32 operations ------------------------

// (float)x for |x| < 2^22 with an integer add and one F32 subtraction instead
// of the quarter-rate I2F: 1.5 * 2^23 + x is exact in a float's mantissa.
__device__ __forceinline__ float i2f_small(int x) {
  return __fsub_rn(__int_as_float(0x4B400000 + x), 12582912.0f);
}

// silu as the CPU computes it: x / (1 + exp(-x)). expf here and in the C
// library may differ in the last bit or two, the only non-exact step.
__device__ __forceinline__ float silu(float x) { return __fdiv_rn(x, __fadd_rn(1.0f, expf(-x))); }

// Matrix g of a weight set (see WeightSet): pointer table or base + g * stride.
__device__ __forceinline__ const uint8_t* matrix_of(const MatrixSet& m, int g) {
  return m.ptrs != nullptr ? m.ptrs[g] : m.base + static_cast<size_t>(g) * m.stride;
}

}  // namespace strata::cuda::gemm_detail

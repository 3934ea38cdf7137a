// Device helpers shared by the kernels: deterministic warp reductions, ceil division, launch sizes.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace strata::cuda {

inline constexpr int kWarp = 32;
inline constexpr unsigned kFullMask = 0xffffffffu;

__host__ __device__ constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Butterfly reductions: every lane ends with the same value, and the order of
// the additions depends only on the lane layout, so results are bit-identical
// from run to run.
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = kWarp / 2; o > 0; o >>= 1) v = __fadd_rn(v, __shfl_xor_sync(kFullMask, v, o));
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = kWarp / 2; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(kFullMask, v, o));
  return v;
}

}  // namespace strata::cuda

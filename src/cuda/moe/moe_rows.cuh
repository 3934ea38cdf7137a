// Device helper of the MoE combine, shared by moe.cu and the norm that fuses it (norm.cu).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace strata::cuda {

// acc[j] = sum over slot = 0..k-1, in that order, of w * y[row][i + j] for
// the rows of token t whose peer flag is `peer` (every row when peer_row is
// null), F32 from 0 without fused operations: the CPU's combine order. Rows
// of the other card are not read.
template <int V>
__device__ __forceinline__ void slot_sums(const float* __restrict__ y, const float* __restrict__ w,
                                          const uint8_t* __restrict__ peer_row, bool peer, int64_t t, int k,
                                          int64_t n, int64_t i, float (&acc)[V]) {
#pragma unroll
  for (int j = 0; j < V; ++j) acc[j] = 0.0f;
  for (int s = 0; s < k; ++s) {
    const int64_t r = t * k + s;
    if (peer_row && (peer_row[r] != 0) != peer) continue;
    const float ws = w[r];
    const float* yr = y + r * n + i;
#pragma unroll
    for (int j = 0; j < V; ++j) acc[j] = __fadd_rn(acc[j], __fmul_rn(ws, yr[j]));
  }
}

}  // namespace strata::cuda

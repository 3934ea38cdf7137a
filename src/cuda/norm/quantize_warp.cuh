// One Q8A block (32 values) quantized by one warp, one value a lane, as core::quantize_activations and
// quantize_q8a_kernel do it.
#pragma once

#include <cuda_runtime.h>

#include "core/quant/quant.h"
#include "cuda/runtime/common.cuh"

namespace strata::cuda {

// Lane l's value v becomes out->qs[l]; lane 0 also writes d and the sum. The
// max of |v| is exact in any order, d = amax / 127 is rounded once, q =
// roundf(v / d) with the clamp only a subnormal d needs, and the integer sum
// is exact. All 32 lanes must call it.
__device__ __forceinline__ void quantize_q8a_warp(float v, core::BlockQ8A* out, int lane) {
  const float d = __fdiv_rn(warp_max(fabsf(v)), 127.0f);
  int q = 0;
  if (d != 0.0f) {
    float r = roundf(__fdiv_rn(v, d));
    r = r < 127.0f ? r : 127.0f;
    r = r > -127.0f ? r : -127.0f;
    q = static_cast<int>(r);
  }
  int sum = q;
#pragma unroll
  for (int o = kWarp / 2; o > 0; o >>= 1) sum += __shfl_xor_sync(kFullMask, sum, o);
  out->qs[lane] = static_cast<int8_t>(q);
  if (lane == 0) {
    out->d = d;
    out->sum = sum;
  }
}

}  // namespace strata::cuda

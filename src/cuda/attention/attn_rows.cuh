// Device helpers for the rows that enter attention: RoPE angles and the KV cache's Int8 row encoding, shared by
// the separate kernels (rope.cu, kv.cu) and the fused one (attn_inputs.cu) so that both give the same bits.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "core/runtime/kv_cache.h"
#include "cuda/runtime/common.cuh"

namespace strata::cuda {

// cos and sin of RoPE angle i (< n_rot / 2) at position p, as cpu::rope_*: theta = p * freq_base^(-2i/n_rot) in
// double, each rounded once to float.
__device__ __forceinline__ void rope_cos_sin(int32_t p, int i, int n_rot, float freq_base, float& c, float& s) {
  const double theta = static_cast<double>(p) * pow(static_cast<double>(freq_base), -2.0 * i / n_rot);
  double sd, cd;
  sincos(theta, &sd, &cd);
  c = static_cast<float>(cd);
  s = static_cast<float>(sd);
}

// A RoPE pair (a, b) rotated by (c, s): (a c - b s, a s + b c) in F32, no fused operations.
__device__ __forceinline__ void rope_rotate(float& a, float& b, float c, float s) {
  const float x = a, y = b;
  a = __fsub_rn(__fmul_rn(x, c), __fmul_rn(y, s));
  b = __fadd_rn(__fmul_rn(x, s), __fmul_rn(y, c));
}

// The Int8 KV encoding of value x in a row whose scale is d = amax / 127: roundf(x / d) clamped to +-127, 0 when
// d == 0 (an all-zero row).
__device__ __forceinline__ int8_t kv_int8(float x, float d) {
  const float q = d == 0.0f ? 0.0f : roundf(__fdiv_rn(x, d));
  return static_cast<int8_t>(fminf(fmaxf(q, -127.0f), 127.0f));
}

// Row dst_row of a KV cache plane (data, and scales for Int8) from the head_dim F32 values at src, written by one
// warp (lane = this thread's lane): F16 rounds to nearest even; Int8 takes d = amax / 127 (the max is exact in any
// order) and kv_int8 of each value.
template <core::KvType kType>
__device__ __forceinline__ void kv_store_row(const float* src, int head_dim, int lane, void* data, float* scales,
                                             int64_t dst_row) {
  if constexpr (kType == core::KvType::F16) {
    __half* dst = static_cast<__half*>(data) + dst_row * head_dim;
    for (int i = lane; i < head_dim; i += kWarp) dst[i] = __float2half_rn(src[i]);
  } else {
    int8_t* dst = static_cast<int8_t*>(data) + dst_row * head_dim;
    float amax = 0.0f;
    for (int i = lane; i < head_dim; i += kWarp) amax = fmaxf(amax, fabsf(src[i]));
    amax = warp_max(amax);
    const float d = __fdiv_rn(amax, 127.0f);
    if (lane == 0) scales[dst_row] = d;
    for (int i = lane; i < head_dim; i += kWarp) dst[i] = kv_int8(src[i], d);
  }
}

}  // namespace strata::cuda

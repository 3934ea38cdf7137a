// Device helpers shared by the kernels: deterministic warp reductions, ceil division, launch sizes, F32/F16 access.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace strata::cuda {

inline constexpr int kWarp = 32;
inline constexpr unsigned kFullMask = 0xffffffffu;

// Every kernel's first statement (tests/unit/pdl_prologue_test.cpp checks it).
// A kernel launched as a programmatic dependent (launch.h, compute capability
// 9.0) may start while the kernel before it on the stream still runs: here it
// waits until that kernel has finished and its writes are visible, so nothing
// before this line may touch global memory. It then lets the next kernel on
// the stream start the same way. Otherwise, and below sm_90, both are no-ops.
__device__ __forceinline__ void pdl_prologue() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

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

// RMSNorm's scale 1 / sqrt(ss / n + eps) for a sum of squares ss over n values, rounded as the CPU does.
__device__ __forceinline__ float inv_rms(float ss, int64_t n, float eps) {
  return __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(__fdiv_rn(ss, static_cast<float>(n)), eps)));
}

// Blocks for a grid-stride loop over n items, `threads` a block: one item a
// thread, at most max_blocks.
inline unsigned grid_blocks(int64_t n, int threads, int64_t max_blocks) {
  const int64_t b = ceil_div(n, threads);
  return static_cast<unsigned>(b < max_blocks ? b : max_blocks);
}

// Values to and from memory as floats: F32 as they are, F16 (the bits as
// uint16_t) widened exactly or rounded to nearest even (core::f32_to_fp16 but
// that a NaN becomes the device's NaN). load8/store8 move 8 values in 16-byte
// accesses (two for floats): p must be 16-byte aligned.
__device__ __forceinline__ float load1(const float* p) { return *p; }
__device__ __forceinline__ float load1(const uint16_t* p) { return __half2float(__ushort_as_half(*p)); }
__device__ __forceinline__ void store1(float* p, float v) { *p = v; }
__device__ __forceinline__ void store1(uint16_t* p, float v) { *p = __half_as_ushort(__float2half_rn(v)); }

__device__ __forceinline__ void load8(const float* p, float (&v)[8]) {
  const float4 a = reinterpret_cast<const float4*>(p)[0], b = reinterpret_cast<const float4*>(p)[1];
  v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
}
__device__ __forceinline__ void store8(float* p, const float (&v)[8]) {
  reinterpret_cast<float4*>(p)[0] = make_float4(v[0], v[1], v[2], v[3]);
  reinterpret_cast<float4*>(p)[1] = make_float4(v[4], v[5], v[6], v[7]);
}
// Halves in a 32-bit word as memory holds them: element 2j in the low 16 bits.
__device__ __forceinline__ void load8(const uint16_t* p, float (&v)[8]) {
  const uint4 h = *reinterpret_cast<const uint4*>(p);
  const uint32_t w[4] = {h.x, h.y, h.z, h.w};
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    v[2 * j] = __half2float(__ushort_as_half(static_cast<unsigned short>(w[j] & 0xffffu)));
    v[2 * j + 1] = __half2float(__ushort_as_half(static_cast<unsigned short>(w[j] >> 16)));
  }
}
__device__ __forceinline__ void store8(uint16_t* p, const float (&v)[8]) {
  uint32_t w[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    w[j] = static_cast<uint32_t>(__half_as_ushort(__float2half_rn(v[2 * j]))) |
           (static_cast<uint32_t>(__half_as_ushort(__float2half_rn(v[2 * j + 1]))) << 16);
  }
  *reinterpret_cast<uint4*>(p) = make_uint4(w[0], w[1], w[2], w[3]);
}

}  // namespace strata::cuda

// Device instructions of the F16 tensor-core kernels (sm_80+): ldmatrix, mma.sync m16n8k16 F16 -> F32, zero-filling cp.async, F16 packing, exp2.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

namespace strata::cuda::mma {

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// ldmatrix.x4 (mma_layout.h says which lane addresses which row). volatile:
// the data behind an unchanged address changes between barriers.
__device__ __forceinline__ void ldsm_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

__device__ __forceinline__ void ldsm_x4_trans(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// d += A B: A 16 x 16 and B 16 x 8 F16, d 16 x 8 F32 (layouts in mma_layout.h).
__device__ __forceinline__ void mma_f16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// acc[mt][2 n] and acc[mt][2 n + 1] += A[mt] times the two B fragments of one
// ldmatrix.x4 (registers {0, 1} and {2, 3}), for every m-tile mt.
template <int kMT, int kNT>
__device__ __forceinline__ void mma_x2(float (&acc)[kMT][kNT][4], int n, const uint32_t (&a)[kMT][4],
                                       const uint32_t (&b)[4]) {
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
    mma_f16(acc[mt][2 * n], a[mt], b[0], b[1]);
    mma_f16(acc[mt][2 * n + 1], a[mt], b[2], b[3]);
  }
}

// 16 bytes from global to shared memory, or 16 zero bytes when !valid (src is then not read).
__device__ __forceinline__ void cp_async_16_zfill(void* smem, const void* gmem, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(smem)), "l"(gmem),
               "r"(valid ? 16 : 0)
               : "memory");
}

__device__ __forceinline__ void cp_async_4_zfill(void* smem, const void* gmem, bool valid) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_u32(smem)), "l"(gmem), "r"(valid ? 4 : 0)
               : "memory");
}

// 2^x (MUFU.EX2, about 2 ulp); 2^-inf = +0.
__device__ __forceinline__ float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ uint32_t half2_bits(__half2 h) {
  uint32_t u;
  memcpy(&u, &h, sizeof u);
  return u;
}

// Two floats rounded to F16 (nearest even), `lo` in the low half.
__device__ __forceinline__ uint32_t pack_half2(float lo, float hi) { return half2_bits(__floats2half2_rn(lo, hi)); }

// x0, x1 as two F16 pairs: hi = F16(x), lo = F16(x - hi), so hi + lo holds x
// to about 2^-22 of itself (x - hi is exact in F32). Products with an F16
// operand summed over hi and lo thus keep nearly F32 precision.
__device__ __forceinline__ void pack_half2_split(float x0, float x1, uint32_t& hi, uint32_t& lo) {
  const __half2 h = __floats2half2_rn(x0, x1);
  const float2 hf = __half22float2(h);
  hi = half2_bits(h);
  lo = pack_half2(x0 - hf.x, x1 - hf.y);
}

// Four floats as F16 (hi: 4 halves in 8 bytes) and, when kSplit, their
// rounding errors as F16 too (lo), as pack_half2 / pack_half2_split.
template <bool kSplit>
__device__ __forceinline__ void pack_half4(float4 x, uint2& hi, uint2& lo) {
  if constexpr (kSplit) {
    pack_half2_split(x.x, x.y, hi.x, lo.x);
    pack_half2_split(x.z, x.w, hi.y, lo.y);
  } else {
    hi = make_uint2(pack_half2(x.x, x.y), pack_half2(x.z, x.w));
  }
}

}  // namespace strata::cuda::mma

// Device helpers of the matrix kernels: async copies, GGUF blocks decoded to packed int8, the CPU's term order.
//
// Weights are decoded from the GGUF bytes where they sit (global or shared
// memory). The unit of work is one 32-value block: a K-quant sub-block
// (Q4_K/Q5_K), half of two Q6_K sub-blocks, or one Q8_0 block. The
// matrix-vector kernels (mmvq) dot it with a Q8A activation block exactly and
// term<T>() turns the integer dot into the F32 term as core::vec_dot does
// (quant.h: same operations, same order, no contraction), so they differ from
// the CPU only in how they sum the terms. The tensor-core GEMM (mmq_f16.cuh)
// decodes the same w4 words to F16 weights.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "core/quant.h"
#include "cuda/dequant.cuh"
#include "cuda/gemm_host.h"

namespace strata::cuda::gemm_detail {

using core::BlockQ8A;
using core::GgmlType;

// ---- types -----------------------------------------------------------------

// False for every T: a static_assert on it fires only when a template is
// instantiated for a type its ladder does not cover.
template <GgmlType T>
inline constexpr bool kNoDeviceKernel = false;

// Bytes of 256 consecutive values of a row: one K-quant super-block, eight
// Q8_0 blocks, 256 floats or halves. Kernels step along K in these groups.
template <GgmlType T>
constexpr int bytes_per_256() {
  if constexpr (T == GgmlType::Q4_K) {
    return 144;
  } else if constexpr (T == GgmlType::Q5_K) {
    return 176;
  } else if constexpr (T == GgmlType::Q6_K) {
    return 210;
  } else if constexpr (T == GgmlType::Q8_0) {
    return 8 * 34;
  } else if constexpr (T == GgmlType::F32) {
    return 1024;
  } else if constexpr (T == GgmlType::F16 || T == GgmlType::BF16) {
    return 512;
  } else {
    static_assert(kNoDeviceKernel<T>, "bytes_per_256: a type without CUDA kernels");
    return 0;
  }
}

// ---- loads -----------------------------------------------------------------

__device__ __forceinline__ uint32_t ld_u32(const uint8_t* p) { return *reinterpret_cast<const uint32_t*>(p); }

// Q6_K (210-byte) and Q8_0 (34-byte) blocks are only 2-byte aligned.
__device__ __forceinline__ uint32_t ld_u32_a2(const uint8_t* p) {
  const auto* h = reinterpret_cast<const uint16_t*>(p);
  return static_cast<uint32_t>(h[0]) | (static_cast<uint32_t>(h[1]) << 16);
}

__device__ __forceinline__ float ld_half(const uint8_t* p) {
  return __half2float(__ushort_as_half(*reinterpret_cast<const uint16_t*>(p)));
}

__device__ __forceinline__ float bf16_bits_to_float(uint32_t b) { return __uint_as_float(b << 16); }

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

// ---- GGUF blocks as packed int8 --------------------------------------------
//
// B points at a 256-value group (bytes_per_256<T>()) of a row; j (0..7) picks the
// Q8A block inside it and k4 (0..7) four consecutive values of that block.
// w4 returns them as four signed bytes, values 4*k4 .. 4*k4+3 of block j:
// the operand of dp4a, and what the tensor-core GEMM decodes to F16.

template <GgmlType T>
__device__ __forceinline__ int w4(const uint8_t* B, int j, int k4) {
  if constexpr (T == GgmlType::Q4_K) {
    // qs at 16: group j/2 of 32 bytes, low nibbles for even j, high for odd.
    return static_cast<int>((ld_u32(B + 16 + 32 * (j >> 1) + 4 * k4) >> (4 * (j & 1))) & 0x0F0F0F0Fu);
  } else if constexpr (T == GgmlType::Q5_K) {
    // qh at 16 holds the fifth bit of value 32j + l at bit j of byte l; qs at 48.
    const uint32_t lo = (ld_u32(B + 48 + 32 * (j >> 1) + 4 * k4) >> (4 * (j & 1))) & 0x0F0F0F0Fu;
    const uint32_t hi = ((ld_u32(B + 16 + 4 * k4) >> j) & 0x01010101u) << 4;
    return static_cast<int>(lo | hi);
  } else if constexpr (T == GgmlType::Q6_K) {
    // Value 128h + 32k + l (j = 4h + k): low bits in ql[64h + 32(k&1) + l]
    // (high nibble for k >= 2), top bits at 2k of qh[32h + l] (qh at 128).
    const int h = j >> 2, k = j & 3;
    const uint32_t lo = (ld_u32_a2(B + 64 * h + 32 * (k & 1) + 4 * k4) >> (4 * (k >> 1))) & 0x0F0F0F0Fu;
    const uint32_t hi = ((ld_u32_a2(B + 128 + 32 * h + 4 * k4) >> (2 * k)) & 0x03030303u) << 4;
    // q - 32 in each byte. The bytes are 0..63, so with bit 7 set first no
    // subtraction borrows from its neighbour: three instructions where the
    // saturating __vsubss4 (never saturating here) is emulated in about twelve.
    return static_cast<int>(((lo | hi | 0x80808080u) - 0x20202020u) ^ 0x80808080u);
  } else {  // Q8_0: eight 34-byte blocks, qs after the 2-byte scale
    static_assert(T == GgmlType::Q8_0, "w4: not a quantized type");
    return static_cast<int>(ld_u32_a2(B + 34 * j + 2 + 4 * k4));
  }
}

// All eight words of block j (w4 for k4 = 0..7); 16-byte loads for Q4_K and
// Q5_K, whose groups start 16-byte aligned (B must then be).
template <GgmlType T>
__device__ __forceinline__ void w8(const uint8_t* B, int j, int (&w)[8]) {
  if constexpr (T == GgmlType::Q4_K || T == GgmlType::Q5_K) {
    constexpr int qs = T == GgmlType::Q4_K ? 16 : 48;
    const auto* q = reinterpret_cast<const uint4*>(B + qs + 32 * (j >> 1));
    const uint4 q0 = q[0], q1 = q[1];
    const uint32_t v[8] = {q0.x, q0.y, q0.z, q0.w, q1.x, q1.y, q1.z, q1.w};
    uint32_t h[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    if constexpr (T == GgmlType::Q5_K) {
      const auto* qh = reinterpret_cast<const uint4*>(B + 16);
      const uint4 h0 = qh[0], h1 = qh[1];
      const uint32_t hv[8] = {h0.x, h0.y, h0.z, h0.w, h1.x, h1.y, h1.z, h1.w};
#pragma unroll
      for (int i = 0; i < 8; ++i) h[i] = ((hv[i] >> j) & 0x01010101u) << 4;
    }
#pragma unroll
    for (int i = 0; i < 8; ++i) w[i] = static_cast<int>(((v[i] >> (4 * (j & 1))) & 0x0F0F0F0Fu) | h[i]);
  } else {
#pragma unroll
    for (int k4 = 0; k4 < 8; ++k4) w[k4] = w4<T>(B, j, k4);
  }
}

// The super-block scales of the group at B (K-quants): d, and dmin for
// Q4_K/Q5_K. Q8_0 keeps its scale per 32-value block (row_scale reads it).
struct RowHead {
  float d;
  float dmin;
};

template <GgmlType T>
__device__ __forceinline__ RowHead row_head(const uint8_t* B) {
  if constexpr (T == GgmlType::Q4_K || T == GgmlType::Q5_K) {
    return RowHead{ld_half(B), ld_half(B + 2)};
  } else if constexpr (T == GgmlType::Q6_K) {
    return RowHead{ld_half(B + 208), 0.0f};
  } else {
    static_assert(T == GgmlType::Q8_0, "row_head: not a quantized type");
    return RowHead{0.0f, 0.0f};  // Q8_0's scales are per block (row_scale)
  }
}

// The weight-side scales of Q8A block j of the group at B.
struct RowScale {
  float a;  // Q4_K/Q5_K: d * sc_j; Q6_K, Q8_0: d
  float b;  // Q4_K/Q5_K: dmin * m_j
  int s0;   // Q6_K: scale of the first 16 values
  int s1;   // Q6_K: scale of the last 16 values
};

template <GgmlType T>
__device__ __forceinline__ RowScale row_scale(const uint8_t* B, const RowHead& head, int j) {
  RowScale rs{0.0f, 0.0f, 0, 0};
  if constexpr (T == GgmlType::Q4_K || T == GgmlType::Q5_K) {
    // core::unpack_scale_min_k4 over the 12 bytes at 4.
    int sc, m;
    unpack_scale_min_k4_dev(B + 4, j, sc, m);
    rs.a = __fmul_rn(head.d, i2f_small(sc));
    rs.b = __fmul_rn(head.dmin, i2f_small(m));
  } else if constexpr (T == GgmlType::Q6_K) {
    rs.a = head.d;
    rs.s0 = static_cast<int8_t>(B[192 + 2 * j]);
    rs.s1 = static_cast<int8_t>(B[192 + 2 * j + 1]);
  } else {
    static_assert(T == GgmlType::Q8_0, "row_scale: not a quantized type");
    rs.a = ld_half(B + 34 * j);
  }
  return rs;
}

template <GgmlType T>
__device__ __forceinline__ RowScale row_scale(const uint8_t* B, int j) {
  return row_scale<T>(B, row_head<T>(B), j);
}

// The F32 term of one unit, as core::vec_dot forms it: lo and hi are the
// exact integer dots of the unit's first and last 16 values, ad and asum the
// activation block's d and sum (as float).
template <GgmlType T>
__device__ __forceinline__ float term(const RowScale& rs, int lo, int hi, float ad, float asum) {
  if constexpr (T == GgmlType::Q4_K || T == GgmlType::Q5_K) {
    // a.d * (ws * isum - wm * a.sum)
    return __fmul_rn(ad, __fsub_rn(__fmul_rn(rs.a, i2f_small(lo + hi)), __fmul_rn(rs.b, asum)));
  } else if constexpr (T == GgmlType::Q6_K) {
    // (d * a.d) * (sc_lo * isum_lo + sc_hi * isum_hi); |isum| < 2^24, so exact
    return __fmul_rn(__fmul_rn(rs.a, ad), __int2float_rn(rs.s0 * lo + rs.s1 * hi));
  } else {
    static_assert(T == GgmlType::Q8_0, "term: not a quantized type");
    // (d_w * d_a) * isum
    return __fmul_rn(__fmul_rn(rs.a, ad), i2f_small(lo + hi));
  }
}

// Eight weights of a float type starting at P (16-byte aligned), as F32.
template <GgmlType T>
__device__ __forceinline__ void wf8(const uint8_t* P, float (&w)[8]) {
  if constexpr (T == GgmlType::F32) {
    const float4 u = reinterpret_cast<const float4*>(P)[0];
    const float4 v = reinterpret_cast<const float4*>(P)[1];
    w[0] = u.x, w[1] = u.y, w[2] = u.z, w[3] = u.w, w[4] = v.x, w[5] = v.y, w[6] = v.z, w[7] = v.w;
  } else {
    const uint4 q = *reinterpret_cast<const uint4*>(P);
    const uint32_t h[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      if constexpr (T == GgmlType::F16) {
        w[2 * i] = __half2float(__ushort_as_half(static_cast<unsigned short>(h[i] & 0xffffu)));
        w[2 * i + 1] = __half2float(__ushort_as_half(static_cast<unsigned short>(h[i] >> 16)));
      } else {
        static_assert(T == GgmlType::BF16, "wf8: not a float type");
        w[2 * i] = bf16_bits_to_float(h[i] & 0xffffu);
        w[2 * i + 1] = bf16_bits_to_float(h[i] >> 16);
      }
    }
  }
}

// Matrix g of a weight set (see WeightSet): pointer table or base + g * stride.
__device__ __forceinline__ const uint8_t* matrix_of(const MatrixSet& m, int g) {
  return m.ptrs != nullptr ? m.ptrs[g] : m.base + static_cast<size_t>(g) * m.stride;
}

}  // namespace strata::cuda::gemm_detail

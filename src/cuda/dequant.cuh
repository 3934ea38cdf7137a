// Device dequantizers of the GGUF types F32, F16, BF16, Q8_0, Q4_K, Q5_K, Q6_K, bit-exact with core/quant's dequantize_row.
//
// Each value is computed with the same F32 operations, in the same order, as
// the CPU reference (explicit _rn intrinsics, so nvcc cannot fuse a multiply
// and a subtract into an FMA that rounds once). Shared by get_rows and the
// quantized GEMMs.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "core/quant.h"
#include "core/quant_blocks.h"

namespace strata::cuda {

__device__ __forceinline__ float half_bits_to_float(uint16_t h) { return __half2float(__ushort_as_half(h)); }
__device__ __forceinline__ float bf16_bits_to_float(uint16_t b) { return __uint_as_float(static_cast<uint32_t>(b) << 16); }

// Sub-block j (0..7) of a Q4_K/Q5_K scale array, as core::unpack_scale_min_k4.
__device__ __forceinline__ void unpack_scale_min_k4_dev(const uint8_t* bytes, int j, int& sc, int& m) {
  if (j < 4) {
    sc = bytes[j] & 63;
    m = bytes[j + 4] & 63;
  } else {
    sc = (bytes[j + 4] & 0x0f) | ((bytes[j - 4] >> 6) << 4);
    m = (bytes[j + 4] >> 4) | ((bytes[j] >> 6) << 4);
  }
}

// Sub-blocks j and j + 4 (j < 4) of a Q4_K/Q5_K scale array at once: bytes
// j, j + 4 and j + 8 hold both (unpack_scale_min_k4_dev of j and of j + 4).
__device__ __forceinline__ void unpack_scale_min_k4_pair_dev(const uint8_t* bytes, int j, int& sc0, int& m0, int& sc1,
                                                             int& m1) {
  const int a = bytes[j], b = bytes[j + 4], c = bytes[j + 8];
  sc0 = a & 63;
  m0 = b & 63;
  sc1 = (c & 0x0f) | ((a >> 6) << 4);
  m1 = (c >> 4) | ((b >> 6) << 4);
}

// Value e (0..31) of a Q8_0 block: d * q.
__device__ __forceinline__ float dequant_q8_0(const core::BlockQ8_0& b, int e) {
  return __fmul_rn(half_bits_to_float(b.d), static_cast<float>(b.qs[e]));
}

// (d * sc_j) * q - dmin * m_j for a Q4_K/Q5_K value q of sub-block j.
__device__ __forceinline__ float dequant_minmax(uint16_t d16, uint16_t dmin16, const uint8_t* scales, int j, int q) {
  int sc, m;
  unpack_scale_min_k4_dev(scales, j, sc, m);
  const float ws = __fmul_rn(half_bits_to_float(d16), static_cast<float>(sc));
  const float wm = __fmul_rn(half_bits_to_float(dmin16), static_cast<float>(m));
  return __fsub_rn(__fmul_rn(ws, static_cast<float>(q)), wm);
}

// Value e (0..255) of a Q4_K block. Group g = e / 64 keeps its 64 values in
// qs[32g .. 32g+31]: the first 32 in the low nibbles, the next 32 in the high.
__device__ __forceinline__ float dequant_q4_k(const core::BlockQ4_K& b, int e) {
  const int g = e / 64, hi = (e / 32) % 2, l = e % 32;
  const int q = (b.qs[32 * g + l] >> (4 * hi)) & 0x0f;
  return dequant_minmax(b.d, b.dmin, b.scales, e / 32, q);
}

// Value e (0..255) of a Q5_K block: the Q4_K nibble plus bit 2g (+1 for the
// high half of the group) of qh[l] as bit 4.
__device__ __forceinline__ float dequant_q5_k(const core::BlockQ5_K& b, int e) {
  const int g = e / 64, hi = (e / 32) % 2, l = e % 32;
  const int q = ((b.qs[32 * g + l] >> (4 * hi)) & 0x0f) | (((b.qh[l] >> (2 * g + hi)) & 1) << 4);
  return dequant_minmax(b.d, b.dmin, b.scales, e / 32, q);
}

// Value e (0..255) of a Q6_K block: (d * scales[e / 16]) * (q - 32). In half
// h = e / 128, with r = e % 128, k = r / 32, l = r % 32: the low 4 bits are in
// ql[64h + l + 32 (k & 1)] (low nibble for k < 2), the high 2 bits in
// qh[32h + l] at bit 2k.
__device__ __forceinline__ float dequant_q6_k(const core::BlockQ6_K& b, int e) {
  const int h = e / 128, r = e % 128, k = r / 32, l = r % 32;
  const int lo = (b.ql[64 * h + l + 32 * (k & 1)] >> (4 * (k >> 1))) & 0x0f;
  const int hi2 = (b.qh[32 * h + l] >> (2 * k)) & 3;
  const int q = (lo | (hi2 << 4)) - 32;
  return __fmul_rn(__fmul_rn(half_bits_to_float(b.d), static_cast<float>(b.scales[e / 16])), static_cast<float>(q));
}

// Element i of a row of type T (the row's bytes start at `row`).
template <core::GgmlType T>
__device__ __forceinline__ float dequant_row_value(const void* row, int64_t i) {
  using core::GgmlType;
  if constexpr (T == GgmlType::F32) {
    return static_cast<const float*>(row)[i];
  } else if constexpr (T == GgmlType::F16) {
    return half_bits_to_float(static_cast<const uint16_t*>(row)[i]);
  } else if constexpr (T == GgmlType::BF16) {
    return bf16_bits_to_float(static_cast<const uint16_t*>(row)[i]);
  } else if constexpr (T == GgmlType::Q8_0) {
    return dequant_q8_0(static_cast<const core::BlockQ8_0*>(row)[i / core::kQK8_0], static_cast<int>(i % core::kQK8_0));
  } else if constexpr (T == GgmlType::Q4_K) {
    return dequant_q4_k(static_cast<const core::BlockQ4_K*>(row)[i / core::kQK_K], static_cast<int>(i % core::kQK_K));
  } else if constexpr (T == GgmlType::Q5_K) {
    return dequant_q5_k(static_cast<const core::BlockQ5_K*>(row)[i / core::kQK_K], static_cast<int>(i % core::kQK_K));
  } else {
    static_assert(T == GgmlType::Q6_K, "dequant_row_value: no device dequantizer for this type");
    return dequant_q6_k(static_cast<const core::BlockQ6_K*>(row)[i / core::kQK_K], static_cast<int>(i % core::kQK_K));
  }
}

}  // namespace strata::cuda

// Per-type reference kernels behind quant.h's dispatch, and the helpers they share.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/quant/fp16.h"
#include "core/quant/quant.h"
#include "core/quant/quant_blocks.h"

namespace strata::core {

// Nearest integer of v clamped to [lo, hi], ties to even. Branch-free so that
// quantizer loops vectorise: clamping first keeps |v| < 2^22, where adding
// 1.5 * 2^23 leaves the rounded integer in the low mantissa bits and
// subtracting it again gives that integer exactly. NaN clamps to hi, so no
// input makes the int conversion undefined.
inline int round_clamp(float v, float lo, float hi) {
  v = v < hi ? v : hi;
  v = v > lo ? v : lo;
  return static_cast<int>((v + 0x1.8p23f) - 0x1.8p23f);
}

// A non-negative block scale stored as F16, rounded up rather than to nearest
// so that values divided by the stored scale never pass the integer range the
// scale was sized for (no clipping from the F16 rounding). Saturates at the
// largest half instead of becoming inf, so a huge input clips rather than
// decoding to inf/NaN.
inline uint16_t scale_to_fp16_up(float s) {
  s = std::min(s, 65504.0f);
  uint16_t h = f32_to_fp16(s);
  if (fp16_to_f32(h) < s) ++h;  // next half up; s <= 65504 keeps it finite
  return h;
}

// A block scale of either sign stored as the nearest F16, saturating at the
// largest half (a huge input then clips rather than decoding to inf/NaN).
inline uint16_t scale_to_fp16(float s) { return f32_to_fp16(std::max(-65504.0f, std::min(s, 65504.0f))); }

// The value of largest magnitude among x[0..n) with its sign (the first of
// equal magnitudes), 0 for an all-zero group: what the signed-scale
// quantizers map to their longer end.
inline float signed_absmax(const float* x, int n) {
  float amax = 0.0f, vmax = 0.0f;
  for (int j = 0; j < n; ++j) {
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      vmax = x[j];
    }
  }
  return vmax;
}

// 2N values stored as the nibbles of N bytes (value j in the low nibble of
// qs[j], value j + N in the high one), each nibble an index into a 16-entry
// int8 codebook: a group of IQ4_NL/IQ4_XS or a block of MXFP4 (N = 16), a
// sub-block of NVFP4 (N = 8). y = d * value; the dot is exact in int32.
template <int N>
inline void dequantize_nibbles(const int8_t* values, const uint8_t* qs, float d, float* y) {
  for (int j = 0; j < N; ++j) {
    y[j] = d * static_cast<float>(values[qs[j] & 0x0f]);
    y[j + N] = d * static_cast<float>(values[qs[j] >> 4]);
  }
}
// Inverse of dequantize_nibbles' layout: the 2N codebook indices as N bytes.
template <int N>
inline void pack_nibbles(const uint8_t* codes, uint8_t* qs) {
  for (int j = 0; j < N; ++j) qs[j] = static_cast<uint8_t>(codes[j] | codes[j + N] << 4);
}
template <int N>
inline int32_t dot_nibbles(const int8_t* values, const uint8_t* qs, const int8_t* qa) {
  int32_t s = 0;
  for (int j = 0; j < N; ++j) s += values[qs[j] & 0x0f] * qa[j] + values[qs[j] >> 4] * qa[j + N];
  return s;
}

// Exact integer dot of n weight quants with n activation quants.
template <typename Q>
inline int32_t dot_quants(const Q* q, const int8_t* qa, int n) {
  int32_t s = 0;
  for (int i = 0; i < n; ++i) s += static_cast<int32_t>(q[i]) * static_cast<int32_t>(qa[i]);
  return s;
}

// nb = number of super-blocks (n / 256). Orders of accumulation: quant.h.
// dot_*_portable are the plain loops; the type table takes quant_avx2's forms
// (the same bits) instead where the CPU has AVX2.
float dot_q4_k_portable(const BlockQ4_K* x, const BlockQ8A* a, int64_t nb);
float dot_q5_k_portable(const BlockQ5_K* x, const BlockQ8A* a, int64_t nb);
float dot_q6_k_portable(const BlockQ6_K* x, const BlockQ8A* a, int64_t nb);
float dot_q2_k_portable(const BlockQ2_K* x, const BlockQ8A* a, int64_t nb);
float dot_q3_k_portable(const BlockQ3_K* x, const BlockQ8A* a, int64_t nb);

void dequantize_q2_k(const BlockQ2_K* x, float* y, int64_t nb);
void quantize_q2_k(const float* x, BlockQ2_K* y, int64_t nb);

void dequantize_q3_k(const BlockQ3_K* x, float* y, int64_t nb);
void quantize_q3_k(const float* x, BlockQ3_K* y, int64_t nb);

void dequantize_q4_k(const BlockQ4_K* x, float* y, int64_t nb);
void quantize_q4_k(const float* x, BlockQ4_K* y, int64_t nb);

void dequantize_q5_k(const BlockQ5_K* x, float* y, int64_t nb);
void quantize_q5_k(const float* x, BlockQ5_K* y, int64_t nb);

void dequantize_q6_k(const BlockQ6_K* x, float* y, int64_t nb);
void quantize_q6_k(const float* x, BlockQ6_K* y, int64_t nb);

}  // namespace strata::core

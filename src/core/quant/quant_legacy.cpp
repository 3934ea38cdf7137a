// The scale types' reference kernels: Q4_0, Q4_1, Q5_0, Q5_1, Q1_0, Q2_0.
#include "core/quant/quant_legacy.h"

#include <algorithm>
#include <cmath>

#include "core/quant/fp16.h"
#include "core/quant/quant_kquants.h"

namespace strata::core {
namespace {

// Value j's fifth bit: bit j of qh as a little-endian u32.
uint32_t high_bits(const uint8_t qh[4]) {
  return static_cast<uint32_t>(qh[0]) | static_cast<uint32_t>(qh[1]) << 8 | static_cast<uint32_t>(qh[2]) << 16 |
         static_cast<uint32_t>(qh[3]) << 24;
}

// The stored (unsigned) quants of a block's nibbles and, for the 5-bit types, their fifth bits.
void unpack_nibbles(const uint8_t qs[16], uint32_t qh, int8_t q[32]) {
  for (int j = 0; j < 16; ++j) {
    q[j] = static_cast<int8_t>((qs[j] & 0x0f) | ((qh >> j) & 1) << 4);
    q[j + 16] = static_cast<int8_t>((qs[j] >> 4) | ((qh >> (j + 16)) & 1) << 4);
  }
}

// Packs 32 stored quants u (0..15, or 0..31 with a qh) into the nibbles and fifth bits.
void pack_nibbles(const int u[32], uint8_t qs[16], uint8_t* qh) {
  uint32_t h = 0;
  for (int j = 0; j < 16; ++j) {
    qs[j] = static_cast<uint8_t>((u[j] & 0x0f) | (u[j + 16] & 0x0f) << 4);
    h |= static_cast<uint32_t>(u[j] >> 4) << j | static_cast<uint32_t>(u[j + 16] >> 4) << (j + 16);
  }
  if (qh != nullptr) {
    for (int k = 0; k < 4; ++k) qh[k] = static_cast<uint8_t>(h >> (8 * k));
  }
}

// Scale-only types (Q4_0: levels = 8, Q5_0: 16): the value of largest
// magnitude maps to -levels (the longer end of -levels..levels - 1), the
// others round to nearest against the stored scale and clamp; u = q + levels.
template <int Levels>
uint16_t quantize_signed(const float* x, int u[32]) {
  const uint16_t dh = scale_to_fp16(signed_absmax(x, 32) / -static_cast<float>(Levels));
  const float d = fp16_to_f32(dh);
  const float inv = d != 0.0f ? 1.0f / d : 0.0f;
  for (int j = 0; j < 32; ++j) {
    u[j] = round_clamp(x[j] * inv, -static_cast<float>(Levels), static_cast<float>(Levels - 1)) + Levels;
  }
  return dh;
}

// Scale-and-min types (Q4_1: top = 15, Q5_1: 31): m = the block's minimum
// (stored to nearest), d = its range / top rounded up; u = (x - m) / d
// rounded to nearest and clamped to 0..top.
template <int Top>
void quantize_min(const float* x, uint16_t& dh, uint16_t& mh, int u[32]) {
  float lo = x[0], hi = x[0];
  for (int j = 1; j < 32; ++j) {
    lo = std::min(lo, x[j]);
    hi = std::max(hi, x[j]);
  }
  mh = scale_to_fp16(lo);
  dh = scale_to_fp16_up((hi - lo) / static_cast<float>(Top));
  const float m = fp16_to_f32(mh), d = fp16_to_f32(dh);
  const float inv = d > 0.0f ? 1.0f / d : 0.0f;
  for (int j = 0; j < 32; ++j) u[j] = round_clamp((x[j] - m) * inv, 0.0f, static_cast<float>(Top));
}

// Q1_0: each value's sign, and d = the mean magnitude (the scale of least
// squared error for those signs), stored to nearest. Bit j: x[j] >= 0.
uint16_t quantize_signs(const float* x, uint8_t qs[kQK1_0 / 8]) {
  double sum = 0.0;
  for (int j = 0; j < kQK1_0; ++j) sum += std::fabs(static_cast<double>(x[j]));
  std::fill(qs, qs + kQK1_0 / 8, uint8_t{0});
  for (int j = 0; j < kQK1_0; ++j) qs[j / 8] |= static_cast<uint8_t>((x[j] >= 0.0f ? 1 : 0) << (j % 8));
  return scale_to_fp16(static_cast<float>(sum / kQK1_0));
}

// Q2_0's fit of a block's values xn, scaled into [-1, 1], under a scale dn
// (the stored one scaled alike): each value's level to nearest, sxl = sum
// xn * level and sll = sum level^2.
struct LevelFit {
  float sxl = 0.0f, sll = 0.0f;
};
LevelFit fit_levels(const float* xn, float dn) {
  const float inv = dn != 0.0f ? 1.0f / dn : 0.0f;
  LevelFit f;
  for (int j = 0; j < kQK2_0; ++j) {
    const auto level = static_cast<float>(round_clamp(xn[j] * inv, -1.0f, 2.0f));
    f.sxl += xn[j] * level;
    f.sll += level * level;
  }
  return f;
}

// Q2_0: the levels -1, 0, 1, 2 are lopsided, so the scale takes the sign of
// the value of largest magnitude M and puts M at level t for t = 1, 1.25,
// .., 3 (past 2 it clips M, and gains on the rest); each candidate's levels
// then give their least-squares scale, and whichever of the eighteen stored
// scales has the smallest squared error, sum x^2 - 2 d sxl + d^2 sll, is
// kept (ties: the first; all levels 0 when none beats that). The values are
// divided by |M| first, so no sum overflows. u = level + 1.
uint16_t quantize_levels(const float* x, int u[kQK2_0]) {
  const float vmax = signed_absmax(x, kQK2_0);
  const float amax = std::fabs(vmax);
  float xn[kQK2_0];
  float sxx = 0.0f;
  for (int j = 0; j < kQK2_0; ++j) {
    xn[j] = amax > 0.0f ? x[j] / amax : 0.0f;
    sxx += xn[j] * xn[j];
  }
  uint16_t best_dh = 0;
  float best = sxx;
  const auto consider = [&](uint16_t dh) {
    const float dn = fp16_to_f32(dh) / amax;
    const LevelFit f = fit_levels(xn, dn);
    const float err = sxx - 2.0f * dn * f.sxl + dn * dn * f.sll;
    if (err < best) {
      best = err;
      best_dh = dh;
    }
    return f;
  };
  for (int k = 0; amax > 0.0f && k < 9; ++k) {
    const float t = 1.0f + 0.25f * static_cast<float>(k);
    const LevelFit f = consider(scale_to_fp16(vmax / t));
    if (f.sll > 0.0f) consider(scale_to_fp16(f.sxl / f.sll * amax));
  }
  const float dn = amax > 0.0f ? fp16_to_f32(best_dh) / amax : 0.0f;
  const float inv = dn != 0.0f ? 1.0f / dn : 0.0f;
  for (int j = 0; j < kQK2_0; ++j) u[j] = round_clamp(xn[j] * inv, -1.0f, 2.0f) + 1;
  return best_dh;
}

template <typename Block>
void dequantize_legacy(const Block* x, float* y, int64_t nb) {
  constexpr int kN = 32 * kChunks<Block>;
  for (int64_t i = 0; i < nb; ++i) {
    int8_t q[kN];
    legacy_quants(x[i], q);
    const float d = fp16_to_f32(x[i].d);
    if constexpr (requires { x[i].m; }) {
      const float m = fp16_to_f32(x[i].m);
      for (int j = 0; j < kN; ++j) y[kN * i + j] = d * static_cast<float>(q[j]) + m;
    } else {
      for (int j = 0; j < kN; ++j) y[kN * i + j] = d * static_cast<float>(q[j]);
    }
  }
}

// Per 32-value chunk c of block i with Q8A block a = kChunks * i + c: Q4_0,
// Q5_0, Q1_0, Q2_0: acc += (d * a.d) * (float)isum. Q4_1, Q5_1: acc += (d *
// a.d) * (float)isum + (m * a.d) * (float)a.sum.
template <typename Block>
float dot_legacy(const Block* x, const BlockQ8A* a, int64_t nb) {
  constexpr int kC = kChunks<Block>;
  float acc = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    int8_t q[32 * kC];
    legacy_quants(x[i], q);
    const float d = fp16_to_f32(x[i].d);
    for (int c = 0; c < kC; ++c) {
      const BlockQ8A& ab = a[kC * i + c];
      const float t = (d * ab.d) * static_cast<float>(dot_quants(q + 32 * c, ab.qs, 32));
      if constexpr (requires { x[i].m; }) {
        acc += t + (fp16_to_f32(x[i].m) * ab.d) * static_cast<float>(ab.sum);
      } else {
        acc += t;
      }
    }
  }
  return acc;
}

}  // namespace

void legacy_quants(const BlockQ4_0& b, int8_t q[32]) {
  unpack_nibbles(b.qs, 0, q);
  for (int j = 0; j < 32; ++j) q[j] = static_cast<int8_t>(q[j] - 8);
}

void legacy_quants(const BlockQ4_1& b, int8_t q[32]) { unpack_nibbles(b.qs, 0, q); }

void legacy_quants(const BlockQ5_0& b, int8_t q[32]) {
  unpack_nibbles(b.qs, high_bits(b.qh), q);
  for (int j = 0; j < 32; ++j) q[j] = static_cast<int8_t>(q[j] - 16);
}

void legacy_quants(const BlockQ5_1& b, int8_t q[32]) { unpack_nibbles(b.qs, high_bits(b.qh), q); }

void legacy_quants(const BlockQ1_0& b, int8_t q[kQK1_0]) {
  for (int j = 0; j < kQK1_0; ++j) q[j] = static_cast<int8_t>((b.qs[j / 8] >> (j % 8) & 1) ? 1 : -1);
}

void legacy_quants(const BlockQ2_0& b, int8_t q[kQK2_0]) {
  for (int j = 0; j < kQK2_0; ++j) q[j] = static_cast<int8_t>((b.qs[j / 4] >> (2 * (j % 4)) & 3) - 1);
}

void dequantize_q4_0(const BlockQ4_0* x, float* y, int64_t nb) { dequantize_legacy(x, y, nb); }
void dequantize_q4_1(const BlockQ4_1* x, float* y, int64_t nb) { dequantize_legacy(x, y, nb); }
void dequantize_q5_0(const BlockQ5_0* x, float* y, int64_t nb) { dequantize_legacy(x, y, nb); }
void dequantize_q5_1(const BlockQ5_1* x, float* y, int64_t nb) { dequantize_legacy(x, y, nb); }

void dequantize_q1_0(const BlockQ1_0* x, float* y, int64_t nb) { dequantize_legacy(x, y, nb); }
void dequantize_q2_0(const BlockQ2_0* x, float* y, int64_t nb) { dequantize_legacy(x, y, nb); }

void quantize_q4_0(const float* x, BlockQ4_0* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    int u[32];
    y[i].d = quantize_signed<8>(x + 32 * i, u);
    pack_nibbles(u, y[i].qs, nullptr);
  }
}

void quantize_q5_0(const float* x, BlockQ5_0* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    int u[32];
    y[i].d = quantize_signed<16>(x + 32 * i, u);
    pack_nibbles(u, y[i].qs, y[i].qh);
  }
}

void quantize_q4_1(const float* x, BlockQ4_1* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    int u[32];
    quantize_min<15>(x + 32 * i, y[i].d, y[i].m, u);
    pack_nibbles(u, y[i].qs, nullptr);
  }
}

void quantize_q5_1(const float* x, BlockQ5_1* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    int u[32];
    quantize_min<31>(x + 32 * i, y[i].d, y[i].m, u);
    pack_nibbles(u, y[i].qs, y[i].qh);
  }
}

void quantize_q1_0(const float* x, BlockQ1_0* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) y[i].d = quantize_signs(x + kQK1_0 * i, y[i].qs);
}

void quantize_q2_0(const float* x, BlockQ2_0* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    int u[kQK2_0];
    y[i].d = quantize_levels(x + kQK2_0 * i, u);
    std::fill(y[i].qs, y[i].qs + kQK2_0 / 4, uint8_t{0});
    for (int j = 0; j < kQK2_0; ++j) y[i].qs[j / 4] |= static_cast<uint8_t>(u[j] << (2 * (j % 4)));
  }
}

float dot_q4_0_portable(const BlockQ4_0* x, const BlockQ8A* a, int64_t nb) { return dot_legacy(x, a, nb); }
float dot_q4_1_portable(const BlockQ4_1* x, const BlockQ8A* a, int64_t nb) { return dot_legacy(x, a, nb); }
float dot_q5_0_portable(const BlockQ5_0* x, const BlockQ8A* a, int64_t nb) { return dot_legacy(x, a, nb); }
float dot_q5_1_portable(const BlockQ5_1* x, const BlockQ8A* a, int64_t nb) { return dot_legacy(x, a, nb); }
float dot_q1_0_portable(const BlockQ1_0* x, const BlockQ8A* a, int64_t nb) { return dot_legacy(x, a, nb); }
float dot_q2_0_portable(const BlockQ2_0* x, const BlockQ8A* a, int64_t nb) { return dot_legacy(x, a, nb); }

}  // namespace strata::core

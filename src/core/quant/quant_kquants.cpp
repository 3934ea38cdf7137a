// Q2_K, Q3_K, Q4_K, Q5_K and Q6_K: reference dequantizers, fast min/max quantizers and dots with Q8A.
#include "core/quant/quant_kquants.h"

#include <algorithm>
#include <cassert>
#include <cmath>



namespace strata::core {
namespace {

// ---- Q2_K, Q4_K, Q5_K: the min/max scheme over sub-blocks ---------------

// Quantizes nsub sub-blocks of len values to q[i] in 0..nmax with
// x ~ d*sc_j*q - dmin*m_j, sc_j and m_j in 0..smax; writes d, dmin (F16
// bits), sc and m, the caller packs them and q.
// Per sub-block: the min (never above 0, as the format only subtracts) and
// max give a scale (max - min) / nmax; d and dmin map the largest scale and
// min to smax. The min is rounded first, the scale is then taken to cover
// [-stored min, max] and rounded; values round against the stored scales, so
// the only error beyond half a step is clipping when a scale rounded down.
void quantize_minmax_subblocks(const float* x, int nsub, int len, int nmax, int smax, uint16_t& d16,
                               uint16_t& dmin16, uint8_t* sc, uint8_t* m, uint8_t* q) {
  assert(nsub <= 16);
  float hi[16], neg_lo[16];
  float max_scale = 0.0f, max_min = 0.0f;
  for (int j = 0; j < nsub; ++j) {
    const float* xs = x + len * j;
    float lo = 0.0f, top = xs[0];
    for (int l = 0; l < len; ++l) {
      lo = std::min(lo, xs[l]);
      top = std::max(top, xs[l]);
    }
    hi[j] = top;
    neg_lo[j] = -lo;
    max_scale = std::max(max_scale, (top - lo) / static_cast<float>(nmax));
    max_min = std::max(max_min, -lo);
  }
  const float levels = static_cast<float>(smax);
  d16 = scale_to_fp16_up(max_scale / levels);
  dmin16 = scale_to_fp16_up(max_min / levels);
  const float d = fp16_to_f32(d16), dmin = fp16_to_f32(dmin16);
  const float inv_d = d > 0.0f ? 1.0f / d : 0.0f;
  const float inv_dmin = dmin > 0.0f ? 1.0f / dmin : 0.0f;

  for (int j = 0; j < nsub; ++j) {
    m[j] = static_cast<uint8_t>(round_clamp(neg_lo[j] * inv_dmin, 0.0f, levels));
    const float off = dmin * static_cast<float>(m[j]);
    const float want = (hi[j] + off) / static_cast<float>(nmax);
    sc[j] = static_cast<uint8_t>(round_clamp(want * inv_d, 0.0f, levels));
    const float step = d * static_cast<float>(sc[j]);
    const float inv_step = step > 0.0f ? 1.0f / step : 0.0f;
    const float* xs = x + len * j;
    uint8_t* qs = q + len * j;
    for (int l = 0; l < len; ++l) {
      qs[l] = static_cast<uint8_t>(round_clamp((xs[l] + off) * inv_step, 0.0f, static_cast<float>(nmax)));
    }
  }
}

// Same float operations as ggml's dequantizer: (d*sc)*q - dmin*m.
void dequantize_minmax_superblock(uint16_t d16, uint16_t dmin16, const uint8_t* scales, const uint8_t* q,
                                  float* y) {
  const float d = fp16_to_f32(d16), dmin = fp16_to_f32(dmin16);
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    unpack_scale_min_k4(scales, j, sc, m);
    const float ws = d * static_cast<float>(sc), wm = dmin * static_cast<float>(m);
    for (int l = 0; l < 32; ++l) y[32 * j + l] = ws * static_cast<float>(q[32 * j + l]) - wm;
  }
}

// Continues the row accumulator acc over one super-block (order: quant.h).
float dot_minmax_superblock(uint16_t d16, uint16_t dmin16, const uint8_t* scales, const uint8_t* q,
                            const BlockQ8A* a, float acc) {
  const float d = fp16_to_f32(d16), dmin = fp16_to_f32(dmin16);
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    unpack_scale_min_k4(scales, j, sc, m);
    const int32_t isum = dot_quants(q + 32 * j, a[j].qs, 32);
    const float ws = d * static_cast<float>(sc), wm = dmin * static_cast<float>(m);
    acc += a[j].d * (ws * static_cast<float>(isum) - wm * static_cast<float>(a[j].sum));
  }
  return acc;
}

// Q4_K nibbles: group g of 64 values lives in qs[32g..32g+31], first 32
// values in the low nibbles, next 32 in the high nibbles.
void pack_nibbles_k(const uint8_t* q, uint8_t* qs) {
  for (int g = 0; g < 4; ++g) {
    for (int l = 0; l < 32; ++l) {
      qs[32 * g + l] = static_cast<uint8_t>((q[64 * g + l] & 0x0f) | ((q[64 * g + 32 + l] & 0x0f) << 4));
    }
  }
}

void unpack_nibbles_k(const uint8_t* qs, uint8_t* q) {
  for (int g = 0; g < 4; ++g) {
    for (int l = 0; l < 32; ++l) {
      q[64 * g + l] = qs[32 * g + l] & 0x0f;
      q[64 * g + 32 + l] = qs[32 * g + l] >> 4;
    }
  }
}

// Q5_K fifth bits: value 64g + l -> bit 2g of qh[l]; 64g + 32 + l -> bit 2g+1.
void pack_high_bits_q5(const uint8_t* q, uint8_t* qh) {
  for (int l = 0; l < 32; ++l) {
    uint8_t bits = 0;
    for (int g = 0; g < 4; ++g) {
      bits = static_cast<uint8_t>(bits | ((q[64 * g + l] >> 4) << (2 * g)) | ((q[64 * g + 32 + l] >> 4) << (2 * g + 1)));
    }
    qh[l] = bits;
  }
}

void unpack_q5_k(const BlockQ5_K& b, uint8_t* q) {
  unpack_nibbles_k(b.qs, q);
  for (int g = 0; g < 4; ++g) {
    for (int l = 0; l < 32; ++l) {
      q[64 * g + l] = static_cast<uint8_t>(q[64 * g + l] | (((b.qh[l] >> (2 * g)) & 1) << 4));
      q[64 * g + 32 + l] = static_cast<uint8_t>(q[64 * g + 32 + l] | (((b.qh[l] >> (2 * g + 1)) & 1) << 4));
    }
  }
}

// Q4_K and Q5_K differ only in how the quant bits are stored.
void unpack_quants(const BlockQ4_K& b, uint8_t* q) { unpack_nibbles_k(b.qs, q); }
void unpack_quants(const BlockQ5_K& b, uint8_t* q) { unpack_q5_k(b, q); }
void pack_quants(const uint8_t* q, BlockQ4_K& b) { pack_nibbles_k(q, b.qs); }
void pack_quants(const uint8_t* q, BlockQ5_K& b) {
  pack_nibbles_k(q, b.qs);
  pack_high_bits_q5(q, b.qh);
}

template <typename Block>
void dequantize_minmax(const Block* x, float* y, int64_t nb) {
  uint8_t q[kQK_K];
  for (int64_t i = 0; i < nb; ++i) {
    unpack_quants(x[i], q);
    dequantize_minmax_superblock(x[i].d, x[i].dmin, x[i].scales, q, y + i * kQK_K);
  }
}

template <typename Block>
void quantize_minmax(const float* x, Block* y, int64_t nb, int nmax) {
  uint8_t q[kQK_K];
  for (int64_t i = 0; i < nb; ++i) {
    uint8_t sc[8], m[8];
    quantize_minmax_subblocks(x + i * kQK_K, 8, 32, nmax, 63, y[i].d, y[i].dmin, sc, m, q);
    pack_scale_min_k4(sc, m, y[i].scales);
    pack_quants(q, y[i]);
  }
}

template <typename Block>
float dot_minmax(const Block* x, const BlockQ8A* a, int64_t nb) {
  uint8_t q[kQK_K];
  float acc = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    unpack_quants(x[i], q);
    acc = dot_minmax_superblock(x[i].d, x[i].dmin, x[i].scales, q, a + 8 * i, acc);
  }
  return acc;
}

// ---- Q6_K: 16 symmetric sub-blocks of 16 --------------------------------

// q[e] = stored 6-bit value - 32, in element order (layout: quant_blocks.h).
void unpack_q6_k(const BlockQ6_K& b, int8_t* q) {
  for (int h = 0; h < 2; ++h) {
    const uint8_t* ql = b.ql + 64 * h;
    const uint8_t* qh = b.qh + 32 * h;
    int8_t* out = q + 128 * h;
    for (int l = 0; l < 32; ++l) {
      out[l] = static_cast<int8_t>(((ql[l] & 0x0f) | (((qh[l] >> 0) & 3) << 4)) - 32);
      out[l + 32] = static_cast<int8_t>(((ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4)) - 32);
      out[l + 64] = static_cast<int8_t>(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
      out[l + 96] = static_cast<int8_t>(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
    }
  }
}

// u[e] = stored 6-bit value (0..63) in element order.
void pack_q6_k(const uint8_t* u, BlockQ6_K& b) {
  for (int h = 0; h < 2; ++h) {
    uint8_t* ql = b.ql + 64 * h;
    uint8_t* qh = b.qh + 32 * h;
    const uint8_t* in = u + 128 * h;
    for (int l = 0; l < 32; ++l) {
      ql[l] = static_cast<uint8_t>((in[l] & 0x0f) | ((in[l + 64] & 0x0f) << 4));
      ql[l + 32] = static_cast<uint8_t>((in[l + 32] & 0x0f) | ((in[l + 96] & 0x0f) << 4));
      qh[l] = static_cast<uint8_t>((in[l] >> 4) | ((in[l + 32] >> 4) << 2) | ((in[l + 64] >> 4) << 4) |
                                   ((in[l + 96] >> 4) << 6));
    }
  }
}

// ---- Q2_K, Q3_K: 2-bit planes over 16 sub-blocks of 16 --------------------

// q[128h + 32s + l] = bits 2s, 2s+1 of qs[32h + l] (layout: quant_blocks.h).
void unpack_2bit_planes(const uint8_t* qs, uint8_t* q) {
  for (int h = 0; h < 2; ++h) {
    for (int s = 0; s < 4; ++s) {
      for (int l = 0; l < 32; ++l) q[128 * h + 32 * s + l] = (qs[32 * h + l] >> (2 * s)) & 3;
    }
  }
}

void pack_2bit_planes(const uint8_t* q, uint8_t* qs) {
  for (int h = 0; h < 2; ++h) {
    for (int l = 0; l < 32; ++l) {
      qs[32 * h + l] = static_cast<uint8_t>(q[128 * h + l] | (q[128 * h + 32 + l] << 2) |
                                            (q[128 * h + 64 + l] << 4) | (q[128 * h + 96 + l] << 6));
    }
  }
}

// q[e] in -4..3: the low 2 bits, minus 4 where the value's hmask bit is 0.
void unpack_q3_k(const BlockQ3_K& b, int8_t* q) {
  uint8_t low[kQK_K];
  unpack_2bit_planes(b.qs, low);
  for (int e = 0; e < kQK_K; ++e) {
    const int high = (b.hmask[e % 32] >> (e / 32)) & 1;
    q[e] = static_cast<int8_t>(low[e] - (high ? 0 : 4));
  }
}

// u[e] = q[e] + 4 in 0..7, in element order.
void pack_q3_k(const uint8_t* u, BlockQ3_K& b) {
  uint8_t low[kQK_K];
  for (int e = 0; e < kQK_K; ++e) low[e] = u[e] & 3;
  pack_2bit_planes(low, b.qs);
  for (int l = 0; l < 32; ++l) b.hmask[l] = 0;
  for (int e = 0; e < kQK_K; ++e) b.hmask[e % 32] = static_cast<uint8_t>(b.hmask[e % 32] | ((u[e] >> 2) << (e / 32)));
}

int32_t sum_quants(const int8_t* qa, int n) {
  int32_t s = 0;
  for (int i = 0; i < n; ++i) s += qa[i];
  return s;
}

// ---- Q3_K, Q6_K: signed quants over 16 sub-blocks of 16 -------------------

// Per sub-block of 16 the value of largest magnitude maps to -qneg exactly
// (the asymmetric range -qneg..qneg-1 then loses at most one step on the
// other side); d maps the largest sub-block scale to smax; values round
// against the stored integer scales. Writes d (F16 bits), the scales sc in
// -smax..smax and u[e] = q[e] + qneg in element order.
void quantize_signed16(const float* xb, int qneg, int smax, uint16_t& d16, int* sc, uint8_t* u) {
  float scale[16];
  float max_abs_scale = 0.0f;
  for (int j = 0; j < 16; ++j) {
    float big = 0.0f;
    for (int l = 0; l < 16; ++l) {
      const float v = xb[16 * j + l];
      if (std::abs(v) > std::abs(big)) big = v;
    }
    scale[j] = -big / static_cast<float>(qneg);
    max_abs_scale = std::max(max_abs_scale, std::abs(scale[j]));
  }
  const float levels = static_cast<float>(smax);
  d16 = scale_to_fp16_up(max_abs_scale / levels);
  const float d = fp16_to_f32(d16);
  const float inv_d = d > 0.0f ? 1.0f / d : 0.0f;
  for (int j = 0; j < 16; ++j) {
    sc[j] = round_clamp(scale[j] * inv_d, -levels, levels);
    const float step = d * static_cast<float>(sc[j]);
    const float inv_step = step != 0.0f ? 1.0f / step : 0.0f;
    for (int l = 0; l < 16; ++l) {
      const int q = round_clamp(xb[16 * j + l] * inv_step, static_cast<float>(-qneg), static_cast<float>(qneg - 1));
      u[16 * j + l] = static_cast<uint8_t>(q + qneg);
    }
  }
}

// Continues the row accumulator acc over one super-block of signed quants q
// with 16 integer sub-block scales sc (order: quant.h's Q6_K).
float dot_signed16(const int8_t* q, const int* sc, float d, const BlockQ8A* a, float acc) {
  for (int c = 0; c < 8; ++c) {
    const BlockQ8A& b = a[c];
    const int32_t lo = dot_quants(q + 32 * c, b.qs, 16);
    const int32_t hi = dot_quants(q + 32 * c + 16, b.qs + 16, 16);
    const int32_t isum = sc[2 * c] * lo + sc[2 * c + 1] * hi;
    acc += (d * b.d) * static_cast<float>(isum);
  }
  return acc;
}

}  // namespace

// ---- Q4_K, Q5_K ------------------------------------------------------------

void dequantize_q4_k(const BlockQ4_K* x, float* y, int64_t nb) { dequantize_minmax(x, y, nb); }
void quantize_q4_k(const float* x, BlockQ4_K* y, int64_t nb) { quantize_minmax(x, y, nb, 15); }
float dot_q4_k_portable(const BlockQ4_K* x, const BlockQ8A* a, int64_t nb) { return dot_minmax(x, a, nb); }

void dequantize_q5_k(const BlockQ5_K* x, float* y, int64_t nb) { dequantize_minmax(x, y, nb); }
void quantize_q5_k(const float* x, BlockQ5_K* y, int64_t nb) { quantize_minmax(x, y, nb, 31); }
float dot_q5_k_portable(const BlockQ5_K* x, const BlockQ8A* a, int64_t nb) { return dot_minmax(x, a, nb); }

// ---- Q6_K ----------------------------------------------------------------

// Same float operations as ggml's dequantizer: (d*sc)*q.
void dequantize_q6_k(const BlockQ6_K* x, float* y, int64_t nb) {
  int8_t q[kQK_K];
  for (int64_t i = 0; i < nb; ++i) {
    unpack_q6_k(x[i], q);
    const float d = fp16_to_f32(x[i].d);
    for (int e = 0; e < kQK_K; ++e) {
      y[i * kQK_K + e] = d * static_cast<float>(x[i].scales[e / 16]) * static_cast<float>(q[e]);
    }
  }
}

// quantize_signed16 with q in -32..31 and int8 scales.
void quantize_q6_k(const float* x, BlockQ6_K* y, int64_t nb) {
  uint8_t u[kQK_K];
  for (int64_t i = 0; i < nb; ++i) {
    int sc[16];
    quantize_signed16(x + i * kQK_K, 32, 127, y[i].d, sc, u);
    for (int j = 0; j < 16; ++j) y[i].scales[j] = static_cast<int8_t>(sc[j]);
    pack_q6_k(u, y[i]);
  }
}

float dot_q6_k_portable(const BlockQ6_K* x, const BlockQ8A* a, int64_t nb) {
  int8_t q[kQK_K];
  float acc = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    unpack_q6_k(x[i], q);
    int sc[16];
    for (int j = 0; j < 16; ++j) sc[j] = x[i].scales[j];
    acc = dot_signed16(q, sc, fp16_to_f32(x[i].d), a + 8 * i, acc);
  }
  return acc;
}

// ---- Q2_K ----------------------------------------------------------------

// Same float operations as ggml's dequantizer: (d*sc)*q - dmin*m.
void dequantize_q2_k(const BlockQ2_K* x, float* y, int64_t nb) {
  uint8_t q[kQK_K];
  for (int64_t i = 0; i < nb; ++i) {
    unpack_2bit_planes(x[i].qs, q);
    const float d = fp16_to_f32(x[i].d), dmin = fp16_to_f32(x[i].dmin);
    for (int k = 0; k < 16; ++k) {
      const float ws = d * static_cast<float>(x[i].scales[k] & 0x0f);
      const float wm = dmin * static_cast<float>(x[i].scales[k] >> 4);
      for (int l = 0; l < 16; ++l) y[i * kQK_K + 16 * k + l] = ws * static_cast<float>(q[16 * k + l]) - wm;
    }
  }
}

// The min/max scheme of Q4_K over 16 sub-blocks of 16 with 4-bit scales and mins.
void quantize_q2_k(const float* x, BlockQ2_K* y, int64_t nb) {
  uint8_t q[kQK_K];
  for (int64_t i = 0; i < nb; ++i) {
    uint8_t sc[16], m[16];
    quantize_minmax_subblocks(x + i * kQK_K, 16, 16, 3, 15, y[i].d, y[i].dmin, sc, m, q);
    for (int k = 0; k < 16; ++k) y[i].scales[k] = static_cast<uint8_t>(sc[k] | (m[k] << 4));
    pack_2bit_planes(q, y[i].qs);
  }
}

float dot_q2_k_portable(const BlockQ2_K* x, const BlockQ8A* a, int64_t nb) {
  uint8_t q[kQK_K];
  float acc = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    unpack_2bit_planes(x[i].qs, q);
    const float d = fp16_to_f32(x[i].d), dmin = fp16_to_f32(x[i].dmin);
    const uint8_t* sc = x[i].scales;
    for (int c = 0; c < 8; ++c) {
      const BlockQ8A& b = a[8 * i + c];
      const int32_t lo = dot_quants(q + 32 * c, b.qs, 16);
      const int32_t hi = dot_quants(q + 32 * c + 16, b.qs + 16, 16);
      const int32_t isum = (sc[2 * c] & 0x0f) * lo + (sc[2 * c + 1] & 0x0f) * hi;
      const int32_t msum = (sc[2 * c] >> 4) * sum_quants(b.qs, 16) + (sc[2 * c + 1] >> 4) * sum_quants(b.qs + 16, 16);
      acc += b.d * (d * static_cast<float>(isum) - dmin * static_cast<float>(msum));
    }
  }
  return acc;
}

// ---- Q3_K ----------------------------------------------------------------

// Same float operations as ggml's dequantizer: (d*(sc-32))*q.
void dequantize_q3_k(const BlockQ3_K* x, float* y, int64_t nb) {
  int8_t q[kQK_K];
  for (int64_t i = 0; i < nb; ++i) {
    unpack_q3_k(x[i], q);
    const float d = fp16_to_f32(x[i].d);
    for (int k = 0; k < 16; ++k) {
      const float ws = d * static_cast<float>(unpack_scale_q3_k(x[i].scales, k) - 32);
      for (int l = 0; l < 16; ++l) y[i * kQK_K + 16 * k + l] = ws * static_cast<float>(q[16 * k + l]);
    }
  }
}

// quantize_signed16 with q in -4..3 and 6-bit scales (stored + 32).
void quantize_q3_k(const float* x, BlockQ3_K* y, int64_t nb) {
  uint8_t u[kQK_K];
  for (int64_t i = 0; i < nb; ++i) {
    int sc[16];
    quantize_signed16(x + i * kQK_K, 4, 31, y[i].d, sc, u);
    uint8_t stored[16];
    for (int j = 0; j < 16; ++j) stored[j] = static_cast<uint8_t>(sc[j] + 32);
    pack_scales_q3_k(stored, y[i].scales);
    pack_q3_k(u, y[i]);
  }
}

float dot_q3_k_portable(const BlockQ3_K* x, const BlockQ8A* a, int64_t nb) {
  int8_t q[kQK_K];
  float acc = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    unpack_q3_k(x[i], q);
    int sc[16];
    for (int k = 0; k < 16; ++k) sc[k] = unpack_scale_q3_k(x[i].scales, k) - 32;
    acc = dot_signed16(q, sc, fp16_to_f32(x[i].d), a + 8 * i, acc);
  }
  return acc;
}

}  // namespace strata::core

// The IQ types' reference kernels: IQ4_NL and IQ4_XS (the 4-bit codebook types).
#include "core/quant/quant_iquants.h"

#include "core/quant/fp16.h"
#include "core/quant/quant_kquants.h"
#include "core/quant/quant_tables.h"

namespace strata::core {
namespace {

// ---- IQ4_NL and IQ4_XS: 32 values on the 16-entry codebook ----------------

// Index of the codebook value nearest v (ties to the lower entry).
int nearest_iq4(float v) {
  int lo = 0, hi = 15;  // kIq4nlValues[lo] <= v < kIq4nlValues[hi] once inside the range
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (v < kIq4nlValues[mid]) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  return v - kIq4nlValues[lo] <= kIq4nlValues[hi] - v ? lo : hi;
}

// The signed scale of a group of 32 on the codebook, before storing: the
// value of largest magnitude first maps to -127 (the codebook's longer end),
// then the least-squares scale of the codebook points so chosen.
float group_scale_iq4(const float* x) {
  const float vmax = signed_absmax(x, 32);
  if (vmax == 0.0f) return 0.0f;
  const float d0 = vmax / -127.0f, inv = 1.0f / d0;
  float sxq = 0.0f, sqq = 0.0f;
  for (int j = 0; j < 32; ++j) {
    const float q = kIq4nlValues[nearest_iq4(x[j] * inv)];
    sxq += x[j] * q;
    sqq += q * q;
  }
  return sxq / sqq;  // sqq >= 1: no codebook value is 0
}

// The 16 bytes of a group for the stored scale d: value j in the low nibble
// of qs[j], value j + 16 in the high one.
void assign_iq4(const float* x, float d, uint8_t* qs) {
  const float inv = d != 0.0f ? 1.0f / d : 0.0f;
  for (int j = 0; j < 16; ++j) {
    qs[j] = static_cast<uint8_t>(nearest_iq4(x[j] * inv) | (nearest_iq4(x[j + 16] * inv) << 4));
  }
}

}  // namespace

void dequantize_iq4_nl(const BlockIQ4_NL* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) dequantize_nibbles<16>(kIq4nlValues, x[i].qs, fp16_to_f32(x[i].d), y + i * kQK4_NL);
}

void quantize_iq4_nl(const float* x, BlockIQ4_NL* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float* xb = x + i * kQK4_NL;
    y[i].d = scale_to_fp16(group_scale_iq4(xb));
    assign_iq4(xb, fp16_to_f32(y[i].d), y[i].qs);
  }
}

float dot_iq4_nl_portable(const BlockIQ4_NL* x, const BlockQ8A* a, int64_t nb) {
  float acc = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    acc += (fp16_to_f32(x[i].d) * a[i].d) * static_cast<float>(dot_nibbles<16>(kIq4nlValues, x[i].qs, a[i].qs));
  }
  return acc;
}

void dequantize_iq4_xs(const BlockIQ4_XS* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_f32(x[i].d);
    for (int ib = 0; ib < 8; ++ib) {
      const float dl = d * static_cast<float>(unpack_scale_iq4_xs(x[i], ib) - 32);
      dequantize_nibbles<16>(kIq4nlValues, x[i].qs + 16 * ib, dl, y + i * kQK_K + 32 * ib);
    }
  }
}

// Each group's scale as for IQ4_NL; the super-block scale maps the group
// scale of largest magnitude to -32, the others round to the nearest 6-bit
// step of it; values are then assigned against the stored group scales.
void quantize_iq4_xs(const float* x, BlockIQ4_XS* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float* xb = x + i * kQK_K;
    float s[8];
    for (int ib = 0; ib < 8; ++ib) s[ib] = group_scale_iq4(xb + 32 * ib);
    y[i].d = scale_to_fp16(signed_absmax(s, 8) / -32.0f);
    const float d = fp16_to_f32(y[i].d);
    const float inv = d != 0.0f ? 1.0f / d : 0.0f;
    uint8_t ls[8];
    for (int ib = 0; ib < 8; ++ib) ls[ib] = static_cast<uint8_t>(round_clamp(s[ib] * inv, -32.0f, 31.0f) + 32);
    pack_scales_iq4_xs(ls, y[i]);
    for (int ib = 0; ib < 8; ++ib) {
      assign_iq4(xb + 32 * ib, d * static_cast<float>(ls[ib] - 32), y[i].qs + 16 * ib);
    }
  }
}

float dot_iq4_xs_portable(const BlockIQ4_XS* x, const BlockQ8A* a, int64_t nb) {
  float acc = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_f32(x[i].d);
    for (int ib = 0; ib < 8; ++ib) {
      const BlockQ8A& ab = a[8 * i + ib];
      const int32_t isum = (unpack_scale_iq4_xs(x[i], ib) - 32) * dot_nibbles<16>(kIq4nlValues, x[i].qs + 16 * ib, ab.qs);
      acc += (d * ab.d) * static_cast<float>(isum);
    }
  }
  return acc;
}

}  // namespace strata::core

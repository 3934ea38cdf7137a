// The FP4 types' reference kernels: MXFP4 (a power-of-two scale per 32) and
// NVFP4 (an unsigned E4M3 scale per 16), both on the doubled E2M1 values.
#include "core/quant/quant_fp4.h"

#include <algorithm>
#include <cmath>

#include "core/quant/quant_kquants.h"
#include "core/quant/quant_tables.h"

namespace strata::core {
namespace {

// The code of the E2M1 value nearest v (in the doubled units of kFp4Values:
// magnitudes 0, 1, 2, 3, 4, 6, 8, 12), ties to the smaller magnitude; beyond
// 12 it clips. Zero is code 0, never the negative zero 8.
int nearest_fp4(double v) {
  const double m = std::abs(v);
  const int c = (m > 0.5) + (m > 1.5) + (m > 2.5) + (m > 3.5) + (m > 5.0) + (m > 7.0) + (m > 10.0);
  return c != 0 && v < 0.0 ? c | 8 : c;
}

// The codes of n values under the decoded (halved) scale d (all 0 when d is
// 0) and their squared error. In double: MXFP4's 2^-128 has no float
// reciprocal, and squared errors near the float range would overflow.
double code_span(const float* x, int n, float d, uint8_t* codes) {
  const double inv = d != 0.0f ? 1.0 / d : 0.0;
  double e = 0.0;
  for (int j = 0; j < n; ++j) {
    codes[j] = static_cast<uint8_t>(nearest_fp4(x[j] * inv));
    const double r = x[j] - static_cast<double>(d) * kFp4Values[codes[j]];
    e += r * r;
  }
  return e;
}

// Of the scale bytes a and b, the one whose codes have the smaller squared
// error (ties: a), with its n codes; decode maps a byte to its scale.
template <int N>
uint8_t better_scale(const float* x, uint8_t a, uint8_t b, const float* decode, uint8_t* codes) {
  uint8_t other[N];
  if (code_span(x, N, decode[b], other) < code_span(x, N, decode[a], codes)) {
    std::copy(other, other + N, codes);
    return b;
  }
  return a;
}

// MXFP4: of the two exponents that put the block's largest magnitude at
// 8 .. 16 (fine: may clip up to 12) or 4 .. 8 (coarse) doubled units, the one
// with the smaller squared error (ties: fine), within 0 .. 254 (0xff is
// refused by llama.cpp's row check); codes in element order.
uint8_t quantize_block_mxfp4(const float* x, uint8_t codes[kQKMxfp4]) {
  const float amax = std::abs(signed_absmax(x, kQKMxfp4));
  int ex = 0;
  std::frexp(amax, &ex);  // amax = m * 2^ex with m in [0.5, 1); ex = 0 for amax = 0
  const int fine = amax == 0.0f ? 0 : std::clamp(ex + 124, 0, 254);  // kE8m0Half[e] = 2^(e - 128) = 2^(ex - 4)
  const int coarse = std::min(fine + 1, 254);
  return better_scale<kQKMxfp4>(x, static_cast<uint8_t>(fine), static_cast<uint8_t>(coarse), kE8m0Half, codes);
}

// NVFP4, a sub-block of 16: of the smallest scale that holds the largest
// magnitude at 12 doubled units (0x7e, the largest, when none does: the values
// clip) and the one below it, the one with the smaller squared error (ties:
// the smaller; a zero sub-block takes 0). Bytes 0x00 .. 0x7e only:
// kUe4m3Half ascends there.
uint8_t quantize_sub_block_nvfp4(const float* x, uint8_t codes[16]) {
  const float want = std::abs(signed_absmax(x, 16)) / 12.0f;
  const int hi = static_cast<int>(std::lower_bound(kUe4m3Half + 1, kUe4m3Half + 0x7e, want) - kUe4m3Half);
  return better_scale<16>(x, static_cast<uint8_t>(hi - 1), static_cast<uint8_t>(hi), kUe4m3Half, codes);
}

}  // namespace

void dequantize_mxfp4(const BlockMXFP4* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    dequantize_nibbles<16>(kFp4Values, x[i].qs, kE8m0Half[x[i].e], y + i * kQKMxfp4);
  }
}

void quantize_mxfp4(const float* x, BlockMXFP4* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    uint8_t codes[kQKMxfp4];
    y[i].e = quantize_block_mxfp4(x + i * kQKMxfp4, codes);
    pack_nibbles<16>(codes, y[i].qs);
  }
}

float dot_mxfp4_portable(const BlockMXFP4* x, const BlockQ8A* a, int64_t nb) {
  float acc = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    acc += (kE8m0Half[x[i].e] * a[i].d) * static_cast<float>(dot_nibbles<16>(kFp4Values, x[i].qs, a[i].qs));
  }
  return acc;
}

void dequantize_nvfp4(const BlockNVFP4* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    for (int s = 0; s < 4; ++s) {
      dequantize_nibbles<8>(kFp4Values, x[i].qs + 8 * s, kUe4m3Half[x[i].d[s]], y + i * kQKNvfp4 + 16 * s);
    }
  }
}

void quantize_nvfp4(const float* x, BlockNVFP4* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    for (int s = 0; s < 4; ++s) {
      uint8_t codes[16];
      y[i].d[s] = quantize_sub_block_nvfp4(x + i * kQKNvfp4 + 16 * s, codes);
      pack_nibbles<8>(codes, y[i].qs + 8 * s);
    }
  }
}

float dot_nvfp4_portable(const BlockNVFP4* x, const BlockQ8A* a, int64_t nb) {
  float acc = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    for (int s = 0; s < 4; ++s) {
      const BlockQ8A& ab = a[2 * i + s / 2];  // sub-blocks 0, 1 take the first Q8A block, 2, 3 the second
      const int32_t isum = dot_nibbles<8>(kFp4Values, x[i].qs + 8 * s, ab.qs + 16 * (s % 2));
      acc += (kUe4m3Half[x[i].d[s]] * ab.d) * static_cast<float>(isum);
    }
  }
  return acc;
}

}  // namespace strata::core

// The CPU reference of the F16 tensor-core GEMM (src/cuda/gemm/mmq_f16.cuh): its F16 weights, F16 activations and error bound.
//
// The kernel decodes each quantized weight to F16 as q * scale + (-min),
// rounded once (an F16 FMA), after rounding the block's scale and min to F16;
// activations arrive as F16. Everything up to the products is reproduced
// here exactly; only the tensor core's F32 summation is not, so a check
// compares with the exact sum of the same products within
// (n / 16 + 8) * 2^-22 * sum |products|: one F32 rounding of the running
// sum per k16 step and a few to spare (the tensor core's additions round
// toward zero in places, so allow about two units per step). A wrong index,
// scale or lane swaps whole products and is far outside it.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/quant/fp16.h"
#include "core/quant/quant.h"
#include "core/quant/quant_blocks.h"
#include "core/quant/quant_legacy.h"
#include "core/quant/quant_tables.h"

namespace strata::test {

// v rounded to F16 (nearest even; overflow to inf), from the exact double.
inline float round_f16(double v) {
  if (v == 0.0 || !std::isfinite(v)) return static_cast<float>(v);
  int e = 0;
  std::frexp(v, &e);                            // 2^(e-1) <= |v| < 2^e
  const int ulp_exp = std::max(e - 1, -14) - 10;  // F16: 10 fraction bits, normals from 2^-14
  const double r = std::ldexp(std::nearbyint(std::ldexp(v, -ulp_exp)), ulp_exp);
  return std::fabs(r) > 65504.0 ? static_cast<float>(std::copysign(INFINITY, v)) : static_cast<float>(r);
}

inline float round_f16(float v) { return core::fp16_to_f32(core::f32_to_fp16(v)); }

// Magnitude l (0..31) of a grid IQ type's 32-value group g, from the grid tables.
inline int grid_magnitude(core::GgmlType type, const core::GridGroup& g, int l) {
  using core::GgmlType;
  switch (type) {
    case GgmlType::IQ2_XXS: return static_cast<int>((core::kIq2xxsGrid[g.idx[l / 8]] >> (8 * (l % 8))) & 255);
    case GgmlType::IQ2_XS: return static_cast<int>((core::kIq2xsGrid[g.idx[l / 8]] >> (8 * (l % 8))) & 255);
    case GgmlType::IQ2_S: return static_cast<int>((core::kIq2sGrid[g.idx[l / 8]] >> (8 * (l % 8))) & 255);
    case GgmlType::IQ3_XXS: return static_cast<int>((core::kIq3xxsGrid[g.idx[l / 4]] >> (8 * (l % 4))) & 255);
    default: return static_cast<int>((core::kIq3sGrid[g.idx[l / 4]] >> (8 * (l % 4))) & 255);
  }
}

// A grid IQ type's row as the GEMM's F16 weights: the signed magnitude times
// the span's scale (d / factor) * (2s + 1) rounded to F16.
template <class Block>
void grid_gemm_weights(core::GgmlType type, const uint8_t* row, int64_t n, float* w) {
  const core::GridShape shape = core::kGridShape<Block>;
  for (int64_t s = 0; s < n / 256; ++s) {
    const auto& b = reinterpret_cast<const Block*>(row)[s];
    const double d = core::fp16_to_f32(b.d);
    for (int ib = 0; ib < 8; ++ib) {
      const core::GridGroup g = core::read_grid_group(b, ib);
      for (int l = 0; l < 32; ++l) {
        const int m = grid_magnitude(type, g, l), q = ((g.signs[l / 8] >> (l % 8)) & 1) != 0 ? -m : m;
        const double scale = round_f16(d * (2 * g.scale[l / 16] + 1) / shape.factor);
        w[s * 256 + 32 * ib + l] = round_f16(q * scale);
      }
    }
  }
}

// A one-scale type's row (Q4_0 .. Q5_1, Q1_0, Q2_0) as the GEMM's F16
// weights: d * q (q the signed quants) or, with a min, d * q + m, rounded once.
template <class Block>
void scale_gemm_weights(const uint8_t* row, int64_t n, float* w) {
  constexpr int kN = 32 * core::kChunks<Block>;
  for (int64_t b = 0; b < n / kN; ++b) {
    Block blk;
    std::memcpy(&blk, row + sizeof(Block) * b, sizeof(Block));
    int8_t q[kN];
    core::legacy_quants(blk, q);
    const double d = core::fp16_to_f32(blk.d);
    // The kernels multiply (a zero quant under a negative d is -0, as F16 __hmul2 gives it) or, with a min, fma.
    for (int e = 0; e < kN; ++e) {
      if constexpr (requires { blk.m; })
        w[b * kN + e] = round_f16(q[e] * d + core::fp16_to_f32(blk.m));
      else
        w[b * kN + e] = round_f16(q[e] * d);
    }
  }
}

// Row `row` (n values) of a quantized matrix as the GEMM's F16 weights.
inline std::vector<float> gemm_weights(core::GgmlType type, const uint8_t* row, int64_t n) {
  using core::GgmlType;
  std::vector<float> w(static_cast<size_t>(n));
  const auto h = [](uint16_t bits) { return static_cast<double>(core::fp16_to_f32(bits)); };
  if (type == GgmlType::Q4_0) {
    scale_gemm_weights<core::BlockQ4_0>(row, n, w.data());
  } else if (type == GgmlType::Q4_1) {
    scale_gemm_weights<core::BlockQ4_1>(row, n, w.data());
  } else if (type == GgmlType::Q5_0) {
    scale_gemm_weights<core::BlockQ5_0>(row, n, w.data());
  } else if (type == GgmlType::Q5_1) {
    scale_gemm_weights<core::BlockQ5_1>(row, n, w.data());
  } else if (type == GgmlType::Q1_0) {
    scale_gemm_weights<core::BlockQ1_0>(row, n, w.data());
  } else if (type == GgmlType::Q2_0) {
    scale_gemm_weights<core::BlockQ2_0>(row, n, w.data());
  } else if (type == GgmlType::Q8_0) {
    const auto* b = reinterpret_cast<const core::BlockQ8_0*>(row);
    for (int64_t i = 0; i < n; ++i) w[i] = round_f16(b[i / 32].qs[i % 32] * h(b[i / 32].d));
  } else if (type == GgmlType::Q4_K || type == GgmlType::Q5_K) {
    for (int64_t s = 0; s < n / 256; ++s) {
      const uint8_t* B = row + s * (type == GgmlType::Q4_K ? 144 : 176);
      uint16_t d16, dmin16;
      std::memcpy(&d16, B, 2);
      std::memcpy(&dmin16, B + 2, 2);
      const uint8_t* qs = B + (type == GgmlType::Q4_K ? 16 : 48);
      for (int e = 0; e < 256; ++e) {
        const int j = e / 32, g = e / 64, hi = j % 2, l = e % 32;
        uint8_t sc, m;
        core::unpack_scale_min_k4(B + 4, j, sc, m);
        int q = (qs[32 * g + l] >> (4 * hi)) & 15;
        if (type == GgmlType::Q5_K) q |= ((B[16 + l] >> (2 * g + hi)) & 1) << 4;
        const double scale = round_f16(h(d16) * sc), neg_min = round_f16(-(h(dmin16) * m));
        w[s * 256 + e] = round_f16(q * scale + neg_min);
      }
    }
  } else if (type == GgmlType::Q2_K) {
    for (int64_t s = 0; s < n / 256; ++s) {
      const auto& b = reinterpret_cast<const core::BlockQ2_K*>(row)[s];
      for (int e = 0; e < 256; ++e) {
        const int q = (b.qs[32 * (e / 128) + e % 32] >> (2 * ((e / 32) % 4))) & 3;
        const int sm = b.scales[e / 16];
        const double scale = round_f16(h(b.d) * (sm & 15)), neg_min = round_f16(-(h(b.dmin) * (sm >> 4)));
        w[s * 256 + e] = round_f16(q * scale + neg_min);
      }
    }
  } else if (type == GgmlType::Q3_K) {
    for (int64_t s = 0; s < n / 256; ++s) {
      const auto& b = reinterpret_cast<const core::BlockQ3_K*>(row)[s];
      for (int e = 0; e < 256; ++e) {
        const int low = (b.qs[32 * (e / 128) + e % 32] >> (2 * ((e / 32) % 4))) & 3;
        const int q = ((b.hmask[e % 32] >> (e / 32)) & 1) != 0 ? low : low - 4;
        const double scale = round_f16(h(b.d) * (core::unpack_scale_q3_k(b.scales, e / 16) - 32));
        w[s * 256 + e] = round_f16(q * scale);
      }
    }
  } else if (type == GgmlType::IQ4_NL) {
    const auto* b = reinterpret_cast<const core::BlockIQ4_NL*>(row);
    for (int64_t i = 0; i < n; ++i) {
      const int l = static_cast<int>(i % 32);
      const int q = core::kIq4nlValues[(b[i / 32].qs[l % 16] >> (4 * (l / 16))) & 15];
      w[i] = round_f16(q * h(b[i / 32].d));
    }
  } else if (type == GgmlType::IQ4_XS) {
    for (int64_t s = 0; s < n / 256; ++s) {
      const auto& b = reinterpret_cast<const core::BlockIQ4_XS*>(row)[s];
      for (int e = 0; e < 256; ++e) {
        const int j = e / 32, l = e % 32;
        const int q = core::kIq4nlValues[(b.qs[16 * j + l % 16] >> (4 * (l / 16))) & 15];
        const double scale = round_f16(h(b.d) * (core::unpack_scale_iq4_xs(b, j) - 32));
        w[s * 256 + e] = round_f16(q * scale);
      }
    }
  } else if (type == GgmlType::IQ2_XXS) {
    grid_gemm_weights<core::BlockIQ2_XXS>(type, row, n, w.data());
  } else if (type == GgmlType::IQ2_XS) {
    grid_gemm_weights<core::BlockIQ2_XS>(type, row, n, w.data());
  } else if (type == GgmlType::IQ2_S) {
    grid_gemm_weights<core::BlockIQ2_S>(type, row, n, w.data());
  } else if (type == GgmlType::IQ3_XXS) {
    grid_gemm_weights<core::BlockIQ3_XXS>(type, row, n, w.data());
  } else if (type == GgmlType::IQ3_S) {
    grid_gemm_weights<core::BlockIQ3_S>(type, row, n, w.data());
  } else {
    for (int64_t s = 0; s < n / 256; ++s) {
      const auto& b = reinterpret_cast<const core::BlockQ6_K*>(row)[s];
      for (int e = 0; e < 256; ++e) {
        const int half = e / 128, r = e % 128, k = r / 32, l = r % 32;
        const int lo = (b.ql[64 * half + l + 32 * (k & 1)] >> (4 * (k >> 1))) & 15;
        const int hi2 = (b.qh[32 * half + l] >> (2 * k)) & 3;
        const double scale = round_f16(h(b.d) * b.scales[e / 16]);
        w[s * 256 + e] = round_f16(((lo | (hi2 << 4)) - 32) * scale);
      }
    }
  }
  return w;
}

// F32 values as the F16 activations the GEMM reads (bits and their floats).
inline std::vector<uint16_t> f16_bits(const std::vector<float>& x) {
  std::vector<uint16_t> b(x.size());
  for (size_t i = 0; i < x.size(); ++i) b[i] = core::f32_to_fp16(x[i]);
  return b;
}
inline std::vector<float> f16_values(const std::vector<uint16_t>& b) {
  std::vector<float> x(b.size());
  for (size_t i = 0; i < b.size(); ++i) x[i] = core::fp16_to_f32(b[i]);
  return x;
}

struct RefDot {
  double value = 0;
  double bound = 0;
};

// sum w[i] x[i] exactly (in double: F16 products and their sums of up to 2^20
// terms are exact enough) and the bound above.
inline RefDot gemm_ref(const float* w, const float* x, int64_t n) {
  double s = 0, a = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double p = static_cast<double>(w[i]) * x[i];
    s += p;
    a += std::fabs(p);
  }
  return {s, (static_cast<double>(n) / 16 + 8) * std::ldexp(1.0, -22) * a + 1e-30};
}

}  // namespace strata::test

// Test helpers for quantized matrices: build from random floats, read back as float64, and bound dot-product error.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/quant/quant.h"
#include "test_random.h"

namespace strata::test {

using core::GgmlType;

// The weight types the CPU backend computes with today.
inline const GgmlType kWeightTypes[] = {GgmlType::F32,  GgmlType::F16,  GgmlType::BF16, GgmlType::Q8_0,
                                        GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};

// n_out rows of n_in random floats, quantized row by row into `type`.
inline std::vector<uint8_t> random_matrix(Rng& rng, GgmlType type, int64_t n_in, int64_t n_out, float scale) {
  const size_t rb = core::row_size(type, n_in);
  std::vector<uint8_t> m(rb * n_out);
  for (int64_t r = 0; r < n_out; ++r) {
    const auto row = rng.vec(n_in, scale);
    core::quantize_row(type, row.data(), m.data() + r * rb, n_in);
  }
  return m;
}

// Row r of a quantized matrix, as the float64 values it stores.
inline std::vector<double> weight_row(GgmlType type, const uint8_t* m, int64_t n_in, int64_t r) {
  std::vector<float> f(n_in);
  core::dequantize_row(type, m + r * core::row_size(type, n_in), f.data(), n_in);
  return std::vector<double>(f.begin(), f.end());
}

// The values vec_dot actually multiplies a weight row of `type` with: x
// itself for F32 activations, or its Q8A blocks dequantized (d * q).
inline std::vector<double> activation_values(GgmlType type, const float* x, int64_t n) {
  std::vector<double> a(x, x + n);
  if (core::activation_kind(type) == core::ActivationKind::Q8A) {
    std::vector<core::BlockQ8A> q(n / 32);
    core::quantize_activations(x, q.data(), n);
    for (int64_t i = 0; i < n; ++i) a[i] = double(q[i / 32].d) * q[i / 32].qs[i % 32];
  }
  return a;
}

inline double dot64(const std::vector<double>& w, const std::vector<double>& a) {
  double s = 0;
  for (size_t i = 0; i < w.size(); ++i) s += w[i] * a[i];
  return s;
}

// Bound on |vec_dot - dot64| from F32 rounding alone (integer block sums are
// exact). The accumulator takes one term per element for F32/F16/BF16
// weights, one per 32-block for Q8A ones, so with m terms the sum errs by
// <= (m + 4) u sum|term| and each term by ~4u of itself. For Q4_K/Q5_K a term
// is d_a (ws isum - wm sum_a), two parts that can cancel: each is bounded by
// (|w_i| + 2 max|w|) |a_i| summed, as the sub-block offset wm <= ~max|w|.
inline double dot_tolerance(GgmlType type, const std::vector<double>& w, const std::vector<double>& a) {
  constexpr double u = 0x1p-24;
  const bool q8a = core::activation_kind(type) == core::ActivationKind::Q8A;
  const bool has_min = type == GgmlType::Q4_K || type == GgmlType::Q5_K;
  double wmax = 0;
  for (double v : w) wmax = std::max(wmax, std::fabs(v));
  double s = 0;
  for (size_t i = 0; i < w.size(); ++i) s += (std::fabs(w[i]) + (has_min ? 2 * wmax : 0.0)) * std::fabs(a[i]);
  const double terms = q8a ? w.size() / 32.0 : double(w.size());
  return (terms + 8) * 4 * u * s;
}

}  // namespace strata::test

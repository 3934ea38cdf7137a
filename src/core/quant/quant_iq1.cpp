// IQ1_S's and IQ1_M's reference kernels over quant_blocks.h's Iq1Group
// (read_iq1_group, write_iq1_group).
#include "core/quant/quant_iq1.h"

#include <cmath>
#include <vector>

#include "core/quant/fp16.h"
#include "core/quant/quant_kquants.h"
#include "core/quant/quant_tables_iq1.h"

namespace strata::core {
namespace {

constexpr float kDelta = 0.125f;  // IQ1S_DELTA = IQ1M_DELTA
constexpr int kGridPoints = 2048;
constexpr int kKeys = 6561;  // 3^8 ternary points

// Element j (0..7) of grid point idx: -1, 0 or +1.
int iq1_grid_value(int idx, int j) {
  return static_cast<int8_t>(static_cast<uint8_t>(kIq1sGrid[idx] >> (8 * j)));
}

// Every ternary point (key: base 3, element 0 the lowest digit, digit g + 1)
// to the grid point nearest it (squared distance; ties to the lower index).
const std::vector<uint16_t>& nearest_points() {
  static const std::vector<uint16_t> map = [] {
    std::vector<uint16_t> nearest(kKeys);
    for (int key = 0; key < kKeys; ++key) {
      int best = 0, best_dist = 1 << 30;
      for (int i = 0; i < kGridPoints && best_dist > 0; ++i) {
        int dist = 0;
        for (int j = 0, rest = key; j < 8; ++j, rest /= 3) {
          const int diff = rest % 3 - 1 - iq1_grid_value(i, j);
          dist += diff * diff;
        }
        if (dist < best_dist) best = i, best_dist = dist;
      }
      nearest[static_cast<size_t>(key)] = static_cast<uint16_t>(best);
    }
    return nearest;
  }();
  return map;
}

// An 8-group's grid point for the scale dl and its delta (+-1/8): each value
// x / dl - delta rounded to -1, 0 or +1, then the nearest grid point. Returns
// the point and, through err, the squared error of its values.
int group_point(const float* x, float dl, float delta, float& err) {
  const float inv = dl > 0.0f ? 1.0f / dl : 0.0f;
  int key = 0;
  for (int j = 7; j >= 0; --j) {
    const float t = x[j] * inv - delta;
    key = key * 3 + (t > 0.5f ? 2 : t < -0.5f ? 0 : 1);
  }
  const int idx = nearest_points()[static_cast<size_t>(key)];
  err = 0.0f;
  for (int j = 0; j < 8; ++j) {
    const float e = x[j] - dl * (static_cast<float>(iq1_grid_value(idx, j)) + delta);
    err += e * e;
  }
  return idx;
}

// A span of n8 8-groups at the scale dl: each 8-group's point and delta sign
// (neg bit l), the deltas one per 8-group or (shared) one for the span, the
// sign of least squared error. Returns the span's squared error.
float assign_span(const float* x, int n8, bool shared, float dl, uint16_t* idx, uint8_t& neg) {
  float total[2] = {0.0f, 0.0f};
  int points[2][4];
  float errs[2][4];
  for (int l = 0; l < n8; ++l) {
    for (int s = 0; s < 2; ++s) {
      points[s][l] = group_point(x + 8 * l, dl, s != 0 ? -kDelta : kDelta, errs[s][l]);
      total[s] += errs[s][l];
    }
  }
  const int span_sign = total[1] < total[0] ? 1 : 0;
  neg = 0;
  float err = 0.0f;
  for (int l = 0; l < n8; ++l) {
    const int s = shared ? span_sign : (errs[1][l] < errs[0][l] ? 1 : 0);
    idx[l] = static_cast<uint16_t>(points[s][l]);
    neg = static_cast<uint8_t>(neg | s << l);
    err += errs[s][l];
  }
  return err;
}

// The least-squares scale of the values a span chose at the scale dl (dl itself
// where they fit no positive scale).
float fitted_scale(const float* x, int n8, bool shared, float dl) {
  uint16_t idx[4];
  uint8_t neg;
  assign_span(x, n8, shared, dl, idx, neg);
  float sxv = 0.0f, svv = 0.0f;
  for (int j = 0; j < 8 * n8; ++j) {
    const float delta = ((neg >> (j / 8)) & 1) != 0 ? -kDelta : kDelta;
    const float v = static_cast<float>(iq1_grid_value(idx[j / 8], j % 8)) + delta;
    sxv += x[j] * v;
    svv += v * v;  // > 0: no value g + delta is 0
  }
  return sxv > 0.0f ? sxv / svv : dl;
}

// A span's scale before storing: of the scales that put its largest magnitude
// at 7/8 .. 17/8 of a step (the top ones clip it to 9/8), each refitted by
// least squares, the one of least squared error.
float span_scale(const float* x, int n8, bool shared) {
  float amax = 0.0f;
  for (int j = 0; j < 8 * n8; ++j) amax = std::fmax(amax, std::fabs(x[j]));
  if (amax == 0.0f) return 0.0f;
  float best = 0.0f, best_err = INFINITY;
  for (float top : {0.875f, 1.125f, 1.375f, 1.625f, 1.875f, 2.125f}) {
    const float dl = fitted_scale(x, n8, shared, amax / top);
    uint16_t idx[4];
    uint8_t neg;
    const float err = assign_span(x, n8, shared, dl, idx, neg);
    if (err < best_err) best = dl, best_err = err;
  }
  return best;
}

template <class Block>
constexpr bool kPer16 = kGridShape<Block>.per16;

// A super-block: the F16 d that maps the largest span scale to s = 7, each
// span's s to the nearest odd step 2s + 1 of d, then its points for that
// stored scale.
template <class Block>
void quantize_superblock(const float* x, Block& b) {
  constexpr int spans = kPer16<Block> ? 2 : 1, n8 = 4 / spans;  // per 32-group
  float s[16], smax = 0.0f;
  for (int h = 0; h < 8 * spans; ++h) {
    s[h] = span_scale(x + 8 * n8 * h, n8, !kPer16<Block>);
    smax = std::fmax(smax, s[h]);
  }
  const uint16_t d16 = scale_to_fp16_up(smax / 15.0f);
  const float d = fp16_to_f32(d16);
  b = Block{};
  for (int ib = 0; ib < 8; ++ib) {
    Iq1Group g{};
    for (int h = 0; h < spans; ++h) {
      const float sh = s[spans * ib + h];
      const int sc = d > 0.0f ? round_clamp((sh / d - 1.0f) * 0.5f, 0.0f, 7.0f) : 0;
      g.scale[h] = static_cast<uint8_t>(sc);
      uint8_t neg;
      assign_span(x + 32 * ib + 8 * n8 * h, n8, !kPer16<Block>, d * static_cast<float>(2 * sc + 1),
                  g.idx + n8 * h, neg);
      g.neg = static_cast<uint8_t>(g.neg | neg << (n8 * h));
    }
    if (spans == 1) g.scale[1] = g.scale[0];
    write_iq1_group(b, ib, g);
  }
  set_super_scale_bits(b, d16);
}

template <class Block>
void dequantize_blocks(const Block* x, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_f32(super_scale_bits(x[i]));
    for (int ib = 0; ib < 8; ++ib) {
      const Iq1Group g = read_iq1_group(x[i], ib);
      float* yg = y + i * kQK_K + 32 * ib;
      for (int j = 0; j < 32; ++j) {
        const float dl = d * static_cast<float>(2 * g.scale[j / 16] + 1);
        const float delta = ((g.neg >> (j / 8)) & 1) != 0 ? -kDelta : kDelta;
        yg[j] = dl * (static_cast<float>(iq1_grid_value(g.idx[j / 8], j % 8)) + delta);
      }
    }
  }
}

// quant.h's order: per 32-group, sum over its halves of (2s + 1) times the
// half's sum of (8 g + 8 delta) * qa (exact in int32), times (d / 8) * a.d.
template <class Block>
float dot_blocks(const Block* x, const BlockQ8A* a, int64_t nb) {
  float acc = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    const float dw = fp16_to_f32(super_scale_bits(x[i])) * kDelta;
    for (int ib = 0; ib < 8; ++ib) {
      const BlockQ8A& ab = a[8 * i + ib];
      const Iq1Group g = read_iq1_group(x[i], ib);
      int32_t isum = 0;
      for (int h = 0; h < 2; ++h) {
        int32_t part = 0;
        for (int j = 16 * h; j < 16 * h + 16; ++j) {
          const int w = 8 * iq1_grid_value(g.idx[j / 8], j % 8) + (((g.neg >> (j / 8)) & 1) != 0 ? -1 : 1);
          part += w * ab.qs[j];
        }
        isum += (2 * g.scale[h] + 1) * part;
      }
      acc += (dw * ab.d) * static_cast<float>(isum);
    }
  }
  return acc;
}

}  // namespace

void dequantize_iq1_s(const BlockIQ1_S* x, float* y, int64_t nb) { dequantize_blocks(x, y, nb); }
void quantize_iq1_s(const float* x, BlockIQ1_S* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) quantize_superblock(x + i * kQK_K, y[i]);
}
float dot_iq1_s_portable(const BlockIQ1_S* x, const BlockQ8A* a, int64_t nb) { return dot_blocks(x, a, nb); }

void dequantize_iq1_m(const BlockIQ1_M* x, float* y, int64_t nb) { dequantize_blocks(x, y, nb); }
void quantize_iq1_m(const float* x, BlockIQ1_M* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) quantize_superblock(x + i * kQK_K, y[i]);
}
float dot_iq1_m_portable(const BlockIQ1_M* x, const BlockQ8A* a, int64_t nb) { return dot_blocks(x, a, nb); }

}  // namespace strata::core

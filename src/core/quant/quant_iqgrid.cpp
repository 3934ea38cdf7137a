// The grid IQ types' reference kernels: IQ2_XXS and IQ3_XXS.
#include "core/quant/quant_iqgrid.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/quant/fp16.h"
#include "core/quant/quant_kquants.h"
#include "core/quant/quant_tables.h"

namespace strata::core {
namespace {

// One grid type: `dims` magnitudes per grid point (each 8-group is 8 / dims
// points), on the ascending levels (mids: the midpoints between neighbours);
// a 32-group's scale is d * (2s + 1) / factor for its 4-bit s. The
// quantizer tries the scales that map a group's largest magnitude to the
// lowest level (flat groups) and to each of the `top` highest, and looks
// points up in `nearest()` (make_nearest's map, built on first use).
struct Grid {
  int dims;
  int factor;
  int n_levels;
  const int* levels;
  const float* mids;
  int top;
  uint8_t (*magnitude)(int index, int k);
  const std::vector<uint8_t>& (*nearest)();

  // The index of the level nearest m (ties to the lower).
  int level_of(float m) const {
    int li = 0;
    for (int i = 0; i < n_levels - 1; ++i) li += m > mids[i] ? 1 : 0;
    return li;
  }
};

uint8_t iq2xxs_magnitude(int index, int k) { return static_cast<uint8_t>(kIq2xxsGrid[index] >> (8 * k)); }
uint8_t iq3xxs_magnitude(int index, int k) { return static_cast<uint8_t>(kIq3xxsGrid[index] >> (8 * k)); }

constexpr int kIq2xxsLevels[] = {8, 25, 43};
constexpr float kIq2xxsMids[] = {16.5f, 34.0f};
constexpr int kIq3xxsLevels[] = {4, 12, 20, 28, 36, 44, 52, 62};
constexpr float kIq3xxsMids[] = {8.0f, 16.0f, 24.0f, 32.0f, 40.0f, 48.0f, 57.0f};
const std::vector<uint8_t>& iq2xxs_nearest();
const std::vector<uint8_t>& iq3xxs_nearest();
constexpr Grid kIq2xxs{8, 8, 3, kIq2xxsLevels, kIq2xxsMids, 2, iq2xxs_magnitude, iq2xxs_nearest};
constexpr Grid kIq3xxs{4, 4, 8, kIq3xxsLevels, kIq3xxsMids, 3, iq3xxs_magnitude, iq3xxs_nearest};

// Each type's grid (grid_of<Block>).
template <class Block>
constexpr const Grid& grid_of();
template <>
constexpr const Grid& grid_of<BlockIQ2_XXS>() { return kIq2xxs; }
template <>
constexpr const Grid& grid_of<BlockIQ3_XXS>() { return kIq3xxs; }

// Every point of levels^dims (key: the level indices, base n_levels, first
// magnitude lowest) to the grid point nearest it (squared distance; ties to
// the lower index), so the quantizer rounds each magnitude to a level and
// looks the point up.
std::vector<uint8_t> make_nearest(const Grid& g) {
  int keys = 1;
  for (int k = 0; k < g.dims; ++k) keys *= g.n_levels;
  std::vector<uint8_t> nearest(static_cast<size_t>(keys));
  for (int key = 0; key < keys; ++key) {
    int best = 0, best_dist = 1 << 30;
    for (int i = 0; i < 256; ++i) {
      int dist = 0;
      for (int k = 0, rest = key; k < g.dims; ++k, rest /= g.n_levels) {
        const int diff = g.levels[rest % g.n_levels] - g.magnitude(i, k);
        dist += diff * diff;
      }
      if (dist < best_dist) best = i, best_dist = dist;
    }
    nearest[static_cast<size_t>(key)] = static_cast<uint8_t>(best);
  }
  return nearest;
}

const std::vector<uint8_t>& iq2xxs_nearest() {
  static const std::vector<uint8_t> map = make_nearest(kIq2xxs);
  return map;
}
const std::vector<uint8_t>& iq3xxs_nearest() {
  static const std::vector<uint8_t> map = make_nearest(kIq3xxs);
  return map;
}

// The sign bits of 8-group l of a 32-group's sign-and-scale word w: bit j
// set negates element j.
uint8_t group_signs(uint32_t w, int l) { return kSignsIq2xs[(w >> (7 * l)) & 127]; }

// A 32-group on the grid for the scale db: the grid indices of its points
// (idx, 32 / dims of them), the 28 sign-code bits of its word, and the values
// the indices and signs stand for (q: signed magnitudes). Each 8-group
// negates its negative elements, and where that is an odd number the one of
// smallest magnitude flips too (the codes hold even counts only).
uint32_t assign_group(const Grid& g, const float* x, float db, uint8_t* idx, int* q) {
  const float inv = db > 0.0f ? 1.0f / db : 0.0f;
  const std::vector<uint8_t>& nearest = g.nearest();
  const int points = 8 / g.dims;
  uint32_t signs = 0;
  for (int l = 0; l < 4; ++l) {
    const float* xl = x + 8 * l;
    uint32_t neg = 0;
    int smallest = 0;
    for (int j = 0; j < 8; ++j) {
      if (xl[j] < 0.0f) neg |= 1u << j;
      if (std::fabs(xl[j]) < std::fabs(xl[smallest])) smallest = j;
    }
    if (std::popcount(neg) % 2 != 0) neg ^= 1u << smallest;
    signs |= (neg & 127u) << (7 * l);
    for (int p = 0; p < points; ++p) {
      int key = 0;
      for (int k = g.dims - 1; k >= 0; --k) key = key * g.n_levels + g.level_of(std::fabs(xl[p * g.dims + k]) * inv);
      const int index = nearest[static_cast<size_t>(key)];
      idx[l * points + p] = static_cast<uint8_t>(index);
      for (int k = 0; k < g.dims; ++k) {
        const int j = p * g.dims + k, m = g.magnitude(index, k);
        q[8 * l + j] = ((neg >> j) & 1u) != 0 ? -m : m;
      }
    }
  }
  return signs;
}

// The least-squares scale of the points chosen for the scale db, and its
// squared error (through err).
float fitted_scale(const Grid& g, const float* x, float db, float& err) {
  uint8_t idx[8];
  int q[32];
  assign_group(g, x, db, idx, q);
  float sxq = 0.0f, sqq = 0.0f;
  for (int j = 0; j < 32; ++j) {
    sxq += x[j] * static_cast<float>(q[j]);
    sqq += static_cast<float>(q[j] * q[j]);
  }
  const float fit = sxq > 0.0f ? sxq / sqq : db;  // sqq > 0: no grid magnitude is 0
  assign_group(g, x, fit, idx, q);
  err = 0.0f;
  for (int j = 0; j < 32; ++j) {
    const float e = x[j] - fit * static_cast<float>(q[j]);
    err += e * e;
  }
  return fit;
}

// A 32-group's scale before storing: of the scales that map its largest
// magnitude to the lowest level or one of the top ones, each refitted by least squares to the points it
// chose, the one of least squared error.
float group_scale(const Grid& g, const float* x) {
  float amax = 0.0f;
  for (int j = 0; j < 32; ++j) amax = std::fmax(amax, std::fabs(x[j]));
  if (amax == 0.0f) return 0.0f;
  float best = 0.0f, best_err = INFINITY;
  for (int k = g.n_levels - g.top - 1; k < g.n_levels; ++k) {
    float err;
    const int level = g.levels[k < g.n_levels - g.top ? 0 : k];
    const float fit = fitted_scale(g, x, amax / static_cast<float>(level), err);
    if (err < best_err) best = fit, best_err = err;
  }
  return best;
}

// A super-block: the F16 d that maps the largest group scale to s = 15, each
// group's s to the nearest odd step 2s + 1 of d / factor, then its points for
// that stored scale. put(ib, idx, word) stores group ib's indices and its word
// (sign codes, s at bit 28). Returns d's bits.
template <class Put>
uint16_t quantize_superblock(const Grid& g, const float* x, Put put) {
  float s[8], smax = 0.0f;
  for (int ib = 0; ib < 8; ++ib) {
    s[ib] = group_scale(g, x + 32 * ib);
    smax = std::fmax(smax, s[ib]);
  }
  const uint16_t d16 = scale_to_fp16_up(smax * static_cast<float>(g.factor) / 31.0f);
  const float d = fp16_to_f32(d16);
  const float half_step = 2.0f / static_cast<float>(g.factor);  // (0.5 + s) * half_step = (2s + 1) / factor
  for (int ib = 0; ib < 8; ++ib) {
    const int sc = d > 0.0f ? round_clamp((s[ib] * static_cast<float>(g.factor) / d - 1.0f) * 0.5f, 0.0f, 15.0f) : 0;
    uint8_t idx[8];
    int q[32];
    const uint32_t signs = assign_group(g, x + 32 * ib, d * (0.5f + static_cast<float>(sc)) * half_step, idx, q);
    put(ib, idx, signs | (static_cast<uint32_t>(sc) << 28));
  }
  return d16;
}

// The integer dot of a 32-group with an activation block: its signed grid
// magnitudes (8-group l: word w's signs, points at idx) times qa.
int32_t dot_group(const Grid& g, const uint8_t* idx, uint32_t w, const int8_t* qa) {
  const int points = 8 / g.dims;
  int32_t s = 0;
  for (int l = 0; l < 4; ++l) {
    const uint8_t signs = group_signs(w, l);
    for (int j = 0; j < 8; ++j) {
      const int m = g.magnitude(idx[l * points + j / g.dims], j % g.dims);
      s += ((signs >> j) & 1) != 0 ? -m * qa[8 * l + j] : m * qa[8 * l + j];
    }
  }
  return s;
}

// A 32-group's 32 values for the scale db.
void dequantize_group(const Grid& g, const uint8_t* idx, uint32_t w, float db, float* y) {
  const int points = 8 / g.dims;
  for (int l = 0; l < 4; ++l) {
    const uint8_t signs = group_signs(w, l);
    for (int j = 0; j < 8; ++j) {
      const float v = db * static_cast<float>(g.magnitude(idx[l * points + j / g.dims], j % g.dims));
      y[8 * l + j] = ((signs >> j) & 1) != 0 ? -v : v;
    }
  }
}

// A row of a grid type: dequantize, quantize, and the dot with Q8A (quant.h's order: (d / factor * a.d) times
// (2s + 1) * isum, group by group). The layout: quant_blocks.h's iq_grid_indices and iq_grid_word.
template <class Block>
void dequantize_grid(const Block* x, float* y, int64_t nb) {
  const Grid& g = grid_of<Block>();
  const float half_step = 2.0f / static_cast<float>(g.factor);
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_f32(x[i].d);
    for (int ib = 0; ib < 8; ++ib) {
      const uint32_t w = iq_grid_word(x[i], ib);
      const float db = d * (0.5f + static_cast<float>(w >> 28)) * half_step;
      dequantize_group(g, iq_grid_indices(x[i], ib), w, db, y + i * kQK_K + 32 * ib);
    }
  }
}

template <class Block>
void quantize_grid(const float* x, Block* y, int64_t nb) {
  const Grid& g = grid_of<Block>();
  for (int64_t i = 0; i < nb; ++i) {
    auto* qs = reinterpret_cast<uint8_t*>(y[i].qs);
    y[i].d = quantize_superblock(g, x + i * kQK_K, [&](int ib, const uint8_t* idx, uint32_t w) {
      std::memcpy(qs + 8 * ib, idx, static_cast<size_t>(32 / g.dims));
      std::memcpy(qs + iq_grid_word_offset(&y[i], ib), &w, 4);
    });
  }
}

template <class Block>
float dot_grid(const Block* x, const BlockQ8A* a, int64_t nb) {
  const Grid& g = grid_of<Block>();
  const float inv_factor = 1.0f / static_cast<float>(g.factor);
  float acc = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    const float dw = fp16_to_f32(x[i].d) * inv_factor;
    for (int ib = 0; ib < 8; ++ib) {
      const BlockQ8A& ab = a[8 * i + ib];
      const uint32_t w = iq_grid_word(x[i], ib);
      const int32_t isum = static_cast<int32_t>(2 * (w >> 28) + 1) * dot_group(g, iq_grid_indices(x[i], ib), w, ab.qs);
      acc += (dw * ab.d) * static_cast<float>(isum);
    }
  }
  return acc;
}

}  // namespace

void dequantize_iq2_xxs(const BlockIQ2_XXS* x, float* y, int64_t nb) { dequantize_grid(x, y, nb); }
void quantize_iq2_xxs(const float* x, BlockIQ2_XXS* y, int64_t nb) { quantize_grid(x, y, nb); }
float dot_iq2_xxs_portable(const BlockIQ2_XXS* x, const BlockQ8A* a, int64_t nb) { return dot_grid(x, a, nb); }

void dequantize_iq3_xxs(const BlockIQ3_XXS* x, float* y, int64_t nb) { dequantize_grid(x, y, nb); }
void quantize_iq3_xxs(const float* x, BlockIQ3_XXS* y, int64_t nb) { quantize_grid(x, y, nb); }
float dot_iq3_xxs_portable(const BlockIQ3_XXS* x, const BlockQ8A* a, int64_t nb) { return dot_grid(x, a, nb); }

}  // namespace strata::core

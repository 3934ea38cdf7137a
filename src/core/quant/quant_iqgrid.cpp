// The grid IQ types' reference kernels: IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS and
// IQ3_S, over quant_blocks.h's GridGroup (each type's bytes: read_grid_group,
// write_grid_group).
#include "core/quant/quant_iqgrid.h"

#include <bit>
#include <cmath>
#include <vector>

#include "core/quant/fp16.h"
#include "core/quant/quant_kquants.h"
#include "core/quant/quant_tables.h"

namespace strata::core {
namespace {

// One grid type: its shape (quant_blocks.h: factor, scales per 16 or 32,
// parity codes or free signs), `dims` magnitudes per grid point (each 8-group
// is 8 / dims points), on the ascending levels (mids: the midpoints between
// neighbours). The quantizer tries the scales that map a span's largest
// magnitude to the lowest level (flat spans) and to each of the `top`
// highest, and looks points up in `nearest()` (make_nearest's map, built on
// first use).
struct Grid {
  GridShape shape;
  int dims;
  int n_levels;
  const int* levels;
  const float* mids;
  int top;
  int n_points;
  uint8_t (*magnitude)(int index, int k);
  const std::vector<uint16_t>& (*nearest)();

  int points() const { return 8 / dims; }  // grid points per 8-group

  // The scale d * (2s + 1) / factor of a span with 4-bit scale s.
  float span_db(float d, int s) const {
    return d * (0.5f + static_cast<float>(s)) * (2.0f / static_cast<float>(shape.factor));
  }

  // The index of the level nearest m (ties to the lower).
  int level_of(float m) const {
    int li = 0;
    for (int i = 0; i < n_levels - 1; ++i) li += m > mids[i] ? 1 : 0;
    return li;
  }

  // The magnitude of element j (0..31) of a group.
  int element(const GridGroup& gg, int j) const {
    return magnitude(gg.idx[(j / 8) * points() + (j % 8) / dims], j % dims);
  }
};

template <int Bytes>
uint8_t byte_of(uint64_t point, int k) {
  return static_cast<uint8_t>(point >> (8 * (k % Bytes)));
}
uint8_t iq2xxs_magnitude(int index, int k) { return byte_of<8>(kIq2xxsGrid[index], k); }
uint8_t iq2xs_magnitude(int index, int k) { return byte_of<8>(kIq2xsGrid[index], k); }
uint8_t iq2s_magnitude(int index, int k) { return byte_of<8>(kIq2sGrid[index], k); }
uint8_t iq3xxs_magnitude(int index, int k) { return byte_of<4>(kIq3xxsGrid[index], k); }
uint8_t iq3s_magnitude(int index, int k) { return byte_of<4>(kIq3sGrid[index], k); }

constexpr int kIq2Levels[] = {8, 25, 43};
constexpr float kIq2Mids[] = {16.5f, 34.0f};
constexpr int kIq3xxsLevels[] = {4, 12, 20, 28, 36, 44, 52, 62};
constexpr float kIq3xxsMids[] = {8.0f, 16.0f, 24.0f, 32.0f, 40.0f, 48.0f, 57.0f};
constexpr int kIq3sLevels[] = {1, 3, 5, 7, 9, 11, 13, 15};
constexpr float kIq3sMids[] = {2.0f, 4.0f, 6.0f, 8.0f, 10.0f, 12.0f, 14.0f};

std::vector<uint16_t> make_nearest(const Grid& g);
template <const Grid& G>
const std::vector<uint16_t>& nearest_of() {
  static const std::vector<uint16_t> map = make_nearest(G);
  return map;
}

constexpr Grid kIq2xxs{kGridShape<BlockIQ2_XXS>, 8, 3, kIq2Levels, kIq2Mids, 2, 256, iq2xxs_magnitude,
                       nearest_of<kIq2xxs>};
constexpr Grid kIq2xs{kGridShape<BlockIQ2_XS>, 8, 3, kIq2Levels, kIq2Mids, 2, 512, iq2xs_magnitude, nearest_of<kIq2xs>};
constexpr Grid kIq2s{kGridShape<BlockIQ2_S>, 8, 3, kIq2Levels, kIq2Mids, 2, 1024, iq2s_magnitude, nearest_of<kIq2s>};
constexpr Grid kIq3xxs{kGridShape<BlockIQ3_XXS>, 4, 8, kIq3xxsLevels, kIq3xxsMids, 3, 256, iq3xxs_magnitude,
                       nearest_of<kIq3xxs>};
constexpr Grid kIq3s{kGridShape<BlockIQ3_S>, 4, 8, kIq3sLevels, kIq3sMids, 3, 512, iq3s_magnitude, nearest_of<kIq3s>};

// Each type's grid (grid_of<Block>).
template <class Block>
constexpr const Grid& grid_of();
template <>
constexpr const Grid& grid_of<BlockIQ2_XXS>() { return kIq2xxs; }
template <>
constexpr const Grid& grid_of<BlockIQ2_XS>() { return kIq2xs; }
template <>
constexpr const Grid& grid_of<BlockIQ2_S>() { return kIq2s; }
template <>
constexpr const Grid& grid_of<BlockIQ3_XXS>() { return kIq3xxs; }
template <>
constexpr const Grid& grid_of<BlockIQ3_S>() { return kIq3s; }

// Every point of levels^dims (key: the level indices, base n_levels, first
// magnitude lowest) to the grid point nearest it (squared distance; ties to
// the lower index), so the quantizer rounds each magnitude to a level and
// looks the point up.
std::vector<uint16_t> make_nearest(const Grid& g) {
  int keys = 1;
  for (int k = 0; k < g.dims; ++k) keys *= g.n_levels;
  std::vector<uint16_t> nearest(static_cast<size_t>(keys));
  for (int key = 0; key < keys; ++key) {
    int best = 0, best_dist = 1 << 30;
    for (int i = 0; i < g.n_points; ++i) {
      int dist = 0;
      for (int k = 0, rest = key; k < g.dims; ++k, rest /= g.n_levels) {
        const int diff = g.levels[rest % g.n_levels] - g.magnitude(i, k);
        dist += diff * diff;
      }
      if (dist < best_dist) best = i, best_dist = dist;
    }
    nearest[static_cast<size_t>(key)] = static_cast<uint16_t>(best);
  }
  return nearest;
}

// A span of n8 8-groups on the grid for the scale db: each 8-group's grid
// points (idx, points() each), its sign bits, and the signed magnitudes they
// stand for (q). Each 8-group negates its negative elements; under parity
// codes, where that is an odd number the one of smallest magnitude flips too.
void assign_span(const Grid& g, const float* x, int n8, float db, uint16_t* idx, uint8_t* signs, int* q) {
  const float inv = db > 0.0f ? 1.0f / db : 0.0f;
  const std::vector<uint16_t>& nearest = g.nearest();
  const int points = g.points();
  for (int l = 0; l < n8; ++l) {
    const float* xl = x + 8 * l;
    uint32_t neg = 0;
    int smallest = 0;
    for (int j = 0; j < 8; ++j) {
      if (xl[j] < 0.0f) neg |= 1u << j;
      if (std::fabs(xl[j]) < std::fabs(xl[smallest])) smallest = j;
    }
    if (g.shape.parity && std::popcount(neg) % 2 != 0) neg ^= 1u << smallest;
    signs[l] = static_cast<uint8_t>(neg);
    for (int p = 0; p < points; ++p) {
      int key = 0;
      for (int k = g.dims - 1; k >= 0; --k) key = key * g.n_levels + g.level_of(std::fabs(xl[p * g.dims + k]) * inv);
      const int index = nearest[static_cast<size_t>(key)];
      idx[l * points + p] = static_cast<uint16_t>(index);
      for (int k = 0; k < g.dims; ++k) {
        const int j = p * g.dims + k, m = g.magnitude(index, k);
        q[8 * l + j] = ((neg >> j) & 1u) != 0 ? -m : m;
      }
    }
  }
}

// The least-squares scale of the points chosen for the scale db, and its
// squared error (through err).
float fitted_scale(const Grid& g, const float* x, int n8, float db, float& err) {
  uint16_t idx[8];
  uint8_t signs[4];
  int q[32];
  assign_span(g, x, n8, db, idx, signs, q);
  float sxq = 0.0f, sqq = 0.0f;
  for (int j = 0; j < 8 * n8; ++j) {
    sxq += x[j] * static_cast<float>(q[j]);
    sqq += static_cast<float>(q[j] * q[j]);
  }
  const float fit = sxq > 0.0f ? sxq / sqq : db;  // sqq > 0: no grid magnitude is 0
  assign_span(g, x, n8, fit, idx, signs, q);
  err = 0.0f;
  for (int j = 0; j < 8 * n8; ++j) {
    const float e = x[j] - fit * static_cast<float>(q[j]);
    err += e * e;
  }
  return fit;
}

// A span's scale before storing: of the scales that map its largest
// magnitude to the lowest level or one of the top ones, each refitted by
// least squares to the points it chose, the one of least squared error.
float span_scale(const Grid& g, const float* x, int n8) {
  float amax = 0.0f;
  for (int j = 0; j < 8 * n8; ++j) amax = std::fmax(amax, std::fabs(x[j]));
  if (amax == 0.0f) return 0.0f;
  float best = 0.0f, best_err = INFINITY;
  for (int k = g.n_levels - g.top - 1; k < g.n_levels; ++k) {
    float err;
    const int level = g.levels[k < g.n_levels - g.top ? 0 : k];
    const float fit = fitted_scale(g, x, n8, amax / static_cast<float>(level), err);
    if (err < best_err) best = fit, best_err = err;
  }
  return best;
}

// A super-block: the F16 d that maps the largest span scale to s = 15, each
// span's s to the nearest odd step 2s + 1 of d / factor, then its points for
// that stored scale. put(ib, group) stores group ib. Returns d's bits.
template <class Put>
uint16_t quantize_superblock(const Grid& g, const float* x, Put put) {
  const int spans = g.shape.per16 ? 2 : 1, n8 = 4 / spans;  // per 32-group
  float s[16], smax = 0.0f;
  for (int h = 0; h < 8 * spans; ++h) {
    s[h] = span_scale(g, x + 8 * n8 * h, n8);
    smax = std::fmax(smax, s[h]);
  }
  const uint16_t d16 = scale_to_fp16_up(smax * static_cast<float>(g.shape.factor) / 31.0f);
  const float d = fp16_to_f32(d16);
  const float factor = static_cast<float>(g.shape.factor);
  for (int ib = 0; ib < 8; ++ib) {
    GridGroup gg{};
    int q[32];
    for (int h = 0; h < spans; ++h) {
      const float sh = s[spans * ib + h];
      const int sc = d > 0.0f ? round_clamp((sh * factor / d - 1.0f) * 0.5f, 0.0f, 15.0f) : 0;
      gg.scale[h] = static_cast<uint8_t>(sc);
      assign_span(g, x + 32 * ib + 8 * n8 * h, n8, g.span_db(d, sc), gg.idx + h * n8 * g.points(), gg.signs + h * n8,
                  q);
    }
    if (spans == 1) gg.scale[1] = gg.scale[0];
    put(ib, gg);
  }
  return d16;
}

// The integer dot of a 32-group with an activation block: per span its
// signed grid magnitudes times qa, times 2s + 1 (exact in int32).
int32_t dot_group(const Grid& g, const GridGroup& gg, const int8_t* qa) {
  int32_t isum = 0;
  for (int h = 0; h < 2; ++h) {
    int32_t s = 0;
    for (int j = 16 * h; j < 16 * h + 16; ++j) {
      const int m = g.element(gg, j);
      s += ((gg.signs[j / 8] >> (j % 8)) & 1) != 0 ? -m * qa[j] : m * qa[j];
    }
    isum += (2 * gg.scale[h] + 1) * s;
  }
  return isum;
}

// A row of a grid type: dequantize, quantize, and the dot with Q8A (quant.h's
// order: (d / factor * a.d) times the group's isum, group by group).
template <class Block>
void dequantize_grid(const Block* x, float* y, int64_t nb) {
  const Grid& g = grid_of<Block>();
  for (int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_f32(x[i].d);
    for (int ib = 0; ib < 8; ++ib) {
      const GridGroup gg = read_grid_group(x[i], ib);
      const float db[2] = {g.span_db(d, gg.scale[0]), g.span_db(d, gg.scale[1])};
      float* yg = y + i * kQK_K + 32 * ib;
      for (int j = 0; j < 32; ++j) {
        const float v = db[j / 16] * static_cast<float>(g.element(gg, j));
        yg[j] = ((gg.signs[j / 8] >> (j % 8)) & 1) != 0 ? -v : v;
      }
    }
  }
}

template <class Block>
void quantize_grid(const float* x, Block* y, int64_t nb) {
  const Grid& g = grid_of<Block>();
  for (int64_t i = 0; i < nb; ++i) {
    y[i] = Block{};
    y[i].d = quantize_superblock(g, x + i * kQK_K,
                                 [&](int ib, const GridGroup& gg) { write_grid_group(y[i], ib, gg); });
  }
}

template <class Block>
float dot_grid(const Block* x, const BlockQ8A* a, int64_t nb) {
  const Grid& g = grid_of<Block>();
  const float inv_factor = 1.0f / static_cast<float>(g.shape.factor);
  float acc = 0.0f;
  for (int64_t i = 0; i < nb; ++i) {
    const float dw = fp16_to_f32(x[i].d) * inv_factor;
    for (int ib = 0; ib < 8; ++ib) {
      const BlockQ8A& ab = a[8 * i + ib];
      acc += (dw * ab.d) * static_cast<float>(dot_group(g, read_grid_group(x[i], ib), ab.qs));
    }
  }
  return acc;
}

}  // namespace

#define STRATA_GRID_KERNELS(type, Block)                                                                         \
  void dequantize_##type(const Block* x, float* y, int64_t nb) { dequantize_grid(x, y, nb); }                  \
  void quantize_##type(const float* x, Block* y, int64_t nb) { quantize_grid(x, y, nb); }                      \
  float dot_##type##_portable(const Block* x, const BlockQ8A* a, int64_t nb) { return dot_grid(x, a, nb); }
STRATA_GRID_KERNELS(iq2_xxs, BlockIQ2_XXS)
STRATA_GRID_KERNELS(iq2_xs, BlockIQ2_XS)
STRATA_GRID_KERNELS(iq2_s, BlockIQ2_S)
STRATA_GRID_KERNELS(iq3_xxs, BlockIQ3_XXS)
STRATA_GRID_KERNELS(iq3_s, BlockIQ3_S)
#undef STRATA_GRID_KERNELS

}  // namespace strata::core

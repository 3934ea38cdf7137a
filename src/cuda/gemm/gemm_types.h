// Host-side descriptions shared by the matrix kernels (mmvq, mmq, MoE GEMMs): weight sets, epilogues, tile lists.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/quant/quant.h"

namespace strata::cuda {

// One or more weight matrices of one type and shape, as GGUF stores them:
// n_out rows of n_in values, rows core::row_size(type, n_in) bytes apart.
// Matrix g (expert g; g = 0 for a dense matrix) is ptrs[g] when ptrs is set
// (a device array: an expert may then live anywhere, resident in VRAM or in a
// ring slot), else base + g * stride (the GGUF 3-D expert tensor layout).
// Every matrix must start 16-byte aligned; kernels read whole aligned 16-byte
// granules, so they may touch up to 15 bytes around a matrix, never a page
// it does not share.
struct WeightSet {
  core::GgmlType type = core::GgmlType::F32;
  const void* base = nullptr;
  size_t stride = 0;
  const uint8_t* const* ptrs = nullptr;
  int64_t n_in = 0;
  int64_t n_out = 0;
};

// A single dense matrix as a WeightSet.
inline WeightSet dense_weights(core::GgmlType type, const void* w, int64_t n_in, int64_t n_out) {
  WeightSet ws;
  ws.type = type;
  ws.base = w;
  ws.n_in = n_in;
  ws.n_out = n_out;
  return ws;
}

// What a kernel does with the dot products acc[r] = W row r . x of an output row y.
enum class Epilogue : int {
  Store = 0,       // y[r] = acc[r]
  SwigluPair = 1,  // w2 (up, same type and shape as w = gate) given: y[r] = silu(acc[r]) * acc2[r]
  SwigluMul = 2,   // y[r] = silu(y[r]) * acc[r]: y holds the gate on entry (gate and up of different types)
  Add = 3,         // y[r] = y[r] + acc[r]: y holds the residual on entry (x += W·a without a separate add)
};

// One tile row of a grouped GEMM: positions [begin, end) of group `group`,
// at most kGemmTileRows of them (kernels whose blocks take fewer run a tile
// as several blocks: mmq_internal.cuh position_blocks). Built on the device by gemm_tile_map
// (moe_gemm.cuh) from CSR offsets, so a table routed on the GPU never visits
// the host.
struct GemmTile {
  int32_t group;
  int32_t begin;
  int32_t end;
  int32_t pad;
};
inline constexpr int kGemmTileRows = 128;

// Tile-list capacity for n_rows positions over n_groups groups: every
// non-empty group wastes less than one tile.
inline int64_t gemm_max_tiles(int64_t n_rows, int64_t n_groups) {
  return (n_rows + kGemmTileRows - 1) / kGemmTileRows + n_groups;
}

}  // namespace strata::cuda

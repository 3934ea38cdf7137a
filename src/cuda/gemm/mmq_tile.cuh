// Shared by the GEMM kernels: a block's tile (group, positions, row maps), weight-row pointers, the output epilogue.
#pragma once

#include <type_traits>

#include "cuda/gemm/gemm_device.cuh"
#include "cuda/gemm/mmq_internal.cuh"
#include "cuda/gemm/quant_traits.cuh"

namespace strata::cuda::gemm_detail {

// A block's share of the GEMM: output features [f0, f0 + nf) of one group.
struct BlockTile {
  const uint8_t* W;   // the group's (gate) matrix
  const uint8_t* W2;  // its up matrix in SwigluPair mode, else nullptr
  int f0;
  int nf;     // ROWS, or ROWS / 2 in SwigluPair mode (then rows [nf, 2 nf) are up rows)
  int ncols;  // positions in the tile: xrow/yrow entries [0, ncols) are in use
};

// Resolves this block's tile (p.cols <= COLS positions at most) and fills
// xrow/yrow[COLS] (shared memory) with each position's activation row and
// output row, -1 past the tile. Returns false (for the whole block) when a
// grouped launch, sized for the worst case, has no tile for it, or the
// block's part of its tile is empty. Ends with __syncthreads().
template <int ROWS, int COLS>
__device__ __forceinline__ bool resolve_tile(const MmParams& p, int* xrow, int* yrow, BlockTile& bt) {
  static_assert(kGemmTileRows % COLS == 0, "a grouped tile splits into whole blocks");
  const int cols = p.cols;  // 64 or COLS (gemm)
  int group = 0, begin, end;
  if (p.tiles != nullptr) {
    const int parts = kGemmTileRows / cols;
    const int tile = static_cast<int>(blockIdx.y) / parts;
    if (tile >= *p.tile_count) return false;
    const GemmTile t = p.tiles[tile];
    group = t.group;
    begin = t.begin + (static_cast<int>(blockIdx.y) % parts) * cols;
    end = t.end;
    if (begin >= end) return false;
  } else {
    begin = static_cast<int>(blockIdx.y) * cols;
    end = static_cast<int>(min(static_cast<int64_t>(begin) + cols, p.n_rows));
  }
  const bool pair = p.epi == static_cast<int>(Epilogue::SwigluPair);
  bt.W = matrix_of(p.w, group);
  bt.W2 = pair ? matrix_of(p.w2, group) : nullptr;
  bt.nf = pair ? ROWS / 2 : ROWS;
  bt.f0 = static_cast<int>(blockIdx.x) * bt.nf;
  bt.ncols = max(0, min(end - begin, cols));
  for (int i = threadIdx.x; i < COLS; i += blockDim.x) {
    const int pos = begin + i;
    const bool in = pos < end;
    xrow[i] = in ? (p.x_rows != nullptr ? p.x_rows[pos] / p.x_div : pos) : -1;
    yrow[i] = in ? (p.y_rows != nullptr ? p.y_rows[pos] : pos) : -1;
  }
  __syncthreads();
  return true;
}

// Weight row r of the block's tile (gate rows first, then up rows in
// SwigluPair mode); nullptr past n_out.
__device__ __forceinline__ const uint8_t* tile_row(const MmParams& p, const BlockTile& bt, int r) {
  const bool up = r >= bt.nf;
  const int f = bt.f0 + (up ? r - bt.nf : r);
  if (f >= p.n_out) return nullptr;
  return (up ? bt.W2 : bt.W) + static_cast<int64_t>(f) * p.row_bytes;
}

// A quantized kernel's maps of its tile, in shared memory: each position's
// activation and output row (resolve_tile), and the global rows every stage
// copies from: weights (tile_row; nullptr past n_out) and activations
// (nullptr past the tile).
template <int ROWS, int COLS>
struct TileRows {
  int xrow[COLS], yrow[COLS];
  const uint8_t* wptr[ROWS];
  const uint8_t* xptr[COLS];
};

// resolve_tile, then the row pointers; false (for the whole block) when the
// block has no tile. Ends with __syncthreads().
template <int ROWS, int COLS>
__device__ __forceinline__ bool setup_tile(const MmParams& p, TileRows<ROWS, COLS>& tr, BlockTile& bt) {
  if (!resolve_tile<ROWS, COLS>(p, tr.xrow, tr.yrow, bt)) return false;
  for (int i = threadIdx.x; i < ROWS; i += blockDim.x) tr.wptr[i] = tile_row(p, bt, i);
  for (int i = threadIdx.x; i < COLS; i += blockDim.x) {
    tr.xptr[i] = tr.xrow[i] < 0 ? nullptr : p.x + static_cast<int64_t>(tr.xrow[i]) * p.ld_x;
  }
  __syncthreads();
  return true;
}

// Writes the block's results from Cs[position][row] (ld floats apart, shared
// memory) through the epilogue, consecutive threads on consecutive features:
// to the F32 rows of p.y (unless null) and, when p.yh is set, as F16 (rounded
// to nearest even) to its rows. Called by all NTHREADS threads; ROWS as given
// to resolve_tile (so bt.nf is ROWS, or ROWS / 2 in SwigluPair mode); the
// tile's bt.ncols positions.
template <int NTHREADS, int ROWS>
__device__ __forceinline__ void store_tile(const MmParams& p, const BlockTile& bt, const float* Cs, int ld,
                                           const int* yrow) {
  static_assert(ROWS % 2 == 0 && ROWS <= 256, "store_tile: an even ROWS up to 256");
  const bool pair = p.epi == static_cast<int>(Epilogue::SwigluPair);
  const bool mul = p.epi == static_cast<int>(Epilogue::SwigluMul);
  const bool add = p.epi == static_cast<int>(Epilogue::Add);
  // nf (= bt.nf) as a constant: the index splits are shifts, not integer divisions.
  auto run = [&](auto nf_const) {
    constexpr int nf = decltype(nf_const)::value;
    for (int i = threadIdx.x; i < bt.ncols * nf; i += NTHREADS) {
      const int e = i / nf, f = i % nf;
      const int yr = yrow[e], feat = bt.f0 + f;
      if (yr < 0 || feat >= p.n_out) continue;
      float v = Cs[e * ld + f];
      float* out = p.y != nullptr ? p.y + static_cast<int64_t>(yr) * p.ld_y + feat : nullptr;
      if (pair) {
        v = __fmul_rn(silu(v), Cs[e * ld + f + nf]);
      } else if (mul) {
        v = __fmul_rn(silu(*out), v);
      } else if (add) {
        v = __fadd_rn(*out, v);
      }
      if (out != nullptr) *out = v;
      if (p.yh != nullptr) p.yh[static_cast<int64_t>(yr) * p.ld_yh + feat] = __half_as_ushort(__float2half_rn(v));
    }
  };
  if (pair) {
    run(std::integral_constant<int, ROWS / 2>{});
  } else {
    run(std::integral_constant<int, ROWS>{});
  }
}

// ---- a stage's weights: raw GGUF bytes of the tile's rows ------------------

// 16-byte granules a row's 256-value group takes in shared memory: Q4_K,
// Q5_K and Q8_0 groups of a 16-byte aligned row with n_in % 256 == 0 start
// 16-byte aligned; Q2_K's 84-byte groups start 4-byte aligned, Q3_K's
// 110-byte and Q6_K's 210-byte ones anywhere even, so they take whole
// granules around them (stage_piece).
template <GgmlType T>
constexpr int staged_granules() {
  return QuantTraits<T>::kBytes256 % 16 == 0 ? QuantTraits<T>::kBytes256 / 16 : (QuantTraits<T>::kBytes256 + 14 + 15) / 16;
}

// Starts the copies of group kb of the rows wptr[0, ROWS) (nullptr: skipped)
// into Ws, rows `stride` bytes apart; called by all NTHREADS threads.
template <GgmlType T, int ROWS, int NTHREADS>
__device__ __forceinline__ void stage_weights(uint8_t* Ws, int stride, const uint8_t* const* wptr, int kb) {
  constexpr int kSB = QuantTraits<T>::kBytes256, kG = staged_granules<T>();
  for (int i = threadIdx.x; i < ROWS * kG; i += NTHREADS) {
    const int r = i / kG, c = i - r * kG;
    const uint8_t* row = wptr[r];
    if (row == nullptr) continue;
    const uintptr_t src = reinterpret_cast<uintptr_t>(row + static_cast<int64_t>(kb) * kSB);
    const uintptr_t first = src & ~static_cast<uintptr_t>(15);
    if (kSB % 16 == 0 || first + 16u * c < src + kSB) {
      cp_async_16(Ws + r * stride + 16 * c, reinterpret_cast<const void*>(first + 16u * c));
    }
  }
}

// Where row r's group kb starts in the stage at Ws (row = wptr[r]).
template <GgmlType T>
__device__ __forceinline__ const uint8_t* staged_row(const uint8_t* Ws, int stride, const uint8_t* row, int r,
                                                     int kb) {
  int off = 0;
  if constexpr (QuantTraits<T>::kBytes256 % 16 != 0) {
    if (row != nullptr) off = piece_offset(row + static_cast<int64_t>(kb) * QuantTraits<T>::kBytes256);
  }
  return Ws + r * stride + off;
}

}  // namespace strata::cuda::gemm_detail

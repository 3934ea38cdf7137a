// Between the GEMM dispatcher (mmq.cu) and its per-type instance files: kernel parameters and launchers.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "core/quant/quant.h"
#include "cuda/gemm/gemm_host.h"
#include "cuda/gemm/gemm_types.h"

namespace strata::cuda::gemm_detail {

// GemmArgs resolved for the kernels (defaults filled in, row sizes known).
struct MmParams {
  MatrixSet w;
  MatrixSet w2;
  int64_t row_bytes;
  int n_in;
  int n_out;
  const uint8_t* x;
  int64_t ld_x;  // bytes
  const int32_t* x_rows;
  int x_div;
  float* y;
  int64_t ld_y;  // floats
  const int32_t* y_rows;
  uint16_t* yh;   // optional: the output rows also as F16 (the next GEMM's activations)
  int64_t ld_yh;  // halves
  int64_t n_rows;
  const GemmTile* tiles;
  const int32_t* tile_count;
  int epi;
  // Positions per block, at most the kernel's (its COLS): a dense launch's
  // blocks take `cols` rows each, a grouped tile runs as kGemmTileRows / cols
  // blocks (position_blocks).
  int cols;
};

// Output features (weight rows) per block: the quantized kernel and the F32
// kernel. In SwigluPair mode a block holds half as many gate rows and as many
// up rows.
inline constexpr int kMmqRows = 256;
inline constexpr int kFmmRows = 16;

// Positions per block: 64 for the mma.sync and F32 kernels; the warpgroup
// kernel's are its type's (QuantTraits::kWgCols: 128 where two stages of
// 128 positions fit its shared memory beside 256 weight rows, else 64).
inline constexpr int kTileCols = 64;

// Position blocks of a launch whose blocks take `cols` positions: dense, one
// per `cols` rows; grouped, kGemmTileRows / cols per listed tile (part j of
// tile t is block t * parts + j; resolve_tile).
constexpr int64_t position_blocks(int cols, bool grouped, int64_t n_rows, int64_t max_tiles) {
  return grouped ? max_tiles * (kGemmTileRows / cols) : (n_rows + cols - 1) / cols;
}

// Launchers of the kernel for weight type T over grid (feature tiles,
// position tiles), each explicitly instantiated for its path's types
// (cuda/gemm/type_paths.h) in an instance file: launch_f16 (quantized, mma.sync)
// in mmq_<type>.cu, launch_float in mmq_float.cu, launch_wgmma (sm_90a only)
// in sm90a/mmq_wgmma_<type>.cu.
template <core::GgmlType T>
void launch_f16(const MmParams& p, dim3 grid, cudaStream_t stream);
template <core::GgmlType T>
void launch_float(const MmParams& p, dim3 grid, cudaStream_t stream);
template <core::GgmlType T>
void launch_wgmma(const MmParams& p, dim3 grid, cudaStream_t stream);

}  // namespace strata::cuda::gemm_detail

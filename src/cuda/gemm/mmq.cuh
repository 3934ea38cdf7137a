// Prompt-time matrix products Y = X . W^T (T > 8 rows): F16 tensor cores for GGUF quants, exact F32 for floats.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/quant/quant.h"
#include "cuda/gemm/gemm_types.h"

namespace strata::cuda {

// One GEMM over n_rows positions. Position p multiplies activation row
// x_rows[p] / x_div (row p when x_rows is null) with every row of its group's
// matrix and writes output row y_rows[p] (row p when y_rows is null).
//
// Grouped (the MoE experts): `tiles` lists (group, position range) tiles
// (gemm_tile_map in moe_gemm.cuh) and group g multiplies matrix g of w;
// without tiles all positions use matrix 0. Each output element is written
// by exactly one thread: no atomics, and the result does not depend on the
// launch shape or on other groups.
//
// Activations are F16 rows (gemm_acts) for quantized weights, F32 rows for
// F32/F16/BF16 weights.
struct GemmArgs {
  WeightSet w;                         // the matrix or the experts' (gate for SwigluPair)
  WeightSet w2;                        // Epilogue::SwigluPair: up, same type and shape as w
  const void* x = nullptr;
  int64_t ld_x = 0;                    // bytes between activation rows; 0: packed rows
  const int32_t* x_rows = nullptr;     // device [n_rows]
  int32_t x_div = 1;
  float* y = nullptr;                  // may be null when yh is set (and the epilogue reads no y)
  int64_t ld_y = 0;                    // floats between output rows; 0: n_out
  const int32_t* y_rows = nullptr;     // device [n_rows]
  uint16_t* yh = nullptr;              // optional: each output row also as F16 (rounded to nearest even),
  int64_t ld_yh = 0;                   //   at row y_rows[p]; halves between rows, 0: n_out
  int64_t n_rows = 0;
  const GemmTile* tiles = nullptr;     // device [max_tiles]
  const int32_t* tile_count = nullptr; // device: how many of them are in use
  int64_t max_tiles = 0;               // capacity: gemm_max_tiles(n_rows, groups)
  Epilogue epi = Epilogue::Store;
};

// What the prompt GEMMs read as activations for weights of type t: F16 rows
// for the quantized types (the tensor-core kernel), F32 rows for the float
// types. (The matrix-vector kernels of decode read core::activation_kind's
// Q8A rows instead.)
enum class GemmActs { F32, F16 };
GemmActs gemm_acts(core::GgmlType t);
// Bytes of one activation row of n values for weights of type t.
int64_t gemm_act_row_bytes(core::GgmlType t, int64_t n);

// Quantized weights (type_paths.h's Q8a list): F16 tensor cores (F32
// accumulate; gemm_kernel says which instructions) on weights decoded from their GGUF blocks to F16 in registers
// (q * scale - min rounded once, scale and min rounded to F16 first), F16
// activations. Results repeat bit for bit; against core::vec_dot they differ
// by the activations' Q8A rounding there and F16 roundings here (mmq_f16.cuh
// says which). Needs n_in % 256 == 0.
//
// Float weights (F32, F16, BF16): a tiled F32 kernel with products and sums
// rounded separately in ascending K order (no FMA), equal to vec_dot bit for
// bit. Needs n_in % 32 == 0.
//
// Asynchronous on `stream`. Throws Error(STRATA_ERR_INVALID_ARGUMENT) for
// shapes, types or alignments it does not take and Error(STRATA_ERR_DEVICE)
// when a launch fails.
void gemm(const GemmArgs& args, cudaStream_t stream);

// The kernel of the quantized prompt GEMMs on the current device: Wgmma
// (mmq_wgmma.cuh: warpgroup MMA) on compute capability 9.0, MmaSync
// (mmq_f16.cuh) elsewhere; the same products, summed in another order.
// STRATA_GEMM=mma forces MmaSync everywhere (STRATA_GEMM=wgmma is the
// default). Any other value: Error(STRATA_ERR_INVALID_ARGUMENT).
enum class GemmKernel { MmaSync, Wgmma };
GemmKernel gemm_kernel();

// Dense convenience: Y[t][r] = dot(row r of w, X[t]) for t < n_rows; X packed
// rows of gemm_acts(type), Y [n_rows][n_out]; epi Store or Add (Y += W·X).
void mmq(core::GgmlType type, const void* w, int64_t n_in, int64_t n_out, const void* x, int64_t n_rows, float* y,
         cudaStream_t stream, Epilogue epi = Epilogue::Store);

}  // namespace strata::cuda

// Prompt-time matrix products Y = X . W^T (T >= 16 rows): int8 tensor cores for GGUF quants, exact F32 for floats.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/quant.h"
#include "cuda/gemm_types.h"

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
// Activations are of activation_kind(w.type): BlockQ8A rows (quantize_q8a)
// for quantized weights, float rows for F32/F16/BF16.
struct GemmArgs {
  WeightSet w;                         // the matrix or the experts' (gate for SwigluPair)
  WeightSet w2;                        // Epilogue::SwigluPair: up, same type and shape as w
  const void* x = nullptr;
  int64_t ld_x = 0;                    // bytes between activation rows; 0: packed rows
  const int32_t* x_rows = nullptr;     // device [n_rows]
  int32_t x_div = 1;
  float* y = nullptr;
  int64_t ld_y = 0;                    // floats between output rows; 0: n_out
  const int32_t* y_rows = nullptr;     // device [n_rows]
  core::BlockQ8A* yq = nullptr;        // optional: each output row also quantized to Q8A (as quantize_q8a;
  int64_t ld_yq = 0;                   //   n_out % 32 == 0), at row y_rows[p]; blocks between rows, 0: packed
  int64_t n_rows = 0;
  const GemmTile* tiles = nullptr;     // device [max_tiles]
  const int32_t* tile_count = nullptr; // device: how many of them are in use
  int64_t max_tiles = 0;               // capacity: gemm_max_tiles(n_rows, groups)
  Epilogue epi = Epilogue::Store;
};

// Quantized weights (Q8_0, Q4_K, Q5_K, Q6_K): int8 mma.sync (m16n8k32;
// m16n8k16 for Q6_K's 16-value scales) on weights decoded from their GGUF
// blocks in shared memory, one Q8A block (32 values) per MMA step; each
// 32-value block's int32 result becomes the same F32 term core::vec_dot
// forms, added in ascending K order to a per-output accumulator. So every
// output equals core::vec_dot bit for bit. Needs n_in % 256 == 0.
//
// Float weights (F32, F16, BF16): a tiled F32 kernel with products and sums
// rounded separately in ascending K order (no FMA), also equal to vec_dot bit
// for bit. Needs n_in % 32 == 0.
//
// Asynchronous on `stream`. Throws Error(STRATA_ERR_INVALID_ARGUMENT) for
// shapes, types or alignments it does not take and Error(STRATA_ERR_DEVICE)
// when a launch fails.
void gemm(const GemmArgs& args, cudaStream_t stream);

// Dense convenience: Y[t][r] = dot(row r of w, X[t]) for t < n_rows; X packed
// rows of activation_kind(type), Y [n_rows][n_out]; epi Store or Add (Y += W·X).
void mmq(core::GgmlType type, const void* w, int64_t n_in, int64_t n_out, const void* x, int64_t n_rows, float* y,
         cudaStream_t stream, Epilogue epi = Epilogue::Store);

}  // namespace strata::cuda

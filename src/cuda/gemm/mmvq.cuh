// Decode matrix-vector products (1..8 activation rows) on GGUF weights in place; dense or one expert per entry.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/quant/quant.h"
#include "cuda/gemm/gemm_types.h"

namespace strata::cuda {

// Y = W . x for a few activation rows, reading the weights once.
//
// Entries b = 0..n_batch-1 each multiply matrix ids[b] of `w` (matrix 0 when
// ids is null) with n_tok activation rows: token t of entry b reads
// activation row b / x_div + t and writes output row b + t. A dense matrix is
// n_batch = 1 with n_tok = 1..8; the experts of decode tokens are n_batch =
// tokens * k entries with ids = the router's choices, n_tok = 1, and x_div =
// k for gate/up (the token's x) or 1 for down (the entry's own h row).
//
// Activations are of activation_kind(w.type): BlockQ8A rows (quantize_q8a)
// for quantized weights, float rows otherwise.
struct MmvqArgs {
  WeightSet w;                    // the matrix, or the experts' (gate for SwigluPair)
  WeightSet w2;                   // Epilogue::SwigluPair: up, same type and shape as w
  const int32_t* ids = nullptr;   // device [n_batch]: the matrix of each entry; < 0 skips the entry (its y rows stay)
  int32_t n_batch = 1;
  const void* x = nullptr;
  int64_t ld_x = 0;               // bytes between activation rows; 0: packed rows
  int32_t x_div = 1;
  int32_t n_tok = 1;              // 1..8; must be 1 when n_batch > 1
  float* y = nullptr;
  int64_t ld_y = 0;               // floats between output rows; 0: n_out
  Epilogue epi = Epilogue::Store;
};

// Each output is the sum of the same F32 terms core::vec_dot forms (the
// integer parts exact; float weights: products fused into each lane's sum),
// summed in a fixed order: each lane its own terms in K order, then a fixed
// butterfly over the warp. Deterministic (no atomics, no dependence on the
// launch shape), but not vec_dot's order: for n terms (n_in / 32 for
// quantized weights, n_in for float ones) |y - vec_dot| <= (2 n + 40) *
// 2^-24 * sum |terms|, both sums lying within n 2^-24 sum |terms| of the
// exact one. Asynchronous on `stream`. Throws
// Error(STRATA_ERR_INVALID_ARGUMENT) for shapes, types or alignments it does
// not take (n_in % 32 != 0, misaligned rows, a type without a kernel) and
// Error(STRATA_ERR_DEVICE) when the launch fails.
void mmvq(const MmvqArgs& args, cudaStream_t stream);

// Dense convenience: Y[t][r] = dot(row r of w, X[t]) for t < n_tok (1..8),
// X packed rows of activation_kind(type), Y [n_tok][n_out]; epi Store or Add (Y += W·X).
void mmvq(core::GgmlType type, const void* w, int64_t n_in, int64_t n_out, const void* x, int n_tok, float* y,
          cudaStream_t stream, Epilogue epi = Epilogue::Store);

}  // namespace strata::cuda

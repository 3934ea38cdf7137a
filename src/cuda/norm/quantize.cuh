// Activation quantization on the GPU: F32 rows to Q8A blocks, bit-identical to core::quantize_activations.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/quant/quant.h"

namespace strata::cuda {

// y row r = quantize_activations(x row r, n) for r < n_rows, bit for bit:
// d = amax / 127 (an F32 division), qs = roundf(x / d) (a division, half
// away from zero) clamped to +-127, a zero block with d = 0 when amax == 0.
// x: n_rows rows of n floats, ld_x floats apart (16-byte aligned rows);
// y: n / 32 blocks per row, ld_y blocks apart (8-byte aligned). n must be a
// multiple of 32; n_rows == 0 launches nothing. Asynchronous on `stream`.
// Throws Error(STRATA_ERR_INVALID_ARGUMENT) for bad shapes or alignment,
// Error(STRATA_ERR_DEVICE) when the launch fails.
void quantize_q8a(const float* x, int64_t ld_x, core::BlockQ8A* y, int64_t ld_y, int64_t n, int64_t n_rows,
                  cudaStream_t stream);

}  // namespace strata::cuda

// RMSNorm on the device: rows of F32, also per head (rows = T * n_head, n = head_dim) for the Q/K norms.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/quant/quant.h"

namespace strata::cuda {

// y[r][i] = x[r][i] * s_r * w[i], s_r = 1 / sqrtf(ss_r / n + eps), ss_r the
// sum of squares of row r (F32, a fixed block reduction: bit-identical from
// run to run, within ~1e-6 relative of the CPU's ascending sum).
// x, y: [rows][n] F32 on the device, y may equal x; w: [n] or nullptr (ones).
// rows == 0 does nothing. Throws Error(STRATA_ERR_INVALID_ARGUMENT) for
// rows < 0 or n < 1.
void rmsnorm(const float* x, const float* w, float* y, int64_t rows, int64_t n, float eps, cudaStream_t stream);

// rmsnorm, and its output also as Q8A rows yq [rows][n / 32] (what
// quantize_q8a makes of y, bit for bit), in one launch. y must not alias x.
// Throws Error(STRATA_ERR_INVALID_ARGUMENT) as rmsnorm, and for n % 32 != 0.
void rmsnorm_q8a(const float* x, const float* w, float* y, core::BlockQ8A* yq, int64_t rows, int64_t n, float eps,
                 cudaStream_t stream);

// rmsnorm, and its output also as F16 rows yh [rows][n] (rounded to nearest
// even), in one launch: the activations of the tensor-core GEMMs. As
// rmsnorm_q8a otherwise.
void rmsnorm_f16(const float* x, const float* w, float* y, uint16_t* yh, int64_t rows, int64_t n, float eps,
                 cudaStream_t stream);

// moe_combine(y_slots, slot_w, rows, k, n, x, x) then rmsnorm_q8a(x, w, y,
// yq, rows, n, eps), bit for bit, in one launch: a layer's MoE output added
// to the residual and the next layer's attention norm. Throws as those two.
void moe_combine_rmsnorm_q8a(const float* y_slots, const float* slot_w, int k, float* x, const float* w, float* y,
                             core::BlockQ8A* yq, int64_t rows, int64_t n, float eps, cudaStream_t stream);

// The same with rmsnorm_f16 for the second part.
void moe_combine_rmsnorm_f16(const float* y_slots, const float* slot_w, int k, float* x, const float* w, float* y,
                             uint16_t* yh, int64_t rows, int64_t n, float eps, cudaStream_t stream);

}  // namespace strata::cuda

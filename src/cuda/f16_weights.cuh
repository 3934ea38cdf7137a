// A quantized matrix decoded once to F16 rows: the weights the tensor-core GEMMs make in registers, for a dense F16 GEMM.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/quant.h"

namespace strata::cuda {

// out[r][0..n_in) = row r of w (n_out rows of row_size(type, n_in) bytes) as
// F16 bits, for r < n_out: q * scale - min rounded once, after the block's
// scale and min were rounded to F16 (f16_decode.cuh: decode_pair), so each
// value equals the weight mmq_f16.cuh and mmq_wgmma.cuh multiply with
// (tests/ops/gemm_ref.h: gemm_weights). Asynchronous on `stream`. Throws
// Error(STRATA_ERR_INVALID_ARGUMENT) for a type other than Q8_0, Q4_K, Q5_K,
// Q6_K, n_in not a positive multiple of 256, n_out < 1, or w or out not 16-byte aligned.
void decode_f16_weights(core::GgmlType type, const void* w, int64_t n_in, int64_t n_out, uint16_t* out,
                        cudaStream_t stream);

}  // namespace strata::cuda

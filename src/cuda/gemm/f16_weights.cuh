// Dense matrices as F16 rows for cuBLAS: a quantized matrix decoded once (the weights the tensor-core GEMMs make in registers), F32 rows split into F16 pairs.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/quant/quant.h"

namespace strata::cuda {

// out[r][0..n_in) = row r of w (n_out rows of row_size(type, n_in) bytes) as
// F16 bits, for r < n_out: q * scale - min rounded once, after the block's
// scale and min were rounded to F16 (f16_decode.cuh: decode_pair), so each
// value equals the weight mmq_f16.cuh and mmq_wgmma.cuh multiply with
// (tests/ops/gemm_ref.h: gemm_weights). Asynchronous on `stream`. Throws
// Error(STRATA_ERR_UNSUPPORTED) for a type outside type_paths.h's F16Decode
// list, Error(STRATA_ERR_INVALID_ARGUMENT) for n_in not a positive multiple
// of 256, n_out < 1, or w or out not 16-byte aligned.
void decode_f16_weights(core::GgmlType type, const void* w, int64_t n_in, int64_t n_out, uint16_t* out,
                        cudaStream_t stream);

// The F16 pair of an F32 value v: hi = v rounded to F16, lo = (v - hi) * 2^11
// rounded to F16 (the difference is exact and |lo| <= |hi|, so lo stays a
// normal number where hi is one); hi + lo * 2^-11 is v within 2^-22 of |v|.
// Both halves overflow where |v| passes F16's largest value, 65504.
inline constexpr float kSplitLoScale = 2048.0f;

// Row r < rows of out (2n F16 values) = the pairs of x's row r (n F32 values):
// [hi | lo] when hi_first, else [lo | hi]. Asynchronous on `stream`. Throws
// Error(STRATA_ERR_INVALID_ARGUMENT) for rows < 1, n not a positive multiple
// of 4, or x or out not 16-byte aligned.
void split_f16_rows(const float* x, int64_t rows, int64_t n, bool hi_first, uint16_t* out, cudaStream_t stream);

}  // namespace strata::cuda

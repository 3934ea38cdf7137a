// Token embedding lookup on the device: rows of a GGUF-typed table dequantized to F32.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/quant/quant.h"

namespace strata::cuda {

// out[t][0..n_cols) = row ids[t] of `table` dequantized (bit-exact with
// core::dequantize_row) for t < T. table: n_rows rows of row_size(type,
// n_cols) bytes on the device; ids: [T] int32 on the device; out: [T][n_cols]
// F32. An id outside [0, n_rows) gives a row of NaN (the engine checks token
// ids on the host; NaN makes a miss visible downstream). T == 0 does nothing.
// Throws Error(STRATA_ERR_UNSUPPORTED) for a type off the Embed list
// (cuda/gemm/type_paths.h), and Error(STRATA_ERR_INVALID_ARGUMENT) for n_cols
// not a positive multiple of the block size, n_rows < 1 or T < 0.
void get_rows(core::GgmlType type, const void* table, int64_t n_rows, int64_t n_cols, const int32_t* ids, int64_t T,
              float* out, cudaStream_t stream);

}  // namespace strata::cuda

// Reference kernels of the FP4 types (MXFP4, NVFP4: E2M1 codes under a
// power-of-two or an FP8 scale) behind quant.h's dispatch: dequantize, a
// quantizer that tries the two scales around the block's range, and dots with Q8A.
#pragma once

#include <cstdint>

#include "core/quant/quant.h"
#include "core/quant/quant_blocks.h"

namespace strata::core {

// nb = number of blocks (n / 32 for MXFP4, n / 64 for NVFP4, which dots with
// two Q8A blocks per block). Orders of accumulation: quant.h. dot_*_portable
// are the plain loops; the type table takes quant_avx2's forms (the same bits)
// instead where the CPU has AVX2.
void dequantize_mxfp4(const BlockMXFP4* x, float* y, int64_t nb);
void quantize_mxfp4(const float* x, BlockMXFP4* y, int64_t nb);
float dot_mxfp4_portable(const BlockMXFP4* x, const BlockQ8A* a, int64_t nb);

void dequantize_nvfp4(const BlockNVFP4* x, float* y, int64_t nb);
void quantize_nvfp4(const float* x, BlockNVFP4* y, int64_t nb);
float dot_nvfp4_portable(const BlockNVFP4* x, const BlockQ8A* a, int64_t nb);

}  // namespace strata::core

// Reference kernels of the grid IQ types (IQ2_XXS, IQ3_XXS: each 8 values a
// point of a fixed grid of magnitudes, parity-packed signs, a 4-bit scale per
// 32 values) behind quant.h's dispatch: dequantize, a nearest-point quantizer
// without an importance matrix, and dots with Q8A.
#pragma once

#include <cstdint>

#include "core/quant/quant.h"
#include "core/quant/quant_blocks.h"

namespace strata::core {

// nb = number of 256-value super-blocks. Orders of accumulation: quant.h.
// dot_*_portable are the plain loops; the type table takes quant_avx2's forms
// (the same bits) instead where the CPU has AVX2.
void dequantize_iq2_xxs(const BlockIQ2_XXS* x, float* y, int64_t nb);
void quantize_iq2_xxs(const float* x, BlockIQ2_XXS* y, int64_t nb);
float dot_iq2_xxs_portable(const BlockIQ2_XXS* x, const BlockQ8A* a, int64_t nb);

void dequantize_iq3_xxs(const BlockIQ3_XXS* x, float* y, int64_t nb);
void quantize_iq3_xxs(const float* x, BlockIQ3_XXS* y, int64_t nb);
float dot_iq3_xxs_portable(const BlockIQ3_XXS* x, const BlockQ8A* a, int64_t nb);

}  // namespace strata::core

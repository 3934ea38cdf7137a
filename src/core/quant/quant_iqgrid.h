// Reference kernels of the grid IQ types (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS,
// IQ3_S: each 8 values one or two points of a fixed grid of magnitudes, their
// signs parity-packed or free, a 4-bit scale per 32 or 16 values; layouts in
// quant_blocks.h) behind quant.h's dispatch: dequantize, a nearest-point quantizer
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

void dequantize_iq2_xs(const BlockIQ2_XS* x, float* y, int64_t nb);
void quantize_iq2_xs(const float* x, BlockIQ2_XS* y, int64_t nb);
float dot_iq2_xs_portable(const BlockIQ2_XS* x, const BlockQ8A* a, int64_t nb);

void dequantize_iq2_s(const BlockIQ2_S* x, float* y, int64_t nb);
void quantize_iq2_s(const float* x, BlockIQ2_S* y, int64_t nb);
float dot_iq2_s_portable(const BlockIQ2_S* x, const BlockQ8A* a, int64_t nb);

void dequantize_iq3_xxs(const BlockIQ3_XXS* x, float* y, int64_t nb);
void quantize_iq3_xxs(const float* x, BlockIQ3_XXS* y, int64_t nb);
float dot_iq3_xxs_portable(const BlockIQ3_XXS* x, const BlockQ8A* a, int64_t nb);

void dequantize_iq3_s(const BlockIQ3_S* x, float* y, int64_t nb);
void quantize_iq3_s(const float* x, BlockIQ3_S* y, int64_t nb);
float dot_iq3_s_portable(const BlockIQ3_S* x, const BlockQ8A* a, int64_t nb);

}  // namespace strata::core

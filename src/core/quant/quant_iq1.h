// Reference kernels of IQ1_S and IQ1_M (each 8 values a point of a ternary
// grid shifted by +-1/8, a 3-bit scale per 32 or 16 values; layouts in
// quant_blocks.h) behind quant.h's dispatch: dequantize, a nearest-point
// quantizer without an importance matrix, and dots with Q8A.
#pragma once

#include <cstdint>

#include "core/quant/quant.h"
#include "core/quant/quant_blocks.h"

namespace strata::core {

// nb = number of 256-value super-blocks. Orders of accumulation: quant.h.
// dot_*_portable are the plain loops; the type table takes quant_avx2's forms
// (the same bits) instead where the CPU has AVX2.
void dequantize_iq1_s(const BlockIQ1_S* x, float* y, int64_t nb);
void quantize_iq1_s(const float* x, BlockIQ1_S* y, int64_t nb);
float dot_iq1_s_portable(const BlockIQ1_S* x, const BlockQ8A* a, int64_t nb);

void dequantize_iq1_m(const BlockIQ1_M* x, float* y, int64_t nb);
void quantize_iq1_m(const float* x, BlockIQ1_M* y, int64_t nb);
float dot_iq1_m_portable(const BlockIQ1_M* x, const BlockQ8A* a, int64_t nb);

}  // namespace strata::core

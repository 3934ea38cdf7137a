// Reference kernels of the IQ types (the codebook and grid types of llama.cpp's
// importance-matrix quantizers) behind quant.h's dispatch: dequantize, a
// nearest-point quantizer without an importance matrix, and dots with Q8A.
#pragma once

#include <cstdint>

#include "core/quant/quant.h"
#include "core/quant/quant_blocks.h"

namespace strata::core {

// nb = number of blocks (n / 32 for IQ4_NL, n / 256 for IQ4_XS). Orders of
// accumulation: quant.h. dot_*_portable are the plain loops; the type table
// takes quant_avx2's forms (the same bits) instead where the CPU has AVX2.
void dequantize_iq4_nl(const BlockIQ4_NL* x, float* y, int64_t nb);
void quantize_iq4_nl(const float* x, BlockIQ4_NL* y, int64_t nb);
float dot_iq4_nl_portable(const BlockIQ4_NL* x, const BlockQ8A* a, int64_t nb);

void dequantize_iq4_xs(const BlockIQ4_XS* x, float* y, int64_t nb);
void quantize_iq4_xs(const float* x, BlockIQ4_XS* y, int64_t nb);
float dot_iq4_xs_portable(const BlockIQ4_XS* x, const BlockQ8A* a, int64_t nb);

}  // namespace strata::core

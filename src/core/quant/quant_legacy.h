// Reference kernels of ggml's scale types behind quant.h's dispatch: the
// legacy 32-element Q4_0 and Q5_0 (a scale, signed values) and Q4_1 and Q5_1
// (a scale and a min, unsigned values), and the 1- and 2-bit Q1_0 and Q2_0
// (a scale over 128 and 64 values): dequantize, a quantizer and dots with Q8A.
#pragma once

#include <cstdint>

#include "core/quant/quant.h"
#include "core/quant/quant_blocks.h"

namespace strata::core {

// The 32 stored quants of a block in element order: q - 8 (Q4_0), q - 16
// (Q5_0), q (Q4_1, Q5_1); what its dot multiplies the activation quants by.
void legacy_quants(const BlockQ4_0& b, int8_t q[32]);
void legacy_quants(const BlockQ4_1& b, int8_t q[32]);
void legacy_quants(const BlockQ5_0& b, int8_t q[32]);
void legacy_quants(const BlockQ5_1& b, int8_t q[32]);
// All 128 / 64 quants of a block: +-1 (Q1_0), q - 1 (Q2_0).
void legacy_quants(const BlockQ1_0& b, int8_t q[kQK1_0]);
void legacy_quants(const BlockQ2_0& b, int8_t q[kQK2_0]);

// nb = number of blocks (of 32 elements, 128 for Q1_0, 64 for Q2_0). Orders of accumulation: quant.h.
// dot_*_portable are the plain loops; the type table takes quant_avx2's forms
// (the same bits) instead where the CPU has AVX2.
void dequantize_q4_0(const BlockQ4_0* x, float* y, int64_t nb);
void quantize_q4_0(const float* x, BlockQ4_0* y, int64_t nb);
float dot_q4_0_portable(const BlockQ4_0* x, const BlockQ8A* a, int64_t nb);

void dequantize_q4_1(const BlockQ4_1* x, float* y, int64_t nb);
void quantize_q4_1(const float* x, BlockQ4_1* y, int64_t nb);
float dot_q4_1_portable(const BlockQ4_1* x, const BlockQ8A* a, int64_t nb);

void dequantize_q5_0(const BlockQ5_0* x, float* y, int64_t nb);
void quantize_q5_0(const float* x, BlockQ5_0* y, int64_t nb);
float dot_q5_0_portable(const BlockQ5_0* x, const BlockQ8A* a, int64_t nb);

void dequantize_q5_1(const BlockQ5_1* x, float* y, int64_t nb);
void quantize_q5_1(const float* x, BlockQ5_1* y, int64_t nb);
float dot_q5_1_portable(const BlockQ5_1* x, const BlockQ8A* a, int64_t nb);

void dequantize_q1_0(const BlockQ1_0* x, float* y, int64_t nb);
void quantize_q1_0(const float* x, BlockQ1_0* y, int64_t nb);
float dot_q1_0_portable(const BlockQ1_0* x, const BlockQ8A* a, int64_t nb);

void dequantize_q2_0(const BlockQ2_0* x, float* y, int64_t nb);
void quantize_q2_0(const float* x, BlockQ2_0* y, int64_t nb);
float dot_q2_0_portable(const BlockQ2_0* x, const BlockQ8A* a, int64_t nb);

}  // namespace strata::core

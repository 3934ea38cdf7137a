// AVX2 forms of the Q8A dot products, bit for bit the portable ones (quant.cpp, quant_kquants.cpp), chosen at run time.
#pragma once

#include <cstdint>

#include "core/quant/quant.h"
#include "core/quant/quant_blocks.h"

namespace strata::core {

// Whether this CPU runs the AVX2 forms (x86-64 with AVX2 and F16C, and STRATA_NO_AVX2
// unset when first asked); vec_dot uses them then.
bool cpu_has_avx2();

// The plain loop of Q8_0 (quant.cpp; the legacy types' are in quant_legacy.h, the K-quants' in quant_kquants.h,
// the IQ types' in quant_iquants.h and quant_iqgrid.h, the FP4 types' in quant_fp4.h).
float dot_q8_0_portable(const BlockQ8_0* x, const BlockQ8A* a, int64_t nb);

// The integer dot of each sub-block in 256-bit lanes (pmaddubsw/pmaddwd, exact
// in int32); every F32 operation, and their order, as the portable forms (the
// file is built without contraction and without FMA). Call only where
// cpu_has_avx2().
float dot_q8_0_avx2(const BlockQ8_0* x, const BlockQ8A* a, int64_t nb);
float dot_q4_0_avx2(const BlockQ4_0* x, const BlockQ8A* a, int64_t nb);
float dot_q4_1_avx2(const BlockQ4_1* x, const BlockQ8A* a, int64_t nb);
float dot_q5_0_avx2(const BlockQ5_0* x, const BlockQ8A* a, int64_t nb);
float dot_q5_1_avx2(const BlockQ5_1* x, const BlockQ8A* a, int64_t nb);
float dot_q1_0_avx2(const BlockQ1_0* x, const BlockQ8A* a, int64_t nb);
float dot_q2_0_avx2(const BlockQ2_0* x, const BlockQ8A* a, int64_t nb);
float dot_q2_k_avx2(const BlockQ2_K* x, const BlockQ8A* a, int64_t nb);
float dot_q3_k_avx2(const BlockQ3_K* x, const BlockQ8A* a, int64_t nb);
float dot_q4_k_avx2(const BlockQ4_K* x, const BlockQ8A* a, int64_t nb);
float dot_q5_k_avx2(const BlockQ5_K* x, const BlockQ8A* a, int64_t nb);
float dot_q6_k_avx2(const BlockQ6_K* x, const BlockQ8A* a, int64_t nb);
float dot_iq4_nl_avx2(const BlockIQ4_NL* x, const BlockQ8A* a, int64_t nb);
float dot_iq4_xs_avx2(const BlockIQ4_XS* x, const BlockQ8A* a, int64_t nb);
float dot_iq2_xxs_avx2(const BlockIQ2_XXS* x, const BlockQ8A* a, int64_t nb);
float dot_iq2_xs_avx2(const BlockIQ2_XS* x, const BlockQ8A* a, int64_t nb);
float dot_iq2_s_avx2(const BlockIQ2_S* x, const BlockQ8A* a, int64_t nb);
float dot_iq3_xxs_avx2(const BlockIQ3_XXS* x, const BlockQ8A* a, int64_t nb);
float dot_iq3_s_avx2(const BlockIQ3_S* x, const BlockQ8A* a, int64_t nb);
float dot_iq1_s_avx2(const BlockIQ1_S* x, const BlockQ8A* a, int64_t nb);
float dot_iq1_m_avx2(const BlockIQ1_M* x, const BlockQ8A* a, int64_t nb);
float dot_mxfp4_avx2(const BlockMXFP4* x, const BlockQ8A* a, int64_t nb);
float dot_nvfp4_avx2(const BlockNVFP4* x, const BlockQ8A* a, int64_t nb);

// out[i] = the F32 value of half h[i], i < n, with F16C (8 at a time):
// fp16_to_f32's bits for every half except signaling NaNs, which F16C
// returns quiet.
void f16_to_f32_avx2(const uint16_t* h, float* out, int64_t n);

// Four rows against the same activations, out[r] = the one-row form of x[r]
// bit for bit: the rows share the activation loads, and the four sequential
// F32 sums advance side by side in one vector (each row's terms still added
// one at a time in the portable order).
void dot4_q8_0_avx2(const BlockQ8_0* const x[4], const BlockQ8A* a, int64_t nb, float out[4]);
void dot4_q4_0_avx2(const BlockQ4_0* const x[4], const BlockQ8A* a, int64_t nb, float out[4]);
void dot4_q4_1_avx2(const BlockQ4_1* const x[4], const BlockQ8A* a, int64_t nb, float out[4]);
void dot4_q5_0_avx2(const BlockQ5_0* const x[4], const BlockQ8A* a, int64_t nb, float out[4]);
void dot4_q5_1_avx2(const BlockQ5_1* const x[4], const BlockQ8A* a, int64_t nb, float out[4]);
void dot4_q1_0_avx2(const BlockQ1_0* const x[4], const BlockQ8A* a, int64_t nb, float out[4]);
void dot4_q2_0_avx2(const BlockQ2_0* const x[4], const BlockQ8A* a, int64_t nb, float out[4]);
void dot4_q2_k_avx2(const BlockQ2_K* const x[4], const BlockQ8A* a, int64_t nb, float out[4]);
void dot4_q3_k_avx2(const BlockQ3_K* const x[4], const BlockQ8A* a, int64_t nb, float out[4]);
void dot4_q4_k_avx2(const BlockQ4_K* const x[4], const BlockQ8A* a, int64_t nb, float out[4]);
void dot4_q5_k_avx2(const BlockQ5_K* const x[4], const BlockQ8A* a, int64_t nb, float out[4]);
void dot4_q6_k_avx2(const BlockQ6_K* const x[4], const BlockQ8A* a, int64_t nb, float out[4]);
void dot4_iq4_nl_avx2(const BlockIQ4_NL* const x[4], const BlockQ8A* a, int64_t nb, float out[4]);
void dot4_iq4_xs_avx2(const BlockIQ4_XS* const x[4], const BlockQ8A* a, int64_t nb, float out[4]);
void dot4_iq2_xxs_avx2(const BlockIQ2_XXS* const x[4], const BlockQ8A* a, int64_t nb, float out[4]);
void dot4_iq2_xs_avx2(const BlockIQ2_XS* const x[4], const BlockQ8A* a, int64_t nb, float out[4]);
void dot4_iq2_s_avx2(const BlockIQ2_S* const x[4], const BlockQ8A* a, int64_t nb, float out[4]);
void dot4_iq3_xxs_avx2(const BlockIQ3_XXS* const x[4], const BlockQ8A* a, int64_t nb, float out[4]);
void dot4_iq3_s_avx2(const BlockIQ3_S* const x[4], const BlockQ8A* a, int64_t nb, float out[4]);
void dot4_iq1_s_avx2(const BlockIQ1_S* const x[4], const BlockQ8A* a, int64_t nb, float out[4]);
void dot4_iq1_m_avx2(const BlockIQ1_M* const x[4], const BlockQ8A* a, int64_t nb, float out[4]);
void dot4_mxfp4_avx2(const BlockMXFP4* const x[4], const BlockQ8A* a, int64_t nb, float out[4]);
void dot4_nvfp4_avx2(const BlockNVFP4* const x[4], const BlockQ8A* a, int64_t nb, float out[4]);

}  // namespace strata::core

// The warpgroup GEMM's per-type quant reads (QuantTraits::quant_pairs and kChunkDelta, src/cuda/gemm/quant_traits.cuh) called on the host by runtime type, for quant_pairs_test.cpp.
#pragma once

#include <cstdint>

#include "core/quant/quant.h"

namespace strata::test {

// QuantTraits<t>::kChunkDelta; UNSUPPORTED for a type off the wgmma list.
int wgmma_chunk_delta(core::GgmlType t);

// QuantTraits<t>::kSigned (two's complement quants); UNSUPPORTED for a type off the wgmma list.
bool wgmma_signed(core::GgmlType t);

// QuantTraits<t>::quant_pairs(B, i, lane); UNSUPPORTED for a type off the wgmma list.
uint32_t wgmma_quant_pairs(core::GgmlType t, const uint8_t* B, int i, int lane);

// QuantTraits<t>::w4(B, j, k4) of a one-scale type (Q4_0 .. Q5_1, Q1_0, Q2_0), whose w4 is host-callable: the quants
// of mmvq, the mma.sync GEMM and the F16 decode; UNSUPPORTED for any other type.
int scale_type_w4(core::GgmlType t, const uint8_t* B, int j, int k4);

}  // namespace strata::test

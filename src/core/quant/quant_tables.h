// Lookup tables of the IQ and FP4 GGUF types, generated from llama.cpp
// v0.5.0's tables by scripts/gen-quant-tables (quant_tables.cpp says where
// each comes from). Read by the CPU kernels (quant_iquants.cpp).
#pragma once

#include <cstdint>

namespace strata::core {

// The non-linear 4-bit codebook of IQ4_NL and IQ4_XS, ascending, asymmetric:
// -127 .. 113, no zero.
extern const int8_t kIq4nlValues[16];

}  // namespace strata::core

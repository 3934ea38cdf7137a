// `strata dequantize`: a copy of a GGUF file with its quantized tensors as F32, the float math a quantized model stands for.
#pragma once

#include <string>

namespace strata::core {

// Writes to `out` the GGUF file `in` with every tensor of a type that has a
// CPU dequantizer (F16, BF16 and the computable block types of quant.h's
// table) stored as F32 and `general.file_type` set to 0 (all F32); F32, F64
// and integer tensors, all other metadata and the tensor order are copied as
// they are. The dequantizers' own F32 math is exact up to one rounding of
// the min term (Q2_K, Q4_K, Q5_K), so a forward pass over the copy is the
// quantized model's weights in float arithmetic: the judge of two engines
// that quantize activations differently (docs/testing.md). `threads` 0 = all
// hardware threads. Errors: INVALID_ARGUMENT (`out` is `in`), IO, FORMAT
// (corrupt input), UNSUPPORTED (a tensor type without a dequantizer, named
// with its tensor); no partial file is left.
void write_dequantized(const std::string& in, const std::string& out, unsigned threads);

}  // namespace strata::core

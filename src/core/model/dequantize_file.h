// `strata dequantize`: a copy of a GGUF file with its quantized tensors as F32, the float math a quantized model stands for.
#pragma once

#include <string>

namespace strata::core {

// Writes to `out` the GGUF file `in` with every block-quantized and
// half-precision tensor (each type with a CPU dequantizer) stored as F32 and
// `general.file_type` set to 0 (all F32); F32 and integer tensors, all other
// metadata and the tensor order are copied as they are. Dequantization is
// exact in F32, so a forward pass over the copy is the quantized model's
// weights in float arithmetic: the judge of two engines that quantize
// activations differently (docs/testing.md). `threads` 0 = all hardware
// threads. Errors: IO, FORMAT (corrupt input), UNSUPPORTED (a tensor type
// without a dequantizer, named with its tensor); no partial file is left.
void write_dequantized(const std::string& in, const std::string& out, unsigned threads);

}  // namespace strata::core

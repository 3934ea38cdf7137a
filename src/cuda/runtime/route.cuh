// The host route between stages: copy kernels that read or write mapped pinned host memory over the link.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace strata::cuda {

// dst[i] = src[i] for n floats, by a kernel on the stream's device: one of
// src and dst is mapped pinned host memory (its device address under UVA),
// the other device memory. Loads and stores are 16 bytes wide where both
// pointers allow, so the link carries full transactions; the copy engines
// stay free for the expert stream. Bits are copied unchanged.
void route_copy(const float* src, float* dst, int64_t n, cudaStream_t stream);

}  // namespace strata::cuda

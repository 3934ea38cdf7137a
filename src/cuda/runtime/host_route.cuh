// F32 <-> F16 conversion kernels: the host route's FP16 transfers (halves in mapped pinned host memory) and the GEMMs' F16 activations.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace strata::cuda {

// dst[i] = the half of src[i] rounded to nearest even (core::f32_to_fp16 bit
// for bit, except that a NaN becomes the device's NaN), for n values. dst may
// be mapped pinned host memory (its device address under UVA): the route then
// carries half the bytes of route_copy (route.cuh). Stores are 16 bytes (8
// halves) wide where both pointers are 16-byte aligned, scalar for the rest.
// n == 0 does nothing; throws Error(STRATA_ERR_INVALID_ARGUMENT) for n < 0 or
// the legacy default stream.
void f32_to_f16(const float* src, uint16_t* dst, int64_t n, cudaStream_t stream);

// dst[i] = float(src[i]) (exact: core::fp16_to_f32 bit for bit, except that a
// NaN becomes the device's NaN) for n values. src may be mapped pinned host
// memory; loads are 16 bytes wide where both pointers are 16-byte aligned.
// Arguments as f32_to_f16.
void f16_to_f32(const uint16_t* src, float* dst, int64_t n, cudaStream_t stream);

}  // namespace strata::cuda

// The chunk's attention inputs in one pass: Q/K head norms, RoPE, and the K/V rows written to the cache.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/model/arch.h"
#include "cuda/attention/kv.cuh"

namespace strata::cuda {

// The shapes attention_inputs takes: head dims multiples of 32 up to 256, NeoX
// RoPE with n_rot a multiple of 64 (each lane then holds both values of its
// pairs). Other shapes run rmsnorm, rope and kv_write one after the other.
bool attention_inputs_take(int head_dim_k, int head_dim_v, int n_rot, core::RopeStyle style);

// For each of the T tokens (position pos[t]; pos: [T] int32 on the device):
//   q [T][n_head][dk]: each head RMS-normed with q_norm (when not null), then rotated, in place;
//   k [T][n_head_kv][dk]: each head normed with k_norm (when not null) and rotated, then stored in kc;
//   v [T][n_head_kv][dv]: stored in vc.
// n_head_kv, dk and dv come from the cache views. Bit for bit what rmsnorm (per
// head), rope and kv_write give one after the other, in one launch: decode runs
// six fewer kernels a layer. k is read, not updated. Throws
// Error(STRATA_ERR_INVALID_ARGUMENT) for shapes attention_inputs_take refuses
// or inconsistent views.
void attention_inputs(float* q, const float* k, const float* v, const float* q_norm, const float* k_norm, float eps,
                      const int32_t* pos, int64_t T, int n_head, int n_rot, float freq_base, core::RopeStyle style,
                      const KvDeviceView& kc, const KvDeviceView& vc, cudaStream_t stream);

}  // namespace strata::cuda

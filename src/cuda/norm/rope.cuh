// Rotary position embedding on the device, NeoX and adjacent-pair styles, in place with per-row positions.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/model/arch.h"

namespace strata::cuda {

// x: [T][n_head][head_dim] F32 on the device, rotated in place; row t is at
// position pos[t] (pos: [T] int32 on the device). As cpu::rope_neox /
// cpu::rope_norm: for i < n_rot/2, theta_i = pos * freq_base^(-2i/n_rot)
// computed in double, cos/sin rounded once to float; the pair (a, b) becomes
// (a cos - b sin, a sin + b cos) in F32 without fused operations; elements
// from n_rot on are untouched. RopeStyle::Neox pairs (i, i + n_rot/2),
// RopeStyle::Adjacent pairs (2i, 2i + 1).
// T == 0 does nothing. Throws Error(STRATA_ERR_INVALID_ARGUMENT) unless
// T >= 0, n_head >= 1 and n_rot is even with 0 < n_rot <= head_dim.
void rope(float* x, const int32_t* pos, int64_t T, int n_head, int head_dim, int n_rot, float freq_base,
          core::RopeStyle style, cudaStream_t stream);

}  // namespace strata::cuda

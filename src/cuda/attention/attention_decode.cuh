// Internal to attention.cu: the decode kernel for F16 caches of the common shapes (attention_decode.cu).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/runtime/kv_cache.h"
#include "cuda/attention/attention_impl.cuh"

namespace strata::cuda::attn {

// Whether attention_decode_gqa_kernel takes a decode: an F16 cache, head
// dims equal and 64 or 128, 1, 2, 4, 8 or 16 query heads a kv head, 16-byte
// aligned Q and rows.
bool decode_gqa_takes(const Params& p, core::KvType type);

// The most ranges it splits any n_kv in [1, max_kv] into: the grid of a decode whose n_kv is read on the device.
int decode_gqa_max_splits(int64_t max_kv);

// Launches it over grid_splits ranges (decode_gqa_max_splits) and the kv heads;
// p as attention_decode fills it (n_kv on the device, the workspace set when
// grid_splits > 1).
void launch_decode_gqa(const Params& p, int grid_splits, cudaStream_t stream);

}  // namespace strata::cuda::attn

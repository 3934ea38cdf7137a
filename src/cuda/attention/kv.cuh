// The device KV cache of one layer (F16 or INT8 rows, layout as the CPU KvCache) and the kernel that writes rows into it.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/runtime/kv_cache.h"

namespace strata::cuda {

// One layer's K (or V) cache in device memory, laid out like the CPU
// KvCache's plane of that layer so that rows can be compared byte for byte:
//   data:   [n_ctx][n_head_kv][head_dim] of __half bits (F16) or int8_t (Int8)
//   scales: [n_ctx][n_head_kv] F32 (Int8 only; nullptr for F16)
// The view does not own the memory.
struct KvDeviceView {
  core::KvType type = core::KvType::F16;
  void* data = nullptr;
  float* scales = nullptr;
  int32_t n_ctx = 0;
  int32_t n_head_kv = 0;
  int32_t head_dim = 0;
};

// Bytes of `data` for n_ctx x n_head_kv x head_dim (2 per element for F16, 1 for Int8).
size_t kv_data_bytes(core::KvType type, int64_t n_ctx, int64_t n_head_kv, int64_t head_dim);
// Bytes of `scales` (0 for F16).
size_t kv_scale_bytes(core::KvType type, int64_t n_ctx, int64_t n_head_kv);

// Stores T rows: x is [T][n_head_kv][head_dim] F32 on the device, row t goes
// to position pos[t] (pos: [T] int32 on the device). Encoding is the CPU
// KvCache's, bit for bit: F16 rounds to nearest even; Int8 takes per
// (position, head) d = amax / 127 and q = roundf(x / d) clamped to +-127
// (q = 0, d = 0 for an all-zero row). Rows whose pos is outside [0, n_ctx)
// are not written (the engine checks positions on the host before).
// T == 0 does nothing. Throws Error(STRATA_ERR_INVALID_ARGUMENT) for T < 0, a
// view with a dimension < 1, no data, or Int8 without scales.
void kv_write(const float* x, const int32_t* pos, int64_t T, const KvDeviceView& cache, cudaStream_t stream);

// Checks a view the way kv_write and the attention launchers need it; `op` names the caller in the error.
void check_kv_view(const KvDeviceView& v, const char* op);

}  // namespace strata::cuda

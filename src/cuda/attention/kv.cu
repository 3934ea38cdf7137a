// The device KV cache of one layer (F16 or INT8 rows, layout as the CPU KvCache) and the kernel that writes rows into it.
#include <cuda_fp16.h>

#include "cuda/attention/attn_rows.cuh"
#include "cuda/attention/kv.cuh"
#include "cuda/runtime/check.h"
#include "cuda/runtime/common.cuh"
#include "cuda/runtime/launch.h"

namespace strata::cuda {
namespace {

constexpr int kKvRowsPerBlock = 4;  // one warp per (token, head) row

// One warp per (t, head) row.
template <core::KvType kType>
static __global__ void kv_write_kernel(const float* __restrict__ x, const int32_t* __restrict__ pos, int64_t rows,
                                       int n_ctx, int n_head_kv, int head_dim, void* data, float* scales) {
  pdl_prologue();
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kKvRowsPerBlock + threadIdx.x / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (row >= rows) return;
  const int64_t t = row / n_head_kv;
  const int head = static_cast<int>(row % n_head_kv);
  const int32_t p = pos[t];
  if (p < 0 || p >= n_ctx) return;
  kv_store_row<kType>(x + row * head_dim, head_dim, lane, data, scales, static_cast<int64_t>(p) * n_head_kv + head);
}

}  // namespace

size_t kv_data_bytes(core::KvType type, int64_t n_ctx, int64_t n_head_kv, int64_t head_dim) {
  const size_t elem = type == core::KvType::F16 ? sizeof(__half) : sizeof(int8_t);
  return static_cast<size_t>(n_ctx) * static_cast<size_t>(n_head_kv) * static_cast<size_t>(head_dim) * elem;
}

size_t kv_scale_bytes(core::KvType type, int64_t n_ctx, int64_t n_head_kv) {
  return type == core::KvType::Int8 ? static_cast<size_t>(n_ctx) * static_cast<size_t>(n_head_kv) * sizeof(float)
                                    : 0;
}

void check_kv_view(const KvDeviceView& v, const char* op) {
  require(v.type == core::KvType::F16 || v.type == core::KvType::Int8, op, "a KV view of type F16 or Int8",
          {{"type", static_cast<int64_t>(v.type)}});
  require(v.n_ctx >= 1 && v.n_head_kv >= 1 && v.head_dim >= 1 && v.data != nullptr, op,
          "a KV view with data and n_ctx, n_head_kv, head_dim >= 1",
          {{"n_ctx", v.n_ctx}, {"n_head_kv", v.n_head_kv}, {"head_dim", v.head_dim}});
  require(v.type != core::KvType::Int8 || v.scales != nullptr, op, "scales for an Int8 KV view");
}

void kv_write(const float* x, const int32_t* pos, int64_t T, const KvDeviceView& cache, cudaStream_t stream) {
  require_stream(stream, "kv_write");
  check_kv_view(cache, "kv_write");
  require(T >= 0, "kv_write", "T >= 0", {{"T", T}});
  if (T == 0) return;
  const int64_t rows = T * cache.n_head_kv;
  const int64_t blocks = ceil_div(rows, kKvRowsPerBlock);
  require(blocks <= INT32_MAX, "kv_write", "T * n_head_kv < 2^33", {{"T", T}, {"n_head_kv", cache.n_head_kv}});
  const dim3 grid(static_cast<unsigned>(blocks)), block(kKvRowsPerBlock * kWarp);
  cuda::launch("kv_write_kernel",
         cache.type == core::KvType::F16 ? kv_write_kernel<core::KvType::F16> : kv_write_kernel<core::KvType::Int8>,
         grid, block, 0, stream, x, pos, rows, cache.n_ctx, cache.n_head_kv, cache.head_dim, cache.data,
         cache.scales);
}

}  // namespace strata::cuda

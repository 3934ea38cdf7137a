// RMSNorm on the device: rows of F32, also per head (rows = T * n_head, n = head_dim) for the Q/K norms.
#include "cuda/check.h"
#include "cuda/common.cuh"
#include "cuda/norm.cuh"

namespace strata::cuda {
namespace {

constexpr int kSmallRowMax = 1024;    // up to this n one warp normalizes a row
constexpr int kWarpRowsPerBlock = 4;  // warps (rows) per block in the warp-per-row kernel
constexpr int kBlockRowThreads = 256; // threads per row in the block-per-row kernel

// y = x * s * w, rounded as the CPU does: (x * s) * w, no fused operations.
__device__ __forceinline__ void scale_row(const float* x, const float* w, float* y, int64_t n, float s, int64_t first,
                                          int64_t step) {
  for (int64_t i = first; i < n; i += step) {
    const float xs = __fmul_rn(x[i], s);
    y[i] = w ? __fmul_rn(xs, w[i]) : xs;
  }
}

__device__ __forceinline__ float inv_rms(float ss, int64_t n, float eps) {
  return __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(__fdiv_rn(ss, static_cast<float>(n)), eps)));
}

// One warp per row.
static __global__ void rmsnorm_warp_kernel(const float* x, const float* __restrict__ w,
                                           float* y, int64_t rows, int64_t n, float eps) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpRowsPerBlock + threadIdx.x / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (row >= rows) return;
  const float* xr = x + row * n;
  float ss = 0.0f;
  for (int64_t i = lane; i < n; i += kWarp) ss = __fadd_rn(ss, __fmul_rn(xr[i], xr[i]));
  ss = warp_sum(ss);
  scale_row(xr, w, y + row * n, n, inv_rms(ss, n, eps), lane, kWarp);
}

// One block of kBlockRowThreads per row, for long rows.
static __global__ void rmsnorm_block_kernel(const float* x, const float* __restrict__ w, float* y,
                                            int64_t n, float eps) {
  __shared__ float partial[kBlockRowThreads / kWarp];
  const int64_t row = blockIdx.x;
  const float* xr = x + row * n;
  float ss = 0.0f;
  for (int64_t i = threadIdx.x; i < n; i += kBlockRowThreads) ss = __fadd_rn(ss, __fmul_rn(xr[i], xr[i]));
  ss = warp_sum(ss);
  if (threadIdx.x % kWarp == 0) partial[threadIdx.x / kWarp] = ss;
  __syncthreads();
  // Every thread adds the warp partials in the same ascending order.
  float total = 0.0f;
#pragma unroll
  for (int i = 0; i < kBlockRowThreads / kWarp; ++i) total = __fadd_rn(total, partial[i]);
  scale_row(xr, w, y + row * n, n, inv_rms(total, n, eps), threadIdx.x, kBlockRowThreads);
}

}  // namespace

void rmsnorm(const float* x, const float* w, float* y, int64_t rows, int64_t n, float eps, cudaStream_t stream) {
  require_stream(stream, "rmsnorm");
  require(rows >= 0 && n >= 1, "rmsnorm", "rows >= 0 and n >= 1", {{"rows", rows}, {"n", n}});
  require(rows <= INT32_MAX, "rmsnorm", "rows <= 2^31 - 1", {{"rows", rows}});
  if (rows == 0) return;
  if (n <= kSmallRowMax) {
    const auto blocks = static_cast<unsigned>(ceil_div(rows, kWarpRowsPerBlock));
    rmsnorm_warp_kernel<<<blocks, kWarpRowsPerBlock * kWarp, 0, stream>>>(x, w, y, rows, n, eps);
    launch_check("rmsnorm_warp_kernel", stream);
  } else {
    rmsnorm_block_kernel<<<static_cast<unsigned>(rows), kBlockRowThreads, 0, stream>>>(x, w, y, n, eps);
    launch_check("rmsnorm_block_kernel", stream);
  }
}

}  // namespace strata::cuda

// build_row_table: one block per expert finds where its group starts and writes its rows, in order.
#include "cuda/moe/row_table.cuh"
#include "cuda/runtime/check.h"
#include "cuda/runtime/common.cuh"
#include "cuda/runtime/launch.h"

namespace strata::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kRowsPerThread = 4;
constexpr int kStep = kThreads * kRowsPerThread;  // rows a block looks at per step
constexpr int kMaxExperts = 2048;

__device__ __forceinline__ int warp_sum_int(int v) {
#pragma unroll
  for (int o = kWarp / 2; o > 0; o >>= 1) v += __shfl_xor_sync(kFullMask, v, o);
  return v;
}

// Block e: its group starts after the rows of experts below e (a count over
// all rows), then it walks the rows in steps of kStep, each thread four
// consecutive ones, and writes those with id e at their rank in row order
// (an exclusive scan over the block's threads). Integer counts and a fixed
// order: the same arrays whatever the timing.
static __global__ void __launch_bounds__(kThreads)
    build_row_table_kernel(const int32_t* __restrict__ ids, int32_t n_rows, int32_t n_expert,
                           int32_t* __restrict__ offsets, int32_t* __restrict__ entries) {
  pdl_prologue();
  __shared__ int32_t warp_part[kThreads / kWarp];
  const int e = static_cast<int>(blockIdx.x);
  const int tid = threadIdx.x, lane = tid % kWarp, warp = tid / kWarp;
  int below = 0;
  for (int32_t r = tid; r < n_rows; r += kThreads) below += ids[r] < e;
  below = warp_sum_int(below);
  if (lane == 0) warp_part[warp] = below;
  __syncthreads();
  int32_t at = 0;
#pragma unroll
  for (int w = 0; w < kThreads / kWarp; ++w) at += warp_part[w];
  if (tid == 0) {
    offsets[e] = at;
    if (e == n_expert - 1) offsets[n_expert] = n_rows;
  }
  __syncthreads();  // warp_part is read by every thread before the steps reuse it
  for (int32_t base = 0; base < n_rows; base += kStep) {
    const int32_t r0 = base + tid * kRowsPerThread;
    bool mine[kRowsPerThread];
    int count = 0;
#pragma unroll
    for (int q = 0; q < kRowsPerThread; ++q) {
      mine[q] = r0 + q < n_rows && ids[r0 + q] == e;
      count += mine[q];
    }
    int incl = count;  // inclusive scan within the warp, in lane order
#pragma unroll
    for (int o = 1; o < kWarp; o <<= 1) {
      const int y = __shfl_up_sync(kFullMask, incl, o);
      if (lane >= o) incl += y;
    }
    if (lane == kWarp - 1) warp_part[warp] = incl;
    __syncthreads();
    int before = 0, total = 0;
#pragma unroll
    for (int w = 0; w < kThreads / kWarp; ++w) {
      const int v = warp_part[w];
      before += w < warp ? v : 0;
      total += v;
    }
    int32_t pos = at + before + incl - count;
#pragma unroll
    for (int q = 0; q < kRowsPerThread; ++q)
      if (mine[q]) entries[pos++] = r0 + q;
    at += total;
    __syncthreads();  // everyone has read warp_part
  }
}

}  // namespace

void build_row_table(const int32_t* ids, int32_t n_rows, int32_t n_expert, int32_t* offsets, int32_t* entries,
                     cudaStream_t stream) {
  require_stream(stream, "build_row_table");
  require(n_rows >= 0 && n_expert >= 1 && n_expert <= kMaxExperts && offsets != nullptr &&
              (n_rows == 0 || (ids != nullptr && entries != nullptr)),
          "build_row_table", "n_rows >= 0, 1 <= n_expert <= 2048, ids, offsets, entries",
          {{"n_rows", n_rows}, {"n_expert", n_expert}});
  cuda::launch("build_row_table_kernel", build_row_table_kernel, static_cast<unsigned>(n_expert), kThreads, 0, stream, ids,
         n_rows, n_expert, offsets, entries);
}

}  // namespace strata::cuda

// build_row_table: count, scan and a stable warp-per-expert scatter in one block.
#include "cuda/check.h"
#include "cuda/common.cuh"
#include "cuda/row_table.cuh"

namespace strata::cuda {
namespace {

constexpr int kThreads = 1024;
constexpr int kMaxExperts = 2048;

static __global__ void build_row_table_kernel(const int32_t* __restrict__ ids, int32_t n_rows, int32_t n_expert,
                                              int32_t* __restrict__ offsets, int32_t* __restrict__ entries) {
  __shared__ int32_t start[kMaxExperts + 1];
  for (int e = threadIdx.x; e <= n_expert; e += blockDim.x) start[e] = 0;
  __syncthreads();
  // Counts: the order of the additions does not matter for an integer count.
  for (int32_t r = threadIdx.x; r < n_rows; r += blockDim.x) atomicAdd(&start[ids[r] + 1], 1);
  __syncthreads();
  if (threadIdx.x == 0)
    for (int e = 1; e <= n_expert; ++e) start[e] += start[e - 1];
  __syncthreads();
  for (int e = threadIdx.x; e <= n_expert; e += blockDim.x) offsets[e] = start[e];
  // Each warp takes experts e = warp, warp + n_warps, ... and walks every row
  // in order, writing the rows it owns at the next places of its group.
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp, n_warps = blockDim.x / kWarp;
  for (int e = warp; e < n_expert; e += n_warps) {
    int32_t at = start[e];
    for (int32_t base = 0; base < n_rows; base += kWarp) {
      const int32_t r = base + lane;
      const bool mine = r < n_rows && ids[r] == e;
      const unsigned ballot = __ballot_sync(kFullMask, mine);
      if (mine) entries[at + __popc(ballot & ((1u << lane) - 1))] = r;
      at += __popc(ballot);
    }
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
  build_row_table_kernel<<<1, kThreads, 0, stream>>>(ids, n_rows, n_expert, offsets, entries);
  launch_check("build_row_table_kernel", stream);
}

}  // namespace strata::cuda

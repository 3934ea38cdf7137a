// route_copy: a grid-stride float4 copy for the host route.
#include "cuda/runtime/check.h"
#include "cuda/runtime/common.cuh"
#include "cuda/runtime/launch.h"
#include "cuda/runtime/route.cuh"

namespace strata::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 1024;  // enough requests in flight to fill the link

static __global__ void route_copy4_kernel(const float4* __restrict__ src, float4* __restrict__ dst, int64_t n4) {
  pdl_prologue();
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n4;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    dst[i] = src[i];
}

static __global__ void route_copy1_kernel(const float* __restrict__ src, float* __restrict__ dst, int64_t n) {
  pdl_prologue();
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    dst[i] = src[i];
}

}  // namespace

void route_copy(const float* src, float* dst, int64_t n, cudaStream_t stream) {
  require_stream(stream, "route_copy");
  require(n >= 0, "route_copy", "n >= 0", {{"n", n}});
  if (n == 0) return;
  const bool aligned = (reinterpret_cast<uintptr_t>(src) | reinterpret_cast<uintptr_t>(dst)) % 16 == 0;
  const int64_t n4 = aligned ? n / 4 : 0;
  if (n4 > 0) {
    cuda::launch("route_copy4_kernel", route_copy4_kernel, grid_blocks(n4, kThreads, kMaxBlocks), kThreads, 0, stream,
           reinterpret_cast<const float4*>(src), reinterpret_cast<float4*>(dst), n4);
  }
  const int64_t rest = n - n4 * 4;
  if (rest > 0) {
    cuda::launch("route_copy1_kernel", route_copy1_kernel, grid_blocks(rest, kThreads, kMaxBlocks), kThreads, 0, stream,
           src + n4 * 4, dst + n4 * 4, rest);
  }
}

}  // namespace strata::cuda

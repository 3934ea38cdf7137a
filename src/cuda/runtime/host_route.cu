// f32_to_f16 / f16_to_f32: grid-stride conversions for the host route, 8 values per 16-byte access.
#include "cuda/runtime/check.h"
#include "cuda/runtime/common.cuh"
#include "cuda/runtime/host_route.cuh"
#include "cuda/runtime/launch.h"

namespace strata::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 1024;  // enough requests in flight to fill the link

// dst = src, through floats, 8 values a thread and step (16-byte aligned pointers).
template <typename In, typename Out>
static __global__ void route_convert8_kernel(const In* __restrict__ src, Out* __restrict__ dst, int64_t n8) {
  pdl_prologue();
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n8;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float v[8];
    load8(src + 8 * i, v);
    store8(dst + 8 * i, v);
  }
}

template <typename In, typename Out>
static __global__ void route_convert1_kernel(const In* __restrict__ src, Out* __restrict__ dst, int64_t n) {
  pdl_prologue();
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    store1(dst + i, load1(src + i));
}

// The leading whole groups of 8 go 8 at a time when both pointers are 16-byte
// aligned; the rest (all of it otherwise) one at a time.
template <typename In, typename Out>
void route_convert(const char* op, const In* src, Out* dst, int64_t n, cudaStream_t stream) {
  require_stream(stream, op);
  require(n >= 0, op, "n >= 0", {{"n", n}});
  const bool aligned = (reinterpret_cast<uintptr_t>(src) | reinterpret_cast<uintptr_t>(dst)) % 16 == 0;
  const int64_t wide = aligned ? n / 8 * 8 : 0;
  if (wide > 0) {
    cuda::launch("route_convert8_kernel", route_convert8_kernel<In, Out>, grid_blocks(wide / 8, kThreads, kMaxBlocks),
           kThreads, 0, stream, src, dst, wide / 8);
  }
  if (n > wide) {
    cuda::launch("route_convert1_kernel", route_convert1_kernel<In, Out>, grid_blocks(n - wide, kThreads, kMaxBlocks),
           kThreads, 0, stream, src + wide, dst + wide, n - wide);
  }
}

}  // namespace

void f32_to_f16(const float* src, uint16_t* dst, int64_t n, cudaStream_t stream) {
  route_convert("f32_to_f16", src, dst, n, stream);
}

void f16_to_f32(const uint16_t* src, float* dst, int64_t n, cudaStream_t stream) {
  route_convert("f16_to_f32", src, dst, n, stream);
}

}  // namespace strata::cuda

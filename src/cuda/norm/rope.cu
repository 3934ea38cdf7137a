// Rotary position embedding on the device, NeoX and adjacent-pair styles, in place with per-row positions.
#include "cuda/attention/attn_rows.cuh"
#include "cuda/norm/rope.cuh"
#include "cuda/runtime/check.h"
#include "cuda/runtime/common.cuh"
#include "cuda/runtime/launch.h"

namespace strata::cuda {
namespace {

constexpr int kRopeThreads = 128;

// One block per token: the block computes cos/sin of the token's angles once
// (double, like the CPU oracle) and rotates every head with them.
template <bool kNeox>
static __global__ void rope_kernel(float* x, const int32_t* __restrict__ pos, int n_head, int head_dim, int n_rot,
                                   float freq_base) {
  pdl_prologue();
  extern __shared__ float cs[];  // [half] cos, then [half] sin
  const int half = n_rot / 2;
  float* cos_t = cs;
  float* sin_t = cs + half;
  const int64_t t = blockIdx.x;
  for (int i = threadIdx.x; i < half; i += blockDim.x) rope_cos_sin(pos[t], i, n_rot, freq_base, cos_t[i], sin_t[i]);
  __syncthreads();
  float* xt = x + t * n_head * head_dim;
  for (int idx = threadIdx.x; idx < n_head * half; idx += blockDim.x) {
    const int h = idx / half, i = idx % half;
    float* xh = xt + static_cast<int64_t>(h) * head_dim;
    const int ia = kNeox ? i : 2 * i;
    const int ib = kNeox ? i + half : 2 * i + 1;
    float a = xh[ia], b = xh[ib];
    rope_rotate(a, b, cos_t[i], sin_t[i]);
    xh[ia] = a;
    xh[ib] = b;
  }
}

}  // namespace

void rope(float* x, const int32_t* pos, int64_t T, int n_head, int head_dim, int n_rot, float freq_base,
          core::RopeStyle style, cudaStream_t stream) {
  require_stream(stream, "rope");
  require(T >= 0 && T <= INT32_MAX && n_head >= 1 && n_rot >= 2 && n_rot % 2 == 0 && n_rot <= head_dim, "rope",
          "0 <= T < 2^31, n_head >= 1 and even 0 < n_rot <= head_dim",
          {{"T", T}, {"n_head", n_head}, {"head_dim", head_dim}, {"n_rot", n_rot}});
  if (T == 0) return;
  const size_t smem = sizeof(float) * static_cast<size_t>(n_rot);
  const auto blocks = static_cast<unsigned>(T);
  cuda::launch("rope_kernel", style == core::RopeStyle::Neox ? rope_kernel<true> : rope_kernel<false>, blocks, kRopeThreads,
         smem, stream, x, pos, n_head, head_dim, n_rot, freq_base);
}

}  // namespace strata::cuda

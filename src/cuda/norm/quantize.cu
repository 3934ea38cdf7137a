// Activation quantization kernel: 8 threads per 32-value block, 4 values each, reductions inside the 8-lane group.
#include "cuda/norm/quantize.cuh"

#include "cuda/gemm/gemm_host.h"
#include "cuda/runtime/check.h"
#include "cuda/runtime/common.cuh"
#include "cuda/runtime/launch.h"

namespace strata::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kBlocksPerCta = kThreads / 8;

// Every step matches core::quantize_activations: max of |x| (exact, any
// order), d = amax / 127 rounded once, q = roundf(x / d) with the clamp that
// only a subnormal d needs, and the exact integer sum.
static __global__ void __launch_bounds__(kThreads)
    quantize_q8a_kernel(const float* __restrict__ x, int64_t ld_x, core::BlockQ8A* __restrict__ y, int64_t ld_y,
                        int nb, int64_t total) {
  pdl_prologue();
  const int64_t gb = static_cast<int64_t>(blockIdx.x) * kBlocksPerCta + threadIdx.x / 8;
  if (gb >= total) return;  // whole 8-lane groups leave together
  const int l = threadIdx.x % 8;
  const unsigned group = 0xFFu << (threadIdx.x % 32 & ~7u);
  const int64_t row = gb / nb;
  const int blk = static_cast<int>(gb - row * nb);

  const float4 v = *reinterpret_cast<const float4*>(x + row * ld_x + 32 * blk + 4 * l);
  const float xs[4] = {v.x, v.y, v.z, v.w};
  float amax = fmaxf(fmaxf(fabsf(v.x), fabsf(v.y)), fmaxf(fabsf(v.z), fabsf(v.w)));
#pragma unroll
  for (int o = 4; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(group, amax, o, 8));
  const float d = __fdiv_rn(amax, 127.0f);

  uint32_t packed = 0;
  int sum = 0;
  if (d != 0.0f) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      float q = roundf(__fdiv_rn(xs[i], d));
      q = q < 127.0f ? q : 127.0f;
      q = q > -127.0f ? q : -127.0f;
      const int qi = static_cast<int>(q);
      sum += qi;
      packed |= (static_cast<uint32_t>(qi) & 0xFFu) << (8 * i);
    }
  }
#pragma unroll
  for (int o = 4; o > 0; o >>= 1) sum += __shfl_xor_sync(group, sum, o, 8);

  core::BlockQ8A* out = y + row * ld_y + blk;
  reinterpret_cast<uint32_t*>(out->qs)[l] = packed;
  if (l == 0) *reinterpret_cast<int2*>(out) = make_int2(__float_as_int(d), sum);
}

}  // namespace

void quantize_q8a(const float* x, int64_t ld_x, core::BlockQ8A* y, int64_t ld_y, int64_t n, int64_t n_rows,
                  cudaStream_t stream) {
  constexpr const char* op = "quantize_q8a";
  gemm_detail::check_stream(op, stream);
  require(n > 0 && n % 32 == 0 && n_rows >= 0, op, "n > 0, a multiple of 32, and n_rows >= 0",
          {{"n", n}, {"n_rows", n_rows}});
  require(ld_x >= n && ld_x % 4 == 0 && ld_y >= n / 32, op, "ld_x >= n, a multiple of 4, and ld_y >= n / 32",
          {{"ld_x", ld_x}, {"ld_y", ld_y}, {"n", n}});
  require(reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 8 == 0, op,
          "x 16-byte and y 8-byte aligned");
  if (n_rows == 0) return;
  const int64_t nb = n / 32, total = nb * n_rows;
  const int64_t grid = (total + kBlocksPerCta - 1) / kBlocksPerCta;
  require(grid <= 0x7fffffff, op, "fewer than 2^31 launch blocks", {{"blocks", grid}});
  cuda::launch("quantize_q8a_kernel", quantize_q8a_kernel, static_cast<unsigned>(grid), kThreads, 0, stream, x, ld_x, y,
         ld_y, static_cast<int>(nb), total);
}

}  // namespace strata::cuda

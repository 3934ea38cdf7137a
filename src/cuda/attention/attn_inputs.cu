// The fused attention inputs: one block per (token, 8 heads), one warp per head; see attn_inputs.cuh.
//
// A block first computes its token's RoPE cos/sin once (as rope_kernel), then
// each warp takes one head: Q and K heads are loaded into registers (lane l
// holds dims l + 32 j), normed with the order of rmsnorm_warp_kernel (each
// lane its dims in order, then the butterfly), rotated (with n_rot ==
// head_dim both values of a NeoX pair sit in the same lane), and Q is written
// back while K goes to the cache through the warp's shared row; V rows go to
// the cache as kv_write stores them.
#include "cuda/attention/attn_inputs.cuh"

#include "cuda/attention/attn_rows.cuh"
#include "cuda/runtime/check.h"
#include "cuda/runtime/common.cuh"
#include "cuda/runtime/launch.h"

namespace strata::cuda {
namespace {

constexpr int kWarps = 8;  // heads per block
constexpr int kMaxDim = 256;

struct InputsParams {
  float* q;
  const float* k;
  const float* v;
  const float* q_norm;
  const float* k_norm;
  float eps;
  const int32_t* pos;
  int n_head;
  int n_rot;
  float freq_base;
  KvDeviceView kc;
  KvDeviceView vc;
};

// NV = head_dim_k / 32 values a lane; kType the caches' encoding.
template <int NV, core::KvType kType>
static __global__ void __launch_bounds__(kWarps * kWarp) attention_inputs_kernel(const InputsParams p) {
  pdl_prologue();
  __shared__ float cs[kMaxDim];  // [half] cos, then [half] sin
  __shared__ float krow[kWarps][kMaxDim];
  constexpr int dk = NV * kWarp, half = dk / 2;
  const int64_t t = blockIdx.x;
  const int32_t pos = p.pos[t];
  for (int i = threadIdx.x; i < half; i += blockDim.x) rope_cos_sin(pos, i, dk, p.freq_base, cs[i], cs[half + i]);
  __syncthreads();

  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int n_kv = p.kc.n_head_kv;
  const int head = static_cast<int>(blockIdx.y) * kWarps + warp;
  if (head >= p.n_head + 2 * n_kv) return;  // no block-wide barrier below
  const bool cached = pos >= 0 && pos < p.kc.n_ctx;
  if (head >= p.n_head + n_kv) {
    const int h = head - p.n_head - n_kv, dv = p.vc.head_dim;
    if (cached)
      kv_store_row<kType>(p.v + (t * n_kv + h) * dv, dv, lane, p.vc.data, p.vc.scales,
                          static_cast<int64_t>(pos) * n_kv + h);
    return;
  }
  const bool is_q = head < p.n_head;
  const int h = is_q ? head : head - p.n_head;
  const float* src = is_q ? p.q + (t * p.n_head + h) * dk : p.k + (t * n_kv + h) * dk;
  const float* w = is_q ? p.q_norm : p.k_norm;
  float x[NV];
#pragma unroll
  for (int j = 0; j < NV; ++j) x[j] = src[lane + kWarp * j];
  if (w != nullptr) {
    float ss = 0.0f;
#pragma unroll
    for (int j = 0; j < NV; ++j) ss = __fadd_rn(ss, __fmul_rn(x[j], x[j]));
    const float s = inv_rms(warp_sum(ss), dk, p.eps);
#pragma unroll
    for (int j = 0; j < NV; ++j) x[j] = __fmul_rn(__fmul_rn(x[j], s), w[lane + kWarp * j]);
  }
#pragma unroll
  for (int j = 0; j < NV / 2; ++j) {
    const int i = lane + kWarp * j;
    rope_rotate(x[j], x[j + NV / 2], cs[i], cs[half + i]);
  }
  if (is_q) {
    float* dst = p.q + (t * p.n_head + h) * dk;
#pragma unroll
    for (int j = 0; j < NV; ++j) dst[lane + kWarp * j] = x[j];
    return;
  }
  if (!cached) return;
#pragma unroll
  for (int j = 0; j < NV; ++j) krow[warp][lane + kWarp * j] = x[j];
  __syncwarp();
  kv_store_row<kType>(krow[warp], dk, lane, p.kc.data, p.kc.scales, static_cast<int64_t>(pos) * n_kv + h);
}

template <int NV>
void launch_dim(const InputsParams& p, core::KvType type, dim3 grid, cudaStream_t stream) {
  cuda::launch("attention_inputs_kernel",
         type == core::KvType::F16 ? attention_inputs_kernel<NV, core::KvType::F16>
                                   : attention_inputs_kernel<NV, core::KvType::Int8>,
         grid, kWarps * kWarp, 0, stream, p);
}

}  // namespace

bool attention_inputs_take(int head_dim_k, int head_dim_v, int n_rot, core::RopeStyle style) {
  return style == core::RopeStyle::Neox && n_rot == head_dim_k && head_dim_k % 64 == 0 && head_dim_k <= kMaxDim &&
         head_dim_v >= 1 && head_dim_v <= kMaxDim;
}

void attention_inputs(float* q, const float* k, const float* v, const float* q_norm, const float* k_norm, float eps,
                      const int32_t* pos, int64_t T, int n_head, int n_rot, float freq_base, core::RopeStyle style,
                      const KvDeviceView& kc, const KvDeviceView& vc, cudaStream_t stream) {
  constexpr const char* op = "attention_inputs";
  require_stream(stream, op);
  check_kv_view(kc, op);
  check_kv_view(vc, op);
  require(attention_inputs_take(kc.head_dim, vc.head_dim, n_rot, style), op,
          "NeoX RoPE over whole heads (n_rot == head_dim_k), head_dim_k a multiple of 64 up to 256, head_dim_v <= 256",
          {{"head_dim_k", kc.head_dim}, {"head_dim_v", vc.head_dim}, {"n_rot", n_rot}});
  require(kc.type == vc.type && kc.n_ctx == vc.n_ctx && kc.n_head_kv == vc.n_head_kv && n_head >= 1, op,
          "K and V views of one cache (type, n_ctx, n_head_kv) and n_head >= 1",
          {{"n_head", n_head}, {"n_head_kv", kc.n_head_kv}});
  require(T >= 0 && T <= INT32_MAX, op, "0 <= T < 2^31", {{"T", T}});
  if (T == 0) return;
  const InputsParams p{q, k, v, q_norm, k_norm, eps, pos, n_head, n_rot, freq_base, kc, vc};
  const dim3 grid(static_cast<unsigned>(T), static_cast<unsigned>(ceil_div(n_head + 2 * kc.n_head_kv, kWarps)));
  switch (kc.head_dim / kWarp) {
    case 2: launch_dim<2>(p, kc.type, grid, stream); break;
    case 4: launch_dim<4>(p, kc.type, grid, stream); break;
    case 6: launch_dim<6>(p, kc.type, grid, stream); break;
    default: launch_dim<8>(p, kc.type, grid, stream); break;
  }
  launch_check("attention_inputs_kernel", stream);
}

}  // namespace strata::cuda

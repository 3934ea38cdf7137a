// MoE pieces on the device: router top-k, SwiGLU, slot-order combine and peer sums, residual add, row gather/scatter.
#include <cstdint>
#include <cmath>

#include "cuda/moe/moe.cuh"
#include "cuda/moe/moe_rows.cuh"
#include "cuda/runtime/check.h"
#include "cuda/runtime/common.cuh"
#include "cuda/runtime/launch.h"

namespace strata::cuda {
namespace {

using core::RouterMode;

constexpr int kRouterWarps = 4;  // tokens per block (one warp each) while their shared memory fits 48 KiB
constexpr int kDefaultSmem = 48 * 1024;
constexpr int kMaxExperts = 2048;  // keeps one warp's shared memory under 48 KiB for any k
constexpr int kElemThreads = 256;
constexpr int kRowThreads = 256;

// (value, id) ranks before (other_value, other_id): larger value first, equal values lower id first.
__device__ __forceinline__ bool ranks_before(float v, int id, float ov, int oid) {
  return v > ov || (v == ov && id < oid);
}

// F32 sum of x[0..n) in ascending order, as the CPU oracle adds.
__device__ __forceinline__ float sum_ascending(const float* x, int n) {
  float s = 0.0f;
  for (int i = 0; i < n; ++i) s = __fadd_rn(s, x[i]);
  return s;
}

// In place: x = softmax(x), as cpu::softmax (max, expf, ascending sum, divide); one thread.
__device__ void softmax_serial(float* x, int n) {
  float m = x[0];
  for (int i = 1; i < n; ++i) m = fmaxf(m, x[i]);
  for (int i = 0; i < n; ++i) x[i] = expf(__fsub_rn(x[i], m));
  const float s = sum_ascending(x, n);
  for (int i = 0; i < n; ++i) x[i] = __fdiv_rn(x[i], s);
}

// Order-preserving key of a selection value: larger value, larger key; -0
// and +0 equal; NaN (which the CPU oracle refuses) below every number, so
// it still yields a valid id; 0 means no candidate.
__device__ __forceinline__ unsigned select_key(float v) {
  if (v != v) return 1u;
  const unsigned b = __float_as_uint(v == 0.0f ? 0.0f : v);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

// One warp per token, kPerLane values a lane in registers (expert lane + 32 j).
// Shared memory per warp: p[n_expert] (the ascending softmax sum), then
// sel_id[k], sel_w[k]. Each of the k rounds takes the best untaken value
// with two warp reductions (largest key, then lowest id among equal keys).
template <int kPerLane>
static __global__ void route_topk_kernel(const float* __restrict__ logits, int64_t T, int n_expert, int k,
                                         RouterMode mode, int32_t* __restrict__ ids, float* __restrict__ weights,
                                         int warp_bytes) {
  pdl_prologue();
  extern __shared__ unsigned char router_smem[];
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int64_t t = static_cast<int64_t>(blockIdx.x) * (blockDim.x / kWarp) + warp;
  if (t >= T) return;
  unsigned char* base = router_smem + warp * warp_bytes;
  float* p = reinterpret_cast<float*>(base);
  int32_t* sel_id = reinterpret_cast<int32_t*>(p + n_expert);
  float* sel_w = reinterpret_cast<float*>(sel_id + k);

  const float* x = logits + t * n_expert;
  float v[kPerLane];
  float m = -INFINITY;
#pragma unroll
  for (int j = 0; j < kPerLane; ++j) {
    const int i = lane + j * kWarp;
    v[j] = i < n_expert ? x[i] : -INFINITY;
    m = fmaxf(m, v[j]);
  }
  if (mode != RouterMode::TopkSoftmax) {
    m = warp_max(m);
#pragma unroll
    for (int j = 0; j < kPerLane; ++j) {
      const int i = lane + j * kWarp;
      if (i < n_expert) p[i] = v[j] = expf(__fsub_rn(v[j], m));
    }
    __syncwarp();
    float s = 0.0f;
    if (lane == 0) {  // ascending order, as the CPU adds; loads batched ahead of the dependent adds
      int i = 0;
      for (; i + 8 <= n_expert; i += 8) {
        float b[8];
#pragma unroll
        for (int u = 0; u < 8; ++u) b[u] = p[i + u];
#pragma unroll
        for (int u = 0; u < 8; ++u) s = __fadd_rn(s, b[u]);
      }
      for (; i < n_expert; ++i) s = __fadd_rn(s, p[i]);
    }
    s = __shfl_sync(kFullMask, s, 0);
#pragma unroll
    for (int j = 0; j < kPerLane; ++j) v[j] = __fdiv_rn(v[j], s);
  }

  uint64_t taken = 0;  // bit j: v[j] selected
  for (int r = 0; r < k; ++r) {
    unsigned best = 0;
    int best_j = 0;
#pragma unroll
    for (int j = 0; j < kPerLane; ++j) {
      const unsigned key = (lane + j * kWarp < n_expert && !(taken >> j & 1u)) ? select_key(v[j]) : 0u;
      if (key > best) best = key, best_j = j;  // strict: equal keys keep the lower id
    }
    const unsigned top = __reduce_max_sync(kFullMask, best);
    const unsigned id = __reduce_min_sync(kFullMask, best == top ? static_cast<unsigned>(lane + best_j * kWarp) : ~0u);
    if (lane == static_cast<int>(id % kWarp)) {
      float w = 0.0f;
#pragma unroll
      for (int j = 0; j < kPerLane; ++j)
        if (j == static_cast<int>(id / kWarp)) w = v[j];
      taken |= uint64_t{1} << (id / kWarp);
      sel_id[r] = static_cast<int32_t>(id);
      sel_w[r] = w;
    }
  }
  __syncwarp();

  if (lane != 0) return;
  switch (mode) {
    case RouterMode::SoftmaxTopkNorm: {
      const float s = sum_ascending(sel_w, k);
      for (int j = 0; j < k; ++j) sel_w[j] = __fdiv_rn(sel_w[j], s);
      break;
    }
    case RouterMode::TopkSoftmax:
      softmax_serial(sel_w, k);
      break;
    default:
      break;
  }
  // Final order by weight, ties by lower id (normalisation may have made ties).
  for (int a = 1; a < k; ++a) {
    const float w = sel_w[a];
    const int32_t id = sel_id[a];
    int b = a - 1;
    while (b >= 0 && ranks_before(w, id, sel_w[b], sel_id[b])) {
      sel_w[b + 1] = sel_w[b];
      sel_id[b + 1] = sel_id[b];
      --b;
    }
    sel_w[b + 1] = w;
    sel_id[b + 1] = id;
  }
  for (int j = 0; j < k; ++j) {
    ids[t * k + j] = sel_id[j];
    weights[t * k + j] = sel_w[j];
  }
}

static __global__ void swiglu_kernel(const float* gate, const float* up, float* out, int64_t n) {
  pdl_prologue();
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float g = gate[i];
    out[i] = __fmul_rn(__fdiv_rn(g, __fadd_rn(1.0f, expf(-g))), up[i]);
  }
}

// moe_combine (peer_row and sums null) and moe_combine_peer: out = residual +
// (own-slot sum [+ sums]), or the bare sum without a residual.
static __global__ void moe_combine_kernel(const float* __restrict__ y, const float* __restrict__ w,
                                          const uint8_t* __restrict__ peer_row, int64_t T, int k, int64_t n,
                                          const float* sums, const float* residual, float* out) {
  pdl_prologue();
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < T * n;
       idx += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float acc[1];
    slot_sums<1>(y, w, peer_row, false, idx / n, k, n, idx % n, acc);
    if (sums) acc[0] = __fadd_rn(acc[0], sums[idx]);
    out[idx] = residual ? __fadd_rn(residual[idx], acc[0]) : acc[0];
  }
}

// The peer's sums of tokens [t_begin, t_begin + n_tok) into F32 or F16 rows:
// V consecutive values of a row a thread and step, V = 8 (16-byte stores,
// out 16-byte aligned and n % 8 == 0) or 1.
template <int V, typename Out>
static __global__ void moe_peer_sums_kernel(const float* __restrict__ y, const float* __restrict__ w,
                                            const uint8_t* __restrict__ peer_row, int64_t t_begin, int64_t n_tok,
                                            int k, int64_t n, Out* __restrict__ out) {
  pdl_prologue();
  const int64_t groups = n / V;
  for (int64_t g = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; g < n_tok * groups;
       g += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t t = t_begin + g / groups, i = g % groups * V;
    float acc[V];
    slot_sums<V>(y, w, peer_row, true, t, k, n, i, acc);
    if constexpr (V == 8) {
      store8(out + t * n + i, acc);
    } else {
      store1(out + t * n + i, acc[0]);
    }
  }
}

// One block per gathered row.
static __global__ void gather_rows_kernel(const float* __restrict__ x, int64_t n_cols,
                                          const int32_t* __restrict__ entries, int k, float* __restrict__ out) {
  pdl_prologue();
  const int64_t r = blockIdx.x;
  const float* src = x + static_cast<int64_t>(entries[r] / k) * n_cols;
  float* dst = out + r * n_cols;
  for (int64_t c = threadIdx.x; c < n_cols; c += kRowThreads) dst[c] = src[c];
}

static __global__ void scatter_rows_kernel(const float* __restrict__ src, int64_t n_cols,
                                           const int32_t* __restrict__ entries, float* __restrict__ dst) {
  pdl_prologue();
  const int64_t r = blockIdx.x;
  const float* s = src + r * n_cols;
  float* d = dst + static_cast<int64_t>(entries[r]) * n_cols;
  for (int64_t c = threadIdx.x; c < n_cols; c += kRowThreads) d[c] = s[c];
}

// Blocks for a grid-stride loop over n elements: enough to fill the device, never more than needed.
unsigned elementwise_blocks(int64_t n) { return grid_blocks(n, kElemThreads, 65536); }

// moe_peer_sums: 16-byte stores when every row starts 16-byte aligned.
template <typename Out>
void launch_peer_sums(const float* y, const float* w, const uint8_t* peer_row, int64_t t_begin, int64_t n_tok, int k,
                      int64_t n, Out* out, cudaStream_t stream) {
  const bool wide = reinterpret_cast<uintptr_t>(out) % 16 == 0 && n % 8 == 0;
  cuda::launch("moe_peer_sums_kernel", wide ? moe_peer_sums_kernel<8, Out> : moe_peer_sums_kernel<1, Out>,
         elementwise_blocks(n_tok * (wide ? n / 8 : n)), kElemThreads, 0, stream, y, w, peer_row, t_begin, n_tok, k, n,
         out);
}

}  // namespace

void route_topk(const float* logits, int64_t T, int n_expert, int k, core::RouterMode mode, int32_t* ids,
                float* weights, cudaStream_t stream) {
  require_stream(stream, "route_topk");
  require(T >= 0 && k >= 1 && k <= n_expert && n_expert <= kMaxExperts, "route_topk",
          "T >= 0 and 1 <= k <= n_expert <= 2048", {{"T", T}, {"k", k}, {"n_expert", n_expert}});
  require(mode == RouterMode::SoftmaxTopkNorm || mode == RouterMode::SoftmaxTopk || mode == RouterMode::TopkSoftmax,
          "route_topk", "a known router mode", {{"mode", static_cast<int64_t>(mode)}});
  if (T == 0) return;
  const int warp_bytes = static_cast<int>(ceil_div(static_cast<int64_t>(n_expert) * 4 + k * 8, 16) * 16);
  const int warps = kRouterWarps * warp_bytes <= kDefaultSmem ? kRouterWarps : 1;  // <= 48 KiB either way
  const auto blocks = ceil_div(T, warps);
  require(blocks <= INT32_MAX, "route_topk", "T < 2^31 blocks", {{"T", T}});
  const auto kernel = n_expert <= 4 * kWarp    ? route_topk_kernel<4>
                      : n_expert <= 16 * kWarp ? route_topk_kernel<16>
                                               : route_topk_kernel<kMaxExperts / kWarp>;
  cuda::launch("route_topk_kernel", kernel, static_cast<unsigned>(blocks), warps * kWarp, warps * warp_bytes, stream, logits,
         T, n_expert, k, mode, ids, weights, warp_bytes);
}

void swiglu(const float* gate, const float* up, float* out, int64_t n, cudaStream_t stream) {
  require_stream(stream, "swiglu");
  require(n >= 0, "swiglu", "n >= 0", {{"n", n}});
  if (n == 0) return;
  cuda::launch("swiglu_kernel", swiglu_kernel, elementwise_blocks(n), kElemThreads, 0, stream, gate, up, out, n);
}

void moe_combine(const float* y, const float* weights, int64_t T, int k, int64_t n, const float* residual,
                 float* out, cudaStream_t stream) {
  require_stream(stream, "moe_combine");
  require(T >= 0 && k >= 1 && n >= 1, "moe_combine", "T >= 0, k >= 1, n >= 1", {{"T", T}, {"k", k}, {"n", n}});
  if (T == 0) return;
  cuda::launch("moe_combine_kernel", moe_combine_kernel, elementwise_blocks(T * n), kElemThreads, 0, stream, y, weights,
         nullptr, T, k, n, nullptr, residual, out);
}

void moe_peer_sums(const float* y, const float* weights, const uint8_t* peer_row, int64_t t_begin, int64_t t_end,
                   int k, int64_t n, float* out_f32, uint16_t* out_f16, cudaStream_t stream) {
  require_stream(stream, "moe_peer_sums");
  require(t_begin >= 0 && t_begin <= t_end && k >= 1 && n >= 1, "moe_peer_sums",
          "0 <= t_begin <= t_end, k >= 1, n >= 1", {{"t_begin", t_begin}, {"t_end", t_end}, {"k", k}, {"n", n}});
  require((out_f32 == nullptr) != (out_f16 == nullptr), "moe_peer_sums", "exactly one of out_f32 and out_f16");
  if (t_end == t_begin) return;
  if (out_f32) {
    launch_peer_sums(y, weights, peer_row, t_begin, t_end - t_begin, k, n, out_f32, stream);
  } else {
    launch_peer_sums(y, weights, peer_row, t_begin, t_end - t_begin, k, n, out_f16, stream);
  }
}

void moe_combine_peer(const float* y, const float* weights, const uint8_t* peer_row, int64_t T, int k, int64_t n,
                      const float* sums, const float* residual, float* out, cudaStream_t stream) {
  require_stream(stream, "moe_combine_peer");
  require(T >= 0 && k >= 1 && n >= 1, "moe_combine_peer", "T >= 0, k >= 1, n >= 1", {{"T", T}, {"k", k}, {"n", n}});
  require(peer_row != nullptr && residual != nullptr, "moe_combine_peer", "peer_row and residual");
  if (T == 0) return;
  cuda::launch("moe_combine_kernel", moe_combine_kernel, elementwise_blocks(T * n), kElemThreads, 0, stream, y, weights,
         peer_row, T, k, n, sums, residual, out);
}

void gather_rows(const float* x, int64_t n_cols, const int32_t* entries, int64_t count, int k, float* out,
                 cudaStream_t stream) {
  require_stream(stream, "gather_rows");
  require(n_cols >= 1 && count >= 0 && count <= INT32_MAX && k >= 1, "gather_rows",
          "n_cols >= 1, 0 <= count < 2^31, k >= 1", {{"n_cols", n_cols}, {"count", count}, {"k", k}});
  if (count == 0) return;
  cuda::launch("gather_rows_kernel", gather_rows_kernel, static_cast<unsigned>(count), kRowThreads, 0, stream, x, n_cols,
         entries, k, out);
}

void scatter_rows(const float* src, int64_t n_cols, const int32_t* entries, int64_t count, float* dst,
                  cudaStream_t stream) {
  require_stream(stream, "scatter_rows");
  require(n_cols >= 1 && count >= 0 && count <= INT32_MAX, "scatter_rows", "n_cols >= 1, 0 <= count < 2^31",
          {{"n_cols", n_cols}, {"count", count}});
  if (count == 0) return;
  cuda::launch("scatter_rows_kernel", scatter_rows_kernel, static_cast<unsigned>(count), kRowThreads, 0, stream, src,
         n_cols, entries, dst);
}

}  // namespace strata::cuda

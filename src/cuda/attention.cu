// Attention on the device over a layer's KV cache: flash-style prompt attention and split-K decode attention.
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>

#include "cuda/attention.cuh"
#include "cuda/check.h"
#include "cuda/common.cuh"

namespace strata::cuda {
namespace {

// A block is kWarps warps over a tile of M = kWarps * R query rows (R per
// warp) of one kv head; rows enumerate (token, query head of the group) as
// r = t * group + g, so the heads sharing a kv head share every K/V tile.
// Keys go through shared memory kTileKeys at a time; lane l scores keys l and
// l + 32 of a tile and owns output columns l, l + 32, ... (VPL of them).
constexpr int kWarps = 4;
constexpr int kThreads = kWarps * kWarp;
constexpr int kTileKeys = 64;
constexpr int kMaxHeadDim = 256;
constexpr int kPromptRowsPerWarp = 8;
constexpr int kDecodeMinKeysPerSplit = 256;
constexpr int kDecodeMaxSplits = 32;
constexpr int kMergeThreads = 128;

struct AttnParams {
  const float* q;
  const void* k;
  const float* k_scales;
  const void* v;
  const float* v_scales;
  float* out;      // final rows when n_split == 1
  float* part_o;   // [n_split][T * n_head][dv] unnormalized sums when n_split > 1
  float* part_ml;  // [n_split][T * n_head][2] running max and sum when n_split > 1
  int64_t T;
  int n_head, n_head_kv, group, dk, dv;
  int32_t pos0;
  int64_t keys_per_split;  // a multiple of kTileKeys
  int n_split;
  float scale;
  bool vec_k, vec_v;   // rows allow 16-byte loads
};

// Row stride of the K tile in shared memory: odd, so that lanes reading key
// rows lane and lane + 32 at one column hit distinct banks.
__host__ __device__ constexpr int k_tile_stride(int dk) { return dk | 1; }

size_t smem_floats(int rows_per_warp, int dk, int dv) {
  const size_t m = static_cast<size_t>(kWarps) * rows_per_warp;
  return m * dk + static_cast<size_t>(kTileKeys) * k_tile_stride(dk) + static_cast<size_t>(kTileKeys) * dv +
         m * kTileKeys;
}

// Element i of cached row `row` (= position * n_head_kv + head) as F32, as KvView::read gives it.
template <core::KvType KT>
__device__ __forceinline__ float kv_elem(const void* data, const float* scales, int64_t row, int d, int i) {
  if constexpr (KT == core::KvType::F16) {
    return __half2float(static_cast<const __half*>(data)[row * d + i]);
  } else {
    return scales[row] * static_cast<float>(static_cast<const int8_t*>(data)[row * d + i]);
  }
}

// Loads keys [j0, j0 + n_valid) of kv head hk into dst[j][0..d) (row stride
// ld), zeros for the rest of the tile, so that masked keys hold no NaN that
// a zero weight could turn into NaN.
template <core::KvType KT>
__device__ void load_kv_tile(float* dst, int ld, const void* data, const float* scales, int64_t j0, int n_valid,
                             int n_head_kv, int hk, int d, bool vec) {
  constexpr int kPerVec = KT == core::KvType::F16 ? 8 : 16;  // elements per 16-byte load
  if (vec) {
    const int chunks = d / kPerVec;
    for (int idx = threadIdx.x; idx < kTileKeys * chunks; idx += kThreads) {
      const int j = idx / chunks, c = idx % chunks;
      float* o = dst + j * ld + c * kPerVec;
      if (j >= n_valid) {
#pragma unroll
        for (int e = 0; e < kPerVec; ++e) o[e] = 0.0f;
        continue;
      }
      const int64_t row = (j0 + j) * n_head_kv + hk;
      const uint4 raw = reinterpret_cast<const uint4*>(data)[(row * d) / kPerVec + c];
      const uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
      // Elements are unpacked with shifts (not through a pointer to `raw`),
      // which keeps them in registers.
      if constexpr (KT == core::KvType::F16) {
#pragma unroll
        for (int e = 0; e < kPerVec; ++e) {
          const auto bits = static_cast<unsigned short>(w[e / 2] >> (16 * (e % 2)));
          o[e] = __half2float(__ushort_as_half(bits));
        }
      } else {
        const float s = scales[row];
#pragma unroll
        for (int e = 0; e < kPerVec; ++e) {
          const auto qv = static_cast<int8_t>(static_cast<uint8_t>(w[e / 4] >> (8 * (e % 4))));
          o[e] = s * static_cast<float>(qv);
        }
      }
    }
    return;
  }
  for (int idx = threadIdx.x; idx < kTileKeys * d; idx += kThreads) {
    const int j = idx / d, i = idx % d;
    dst[j * ld + i] = j < n_valid ? kv_elem<KT>(data, scales, (j0 + j) * n_head_kv + hk, d, i) : 0.0f;
  }
}

template <core::KvType KT, int VPL, int R>
static __global__ void __launch_bounds__(kThreads) attention_kernel(const AttnParams p) {
  constexpr int M = kWarps * R;
  extern __shared__ float smem[];
  const int dk = p.dk, dv = p.dv, ldk = k_tile_stride(dk);
  float* q_s = smem;                      // [M][dk]
  float* k_s = q_s + M * dk;              // [kTileKeys][ldk]
  float* v_s = k_s + kTileKeys * ldk;     // [kTileKeys][dv]
  float* p_s = v_s + kTileKeys * dv;      // [M][kTileKeys]

  const int hk = blockIdx.y, split = blockIdx.z;
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int64_t rows_total = p.T * p.group;
  const int64_t r0 = static_cast<int64_t>(blockIdx.x) * M;

  // Query tile; rows past the end are zeros and are never written out.
  for (int idx = threadIdx.x; idx < M * dk; idx += kThreads) {
    const int r = idx / dk, i = idx % dk;
    const int64_t gr = r0 + r;
    float val = 0.0f;
    if (gr < rows_total) {
      const int64_t t = gr / p.group;
      const int h = hk * p.group + static_cast<int>(gr % p.group);
      val = p.q[(t * p.n_head + h) * dk + i];
    }
    q_s[idx] = val;
  }

  // Keys this block visits: its split's range, cut at the causal end of its last row.
  const int64_t last_row = (r0 + M < rows_total ? r0 + M : rows_total) - 1;
  const int64_t block_end = p.pos0 + last_row / p.group + 1;
  const int64_t kb = split * p.keys_per_split;
  const int64_t ke_split = kb + p.keys_per_split;
  const int64_t ke = ke_split < block_end ? ke_split : block_end;

  int64_t row_end[R];  // exclusive causal end of each of this warp's rows (0: padding row)
  float m[R], l[R], o[R][VPL];
#pragma unroll
  for (int rr = 0; rr < R; ++rr) {
    const int64_t gr = r0 + warp * R + rr;
    row_end[rr] = gr < rows_total ? p.pos0 + gr / p.group + 1 : 0;
    m[rr] = -INFINITY;
    l[rr] = 0.0f;
#pragma unroll
    for (int c = 0; c < VPL; ++c) o[rr][c] = 0.0f;
  }

  for (int64_t j0 = kb; j0 < ke; j0 += kTileKeys) {
    const int n_valid = static_cast<int>(ke - j0 < kTileKeys ? ke - j0 : kTileKeys);
    __syncthreads();  // the previous tile is consumed (and the Q tile written)
    load_kv_tile<KT>(k_s, ldk, p.k, p.k_scales, j0, n_valid, p.n_head_kv, hk, dk, p.vec_k);
    load_kv_tile<KT>(v_s, dv, p.v, p.v_scales, j0, n_valid, p.n_head_kv, hk, dv, p.vec_v);
    __syncthreads();

    // Scores of keys lane and lane + 32 for the warp's R rows, ascending dot order.
    float s[R][2];
#pragma unroll
    for (int rr = 0; rr < R; ++rr) s[rr][0] = s[rr][1] = 0.0f;
    const float* k0 = k_s + lane * ldk;
    const float* k1 = k_s + (lane + kWarp) * ldk;
    const float* qw = q_s + warp * R * dk;
    for (int i = 0; i < dk; ++i) {
      const float a = k0[i], b = k1[i];
#pragma unroll
      for (int rr = 0; rr < R; ++rr) {
        const float qv = qw[rr * dk + i];
        s[rr][0] = fmaf(qv, a, s[rr][0]);
        s[rr][1] = fmaf(qv, b, s[rr][1]);
      }
    }

    // Online softmax: rescale what was accumulated to the new running max.
#pragma unroll
    for (int rr = 0; rr < R; ++rr) {
      float pr[2];
      float tile_max = -INFINITY;
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        const int64_t j = j0 + lane + c * kWarp;
        const bool valid = j < ke && j < row_end[rr];
        s[rr][c] = valid ? p.scale * s[rr][c] : -INFINITY;
        tile_max = fmaxf(tile_max, s[rr][c]);
      }
      const float m_new = fmaxf(m[rr], warp_max(tile_max));
      float alpha = 1.0f;
      if (m_new == -INFINITY) {  // no visible key yet for this row
        pr[0] = pr[1] = 0.0f;
      } else {
        alpha = m[rr] == -INFINITY ? 0.0f : expf(m[rr] - m_new);
#pragma unroll
        for (int c = 0; c < 2; ++c) pr[c] = s[rr][c] == -INFINITY ? 0.0f : expf(s[rr][c] - m_new);
      }
      l[rr] = l[rr] * alpha + warp_sum(pr[0] + pr[1]);
      m[rr] = m_new;
#pragma unroll
      for (int c = 0; c < VPL; ++c) o[rr][c] *= alpha;
      float* prow = p_s + (warp * R + rr) * kTileKeys;
      prow[lane] = pr[0];
      prow[lane + kWarp] = pr[1];
    }
    __syncwarp();

    // o += P V over the tile's keys, ascending.
    const float* pw = p_s + warp * R * kTileKeys;
    for (int j = 0; j < n_valid; ++j) {
      float vv[VPL];
#pragma unroll
      for (int c = 0; c < VPL; ++c) {
        const int col = lane + c * kWarp;
        vv[c] = col < dv ? v_s[j * dv + col] : 0.0f;
      }
#pragma unroll
      for (int rr = 0; rr < R; ++rr) {
        const float pj = pw[rr * kTileKeys + j];
#pragma unroll
        for (int c = 0; c < VPL; ++c) o[rr][c] = fmaf(pj, vv[c], o[rr][c]);
      }
    }
    __syncwarp();
  }

  const int64_t rows_all = p.T * p.n_head;
#pragma unroll
  for (int rr = 0; rr < R; ++rr) {
    const int64_t gr = r0 + warp * R + rr;
    if (gr >= rows_total) continue;
    const int64_t t = gr / p.group;
    const int h = hk * p.group + static_cast<int>(gr % p.group);
    const int64_t orow = t * p.n_head + h;
    if (p.n_split == 1) {
      float* dst = p.out + orow * dv;
#pragma unroll
      for (int c = 0; c < VPL; ++c) {
        const int col = lane + c * kWarp;
        if (col < dv) dst[col] = o[rr][c] / l[rr];
      }
    } else {
      const int64_t prow = static_cast<int64_t>(split) * rows_all + orow;
      float* dst = p.part_o + prow * dv;
#pragma unroll
      for (int c = 0; c < VPL; ++c) {
        const int col = lane + c * kWarp;
        if (col < dv) dst[col] = o[rr][c];
      }
      if (lane == 0) {
        p.part_ml[prow * 2] = m[rr];
        p.part_ml[prow * 2 + 1] = l[rr];
      }
    }
  }
}

// One block per output row: combines the splits' partial sums in ascending
// split order, each scaled to the common max.
static __global__ void attention_merge_kernel(const float* __restrict__ part_o, const float* __restrict__ part_ml,
                                              float* __restrict__ out, int64_t rows_all, int dv, int n_split) {
  __shared__ float factor[kDecodeMaxSplits];
  __shared__ float inv_total;
  const int64_t row = blockIdx.x;
  if (threadIdx.x == 0) {
    float mx = -INFINITY;
    for (int s = 0; s < n_split; ++s) mx = fmaxf(mx, part_ml[(s * rows_all + row) * 2]);
    float total = 0.0f;
    for (int s = 0; s < n_split; ++s) {
      const float ms = part_ml[(s * rows_all + row) * 2];
      factor[s] = ms == -INFINITY ? 0.0f : expf(ms - mx);
      total += part_ml[(s * rows_all + row) * 2 + 1] * factor[s];
    }
    inv_total = 1.0f / total;
  }
  __syncthreads();
  for (int col = threadIdx.x; col < dv; col += kMergeThreads) {
    float acc = 0.0f;
    for (int s = 0; s < n_split; ++s) acc += factor[s] * part_o[(s * rows_all + row) * dv + col];
    out[row * dv + col] = acc * inv_total;
  }
}

template <core::KvType KT, int VPL, int R>
void launch_attention(const AttnParams& p, dim3 grid, cudaStream_t stream) {
  const size_t smem = smem_floats(R, p.dk, p.dv) * sizeof(float);
  int device = 0, max_smem = 0;
  STRATA_CUDA_CHECK(cudaGetDevice(&device));
  STRATA_CUDA_CHECK(cudaDeviceGetAttribute(&max_smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  if (smem > static_cast<size_t>(max_smem)) {
    fail_need(STRATA_ERR_UNSUPPORTED, "attention", "Q/K/V tiles within the device's shared memory per block",
              {{"bytes", static_cast<int64_t>(smem)}, {"max", max_smem}, {"head_dim_k", p.dk}, {"head_dim_v", p.dv}});
  }
  auto kernel = attention_kernel<KT, VPL, R>;
  STRATA_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  kernel<<<grid, kThreads, smem, stream>>>(p);
  launch_check("attention_kernel", stream);
}

template <core::KvType KT, int VPL>
void dispatch_rows(int R, const AttnParams& p, dim3 grid, cudaStream_t stream) {
  switch (R) {
    case 1: return launch_attention<KT, VPL, 1>(p, grid, stream);
    case 2: return launch_attention<KT, VPL, 2>(p, grid, stream);
    case 4: return launch_attention<KT, VPL, 4>(p, grid, stream);
    default: return launch_attention<KT, VPL, 8>(p, grid, stream);
  }
}

template <core::KvType KT>
void dispatch_cols(int vpl, int R, const AttnParams& p, dim3 grid, cudaStream_t stream) {
  switch (vpl) {
    case 1: return dispatch_rows<KT, 1>(R, p, grid, stream);
    case 2: return dispatch_rows<KT, 2>(R, p, grid, stream);
    case 4: return dispatch_rows<KT, 4>(R, p, grid, stream);
    default: return dispatch_rows<KT, 8>(R, p, grid, stream);
  }
}

// Smallest power of two >= x (x <= 8 here).
int pow2_at_least(int x) {
  int r = 1;
  while (r < x) r *= 2;
  return r;
}

// Checks the views and fills the shape part of the parameters.
AttnParams make_params(const char* op, const float* q, const KvDeviceView& k, const KvDeviceView& v, int n_head,
                       float scale, float* out) {
  check_kv_view(k, op);
  check_kv_view(v, op);
  require(k.type == v.type && k.n_ctx == v.n_ctx && k.n_head_kv == v.n_head_kv, op,
          "K and V views of one type, n_ctx and n_head_kv",
          {{"k.n_ctx", k.n_ctx}, {"v.n_ctx", v.n_ctx}, {"k.n_head_kv", k.n_head_kv}, {"v.n_head_kv", v.n_head_kv}});
  require(n_head >= 1 && n_head % k.n_head_kv == 0, op, "n_head a multiple of n_head_kv",
          {{"n_head", n_head}, {"n_head_kv", k.n_head_kv}});
  if (k.head_dim > kMaxHeadDim || v.head_dim > kMaxHeadDim) {
    fail_need(STRATA_ERR_UNSUPPORTED, op, "head dims <= 256",
              {{"head_dim_k", k.head_dim}, {"head_dim_v", v.head_dim}});
  }
  AttnParams p{};
  p.q = q;
  p.k = k.data;
  p.k_scales = k.scales;
  p.v = v.data;
  p.v_scales = v.scales;
  p.out = out;
  p.n_head = n_head;
  p.n_head_kv = k.n_head_kv;
  p.group = n_head / k.n_head_kv;
  p.dk = k.head_dim;
  p.dv = v.head_dim;
  p.scale = scale;
  const int per_vec = k.type == core::KvType::F16 ? 8 : 16;
  p.vec_k = k.head_dim % per_vec == 0 && reinterpret_cast<uintptr_t>(k.data) % 16 == 0;
  p.vec_v = v.head_dim % per_vec == 0 && reinterpret_cast<uintptr_t>(v.data) % 16 == 0;
  return p;
}

void run(const AttnParams& p, core::KvType type, int R, cudaStream_t stream) {
  const int64_t row_tiles = ceil_div(p.T * p.group, static_cast<int64_t>(kWarps) * R);
  require(row_tiles <= INT32_MAX, "attention", "T * n_head / n_head_kv < 2^31 rows", {{"T", p.T}});
  const dim3 grid(static_cast<unsigned>(row_tiles), static_cast<unsigned>(p.n_head_kv),
                  static_cast<unsigned>(p.n_split));
  const int vpl = pow2_at_least(static_cast<int>(ceil_div(p.dv, kWarp)));
  if (type == core::KvType::F16) {
    dispatch_cols<core::KvType::F16>(vpl, R, p, grid, stream);
  } else {
    dispatch_cols<core::KvType::Int8>(vpl, R, p, grid, stream);
  }
}

}  // namespace

void attention_prompt(const float* q, const KvDeviceView& k, const KvDeviceView& v, int n_head, int64_t T,
                      int32_t pos0, float scale, float* out, cudaStream_t stream) {
  AttnParams p = make_params("attention_prompt", q, k, v, n_head, scale, out);
  require(T >= 0 && pos0 >= 0 && pos0 + T <= k.n_ctx, "attention_prompt", "T >= 0, pos0 >= 0, pos0 + T <= n_ctx",
          {{"T", T}, {"pos0", pos0}, {"n_ctx", k.n_ctx}});
  if (T == 0) return;
  p.T = T;
  p.pos0 = pos0;
  p.n_split = 1;
  p.keys_per_split = ceil_div(pos0 + T, kTileKeys) * kTileKeys;
  run(p, k.type, kPromptRowsPerWarp, stream);
}

size_t attention_decode_workspace_bytes(int n_head, int head_dim_v) {
  return static_cast<size_t>(kDecodeMaxSplits) * static_cast<size_t>(n_head) *
         (static_cast<size_t>(head_dim_v) + 2) * sizeof(float);
}

void attention_decode(const float* q, const KvDeviceView& k, const KvDeviceView& v, int n_head, int32_t n_kv,
                      float scale, float* out, void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  AttnParams p = make_params("attention_decode", q, k, v, n_head, scale, out);
  require(n_kv >= 1 && n_kv <= k.n_ctx, "attention_decode", "1 <= n_kv <= n_ctx", {{"n_kv", n_kv}, {"n_ctx", k.n_ctx}});
  p.T = 1;
  p.pos0 = n_kv - 1;
  // Splits of whole tiles, at least kDecodeMinKeysPerSplit keys, at most
  // kDecodeMaxSplits of them; a function of n_kv alone.
  const int64_t per = ceil_div(ceil_div(n_kv, kDecodeMaxSplits), kTileKeys) * kTileKeys;
  p.keys_per_split = per > kDecodeMinKeysPerSplit ? per : kDecodeMinKeysPerSplit;
  p.n_split = static_cast<int>(ceil_div(n_kv, p.keys_per_split));
  const int R = pow2_at_least(static_cast<int>(ceil_div(p.group, kWarps)));
  if (p.n_split == 1) {
    run(p, k.type, R < 8 ? R : 8, stream);
    return;
  }
  const size_t need = attention_decode_workspace_bytes(n_head, v.head_dim);
  require(workspace != nullptr && workspace_bytes >= need, "attention_decode",
          "a workspace of attention_decode_workspace_bytes(n_head, head_dim_v)",
          {{"bytes", static_cast<int64_t>(workspace_bytes)}, {"need", static_cast<int64_t>(need)}});
  p.part_ml = static_cast<float*>(workspace);
  p.part_o = p.part_ml + static_cast<size_t>(p.n_split) * n_head * 2;
  run(p, k.type, R < 8 ? R : 8, stream);
  attention_merge_kernel<<<static_cast<unsigned>(n_head), kMergeThreads, 0, stream>>>(p.part_o, p.part_ml, out, n_head,
                                                                                     v.head_dim, p.n_split);
  launch_check("attention_merge_kernel", stream);
}

}  // namespace strata::cuda

// Internal to attention*.cu: the F32 tiled attention kernel template, its parameters (shared with attention_mma.cuh) and the per-cache-type instance launchers.
//
// This kernel serves decode (split-K) and the prompts the tensor-core kernel
// (attention_mma.cuh) does not take: head dims not multiples of 16, unaligned
// buffers, too little shared memory. A block is kWarps warps over a tile of M = kWarps * R query rows (R per
// warp) of one kv head. Rows enumerate (token, query head of the group) as
// r = t * group + g, so the query heads sharing a kv head share every K/V
// tile. Keys stream through shared memory kTileKeys at a time, K transposed
// (kt[i][j]); lane l scores keys l and l + 32 of a tile and owns output
// columns l, l + 32, ... (VPL of them). One instance file per cache type
// (attention_f16.cu, attention_int8.cu) so that nvcc builds them in parallel.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "core/plan/key_split.h"
#include "core/runtime/kv_cache.h"
#include "cuda/runtime/check.h"
#include "cuda/runtime/common.cuh"
#include "cuda/runtime/launch.h"

namespace strata::cuda::attn {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * kWarp;
constexpr int kTileKeys = 64;
constexpr int kKtStride = kTileKeys + 1;  // odd: transposed stores and lane reads hit distinct banks
constexpr int kMaxHeadDim = 256;
constexpr int kDecodeMinKeysPerSplit = 64;
constexpr int kDecodeMaxSplits = 128;  // a multiple of kWarp, at most 4 of them (merge_row)

struct Params {
  const float* q;
  const void* k;
  const float* k_scales;
  const void* v;
  const float* v_scales;
  float* out;      // final rows when n_split == 1
  uint16_t* out_h;  // prompt: when set, the warpgroup kernel writes its rows here as F16 instead of to out
  float* part_o;   // [grid splits][T * n_head][dv] unnormalized sums when n_split > 1
  float* part_ml;  // [grid splits][T * n_head][2] running max and sum when n_split > 1
  int64_t T;
  int n_head, n_head_kv, group, dk, dv;
  int32_t pos0;
  int64_t keys_per_split;  // a multiple of kTileKeys
  int n_split;
  float scale;
  bool vec_k, vec_v;  // rows allow 16-byte loads
  // Decode (T == 1) with the key count read on the device: when set, the
  // kernel takes n_kv = *n_kv_dev, pos0 = n_kv - 1 and DecodeSplit::split(n_kv)
  // instead of pos0, keys_per_split and n_split above; n_kv outside
  // [1, max_kv] gives NaN rows.
  const int32_t* n_kv_dev;
  int32_t max_kv;
  // Decode with several ranges: one counter per (row tile, kv head), zero
  // between calls; the block that finishes a tile's ranges last merges them.
  unsigned* merge_count;
};

// This kernel's decode split (core/plan/key_split.h): ranges of whole tiles, at
// least one tile, at most kDecodeMaxSplits of them.
using DecodeSplit = core::PerHeadDecodeSplit;
static_assert(std::is_same_v<DecodeSplit, core::KeySplitRule<kTileKeys, kDecodeMinKeysPerSplit, kDecodeMaxSplits>>,
              "the split rule follows the kernel's tiles");

// Q rows padded to a multiple of 4 floats for 16-byte shared loads.
__host__ __device__ constexpr int q_stride(int dk) { return (dk + 3) / 4 * 4; }

inline size_t smem_bytes(int rows_per_warp, int dk, int dv) {
  const size_t m = static_cast<size_t>(kWarps) * rows_per_warp;
  const size_t floats = m * q_stride(dk) + static_cast<size_t>(q_stride(dk)) * kKtStride +
                        static_cast<size_t>(kTileKeys) * dv + m * kTileKeys;
  return floats * sizeof(float);
}

// Launches attention_kernel<KT, vpl, R> (vpl, R in {1, 2, 4, 8}); defined in the instance files.
void launch_f16(const Params& p, int vpl, int R, dim3 grid, cudaStream_t stream);
void launch_int8(const Params& p, int vpl, int R, dim3 grid, cudaStream_t stream);

// Element i of cached row `row` (= position * n_head_kv + head) as F32, as KvView::read gives it.
template <core::KvType KT>
__device__ __forceinline__ float kv_elem(const void* data, const float* scales, int64_t row, int d, int i) {
  if constexpr (KT == core::KvType::F16) {
    return __half2float(static_cast<const __half*>(data)[row * d + i]);
  } else {
    return scales[row] * static_cast<float>(static_cast<const int8_t*>(data)[row * d + i]);
  }
}

// Loads keys [j0, j0 + n_valid) of kv head hk into a tile: transposed
// (dst[i * kKtStride + j], for K) or by rows (dst[j * d + i], for V); zeros
// for the rest of the tile, so that masked keys hold no NaN that a zero
// weight would turn into NaN.
template <core::KvType KT, bool kTransposed>
__device__ void load_kv_tile(float* dst, const void* data, const float* scales, int64_t j0, int n_valid, int n_head_kv,
                             int hk, int d, bool vec) {
  constexpr int kPerVec = KT == core::KvType::F16 ? 8 : 16;  // elements per 16-byte load
  constexpr int kBatch = 4;  // loads in flight per thread: a lone block (decode) waits on memory latency otherwise
  if (vec) {
    const int chunks = d / kPerVec, total = kTileKeys * chunks;
    for (int base = threadIdx.x; base < total; base += kBatch * kThreads) {
      uint4 raw[kBatch];
      float sc[kBatch];
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const int idx = base + u * kThreads, j = idx / chunks;
        raw[u] = make_uint4(0, 0, 0, 0);
        sc[u] = 0.0f;
        if (idx < total && j < n_valid) {
          const int64_t row = (j0 + j) * n_head_kv + hk;
          raw[u] = reinterpret_cast<const uint4*>(data)[(row * d) / kPerVec + idx % chunks];
          if constexpr (KT == core::KvType::Int8) sc[u] = scales[row];
        }
      }
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const int idx = base + u * kThreads, j = idx / chunks, c = idx % chunks;
        if (idx >= total) break;
        float vals[kPerVec];
        const uint32_t w[4] = {raw[u].x, raw[u].y, raw[u].z, raw[u].w};
        if (j >= n_valid) {
#pragma unroll
          for (int e = 0; e < kPerVec; ++e) vals[e] = 0.0f;
        } else if constexpr (KT == core::KvType::F16) {
          // Unpacked with shifts, not through a pointer to `raw`, to stay in registers.
#pragma unroll
          for (int e = 0; e < kPerVec; ++e) {
            vals[e] = __half2float(__ushort_as_half(static_cast<unsigned short>(w[e / 2] >> (16 * (e % 2)))));
          }
        } else {
#pragma unroll
          for (int e = 0; e < kPerVec; ++e) {
            vals[e] = sc[u] * static_cast<float>(static_cast<int8_t>(static_cast<uint8_t>(w[e / 4] >> (8 * (e % 4)))));
          }
        }
        if constexpr (kTransposed) {
          float* o = dst + c * kPerVec * kKtStride + j;
#pragma unroll
          for (int e = 0; e < kPerVec; ++e) o[e * kKtStride] = vals[e];
        } else {
          float4* o = reinterpret_cast<float4*>(dst + j * d + c * kPerVec);  // d % 8 == 0: 16-byte aligned
#pragma unroll
          for (int e = 0; e < kPerVec / 4; ++e) o[e] = make_float4(vals[4 * e], vals[4 * e + 1], vals[4 * e + 2], vals[4 * e + 3]);
        }
      }
    }
    return;
  }
  for (int idx = threadIdx.x; idx < kTileKeys * d; idx += kThreads) {
    const int j = idx / d, i = idx % d;
    const float val = j < n_valid ? kv_elem<KT>(data, scales, (j0 + j) * n_head_kv + hk, d, i) : 0.0f;
    dst[kTransposed ? i * kKtStride + j : j * d + i] = val;
  }
}

// Output row orow from the n_split (<= kDecodeMaxSplits) ranges' partials,
// by one warp: each range's sums scaled to the common max, added in ascending
// range order, divided by the scaled total. Lane l holds the (max, sum) of
// ranges l, l + 32, ... Reads through L2 (other blocks wrote them).
template <int VPL>
__device__ void merge_row(const Params& p, int64_t orow, int64_t rows_all, int n_split, int lane) {
  constexpr int kPerLane = kDecodeMaxSplits / kWarp;
  static_assert(kPerLane * kWarp == kDecodeMaxSplits && kPerLane <= 4, "merge_row holds up to 4 ranges a lane");
  const int dv = p.dv;
  float ms[kPerLane], ls[kPerLane], f[kPerLane];
  float mx = -INFINITY;
#pragma unroll
  for (int u = 0; u < kPerLane; ++u) {
    const int s = lane + u * kWarp;
    ms[u] = s < n_split ? __ldcg(p.part_ml + (s * rows_all + orow) * 2) : -INFINITY;
    ls[u] = s < n_split ? __ldcg(p.part_ml + (s * rows_all + orow) * 2 + 1) : 0.0f;
    mx = fmaxf(mx, ms[u]);
  }
  mx = warp_max(mx);
#pragma unroll
  for (int u = 0; u < kPerLane; ++u) f[u] = ms[u] == -INFINITY ? 0.0f : expf(ms[u] - mx);
  float total = 0.0f, acc[VPL];
#pragma unroll
  for (int c = 0; c < VPL; ++c) acc[c] = 0.0f;
  constexpr int kBatch = 8;  // ranges whose loads are in flight together (L2 latency, not bandwidth, bounds this)
  static_assert(kWarp % kBatch == 0, "a batch's ranges sit in one of a lane's slots");
  for (int s0 = 0; s0 < n_split; s0 += kBatch) {
    float part[kBatch][VPL];
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const float* src = p.part_o + ((s0 + b) * rows_all + orow) * dv;
#pragma unroll
      for (int c = 0; c < VPL; ++c) {
        const int col = lane + c * kWarp;
        part[b][c] = s0 + b < n_split && col < dv ? __ldcg(src + col) : 0.0f;
      }
    }
    // The slot of the lanes that hold this batch's (max, sum), selected without indexing (registers).
    const int u = s0 / kWarp;
    float fu = f[0], lu = ls[0];
#pragma unroll
    for (int v = 1; v < kPerLane; ++v) {
      fu = u == v ? f[v] : fu;
      lu = u == v ? ls[v] : lu;
    }
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const float fs = __shfl_sync(kFullMask, fu, (s0 + b) % kWarp);
      const float lb = __shfl_sync(kFullMask, lu, (s0 + b) % kWarp);
      if (s0 + b >= n_split) break;  // the same for the whole warp
      total = __fadd_rn(total, __fmul_rn(lb, fs));
#pragma unroll
      for (int c = 0; c < VPL; ++c) acc[c] = __fadd_rn(acc[c], __fmul_rn(fs, part[b][c]));
    }
  }
  const float inv_total = 1.0f / total;
#pragma unroll
  for (int c = 0; c < VPL; ++c) {
    const int col = lane + c * kWarp;
    if (col < dv) p.out[orow * dv + col] = __fmul_rn(acc[c], inv_total);
  }
}

template <core::KvType KT, int VPL, int R>
static __global__ void __launch_bounds__(kThreads) attention_kernel(const Params p) {
  pdl_prologue();
  constexpr int M = kWarps * R;
  extern __shared__ float4 smem4[];
  const int dk = p.dk, dv = p.dv, ldq = q_stride(dk);
  float* q_s = reinterpret_cast<float*>(smem4);  // [M][ldq]
  float* kt_s = q_s + M * ldq;                   // [ldq][kKtStride], K transposed
  float* v_s = kt_s + ldq * kKtStride;           // [kTileKeys][dv]
  float* p_s = v_s + kTileKeys * dv;             // [M][kTileKeys]

  const int hk = blockIdx.y, split = blockIdx.z;
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int64_t rows_total = p.T * p.group;
  const int64_t r0 = static_cast<int64_t>(blockIdx.x) * M;

  int32_t pos0 = p.pos0;
  int64_t keys_per_split = p.keys_per_split;
  int n_split = p.n_split;
  if (p.n_kv_dev != nullptr) {  // decode, n_kv known only now (the whole block takes the same branch)
    const int32_t n_kv = *p.n_kv_dev;
    if (n_kv < 1 || n_kv > p.max_kv) {
      // Visible downstream, as get_rows does for a bad id; the merge leaves these rows alone.
      if (split != 0) return;
      for (int idx = threadIdx.x; idx < M * dv; idx += kThreads) {
        const int64_t gr = r0 + idx / dv;
        if (gr < rows_total) p.out[((gr / p.group) * p.n_head + hk * p.group + gr % p.group) * dv + idx % dv] = NAN;
      }
      return;
    }
    const core::KeySplit range = DecodeSplit::split(n_kv);
    keys_per_split = range.keys_per_split;
    n_split = range.n_split;
    if (split >= n_split) return;  // a range this n_kv does not need
    pos0 = n_kv - 1;
  }

  // Query tile; padding columns and rows past the end are zeros (never written out). Four loads in flight a thread.
  for (int base = threadIdx.x; base < M * ldq; base += 4 * kThreads) {
    float val[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const int idx = base + u * kThreads, r = idx / ldq, i = idx % ldq;
      const int64_t gr = r0 + r;
      val[u] = 0.0f;
      if (idx < M * ldq && gr < rows_total && i < dk) {
        const int64_t t = gr / p.group;
        const int h = hk * p.group + static_cast<int>(gr % p.group);
        val[u] = p.q[(t * p.n_head + h) * dk + i];
      }
    }
#pragma unroll
    for (int u = 0; u < 4; ++u)
      if (base + u * kThreads < M * ldq) q_s[base + u * kThreads] = val[u];
  }
  // K padding rows [dk, ldq) stay zero for the whole kernel.
  for (int idx = threadIdx.x; idx < (ldq - dk) * kKtStride; idx += kThreads) kt_s[dk * kKtStride + idx] = 0.0f;

  // Keys this block visits: its split's range, cut at the causal end of its last row.
  const int64_t last_row = (r0 + M < rows_total ? r0 + M : rows_total) - 1;
  const int64_t block_end = pos0 + last_row / p.group + 1;
  const int64_t kb = split * keys_per_split;
  const int64_t ke_split = kb + keys_per_split;
  const int64_t ke = ke_split < block_end ? ke_split : block_end;

  int64_t row_end[R];  // exclusive causal end of each of this warp's rows (0: padding row)
  float m[R], l[R], o[R][VPL];
#pragma unroll
  for (int rr = 0; rr < R; ++rr) {
    const int64_t gr = r0 + warp * R + rr;
    row_end[rr] = gr < rows_total ? pos0 + gr / p.group + 1 : 0;
    m[rr] = -INFINITY;
    l[rr] = 0.0f;
#pragma unroll
    for (int c = 0; c < VPL; ++c) o[rr][c] = 0.0f;
  }

  for (int64_t j0 = kb; j0 < ke; j0 += kTileKeys) {
    const int n_valid = static_cast<int>(ke - j0 < kTileKeys ? ke - j0 : kTileKeys);
    __syncthreads();  // the previous tile is consumed (and the Q tile written)
    load_kv_tile<KT, true>(kt_s, p.k, p.k_scales, j0, n_valid, p.n_head_kv, hk, dk, p.vec_k);
    load_kv_tile<KT, false>(v_s, p.v, p.v_scales, j0, n_valid, p.n_head_kv, hk, dv, p.vec_v);
    __syncthreads();

    // Scores of keys lane and lane + 32 for the warp's R rows, ascending dot
    // order; Q read 4 columns at a time (a broadcast 16-byte load).
    float s[R][2];
#pragma unroll
    for (int rr = 0; rr < R; ++rr) s[rr][0] = s[rr][1] = 0.0f;
    const float* qw = q_s + warp * R * ldq;
    for (int i = 0; i < ldq; i += 4) {
      float a[4], b[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        a[e] = kt_s[(i + e) * kKtStride + lane];
        b[e] = kt_s[(i + e) * kKtStride + lane + kWarp];
      }
#pragma unroll
      for (int rr = 0; rr < R; ++rr) {
        const float4 qv = *reinterpret_cast<const float4*>(qw + rr * ldq + i);
        s[rr][0] = fmaf(qv.x, a[0], s[rr][0]);
        s[rr][1] = fmaf(qv.x, b[0], s[rr][1]);
        s[rr][0] = fmaf(qv.y, a[1], s[rr][0]);
        s[rr][1] = fmaf(qv.y, b[1], s[rr][1]);
        s[rr][0] = fmaf(qv.z, a[2], s[rr][0]);
        s[rr][1] = fmaf(qv.z, b[2], s[rr][1]);
        s[rr][0] = fmaf(qv.w, a[3], s[rr][0]);
        s[rr][1] = fmaf(qv.w, b[3], s[rr][1]);
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

    // o += P V over the tile's keys, ascending, 4 keys per step (P of masked
    // keys is 0 and their V rows are zeros).
    const float* pw = p_s + warp * R * kTileKeys;
    for (int j = 0; j < n_valid; j += 4) {
      float vv[4][VPL];
#pragma unroll
      for (int e = 0; e < 4; ++e) {
#pragma unroll
        for (int c = 0; c < VPL; ++c) {
          const int col = lane + c * kWarp;
          vv[e][c] = col < dv ? v_s[(j + e) * dv + col] : 0.0f;
        }
      }
#pragma unroll
      for (int rr = 0; rr < R; ++rr) {
        const float4 pj = *reinterpret_cast<const float4*>(pw + rr * kTileKeys + j);
#pragma unroll
        for (int c = 0; c < VPL; ++c) {
          o[rr][c] = fmaf(pj.x, vv[0][c], o[rr][c]);
          o[rr][c] = fmaf(pj.y, vv[1][c], o[rr][c]);
          o[rr][c] = fmaf(pj.z, vv[2][c], o[rr][c]);
          o[rr][c] = fmaf(pj.w, vv[3][c], o[rr][c]);
        }
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
    if (n_split == 1) {
      float* dst = p.out + orow * dv;
#pragma unroll
      for (int c = 0; c < VPL; ++c) {
        const int col = lane + c * kWarp;
        if (col < dv) dst[col] = o[rr][c] / l[rr];
      }
    } else {
      const int64_t prow = split * rows_all + orow;
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
  if (n_split == 1 || p.merge_count == nullptr) return;

  // Flash-decoding's merge, in the block that finishes its tile's ranges
  // last (the others' partials are visible to it: each block fences its
  // writes before it counts). It leaves the counter at zero for the next call.
  __shared__ bool merge_here;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned* count = p.merge_count + static_cast<int64_t>(blockIdx.y) * gridDim.x + blockIdx.x;
    merge_here = atomicAdd(count, 1u) == static_cast<unsigned>(n_split - 1);
    if (merge_here) *count = 0;
  }
  __syncthreads();
  if (!merge_here) return;
  __threadfence();
#pragma unroll
  for (int rr = 0; rr < R; ++rr) {
    const int64_t gr = r0 + warp * R + rr;
    if (gr >= rows_total) continue;  // the same for the whole warp
    const int64_t orow = (gr / p.group) * p.n_head + hk * p.group + gr % p.group;
    merge_row<VPL>(p, orow, rows_all, n_split, lane);
  }
}

template <core::KvType KT, int VPL, int R>
void launch_instance(const Params& p, dim3 grid, cudaStream_t stream) {
  const size_t smem = smem_bytes(R, p.dk, p.dv);
  int device = 0, max_smem = 0;
  STRATA_CUDA_CHECK(cudaGetDevice(&device));
  STRATA_CUDA_CHECK(cudaDeviceGetAttribute(&max_smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  if (smem > static_cast<size_t>(max_smem)) {
    fail_need(STRATA_ERR_UNSUPPORTED, "attention", "Q/K/V tiles within the device's shared memory per block",
              {{"bytes", static_cast<int64_t>(smem)}, {"max", max_smem}, {"head_dim_k", p.dk}, {"head_dim_v", p.dv}});
  }
  auto kernel = attention_kernel<KT, VPL, R>;
  STRATA_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  cuda::launch("attention_kernel", kernel, grid, kThreads, smem, stream, p);
}

template <core::KvType KT, int VPL>
void dispatch_rows(int R, const Params& p, dim3 grid, cudaStream_t stream) {
  switch (R) {
    case 1: return launch_instance<KT, VPL, 1>(p, grid, stream);
    case 2: return launch_instance<KT, VPL, 2>(p, grid, stream);
    case 4: return launch_instance<KT, VPL, 4>(p, grid, stream);
    default: return launch_instance<KT, VPL, 8>(p, grid, stream);
  }
}

template <core::KvType KT>
void dispatch(int vpl, int R, const Params& p, dim3 grid, cudaStream_t stream) {
  switch (vpl) {
    case 1: return dispatch_rows<KT, 1>(R, p, grid, stream);
    case 2: return dispatch_rows<KT, 2>(R, p, grid, stream);
    case 4: return dispatch_rows<KT, 4>(R, p, grid, stream);
    default: return dispatch_rows<KT, 8>(R, p, grid, stream);
  }
}

}  // namespace strata::cuda::attn

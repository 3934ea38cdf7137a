// Decode attention over an F16 cache for the common shapes: one block a (key range, kv head) with every query head of its group, K and V streamed once through shared memory.
//
// attention_impl.cuh's kernel gives each query head its own pass over the
// range (a block of 4 warps takes 4 heads, so a group of 8 loads every tile
// twice) and waits on each tile's loads before it computes. Here a block of
// kGqaWarps warps owns one kv head and a range of keys (GqaSplit: fewer,
// longer ranges than that kernel's, merged the same way); each warp walks tiles of kGqaKeys keys
// of the range (warp w takes tiles w, w + kGqaWarps, ...) with its own online
// softmax, the next tile's K and V copied by cp.async while the current one
// is computed. Per tile, lane l scores key l against the G query heads (Q in
// shared memory, read as broadcasts; K rows padded so that the lanes' 16-byte
// reads of 32 rows fall in distinct banks), then takes columns
// [l * VPL, l * VPL + VPL) of P V for every head. The warps' states merge in
// fixed order at the end of the block, the ranges' in merge_row (ascending).
// All arithmetic is F32 (scores as attention_impl.cuh sums them: ascending
// dims, then times scale); results repeat bit for bit.
//
// Measured on the H200 (attention_bench --decode, qwen3 shape: 32 query
// heads over 4 kv heads of 128): 512 / 2048 / 8192 / 32768 keys
// 11.6 / 13.2 / 21.3 / 51.7 us (1.3 TB/s of cache at 32768), against the
// per-head kernel's 11.7 / 16.1 / 49.8 / 132.1.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "core/plan/key_split.h"
#include "cuda/attention/attention_decode.cuh"
#include "cuda/attention/attention_impl.cuh"
#include "cuda/gemm/gemm_device.cuh"
#include "cuda/gemm/gemm_host.h"
#include "cuda/runtime/check.h"
#include "cuda/runtime/common.cuh"
#include "cuda/runtime/launch.h"

namespace strata::cuda::attn {
namespace {

constexpr int kGqaWarps = 4;      // per block
constexpr int kGqaKeys = 32;      // keys of a warp's tile
constexpr int kGqaMaxSplits = 32;  // ranges: each block reads its keys once for the whole group, so few are enough
static_assert(kGqaMaxSplits <= kDecodeMaxSplits, "the workspace holds the ranges");

// The ranges: whole tiles for every warp, at most kGqaMaxSplits of them.
using GqaSplit = core::GroupDecodeSplit;
static_assert(std::is_same_v<GqaSplit, core::KeySplitRule<kGqaWarps * kGqaKeys, kGqaWarps * kGqaKeys, kGqaMaxSplits>>,
              "the split rule follows the kernel's tiles");

// Shared memory of a block for head dim D and G query heads.
template <int D, int G>
struct Layout {
  static constexpr int kRowK = D + 8;  // halves: K rows 16 bytes apart in banks (272 bytes for D = 128)
  static constexpr int kStage = kGqaKeys * kRowK * 2 + kGqaKeys * D * 2;  // bytes: a tile's K, then V
  static constexpr int kWarpBytes = 2 * kStage + kGqaKeys * G * 4;     // two stages, then P [kGqaKeys][G]
  static constexpr int kQBytes = G * D * 4;
  static constexpr int kBytes = kQBytes + kGqaWarps * kWarpBytes;
};

template <int D, int G>
static __global__ void __launch_bounds__(kGqaWarps * kWarp) attention_decode_gqa_kernel(const Params p) {
  pdl_prologue();
  using Lay = Layout<D, G>;
  constexpr int VPL = D / kWarp;  // output columns of a lane
  extern __shared__ __align__(16) uint8_t smem[];
  float* q_s = reinterpret_cast<float*>(smem);  // [G][D]
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  uint8_t* mine = smem + Lay::kQBytes + warp * Lay::kWarpBytes;
  float* p_s = reinterpret_cast<float*>(mine + 2 * Lay::kStage);  // [kGqaKeys][G]
  const int hk = blockIdx.y, split = blockIdx.x;

  const int32_t n_kv = *p.n_kv_dev;
  if (n_kv < 1 || n_kv > p.max_kv) {
    if (split == 0)  // NaN rows, visible downstream, as the F32 kernel gives them
      for (int i = threadIdx.x; i < G * D; i += kGqaWarps * kWarp) p.out[(hk * G) * D + i] = NAN;
    return;
  }
  const core::KeySplit range = GqaSplit::split(n_kv);
  const int64_t keys_per_split = range.keys_per_split;
  const int n_split = range.n_split;
  if (split >= n_split) return;  // a range this n_kv does not need
  const int kb = static_cast<int>(split * keys_per_split);
  const int ke = static_cast<int>(kb + keys_per_split < n_kv ? kb + keys_per_split : n_kv);
  const int n_tiles = (ke - kb + kGqaKeys - 1) / kGqaKeys;

  const auto* k_base = static_cast<const uint8_t*>(p.k);
  const auto* v_base = static_cast<const uint8_t*>(p.v);
  constexpr int kChunks = D / 8;  // 16-byte pieces of a row
  // Tile t of this block into stage `st` of this warp: rows of valid keys only (the rest are never read).
  auto issue = [&](int t, int st) {
    uint8_t* ks = mine + st * Lay::kStage;
    uint8_t* vs = ks + kGqaKeys * Lay::kRowK * 2;
    const int j0 = kb + t * kGqaKeys;
    const int n = ke - j0 < kGqaKeys ? ke - j0 : kGqaKeys;
    for (int i = lane; i < n * kChunks; i += kWarp) {
      const int j = i / kChunks, c = i % kChunks;
      const int64_t row = static_cast<int64_t>(j0 + j) * p.n_head_kv + hk;
      gemm_detail::cp_async_16(ks + (j * Lay::kRowK + c * 8) * 2, k_base + row * (2 * D) + 16 * c);
      gemm_detail::cp_async_16(vs + (j * D + c * 8) * 2, v_base + row * (2 * D) + 16 * c);
    }
    gemm_detail::cp_async_commit();
  };
  if (warp < n_tiles) issue(warp, 0);

  for (int i = threadIdx.x; i < G * D; i += kGqaWarps * kWarp) q_s[i] = p.q[(hk * G) * D + i];
  __syncthreads();

  float m[G], lsum[G], o[G][VPL];
#pragma unroll
  for (int g = 0; g < G; ++g) {
    m[g] = -INFINITY;
    lsum[g] = 0.0f;
#pragma unroll
    for (int c = 0; c < VPL; ++c) o[g][c] = 0.0f;
  }

  for (int t = warp, it = 0; t < n_tiles; t += kGqaWarps, ++it) {
    const int st = it & 1;
    if (t + kGqaWarps < n_tiles) {
      issue(t + kGqaWarps, st ^ 1);
      gemm_detail::cp_async_wait<1>();
    } else {
      gemm_detail::cp_async_wait<0>();
    }
    __syncwarp();
    const uint8_t* ks = mine + st * Lay::kStage;
    const auto* vs = reinterpret_cast<const __half*>(ks + kGqaKeys * Lay::kRowK * 2);
    const int j0 = kb + t * kGqaKeys;
    const int n_valid = ke - j0 < kGqaKeys ? ke - j0 : kGqaKeys;

    // Scores of key j0 + lane for the G heads, dims ascending.
    float s[G];
#pragma unroll
    for (int g = 0; g < G; ++g) s[g] = 0.0f;
    const uint8_t* krow = ks + lane * Lay::kRowK * 2;
#pragma unroll 4
    for (int c = 0; c < kChunks; ++c) {
      const uint4 raw = *reinterpret_cast<const uint4*>(krow + 16 * c);
      const uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
      float kv[8];
#pragma unroll
      for (int e = 0; e < 8; ++e)
        kv[e] = __half2float(__ushort_as_half(static_cast<unsigned short>(w[e / 2] >> (16 * (e % 2)))));
#pragma unroll
      for (int g = 0; g < G; ++g) {
        const float4 qa = *reinterpret_cast<const float4*>(q_s + g * D + 8 * c);
        const float4 qb = *reinterpret_cast<const float4*>(q_s + g * D + 8 * c + 4);
        s[g] = fmaf(qa.x, kv[0], s[g]);
        s[g] = fmaf(qa.y, kv[1], s[g]);
        s[g] = fmaf(qa.z, kv[2], s[g]);
        s[g] = fmaf(qa.w, kv[3], s[g]);
        s[g] = fmaf(qb.x, kv[4], s[g]);
        s[g] = fmaf(qb.y, kv[5], s[g]);
        s[g] = fmaf(qb.z, kv[6], s[g]);
        s[g] = fmaf(qb.w, kv[7], s[g]);
      }
    }

    // Online softmax per head; each lane keeps its own part of the sums (added once, at the end).
    const bool valid = lane < n_valid;
#pragma unroll
    for (int g = 0; g < G; ++g) {
      const float sc = valid ? p.scale * s[g] : -INFINITY;
      const float m_new = fmaxf(m[g], warp_max(sc));  // finite: the tile holds at least one valid key
      const float alpha = m[g] == -INFINITY ? 0.0f : expf(m[g] - m_new);
      const float pr = valid ? expf(sc - m_new) : 0.0f;
      lsum[g] = lsum[g] * alpha + pr;
      m[g] = m_new;
#pragma unroll
      for (int c = 0; c < VPL; ++c) o[g][c] *= alpha;
      p_s[lane * G + g] = pr;
    }
    __syncwarp();

    // O += P V over the tile's keys, ascending; P read as broadcasts.
    for (int j = 0; j < n_valid; ++j) {
      float vv[VPL];
      if constexpr (VPL == 4) {
        const uint2 raw = *reinterpret_cast<const uint2*>(vs + j * D + lane * 4);
        const float2 a = __half22float2(*reinterpret_cast<const __half2*>(&raw.x));
        const float2 b = __half22float2(*reinterpret_cast<const __half2*>(&raw.y));
        vv[0] = a.x, vv[1] = a.y, vv[2] = b.x, vv[3] = b.y;
      } else {
        const float2 a = __half22float2(*reinterpret_cast<const __half2*>(vs + j * D + lane * 2));
        vv[0] = a.x, vv[1] = a.y;
      }
#pragma unroll
      for (int g = 0; g < G; ++g) {
        const float pj = p_s[j * G + g];
#pragma unroll
        for (int c = 0; c < VPL; ++c) o[g][c] = fmaf(pj, vv[c], o[g][c]);
      }
    }
    __syncwarp();  // the stage and P are read before the next tile's copies land in them
  }
#pragma unroll
  for (int g = 0; g < G; ++g) lsum[g] = warp_sum(lsum[g]);

  // The warps' states merged per head in warp order, head g by warp g % kGqaWarps, through the stage buffers
  // (no copy is in flight now).
  __syncthreads();
  float* red = reinterpret_cast<float*>(smem + Lay::kQBytes);  // [kGqaWarps][G][2 + D]
  auto red_at = [&](int w, int g) { return red + (w * G + g) * (2 + D); };
#pragma unroll
  for (int g = 0; g < G; ++g) {
    float* r = red_at(warp, g);
    if (lane == 0) r[0] = m[g], r[1] = lsum[g];
#pragma unroll
    for (int c = 0; c < VPL; ++c) r[2 + lane * VPL + c] = o[g][c];
  }
  __syncthreads();
  const int64_t rows_all = p.n_head;
  for (int g = warp; g < G; g += kGqaWarps) {
    float mx = -INFINITY;
    for (int w = 0; w < kGqaWarps; ++w) mx = fmaxf(mx, red_at(w, g)[0]);
    float l = 0.0f, acc[VPL];
#pragma unroll
    for (int c = 0; c < VPL; ++c) acc[c] = 0.0f;
    for (int w = 0; w < kGqaWarps; ++w) {
      const float* r = red_at(w, g);
      const float f = r[0] == -INFINITY ? 0.0f : expf(r[0] - mx);
      l = __fadd_rn(l, __fmul_rn(r[1], f));
#pragma unroll
      for (int c = 0; c < VPL; ++c) acc[c] = __fadd_rn(acc[c], __fmul_rn(r[2 + lane * VPL + c], f));
    }
    const int64_t orow = hk * G + g;
    if (n_split == 1) {
      const float inv = 1.0f / l;
#pragma unroll
      for (int c = 0; c < VPL; ++c) p.out[orow * D + lane * VPL + c] = acc[c] * inv;
    } else {
      const int64_t prow = split * rows_all + orow;
#pragma unroll
      for (int c = 0; c < VPL; ++c) p.part_o[prow * D + lane * VPL + c] = acc[c];
      if (lane == 0) {
        p.part_ml[prow * 2] = mx;
        p.part_ml[prow * 2 + 1] = l;
      }
    }
  }
  if (n_split == 1) return;

  // The block that finishes its kv head's ranges last merges them (attention_impl.cuh's rule and merge_row,
  // a head a warp).
  __shared__ bool merge_here;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned* count = p.merge_count + hk;
    merge_here = atomicAdd(count, 1u) == static_cast<unsigned>(n_split - 1);
    if (merge_here) *count = 0;
  }
  __syncthreads();
  if (!merge_here) return;
  __threadfence();
  for (int g = warp; g < G; g += kGqaWarps) merge_row<VPL>(p, hk * G + g, rows_all, n_split, lane);
}

template <int D, int G>
void launch_shape(const Params& p, dim3 grid, cudaStream_t stream) {
  static std::atomic<uint64_t> configured{0};
  constexpr int smem = Layout<D, G>::kBytes;
  gemm_detail::allow_smem(reinterpret_cast<const void*>(&attention_decode_gqa_kernel<D, G>), smem, configured);
  cuda::launch("attention_decode_gqa_kernel", attention_decode_gqa_kernel<D, G>, grid, kGqaWarps * kWarp, smem, stream,
               p);
}

template <int D>
void launch_head_dim(const Params& p, dim3 grid, cudaStream_t stream) {
  switch (p.group) {
    case 1: return launch_shape<D, 1>(p, grid, stream);
    case 2: return launch_shape<D, 2>(p, grid, stream);
    case 4: return launch_shape<D, 4>(p, grid, stream);
    case 8: return launch_shape<D, 8>(p, grid, stream);
    default: return launch_shape<D, 16>(p, grid, stream);
  }
}

}  // namespace

bool decode_gqa_takes(const Params& p, core::KvType type) {
  const bool group_ok = p.group == 1 || p.group == 2 || p.group == 4 || p.group == 8 || p.group == 16;
  return type == core::KvType::F16 && p.dk == p.dv && (p.dk == 64 || p.dk == 128) && group_ok && p.vec_k &&
         p.vec_v && reinterpret_cast<uintptr_t>(p.q) % 16 == 0;
}

int decode_gqa_max_splits(int64_t max_kv) { return GqaSplit::max_split(max_kv); }

void launch_decode_gqa(const Params& p, int grid_splits, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(grid_splits), static_cast<unsigned>(p.n_head_kv));
  if (p.dk == 64)
    launch_head_dim<64>(p, grid, stream);
  else
    launch_head_dim<128>(p, grid, stream);
}

}  // namespace strata::cuda::attn

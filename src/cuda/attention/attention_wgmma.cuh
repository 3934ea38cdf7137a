// The warpgroup (wgmma, sm_90a) prompt attention kernel for F16 caches with head dims 128: S = Q K^T and O += P V on Hopper's warpgroup MMA; included by src/cuda/attention/sm90a/attention_wgmma.cu.
//
// The numerics of attention_mma.cuh (F16 K and V as stored; Q * scale * log2 e
// rounded to F16 or split into an F16 pair hi + lo; F32 products' sums;
// online softmax in F32, base 2) but for the softmax weights P, always
// rounded to F16 (split, they cost a third more MMAs for output errors under
// 2^-11 of |V|: the parity tests of tiny and qwen3 moved by under 0.1%), with
// the tensor cores fed from shared memory:
//   - A block is kWgs warpgroups over kRows query rows of one kv head (rows
//     r = t * group + g as in attention_mma.cuh); warpgroup w owns rows
//     64w .. 64w + 63 and walks the keys kKeys at a time.
//   - S (64 x 64 per warpgroup) = Q K^T: 8 wgmma m64n64k16 a Q tile (16 when
//     split), Q (A) and K (B) both K-major in shared memory.
//   - O (64 x 128) += P V: 4 wgmma m64n128k16, P from S's
//     accumulators re-packed to F16 A registers (mma.sync's A layout, as in
//     attention_mma.cuh), V read N-major (transposed) from the same tile
//     layout as K.
//   - Q, K and V tiles are rows of 128 values in two 64-value panels with
//     the 128-byte swizzle (wgmma_layout.h: panel_offset), copied by cp.async
//     (K, V: three stages, tile it + 1 in flight while tile it is computed, one
//     barrier a tile) or stored once (Q, converted from F32). A tile's P V is
//     not waited for: it runs on into the next tile's barrier, copies and S
//     (whose wait covers it), so the third stage keeps its V until then.
//   - Keys at or past the block's causal end are zero-filled; a tile wholly
//     past a warpgroup's last row is skipped by that warpgroup (exactly: it
//     would leave its m, l and O unchanged); the causal mask is applied only
//     to tiles that reach past some row's end.
// Fixed tiling and reduction orders, no atomics: results repeat bit for bit.
// The rows go out as F32, or as F16 (Params::out_h) for a GEMM that reads
// them so: the same values, rounded once.
//
// Measured on the H200 (attention_bench, qwen3 shape, split Q):
// 8192 tokens 1.85 ms a layer (297 TFLOPS of causal attention; with P split
// too 2.24, mma.sync 4.45 ms), 2048 tokens 0.167 ms. Three warpgroups a
// block (12 warps, 160 KB of shared memory, 150 registers) beat two (2.72 ms
// at 8192, P split) and one with two blocks an SM (3.10 ms); issuing the next
// tile's S before the softmax (four K/V stages) was slower (2.92 ms with two
// warpgroups), and so were four stages handed over by mbarriers instead of
// the barrier a tile, letting the warpgroups drift apart (1.94 ms). The P V
// left running into the next tile (three stages, 192 KB) and S's first
// instruction overwriting it instead of zeros: 1.85 -> 1.77-1.79 ms (split
// Q), 1.53 with F16 Q (attention_prompt_to_f16). Not kept: the max as a tree and the O
// rescale skipped where no row's maximum moved (a warp vote): 1.83 ms.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cmath>
#include <cstdint>

#include "cuda/attention/attention_impl.cuh"
#include "cuda/gemm/gemm_device.cuh"
#include "cuda/gemm/gemm_host.h"
#include "cuda/gemm/mma_layout.h"
#include "cuda/gemm/mma_ops.cuh"
#include "cuda/gemm/wgmma_layout.h"
#include "cuda/gemm/wgmma_ops.cuh"
#include "cuda/runtime/check.h"
#include "cuda/runtime/common.cuh"
#include "cuda/runtime/launch.h"

namespace strata::cuda::attn_wgmma {

inline constexpr int kDim = 128;                 // head dim of K and V
inline constexpr int kKeys = 64;                 // keys of a tile
inline constexpr int kWgs = 3;                   // warpgroups of a block
inline constexpr int kThreads = 128 * kWgs;
inline constexpr int kRows = 64 * kWgs;          // query rows of a block
inline constexpr int kChunks = kDim / 8;         // 16-byte chunks of a row
inline constexpr int kPanel = 64 * 128;          // bytes of one 64-value panel of 64 rows
inline constexpr int kTileBytes = 2 * kPanel;    // a warpgroup's Q tile, or one K or V tile
inline constexpr int kStages = 3;                // K/V tile buffers: one filling, one read, one under the last P V
inline constexpr float kLog2e = 1.4426950408889634f;

// Shared memory: Q [hi, lo][kWgs] tiles, then [kStages][K, V] tiles, all
// 1024-byte aligned (192 KB when split).
template <bool kSplit>
constexpr int smem_bytes() {
  return (kSplit ? 2 : 1) * kWgs * kTileBytes + kStages * 2 * kTileBytes;
}

template <bool kSplit>
static __global__ void __launch_bounds__(kThreads, 1) attention_wgmma_kernel(const attn::Params p) {
  pdl_prologue();
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ __align__(1024) uint8_t smem[];
  // The swizzle works on address bits: the tiles' atoms must be 1024-byte aligned.
  if ((mma::smem_u32(smem) & 1023u) != 0) __trap();
  constexpr int kQTiles = kSplit ? 2 : 1;
  uint8_t* q_s = smem;                               // [hi, lo][warpgroup] tiles
  uint8_t* kv_s = smem + kQTiles * kWgs * kTileBytes;  // [stage][K, V] tiles

  const int tid = threadIdx.x, wg = tid / 128, warp = (tid % 128) / kWarp, lane = tid % kWarp;
  const int64_t rows = p.T * p.group;
  // Blocks in descending order of work, as attention_mma.cuh.
  const int n_row_tiles = static_cast<int>(ceil_div(rows, kRows));
  const int hk = static_cast<int>(blockIdx.x % static_cast<unsigned>(p.n_head_kv));
  const int64_t r0 = static_cast<int64_t>(n_row_tiles - 1 - static_cast<int>(blockIdx.x / p.n_head_kv)) * kRows;
  const int64_t r_last = (r0 + kRows < rows ? r0 + kRows : rows) - 1;
  const int n_keys = static_cast<int>(p.pos0 + r_last / p.group + 1);  // the block's causal end
  const int n_tiles = static_cast<int>(ceil_div(n_keys, kKeys));

  // Starts the copies of tile it's K and V rows (keys past n_keys zero-filled).
  auto issue = [&](int it) {
    uint8_t* dst = kv_s + (it % kStages) * 2 * kTileBytes;
    const int j0 = it * kKeys;
    for (int i = tid; i < 2 * kKeys * kChunks; i += kThreads) {
      const int plane = i / (kKeys * kChunks), j = (i / kChunks) % kKeys, c = i % kChunks;
      const int key = j0 + j;
      const bool valid = key < n_keys;
      const int64_t row = static_cast<int64_t>(valid ? key : 0) * p.n_head_kv + hk;
      const auto* src = static_cast<const uint8_t*>(plane == 0 ? p.k : p.v) + row * (2 * kDim) + 16 * c;
      mma::cp_async_16_zfill(dst + plane * kTileBytes + wgmma::panel_offset(j, c, kKeys), src, valid);
    }
    gemm_detail::cp_async_commit();
  };
  issue(0);

  // Q times scale * log2(e) to F16 (and its rounding error to the lo tiles
  // when split); rows past the end are zeros (never written out).
  const float q_mul = p.scale * kLog2e;
  for (int i = tid; i < kRows * 2 * kChunks; i += kThreads) {
    const int r = i / (2 * kChunks), c4 = i % (2 * kChunks);  // float4 c4 of row r: chunk c4 / 2, half c4 % 2
    const int64_t gr = r0 + r;
    float4 x = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (gr < rows) {
      const int64_t t = gr / p.group;
      const int h = hk * p.group + static_cast<int>(gr - t * p.group);
      x = __ldg(reinterpret_cast<const float4*>(p.q + (t * p.n_head + h) * kDim) + c4);
    }
    x = make_float4(x.x * q_mul, x.y * q_mul, x.z * q_mul, x.w * q_mul);
    const int off = (r / 64) * kTileBytes + wgmma::panel_offset(r % 64, c4 / 2, 64) + 8 * (c4 % 2);
    uint2 hi, lo;
    mma::pack_half4<kSplit>(x, hi, lo);
    if constexpr (kSplit) *reinterpret_cast<uint2*>(q_s + kWgs * kTileBytes + off) = lo;
    *reinterpret_cast<uint2*>(q_s + off) = hi;
  }
  wgmma::fence_proxy_async();  // the Q stores, for the tensor cores (published by the loop's first barrier)

  // This thread's rows: accumulator registers 4 i + {2h, 2h + 1} are row
  // wr0 + g + 8 h of the block, columns 8 i + 2 t + {0, 1} (wgmma_layout.h).
  const int wr0 = 64 * wg + 16 * warp;
  int row_end[2];  // exclusive causal end: the row sees keys [0, row_end)
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int64_t gr = r0 + wr0 + mma::c_elem(lane, 2 * h).row;
    row_end[h] = static_cast<int>(p.pos0 + gr / p.group + 1);
  }
  // Keys below wg_full are visible to every row of the warpgroup; no real
  // row of it sees a key at or past wg_end (0: no real row).
  const int64_t g_first = r0 + 64 * wg;
  const int64_t g_last = (g_first + 64 < rows ? g_first + 64 : rows) - 1;
  const int wg_full = static_cast<int>(p.pos0 + g_first / p.group + 1);
  const int wg_end = g_first < rows ? static_cast<int>(p.pos0 + g_last / p.group + 1) : 0;
  const int col0 = mma::c_elem(lane, 0).col;

  float o[kDim / 2];
#pragma unroll
  for (int i = 0; i < kDim / 2; ++i) o[i] = 0.0f;
  float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.0f, 0.0f};
  const uint32_t q_hi = mma::smem_u32(q_s + wg * kTileBytes), q_lo = q_hi + kWgs * kTileBytes;

  for (int it = 0; it < n_tiles; ++it) {
    gemm_detail::cp_async_wait<0>();
    wgmma::fence_proxy_async();
    // Tile it (and, the first time, Q) visible to all. Every warpgroup has
    // waited for its S of tile it - 1, and so for its P V of tile it - 2,
    // the last reader of the buffer that tile it + 1 now fills.
    __syncthreads();
    if (it + 1 < n_tiles) issue(it + 1);
    const int j0 = it * kKeys;
    if (j0 >= wg_end) {  // warpgroup-uniform; so are all later tiles
      wgmma::wait<0>();
      continue;
    }
    const uint32_t k_base = mma::smem_u32(kv_s + (it % kStages) * 2 * kTileBytes), v_base = k_base + kTileBytes;

    // S = Q K^T, 16 dims an instruction (Q hi, then Q lo when split); the
    // first instruction overwrites S.
    float s[kKeys / 2];
    wgmma::fence();
#pragma unroll
    for (int kk = 0; kk < kDim / 16; ++kk) {
      const int off = wgmma::kmajor_start(kk, 64);
      const uint64_t b = wgmma::smem_desc(k_base + off, wgmma::kAtomBytes);
      wgmma::mma_m64n64k16_ss(s, wgmma::smem_desc(q_hi + off, wgmma::kAtomBytes), b, kk > 0);
      if constexpr (kSplit) wgmma::mma_m64n64k16_ss(s, wgmma::smem_desc(q_lo + off, wgmma::kAtomBytes), b);
    }
    wgmma::commit();
    wgmma::wait<0>();  // S, and the previous tile's P V (groups complete in order)
#pragma unroll
    for (int i = 0; i < kKeys / 2; ++i) wgmma::fence_operand(s[i]);
#pragma unroll
    for (int i = 0; i < kDim / 2; ++i) wgmma::fence_operand(o[i]);

    // Causal mask where the tile reaches past some row's end (this also
    // covers the zero-filled keys past n_keys).
    if (j0 + kKeys > wg_full) {
#pragma unroll
      for (int i = 0; i < kKeys / 2; ++i) {
        const int key = j0 + 8 * (i / 4) + col0 + (i & 1);
        if (key >= row_end[(i / 2) & 1]) s[i] = -INFINITY;
      }
    }

    // Online softmax, row by row: the 4 lanes of a quad hold a row's scores.
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float mx = -INFINITY;
#pragma unroll
      for (int nt = 0; nt < kKeys / 8; ++nt) mx = fmaxf(mx, fmaxf(s[4 * nt + 2 * h], s[4 * nt + 2 * h + 1]));
      mx = fmaxf(mx, __shfl_xor_sync(kFullMask, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(kFullMask, mx, 2));
      const float m_new = fmaxf(m_run[h], mx);
      const float base = m_new == -INFINITY ? 0.0f : m_new;  // a row with no visible key yet: p = 0
      const float alpha = mma::ex2(m_run[h] - base);
      m_run[h] = m_new;
      float sum = 0.0f;
#pragma unroll
      for (int nt = 0; nt < kKeys / 8; ++nt)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const float pv = mma::ex2(s[4 * nt + 2 * h + e] - base);
          s[4 * nt + 2 * h + e] = pv;
          sum += pv;
        }
      l_run[h] = l_run[h] * alpha + sum;
#pragma unroll
      for (int dt = 0; dt < kDim / 8; ++dt) {
        o[4 * dt + 2 * h] *= alpha;
        o[4 * dt + 2 * h + 1] *= alpha;
      }
    }

    // O += P V, 16 keys an instruction; P as F16 A registers from S's.
    uint32_t a[kKeys / 16][4];
#pragma unroll
    for (int kk = 0; kk < kKeys / 16; ++kk)
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const float* c = s + 4 * (2 * kk + mma::p_ntile(r)) + 2 * mma::p_pair(r);
        a[kk][r] = mma::pack_half2(c[0], c[1]);
      }
    wgmma::fence();
#pragma unroll
    for (int kk = 0; kk < kKeys / 16; ++kk) {
      const uint64_t b = wgmma::smem_desc(v_base + wgmma::mn_start(kk), wgmma::kAtomBytes, kPanel);
      wgmma::mma_m64n128k16_rs<1>(o, a[kk], b);
    }
    wgmma::commit();  // left running into the next tile's barrier, copies and S
  }
  wgmma::wait<0>();
#pragma unroll
  for (int i = 0; i < kDim / 2; ++i) wgmma::fence_operand(o[i]);

  // out = O / l; a row's sum is spread over its quad (fixed butterfly order).
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    float l = l_run[h];
    l += __shfl_xor_sync(kFullMask, l, 1);
    l += __shfl_xor_sync(kFullMask, l, 2);
    const float inv = 1.0f / l;
    const mma::Coord c0 = mma::c_elem(lane, 2 * h);
    const int64_t gr = r0 + wr0 + c0.row;
    if (gr >= rows) continue;
    const int64_t t = gr / p.group;
    const int head = hk * p.group + static_cast<int>(gr - t * p.group);
    const int64_t at = (t * p.n_head + head) * kDim + c0.col;
    if (p.out_h != nullptr) {
#pragma unroll
      for (int dt = 0; dt < kDim / 8; ++dt)
        *reinterpret_cast<uint32_t*>(p.out_h + at + 8 * dt) =
            mma::pack_half2(o[4 * dt + 2 * h] * inv, o[4 * dt + 2 * h + 1] * inv);
    } else {
#pragma unroll
      for (int dt = 0; dt < kDim / 8; ++dt)
        *reinterpret_cast<float2*>(p.out + at + 8 * dt) = make_float2(o[4 * dt + 2 * h] * inv, o[4 * dt + 2 * h + 1] * inv);
    }
  }
#else
  __trap();  // built for sm_90a only; attention.cu picks this kernel only on compute capability 9.0
#endif
}

template <bool kSplit>
void launch(const attn::Params& p, cudaStream_t stream) {
  static std::atomic<uint64_t> configured{0};
  constexpr int smem = smem_bytes<kSplit>();
  gemm_detail::allow_smem(reinterpret_cast<const void*>(&attention_wgmma_kernel<kSplit>), smem, configured);
  const auto blocks = static_cast<unsigned>(ceil_div(p.T * p.group, kRows) * p.n_head_kv);
  cuda::launch("attention_wgmma_kernel", attention_wgmma_kernel<kSplit>, blocks, kThreads, smem, stream, p);
}

}  // namespace strata::cuda::attn_wgmma

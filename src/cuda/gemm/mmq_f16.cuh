// The tensor-core GEMM kernel for GGUF quants: weights decoded to F16 in registers, F16 activations, F32 sums; included once per weight type by the mmq_<type>.cu instance files.
//
// Block: 512 threads, 256 weight rows x 64 positions. Warp w owns rows
// 32 (w % 8) .. + 31 and positions 32 (w / 8) .. + 31: 2 x 4 MMA tiles of
// m16n8k16 (F16 in, F32 accumulate). K advances one 256-value group (a
// super-block, or eight Q8_0 blocks) per stage; a stage holds the raw GGUF
// bytes of the 256 rows and 64 activation rows of 256 halves, copied with
// 16-byte cp.async, two stages deep, one block barrier a stage. Once a stage
// has landed, warp w < 8 turns its rows' per-block scales into F16 pairs
// (prep: a table of (scale, -min), per 16 values for Q2_K, Q3_K's and Q6_K's
// two 16-value scales, Q8_0's d) for itself and warp w + 8 (a named barrier
// joins the two). Then, for each 32-value block j, each warp loads the B
// registers of its 4 position tiles and decodes its A fragments from the raw bytes in registers: w4 gives
// four quants as bytes, f16_decode.cuh turns them into F16 weights
// q * scale - min, rounded once. No per-block fold remains (the int8 kernel this replaced spent 5 F32
// operations per MMA result on it). 16 warps a multiprocessor keep enough
// loads and MMAs in flight: with 8 (each 32 rows x 64 positions) the tensor
// pipe sat idle 73% of the time, waiting on shared-memory latency.
//
// K order: within a block, lane (g, t) decodes values 8t .. 8t + 7 of its
// rows and loads the same values of its positions (one 16-byte load),
// k-step s taking 8t + 4s .. + 3 (mma_layout.h: gemm_lane_value; a CPU test
// emulates the warp). Activation rows sit in shared memory with their 16-byte
// chunks swizzled (x_chunk) so those loads are free of bank conflicts.
//
// Numerics: each weight is rounded to F16 (its scale and min each rounded to
// F16 first), the activations were rounded to F16 by their producer, the
// tensor core's products are exact and its sums F32, in an order fixed by
// the shapes: results repeat bit for bit, and differ from core::vec_dot (Q8A
// activations, exact weights) by about the activations' Q8A rounding.
#pragma once

#include <cuda_fp16.h>

#include <algorithm>
#include <atomic>
#include <type_traits>

#include "cuda/gemm/f16_decode.cuh"
#include "cuda/gemm/gemm_device.cuh"
#include "cuda/gemm/gemm_host.h"
#include "cuda/gemm/mma_layout.h"
#include "cuda/gemm/mma_ops.cuh"
#include "cuda/gemm/mmq_internal.cuh"
#include "cuda/gemm/mmq_tile.cuh"
#include "cuda/runtime/check.h"
#include "cuda/runtime/common.cuh"
#include "cuda/runtime/launch.h"

namespace strata::cuda::gemm_detail {

template <GgmlType T>
struct F16Cfg {
  static constexpr int kChunks = staged_granules<T>();  // 16-byte granules per row piece
  // Row strides of 32 or 96 mod 128 bytes, the least at or above a row
  // piece: a warp's loads of one word pair (8t, 8t + 4) from 8 rows spread
  // over the banks.
  static constexpr int kWs = [] {
    int s = 16 * kChunks;
    while (s % 128 != 32 && s % 128 != 96) s += 16;
    return s;
  }();
  static constexpr int kXs = 512;  // one activation row: 256 halves
  static constexpr int kStage = kMmqRows * kWs + kTileCols * kXs;
  static constexpr int kEntries = entries_per_block<QuantTraits<T>>();
  static constexpr int kTab = 8 * kEntries * kMmqRows * 4;  // half2 per (entry, row)
  static constexpr int kLdc = kMmqRows + 4;
  static constexpr int kSmem = std::max(2 * kStage + kTab, kTileCols * kLdc * 4);
};

// Where 16-byte chunk c (0..31) of activation row e of a stage lies: rows of
// opposite parity swap the halves of each 128 bytes, so the 8 lanes of a
// quarter warp (two rows, four chunks each) read 8 different bank groups.
__device__ __forceinline__ int x_chunk(int e, int c) { return c ^ ((e & 1) << 2); }

// Four quants (w4's bytes) as two F16 pairs of weights: (q0, q1) in lo and
// (q2, q3) in hi (f16_decode.cuh), with one scale and min for all four.
template <GgmlType T>
__device__ __forceinline__ void decode4(uint32_t q, __half2 scale, __half2 neg_min, uint32_t& lo, uint32_t& hi) {
  q = bias_quants<T>(q);
  lo = decode_pair<T, false>(q, scale, neg_min);
  hi = decode_pair<T, true>(q, scale, neg_min);
}

inline constexpr int kF16Threads = 512;

// Threads (warp pair) of the named barrier `id` (1..8; 0 is __syncthreads').
__device__ __forceinline__ void pair_barrier(int id) { asm volatile("bar.sync %0, 64;\n" ::"r"(id) : "memory"); }

template <GgmlType T>
static __global__ void __launch_bounds__(kF16Threads, 1) mmq_f16_kernel(const MmParams p) {
  pdl_prologue();
  using C = F16Cfg<T>;
  extern __shared__ __align__(16) uint8_t smem[];
  __shared__ TileRows<kMmqRows, kTileCols> rows;
  BlockTile bt;
  if (!setup_tile(p, rows, bt)) return;
  static_assert(kMmqRows == 256 && kTileCols == 64, "8 x 2 warps of 32 rows x 32 positions");

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int wm = warp % 8, wn = warp / 8;
  const int g = lane / 4, t = lane % 4;
  const int nkb = p.n_in / 256;
  uint32_t* tab = reinterpret_cast<uint32_t*>(smem + 2 * C::kStage);  // [8 * kEntries][kMmqRows rows] of half2
  // This warp's n-tiles (8 positions each) that hold positions of the tile.
  const int live = min(4, max(0, (bt.ncols - 32 * wn + 7) / 8));

  auto load_stage = [&](int kb) {
    uint8_t* Ws = smem + (kb & 1) * C::kStage;
    uint8_t* Xs = Ws + kMmqRows * C::kWs;
    stage_weights<T, kMmqRows, kF16Threads>(Ws, C::kWs, rows.wptr, kb);
    for (int i = tid; i < kTileCols * 32; i += kF16Threads) {
      const int e = i / 32, c = i % 32;
      const uint8_t* xr = rows.xptr[e];
      if (xr == nullptr) continue;
      cp_async_16(Xs + e * C::kXs + 16 * x_chunk(e, c), xr + kb * 512 + 16 * c);
    }
    cp_async_commit();
  };

  auto stage_row = [&](const uint8_t* Ws, int r, int kb) { return staged_row<T>(Ws, C::kWs, rows.wptr[r], r, kb); };

  // Once per stage, by warps 0..7: row tid's block (or half-block) scales as
  // F16 pairs (warp w prepares rows 32w .. 32w + 31, the rows it and warp
  // w + 8 use).
  auto prep = [&](int kb) {
    const uint8_t* B = stage_row(smem + (kb & 1) * C::kStage, tid, kb);
    const RowHead head = QuantTraits<T>::row_head(B);
    if constexpr (C::kEntries == 2) {
#pragma unroll
      for (int k = 0; k < 16; ++k) tab[k * kMmqRows + tid] = QuantTraits<T>::scale_entry(B, head, k);
    } else {
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        uint32_t lo, hi;
        QuantTraits<T>::scale_entry_pair(B, head, j, lo, hi);
        tab[j * kMmqRows + tid] = lo;
        tab[(j + 4) * kMmqRows + tid] = hi;
      }
    }
  };

  float acc[2][4][4];
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int nt = 0; nt < 4; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[mt][nt][i] = 0.0f;

  // The MMAs of stage kb. With guard set, n-tiles from `live` on are skipped
  // (a warp whose 32 positions are all in use runs without).
  auto compute = [&](int kb, auto guard) {
    constexpr bool kGuard = decltype(guard)::value;
    const uint8_t* Ws = smem + (kb & 1) * C::kStage;
    const uint8_t* Xs = Ws + kMmqRows * C::kWs;
    // This lane's four A rows: (mt, h) -> row 32 wm + 16 mt + 8 h + g.
    const uint8_t* A[2][2];
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) A[mt][h] = stage_row(Ws, wm * 32 + mt * 16 + h * 8 + g, kb);

#pragma unroll 2
    for (int j = 0; j < 8; ++j) {
      // The B registers of all n-tiles first: halves 8t .. 8t + 7 of block j
      // of each position (k-step 0 takes the first four, 1 the last); their
      // loads' latency passes under the A decode.
      uint4 b[4];
#pragma unroll
      for (int nt = 0; nt < 4; ++nt) {
        if (kGuard && nt >= live) break;
        const int e = wn * 32 + nt * 8 + g;
        b[nt] = *reinterpret_cast<const uint4*>(Xs + e * C::kXs + 16 * x_chunk(e, 4 * j + t));
      }
      // a[s][mt]: the A registers of k-step s (mma_layout.h: rows g / g + 8
      // in registers 0 / 1 with values v0, v0 + 1, in 2 / 3 with v0 + 2, v0 + 3).
      uint32_t a[2][2][4];
#pragma unroll
      for (int mt = 0; mt < 2; ++mt) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          // Lanes t >= 2 take the block's second 16 values (their own entry
          // where a half has one).
          const int entry = C::kEntries * j + (C::kEntries == 2 && t >= 2 ? 1 : 0);
          const uint32_t e = tab[entry * kMmqRows + wm * 32 + mt * 16 + h * 8 + g];
          const __half2 scale = entry_scale<T>(e, t >= 2), neg_min = entry_neg_min(e);
          uint32_t q[2];  // values gemm_lane_value(lane, s) .. + 3 = 8t + 4s .. + 3
          QuantTraits<T>::w4_pair(A[mt][h], j, t, q);
#pragma unroll
          for (int s = 0; s < 2; ++s) decode4<T>(q[s], scale, neg_min, a[s][mt][h], a[s][mt][2 + h]);
        }
      }
#pragma unroll
      for (int nt = 0; nt < 4; ++nt) {
        if (kGuard && nt >= live) break;
#pragma unroll
        for (int mt = 0; mt < 2; ++mt) {
          mma::mma_f16(acc[mt][nt], a[0][mt], b[nt].x, b[nt].y);
          mma::mma_f16(acc[mt][nt], a[1][mt], b[nt].z, b[nt].w);
        }
      }
    }
  };

  load_stage(0);
  for (int kb = 0; kb < nkb; ++kb) {
    cp_async_wait<0>();
    __syncthreads();  // stage kb visible; every warp is done with stage kb - 1
    if (kb + 1 < nkb) load_stage(kb + 1);
    if (wn == 0) prep(kb);
    pair_barrier(1 + wm);  // warps wm and wm + 8: the table's rows
    if (live == 4) {
      compute(kb, std::false_type{});
    } else if (live > 0) {
      compute(kb, std::true_type{});
    }
  }
  __syncthreads();  // the stages are read; Cs overwrites them

  float* Cs = reinterpret_cast<float*>(smem);
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int nt = 0; nt < 4; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const mma::Coord c = mma::c_elem(lane, i);
        Cs[(wn * 32 + nt * 8 + c.col) * C::kLdc + wm * 32 + mt * 16 + c.row] = acc[mt][nt][i];
      }
  __syncthreads();
  store_tile<kF16Threads, kMmqRows>(p, bt, Cs, C::kLdc, rows.yrow);
}

template <GgmlType T>
void launch_f16(const MmParams& p, dim3 grid, cudaStream_t stream) {
  static std::atomic<uint64_t> configured{0};
  allow_smem(reinterpret_cast<const void*>(&mmq_f16_kernel<T>), F16Cfg<T>::kSmem, configured);
  cuda::launch("mmq_f16_kernel", mmq_f16_kernel<T>, grid, kF16Threads, F16Cfg<T>::kSmem, stream, p);
}

}  // namespace strata::cuda::gemm_detail

// The warpgroup (wgmma, sm_90a) GEMM kernel for GGUF quants: weights decoded to F16 in registers as the A operand, F16 activations read by the tensor cores from shared memory, F32 sums; included by the instance files in src/cuda/gemm/sm90a.
//
// The stages and numerics of mmq_f16.cuh (256 weight rows, one 256-value
// group a stage, two stages, raw GGUF bytes copied with cp.async, weights
// q * scale - min rounded once to F16), with Hopper's warpgroup MMA in place
// of mma.sync:
//   - 4 warpgroups of 128 threads; warpgroup w owns rows 64w .. 64w + 63 and
//     all the block's positions: 128 for Q2_K, Q3_K and Q4_K, 64 for the
//     others, whose bigger groups leave no room for two stages of 128
//     (QuantTraits::kWgCols).
//     One wgmma m64n128k16 (m64n64k16 for a tile of at most 64 positions) per
//     16 values of K. Each weight is decoded once per block, so the decode
//     (the kernel's ALU work, which bounded it at 64 positions: Nsight
//     Compute counted 67 instructions a warp per instruction step, the
//     issue slots 46% busy) is spread over twice the products; and the
//     activations go to the tensor cores from shared memory without passing
//     through registers.
//   - Warp w decodes its 16 rows: per instruction one 2-byte load per row
//     (QuantTraits::quant_pairs; Q3_K, Q5_K, Q6_K, Q8_0, IQ4_NL, IQ4_XS one
//     more; the grid types one grid word, shared by two lanes) and four F16
//     pairs. Two sets of A registers: instruction i + 1 is decoded while i
//     runs, and wgmma.wait_group 1 frees i - 1's.
//   - Each warp prepares its own rows' scale table (scale_entry_pair), so only a
//     __syncwarp stands between the table and its readers.
//   - A stage's activations sit K-major with the 128-byte swizzle, each
//     instruction's two chunks side by side (wgmma_layout.h: x_offset),
//     written by cp.async, 8 lanes to 8 different bank groups;
//     fence.proxy.async then a barrier hand them to the tensor cores, and
//     each stage's wgmmas are waited for before the barrier that lets the
//     next copies overwrite it.
//
// Numerics: the products are those of mmq_f16.cuh (tests/ops/gemm_ref.h
// rebuilds them); only the order of the F32 sums differs, fixed by the
// shapes, so results repeat bit for bit.
//
// Measured on the H200 (gemm_bench, 64 positions): dense Q4_K
// 2048 x 4096 at 2048 tokens 198 -> 162 us against mma.sync, one layer's
// experts 1,082 -> 874 us.
#pragma once

#include <cuda_fp16.h>

#include <algorithm>
#include <atomic>

#include "cuda/gemm/f16_decode.cuh"
#include "cuda/gemm/gemm_device.cuh"
#include "cuda/gemm/gemm_host.h"
#include "cuda/gemm/mma_layout.h"
#include "cuda/gemm/mma_ops.cuh"
#include "cuda/gemm/mmq_internal.cuh"
#include "cuda/gemm/mmq_tile.cuh"
#include "cuda/gemm/wgmma_layout.h"
#include "cuda/gemm/wgmma_ops.cuh"
#include "cuda/runtime/check.h"
#include "cuda/runtime/common.cuh"
#include "cuda/runtime/launch.h"

namespace strata::cuda::gemm_detail {

inline constexpr int kWgThreads = 512;

template <GgmlType T>
struct WgCfg {
  static constexpr int kCols = QuantTraits<T>::kWgCols;  // positions per block
  // Row strides of 16 x odd bytes mod 128 (a row piece's granules, rounded
  // up to an odd count): the 8 rows whose 8-byte windows a warp reads at
  // once (quant_pairs) lie in 8 different 16-byte bank groups.
  static constexpr int kWs = 16 * (staged_granules<T>() | 1);
  static constexpr int kXBytes = kCols * 512;  // kCols positions x 256 halves, first in the stage
  static constexpr int kStage = kXBytes + kMmqRows * kWs;
  static_assert(kStage % 1024 == 0, "stages keep the activation tile 1024-byte aligned");
  static constexpr int kEntries = entries_per_block<QuantTraits<T>>();
  static constexpr int kTab = 8 * kEntries * kMmqRows * 4;  // half2 per (entry, row)
  static constexpr int kLdc = kMmqRows + 4;
  static constexpr int kSmem = std::max(2 * kStage + kTab, kCols * kLdc * 4);
  static_assert(kSmem + sizeof(TileRows<kMmqRows, kCols>) <= 227 * 1024, "a block's shared memory fits 227 KiB");
};

template <GgmlType T>
static __global__ void __launch_bounds__(kWgThreads, 1) mmq_wgmma_kernel(const MmParams p) {
  pdl_prologue();
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using C = WgCfg<T>;
  constexpr int kCols = C::kCols;
  extern __shared__ __align__(1024) uint8_t smem[];
  __shared__ TileRows<kMmqRows, kCols> rows;
  // The swizzle works on address bits: the stages' atoms must be 1024-byte aligned.
  if ((mma::smem_u32(smem) & 1023u) != 0) __trap();
  BlockTile bt;
  if (!setup_tile(p, rows, bt)) return;
  static_assert(kMmqRows == 256 && (kCols == 64 || kCols == 128), "4 warpgroups of 64 rows x 64 or 128 positions");

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, t = lane % 4;
  const int row0 = 16 * warp;  // this warp's rows: 16 of its warpgroup's 64
  const int nkb = p.n_in / 256;
  uint32_t* tab = reinterpret_cast<uint32_t*>(smem + 2 * C::kStage);  // [8 * kEntries][kMmqRows rows] of half2

  // Stage kb's weights and the activations of the run's first N positions
  // (the copy order of an N-column tile, the places of the kCols layout).
  // Copy k = tid + 512 j of the order is this thread's j-th: all of them
  // take one column (wgmma_layout_test), so one row pointer serves them.
  auto load_stage = [&](int kb, auto n_positions) {
    constexpr int N = decltype(n_positions)::value;
    uint8_t* Xs = smem + (kb & 1) * C::kStage;
    stage_weights<T, kMmqRows, kWgThreads>(Xs + C::kXBytes, C::kWs, rows.wptr, kb);
    const int n = wgmma::x_copy_column(tid, N);
    const uint8_t* xr = rows.xptr[n];
    if (xr != nullptr) {  // else past the tile: its columns' results are never stored
      xr += kb * 512;
#pragma unroll
      for (int j = 0; j < N * wgmma::kChunks / kWgThreads; ++j) {
        const int c = wgmma::x_copy_chunk(tid + j * kWgThreads, N);
        cp_async_16(Xs + wgmma::x_offset(QuantTraits<T>::kChunkDelta, n, c, kCols), xr + 16 * c);
      }
    }
    cp_async_commit();
  };

  // This warp's 16 rows' scale table for stage kb: lane l takes row l % 16
  // and blocks j, j + 4 for j = 2 (l / 16) and 2 (l / 16) + 1, so every lane
  // runs the same instructions (scale_entry_pair); with two entries a block,
  // halves 8 (l / 16) .. 8 (l / 16) + 7.
  auto prep = [&](int kb) {
    const int r = row0 + (lane & 15), j0 = 2 * (lane >> 4);
    const uint8_t* B = staged_row<T>(smem + (kb & 1) * C::kStage + C::kXBytes, C::kWs, rows.wptr[r], r, kb);
    const RowHead head = QuantTraits<T>::row_head(B);
    if constexpr (C::kEntries == 2) {
#pragma unroll
      for (int k = 4 * j0; k < 4 * j0 + 8; ++k) tab[k * kMmqRows + r] = QuantTraits<T>::scale_entry(B, head, k);
    } else {
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        uint32_t lo, hi;
        QuantTraits<T>::scale_entry_pair(B, head, j0 + i, lo, hi);
        tab[(j0 + i) * kMmqRows + r] = lo;
        tab[(j0 + i + 4) * kMmqRows + r] = hi;
      }
    }
    __syncwarp();
  };

  // 64 x kCols accumulators of the warpgroup; a tile of at most 64 positions
  // runs n64 instructions on the first 32.
  float acc[2 * kCols / 4];
#pragma unroll
  for (int i = 0; i < 2 * kCols / 4; ++i) acc[i] = 0.0f;

  // Stage kb's 16 instructions of N positions (64, or kCols).
  auto compute = [&](int kb, auto n_positions) {
    constexpr int N = decltype(n_positions)::value;
    uint8_t* stage = smem + (kb & 1) * C::kStage;
    const uint8_t* Ws = stage + C::kXBytes;
    const uint8_t* A[2] = {staged_row<T>(Ws, C::kWs, rows.wptr[row0 + g], row0 + g, kb),
                           staged_row<T>(Ws, C::kWs, rows.wptr[row0 + g + 8], row0 + g + 8, kb)};
    const uint64_t desc0 = wgmma::smem_desc(mma::smem_u32(stage), wgmma::kSbo);
    uint32_t a[2][4];
    uint32_t e[2][2];  // the scale entries of rows g, g + 8 for core matrices 0, 1
#pragma unroll
    for (int i = 0; i < wgmma::kSteps; ++i) {
      constexpr int kDelta = QuantTraits<T>::kChunkDelta;
      const int c0 = wgmma::chunk_of(kDelta, i, 0), c1 = wgmma::chunk_of(kDelta, i, 1);
      // The blocks change every 4 instructions (first_chunk), the halves every 2.
      if ((i & (4 / C::kEntries - 1)) == 0) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const uint32_t* tr = tab + row0 + g + 8 * h;
          e[h][0] = tr[wgmma::entry_of_chunk(c0, C::kEntries) * kMmqRows];
          e[h][1] = tr[wgmma::entry_of_chunk(c1, C::kEntries) * kMmqRows];
        }
      }
      uint32_t(&ai)[4] = a[i & 1];
#pragma unroll
      for (int h = 0; h < 2; ++h) {  // rows g and g + 8
        const uint32_t q = bias_quants<T>(QuantTraits<T>::quant_pairs(A[h], i, t));
        ai[wgmma::a_reg(h, 0)] =
            decode_pair<T, false>(q, entry_scale<T>(e[h][0], wgmma::second_half(c0)), entry_neg_min(e[h][0]));
        ai[wgmma::a_reg(h, 1)] =
            decode_pair<T, true>(q, entry_scale<T>(e[h][1], wgmma::second_half(c1)), entry_neg_min(e[h][1]));
      }
      wgmma::fence();
      const uint64_t desc = wgmma::desc_at(desc0, wgmma::b_start(i, kCols));
      float(&d)[N / 2] = *reinterpret_cast<float(*)[N / 2]>(acc);  // the first N / 2 accumulators
      if constexpr (N == 128) {
        wgmma::mma_m64n128k16_rs<0>(d, ai, desc);
      } else {
        wgmma::mma_m64n64k16(d, ai, desc);
      }
      wgmma::commit();
      wgmma::wait<1>();
    }
    wgmma::wait<0>();  // this stage's shared memory is read before the next barrier
  };

  // The K loop and the accumulators into Cs[position][row] (over the stages).
  float* Cs = reinterpret_cast<float*>(smem);
  auto run = [&](auto n_positions) {
    constexpr int N = decltype(n_positions)::value;
    load_stage(0, n_positions);
    for (int kb = 0; kb < nkb; ++kb) {
      cp_async_wait<0>();
      wgmma::fence_proxy_async();
      __syncthreads();  // stage kb visible to every warp and to the tensor cores; stage kb - 1 read by all
      if (kb + 1 < nkb) load_stage(kb + 1, n_positions);
      prep(kb);
      compute(kb, n_positions);
    }
#pragma unroll
    for (int i = 0; i < N / 2; ++i) wgmma::fence_operand(acc[i]);
    __syncthreads();  // the stages are read; Cs overwrites them
#pragma unroll
    for (int nt = 0; nt < N / 8; ++nt)
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const mma::Coord c = mma::c_elem(lane, r);
        Cs[(8 * nt + c.col) * C::kLdc + row0 + c.row] = acc[4 * nt + r];
      }
  };
  if (kCols == 128 && bt.ncols > 64) {
    run(std::integral_constant<int, kCols>{});
  } else {
    run(std::integral_constant<int, 64>{});
  }
  __syncthreads();
  store_tile<kWgThreads, kMmqRows>(p, bt, Cs, C::kLdc, rows.yrow);
#else
  __trap();  // built for sm_90a only; gemm_kernel() picks this kernel only on compute capability 9.0
#endif
}

template <GgmlType T>
void launch_wgmma(const MmParams& p, dim3 grid, cudaStream_t stream) {
  static std::atomic<uint64_t> configured{0};
  allow_smem(reinterpret_cast<const void*>(&mmq_wgmma_kernel<T>), WgCfg<T>::kSmem, configured);
  cuda::launch("mmq_wgmma_kernel", mmq_wgmma_kernel<T>, grid, kWgThreads, WgCfg<T>::kSmem, stream, p);
}

}  // namespace strata::cuda::gemm_detail

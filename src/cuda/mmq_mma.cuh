// The int8 tensor-core GEMM kernel for GGUF quants, included once per weight type by the mmq_<type>.cu instance files.
//
// Block: 256 threads, 128 weight rows x 64 positions. Warps are 4 (rows) x 2
// (positions), each owning 32 rows x 32 positions: 2 x 4 MMA tiles of
// m16n8. K advances one 256-value group (one super-block, or 8 Q8_0 blocks)
// per stage; a stage holds the raw GGUF bytes of 128 weight rows and the 8
// Q8A blocks of 64 activation rows, copied with 16-byte cp.async, two stages
// deep. For each Q8A block j of the stage every warp decodes its A fragments
// from the raw bytes (w4), runs its 8 MMAs (16 for Q6_K: two k16 halves,
// scaled by their int8 sub-block scales) and folds the int32 results into
// its F32 accumulators with term<T>() in ascending K: core::vec_dot's exact
// sequence of F32 operations, so outputs match the CPU bit for bit.
#pragma once

#include <algorithm>
#include <atomic>

#include "cuda/gemm_check.h"
#include "cuda/gemm_device.cuh"
#include "cuda/gemm_host.h"
#include "cuda/mmq_internal.cuh"
#include "cuda/mmq_tile.cuh"

namespace strata::cuda::gemm_detail {

template <GgmlType T>
struct MmaCfg {
  static constexpr int kSB = bytes_per_256(T);
  // Q4_K, Q5_K, Q8_0 groups of a 16-byte aligned row with n_in % 256 == 0
  // start 16-byte aligned; Q6_K's 210-byte groups start anywhere even.
  static constexpr bool kAligned = kSB % 16 == 0;
  static constexpr int kChunks = kAligned ? kSB / 16 : (kSB + 14 + 15) / 16;  // 16-byte granules per row piece
  // Row strides chosen so the 8 rows x 4 words of a fragment load hit 32
  // different banks (144 and 176 bytes: 36 and 44 words, i.e. 4 and 12 mod 32).
  static constexpr int kWs = kAligned ? kSB : 240;
  static constexpr int kXs = 8 * 40 + 16;  // 84 words, 20 mod 32: conflict-free B fragments
  static constexpr int kStage = kMmqRows * kWs + kTileCols * kXs;
  static constexpr int kLdc = kMmqRows + 4;
  static constexpr int kSmem = std::max(2 * kStage, kTileCols * kLdc * 4);
};

template <GgmlType T>
static __global__ void __launch_bounds__(256, 2) mmq_mma_kernel(const MmParams p) {
  using C = MmaCfg<T>;
  extern __shared__ __align__(16) uint8_t smem[];
  __shared__ int xrow[kTileCols], yrow[kTileCols];
  BlockTile bt;
  if (!resolve_tile<kMmqRows>(p, xrow, yrow, bt)) return;

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, t = lane % 4;
  const int wm = warp % 4, wn = warp / 4;
  const int nkb = p.n_in / 256;

  auto load_stage = [&](int kb) {
    uint8_t* Ws = smem + (kb & 1) * C::kStage;
    uint8_t* Xs = Ws + kMmqRows * C::kWs;
    for (int i = tid; i < kMmqRows * C::kChunks; i += 256) {
      const int r = i / C::kChunks, c = i - r * C::kChunks;
      const uint8_t* row = tile_row(p, bt, r);
      if (row == nullptr) continue;
      const uintptr_t src = reinterpret_cast<uintptr_t>(row + static_cast<int64_t>(kb) * C::kSB);
      const uintptr_t first = src & ~static_cast<uintptr_t>(15);
      if (C::kAligned || first + 16u * c < src + C::kSB) {
        cp_async_16(Ws + r * C::kWs + 16 * c, reinterpret_cast<const void*>(first + 16u * c));
      }
    }
    for (int i = tid; i < kTileCols * 20; i += 256) {
      const int e = i / 20, c = i - e * 20;
      if (xrow[e] < 0) continue;
      cp_async_16(Xs + e * C::kXs + 16 * c, p.x + static_cast<int64_t>(xrow[e]) * p.ld_x + kb * 320 + 16 * c);
    }
    cp_async_commit();
  };

  float acc[2][4][4];
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int nt = 0; nt < 4; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[mt][nt][i] = 0.0f;

  load_stage(0);
  for (int kb = 0; kb < nkb; ++kb) {
    if (kb + 1 < nkb) {
      load_stage(kb + 1);
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
    const uint8_t* Ws = smem + (kb & 1) * C::kStage;
    const uint8_t* Xs = Ws + kMmqRows * C::kWs;

    // This thread's four A rows: (mt, h) -> row wm*32 + mt*16 + h*8 + g.
    const uint8_t* A[2][2];
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = wm * 32 + mt * 16 + h * 8 + g;
        int off = 0;
        if constexpr (!C::kAligned) {
          const uint8_t* row = tile_row(p, bt, r);
          if (row != nullptr) off = piece_offset(row + static_cast<int64_t>(kb) * C::kSB);
        }
        A[mt][h] = Ws + r * C::kWs + off;
      }
    RowHead head[2][2];
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) head[mt][h] = row_head<T>(A[mt][h]);

    for (int j = 0; j < 8; ++j) {
      int a[2][4];
      RowScale rs[2][2];
#pragma unroll
      for (int mt = 0; mt < 2; ++mt) {
        a[mt][0] = w4<T>(A[mt][0], j, t);
        a[mt][1] = w4<T>(A[mt][1], j, t);
        a[mt][2] = w4<T>(A[mt][0], j, t + 4);
        a[mt][3] = w4<T>(A[mt][1], j, t + 4);
        rs[mt][0] = row_scale<T>(A[mt][0], head[mt][0], j);
        rs[mt][1] = row_scale<T>(A[mt][1], head[mt][1], j);
      }
      int b[4][2];
      float ad[4][2], as[4][2];
#pragma unroll
      for (int nt = 0; nt < 4; ++nt) {
        const uint8_t* xb = Xs + (wn * 32 + nt * 8 + g) * C::kXs + 40 * j + 8;
        b[nt][0] = static_cast<int>(ld_u32(xb + 4 * t));
        b[nt][1] = static_cast<int>(ld_u32(xb + 16 + 4 * t));
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          const int2 h = *reinterpret_cast<const int2*>(Xs + (wn * 32 + nt * 8 + 2 * t + i) * C::kXs + 40 * j);
          ad[nt][i] = __int_as_float(h.x);
          as[nt][i] = i2f_small(h.y);
        }
      }
#pragma unroll
      for (int mt = 0; mt < 2; ++mt)
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) {
          int lo[4], hi[4] = {0, 0, 0, 0};
          if constexpr (T == GgmlType::Q6_K) {
            mma_k16(lo, a[mt][0], a[mt][1], b[nt][0]);
            mma_k16(hi, a[mt][2], a[mt][3], b[nt][1]);
          } else {
            mma_k32(lo, a[mt], b[nt]);
          }
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            // c_i is row g + 8 (i / 2), position 2t + (i % 2) of the tile.
            acc[mt][nt][i] =
                __fadd_rn(acc[mt][nt][i], term<T>(rs[mt][i >> 1], lo[i], hi[i], ad[nt][i & 1], as[nt][i & 1]));
          }
        }
    }
    __syncthreads();
  }

  float* Cs = reinterpret_cast<float*>(smem);
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int nt = 0; nt < 4; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int e = wn * 32 + nt * 8 + 2 * t + (i & 1);
        const int r = wm * 32 + mt * 16 + g + 8 * (i >> 1);
        Cs[e * C::kLdc + r] = acc[mt][nt][i];
      }
  __syncthreads();
  store_tile<256>(p, bt, Cs, C::kLdc, yrow);
}

template <GgmlType T>
void launch_mma(const MmParams& p, dim3 grid, cudaStream_t stream) {
  static std::atomic<uint64_t> configured{0};
  allow_smem(reinterpret_cast<const void*>(&mmq_mma_kernel<T>), MmaCfg<T>::kSmem, configured);
  mmq_mma_kernel<T><<<grid, 256, MmaCfg<T>::kSmem, stream>>>(p);
  launch_check("mmq_mma_kernel", stream);
}

}  // namespace strata::cuda::gemm_detail

// The int8 tensor-core GEMM kernel for GGUF quants, included once per weight type by the mmq_<type>.cu instance files.
//
// Block: 256 threads, 128 weight rows x 64 positions. Warps are 4 (rows) x 2
// (positions), each owning 32 rows x 32 positions: 2 x 4 MMA tiles of
// m16n8. K advances one 256-value group (one super-block, or 8 Q8_0 blocks)
// per stage; a stage holds the raw GGUF bytes of 128 weight rows and the 8
// Q8A blocks of 64 activation rows, copied with 16-byte cp.async, two stages
// deep. Once a stage has landed, the block turns its per-32-value scales into
// F32 once (prep: the weights' into a table, the activations' sums in place).
// Then for each Q8A block j every warp decodes its A fragments from the raw
// bytes (w4), runs its 8 MMAs (16 for Q6_K: two k16 halves, scaled by their
// int8 sub-block scales) and folds the int32 results into its F32
// accumulators with fold<T>() in ascending K: core::vec_dot's exact sequence
// of F32 operations, so outputs match the CPU bit for bit. Warps whose
// positions lie past a partial tile (MoE experts rarely fill their last
// tile) skip those n-tiles.
//
// Where the time goes. Per Q8A block and warp: 8 MMAs (m16n8k32) and 32
// int32 results per thread to fold. vec_dot's term for Q4_K/Q5_K,
// acc += a.d * (ws * (float)isum - wm * (float)a.sum), is 5 separately
// rounded F32 operations per result even with the conversion folded away
// (below): 20 F32 instructions per MMA, against about 9 per MMA for all the
// rest (A decode, B, scale and sum loads, the MMA itself; 238 PTX
// instructions per block for Q4_K). A sub-partition issues one warp
// instruction per clock and retires an int8 m16n8k32 in about 4-8 clocks, so
// the fold, not the tensor core, sets the pace: at least 20 clocks per 8192
// int8 operations, about 400 TOPS on an H200 at the very best.
//
// The int32 accumulators start at the bits of the float 1.5 * 2^23
// (kMagicBits), so an MMA returns, for an exact block dot |isum| < 2^22, the
// bits of the float 1.5 * 2^23 + isum. Then (float)isum is one subtraction,
// and ws * (float)isum one FMA: fma(ws, 1.5 * 2^23 + isum, -(ws * 1.5 * 2^23))
// rounds the exact product ws * isum once, which is __fmul_rn(ws, (float)isum)
// as long as ws * 1.5 * 2^23 is exact: so for the K-quant ws = d * sc (an F16
// times a 6-bit integer, 17 significant bits) and Q6_K's int8 scales. (Only
// a zero product may differ, in its sign; a zero term never changes an
// accumulator that starts at +0. Non-finite weight scales are out of scope.)
#pragma once

#include <algorithm>
#include <atomic>
#include <type_traits>

#include "cuda/gemm_check.h"
#include "cuda/gemm_device.cuh"
#include "cuda/gemm_host.h"
#include "cuda/mmq_internal.cuh"
#include "cuda/mmq_tile.cuh"

namespace strata::cuda::gemm_detail {

inline constexpr int kMagicBits = 0x4B400000;
inline constexpr float kMagic = 12582912.0f;  // 1.5 * 2^23: the float with bits kMagicBits

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
  // The stage's weight scales as F32 pairs, [8 blocks][kMmqRows rows]:
  // (d * sc_j, dmin * m_j) for Q4_K/Q5_K, block j's two 16-value scales for
  // Q6_K. Q8_0 reads its block scales where they are (and so keeps two
  // blocks per multiprocessor).
  static constexpr bool kTable = T != GgmlType::Q8_0;
  static constexpr int kTab = kTable ? 8 * kMmqRows * static_cast<int>(sizeof(float2)) : 0;
  static constexpr int kLdc = kMmqRows + 4;
  static constexpr int kSmem = std::max(2 * kStage + kTab, kTileCols * kLdc * 4);
};

// MMA result v (kMagicBits + the exact dot of one Q8A block; hi: the second
// k16 half's for Q6_K) folded into acc as core::vec_dot adds its term. s: the
// row's table entry and n its products with -kMagic (exact); wd: the weight
// scale (Q6_K's super-block d, Q8_0's block d); ad, as: the activation
// block's d and sum.
template <GgmlType T>
__device__ __forceinline__ float fold(float acc, int v, int hi, float2 s, float2 n, float wd, float ad, float as) {
  if constexpr (T == GgmlType::Q4_K || T == GgmlType::Q5_K) {
    // a.d * (ws * isum - wm * a.sum)
    const float x = __fmaf_rn(s.x, __int_as_float(v), n.x);  // fl(ws * isum)
    return __fadd_rn(acc, __fmul_rn(ad, __fsub_rn(x, __fmul_rn(s.y, as))));
  } else if constexpr (T == GgmlType::Q6_K) {
    // (d * a.d) * (float)(sc_lo * lo + sc_hi * hi): both products and their
    // sum are integers below 2^24, so every step here is exact.
    const float l = __fmaf_rn(s.x, __int_as_float(v), n.x);
    const float h = __fmaf_rn(s.y, __int_as_float(hi), n.y);
    return __fadd_rn(acc, __fmul_rn(__fmul_rn(wd, ad), __fadd_rn(l, h)));
  } else {
    static_assert(T == GgmlType::Q8_0, "fold: not an MMA weight type");
    // (d_w * d_a) * (float)isum
    return __fadd_rn(acc, __fmul_rn(__fmul_rn(wd, ad), __fsub_rn(__int_as_float(v), kMagic)));
  }
}

template <GgmlType T>
static __global__ void __launch_bounds__(256, 2) mmq_mma_kernel(const MmParams p) {
  using C = MmaCfg<T>;
  extern __shared__ __align__(16) uint8_t smem[];
  __shared__ int xrow[kTileCols], yrow[kTileCols];
  // The global rows of the tile, resolved once: weights (nullptr past
  // n_out) and activations (nullptr past the tile).
  __shared__ const uint8_t* wptr[kMmqRows];
  __shared__ const uint8_t* xptr[kTileCols];
  BlockTile bt;
  if (!resolve_tile<kMmqRows>(p, xrow, yrow, bt)) return;

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int g = lane / 4, t = lane % 4;
  const int wm = warp % 4, wn = warp / 4;
  const int nkb = p.n_in / 256;
  float2* wtab = reinterpret_cast<float2*>(smem + 2 * C::kStage);
  // This warp's n-tiles (8 positions each) that hold positions of the tile.
  const int live = min(4, max(0, (bt.ncols - 32 * wn + 7) / 8));

  if (tid < kMmqRows) {
    wptr[tid] = tile_row(p, bt, tid);
  } else if (tid < kMmqRows + kTileCols) {
    const int e = tid - kMmqRows;
    xptr[e] = xrow[e] < 0 ? nullptr : p.x + static_cast<int64_t>(xrow[e]) * p.ld_x;
  }
  __syncthreads();

  auto load_stage = [&](int kb) {
    uint8_t* Ws = smem + (kb & 1) * C::kStage;
    uint8_t* Xs = Ws + kMmqRows * C::kWs;
    for (int i = tid; i < kMmqRows * C::kChunks; i += 256) {
      const int r = i / C::kChunks, c = i - r * C::kChunks;
      const uint8_t* row = wptr[r];
      if (row == nullptr) continue;
      const uintptr_t src = reinterpret_cast<uintptr_t>(row + static_cast<int64_t>(kb) * C::kSB);
      const uintptr_t first = src & ~static_cast<uintptr_t>(15);
      if (C::kAligned || first + 16u * c < src + C::kSB) {
        cp_async_16(Ws + r * C::kWs + 16 * c, reinterpret_cast<const void*>(first + 16u * c));
      }
    }
    for (int i = tid; i < kTileCols * 20; i += 256) {
      const int e = i / 20, c = i - e * 20;
      const uint8_t* xr = xptr[e];
      if (xr == nullptr) continue;
      cp_async_16(Xs + e * C::kXs + 16 * c, xr + kb * 320 + 16 * c);
    }
    cp_async_commit();
  };

  // Where row r's 256-value group of stage kb starts in shared memory.
  auto stage_row = [&](const uint8_t* Ws, int r, int kb) {
    int off = 0;
    if constexpr (!C::kAligned) {
      const uint8_t* row = wptr[r];
      if (row != nullptr) off = piece_offset(row + static_cast<int64_t>(kb) * C::kSB);
    }
    return Ws + r * C::kWs + off;
  };

  // Once per stage and block: the weights' block scales into wtab, the
  // activations' sums to F32 in place (exact: |sum| <= 32 * 127).
  auto prep = [&](int kb) {
    uint8_t* Ws = smem + (kb & 1) * C::kStage;
    uint8_t* Xs = Ws + kMmqRows * C::kWs;
    if constexpr (C::kTable) {
      // Row tid % 128, blocks 4 (tid / 128) .. +3: one half of j per warp.
      const int r = tid % kMmqRows, j0 = 4 * (tid / kMmqRows);
      const uint8_t* B = stage_row(Ws, r, kb);
      const RowHead head = row_head<T>(B);
#pragma unroll
      for (int jj = 0; jj < 4; ++jj) {
        const RowScale rs = row_scale<T>(B, head, j0 + jj);
        wtab[(j0 + jj) * kMmqRows + r] = T == GgmlType::Q6_K
                                             ? make_float2(static_cast<float>(rs.s0), static_cast<float>(rs.s1))
                                             : make_float2(rs.a, rs.b);
      }
    }
    for (int i = tid; i < kTileCols * 8; i += 256) {
      int* s = reinterpret_cast<int*>(Xs + (i / 8) * C::kXs + 40 * (i % 8) + 4);
      *s = __float_as_int(i2f_small(*s));
    }
  };

  float acc[2][4][4];
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int nt = 0; nt < 4; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[mt][nt][i] = 0.0f;

  // The MMAs and folds of stage kb. With guard set, n-tiles from `live` on
  // are skipped (a warp whose 32 positions are all in the tile runs without).
  auto compute = [&](int kb, auto guard) {
    constexpr bool kGuard = decltype(guard)::value;
    const uint8_t* Ws = smem + (kb & 1) * C::kStage;
    const uint8_t* Xs = Ws + kMmqRows * C::kWs;
    // This thread's four A rows: (mt, h) -> row wm*32 + mt*16 + h*8 + g.
    const uint8_t* A[2][2];
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) A[mt][h] = stage_row(Ws, wm * 32 + mt * 16 + h * 8 + g, kb);

#pragma unroll 1
    for (int j = 0; j < 8; ++j) {
      int a[2][4];
      float2 s[2][2], n[2][2];
      float wd[2][2];
#pragma unroll
      for (int mt = 0; mt < 2; ++mt) {
        a[mt][0] = w4<T>(A[mt][0], j, t);
        a[mt][1] = w4<T>(A[mt][1], j, t);
        a[mt][2] = w4<T>(A[mt][0], j, t + 4);
        a[mt][3] = w4<T>(A[mt][1], j, t + 4);
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          if constexpr (C::kTable) {
            s[mt][h] = wtab[j * kMmqRows + wm * 32 + mt * 16 + h * 8 + g];
            n[mt][h] = make_float2(__fmul_rn(s[mt][h].x, -kMagic), __fmul_rn(s[mt][h].y, -kMagic));
            // Q6_K's super-block d, read again per block: held over the stage it would spill.
            wd[mt][h] = T == GgmlType::Q6_K ? row_head<T>(A[mt][h]).d : 0.0f;
          } else {
            s[mt][h] = n[mt][h] = make_float2(0.0f, 0.0f);
            wd[mt][h] = row_scale<T>(A[mt][h], j).a;
          }
        }
      }
#pragma unroll
      for (int nt = 0; nt < 4; ++nt) {
        if (kGuard && nt >= live) break;
        const int e0 = wn * 32 + nt * 8;
        const uint8_t* xb = Xs + (e0 + g) * C::kXs + 40 * j + 8;
        const int b[2] = {static_cast<int>(ld_u32(xb + 4 * t)), static_cast<int>(ld_u32(xb + 16 + 4 * t))};
        float ad[2], as[2];
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          const float2 da = *reinterpret_cast<const float2*>(Xs + (e0 + 2 * t + i) * C::kXs + 40 * j);
          ad[i] = da.x;
          as[i] = da.y;
        }
#pragma unroll
        for (int mt = 0; mt < 2; ++mt) {
          int v[4], hi[4] = {0, 0, 0, 0};
          if constexpr (T == GgmlType::Q6_K) {
            mma_k16(v, a[mt][0], a[mt][1], b[0], kMagicBits);
            mma_k16(hi, a[mt][2], a[mt][3], b[1], kMagicBits);
          } else {
            mma_k32(v, a[mt], b, kMagicBits);
          }
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            // v[i] is row g + 8 (i / 2), position 2t + (i % 2) of the tile.
            const int h = i >> 1;
            acc[mt][nt][i] = fold<T>(acc[mt][nt][i], v[i], hi[i], s[mt][h], n[mt][h], wd[mt][h], ad[i & 1],
                                     as[i & 1]);
          }
        }
      }
    }
  };

  load_stage(0);
  for (int kb = 0; kb < nkb; ++kb) {
    cp_async_wait<0>();
    __syncthreads();  // stage kb visible; every warp is done with stage kb - 1 and wtab
    if (kb + 1 < nkb) load_stage(kb + 1);
    prep(kb);
    __syncthreads();
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
        const int e = wn * 32 + nt * 8 + 2 * t + (i & 1);
        const int r = wm * 32 + mt * 16 + g + 8 * (i >> 1);
        Cs[e * C::kLdc + r] = acc[mt][nt][i];
      }
  __syncthreads();
  store_tile<256, kMmqRows>(p, bt, Cs, C::kLdc, yrow);
}

template <GgmlType T>
void launch_mma(const MmParams& p, dim3 grid, cudaStream_t stream) {
  static std::atomic<uint64_t> configured{0};
  allow_smem(reinterpret_cast<const void*>(&mmq_mma_kernel<T>), MmaCfg<T>::kSmem, configured);
  mmq_mma_kernel<T><<<grid, 256, MmaCfg<T>::kSmem, stream>>>(p);
  launch_check("mmq_mma_kernel", stream);
}

}  // namespace strata::cuda::gemm_detail

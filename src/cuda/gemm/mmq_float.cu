// The GEMM kernel for F32/F16/BF16 weights: a 16-row x 64-position F32 tile per block, products and sums rounded as the CPU does.
//
// Float weights multiply F32 activations (core::activation_kind), and the CPU
// reference rounds every product before adding it. Tensor cores would round
// the activations to 16 bits; this kernel keeps vec_dot's exact operations
// (__fmul_rn then __fadd_rn, ascending K, no FMA), so its outputs equal the
// CPU's bit for bit. In the models this library targets, float matrices are
// the small ones (the router); see the note in mmq.cu for large ones.
//
// 256 threads over 16 rows x 64 positions, each 1 row x 4 positions; K
// steps of 32 staged through registers into a second shared buffer while the
// first is used. The sums' order leaves each output one dependent chain of
// n_in additions, so a block's time is set by its share of outputs: 16-row
// tiles give the router (128 rows) 8 blocks per 64 positions, enough to fill
// the device from a few hundred tokens on.
#include "cuda/gemm/gemm_device.cuh"
#include "cuda/gemm/mmq_internal.cuh"
#include "cuda/gemm/mmq_tile.cuh"
#include "cuda/gemm/quant_traits.cuh"
#include "cuda/runtime/check.h"
#include "cuda/runtime/common.cuh"
#include "cuda/runtime/launch.h"

namespace strata::cuda::gemm_detail {
namespace {

constexpr int kBK = 32;
constexpr int kLdW = kFmmRows + 1;       // floats per shared weight row: the stash's columns on distinct banks
constexpr int kLdX = kTileCols + 4;      // floats per shared activation row (16-byte aligned float4 reads)
constexpr int kLdC = kFmmRows + 4;       // floats per row of the epilogue tile [position][row]
static_assert(kFmmRows == 16 && kTileCols == 64, "256 threads of 1 row x 4 positions");
static_assert(kTileCols * kLdC <= 2 * kBK * kLdX, "the epilogue tile reuses the activation buffers");

// Global values of one K step held in registers between fetch and stash.
template <GgmlType T>
struct Staged {
  float4 w;  // F32: a float4 of weights (threads < 128)
  uint4 h;   // F16/BF16: eight 16-bit weights (threads < 64)
  float4 x[2];
};

template <GgmlType T>
static __global__ void __launch_bounds__(256) mmq_float_kernel(const MmParams p) {
  pdl_prologue();
  __shared__ __align__(16) float Ws[2][kBK][kLdW];
  __shared__ __align__(16) float Xs[2][kBK][kLdX];
  __shared__ int xrow[kTileCols], yrow[kTileCols];
  BlockTile bt;
  if (!resolve_tile<kFmmRows, kTileCols>(p, xrow, yrow, bt)) return;

  const int tid = threadIdx.x, tx = tid % kFmmRows, ty = tid / kFmmRows;
  const int nk = p.n_in / kBK;
  Staged<T> st;

  // Weights: F32 as 16 rows x 8 float4 (threads < 128), 16-bit as 16 rows x
  // 4 x 8 values (threads < 64); activations 64 rows x 8 float4 (2 per thread).
  auto fetch = [&](int k0) {
    if constexpr (T == GgmlType::F32) {
      if (tid < kFmmRows * 8) {
        const int r = tid / 8, kc = tid % 8;
        const uint8_t* row = tile_row(p, bt, r);
        st.w = row != nullptr ? __ldg(reinterpret_cast<const float4*>(row) + (k0 / 4 + kc))
                              : make_float4(0.f, 0.f, 0.f, 0.f);
      }
    } else {
      if (tid < kFmmRows * 4) {
        const int r = tid / 4, kc = tid % 4;
        const uint8_t* row = tile_row(p, bt, r);
        st.h = row != nullptr ? __ldg(reinterpret_cast<const uint4*>(row) + (k0 / 8 + kc)) : make_uint4(0, 0, 0, 0);
      }
    }
#pragma unroll
    for (int q = 0; q < 2; ++q) {
      const int i = tid + 256 * q, e = i / 8, kc = i % 8;
      st.x[q] = xrow[e] >= 0
                    ? __ldg(reinterpret_cast<const float4*>(p.x + static_cast<int64_t>(xrow[e]) * p.ld_x) + (k0 / 4 + kc))
                    : make_float4(0.f, 0.f, 0.f, 0.f);
    }
  };
  auto stash = [&](int buf) {
    if constexpr (T == GgmlType::F32) {
      if (tid < kFmmRows * 8) {
        const int r = tid / 8, k = 4 * (tid % 8);
        Ws[buf][k][r] = st.w.x;
        Ws[buf][k + 1][r] = st.w.y;
        Ws[buf][k + 2][r] = st.w.z;
        Ws[buf][k + 3][r] = st.w.w;
      }
    } else {
      if (tid < kFmmRows * 4) {
        const int r = tid / 4, k = 8 * (tid % 4);
        const uint32_t h[4] = {st.h.x, st.h.y, st.h.z, st.h.w};
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          Ws[buf][k + 2 * i][r] = QuantTraits<T>::f32(h[i] & 0xffffu);
          Ws[buf][k + 2 * i + 1][r] = QuantTraits<T>::f32(h[i] >> 16);
        }
      }
    }
#pragma unroll
    for (int q = 0; q < 2; ++q) {
      const int i = tid + 256 * q, e = i / 8, k = 4 * (i % 8);
      Xs[buf][k][e] = st.x[q].x;
      Xs[buf][k + 1][e] = st.x[q].y;
      Xs[buf][k + 2][e] = st.x[q].z;
      Xs[buf][k + 3][e] = st.x[q].w;
    }
  };

  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  fetch(0);
  stash(0);
  __syncthreads();
  for (int kt = 0; kt < nk; ++kt) {
    const int buf = kt & 1;
    if (kt + 1 < nk) fetch((kt + 1) * kBK);
#pragma unroll 8
    for (int k = 0; k < kBK; ++k) {
      const float w = Ws[buf][k][tx];
      const float4 x = *reinterpret_cast<const float4*>(&Xs[buf][k][4 * ty]);
      acc[0] = __fadd_rn(acc[0], __fmul_rn(w, x.x));
      acc[1] = __fadd_rn(acc[1], __fmul_rn(w, x.y));
      acc[2] = __fadd_rn(acc[2], __fmul_rn(w, x.z));
      acc[3] = __fadd_rn(acc[3], __fmul_rn(w, x.w));
    }
    // The other buffer was last read before the previous barrier.
    if (kt + 1 < nk) stash(buf ^ 1);
    __syncthreads();
  }

  float* Cs = &Xs[0][0][0];  // [64 positions][kLdC]
#pragma unroll
  for (int j = 0; j < 4; ++j) Cs[(4 * ty + j) * kLdC + tx] = acc[j];
  __syncthreads();
  store_tile<256, kFmmRows>(p, bt, Cs, kLdC, yrow);
}

}  // namespace

template <GgmlType T>
void launch_float(const MmParams& p, dim3 grid, cudaStream_t stream) {
  cuda::launch("mmq_float_kernel", mmq_float_kernel<T>, grid, 256, 0, stream, p);
}

template void launch_float<GgmlType::F32>(const MmParams& p, dim3 grid, cudaStream_t stream);
template void launch_float<GgmlType::F16>(const MmParams& p, dim3 grid, cudaStream_t stream);
template void launch_float<GgmlType::BF16>(const MmParams& p, dim3 grid, cudaStream_t stream);

}  // namespace strata::cuda::gemm_detail

// The GEMM kernel for F32/F16/BF16 weights: a 16-row x 64-position F32 tile per block, products and sums rounded as the CPU does.
//
// Float weights multiply F32 activations (core::activation_kind), and the CPU
// reference rounds every product before adding it. Tensor cores would round
// the activations to 16 bits; this kernel keeps vec_dot's exact operations
// (__fmul_rn then __fadd_rn, ascending K, no FMA), so its outputs equal the
// CPU's bit for bit. In the models this library targets, float matrices are
// the small ones (the router); see the note in mmq.cu for large ones.
//
// 64 threads over 16 rows x 64 positions, each 4 rows x 4 positions: per K
// step two 16-byte shared loads feed 16 products (at 1 x 4 a thread, the
// shared loads had held the kernel at under half the FP32 issue rate). K
// steps of 32 staged through registers into a second shared buffer while the
// first is used; each thread stashes whole columns (one weight row, one
// position), so the stores meet no bank conflicts. The sums' order leaves each
// output one dependent chain of n_in additions; a thread's 16 chains keep the
// FP32 pipe busy from one warp a scheduler on.
#include "cuda/common.cuh"
#include "cuda/gemm_check.h"
#include "cuda/gemm_device.cuh"
#include "cuda/launch.h"
#include "cuda/mmq_internal.cuh"
#include "cuda/mmq_tile.cuh"

namespace strata::cuda::gemm_detail {
namespace {

constexpr int kBK = 32;
constexpr int kThreads = 64;
constexpr int kLdW = kFmmRows + 4;       // floats per shared weight row (16-byte aligned float4 reads)
constexpr int kLdX = kTileCols + 4;      // floats per shared activation row
constexpr int kLdC = kFmmRows + 4;       // floats per row of the epilogue tile [position][row]
static_assert(kFmmRows == 16 && kTileCols == 64, "64 threads of 4 rows x 4 positions");
static_assert(kTileCols * kLdC <= 2 * kBK * kLdX, "the epilogue tile reuses the activation buffers");

// Global values of one K step held in registers between fetch and stash.
struct Staged {
  float4 w[2];  // F32: two float4 of one weight row
  uint4 h;      // F16/BF16: eight 16-bit weights of one row
  float4 x[8];  // eight float4 of one position
};

template <GgmlType T>
static __global__ void __launch_bounds__(kThreads) mmq_float_kernel(const MmParams p) {
  pdl_prologue();
  __shared__ __align__(16) float Ws[2][kBK][kLdW];
  __shared__ __align__(16) float Xs[2][kBK][kLdX];
  __shared__ int xrow[kTileCols], yrow[kTileCols];
  BlockTile bt;
  if (!resolve_tile<kFmmRows, kTileCols>(p, xrow, yrow, bt)) return;

  const int tid = threadIdx.x, tx = tid % 4, ty = tid / 4;
  const int nk = p.n_in / kBK;
  Staged st;

  // Weights: F32 as 16 rows x 8 float4, thread i taking row i % 16 and
  // float4s i / 16 and i / 16 + 4; 16-bit as 16 rows x 4 uint4, thread i row
  // i % 16, uint4 i / 16. Activations: thread i takes position i, 8 float4.
  const int wr = tid % kFmmRows, wk = tid / kFmmRows;
  auto fetch = [&](int k0) {
    const uint8_t* row = tile_row(p, bt, wr);
    if constexpr (T == GgmlType::F32) {
#pragma unroll
      for (int q = 0; q < 2; ++q)
        st.w[q] = row != nullptr ? __ldg(reinterpret_cast<const float4*>(row) + (k0 / 4 + wk + 4 * q))
                                 : make_float4(0.f, 0.f, 0.f, 0.f);
    } else {
      st.h = row != nullptr ? __ldg(reinterpret_cast<const uint4*>(row) + (k0 / 8 + wk)) : make_uint4(0, 0, 0, 0);
    }
    const float4* x = xrow[tid] >= 0 ? reinterpret_cast<const float4*>(p.x + static_cast<int64_t>(xrow[tid]) * p.ld_x)
                                     : nullptr;
#pragma unroll
    for (int q = 0; q < 8; ++q) st.x[q] = x != nullptr ? __ldg(x + (k0 / 4 + q)) : make_float4(0.f, 0.f, 0.f, 0.f);
  };
  auto stash = [&](int buf) {
    if constexpr (T == GgmlType::F32) {
#pragma unroll
      for (int q = 0; q < 2; ++q) {
        const int k = 4 * (wk + 4 * q);
        Ws[buf][k][wr] = st.w[q].x;
        Ws[buf][k + 1][wr] = st.w[q].y;
        Ws[buf][k + 2][wr] = st.w[q].z;
        Ws[buf][k + 3][wr] = st.w[q].w;
      }
    } else {
      const int k = 8 * wk;
      const uint32_t h[4] = {st.h.x, st.h.y, st.h.z, st.h.w};
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        if constexpr (T == GgmlType::F16) {
          Ws[buf][k + 2 * i][wr] = __half2float(__ushort_as_half(static_cast<unsigned short>(h[i] & 0xffffu)));
          Ws[buf][k + 2 * i + 1][wr] = __half2float(__ushort_as_half(static_cast<unsigned short>(h[i] >> 16)));
        } else {
          Ws[buf][k + 2 * i][wr] = bf16_bits_to_float(h[i] & 0xffffu);
          Ws[buf][k + 2 * i + 1][wr] = bf16_bits_to_float(h[i] >> 16);
        }
      }
    }
#pragma unroll
    for (int q = 0; q < 8; ++q) {
      Xs[buf][4 * q][tid] = st.x[q].x;
      Xs[buf][4 * q + 1][tid] = st.x[q].y;
      Xs[buf][4 * q + 2][tid] = st.x[q].z;
      Xs[buf][4 * q + 3][tid] = st.x[q].w;
    }
  };

  float acc[4][4] = {};
  fetch(0);
  stash(0);
  __syncthreads();
  for (int kt = 0; kt < nk; ++kt) {
    const int buf = kt & 1;
    if (kt + 1 < nk) fetch((kt + 1) * kBK);
#pragma unroll 8
    for (int k = 0; k < kBK; ++k) {
      const float4 w4 = *reinterpret_cast<const float4*>(&Ws[buf][k][4 * tx]);
      const float4 x4 = *reinterpret_cast<const float4*>(&Xs[buf][k][4 * ty]);
      const float w[4] = {w4.x, w4.y, w4.z, w4.w}, x[4] = {x4.x, x4.y, x4.z, x4.w};
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = __fadd_rn(acc[i][j], __fmul_rn(w[i], x[j]));
    }
    // The other buffer was last read before the previous barrier.
    if (kt + 1 < nk) stash(buf ^ 1);
    __syncthreads();
  }

  float* Cs = &Xs[0][0][0];  // [64 positions][kLdC]
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) Cs[(4 * ty + j) * kLdC + 4 * tx + i] = acc[i][j];
  __syncthreads();
  store_tile<kThreads, kFmmRows>(p, bt, Cs, kLdC, yrow);
}

template <GgmlType T>
void launch_float(const MmParams& p, dim3 grid, cudaStream_t stream) {
  cuda::launch("mmq_float_kernel", mmq_float_kernel<T>, grid, kThreads, 0, stream, p);
}

}  // namespace

void launch_mmq_f32(const MmParams& p, dim3 grid, cudaStream_t stream) { launch_float<GgmlType::F32>(p, grid, stream); }
void launch_mmq_f16(const MmParams& p, dim3 grid, cudaStream_t stream) { launch_float<GgmlType::F16>(p, grid, stream); }
void launch_mmq_bf16(const MmParams& p, dim3 grid, cudaStream_t stream) {
  launch_float<GgmlType::BF16>(p, grid, stream);
}

}  // namespace strata::cuda::gemm_detail

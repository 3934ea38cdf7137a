// RMSNorm on the device: rows of F32, also per head (rows = T * n_head, n = head_dim) for the Q/K norms.
#include "cuda/moe/moe_rows.cuh"
#include "cuda/norm/norm.cuh"
#include "cuda/norm/quantize_warp.cuh"
#include "cuda/runtime/check.h"
#include "cuda/runtime/common.cuh"
#include "cuda/runtime/launch.h"

namespace strata::cuda {
namespace {

constexpr int kSmallRowMax = 1024;    // up to this n one warp normalizes a row
constexpr int kWarpRowsPerBlock = 4;  // warps (rows) per block in the warp-per-row kernel
constexpr int kBlockRowThreads = 256; // threads per row in the block-per-row kernel
constexpr int kQ8aThreads = 1024;     // threads per row in rmsnorm_q8a_kernel
constexpr int kRegPer = 16;           // values a thread holds in rmsnorm_q8a_rows_kernel: rows up to 4096
constexpr int64_t kRegRowsMin = 64;   // rows from which the second forms take rmsnorm_q8a_rows_kernel
constexpr int kRowsBlocksPerSm = 4;   // its blocks an SM: 64 registers a thread

// Whether rmsnorm_q8a_rows_kernel takes rows x n (else rmsnorm_q8a_kernel).
bool rows_kernel_takes(int64_t rows, int64_t n) {
  return rows >= kRegRowsMin && n > kSmallRowMax && n <= kBlockRowThreads * kRegPer;
}

// y = x * s * w, rounded as the CPU does: (x * s) * w, no fused operations.
__device__ __forceinline__ void scale_row(const float* x, const float* w, float* y, int64_t n, float s, int64_t first,
                                          int64_t step) {
  for (int64_t i = first; i < n; i += step) {
    const float xs = __fmul_rn(x[i], s);
    y[i] = w ? __fmul_rn(xs, w[i]) : xs;
  }
}

// One warp per row.
static __global__ void rmsnorm_warp_kernel(const float* x, const float* __restrict__ w,
                                           float* y, int64_t rows, int64_t n, float eps) {
  pdl_prologue();
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpRowsPerBlock + threadIdx.x / kWarp;
  const int lane = threadIdx.x % kWarp;
  if (row >= rows) return;
  const float* xr = x + row * n;
  float ss = 0.0f;
  for (int64_t i = lane; i < n; i += kWarp) ss = __fadd_rn(ss, __fmul_rn(xr[i], xr[i]));
  ss = warp_sum(ss);
  scale_row(xr, w, y + row * n, n, inv_rms(ss, n, eps), lane, kWarp);
}

// One block of kBlockRowThreads per row, for long rows.
static __global__ void rmsnorm_block_kernel(const float* x, const float* __restrict__ w, float* y,
                                            int64_t n, float eps) {
  pdl_prologue();
  __shared__ float partial[kBlockRowThreads / kWarp];
  const int64_t row = blockIdx.x;
  const float* xr = x + row * n;
  float ss = 0.0f;
  for (int64_t i = threadIdx.x; i < n; i += kBlockRowThreads) ss = __fadd_rn(ss, __fmul_rn(xr[i], xr[i]));
  ss = warp_sum(ss);
  if (threadIdx.x % kWarp == 0) partial[threadIdx.x / kWarp] = ss;
  __syncthreads();
  // Every thread adds the warp partials in the same ascending order.
  float total = 0.0f;
#pragma unroll
  for (int i = 0; i < kBlockRowThreads / kWarp; ++i) total = __fadd_rn(total, partial[i]);
  scale_row(xr, w, y + row * n, n, inv_rms(total, n, eps), threadIdx.x, kBlockRowThreads);
}

// The second form of the normed rows: Q8A blocks (for the matrix-vector kernels) or F16 values (for the GEMMs).
enum class Second { Q8A, F16 };

// The second form of value v (element i of row `row`): by its warp, which holds the 32-value block b.
template <Second kSecond>
__device__ __forceinline__ void store_second(float v, void* __restrict__ y2, int64_t row, int64_t n, int64_t b,
                                             int64_t i, int lane) {
  if constexpr (kSecond == Second::Q8A) {
    quantize_q8a_warp(v, static_cast<core::BlockQ8A*>(y2) + row * (n / 32) + b, lane);
  } else {
    store1(static_cast<uint16_t*>(y2) + row * n + i, v);
  }
}

// One block of kQ8aThreads per row: the row's scale as rmsnorm_warp_kernel (n <= kSmallRowMax, warp 0) or
// rmsnorm_block_kernel (the first kBlockRowThreads threads) computes it, then every warp scales whole 32-value
// blocks and writes them a second time: quantized as quantize_q8a_kernel does (the max is exact in any order, the
// sum an exact integer), or rounded to F16. The wide block keeps a decode row's quantization short: 2 blocks a
// warp for 2048 values.
// kCombine: first x += the row's slot sums of y (moe_combine_kernel's arithmetic), written back, then the norm
// of the new x; otherwise y_slots and slot_w are unused and x is only read.
template <bool kCombine, Second kSecond>
static __global__ void __launch_bounds__(kQ8aThreads)
    rmsnorm_q8a_kernel(float* x, const float* __restrict__ y_slots, const float* __restrict__ slot_w, int k,
                       const float* __restrict__ w, float* __restrict__ y, void* __restrict__ y2, int64_t n,
                       float eps) {
  pdl_prologue();
  __shared__ float partial[kBlockRowThreads / kWarp];
  __shared__ float scale;
  const int64_t row = blockIdx.x;
  float* xr = x + row * n;
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  if constexpr (kCombine) {
    for (int64_t i = threadIdx.x; i < n; i += kQ8aThreads) {
      float acc[1];
      slot_sums<1>(y_slots, slot_w, nullptr, false, row, k, n, i, acc);
      xr[i] = __fadd_rn(xr[i], acc[0]);
    }
    __syncthreads();  // the block's writes of x are visible to its reads below
  }
  if (n <= kSmallRowMax) {
    if (warp == 0) {
      float ss = 0.0f;
      for (int64_t i = lane; i < n; i += kWarp) ss = __fadd_rn(ss, __fmul_rn(xr[i], xr[i]));
      ss = warp_sum(ss);
      if (lane == 0) scale = inv_rms(ss, n, eps);
    }
  } else {
    if (threadIdx.x < kBlockRowThreads) {
      float ss = 0.0f;
      for (int64_t i = threadIdx.x; i < n; i += kBlockRowThreads) ss = __fadd_rn(ss, __fmul_rn(xr[i], xr[i]));
      ss = warp_sum(ss);
      if (lane == 0) partial[warp] = ss;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      float total = 0.0f;
#pragma unroll
      for (int i = 0; i < kBlockRowThreads / kWarp; ++i) total = __fadd_rn(total, partial[i]);
      scale = inv_rms(total, n, eps);
    }
  }
  __syncthreads();
  const float s = scale;
  for (int64_t b = warp; b < n / 32; b += kQ8aThreads / kWarp) {
    const int64_t i = 32 * b + lane;
    const float xs = __fmul_rn(xr[i], s);
    const float v = w ? __fmul_rn(xs, w[i]) : xs;
    y[row * n + i] = v;
    store_second<kSecond>(v, y2, row, n, b, i, lane);
  }
}

// rmsnorm_q8a_kernel's results for many rows of kSmallRowMax < n <= 256 *
// kRegPer values: one block of kBlockRowThreads per row, each thread holding
// the values i = tid + 256 j in registers, so the row is read once (with
// kCombine, its slot sums added and x written back as it goes) and one
// barrier stands between the sum of squares (in rmsnorm_block_kernel's order)
// and the outputs. At 256 j, warp w holds the 32-value block 8 j + w, for the
// second form. Registers capped at 64 (four blocks an SM): the combine's slot
// loads took 120 uncapped, two blocks an SM. H200, 8192 rows of 2048: 45 us
// against the wide block's 83 for the norm, 198 against 260 with the combine
// of 8 slots (uncapped 281; 80 registers 224; 40 registers 280).
template <bool kCombine, Second kSecond>
static __global__ void __launch_bounds__(kBlockRowThreads, kRowsBlocksPerSm)
    rmsnorm_q8a_rows_kernel(float* x, const float* __restrict__ y_slots, const float* __restrict__ slot_w, int k,
                            const float* __restrict__ w, float* __restrict__ y, void* __restrict__ y2, int64_t n,
                            float eps) {
  pdl_prologue();
  __shared__ float partial[kBlockRowThreads / kWarp];
  const int64_t row = blockIdx.x;
  float* xr = x + row * n;
  const int tid = threadIdx.x, warp = tid / kWarp, lane = tid % kWarp;
  float v[kRegPer];
  float ss = 0.0f;
#pragma unroll
  for (int j = 0; j < kRegPer; ++j) {
    const int64_t i = tid + static_cast<int64_t>(kBlockRowThreads) * j;
    v[j] = i < n ? xr[i] : 0.0f;
    if constexpr (kCombine) {
      if (i < n) {
        float acc[1];
        slot_sums<1>(y_slots, slot_w, nullptr, false, row, k, n, i, acc);
        v[j] = __fadd_rn(v[j], acc[0]);
        xr[i] = v[j];
      }
    }
    if (i < n) ss = __fadd_rn(ss, __fmul_rn(v[j], v[j]));
  }
  ss = warp_sum(ss);
  if (lane == 0) partial[warp] = ss;
  __syncthreads();
  float total = 0.0f;
#pragma unroll
  for (int i = 0; i < kBlockRowThreads / kWarp; ++i) total = __fadd_rn(total, partial[i]);
  const float s = inv_rms(total, n, eps);
#pragma unroll
  for (int j = 0; j < kRegPer; ++j) {
    const int64_t i = tid + static_cast<int64_t>(kBlockRowThreads) * j;
    if (i < n) {  // warp-uniform: n is a multiple of 32
      const float xs = __fmul_rn(v[j], s);
      const float out = w ? __fmul_rn(xs, w[i]) : xs;
      y[row * n + i] = out;
      store_second<kSecond>(out, y2, row, n, i / 32, i, lane);
    }
  }
}

template <Second kSecond>
void norm_second(const char* op, const float* x, const float* w, float* y, void* y2, int64_t rows, int64_t n,
                 float eps, cudaStream_t stream) {
  require_stream(stream, op);
  require(rows >= 0 && rows <= INT32_MAX && n >= 32 && n % 32 == 0 && x != y, op,
          "0 <= rows < 2^31, n a multiple of 32, y not x", {{"rows", rows}, {"n", n}});
  if (rows == 0) return;
  if (rows_kernel_takes(rows, n)) {
    cuda::launch("rmsnorm_q8a_rows_kernel", rmsnorm_q8a_rows_kernel<false, kSecond>, static_cast<unsigned>(rows),
                 kBlockRowThreads, 0, stream, const_cast<float*>(x), nullptr, nullptr, 0, w, y, y2, n, eps);
  } else {  // the kernel only reads x without kCombine
    cuda::launch("rmsnorm_q8a_kernel", rmsnorm_q8a_kernel<false, kSecond>, static_cast<unsigned>(rows), kQ8aThreads, 0,
                 stream, const_cast<float*>(x), nullptr, nullptr, 0, w, y, y2, n, eps);
  }
}

template <Second kSecond>
void combine_norm_second(const char* op, const float* y_slots, const float* slot_w, int k, float* x, const float* w,
                         float* y, void* y2, int64_t rows, int64_t n, float eps, cudaStream_t stream) {
  require_stream(stream, op);
  require(rows >= 0 && rows <= INT32_MAX && k >= 1 && n >= 32 && n % 32 == 0 && x != y, op,
          "0 <= rows < 2^31, k >= 1, n a multiple of 32, y not x", {{"rows", rows}, {"k", k}, {"n", n}});
  if (rows == 0) return;
  if (rows_kernel_takes(rows, n)) {
    cuda::launch("rmsnorm_q8a_rows_kernel", rmsnorm_q8a_rows_kernel<true, kSecond>, static_cast<unsigned>(rows),
                 kBlockRowThreads, 0, stream, x, y_slots, slot_w, k, w, y, y2, n, eps);
  } else {
    cuda::launch("rmsnorm_q8a_kernel", rmsnorm_q8a_kernel<true, kSecond>, static_cast<unsigned>(rows), kQ8aThreads,
                 0, stream, x, y_slots, slot_w, k, w, y, y2, n, eps);
  }
}

}  // namespace

void rmsnorm_q8a(const float* x, const float* w, float* y, core::BlockQ8A* yq, int64_t rows, int64_t n, float eps,
                 cudaStream_t stream) {
  norm_second<Second::Q8A>("rmsnorm_q8a", x, w, y, yq, rows, n, eps, stream);
}

void rmsnorm_f16(const float* x, const float* w, float* y, uint16_t* yh, int64_t rows, int64_t n, float eps,
                 cudaStream_t stream) {
  norm_second<Second::F16>("rmsnorm_f16", x, w, y, yh, rows, n, eps, stream);
}

void moe_combine_rmsnorm_q8a(const float* y_slots, const float* slot_w, int k, float* x, const float* w, float* y,
                             core::BlockQ8A* yq, int64_t rows, int64_t n, float eps, cudaStream_t stream) {
  combine_norm_second<Second::Q8A>("moe_combine_rmsnorm_q8a", y_slots, slot_w, k, x, w, y, yq, rows, n, eps, stream);
}

void moe_combine_rmsnorm_f16(const float* y_slots, const float* slot_w, int k, float* x, const float* w, float* y,
                             uint16_t* yh, int64_t rows, int64_t n, float eps, cudaStream_t stream) {
  combine_norm_second<Second::F16>("moe_combine_rmsnorm_f16", y_slots, slot_w, k, x, w, y, yh, rows, n, eps, stream);
}

void rmsnorm(const float* x, const float* w, float* y, int64_t rows, int64_t n, float eps, cudaStream_t stream) {
  require_stream(stream, "rmsnorm");
  require(rows >= 0 && n >= 1, "rmsnorm", "rows >= 0 and n >= 1", {{"rows", rows}, {"n", n}});
  require(rows <= INT32_MAX, "rmsnorm", "rows <= 2^31 - 1", {{"rows", rows}});
  if (rows == 0) return;
  if (n <= kSmallRowMax) {
    const auto blocks = static_cast<unsigned>(ceil_div(rows, kWarpRowsPerBlock));
    cuda::launch("rmsnorm_warp_kernel", rmsnorm_warp_kernel, blocks, kWarpRowsPerBlock * kWarp, 0, stream, x, w, y, rows, n,
           eps);
  } else {
    cuda::launch("rmsnorm_block_kernel", rmsnorm_block_kernel, static_cast<unsigned>(rows), kBlockRowThreads, 0, stream, x, w,
           y, n, eps);
  }
}

}  // namespace strata::cuda

// Dense matrices as F16 rows for cuBLAS (f16_weights.cuh).
#include "cuda/gemm/f16_weights.cuh"

#include "cuda/gemm/f16_decode.cuh"
#include "cuda/gemm/gemm_host.h"
#include "cuda/gemm/mma_ops.cuh"
#include "cuda/runtime/check.h"
#include "cuda/runtime/common.cuh"
#include "cuda/runtime/launch.h"

namespace strata::cuda {
namespace {

using core::GgmlType;
using namespace gemm_detail;

constexpr int kThreads = 256;

// One thread per 32-value block: its scale entry, then its eight quant words
// (w8) to 32 F16 weights, stored as four 16-byte words. Threads of a block
// of the grid take consecutive 32-value blocks of one row or the next, so the
// stores of a warp cover 2 KiB without gaps.
template <GgmlType T>
static __global__ void __launch_bounds__(kThreads) decode_f16_kernel(const uint8_t* __restrict__ w, int64_t row_bytes,
                                                                     int blocks_per_row, int64_t n_blocks,
                                                                     uint16_t* __restrict__ out) {
  pdl_prologue();
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= n_blocks) return;
  const int64_t r = i / blocks_per_row;
  const int b = static_cast<int>(i % blocks_per_row), j = b % 8;
  const uint8_t* B = w + r * row_bytes + static_cast<int64_t>(b / 8) * QuantTraits<T>::kBytes256;
  const RowHead head = QuantTraits<T>::row_head(B);
  // The block's entry, or its halves' two (entries_per_block).
  constexpr bool kHalves = entries_per_block<QuantTraits<T>>() == 2;
  const uint32_t e0 = QuantTraits<T>::scale_entry(B, head, kHalves ? 2 * j : j);
  const uint32_t e1 = kHalves ? QuantTraits<T>::scale_entry(B, head, 2 * j + 1) : e0;
  int q[8];
  QuantTraits<T>::w8(B, j, q);
  uint32_t h[16];
#pragma unroll
  for (int k4 = 0; k4 < 8; ++k4) {
    const uint32_t entry = k4 >= 4 ? e1 : e0;
    const __half2 scale = entry_scale<T>(entry, k4 >= 4), neg_min = entry_neg_min(entry);
    const uint32_t v = bias_quants<T>(static_cast<uint32_t>(q[k4]));
    h[2 * k4] = decode_pair<T, false>(v, scale, neg_min);
    h[2 * k4 + 1] = decode_pair<T, true>(v, scale, neg_min);
  }
  uint4* dst = reinterpret_cast<uint4*>(out + i * 32);
#pragma unroll
  for (int c = 0; c < 4; ++c) dst[c] = make_uint4(h[4 * c], h[4 * c + 1], h[4 * c + 2], h[4 * c + 3]);
}

template <GgmlType T>
void launch_decode(const void* w, int64_t n_in, int64_t n_out, uint16_t* out, cudaStream_t stream) {
  const int64_t n_blocks = n_out * (n_in / 32);
  const auto grid = static_cast<unsigned>((n_blocks + kThreads - 1) / kThreads);
  launch("decode_f16_kernel", decode_f16_kernel<T>, grid, kThreads, 0, stream, static_cast<const uint8_t*>(w),
         static_cast<int64_t>(core::row_size(T, n_in)), static_cast<int>(n_in / 32), n_blocks, out);
}

// The pairs of two values (f16_weights.cuh: kSplitLoScale).
__device__ __forceinline__ void split_pair(float a, float b, uint32_t& hi, uint32_t& lo) {
  const __half2 h = __floats2half2_rn(a, b);
  const float2 hf = __half22float2(h);
  hi = mma::half2_bits(h);
  lo = mma::pack_half2((a - hf.x) * kSplitLoScale, (b - hf.y) * kSplitLoScale);
}

// Four values a thread: their his to one half of the row, their los to the other.
static __global__ void __launch_bounds__(kThreads) split_f16_kernel(const float4* __restrict__ x, int64_t n4_row,
                                                                    int64_t n4, bool hi_first,
                                                                    uint2* __restrict__ out) {
  pdl_prologue();
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= n4) return;
  const float4 v = x[i];
  uint2 hi, lo;
  split_pair(v.x, v.y, hi.x, lo.x);
  split_pair(v.z, v.w, hi.y, lo.y);
  const int64_t r = i / n4_row, c = i - r * n4_row;
  uint2* row = out + 2 * r * n4_row + c;
  row[hi_first ? 0 : n4_row] = hi;
  row[hi_first ? n4_row : 0] = lo;
}

}  // namespace

void split_f16_rows(const float* x, int64_t rows, int64_t n, bool hi_first, uint16_t* out, cudaStream_t stream) {
  constexpr const char* op = "split_f16_rows";
  require_stream(stream, op);
  require(rows >= 1 && n >= 4 && n % 4 == 0 && rows * n / 4 / kThreads < (1LL << 31), op,
          "rows >= 1, n a positive multiple of 4, fewer than 2^31 blocks of threads", {{"rows", rows}, {"n", n}});
  require(reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(out) % 16 == 0, op,
          "x and out 16-byte aligned");
  const int64_t n4 = rows * n / 4;
  launch("split_f16_kernel", split_f16_kernel, static_cast<unsigned>((n4 + kThreads - 1) / kThreads), kThreads, 0,
         stream, reinterpret_cast<const float4*>(x), n / 4, n4, hi_first, reinterpret_cast<uint2*>(out));
}

void decode_f16_weights(GgmlType type, const void* w, int64_t n_in, int64_t n_out, uint16_t* out,
                        cudaStream_t stream) {
  constexpr const char* op = "decode_f16_weights";
  require_stream(stream, op);
  require_kernel(KernelPath::F16Decode, type, op);
  require(n_in >= 256 && n_in % 256 == 0 && n_out >= 1 && n_out * (n_in / 32) / kThreads < (1LL << 31), op,
          "n_in a positive multiple of 256, n_out >= 1, fewer than 2^31 blocks of threads",
          {{"n_in", n_in}, {"n_out", n_out}});
  require(reinterpret_cast<uintptr_t>(w) % 16 == 0 && reinterpret_cast<uintptr_t>(out) % 16 == 0, op,
          "w and out 16-byte aligned");
  dispatch_type<KernelPath::F16Decode>(
      type, [&](auto t) { launch_decode<decltype(t)::value>(w, n_in, n_out, out, stream); });
}

}  // namespace strata::cuda

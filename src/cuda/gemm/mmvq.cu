// Decode matrix-vector kernels: each warp streams 4 weight rows through shared memory, lanes along K, 1..8 tokens.
//
// A warp's work item is (4 rows, one K segment of 32 units); a unit is one
// Q8A block (32 values) of a quantized row or 8 values of a float row, so a
// segment is 1024 (256) values and each lane takes one unit of each row. The
// segment's bytes of the 4 rows are copied with 16-byte cp.async into the
// warp's shared buffer (two buffers: the next item loads while this one is
// computed), whatever the block alignment. Each lane decodes its unit of
// each row from shared memory, dots it with its activations (loaded once per
// item, reused over the 4 rows), and adds the F32 term to its accumulator;
// the row ends with a butterfly sum over the warp. Matrices with few row
// blocks for their length (the router, attention projections) split K: the
// block's warps form groups of `ks` that share a row block, member m taking
// the segments s = m (mod ks); the members' sums are added in member order
// through shared memory. Every order is fixed by the shape, so results repeat.
#include "cuda/gemm/mmvq.cuh"

#include <algorithm>

#include "cuda/gemm/gemm_device.cuh"
#include "cuda/gemm/gemm_host.h"
#include "cuda/gemm/quant_traits.cuh"
#include "cuda/runtime/common.cuh"
#include "cuda/runtime/launch.h"

namespace strata::cuda {
namespace {

using namespace gemm_detail;

constexpr int kWarps = 4;  // per block
constexpr int kRows = 4;   // weight rows per work item

template <GgmlType T>
struct MvCfg {
  static constexpr bool kFloat = !q8a_type(T);
  static constexpr int kUnitVals = kFloat ? 8 : 32;
  static constexpr int kSegVals = 32 * kUnitVals;
  static constexpr int kSegBytes = kSegVals / 256 * QuantTraits<T>::kBytes256;
  // Room for the misaligned head and tail granules of stage_piece.
  static constexpr int kSlot = (kSegBytes + 30 + 15) / 16 * 16;
};

struct MvParams {
  MatrixSet w;
  MatrixSet w2;
  const int32_t* ids;
  int64_t row_bytes;
  int n_in;
  int n_out;
  const uint8_t* x;
  int64_t ld_x;  // bytes
  int x_div;
  int n_tok;
  float* y;
  int64_t ld_y;  // floats
  int epi;
  int ks;  // K split: warps per row block (1, 2 or 4; at most the segments of a row)
};

// Named barrier `id` (1..) over `threads` threads: the warps of one K-split group.
__device__ __forceinline__ void group_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// kSplit: the K-split code is compiled in (one token only); without it the
// kernel is the plain one-warp-per-row-block loop (p.ks == 1).
template <GgmlType T, int NT, bool kSplit>
static __global__ void __launch_bounds__(kWarps * 32) mmvq_kernel(const MvParams p) {
  pdl_prologue();
  using C = MvCfg<T>;
  __shared__ __align__(16) uint8_t smem[kWarps][2][kRows][C::kSlot];
  __shared__ float part[kSplit ? kWarps : 1][kRows][NT];  // K split: each member's row sums

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int b = blockIdx.y;
  const int mat = p.ids != nullptr ? p.ids[b] : 0;
  if (mat < 0) return;  // a skipped entry: the whole block agrees, no barrier is missed
  const bool pair = p.epi == static_cast<int>(Epilogue::SwigluPair);
  const uint8_t* W = matrix_of(p.w, mat);
  const uint8_t* W2 = pair ? matrix_of(p.w2, mat) : nullptr;
  const int F = pair ? kRows / 2 : kRows;  // output features per item
  const int n_rb = (p.n_out + F - 1) / F;
  const int units = p.n_in / C::kUnitVals;
  const int nseg = (units + 31) / 32;
  const int ks = kSplit ? p.ks : 1, groups = kWarps / ks;
  const int member = warp % ks, gw = blockIdx.x * groups + warp / ks, nw = gridDim.x * groups;
  const int nsm = (nseg - member + ks - 1) / ks;  // this member's segments of a row block (>= 1: ks <= nseg)
  if (gw >= n_rb) return;  // whole groups leave together; no block-wide barriers below
  const int n_items = ((n_rb - 1 - gw) / nw + 1) * nsm;
  const uint8_t* X = p.x + static_cast<int64_t>(b / p.x_div) * p.ld_x;
  float* Y = p.y + static_cast<int64_t>(b) * p.ld_y;

  // Row r of row block rb: the gate/only matrix for r < F, up for r >= F.
  auto row_ptr = [&](int rb, int r) -> const uint8_t* {
    const int f = rb * F + r % F;
    if (f >= p.n_out) return nullptr;
    return (r < F ? W : W2) + static_cast<int64_t>(f) * p.row_bytes;
  };
  auto row_block = [&](int item) { return gw + (item / nsm) * nw; };
  auto segment = [&](int item) { return (item % nsm) * ks + member; };
  auto issue = [&](int item) {
    const int rb = row_block(item), s = segment(item);
    const int64_t off = static_cast<int64_t>(s) * C::kSegBytes;
    const int len = static_cast<int>(min(static_cast<int64_t>(C::kSegBytes), p.row_bytes - off));
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const uint8_t* src = row_ptr(rb, r);
      if (src != nullptr) stage_piece(smem[warp][item & 1][r], src + off, len, lane, 32);
    }
    cp_async_commit();
  };

  float acc[kRows][NT];
#pragma unroll
  for (int r = 0; r < kRows; ++r)
#pragma unroll
    for (int t = 0; t < NT; ++t) acc[r][t] = 0.0f;

  issue(0);
  for (int item = 0; item < n_items; ++item) {
    if (item + 1 < n_items) issue(item + 1);
    const int rb = row_block(item), s = segment(item);
    const int u = s * 32 + lane;  // this lane's unit of each row
    const bool live = u < units;
    // The item's activations first: their loads overlap the weight copies in flight.
    float af[C::kFloat ? NT : 1][8];
    int aq[C::kFloat ? 1 : NT][8];
    ActBlock ab[C::kFloat ? 1 : NT];
    if (live) {
#pragma unroll
      for (int t = 0; t < NT; ++t) {
        if (t >= p.n_tok) continue;
        if constexpr (C::kFloat) {
          const auto* xa = reinterpret_cast<const float4*>(X + t * p.ld_x) + 2 * u;
          const float4 v0 = __ldg(xa), v1 = __ldg(xa + 1);
          af[t][0] = v0.x, af[t][1] = v0.y, af[t][2] = v0.z, af[t][3] = v0.w;
          af[t][4] = v1.x, af[t][5] = v1.y, af[t][6] = v1.z, af[t][7] = v1.w;
        } else {
          const auto* blk = reinterpret_cast<const int2*>(X + t * p.ld_x + static_cast<int64_t>(u) * 40);
          const int2 h = __ldg(blk);
          ab[t].d = __int_as_float(h.x);
          ab[t].sum = i2f_small(h.y);
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            const int2 q = __ldg(blk + 1 + i);
            aq[t][2 * i] = q.x;
            aq[t][2 * i + 1] = q.y;
          }
          ab[t].sum_lo = 0, ab[t].sum_hi = 0;
          if constexpr (needs_half_sums<QuantTraits<T>>()) {
#pragma unroll
            for (int k4 = 0; k4 < 4; ++k4) {
              ab[t].sum_lo = __dp4a(aq[t][k4], 0x01010101, ab[t].sum_lo);
              ab[t].sum_hi = __dp4a(aq[t][k4 + 4], 0x01010101, ab[t].sum_hi);
            }
          }
        }
      }
    }
    if (item + 1 < n_items) {
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncwarp();
    if (live) {
      const int64_t off = static_cast<int64_t>(s) * C::kSegBytes;
      if constexpr (C::kFloat) {
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
          const uint8_t* src = row_ptr(rb, r);
          if (src == nullptr) continue;
          const uint8_t* P = smem[warp][item & 1][r] + piece_offset(src + off) + lane * 8 * (QuantTraits<T>::kBytes256 / 256);
          float w[8];
          QuantTraits<T>::wf8(P, w);
#pragma unroll
          for (int t = 0; t < NT; ++t) {
            if (t < p.n_tok) {
              float part = 0.0f;
#pragma unroll
              for (int i = 0; i < 8; ++i) part = fmaf(w[i], af[t][i], part);
              acc[r][t] += part;
            }
          }
        }
      } else {
#pragma unroll
        for (int r = 0; r < kRows; ++r) {
          const uint8_t* src = row_ptr(rb, r);
          if (src == nullptr) continue;
          const uint8_t* B = smem[warp][item & 1][r] + piece_offset(src + off) + (lane >> 3) * QuantTraits<T>::kBytes256;
          const int j = lane & 7;
          int w[8];
          QuantTraits<T>::w8(B, j, w);
          const RowScale rs = QuantTraits<T>::row_scale(B, QuantTraits<T>::row_head(B), j);
#pragma unroll
          for (int t = 0; t < NT; ++t) {
            if (t < p.n_tok) {
              int lo = 0, hi = 0;
#pragma unroll
              for (int k4 = 0; k4 < 4; ++k4) {
                lo = __dp4a(w[k4], aq[t][k4], lo);
                hi = __dp4a(w[k4 + 4], aq[t][k4 + 4], hi);
              }
              acc[r][t] = __fadd_rn(acc[r][t], QuantTraits<T>::term(rs, lo, hi, ab[t]));
            }
          }
        }
      }
    }
    if (item % nsm == nsm - 1) {
      // Fixed butterfly: every lane ends with the same sum (a + b == b + a).
#pragma unroll
      for (int r = 0; r < kRows; ++r)
#pragma unroll
        for (int t = 0; t < NT; ++t) {
          float v = acc[r][t];
#pragma unroll
          for (int o = 16; o > 0; o >>= 1) v = __fadd_rn(v, __shfl_xor_sync(0xffffffffu, v, o));
          acc[r][t] = v;
        }
      if (kSplit) {
        // The members' sums in member order: member 0 ends with them, the others go on to their next row block.
        if (lane == 0) {
#pragma unroll
          for (int r = 0; r < kRows; ++r)
#pragma unroll
            for (int t = 0; t < NT; ++t) part[warp][r][t] = acc[r][t];
        }
        group_sync(1 + warp / ks, ks * 32);
        const int first = warp - member;
#pragma unroll
        for (int r = 0; r < kRows; ++r)
#pragma unroll
          for (int t = 0; t < NT; ++t) {
            float v = part[first][r][t];
            for (int m = 1; m < ks; ++m) v = __fadd_rn(v, part[first + m][r][t]);
            acc[r][t] = v;
          }
        group_sync(1 + warp / ks, ks * 32);  // part is free again
      }
      // Lane r * NT + t stores output (r, t).
#pragma unroll
      for (int r = 0; r < kRows; ++r)
#pragma unroll
        for (int t = 0; t < NT; ++t) {
          const int f = rb * F + r;
          if (member != 0 || lane != (r * NT + t) % 32 || t >= p.n_tok || r >= F || f >= p.n_out) continue;
          float* out = Y + t * p.ld_y + f;
          if (p.epi == static_cast<int>(Epilogue::Store)) {
            *out = acc[r][t];
          } else if (p.epi == static_cast<int>(Epilogue::SwigluMul)) {
            *out = __fmul_rn(silu(*out), acc[r][t]);
          } else if (p.epi == static_cast<int>(Epilogue::Add)) {
            *out = __fadd_rn(*out, acc[r][t]);
          } else {
            *out = __fmul_rn(silu(acc[r][t]), acc[(r + kRows / 2) % kRows][t]);
          }
        }
#pragma unroll
      for (int r = 0; r < kRows; ++r)
#pragma unroll
        for (int t = 0; t < NT; ++t) acc[r][t] = 0.0f;
    }
    __syncwarp();
  }
}

template <GgmlType T>
void launch_type(const MvParams& p, dim3 grid, cudaStream_t stream) {
  const int nt = p.n_tok;
  const auto kernel = nt == 1 && p.ks > 1 ? mmvq_kernel<T, 1, true>
                      : nt == 1            ? mmvq_kernel<T, 1, false>
                      : nt == 2            ? mmvq_kernel<T, 2, false>
                      : nt <= 4            ? mmvq_kernel<T, 4, false>
                                           : mmvq_kernel<T, 8, false>;
  cuda::launch("mmvq_kernel", kernel, grid, kWarps * 32, 0, stream, p);
}

}  // namespace

void mmvq(const MmvqArgs& a, cudaStream_t stream) {
  constexpr const char* op = "mmvq";
  check_stream(op, stream);
  const GgmlType type = a.w.type;
  const bool quant = q8a_type(type);
  const bool pair = a.epi == Epilogue::SwigluPair;
  check_weights(op, KernelPath::Mmvq, a.w, pair ? &a.w2 : nullptr, 32);
  require(a.n_tok >= 1 && a.n_tok <= 8 && a.n_batch >= 1 && a.n_batch <= 65535 && (a.n_batch == 1 || a.n_tok == 1) &&
              a.x_div >= 1,
          op, "1 <= n_tok <= 8, 1 <= n_batch <= 65535, n_tok == 1 when n_batch > 1, x_div >= 1",
          {{"n_tok", a.n_tok}, {"n_batch", a.n_batch}, {"x_div", a.x_div}});
  const int64_t act_row = static_cast<int64_t>(core::activation_row_size(core::activation_kind(type), a.w.n_in));
  const int64_t ld_x = a.ld_x != 0 ? a.ld_x : act_row;
  const int64_t ld_y = a.ld_y != 0 ? a.ld_y : a.w.n_out;
  require(ld_x >= act_row && ld_x % (quant ? 8 : 16) == 0 &&
              reinterpret_cast<uintptr_t>(a.x) % (quant ? 8 : 16) == 0,
          op, "activation rows of at least one row's bytes, 8-byte (Q8A) or 16-byte (float) aligned",
          {{"ld_x", ld_x}, {"row_bytes", act_row}});
  require(ld_y >= a.w.n_out && a.y != nullptr && a.x != nullptr, op, "x, y and ld_y >= n_out", {{"ld_y", ld_y}});
  require(a.n_batch == 1 || a.ids != nullptr || (a.w.stride == 0 && a.w.ptrs == nullptr), op,
          "ids for a batch over several matrices");

  MvParams p{};
  p.w = matrix_set(a.w);
  p.w2 = matrix_set(a.w2);
  p.ids = a.ids;
  p.row_bytes = static_cast<int64_t>(core::row_size(type, a.w.n_in));
  p.n_in = static_cast<int>(a.w.n_in);
  p.n_out = static_cast<int>(a.w.n_out);
  p.x = static_cast<const uint8_t*>(a.x);
  p.ld_x = ld_x;
  p.x_div = a.x_div;
  p.n_tok = a.n_tok;
  p.y = a.y;
  p.ld_y = ld_y;
  p.epi = static_cast<int>(a.epi);

  // Enough resident warps to keep ~100 KB of weights in flight per SM; the
  // warps loop over the remaining row blocks. A matrix with fewer row blocks
  // than about 16 warps an SM splits K over up to 4 warps a row block (one token).
  const int64_t n_rb = (a.w.n_out + (pair ? kRows / 2 : kRows) - 1) / (pair ? kRows / 2 : kRows);
  const int unit_vals = quant ? 32 : 8;  // values a lane takes of a row per segment item: one Q8A block, or 8 floats
  const int64_t nseg = (a.w.n_in / unit_vals + 31) / 32;
  const int64_t want_warps = 16LL * sm_count();
  p.ks = 1;
  while (a.n_tok == 1 && p.ks < kWarps && 2 * p.ks <= nseg && n_rb * a.n_batch * 2 * p.ks <= want_warps) p.ks *= 2;
  const int64_t groups = kWarps / p.ks;
  const int64_t want = (n_rb + groups - 1) / groups;
  const int64_t cap = std::max<int64_t>(1, 12LL * sm_count() / a.n_batch);
  const dim3 grid(static_cast<unsigned>(std::min(want, cap)), static_cast<unsigned>(a.n_batch));
  dispatch_type<KernelPath::Mmvq>(type, [&](auto t) { launch_type<decltype(t)::value>(p, grid, stream); });
}

void mmvq(core::GgmlType type, const void* w, int64_t n_in, int64_t n_out, const void* x, int n_tok, float* y,
          cudaStream_t stream, Epilogue epi) {
  MmvqArgs a;
  a.epi = epi;
  a.w = dense_weights(type, w, n_in, n_out);
  a.x = x;
  a.n_tok = n_tok;
  a.y = y;
  mmvq(a, stream);
}

}  // namespace strata::cuda

// Internal to attention.cu and attention_mma_*.cu: the tensor-core prompt attention kernel (mma.sync m16n8k16, F16 or split-F16 operands, F32 accumulation).
//
// Block: 4 warps over kM query rows of one kv head, rows enumerating (token,
// query head of the group) as r = t * group + g, so the query heads sharing a
// kv head share every K/V tile. A warp owns kMT m16 tiles (16 kMT rows) and
// walks the keys kN at a time:
//   S = Q K^T   (Q, K from shared memory by ldmatrix; F32 accumulators)
//   causal mask, online softmax in F32 (base 2: Q carries scale * log2 e)
//   O += P V    (P re-packed from S's accumulators to F16 A fragments in
//                registers, V by ldmatrix.trans; F32 accumulators)
// Fragment layouts and the ldmatrix lane addresses are in mma_layout.h,
// checked on the CPU by tests/unit/mma_layout_test.cpp.
//
// Operands (kSplit): K and V are exact in F16 (below); Q and P are either
// rounded to F16 (kSplit false: errors ~1e-3 of the output) or split into an
// F16 pair hi + lo (kSplit true: twice the MMAs, errors ~1e-6, as F32).
//
// INT8 caches keep their values exact: a K row is its integers q (exact in
// F16) and the row's scale d multiplies the row's F32 scores; a V row is
// q * 2^e (exact in F16 for e in [-24, 8]) with the rest of its scale,
// m = d / 2^e, multiplying the row's softmax weights before they are rounded.
//
// Pipeline: K/V tiles are staged through shared memory with cp.async, two
// deep: tile it + 1 is copied while tile it is computed, one barrier per
// tile. F16 caches are copied straight into the F16 tiles; INT8 caches are
// copied raw (int8 rows and their scales) and converted in shared memory, a
// second barrier per tile. Keys at or past the block's causal end are
// zero-filled, never read; tiles wholly past a warp's last row are skipped by
// that warp (exactly: such a tile would leave its m, l and O unchanged).
// Everything is in a fixed order (no atomics, no data-dependent schedule),
// so results are bit-identical from run to run.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cmath>
#include <cstdint>

#include "core/runtime/kv_cache.h"
#include "cuda/attention/attention_impl.cuh"
#include "cuda/gemm/gemm_device.cuh"
#include "cuda/gemm/gemm_host.h"
#include "cuda/gemm/mma_layout.h"
#include "cuda/gemm/mma_ops.cuh"
#include "cuda/runtime/check.h"
#include "cuda/runtime/common.cuh"
#include "cuda/runtime/launch.h"

namespace strata::cuda::attn_mma {

// The instance for head dims dk, dv: the smallest of 64, 128, 256 holding
// both, or 0 when either is not a multiple of 16 (no MMA path).
constexpr int head_dim_class(int dk, int dv) {
  if (dk < 16 || dv < 16 || dk % 16 != 0 || dv % 16 != 0) return 0;
  const int d = dk > dv ? dk : dv;
  return d <= 64 ? 64 : d <= 128 ? 128 : d <= 256 ? 256 : 0;
}

template <int D, bool kSplit>
struct Cfg {
  static constexpr int kWarps = 4;
  static constexpr int kThreads = kWarps * kWarp;
  // 32 rows a warp (two m16 tiles) for F16 operands up to D = 128, so that
  // each K/V fragment read from shared memory feeds two MMAs; 16 where O
  // would not fit the registers (D = 256) and for split operands, whose hi
  // and lo halves already give each fragment two MMAs.
  static constexpr int kMT = (!kSplit && D <= 128) ? 2 : 1;
  static constexpr int kWarpRows = 16 * kMT;
  static constexpr int kM = kWarps * kWarpRows;  // query rows of a block
  static constexpr int kN = D <= 128 ? 64 : 32;  // keys of a tile
  // Row stride in halves: 2 D + 16 bytes is 16 mod 128, so the 8 rows of an
  // ldmatrix matrix fall in 8 distinct 16-byte bank groups.
  static constexpr int kLd = D + 8;
  static constexpr int kTile = kN * kLd;       // halves of one K or V tile
  static constexpr int kQ = kM * kLd;          // halves of one Q tile (hi or lo)
  static constexpr int kQTiles = kSplit ? 2 : 1;
};

// Shared memory: Q [hi, lo][kM][kLd] F16; then for F16 caches K/V tiles
// [2 stages][K, V][kN][kLd]; for INT8 caches F16 K/V tiles [K, V][kN][kLd],
// raw rows [2 stages][K, V][kN][D] and scales [2 stages][K, V][kN].
template <core::KvType KT, int D, bool kSplit>
constexpr int smem_bytes() {
  using C = Cfg<D, kSplit>;
  const int q = C::kQTiles * C::kQ * 2;
  if (KT == core::KvType::F16) return q + 2 * 2 * C::kTile * 2;
  return q + 2 * C::kTile * 2 + 2 * 2 * C::kN * D + 2 * 2 * C::kN * 4;
}

// The same for a run-time D (64, 128 or 256).
template <core::KvType KT, bool kSplit>
constexpr int smem_bytes_of(int D) {
  return D == 64    ? smem_bytes<KT, 64, kSplit>()
         : D == 128 ? smem_bytes<KT, 128, kSplit>()
                    : smem_bytes<KT, 256, kSplit>();
}
constexpr int smem_bytes(core::KvType type, int D, bool split) {
  if (type == core::KvType::F16) {
    return split ? smem_bytes_of<core::KvType::F16, true>(D) : smem_bytes_of<core::KvType::F16, false>(D);
  }
  return split ? smem_bytes_of<core::KvType::Int8, true>(D) : smem_bytes_of<core::KvType::Int8, false>(D);
}

// Query rows of a block.
constexpr int block_rows(int D, bool split) {
  return split ? Cfg<64, true>::kM : D <= 128 ? Cfg<128, false>::kM : Cfg<256, false>::kM;
}

// Launch D = head_dim_class(dk, dv) (64, 128 or 256) over p (attn::Params
// of a prompt: n_split 1; q and the cache rows 16-byte aligned, out 8-byte
// aligned; ceil(T * group / block_rows(D, split)) * n_head_kv < 2^31
// blocks), F16 or split operands; defined in the instance files.
void launch_f16(const attn::Params& p, int D, cudaStream_t stream);
void launch_f16_split(const attn::Params& p, int D, cudaStream_t stream);
void launch_int8(const attn::Params& p, int D, cudaStream_t stream);
void launch_int8_split(const attn::Params& p, int D, cudaStream_t stream);

// The warpgroup kernel (attention_wgmma.cuh, sm_90a only): F16 caches with
// dk == dv == 128, the parameters as above (ceil(T * group / 192) *
// n_head_kv < 2^31 blocks), on a device of compute capability 9.0.
void launch_wgmma(const attn::Params& p, bool split, cudaStream_t stream);

// ---- INT8 rows ---------------------------------------------------------------

// An INT8 row's scale d = pow2 * m with pow2 = 2^e, e = floor(log2 d)
// clamped to [-24, 8]: every q * pow2 (|q| <= 127) is then exact in F16 (a
// multiple of 2^-24, below 2^15), and m = d / pow2 is exact (in [1, 2) unless
// clamped). d = 0 (an all-zero row) gives m = 0.
struct Pow2Split {
  float pow2, m;
};
__device__ __forceinline__ Pow2Split pow2_split(float d) {
  if (!(d > 0.0f)) return {1.0f, 0.0f};
  int e = static_cast<int>((__float_as_uint(d) >> 23) & 0xffu) - 127;
  e = e < -24 ? -24 : e > 8 ? 8 : e;
  const float pow2 = __uint_as_float(static_cast<uint32_t>(e + 127) << 23);
  const float inv = __uint_as_float(static_cast<uint32_t>(127 - e) << 23);
  return {pow2, __fmul_rn(d, inv)};
}

// ---- staging -----------------------------------------------------------------

// Starts 16-byte copies of keys [j0, j0 + kN) of kv head hk from a cache
// plane with rows of row_bytes (a multiple of 16) into rows of ld_bytes at
// dst; keys at or past n_keys are zero-filled.
template <int kN, int kThreads>
__device__ __forceinline__ void stage_rows(uint8_t* dst, int ld_bytes, const void* plane, int row_bytes, int j0,
                                           int n_keys, int n_head_kv, int hk) {
  const int chunks = row_bytes / 16;
  const auto* src0 = static_cast<const uint8_t*>(plane);
  for (int i = threadIdx.x; i < kN * chunks; i += kThreads) {
    const int j = i / chunks, c = i - j * chunks;
    const int key = j0 + j;
    const bool valid = key < n_keys;
    const int64_t row = static_cast<int64_t>(valid ? key : 0) * n_head_kv + hk;
    mma::cp_async_16_zfill(dst + j * ld_bytes + 16 * c, src0 + row * row_bytes + 16 * c, valid);
  }
}

// Starts copies of the scales of keys [j0, j0 + kN) (zeros past n_keys);
// `thread` in [0, kN) copies one, others none.
template <int kN>
__device__ __forceinline__ void stage_scales(float* dst, const float* scales, int j0, int n_keys, int n_head_kv,
                                             int hk, int thread) {
  if (thread < 0 || thread >= kN) return;
  const int key = j0 + thread;
  const bool valid = key < n_keys;
  mma::cp_async_4_zfill(dst + thread, scales + static_cast<int64_t>(valid ? key : 0) * n_head_kv + hk, valid);
}

// Converts kN staged INT8 rows (d bytes of stride D) into F16 rows of stride
// kLd: q itself (kPow2 false, K) or q * pow2_split(scale).pow2 (kPow2 true,
// V), both exact. Zero-filled rows give zeros.
template <int D, int kN, int kLd, int kThreads, bool kPow2>
__device__ __forceinline__ void convert_rows(__half* dst, const int8_t* raw, const float* sc, int d) {
  const int chunks = d / 16;
  for (int i = threadIdx.x; i < kN * chunks; i += kThreads) {
    const int j = i / chunks, c = i - j * chunks;
    const uint4 w = *reinterpret_cast<const uint4*>(raw + j * D + 16 * c);
    const uint32_t words[4] = {w.x, w.y, w.z, w.w};
    const float f = kPow2 ? pow2_split(sc[j]).pow2 : 1.0f;
    uint32_t h[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      const uint32_t word = words[e / 2];
      const int shift = 16 * (e % 2);
      const int b0 = static_cast<int8_t>(static_cast<uint8_t>(word >> shift));
      const int b1 = static_cast<int8_t>(static_cast<uint8_t>(word >> (shift + 8)));
      h[e] = mma::pack_half2(__fmul_rn(f, gemm_detail::i2f_small(b0)), __fmul_rn(f, gemm_detail::i2f_small(b1)));
    }
    uint4* o = reinterpret_cast<uint4*>(dst + j * kLd + 16 * c);
    o[0] = make_uint4(h[0], h[1], h[2], h[3]);
    o[1] = make_uint4(h[4], h[5], h[6], h[7]);
  }
}

// ---- the kernel --------------------------------------------------------------

template <core::KvType KT, int D, bool kSplit>
static __global__ void __launch_bounds__(Cfg<D, kSplit>::kThreads, 2) attention_mma_kernel(const attn::Params p) {
  pdl_prologue();
  using C = Cfg<D, kSplit>;
  constexpr int kM = C::kM, kN = C::kN, kLd = C::kLd, kMT = C::kMT, kThreads = C::kThreads;
  constexpr bool kInt8 = KT == core::KvType::Int8;
  extern __shared__ __align__(16) uint8_t smem[];
  __half* q_s = reinterpret_cast<__half*>(smem);                    // hi, then lo when split
  __half* kv_s = q_s + C::kQTiles * C::kQ;
  int8_t* raw_s = reinterpret_cast<int8_t*>(kv_s + 2 * C::kTile);  // INT8 only
  float* sc_s = reinterpret_cast<float*>(raw_s + 2 * 2 * kN * D);  // INT8 only

  const int tid = threadIdx.x, warp = tid / kWarp, lane = tid % kWarp;
  const int64_t rows = p.T * p.group;
  const float q_mul = p.scale * 1.4426950408889634f;  // log2(e): the softmax below is base 2
  // Blocks in descending order of work: the last row tile (most keys) of
  // every kv head first, so that the short blocks fill the tail.
  const int n_row_tiles = static_cast<int>(ceil_div(rows, kM));
  const int hk = static_cast<int>(blockIdx.x % static_cast<unsigned>(p.n_head_kv));
  const int64_t r0 = static_cast<int64_t>(n_row_tiles - 1 - static_cast<int>(blockIdx.x / p.n_head_kv)) * kM;
  const int64_t r_last = (r0 + kM < rows ? r0 + kM : rows) - 1;
  const int n_keys = static_cast<int>(p.pos0 + r_last / p.group + 1);  // the block reads keys [0, n_keys)
  const int n_tiles = static_cast<int>(ceil_div(n_keys, kN));

  auto issue = [&](int it) {
    const int j0 = it * kN;
    if constexpr (kInt8) {
      int8_t* raw = raw_s + (it & 1) * 2 * kN * D;
      float* sc = sc_s + (it & 1) * 2 * kN;
      stage_rows<kN, kThreads>(reinterpret_cast<uint8_t*>(raw), D, p.k, p.dk, j0, n_keys, p.n_head_kv, hk);
      stage_rows<kN, kThreads>(reinterpret_cast<uint8_t*>(raw + kN * D), D, p.v, p.dv, j0, n_keys, p.n_head_kv, hk);
      stage_scales<kN>(sc, p.k_scales, j0, n_keys, p.n_head_kv, hk, tid);
      stage_scales<kN>(sc + kN, p.v_scales, j0, n_keys, p.n_head_kv, hk, tid - kN);
    } else {
      uint8_t* dst = reinterpret_cast<uint8_t*>(kv_s + (it & 1) * 2 * C::kTile);
      stage_rows<kN, kThreads>(dst, 2 * kLd, p.k, 2 * p.dk, j0, n_keys, p.n_head_kv, hk);
      stage_rows<kN, kThreads>(dst + 2 * C::kTile, 2 * kLd, p.v, 2 * p.dv, j0, n_keys, p.n_head_kv, hk);
    }
    gemm_detail::cp_async_commit();
  };
  issue(0);

  // Q tile times scale * log2(e), to F16 (and its rounding error to the lo
  // tile when split); rows past the end are zeros (never written out);
  // columns past dk are never read.
  {
    const int c4 = p.dk / 4;
    for (int i = tid; i < kM * c4; i += kThreads) {
      const int r = i / c4, c = i - r * c4;
      const int64_t gr = r0 + r;
      float4 x = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      if (gr < rows) {
        const int64_t t = gr / p.group;
        const int h = hk * p.group + static_cast<int>(gr - t * p.group);
        x = __ldg(reinterpret_cast<const float4*>(p.q + (t * p.n_head + h) * p.dk) + c);
      }
      x = make_float4(x.x * q_mul, x.y * q_mul, x.z * q_mul, x.w * q_mul);
      uint2 hi, lo;
      mma::pack_half4<kSplit>(x, hi, lo);
      if constexpr (kSplit) *reinterpret_cast<uint2*>(q_s + C::kQ + r * kLd + 4 * c) = lo;
      *reinterpret_cast<uint2*>(q_s + r * kLd + 4 * c) = hi;
    }
  }

  // This thread's rows: C registers {2h, 2h + 1} of m-tile mt are row
  // wr0 + 16 mt + g + 8 h of the block (mma_layout.h, c_elem).
  const int wr0 = warp * C::kWarpRows;
  int row_end[kMT][2];  // exclusive causal end: the row sees keys [0, row_end)
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int64_t gr = r0 + wr0 + 16 * mt + mma::c_elem(lane, 2 * h).row;
      row_end[mt][h] = static_cast<int>(p.pos0 + gr / p.group + 1);
    }
  // Keys below warp_full are visible to every row of the warp; no real row
  // of the warp sees a key at or past warp_end (0: the warp has no real row).
  const int64_t w_first = r0 + wr0;
  const int64_t w_last = (w_first + C::kWarpRows < rows ? w_first + C::kWarpRows : rows) - 1;
  const int warp_full = static_cast<int>(p.pos0 + w_first / p.group + 1);
  const int warp_end = w_first < rows ? static_cast<int>(p.pos0 + w_last / p.group + 1) : 0;

  float o[kMT][D / 8][4];
  float m_run[kMT][2], l_run[kMT][2];  // running max (base 2) and this lane's part of the row sum
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
    for (int dt = 0; dt < D / 8; ++dt)
#pragma unroll
      for (int i = 0; i < 4; ++i) o[mt][dt][i] = 0.0f;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      m_run[mt][h] = -INFINITY;
      l_run[mt][h] = 0.0f;
    }
  }

  // ldmatrix lane addresses (mma_layout.h): Q rows of this warp, and the
  // offsets inside a K or V tile.
  const mma::Coord qa = mma::q_ldsm(lane), ka = mma::k_ldsm(lane), va = mma::v_ldsm(lane);
  const uint32_t q_addr = mma::smem_u32(q_s + (wr0 + qa.row) * kLd + qa.col);
  const uint32_t k_off = 2 * (ka.row * kLd + ka.col), v_off = 2 * (va.row * kLd + va.col);
  const int col0 = mma::c_elem(lane, 0).col;  // this lane's first key column in an n-tile (and col0 + 1)

  for (int it = 0; it < n_tiles; ++it) {
    gemm_detail::cp_async_wait<0>();
    // Tile it (and, the first time, Q) visible to all; every warp is done
    // with tile it - 1, so its buffers may be refilled.
    __syncthreads();
    if (it + 1 < n_tiles) issue(it + 1);
    const __half* tile = kv_s;
    const float* k_sc = sc_s + (it & 1) * 2 * kN;  // INT8: this tile's K, then V scales
    if constexpr (kInt8) {
      const int8_t* raw = raw_s + (it & 1) * 2 * kN * D;
      convert_rows<D, kN, kLd, kThreads, false>(kv_s, raw, k_sc, p.dk);
      convert_rows<D, kN, kLd, kThreads, true>(kv_s + C::kTile, raw + kN * D, k_sc + kN, p.dv);
      __syncthreads();
    } else {
      tile = kv_s + (it & 1) * 2 * C::kTile;
    }
    const int j0 = it * kN;
    if (j0 >= warp_end) continue;  // warp-uniform
    const uint32_t k_addr = mma::smem_u32(tile) + k_off;
    const uint32_t v_addr = mma::smem_u32(tile + C::kTile) + v_off;

    // S = Q K^T over dims [0, dk), 16 at a time (Q hi, then Q lo when split).
    float s[kMT][kN / 8][4];
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int nt = 0; nt < kN / 8; ++nt)
#pragma unroll
        for (int i = 0; i < 4; ++i) s[mt][nt][i] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      if (16 * kk >= p.dk) break;
      uint32_t a[kMT][4], a_lo[kMT][4];
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) {
        const uint32_t addr = q_addr + 2 * (16 * mt * kLd + 16 * kk);
        mma::ldsm_x4(a[mt], addr);
        if constexpr (kSplit) mma::ldsm_x4(a_lo[mt], addr + 2 * C::kQ);
      }
#pragma unroll
      for (int np = 0; np < kN / 16; ++np) {
        uint32_t b[4];
        mma::ldsm_x4(b, k_addr + 2 * (16 * np * kLd + 16 * kk));
        mma::mma_x2(s, np, a, b);
        if constexpr (kSplit) mma::mma_x2(s, np, a_lo, b);
      }
    }
    if constexpr (kInt8) {  // K held q: scale each key's scores by its d
#pragma unroll
      for (int nt = 0; nt < kN / 8; ++nt)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const float d = k_sc[8 * nt + col0 + e];
#pragma unroll
          for (int mt = 0; mt < kMT; ++mt) {
            s[mt][nt][e] *= d;
            s[mt][nt][2 + e] *= d;
          }
        }
    }

    // Causal mask where the tile reaches past some row's end (this also
    // covers the zero-filled keys past n_keys).
    if (j0 + kN > warp_full) {
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int nt = 0; nt < kN / 8; ++nt)
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            const int key = j0 + 8 * nt + mma::c_elem(lane, i).col;
            if (key >= row_end[mt][i / 2]) s[mt][nt][i] = -INFINITY;
          }
    }

    // Online softmax, row by row: the 4 lanes of a quad hold a row's kN
    // scores; the max over them by two butterfly steps.
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float mx = -INFINITY;
#pragma unroll
        for (int nt = 0; nt < kN / 8; ++nt) mx = fmaxf(mx, fmaxf(s[mt][nt][2 * h], s[mt][nt][2 * h + 1]));
        mx = fmaxf(mx, __shfl_xor_sync(kFullMask, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(kFullMask, mx, 2));
        const float m_new = fmaxf(m_run[mt][h], mx);
        const float base = m_new == -INFINITY ? 0.0f : m_new;  // a row with no visible key yet: p = 0
        const float alpha = mma::ex2(m_run[mt][h] - base);
        m_run[mt][h] = m_new;
        float sum = 0.0f;
#pragma unroll
        for (int nt = 0; nt < kN / 8; ++nt)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const float pv = mma::ex2(s[mt][nt][2 * h + e] - base);
            s[mt][nt][2 * h + e] = pv;
            sum += pv;
          }
        l_run[mt][h] = l_run[mt][h] * alpha + sum;
#pragma unroll
        for (int dt = 0; dt < D / 8; ++dt) {
          o[mt][dt][2 * h] *= alpha;
          o[mt][dt][2 * h + 1] *= alpha;
        }
      }
    if constexpr (kInt8) {  // V held q * 2^e: the weights carry the rest of each key's scale
#pragma unroll
      for (int nt = 0; nt < kN / 8; ++nt)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const float m = pow2_split(k_sc[kN + 8 * nt + col0 + e]).m;
#pragma unroll
          for (int mt = 0; mt < kMT; ++mt) {
            s[mt][nt][e] *= m;
            s[mt][nt][2 + e] *= m;
          }
        }
    }

    // O += P V over the tile's keys, 16 at a time; P as F16 A fragments
    // from S's registers (hi, then lo when split).
#pragma unroll
    for (int kk = 0; kk < kN / 16; ++kk) {
      uint32_t a[kMT][4], a_lo[kMT][4];
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          const float* c = s[mt][2 * kk + mma::p_ntile(r)];
          const float x0 = c[2 * mma::p_pair(r)], x1 = c[2 * mma::p_pair(r) + 1];
          if constexpr (kSplit) {
            mma::pack_half2_split(x0, x1, a[mt][r], a_lo[mt][r]);
          } else {
            a[mt][r] = mma::pack_half2(x0, x1);
          }
        }
#pragma unroll
      for (int dp = 0; dp < D / 16; ++dp) {
        if (16 * dp >= p.dv) break;
        uint32_t b[4];
        mma::ldsm_x4_trans(b, v_addr + 2 * (16 * kk * kLd + 16 * dp));
        mma::mma_x2(o, dp, a, b);
        if constexpr (kSplit) mma::mma_x2(o, dp, a_lo, b);
      }
    }
  }

  // out = O / l; a row's sum is spread over its quad (fixed butterfly order).
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float l = l_run[mt][h];
      l += __shfl_xor_sync(kFullMask, l, 1);
      l += __shfl_xor_sync(kFullMask, l, 2);
      const float inv = 1.0f / l;
      const mma::Coord c0 = mma::c_elem(lane, 2 * h);
      const int64_t gr = r0 + wr0 + 16 * mt + c0.row;
      if (gr >= rows) continue;
      const int64_t t = gr / p.group;
      const int head = hk * p.group + static_cast<int>(gr - t * p.group);
      float* dst = p.out + (t * p.n_head + head) * p.dv + c0.col;
#pragma unroll
      for (int dt = 0; dt < D / 8; ++dt) {
        if (8 * dt >= p.dv) break;
        *reinterpret_cast<float2*>(dst + 8 * dt) = make_float2(o[mt][dt][2 * h] * inv, o[mt][dt][2 * h + 1] * inv);
      }
    }
}

template <core::KvType KT, int D, bool kSplit>
void launch(const attn::Params& p, cudaStream_t stream) {
  using C = Cfg<D, kSplit>;
  static std::atomic<uint64_t> configured{0};
  constexpr int smem = smem_bytes<KT, D, kSplit>();
  gemm_detail::allow_smem(reinterpret_cast<const void*>(&attention_mma_kernel<KT, D, kSplit>), smem, configured);
  const auto blocks = static_cast<unsigned>(ceil_div(p.T * p.group, C::kM) * p.n_head_kv);
  cuda::launch("attention_mma_kernel", attention_mma_kernel<KT, D, kSplit>, blocks, C::kThreads, smem, stream, p);
}

// The instances of one cache type and operand mode, by D.
template <core::KvType KT, bool kSplit>
void launch_by_dim(const attn::Params& p, int D, cudaStream_t stream) {
  switch (D) {
    case 64: return launch<KT, 64, kSplit>(p, stream);
    case 128: return launch<KT, 128, kSplit>(p, stream);
    default: return launch<KT, 256, kSplit>(p, stream);
  }
}

}  // namespace strata::cuda::attn_mma

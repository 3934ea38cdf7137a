// Internal to attention.cu and attention_mma_*.cu: the tensor-core prompt attention kernel (mma.sync m16n8k16, F16 operands, F32 accumulation).
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
// Pipeline: K/V tiles are staged through shared memory with cp.async, two
// deep: tile it + 1 is copied while tile it is computed, one barrier per
// tile. F16 caches are copied straight into the F16 tiles; INT8 caches are
// copied raw (int8 rows and their scales) and dequantized in shared memory to
// F16 (scale * q in F32, rounded once), a second barrier per tile.
// Keys at or past the block's causal end are zero-filled, never read; tiles
// wholly past a warp's last row are skipped by that warp (exactly: such a
// tile would leave its m, l and O unchanged).
// Everything is in a fixed order (no atomics, no data-dependent schedule),
// so results are bit-identical from run to run.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/kv_cache.h"
#include "cuda/attention_impl.cuh"
#include "cuda/check.h"
#include "cuda/common.cuh"
#include "cuda/gemm_device.cuh"
#include "cuda/gemm_host.h"
#include "cuda/mma_layout.h"

namespace strata::cuda::attn_mma {

// The instance for head dims dk, dv: the smallest of 64, 128, 256 holding
// both, or 0 when either is not a multiple of 16 (no MMA path).
constexpr int head_dim_class(int dk, int dv) {
  if (dk < 16 || dv < 16 || dk % 16 != 0 || dv % 16 != 0) return 0;
  const int d = dk > dv ? dk : dv;
  return d <= 64 ? 64 : d <= 128 ? 128 : d <= 256 ? 256 : 0;
}

template <int D>
struct Cfg {
  static constexpr int kWarps = 4;
  static constexpr int kThreads = kWarps * kWarp;
  // 32 rows a warp where the registers allow (O is 16 kMT x D F32 per warp):
  // each K/V fragment read from shared memory then feeds two MMAs.
  static constexpr int kMT = D <= 128 ? 2 : 1;
  static constexpr int kWarpRows = 16 * kMT;
  static constexpr int kM = kWarps * kWarpRows;  // query rows of a block
  static constexpr int kN = D <= 128 ? 64 : 32;  // keys of a tile
  // Row stride in halves: 2 D + 16 bytes is 16 mod 128, so the 8 rows of an
  // ldmatrix matrix fall in 8 distinct 16-byte bank groups.
  static constexpr int kLd = D + 8;
  static constexpr int kTile = kN * kLd;  // halves of one K or V tile
};

// Shared memory: Q [kM][kLd] F16, then for F16 caches K/V tiles [2 stages][K, V][kN][kLd];
// for INT8 caches F16 K/V tiles [K, V][kN][kLd], raw rows [2 stages][K, V][kN][D] and scales [2][K, V][kN].
template <core::KvType KT, int D>
constexpr int smem_bytes() {
  using C = Cfg<D>;
  const int q = C::kM * C::kLd * 2;
  if (KT == core::KvType::F16) return q + 2 * 2 * C::kTile * 2;
  return q + 2 * C::kTile * 2 + 2 * 2 * C::kN * D + 2 * 2 * C::kN * 4;
}

// The same for a run-time D (64, 128 or 256), and the rows of its blocks.
constexpr int smem_bytes(core::KvType type, int D) {
  if (type == core::KvType::F16) {
    return D == 64 ? smem_bytes<core::KvType::F16, 64>()
                   : D == 128 ? smem_bytes<core::KvType::F16, 128>() : smem_bytes<core::KvType::F16, 256>();
  }
  return D == 64 ? smem_bytes<core::KvType::Int8, 64>()
                 : D == 128 ? smem_bytes<core::KvType::Int8, 128>() : smem_bytes<core::KvType::Int8, 256>();
}
constexpr int block_rows(int D) { return D == 64 ? Cfg<64>::kM : D == 128 ? Cfg<128>::kM : Cfg<256>::kM; }

// Launches D = head_dim_class(dk, dv) (64, 128 or 256) over p (attn::Params
// of a prompt: n_split 1; q and the cache rows 16-byte aligned, out 8-byte
// aligned; ceil(T * group / block_rows(D)) * n_head_kv < 2^31 blocks);
// defined in the instance files.
void launch_f16(const attn::Params& p, int D, cudaStream_t stream);
void launch_int8(const attn::Params& p, int D, cudaStream_t stream);

// ---- instructions (sm_80+) ---------------------------------------------------

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// volatile: the data behind an unchanged address changes between barriers.
__device__ __forceinline__ void ldsm_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

__device__ __forceinline__ void ldsm_x4_trans(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// d += A B, A 16 x 16 and B 16 x 8 F16, d 16 x 8 F32 (layouts in mma_layout.h).
__device__ __forceinline__ void mma_f16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// acc[mt][2 n] and acc[mt][2 n + 1] += A[mt] times the two B fragments of
// one ldmatrix.x4 (registers {0, 1} and {2, 3}), for every m-tile.
template <int kMT, int kNT>
__device__ __forceinline__ void mma_x2(float (&acc)[kMT][kNT][4], int n, const uint32_t (&a)[kMT][4],
                                       const uint32_t (&b)[4]) {
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
    mma_f16(acc[mt][2 * n], a[mt], b[0], b[1]);
    mma_f16(acc[mt][2 * n + 1], a[mt], b[2], b[3]);
  }
}

// 16 bytes from global to shared memory, or 16 zero bytes when !valid (src is then not read).
__device__ __forceinline__ void cp_async_16_zfill(void* smem, const void* gmem, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(smem)), "l"(gmem),
               "r"(valid ? 16 : 0)
               : "memory");
}

__device__ __forceinline__ void cp_async_4_zfill(void* smem, const void* gmem, bool valid) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_u32(smem)), "l"(gmem), "r"(valid ? 4 : 0)
               : "memory");
}

// 2^x (MUFU.EX2, about 2 ulp); 2^-inf = +0.
__device__ __forceinline__ float ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// Two floats rounded to F16 (nearest even), `lo` in the low half.
__device__ __forceinline__ uint32_t pack_half2(float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  uint32_t u;
  memcpy(&u, &h, sizeof u);
  return u;
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
    cp_async_16_zfill(dst + j * ld_bytes + 16 * c, src0 + row * row_bytes + 16 * c, valid);
  }
}

// Starts copies of the scales of keys [j0, j0 + kN) (zeros past n_keys).
template <int kN>
__device__ __forceinline__ void stage_scales(float* dst, const float* scales, int j0, int n_keys, int n_head_kv,
                                             int hk, int thread) {
  if (thread < 0 || thread >= kN) return;
  const int key = j0 + thread;
  const bool valid = key < n_keys;
  cp_async_4_zfill(dst + thread, scales + static_cast<int64_t>(valid ? key : 0) * n_head_kv + hk, valid);
}

// Dequantizes kN staged INT8 rows (d bytes of stride D, one scale each) into
// F16 rows of stride kLd: F16(scale * q), the F32 value KvView::read gives,
// rounded once. Zero-filled rows (scale 0) give zeros.
template <int D, int kN, int kLd, int kThreads>
__device__ __forceinline__ void dequant_rows(__half* dst, const int8_t* raw, const float* sc, int d) {
  const int chunks = d / 16;
  for (int i = threadIdx.x; i < kN * chunks; i += kThreads) {
    const int j = i / chunks, c = i - j * chunks;
    const uint4 w = *reinterpret_cast<const uint4*>(raw + j * D + 16 * c);
    const uint32_t words[4] = {w.x, w.y, w.z, w.w};
    const float s = sc[j];
    uint32_t h[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      const uint32_t word = words[e / 2];
      const int shift = 16 * (e % 2);
      const int b0 = static_cast<int8_t>(static_cast<uint8_t>(word >> shift));
      const int b1 = static_cast<int8_t>(static_cast<uint8_t>(word >> (shift + 8)));
      h[e] = pack_half2(__fmul_rn(s, gemm_detail::i2f_small(b0)), __fmul_rn(s, gemm_detail::i2f_small(b1)));
    }
    uint4* o = reinterpret_cast<uint4*>(dst + j * kLd + 16 * c);
    o[0] = make_uint4(h[0], h[1], h[2], h[3]);
    o[1] = make_uint4(h[4], h[5], h[6], h[7]);
  }
}

// ---- the kernel --------------------------------------------------------------

template <core::KvType KT, int D>
static __global__ void __launch_bounds__(Cfg<D>::kThreads, 2) attention_mma_kernel(const attn::Params p) {
  using C = Cfg<D>;
  constexpr int kM = C::kM, kN = C::kN, kLd = C::kLd, kMT = C::kMT, kThreads = C::kThreads;
  constexpr bool kInt8 = KT == core::KvType::Int8;
  extern __shared__ __align__(16) uint8_t smem[];
  __half* q_s = reinterpret_cast<__half*>(smem);
  __half* kv_s = q_s + kM * kLd;
  int8_t* raw_s = reinterpret_cast<int8_t*>(kv_s + 2 * C::kTile);    // INT8 only
  float* sc_s = reinterpret_cast<float*>(raw_s + 2 * 2 * kN * D);   // INT8 only

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

  // Q tile to F16, times scale * log2(e); rows past the end are zeros (never
  // written out); columns past dk are never read.
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
      const uint2 hv = make_uint2(pack_half2(x.x * q_mul, x.y * q_mul), pack_half2(x.z * q_mul, x.w * q_mul));
      *reinterpret_cast<uint2*>(q_s + r * kLd + 4 * c) = hv;
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
  const uint32_t q_addr = smem_u32(q_s + (wr0 + qa.row) * kLd + qa.col);
  const uint32_t k_off = 2 * (ka.row * kLd + ka.col), v_off = 2 * (va.row * kLd + va.col);

  for (int it = 0; it < n_tiles; ++it) {
    gemm_detail::cp_async_wait<0>();
    // Tile it (and, the first time, Q) visible to all; every warp is done
    // with tile it - 1, so its buffers may be refilled.
    __syncthreads();
    if (it + 1 < n_tiles) issue(it + 1);
    const __half* tile = kv_s;
    if constexpr (kInt8) {
      const int8_t* raw = raw_s + (it & 1) * 2 * kN * D;
      const float* sc = sc_s + (it & 1) * 2 * kN;
      dequant_rows<D, kN, kLd, kThreads>(kv_s, raw, sc, p.dk);
      dequant_rows<D, kN, kLd, kThreads>(kv_s + C::kTile, raw + kN * D, sc + kN, p.dv);
      __syncthreads();
    } else {
      tile = kv_s + (it & 1) * 2 * C::kTile;
    }
    const int j0 = it * kN;
    if (j0 >= warp_end) continue;  // warp-uniform
    const uint32_t k_addr = smem_u32(tile) + k_off;
    const uint32_t v_addr = smem_u32(tile + C::kTile) + v_off;

    // S = Q K^T over dims [0, dk), 16 at a time.
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
      uint32_t a[kMT][4];
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) ldsm_x4(a[mt], q_addr + 2 * (16 * mt * kLd + 16 * kk));
#pragma unroll
      for (int np = 0; np < kN / 16; ++np) {
        uint32_t b[4];
        ldsm_x4(b, k_addr + 2 * (16 * np * kLd + 16 * kk));
        mma_x2(s, np, a, b);
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
        const float alpha = ex2(m_run[mt][h] - base);
        m_run[mt][h] = m_new;
        float sum = 0.0f;
#pragma unroll
        for (int nt = 0; nt < kN / 8; ++nt)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const float pv = ex2(s[mt][nt][2 * h + e] - base);
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

    // O += P V over the tile's keys, 16 at a time; P in F16 from S's registers.
#pragma unroll
    for (int kk = 0; kk < kN / 16; ++kk) {
      uint32_t a[kMT][4];
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          const float* c = s[mt][2 * kk + mma::p_ntile(r)];
          a[mt][r] = pack_half2(c[2 * mma::p_pair(r)], c[2 * mma::p_pair(r) + 1]);
        }
#pragma unroll
      for (int dp = 0; dp < D / 16; ++dp) {
        if (16 * dp >= p.dv) break;
        uint32_t b[4];
        ldsm_x4_trans(b, v_addr + 2 * (16 * kk * kLd + 16 * dp));
        mma_x2(o, dp, a, b);
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

template <core::KvType KT, int D>
void launch(const attn::Params& p, cudaStream_t stream) {
  static std::atomic<uint64_t> configured{0};
  constexpr int smem = smem_bytes<KT, D>();
  gemm_detail::allow_smem(reinterpret_cast<const void*>(&attention_mma_kernel<KT, D>), smem, configured);
  const auto blocks = static_cast<unsigned>(ceil_div(p.T * p.group, Cfg<D>::kM) * p.n_head_kv);
  attention_mma_kernel<KT, D><<<blocks, Cfg<D>::kThreads, smem, stream>>>(p);
  launch_check("attention_mma_kernel", stream);
}

}  // namespace strata::cuda::attn_mma

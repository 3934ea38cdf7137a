// Attention on the device over a layer's KV cache: flash-style prompt attention and split-K decode attention.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "cuda/attention/kv.cuh"

namespace strata::cuda {

// Both kernels follow cpu::attention_row: GQA with query head h reading kv
// head h / (n_head / n_head_kv); s_j = scale * dot(q_h, K_j); softmax over the
// visible keys; out_h = sum_j p_j V_j, with the cached rows' values as the
// CPU KvCache reads them. Results are bit-identical from run to run (fixed
// tiling and reduction orders, no atomics).
// Limits: k.head_dim and v.head_dim <= 256 (Error(STRATA_ERR_UNSUPPORTED)
// beyond), and the tiles must fit the device's shared memory.

// Prompt: q is [T][n_head][k.head_dim] F32 (after RoPE), query row t sits at
// position pos0 + t and attends causally to cache positions [0, pos0 + t],
// which must all have been written (kv_write) before. out is
// [T][n_head][v.head_dim] F32. No T x T matrix is formed: each block streams
// tiles of K and V through shared memory. T == 0 does nothing.
// Tensor cores (mma.sync m16n8k16, sm_80+; warpgroup MMA for the shapes of
// attention_kernel() below) do both products when both head dims are
// multiples of 16, q and the cache rows are 16-byte aligned, out 8-byte
// aligned (so for any cudaMalloc'd buffers) and the device gives a block its
// shared memory (at most 135 KB; 160 KB for warpgroup MMA); other shapes run an all-F32
// kernel (differences from the CPU ~1e-6). On the tensor cores the cached K
// and V values are exact F16 operands (an F16 cache as stored; an INT8 row as
// its integers, times a power of two for V, its scale's rest applied in F32)
// and the products accumulate in F32, as does the online softmax. q * scale
// is split into an F16 pair hi + lo (twice the work of S = Q K^T), so the
// scores are as F32's. The softmax weights p are split too on the mma.sync
// kernel (outputs within ~1e-6 of the CPU's, as F32); the warpgroup kernel
// (F16 caches, head dims 128, compute capability 9.0) rounds them to F16
// (a quarter less tensor-core work), each moving by at most 2^-11 of itself,
// so an output moves by at most 2^-11 of the largest |V| it averages.
// Throws Error(STRATA_ERR_INVALID_ARGUMENT) for pos0 < 0, pos0 + T > n_ctx,
// n_head not a multiple of n_head_kv, or K/V views that disagree.
void attention_prompt(const float* q, const KvDeviceView& k, const KvDeviceView& v, int n_head, int64_t T,
                      int32_t pos0, float scale, float* out, cudaStream_t stream);

// As attention_prompt, the rows then rounded to F16 into out_h
// ([T][n_head][v.head_dim] F16 bits, 4-byte aligned; for a GEMM that reads
// F16): written so directly by the warpgroup kernel, else through out (as
// scratch) and a conversion. The warpgroup kernel then also takes q * scale
// as one F16 (as attention_prompt_f16; its P is F16 either way): 14% less
// time at 8192 tokens for outputs within 2.7e-4 instead of 1.6e-4 of the
// largest output (attention_bench), whole models against the CPU oracle as
// before (e2e_cuda_parity). The other kernels
// keep Q split, since there F16 Q comes with F16 P.
void attention_prompt_to_f16(const float* q, const KvDeviceView& k, const KvDeviceView& v, int n_head, int64_t T,
                             int32_t pos0, float scale, float* out, uint16_t* out_h, cudaStream_t stream);

// As attention_prompt, with q * scale and p rounded to F16 (one product
// each: about half the time on the tensor cores). Outputs then differ from
// the CPU's by up to ~1e-3 of their largest magnitude, enough to flip
// near-tied expert choices downstream more often than F32 rounding does.
void attention_prompt_f16(const float* q, const KvDeviceView& k, const KvDeviceView& v, int n_head, int64_t T,
                          int32_t pos0, float scale, float* out, cudaStream_t stream);

// The prompt kernel for F16 caches with k.head_dim == v.head_dim == 128 (the
// tensor-core shapes above): Wgmma (attention_wgmma.cuh: Hopper's warpgroup
// MMA, the same operands) on compute capability 9.0, MmaSync
// (attention_mma.cuh) elsewhere, as for every other shape and for INT8
// caches. STRATA_ATTENTION=mma forces MmaSync (STRATA_ATTENTION=wgmma is the
// default); any other value: Error(STRATA_ERR_INVALID_ARGUMENT). Read once.
enum class AttentionKernel { MmaSync, Wgmma };
AttentionKernel attention_kernel();

// Decode: one query row q [n_head][k.head_dim] at position n_kv - 1 over
// cache positions [0, n_kv), with n_kv an int32 in device memory read by the
// kernels when they run (so that a captured CUDA graph replays the call at
// every position). max_kv, the largest n_kv the call may meet (1..n_ctx),
// sizes the grid and nothing else. The keys are split into up to 128 ranges of
// at least 64 keys (one tile) computed by separate blocks (flash-decoding), all in F32;
// when there are several, the block that finishes a group's ranges last
// merges them in ascending order (one launch). The split depends only on
// n_kv (blocks past the ranges it needs exit at once), so a given input gives
// the same bits whatever max_kv and from run to run. A device n_kv outside
// [1, max_kv] gives NaN rows. `workspace` is device memory of at least
// attention_decode_workspace_bytes(n_head, v.head_dim) bytes (unused, and may
// be null, when max_kv <= 64), prepared once by
// attention_decode_workspace_init (its merge counters zeroed); each call
// leaves it prepared for the next on the same stream.
// Throws Error(STRATA_ERR_INVALID_ARGUMENT) for a null n_kv, max_kv outside
// [1, n_ctx] or a workspace that is too small, as above otherwise.
size_t attention_decode_workspace_bytes(int n_head, int head_dim_v);
void attention_decode_workspace_init(void* workspace, int n_head, cudaStream_t stream);
void attention_decode(const float* q, const KvDeviceView& k, const KvDeviceView& v, int n_head, const int32_t* n_kv,
                      int32_t max_kv, float scale, float* out, void* workspace, size_t workspace_bytes,
                      cudaStream_t stream);

}  // namespace strata::cuda

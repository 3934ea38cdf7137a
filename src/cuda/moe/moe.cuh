// MoE pieces on the device: router top-k, SwiGLU, slot-order combine and peer sums, residual add, row gather/scatter.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/model/router.h"

namespace strata::cuda {

// Router of T tokens, as cpu::route_topk for each row: logits [T][n_expert],
// ids and weights [T][k], all on the device. Selection ranks by p (or the raw
// logit for TopkSoftmax), equal values lower id first; output by descending
// weight, equal weights lower id first. Softmax and normalisation sums run in
// ascending order in F32 like the CPU's; expf may differ from the host's by
// an ulp, so weights agree to ~1e-6 relative and ids agree unless two
// candidates are within that of each other. T == 0 does nothing. Throws
// Error(STRATA_ERR_INVALID_ARGUMENT) unless 1 <= k <= n_expert <= 2048, T >= 0.
void route_topk(const float* logits, int64_t T, int n_expert, int k, core::RouterMode mode, int32_t* ids,
                float* weights, cudaStream_t stream);

// out[i] = silu(gate[i]) * up[i], silu(x) = x / (1 + expf(-x)), for n
// elements (F32, no fused operations). out may equal gate or up.
void swiglu(const float* gate, const float* up, float* out, int64_t n, cudaStream_t stream);

// out[t][i] = residual[t][i] + sum over slot = 0..k-1, in that order, of
// weights[t][slot] * y[t * k + slot][i], the sum in F32 from 0 without fused
// operations (as cpu::moe_forward combines). residual may be nullptr (then
// out is the sum) and may equal out. y: [T * k][n], weights: [T][k].
void moe_combine(const float* y, const float* weights, int64_t T, int k, int64_t n, const float* residual,
                 float* out, cudaStream_t stream);

// The peer's half of the combine (cpu::peer_sums on the device, bit for
// bit): for tokens [t_begin, t_end), row t of the output = sum over slots,
// in order, of weights[t][slot] * y[t * k + slot] for the rows with
// peer_row[t * k + slot] != 0 (+0.0f for a token without any); only those
// rows of y are read. Exactly one of out_f32 and out_f16 is non-null; it has
// the full [T][n] layout, and only rows t_begin..t_end-1 are written. It may
// be mapped pinned host memory: rows go out in 16-byte stores where out is
// 16-byte aligned and n is a multiple of 8, else value by value. F16 values are
// the F32 sums rounded to nearest even (core::f32_to_fp16). t_end == t_begin
// does nothing. Throws Error(STRATA_ERR_INVALID_ARGUMENT) unless
// 0 <= t_begin <= t_end, k >= 1, n >= 1 and one output is given.
void moe_peer_sums(const float* y, const float* weights, const uint8_t* peer_row, int64_t t_begin, int64_t t_end,
                   int k, int64_t n, float* out_f32, uint16_t* out_f16, cudaStream_t stream);

// The primary's half (cpu::combine_with_peer on the device, bit for bit):
// out[t][i] = residual[t][i] + acc, where acc is the slot-order sum over the
// rows with peer_row == 0 (only those rows of y are read), then acc + sums[t][i]
// when sums is not null. residual is required and may equal out; sums may be
// mapped pinned host memory. With peer_row all zero and no sums this is
// moe_combine with a residual. Throws Error(STRATA_ERR_INVALID_ARGUMENT) unless
// T >= 0, k >= 1, n >= 1 and peer_row and residual are given.
void moe_combine_peer(const float* y, const float* weights, const uint8_t* peer_row, int64_t T, int k, int64_t n,
                      const float* sums, const float* residual, float* out, cudaStream_t stream);

// out[r] = x[entries[r] / k] for r < count: the rows of one expert group of a
// RowTable (entries = table.entries + table.offsets[e], count = table.rows(e)),
// gathered contiguously for the expert GEMM. x: [T][n_cols]; out: [count][n_cols].
void gather_rows(const float* x, int64_t n_cols, const int32_t* entries, int64_t count, int k, float* out,
                 cudaStream_t stream);

// dst[entries[r]] = src[r] for r < count: an expert's output rows back to
// their (token, slot) rows t * k + slot. src: [count][n_cols]; dst: [T * k][n_cols].
void scatter_rows(const float* src, int64_t n_cols, const int32_t* entries, int64_t count, float* dst,
                  cudaStream_t stream);

}  // namespace strata::cuda

// CPU reference of the peer share's small ops: per-token peer sums, the combine with them, FP16 rounding.
//
// Rows are r = t * k + slot of a chunk of T tokens with k experts each: y is
// [T * k][n] F32 expert outputs, w is [T][k] router weights, peer_row[r] != 0
// marks the rows the peer computes. The peer returns one weighted sum row per
// token of only its rows; the primary adds it to the sum of its own rows.
// Every sum is F32 in slot order from +0.0f without fused operations, as
// MoeChunk::combine adds, so the CUDA kernels can match it bit for bit.
#pragma once

#include <cstdint>

namespace strata::core {
class ThreadPool;
}

namespace strata::core::cpu {

// Per-token weighted sums of the peer's rows, tokens [t_begin, t_end):
//   out[t*n + i] = sum over slot = 0..k-1, in that order, where
//                  peer_row[t*k + slot] != 0, of w[t*k + slot] * y[(t*k + slot)*n + i]
// (a token without peer rows gets +0.0f). out has the full [T][n] layout;
// only rows t_begin..t_end-1 are written, and only the peer's rows of y are
// read. Parallel over tokens on pool (nullptr: the caller only), same bits.
// Throws Error(STRATA_ERR_INVALID_ARGUMENT) unless 0 <= t_begin <= t_end,
// k >= 1, n >= 1.
void peer_sums(const float* y, const float* w, const uint8_t* peer_row, int64_t t_begin, int64_t t_end, int k,
               int64_t n, float* out, ThreadPool* pool = nullptr);

// The combine with a peer, for t in [0, T): acc = sum over slots, in order,
// where peer_row == 0, of w * y; if sums != nullptr, acc = acc + sums[t*n + i];
// then x[t*n + i] = x[t*n + i] + acc. Only the primary's rows of y are read.
// With no peer rows and no sums this is x + MoeChunk::combine, bit for bit.
// Throws Error(STRATA_ERR_INVALID_ARGUMENT) unless T >= 0, k >= 1, n >= 1.
void combine_with_peer(const float* y, const float* w, const uint8_t* peer_row, int64_t T, int k, int64_t n,
                       const float* sums, float* x, ThreadPool* pool = nullptr);

// The values an FP16 transfer leaves: out[i] = fp16_to_f32(f32_to_fp16(in[i]))
// (core/quant/fp16.h: round to nearest even, overflow to inf). in may equal out.
void round_to_f16(const float* in, float* out, int64_t n);

}  // namespace strata::core::cpu

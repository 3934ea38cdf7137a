// CPU reference ops on float rows: RMSNorm, RoPE, softmax, SiLU/SwiGLU, the MoE router, attention.
//
// These are the oracle every CUDA kernel is tested against: plain loops, F32
// accumulation in the order written next to each function, no vectorisation
// tricks. Where a choice affects results (tie-breaking, rounding), it is
// stated here and the GPU must make the same one.
#pragma once

#include <cstdint>

#include "core/model/router.h"

namespace strata::core {
struct KvView;
}

namespace strata::core::cpu {

// y[i] = x[i] * r * w[i] with r = 1 / sqrtf(ss / n + eps), ss = sum of x[i]^2
// accumulated in F32 in ascending i. w == nullptr means all ones. y may equal x.
void rmsnorm(const float* x, const float* w, float* y, int64_t n, float eps);

// Rotary position embedding, in place, on n_head heads of head_dim floats laid
// out one after the other. For i in [0, n_rot/2): theta_i = pos *
// freq_base^(-2i / n_rot), a pair (a, b) becomes (a cos - b sin, a sin + b cos);
// elements at n_rot and beyond are left as they are.
// theta, cos and sin are computed in double and rounded to float once: at
// positions in the tens of thousands an F32 angle is off by ~1e-3 rad, which is
// the error of a kernel, not of the oracle. The rotation itself is F32.
// Throws Error(STRATA_ERR_INVALID_ARGUMENT) unless 0 < n_rot <= head_dim,
// n_rot even, n_head >= 1.
//
// NeoX style (qwen3moe, qwen2, ...): pair (i, i + n_rot/2).
void rope_neox(float* x, int n_head, int head_dim, int32_t pos, float freq_base, int n_rot);
// "Normal" GPT-J style, used by GGUF arch `llama` (so Mixtral files): pair
// (2i, 2i + 1). The HF->GGUF converter permutes Q/K rows so that this matches
// the HF model's rotate-half.
void rope_norm(float* x, int n_head, int head_dim, int32_t pos, float freq_base, int n_rot);

// In place: m = max x; x[i] = expf(x[i] - m); s = sum in ascending i (F32);
// x[i] /= s. n >= 1.
void softmax(float* x, int64_t n);

// x / (1 + expf(-x)).
float silu(float x);
// out[i] = silu(gate[i]) * up[i]. out may equal gate or up.
void swiglu(const float* gate, const float* up, float* out, int64_t n);

// Picks k of n_expert experts (1 <= k <= n_expert, else
// Error(STRATA_ERR_INVALID_ARGUMENT); a non-finite logit throws
// Error(STRATA_ERR_INTERNAL), as it can only come from a bug upstream).
// Selection ranks by the value the mode selects on (p, or the raw logit for
// TopkSoftmax); equal values rank the LOWER expert id first. The output is
// ordered by descending final weight, equal weights lower id first (the
// renormalisation can round two different p to one weight, so this is
// re-established after it). The GPU router must break ties the same way.
void route_topk(const float* logits, int n_expert, int k, RouterMode mode, int32_t* out_ids, float* out_weights);

// Attention of one query position against cached K/V (GQA): query head h uses
// kv head h / (n_head / n_head_kv), so consecutive query heads share a kv head.
// q is [n_head][k.head_dim]; out is [n_head][v.head_dim]; n_head_kv comes from
// the views. For each head: s_j = scale * dot(q_h, K_j) for j in [0, n_kv)
// (F32, ascending element order), p = softmax(s) as above, out_h = sum over j
// ascending of p_j * V_j (F32). Cached rows are dequantized to float on read.
// Throws Error(STRATA_ERR_INVALID_ARGUMENT) for n_kv outside [1, n_ctx],
// n_head not a multiple of n_head_kv, or views that disagree, and
// Error(STRATA_ERR_STATE) when a position in [0, n_kv) was not written.
void attention_row(const float* q, const KvView& k, const KvView& v, int n_head, int32_t n_kv, float scale,
                   float* out);

// attention_row for n_rows consecutive prompt positions at once, bit for bit:
// row r (query Q + r * n_head * k.head_dim, output out + r * n_head *
// v.head_dim) attends to positions [0, n_kv + r). Each KV row is read once
// for all of them. Throws as attention_row, and for n_rows < 1 or
// n_kv + n_rows - 1 > n_ctx.
void attention_rows(const float* Q, int64_t n_rows, const KvView& k, const KvView& v, int n_head, int32_t n_kv,
                    float scale, float* out);

}  // namespace strata::core::cpu

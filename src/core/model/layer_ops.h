// The layer-ops interface: the steps a layer program calls, cut where the CUDA backend fuses its kernels.
#pragma once

#include <cstdint>

#include "core/model/arch.h"
#include "core/model/router.h"

namespace strata::core {

// The layers one stage runs, model indices [first, end), and whether the stage ends with the output head.
struct StageRange {
  int32_t first = 0;
  int32_t end = 0;
  bool head = false;
};

// A backend implements the steps on its own buffers for the chunk it runs: the residual stream x, its norm xn,
// q, k and v, the KV cache, the router's logits and choices, the experts' output. Each step reads what the ones
// before it left; how a step computes (kernels, fusions, where the experts live) is the backend's. Layer
// indices are the model's; errors throw Error.
class LayerOps {
 public:
  virtual ~LayerOps() = default;

  // Before layer il's first step: throws Error(ABORTED) when the chunk was cancelled.
  virtual void begin_layer(int32_t il) = 0;

  // xn = RMSNorm(x) · attn_norm. Nothing to do when the previous combine made it (see combine).
  virtual void attn_norm(int32_t il) = 0;
  // q, k, v = Wq·xn, Wk·xn, Wv·xn.
  virtual void qkv(int32_t il) = 0;
  // q and k per head: a.head_norm, then RoPE (a.rope) at each token's position; this chunk's k and v into the
  // cache.
  virtual void attn_inputs(int32_t il, const AttentionSpec& a) = 0;
  // x += Wo · softmax(q·kᵀ / √d_k, causal) · v over the cached positions.
  virtual void attention_out(int32_t il, const AttentionSpec& a) = 0;

  // xn = RMSNorm(x) · ffn_norm.
  virtual void ffn_norm(int32_t il) = 0;
  // The router's logits, W_r·xn: one per expert.
  virtual void router(int32_t il, const RouterSpec& r) = 0;
  // Each token's k experts (n_expert_used) and their weights from the logits, as r.mode says.
  virtual void topk(int32_t il, const RouterSpec& r) = 0;
  // The chosen experts' SwiGLU FFNs of xn: y = W_down · (silu(W_gate·xn) ⊙ W_up·xn) per (token, expert).
  virtual void experts(int32_t il) = 0;
  // x += Σ_k w_k · y_k. next: the layer whose attn_norm the program calls next, or -1; a backend may make that
  // norm here (in the combine's launch), and attn_norm(next) then has nothing to do. A chunk starts with no norm
  // made this way (a cancelled chunk may have left one).
  virtual void combine(int32_t il, int32_t next) = 0;

  // The final norm and the output matrix: logits for the chunk's rows that want them.
  virtual void head() = 0;
};

// An architecture family's program: every step of a stage's layers, in order, then the head where the stage has
// it. It lives in src/core/archs/<family>.cpp; the family's registry rows point to it.
using LayerProgram = void (*)(LayerOps& ops, const ModelConfig& c, const StageRange& stage);

}  // namespace strata::core

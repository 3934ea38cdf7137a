// Pieces of tensor lists and of layer programs that several architectures share.
#pragma once

#include "core/model/arch.h"
#include "core/model/layer_ops.h"
#include "core/model/tensors.h"

namespace strata::core::archs {

// Grouped-query attention: attn_norm, attn_q, attn_k, attn_v, attn_output, and with an RMS head norm the per-head
// attn_q_norm and attn_k_norm.
void add_attention_tensors(TensorList& t, const ModelConfig& c, const AttentionSpec& a);

// Routed SwiGLU experts: ffn_norm, the router ffn_gate_inp and the ffn_{gate,up,down}_exps stacks.
void add_moe_tensors(TensorList& t, const ModelConfig& c);

// Layer il's attention, from its norm to x += Wo·attention.
void attention_steps(LayerOps& ops, int32_t il, const AttentionSpec& a);

// Layer il's routed experts, from the FFN norm to the combine; next as LayerOps::combine.
void moe_steps(LayerOps& ops, int32_t il, const RouterSpec& r, int32_t next);

}  // namespace strata::core::archs

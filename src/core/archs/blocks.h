// Pieces of tensor lists that several architectures share.
#pragma once

#include "core/model/arch.h"
#include "core/model/tensors.h"

namespace strata::core::archs {

// Grouped-query attention: attn_norm, attn_q, attn_k, attn_v, attn_output, and with qk_norm the per-head
// attn_q_norm and attn_k_norm.
void add_attention_tensors(TensorList& t, const ModelConfig& c, const AttentionSpec& a);

// Routed SwiGLU experts: ffn_norm, the router ffn_gate_inp and the ffn_{gate,up,down}_exps stacks.
void add_moe_tensors(TensorList& t, const ModelConfig& c);

// A layer of attention (as its LayerSpec says) and then routed experts: qwen3moe's and llama's every layer.
TensorList attention_moe_tensors(const ModelConfig& c, int32_t il);

}  // namespace strata::core::archs

// Pieces of tensor lists that several architectures share.
#include "core/archs/blocks.h"

namespace strata::core::archs {

void add_attention_tensors(TensorList& t, const ModelConfig& c, const AttentionSpec& a) {
  const int64_t E = c.n_embd;
  t.add(TensorRole::AttnNorm, "attn_norm.weight", {E});
  t.add(TensorRole::AttnQ, "attn_q.weight", {E, c.q_dim()});
  t.add(TensorRole::AttnK, "attn_k.weight", {E, c.k_dim()});
  t.add(TensorRole::AttnV, "attn_v.weight", {E, c.v_dim()});
  t.add(TensorRole::AttnOut, "attn_output.weight", {int64_t{c.n_head} * c.head_dim_v, E});
  if (a.qk_norm) {
    t.add(TensorRole::AttnQNorm, "attn_q_norm.weight", {c.head_dim_k});
    t.add(TensorRole::AttnKNorm, "attn_k_norm.weight", {c.head_dim_k});
  }
}

void add_moe_tensors(TensorList& t, const ModelConfig& c) {
  const int64_t E = c.n_embd, F = c.n_ff_exp, X = c.n_expert;
  t.add(TensorRole::FfnNorm, "ffn_norm.weight", {E});
  t.add(TensorRole::FfnGateInp, "ffn_gate_inp.weight", {E, X});
  t.add(TensorRole::FfnGateExps, "ffn_gate_exps.weight", {E, F, X});
  t.add(TensorRole::FfnUpExps, "ffn_up_exps.weight", {E, F, X});
  t.add(TensorRole::FfnDownExps, "ffn_down_exps.weight", {F, E, X});
}

TensorList attention_moe_tensors(const ModelConfig& c, int32_t il) {
  TensorList t;
  add_attention_tensors(t, c, c.layer(il).attention);
  add_moe_tensors(t, c);
  return t;
}

}  // namespace strata::core::archs

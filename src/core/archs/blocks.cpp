// Pieces of tensor lists and of layer programs that several architectures share.
#include "core/archs/blocks.h"

namespace strata::core::archs {

void add_attention_tensors(TensorList& t, const ModelConfig& c, const AttentionSpec& a) {
  const int64_t E = c.n_embd;
  t.add(TensorRole::AttnNorm, "attn_norm.weight", {E});
  t.add(TensorRole::AttnQ, "attn_q.weight", {E, c.q_dim()});
  t.add(TensorRole::AttnK, "attn_k.weight", {E, c.k_dim()});
  t.add(TensorRole::AttnV, "attn_v.weight", {E, c.v_dim()});
  t.add(TensorRole::AttnOut, "attn_output.weight", {int64_t{c.n_head} * c.head_dim_v, E});
  if (a.head_norm == NormKind::Rms) {
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

void attention_steps(LayerOps& ops, int32_t il, const AttentionSpec& a) {
  ops.attn_norm(il);
  ops.qkv(il);
  ops.attn_inputs(il, a);
  ops.attention_out(il, a);
}

void moe_steps(LayerOps& ops, int32_t il, const RouterSpec& r, int32_t next) {
  ops.ffn_norm(il);
  ops.router(il, r);
  ops.topk(il, r);
  ops.experts(il);
  ops.combine(il, next);
}

}  // namespace strata::core::archs

// How a router turns expert logits into k (id, weight) pairs: the modes both backends' routers implement.
#pragma once

namespace strata::core {

enum class RouterMode {
  // Qwen3-MoE: p = softmax over all experts; take the k largest p; divide
  // each by their sum (F32, summed in selection order).
  SoftmaxTopkNorm,
  // p = softmax over all experts; take the k largest p as they are.
  SoftmaxTopk,
  // Mixtral: take the k largest logits; weights = softmax over those k
  // (mathematically SoftmaxTopkNorm, computed as the architecture defines it).
  TopkSoftmax,
};

// How an MoE layer picks and weights its experts.
struct RouterSpec {
  RouterMode mode = RouterMode::SoftmaxTopkNorm;
};

}  // namespace strata::core

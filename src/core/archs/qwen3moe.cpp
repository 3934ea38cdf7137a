// The qwen3moe row: Qwen3-MoE (Qwen3-30B-A3B, Qwen3-235B-A22B, Qwen3-Coder-30B/480B).
#include "core/archs/archs.h"
#include "core/archs/attention_moe.h"

namespace strata::core::archs {
namespace {

// Every layer: grouped-query attention with a per-head RMS norm of q and k before NeoX RoPE, then routed SwiGLU
// experts; the router takes the top k of a softmax over all experts and renormalises their weights.

void read(const HParams& keys, ModelConfig& c) {
  c.n_ff_exp = keys.required("expert_feed_forward_length", 1, HParams::kMaxSize);
  c.router.mode = RouterMode::SoftmaxTopkNorm;
  for (LayerSpec& l : c.layers) {
    l.attention.head_norm = NormKind::Rms;
    l.attention.rope.style = RopeStyle::Neox;
  }
}

}  // namespace

const Architecture& qwen3moe() {
  static const Architecture row{"qwen3moe", read, attention_moe_tensors, attention_moe_program};
  return row;
}

}  // namespace strata::core::archs

// The llama row with routed experts (Mixtral-style: general.architecture "llama" and an expert_count).
#include "core/archs/archs.h"
#include "core/archs/attention_moe.h"

namespace strata::core::archs {
namespace {

// Every layer: grouped-query attention with adjacent-pair (GPT-J) RoPE, then routed SwiGLU experts; the router
// takes the k largest logits and a softmax over those k.

void read(const HParams& keys, ModelConfig& c) {
  c.n_ff_exp = keys.required("feed_forward_length", 1, HParams::kMaxSize);
  c.router.mode = RouterMode::TopkSoftmax;
  for (LayerSpec& l : c.layers) l.attention.rope.style = RopeStyle::Adjacent;
}

}  // namespace

const Architecture& llama_moe() {
  static const Architecture row{"llama", read, attention_moe_tensors, attention_moe_program};
  return row;
}

}  // namespace strata::core::archs

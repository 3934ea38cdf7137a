// The attention + routed experts family's tensor list and layer program.
#include "core/archs/attention_moe.h"

#include "core/archs/blocks.h"

namespace strata::core::archs {

TensorList attention_moe_tensors(const ModelConfig& c, int32_t il) {
  TensorList t;
  add_attention_tensors(t, c, c.layer(il).attention);
  add_moe_tensors(t, c);
  return t;
}

void attention_moe_program(LayerOps& ops, const ModelConfig& c, const StageRange& stage) {
  for (int32_t il = stage.first; il < stage.end; ++il) {
    ops.begin_layer(il);
    attention_steps(ops, il, c.layer(il).attention);
    moe_steps(ops, il, c.router, il + 1 < stage.end ? il + 1 : -1);
  }
  if (stage.head) ops.head();
}

}  // namespace strata::core::archs
